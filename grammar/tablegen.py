"""Lark's LALR(1) analysis of ``grammar/events.lark``, written out as data (``events_tables.json``),
and the canonical numbering of a Lark parse table both grammars' generators use
(``canonical_automaton``; the section grammar's is ``evspec.loader.sections.tablegen``).

The grammar file stays the source of truth: Lark analyses it (LALR(1) tables for the contextual
lexer) and this module serialises what the production parser needs, so that parsing an event
string never imports Lark. ``scripts/gen_tables.py`` rewrites the committed file;
``tests/test_parser_tables.py`` fails while it is out of date with the grammar.

The output is canonical: Lark numbers its states in an order that depends on string hashing, so
states are renumbered breadth-first from the start symbols (``STARTS`` order, symbols sorted) and
rules by their first use in that walk. The same grammar and Lark version give the same bytes.

Format (JSON object):
  ``grammar_sha256``  hash of the grammar text the tables were made from;
  ``terminals``       ``[name, regex]`` in the contextual lexer's order of preference (priority,
                      longest possible match, longest pattern, name);
  ``rules``           ``[origin, [symbol, ...]]``;
  ``states``          per state, symbol -> action: ``n >= 0`` shift/goto state ``n``, ``n < 0``
                      reduce by rule ``~n``;
  ``start``/``end``   per start symbol, its first state and the state that accepts it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

STARTS = ("events", "term_list")


def analyze_grammar(grammar: str) -> Any:
    """Lark's LALR parser for ``grammar`` with the contextual lexer (the analysis being dumped)."""
    from lark import Lark

    return Lark(grammar, parser="lalr", lexer="contextual", start=list(STARTS), maybe_placeholders=False)


def build_tables(grammar: str) -> dict[str, Any]:
    """The tables of ``grammar`` as JSON-ready data (see the module docstring)."""
    lark = analyze_grammar(grammar)
    table = lark.parser.parser._parse_table
    terminals = sorted(
        lark.terminals, key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name)
    )

    states, rules, start, end = canonical_automaton(
        table, STARTS, lambda rule: [rule.origin.name, [s.name for s in rule.expansion]],
        lambda state, actions: actions)
    return {
        "grammar_sha256": hashlib.sha256(grammar.encode()).hexdigest(),
        "terminals": [[t.name, t.pattern.to_regexp()] for t in terminals],
        "rules": rules,
        "states": states,
        "start": start,
        "end": end,
    }


def canonical_automaton(
    table: Any, starts: Sequence[str], rule_row: Callable[[Any], Any], state_row: Callable[[int, dict[str, int]], Any],
) -> tuple[list[Any], list[Any], dict[str, int], dict[str, int]]:
    """Lark's parse table renumbered canonically: states breadth-first from ``starts`` (symbols
    sorted), rules by first use in that walk. Per state ``state_row(lark_state, actions)`` and per
    rule ``rule_row(rule)`` give the rows (called in that order); actions map a symbol to ``n >= 0``
    (shift/goto state ``n``) or ``n < 0`` (reduce by rule ``~n``). Returns the states, rules, and
    the first and accepting state of each start symbol."""
    from lark.parsers.lalr_analysis import Shift

    number: dict[int, int] = {}
    queue: list[int] = []

    def state_number(state: int) -> int:
        if state not in number:
            number[state] = len(queue)
            queue.append(state)
        return number[state]

    for start in starts:
        state_number(table.start_states[start])
    rules: list[Any] = []
    rule_number: dict[object, int] = {}
    states: list[Any] = []
    i = 0
    while i < len(queue):  # queue grows while it is walked: breadth-first over the automaton
        actions = table.states[queue[i]]
        coded: dict[str, int] = {}
        for symbol in sorted(actions):
            action, arg = actions[symbol]
            if action is Shift:
                coded[symbol] = state_number(arg)
                continue
            if arg not in rule_number:
                rule_number[arg] = len(rules)
                rules.append(rule_row(arg))
            coded[symbol] = ~rule_number[arg]
        states.append(state_row(queue[i], coded))
        i += 1
    return (states, rules, {s: number[table.start_states[s]] for s in starts},
            {s: number[table.end_states[s]] for s in starts})


def render_tables(tables: dict[str, Any]) -> str:
    """JSON text with one terminal, rule or state per line (reviewable diffs)."""

    def block(key: str) -> str:
        rows = ",\n".join("  " + json.dumps(row, ensure_ascii=True, separators=(", ", ": "))
                          for row in tables[key])
        return f'"{key}": [\n{rows}\n]'

    head = [f'"{key}": {json.dumps(tables[key], sort_keys=True)}'
            for key in ("grammar_sha256", "start", "end")]
    parts = [*head, block("terminals"), block("rules"), block("states")]
    return "{\n" + ",\n".join(parts) + "\n}\n"


def generate(grammar: str) -> str:
    """The complete ``events_tables.json`` text for ``grammar``."""
    return render_tables(build_tables(grammar))
