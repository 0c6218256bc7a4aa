"""Lark's parser for ``grammar/section.lark``, written out as data (``section_tables.json``) for
``sections.lalr``, which parses section names without importing Lark (over ``evspec.grammar.lalr``).

What is dumped is what Lark itself runs for the grammar (LALR, contextual lexer,
``propagate_positions``, no placeholders): the parse table; for every parser state the terminals
its lexer tries, in Lark's order, after Lark's folding of literal terminals into the patterns that
also match them (``_create_unless``: the literal's type is given back to a token whose whole text
it is); the same for the root lexer, which Lark asks where a state's own lexer fails, to name the
token that stands there; and for every rule the shape of its tree: its name (the alias, else the
rule's), which children it keeps (anonymous literals and ``_X`` terminals are dropped), which it
inlines (``_x`` rules and Lark's own helper rules), and whether a ``?rule`` hands over a single
child. ``scripts/gen_tables.py`` rewrites the committed file;
``tests/test_section_tables.py`` fails while it is out of date with the grammar and checks the
parser against Lark's on every section name the tests know.

The output is canonical (states renumbered breadth-first from the start symbols, symbols sorted;
rules and lexers numbered by first use), so the same grammar and Lark version give the same bytes.

Format (JSON object):
  ``grammar_sha256``  hash of the grammar text;
  ``start``/``end``   per start symbol, its first state and the state that accepts it;
  ``ignore``          terminals the lexer skips: none (the runtime skips nothing; a grammar with
                      ``%ignore`` is refused);
  ``terminals``       ``[name, regex]`` of every terminal;
  ``lexers``          ``[[terminal, ...], {terminal: [literal terminal, ...]}]``: the terminals tried
                      in order, and the literals a token of a terminal becomes when it matches one
                      whole; lexer 0 is the root lexer;
  ``rules``           ``[origin, length, tree name, [[index, inline], ...], expand single child]``;
  ``states``          per state, ``[lexer, {symbol: action}]``: ``n >= 0`` shift/goto state ``n``,
                      ``n < 0`` reduce by rule ``~n``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from evspec.grammar.tablegen import canonical_automaton

STARTS = ("probe", "tracepoint", "libbpf")
TABLES_FILE = "section_tables.json"


def analyze_grammar(grammar: str, starts: Sequence[str] = STARTS) -> Any:
    """Lark's parser for ``grammar``, configured as section names are parsed."""
    from lark import Lark

    return Lark(grammar, parser="lalr", lexer="contextual", start=list(starts), propagate_positions=True,
                maybe_placeholders=False)


def _lexer(basic: Any) -> list[Any]:
    """One of Lark's basic lexers as ``[[terminal, ...], {terminal: [literal, ...]}]``."""
    scanner = basic.scanner  # built on first use: the folding of literals happens here
    folds = {}
    for name, callback in sorted(basic.callback.items()):
        inner = getattr(callback, "scanner", None)
        if inner is None:
            raise ValueError(f"terminal {name} has a lexer callback that is no literal folding: {callback!r}")
        folds[name] = [t.name for t in inner.terminals]
    return [[t.name for t in scanner.terminals], folds]


def _filtered(symbol: Any) -> bool:
    return bool(symbol.is_term and symbol.filter_out)


def _inlined(symbol: Any) -> bool:
    return bool(not symbol.is_term and symbol.name.startswith("_"))


def _rule_row(rule: Any) -> list[Any]:
    """``[origin, length, tree name, [[index, inline], ...], expand single child]``."""
    if rule.options.keep_all_tokens:
        raise ValueError(f"section tables: rule {rule.origin.name} keeps all tokens ('!'), not supported")
    kept = [[k, _inlined(s)] for k, s in enumerate(rule.expansion) if not _filtered(s)]
    expand = bool(rule.options.expand1 and not rule.alias)
    return [rule.origin.name, len(rule.expansion), rule.alias or rule.origin.name, kept, expand]


def build_tables(grammar: str, starts: Sequence[str] = STARTS) -> dict[str, Any]:
    """The tables of ``grammar`` as JSON-ready data (see the module docstring)."""
    lark = analyze_grammar(grammar, starts)
    frontend = lark.parser
    table = frontend.parser._parse_table
    contextual = frontend.lexer
    if lark.options.lexer_callbacks or lark.options.keep_all_tokens:
        raise ValueError("section tables: lexer callbacks and keep_all_tokens are not supported")
    if lark.lexer_conf.ignore:
        raise ValueError(f"section tables: %ignore ({', '.join(sorted(lark.lexer_conf.ignore))}) is not "
                         "supported: the LALR runtime skips nothing; write the blanks into the rules")

    lexers: list[Any] = [_lexer(contextual.root_lexer)]
    lexer_number: dict[str, int] = {}

    def lexer_of(state: int) -> int:
        dumped = _lexer(contextual.lexers[state])
        key = json.dumps(dumped)
        if key not in lexer_number:
            lexer_number[key] = len(lexers)
            lexers.append(dumped)
        return lexer_number[key]

    states, rules, start, end = canonical_automaton(
        table, starts, _rule_row, lambda state, actions: [lexer_of(state), actions])
    return {
        "grammar_sha256": hashlib.sha256(grammar.encode()).hexdigest(),
        "start": start,
        "end": end,
        "ignore": sorted(lark.lexer_conf.ignore),
        "terminals": sorted([t.name, t.pattern.to_regexp()] for t in lark.terminals),
        "lexers": lexers,
        "rules": rules,
        "states": states,
    }


def render_tables(tables: dict[str, Any]) -> str:
    """JSON text with one terminal, lexer, rule or state per line (reviewable diffs)."""

    def block(key: str) -> str:
        rows = ",\n".join("  " + json.dumps(row, ensure_ascii=True, separators=(", ", ": "), sort_keys=True)
                          for row in tables[key])
        return f'"{key}": [\n{rows}\n]'

    head = [f'"{key}": {json.dumps(tables[key], sort_keys=True)}'
            for key in ("grammar_sha256", "start", "end", "ignore")]
    parts = [*head, *(block(key) for key in ("terminals", "lexers", "rules", "states"))]
    return "{\n" + ",\n".join(parts) + "\n}\n"


def generate(grammar: str) -> str:
    """The complete ``section_tables.json`` text for ``grammar``."""
    return render_tables(build_tables(grammar))
