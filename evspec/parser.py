"""Event strings to AST: the Lark LALR front end, per-item error recovery, syntax diagnostics.

``parse`` and ``analyze`` read one event string (one ``-e`` argument); ``parse_terms`` reads a bare
term list (a PMU alias file). Spans in the AST and in diagnostics are offsets into that string.

The grammar is ``evspec.grammar/events.lark``. Lark analyses it (LALR(1) tables, terminals) on
first use and caches the analysis on disk per user, so a cold start costs little beyond
``import lark``. Strings are then parsed by a lean driver over Lark's own tables: a contextual
scanner (per parser state, one precompiled alternation of the terminals that state accepts, in
Lark's terminal order) and a shift/reduce loop that calls ``AstBuilder`` as each rule is reduced.
That is Lark's LALR algorithm without its per-token bookkeeping (line counting, parse-tree
callbacks), which would otherwise cost more than the parsing itself. ``earley_parser`` runs the same
grammar file under Lark's Earley parser: the oracle of the differential tests.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import re
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer, Tree
from lark.parsers.lalr_analysis import Shift

from evspec import lexicon, rules
from evspec.ast import (
    AliasEvent,
    AllIndices,
    AnyTerm,
    BpfEvent,
    BreakpointEvent,
    CacheEvent,
    Event,
    EventList,
    Group,
    IndexItem,
    IndexList,
    Indices,
    Item,
    MapTerm,
    Modifiers,
    NumericEvent,
    PmuEvent,
    RawEvent,
    SymbolEvent,
    SymbolKind,
    Term,
    TermKind,
    Terms,
    TracepointEvent,
    Value,
    Word,
)
from evspec.ast import (
    Number as NumberNode,
)
from evspec.diagnostics import Diagnostic, EvspecError, error
from evspec.span import Span

__all__ = ["ParseResult", "analyze", "parse", "parse_terms", "earley_parser", "lalr_parser", "machine",
           "split_items", "AstBuilder", "LalrMachine"]

GRAMMAR_FILE = "events.lark"
BLANKS = " \t\n\r\f\v"
MAX_SYNTAX_ERRORS = 50
PARSER_ERROR = "parser error"


@dataclass(frozen=True, slots=True)
class ParseResult:
    """What ``analyze`` found: the items that parsed, and every diagnostic, left to right."""

    events: EventList
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


# --------------------------------------------------------------------------------------------
# public API


def parse(text: str) -> EventList:
    """Parse one event string; raise EvspecError with all diagnostics if any of them is an error."""
    result = analyze(text)
    if not result.ok:
        raise EvspecError(result.diagnostics)
    return result.events


def analyze(text: str, earlier_names: Sequence[str] = ()) -> ParseResult:
    """Syntax and system-independent rules; every bad item gets its own diagnostic.

    ``earlier_names`` are the names of events defined by earlier event strings of the same command
    (see ``rules.event_reference_names``), for ``map:NAME.event=`` references.
    """
    try:
        items: tuple[Item, ...] = machine().parse(text, "events")
        syntax: list[Diagnostic] = []
    except (_SyntaxStop, _Fault):
        items, syntax = _recover(text)
    events = EventList(items, source=text)
    per_item = rules.check_by_item(events, earlier_names)
    if not syntax:
        return ParseResult(events, tuple(d.located(text) for diags in per_item for d in diags))
    keyed: list[tuple[int, Diagnostic]] = [(d.span.start, d) for d in syntax]
    for item, diags in zip(items, per_item, strict=True):
        keyed.extend((item.span.start, d) for d in diags)
    keyed.sort(key=lambda pair: pair[0])
    return ParseResult(events, tuple(d.located(text) for _, d in keyed))


def parse_terms(text: str) -> Terms:
    """Parse a bare term list such as ``event=0x3c,umask=0x00`` (a PMU alias definition)."""
    try:
        terms: Terms = machine().parse(text, "term_list")
    except _Fault as fault:
        raise EvspecError(fault.diagnostic.located(text)) from None
    except _SyntaxStop as stop:
        raise EvspecError(_diagnose(text, stop).located(text)) from None
    return terms


@lru_cache(maxsize=1)
def grammar_text() -> str:
    return importlib.resources.files("evspec.grammar").joinpath(GRAMMAR_FILE).read_text("utf-8")


@lru_cache(maxsize=1)
def lalr_parser() -> Lark:
    """Lark's LALR analysis of the grammar (contextual lexer), loaded from the per-user cache."""
    text = grammar_text()
    cache = _cache_file(text)
    fresh = cache is not None and not cache.exists()
    lark = Lark(
        text,
        parser="lalr",
        lexer="contextual",
        start=["events", "term_list"],
        maybe_placeholders=False,
        **({} if cache is None else {"cache": str(cache)}),
    )
    if fresh:
        _remove_stale_caches(cache)  # type: ignore[arg-type]
    return lark


@lru_cache(maxsize=1)
def machine() -> LalrMachine:
    """The production parser: Lark's LALR tables driven by ``LalrMachine`` with ``AstBuilder``."""
    return LalrMachine(lalr_parser(), AstBuilder())


@lru_cache(maxsize=1)
def earley_parser() -> Lark:
    """The same grammar under Earley (dynamic lexer): the oracle of the differential tests.

    It yields a parse tree; ``AstBuilder().transform(tree)`` turns it into the same AST.
    """
    return Lark(
        grammar_text(),
        parser="earley",
        lexer="dynamic",
        start=["events", "term_list"],
        maybe_placeholders=False,
        ambiguity="explicit",
    )


def _cache_file(grammar: str) -> Path | None:
    """A private per-user file for Lark's analysed grammar, or None if there is no safe place."""
    import lark

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    directory = Path(base) / "evspec"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
        if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None  # Lark's cache is a pickle: never load one others can write
        if not os.access(directory, os.W_OK | os.X_OK):
            return None
    except OSError:
        return None
    key = f"{grammar}\0{lark.__version__}\0{sys.version_info[:2]}".encode()
    return directory / f"events-{hashlib.sha256(key).hexdigest()[:20]}.lark"



def _remove_stale_caches(current: Path) -> None:
    """Drop the analyses of other grammar versions once a new one has been written."""
    for old in current.parent.glob("events-*.lark"):
        if old != current:
            try:
                old.unlink()
            except OSError:
                pass


# --------------------------------------------------------------------------------------------
# the LALR driver


class Tok:
    """A token: the terminal's name, its text and its span (``AstBuilder`` turns Lark's tokens
    into these when it transforms an Earley tree)."""

    __slots__ = ("type", "value", "start_pos", "end_pos")

    def __init__(self, type: str, value: str, start_pos: int, end_pos: int) -> None:
        self.type = type
        self.value = value
        self.start_pos = start_pos
        self.end_pos = end_pos

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"Tok({self.type}, {self.value!r}, {self.start_pos})"


_TOKENS = (Tok,)
AnyTok = Tok


class _Splice(list):  # type: ignore[type-arg]
    """The children of an inlined rule (``_name``), spliced into its parent as Lark does."""


class _SyntaxStop(Exception):
    """The input does not fit the grammar at ``pos``: ``token`` (None: no terminal matches there,
    or the end of the input when ``at_end``), with the parser's value stack and what it expected."""

    def __init__(self, pos: int, token: Tok | None, values: list[object], expected: frozenset[str],
                 at_end: bool = False) -> None:
        super().__init__(f"syntax error at {pos}")
        self.pos = pos
        self.token = token
        self.values = values
        self.expected = expected
        self.at_end = at_end


class LalrMachine:
    """Parses with Lark's LALR(1) tables for the grammar, building the AST with ``builder``.

    The scanner is contextual like Lark's: in each parser state only the terminals that state
    accepts are tried, in Lark's order (priority, then longest possible match, then name), as one
    precompiled alternation; the first alternative that matches wins, as in Lark.
    """

    def __init__(self, lark: Lark, builder: Transformer) -> None:
        table = lark.parser.parser._parse_table  # Lark's analysed LALR(1) table
        ordered = sorted(
            lark.terminals, key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name)
        )
        terminal_names = {t.name for t in ordered}
        compiled: dict[frozenset[str], re.Pattern[str]] = {}

        def scanner(names: frozenset[str]) -> re.Pattern[str]:
            if names not in compiled:
                compiled[names] = re.compile(
                    "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in ordered if t.name in names)
                    or "(?!)"
                )
            return compiled[names]

        # Actions as ints: a state to shift to (>= 0), or ~index of the rule to reduce by.
        rules: list[tuple[int, str, object, bool]] = []
        rule_index: dict[object, int] = {}
        self._actions: dict[int, dict[str, int]] = {}
        for state, actions in table.states.items():
            coded: dict[str, int] = {}
            for symbol, (action, arg) in actions.items():
                if action is Shift:
                    coded[symbol] = arg
                    continue
                if arg not in rule_index:
                    name = arg.origin.name
                    expansion = arg.expansion
                    flatten = any(sym.name.startswith("_") for sym in expansion)
                    if name.startswith("_"):
                        # an inlined rule: splice its children into the parent, or pass a single
                        # child through unchanged (what Lark's tree builder amounts to)
                        unit = len(expansion) == 1 and not expansion[0].name.startswith("_")
                        method = _first if unit else None
                    else:
                        method = getattr(builder, name)
                    rule_index[arg] = len(rules)
                    rules.append((len(arg.expansion), name, method, flatten))
                coded[symbol] = ~rule_index[arg]
            self._actions[state] = coded
        self._rules = rules
        self._scanners = _LazyScanners(
            lambda state: scanner(frozenset(k for k in table.states[state] if k in terminal_names))
        )
        self._root = scanner(frozenset(terminal_names))
        self._start = dict(table.start_states)
        self._end = dict(table.end_states)

    def parse(self, text: str, start: str) -> object:
        table = self._actions
        scanners = self._scanners
        rules = self._rules
        end_state = self._end[start]
        state = self._start[start]
        stack = [state]
        values: list[object] = []
        push_state = stack.append
        push_value = values.append
        pos = 0
        n = len(text)
        while True:
            if pos < n:
                m = scanners[state].match(text, pos)
                if m is None:
                    self._no_token(text, pos, stack, values)
                end = m.end()  # type: ignore[union-attr]
                kind = m.lastgroup  # type: ignore[union-attr]
                tok: Tok | None = Tok(kind, text[pos:end], pos, end)  # type: ignore[arg-type]
                pos = end
            else:
                kind, tok = "$END", None
            while True:
                code = table[state].get(kind)  # type: ignore[arg-type]
                if code is None:
                    actions = table[state]
                    raise _SyntaxStop(
                        n if tok is None else tok.start_pos, tok, values,
                        frozenset(k for k in actions if k.isupper() or k == "$END"), tok is None,
                    )
                if code >= 0:
                    push_state(code)
                    push_value(tok)
                    state = code
                    break
                size, name, method, flatten = rules[~code]
                if size:
                    children = values[-size:]
                    del values[-size:]
                    del stack[-size:]
                else:
                    children = []
                if flatten:
                    children = _flat_children(children)
                value = _Splice(children) if method is None else method(children)  # type: ignore[operator]
                state = table[stack[-1]][name]
                push_state(state)
                push_value(value)
                if tok is None and state == end_state:
                    return value

    def _no_token(self, text: str, pos: int, stack: list[int], values: list[object]) -> None:
        """No terminal of this state matches at ``pos``: report the token that stands there if any
        terminal of the language matches (as Lark's contextual lexer does), else the character."""
        expected = frozenset(k for k in self._actions[stack[-1]] if k.isupper() or k == "$END")
        m = self._root.match(text, pos)
        tok = None if m is None else Tok(m.lastgroup, m.group(), pos, m.end())  # type: ignore[arg-type]
        raise _SyntaxStop(pos, tok, values, expected)


def _first(children: list[object]) -> object:
    return children[0]


class _LazyScanners(dict):  # type: ignore[type-arg]
    """State -> scanner, each compiled the first time the parser reaches that state."""

    def __init__(self, build: Callable[[int], re.Pattern[str]]) -> None:
        super().__init__()
        self._build = build

    def __missing__(self, state: int) -> re.Pattern[str]:
        pattern = self[state] = self._build(state)
        return pattern


def _flat_children(children: list[object]) -> list[object]:
    out: list[object] = []
    for child in children:
        if type(child) is _Splice:
            out.extend(child)
        elif type(child) is Tok and child.type[0] == "_":
            continue
        else:
            out.append(child)
    return out

# --------------------------------------------------------------------------------------------
# building the AST (runs inside the LALR parser, as each rule is reduced)


class _Fault(Exception):
    """A syntax error found while building the AST (a shape the grammar accepts but the kind of
    event does not, such as ``software/config=0/:u``)."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def _span(tok: AnyTok) -> Span:
    return Span(tok.start_pos, tok.end_pos)


def _trimmed(tok: AnyTok) -> Span:
    """The token's span without the blanks some separator tokens carry (``' , '``)."""
    value = str(tok)
    start = tok.start_pos + len(value) - len(value.lstrip(BLANKS))
    end = tok.end_pos - (len(value) - len(value.rstrip(BLANKS)))
    return Span(start, max(start, end))


def _end(node: object) -> int:
    return node.end_pos if isinstance(node, _TOKENS) else node.span.end  # type: ignore[attr-defined]


def _number(tok: AnyTok) -> NumberNode:
    text = str(tok)
    value = int(text[2:], 16) if text.startswith("0x") else int(text)
    return NumberNode(value, text, _span(tok))


def _value(tok: AnyTok) -> Value:
    text = str(tok)
    if text[0].isdigit():
        return _number(tok)
    if text[0] == "'":
        return Word(text[1:-1], True, _span(tok))
    return Word(text, False, _span(tok))


def _modifiers(tok: AnyTok | None) -> Modifiers | None:
    return None if tok is None else Modifiers(str(tok), _span(tok))


def _fault(code: str, message: str, span: Span, *help_lines: str) -> _Fault:
    return _Fault(error(code, message, span, help=help_lines, perf_message=PARSER_ERROR))


def _is(node: object, *types: str) -> bool:
    return type(node) is Tok and node.type in types


@dataclass(frozen=True, slots=True)
class _Tail:
    """What follows a term list (or an event name): nothing, ``WORD``, ``:`` or ``:WORD``."""

    colon: AnyTok | None
    word: AnyTok | None

    @staticmethod
    def of(nodes: Sequence[object]) -> _Tail:
        colon = next((n for n in nodes if _is(n, "COLON")), None)
        word = next((n for n in nodes if _is(n, "WORD")), None)
        return _Tail(colon, word)  # type: ignore[arg-type]


class AstBuilder(Transformer):
    """Builds the evspec AST from the rules of events.lark (see the grammar for the shapes)."""

    def __default_token__(self, token: Token) -> Tok:
        return Tok(token.type, str(token), token.start_pos, token.end_pos)

    def events(self, children: list[object]) -> tuple[Item, ...]:
        return tuple(c for c in children if not isinstance(c, _TOKENS))  # type: ignore[misc]

    def group(self, children: list[object]) -> Group:
        name = children[0] if _is(children[0], "NAME") else None
        members = tuple(c for c in children if not isinstance(c, _TOKENS))
        rbrace = next(c for c in children if _is(c, "RBRACE"))
        mods = children[-1] if _is(children[-1], "WORD") else None
        start = name.start_pos if name is not None else _trimmed(children[0]).start  # type: ignore[arg-type]
        end = mods.end_pos if mods is not None else _trimmed(rbrace).end  # type: ignore[arg-type]
        return Group(
            None if name is None else str(name),
            members,  # type: ignore[arg-type]
            _modifiers(mods),  # type: ignore[arg-type]
            Span(start, end),
            None if name is None else _span(name),  # type: ignore[arg-type]
        )

    def named_event(self, children: list[object]) -> Event:
        head: AnyTok = children[0]  # type: ignore[assignment]
        i = 1
        colon = sub = None
        if i < len(children) and _is(children[i], "COLON"):
            colon = children[i]
            i += 1
            if i < len(children) and _is(children[i], "WORD"):
                sub = children[i]
                i += 1
        terms = children[i] if i < len(children) and isinstance(children[i], Terms) else None
        if terms is not None:
            i += 1
        tail = _Tail.of(children[i:])
        span = Span(head.start_pos, _end(children[-1]))
        word = str(head)
        kind = lexicon.classify_word(word)
        if sub is None:
            if terms is None:  # NAME or NAME ':'
                return self._named(head, kind, None, None, span)
            if tail.colon is not None and not (kind == "raw" or isinstance(kind, lexicon.CacheWord)):
                raise self._colon_after_terms(head, terms, tail, span)
            return self._named(head, kind, terms, _modifiers(tail.word), span)  # type: ignore[arg-type]
        assert isinstance(sub, _TOKENS) and isinstance(colon, _TOKENS)
        if kind is not None or lexicon.is_modifier_word(str(sub)):
            # NAME ':' MODIFIERS: nothing may follow the modifier list.
            if terms is not None:
                raise _fault(
                    "ES009", "a term list must come before the modifiers", terms.span,  # type: ignore[attr-defined]
                    f"write '{word}/.../{sub}'",
                )
            if tail.colon is not None:
                raise _fault(
                    "ES008", "only one modifier list per event", _span(tail.colon),
                    f"did you mean '{word}:{sub}{tail.word or ''}'?",
                )
            return self._named(head, kind, None, _modifiers(sub), span)
        return TracepointEvent(
            word,
            str(sub),
            terms,  # type: ignore[arg-type]
            _modifiers(tail.word),
            span,
            Span(head.start_pos, sub.end_pos),
            _span(head),
            _span(sub),
        )

    @staticmethod
    def _named(head: AnyTok, kind: SymbolKind | lexicon.CacheWord | str | None, terms: Terms | None,
               mods: Modifiers | None, span: Span) -> Event:
        word = str(head)
        name_span = _span(head)
        if isinstance(kind, SymbolKind):
            return SymbolEvent(kind, word, terms, mods, span, name_span)
        if isinstance(kind, lexicon.CacheWord):
            split = kind
            part_spans = tuple(
                Span(head.start_pos + off, head.start_pos + off + len(part))
                for part, off in zip(split.parts, split.part_offsets, strict=True)
            )
            return CacheEvent(split.cache_type, split.parts, terms, mods, span, name_span, part_spans)
        if kind == "raw":
            code = NumberNode(int(word[1:], 16), word[1:], Span(head.start_pos + 1, head.end_pos))
            return RawEvent(code, terms, mods, span)
        if terms is not None:
            return PmuEvent(word, terms, mods, span, name_span)
        return AliasEvent(word, mods, span, name_span)

    @staticmethod
    def _colon_after_terms(head: AnyTok, terms: Terms, tail: _Tail, span: Span) -> _Fault:
        from evspec.printer import print_terms

        mods = str(tail.word or "")
        fixed = f"{head}{print_terms(terms)}{mods}"
        return _fault(
            "ES008", "modifiers follow the closing '/' directly (no ':')", _span(tail.colon),  # type: ignore[arg-type]
            f"did you mean '{fixed}'?" if mods else "remove the ':'",
        )

    def numeric_event(self, children: list[object]) -> NumericEvent:
        type_tok, config_tok = children[0], children[2]
        terms = next((c for c in children if isinstance(c, Terms)), None)
        tail = _Tail.of(children[3:])
        span = Span(type_tok.start_pos, _end(children[-1]))  # type: ignore[union-attr]
        return NumericEvent(
            _number(type_tok), _number(config_tok), terms, _modifiers(tail.word), span  # type: ignore[arg-type]
        )

    def breakpoint_event(self, children: list[object]) -> BreakpointEvent:
        mem: AnyTok = children[0]  # type: ignore[assignment]
        address = _number(children[1])  # type: ignore[arg-type]
        i = 2
        length = None
        if i < len(children) and _is(children[i], "BP_SLASH"):
            length = _number(children[i + 1])  # type: ignore[arg-type]
            i += 2
        words = [c for c in children[i:] if _is(c, "WORD")]
        colons = [c for c in children[i:] if _is(c, "COLON")]
        access = mods = None
        if words and lexicon.is_access_word(str(words[0])):
            access = words[0]
            mods = words[1] if len(words) > 1 else None
        elif words:
            mods = words[0]
            if len(colons) > 1:
                raise _fault(
                    "ES008", "only one modifier list per event", _span(colons[1]),  # type: ignore[arg-type]
                    "the letters after the address are the access type only if they are all r, w, x",
                )
        span = Span(mem.start_pos, _end(children[-1]))
        return BreakpointEvent(
            address,
            length,
            None if access is None else str(access),
            _modifiers(mods),  # type: ignore[arg-type]
            span,
            None if access is None else _span(access),  # type: ignore[arg-type]
        )

    def bpf_event(self, children: list[object]) -> BpfEvent:
        path: AnyTok = children[0]  # type: ignore[assignment]
        terms = children[1] if len(children) > 1 else None
        mods = children[2] if len(children) > 2 else None
        text = str(path)
        return BpfEvent(
            text,
            text.endswith(".c"),
            terms,  # type: ignore[arg-type]
            _modifiers(mods),  # type: ignore[arg-type]
            Span(path.start_pos, _end(children[-1])),
            _span(path),
        )

    def terms(self, children: list[object]) -> Terms:
        items = tuple(c for c in children if not isinstance(c, _TOKENS))
        return Terms(items, Span(children[0].start_pos, children[-1].end_pos))  # type: ignore[arg-type, union-attr]

    def term_list(self, children: list[object]) -> Terms:
        items = tuple(c for c in children if not isinstance(c, _TOKENS))
        return Terms(items, Span(items[0].span.start, items[-1].span.end))  # type: ignore[arg-type, attr-defined]

    def term(self, children: list[object]) -> AnyTerm:
        key: AnyTok = children[0]  # type: ignore[assignment]
        if key.type == "DRIVER_TERM":
            return self._driver_term(key)
        index = next((c for c in children if isinstance(c, (AllIndices, IndexList))), None)
        value_tok = children[-1] if len(children) > 1 and _is(children[-2], "EQUALS") else None
        value = None if value_tok is None else _value(value_tok)  # type: ignore[arg-type]
        text = str(key)
        span = Span(key.start_pos, _end(children[-1]))
        if text.startswith(lexicon.MAP_TERM_PREFIX):
            return self._map_term(key, index, value, span)
        if index is not None:
            raise _fault(
                "ES013", f"an index list is allowed only on map: terms (not on '{text}')", index.span,
                "index lists select the map keys of a BPF object term: map:NAME.value[0,2...4]=VALUE",
            )
        if value is None and lexicon.RAW_TERM.fullmatch(text):
            code = int(text[3:], 16) if text.startswith("r0x") else int(text[1:], 16)
            raw = NumberNode(code, text[1:], Span(key.start_pos + 1, key.end_pos))
            return Term(TermKind.RAW, text, raw, span, _span(key))
        kind = TermKind.KEYWORD if text in lexicon.KEYWORD_TERMS else TermKind.USER
        return Term(kind, text, value, span, _span(key))

    @staticmethod
    def _map_term(key: AnyTok, index: Indices | None, value: Value | None, span: Span) -> MapTerm:
        text = str(key)
        rest_start = key.start_pos + len(lexicon.MAP_TERM_PREFIX)
        rest = text[len(lexicon.MAP_TERM_PREFIX):]
        dot = rest.find(".")
        map_name = rest if dot < 0 else rest[:dot]
        option = "" if dot < 0 else rest[dot + 1:]
        name_span = Span(rest_start, rest_start + len(map_name))
        option_span = Span(key.end_pos, key.end_pos) if dot < 0 else Span(rest_start + dot + 1, key.end_pos)
        key_span = Span(key.start_pos, index.span.end if index is not None else key.end_pos)
        return MapTerm(map_name, option, index, value, span, key_span, name_span, option_span)

    @staticmethod
    def _driver_term(tok: AnyTok) -> Term:
        text = str(tok)[1:]
        key, eq, val = text.partition("=")
        key_span = Span(tok.start_pos, tok.start_pos + 1 + len(key))
        value = Word(val, False, Span(key_span.end + 1, tok.end_pos)) if eq else None
        return Term(TermKind.DRIVER, key, value, _span(tok), key_span)

    def index(self, children: list[object]) -> Indices:
        span = Span(children[0].start_pos, children[-1].end_pos)  # type: ignore[union-attr]
        if _is(children[1], "ALL"):
            return AllIndices(span)
        return IndexList(tuple(c for c in children if isinstance(c, IndexItem)), span)

    def index_item(self, children: list[AnyTok]) -> IndexItem:
        first = _number(children[0])
        last = _number(children[2]) if len(children) > 1 else None
        return IndexItem(first, last, Span(children[0].start_pos, children[-1].end_pos))


# --------------------------------------------------------------------------------------------
# error recovery: one diagnostic per bad item (COMPAT 1.11)


def _recover(text: str) -> tuple[tuple[Item, ...], list[Diagnostic]]:
    """Parse item by item after the whole string failed.

    The first error comes from parsing the whole string (so it is exactly what the grammar sees);
    then parsing restarts at the next top-level item, with the text before it blanked out, so spans
    stay offsets into ``text``.
    """
    parser = machine()
    items: list[Item] = []
    diags: list[Diagnostic] = []
    offset = 0
    while True:
        if offset and not text[offset:].strip(BLANKS):
            diags.append(_trailing_comma(offset - 1))
            break
        current = " " * offset + text[offset:] if offset else text
        try:
            items.extend(parser.parse(current, "events"))  # type: ignore[arg-type]
            break
        except _Fault as fault:
            diag = fault.diagnostic
        except _SyntaxStop as stop:
            diag = _diagnose(current, stop)
        diags.append(diag)
        segments = split_items(text, offset)
        k = next(
            (n for n, (s, e) in enumerate(segments) if s <= diag.span.start <= e), len(segments) - 1
        )
        if k > 0:
            prefix_end = segments[k - 1][1]
            try:
                items.extend(parser.parse(" " * offset + text[offset:prefix_end], "events"))  # type: ignore[arg-type]
            except (_SyntaxStop, _Fault):
                pass  # cannot happen if the split agrees with the grammar; then nothing to add
        if k + 1 >= len(segments):
            break
        offset = segments[k + 1][0]
        if len(diags) >= MAX_SYNTAX_ERRORS:
            last = diags.pop()
            diags.append(error(last.code, last.message, last.span, help=last.help,
                               notes=(*last.notes, "further syntax errors are not shown"),
                               perf_message=last.perf_message))
            break
    return tuple(items), diags


def _trailing_comma(pos: int) -> Diagnostic:
    return error(
        "ES001", "unexpected ',' at the end (an event must follow it)", Span(pos, pos + 1),
        help=("remove the trailing ','",), perf_message=PARSER_ERROR,
    )


@lru_cache(maxsize=1)
def _split_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A BPF path at an event start (as BPF_PATH in the grammar), and a breakpoint '/LEN'."""
    path = re.compile(
        r"[A-Za-z0-9_./:\-](?:[A-Za-z0-9_./:\- \t]*[A-Za-z0-9_./:\-])?\.(?:obj|o|c)"
        r"(?=[/:]|[ \t\n\r\f\v]*(?:[,}]|\Z))"
    )
    return path, re.compile(r"/(?:0x[0-9a-fA-F]+|[0-9]+)(?=[:,} \t\n\r\f\v]|\Z)")


def split_items(text: str, start: int = 0) -> list[tuple[int, int]]:
    """The top-level items of ``text[start:]`` as ``(start, end)`` pairs (separators excluded).

    Commas inside ``{...}``, inside term lists ``/.../``, index lists ``[...]`` and quoted values do
    not separate items; BPF paths (which may contain ``/`` and ``:``) are skipped whole.
    """
    path_at, bp_length = _split_patterns()
    segments: list[tuple[int, int]] = []
    n = len(text)
    i = seg_start = start
    depth = 0
    at_event = True
    while i < n:
        c = text[i]
        if at_event:
            if c in BLANKS:
                i += 1
                continue
            at_event = False
            m = path_at.match(text, i)
            if m:
                i = m.end()
                continue
        if c == ",":
            if depth == 0:
                segments.append((seg_start, i))
                seg_start = i + 1
            at_event = True
        elif c == "{":
            depth += 1
            at_event = True
        elif c == "}":
            depth = max(0, depth - 1)
        elif c == "/" and not bp_length.match(text, i):
            i = _skip_term_list(text, i + 1)
        elif c == "'":
            close = text.find("'", i + 1)
            i = n if close < 0 else close
        i += 1
    segments.append((seg_start, n))
    return segments


def _skip_term_list(text: str, i: int) -> int:
    """Index of the '/' that closes a term list opened before ``i`` (or the end of the text)."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "/":
            return i
        if c == "'":
            close = text.find("'", i + 1)
            if close < 0:
                return n
            i = close
        elif c == "[":
            close = text.find("]", i + 1)
            if close < 0:
                return n
            i = close
        i += 1
    return n


# --------------------------------------------------------------------------------------------
# syntax diagnostics from Lark's errors


_OPENERS = {"LBRACE", "NAMED_LBRACE", "LSQB"}
_EVENT_START = {None, "_LEAD", "COMMA", "LBRACE", "NAMED_LBRACE"}
_WORDISH = {"NAME", "WORD", "TERM_KEY", "VALUE", "ALL"}
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_*?.!-[]")
_EXPECTED = {
    "NAME": "an event name", "NUMBER": "a number", "MEM": "mem:ADDR", "BPF_PATH": "a BPF object path",
    "LBRACE": "'{'", "NAMED_LBRACE": "'{'", "RBRACE": "'}'", "COMMA": "','", "COLON": "':'",
    "WORD": "modifier letters", "SLASH": "'/'", "BP_SLASH": "'/'", "TERM_KEY": "a term name",
    "DRIVER_TERM": "an @driver term", "EQUALS": "'='", "TERM_COMMA": "','", "VALUE": "a value",
    "LSQB": "'['", "RSQB": "']'", "RANGE": "'...'", "ALL": "'all'",
    "$END": "the end of the string", "_TRAIL": "the end of the string",
}


@dataclass(frozen=True, slots=True)
class _Stack:
    """The parser's stack at an error, flattened to its leaves (tokens and finished AST nodes)."""

    leaves: tuple[object, ...]
    opens: tuple[AnyTok, ...]  # unclosed '{', '/', '[' in order
    prev_closes_terms: bool  # the last token closed a term list

    @staticmethod
    def of(stop: _SyntaxStop) -> _Stack:
        leaves: list[object] = []
        for value in stop.values:
            _flatten(value, leaves)
        opens: list[AnyTok] = []
        closes = False
        for leaf in leaves:
            closes = False
            if not isinstance(leaf, _TOKENS):
                continue
            kind = leaf.type
            if kind in _OPENERS:
                opens.append(leaf)
            elif kind == "RBRACE" and opens and opens[-1].type != "LSQB":
                opens.pop()
            elif kind == "RSQB" and opens and opens[-1].type == "LSQB":
                opens.pop()
            elif kind == "SLASH":
                if opens and opens[-1].type == "SLASH":
                    opens.pop()
                    closes = True
                else:
                    opens.append(leaf)
        return _Stack(tuple(leaves), tuple(opens), closes)

    @property
    def prev(self) -> object | None:
        return self.leaves[-1] if self.leaves else None

    @property
    def prev_type(self) -> str | None:
        prev = self.prev
        if prev is None:
            return None
        return prev.type if isinstance(prev, _TOKENS) else "node"

    def before_prev_type(self) -> str | None:
        if len(self.leaves) < 2:
            return None
        leaf = self.leaves[-2]
        return leaf.type if isinstance(leaf, _TOKENS) else "node"

    @property
    def in_group(self) -> bool:
        return any(t.type in ("LBRACE", "NAMED_LBRACE") for t in self.opens)

    def current_event(self) -> list[object]:
        """The leaves of the event being parsed (after the last ',' or '{' outside brackets)."""
        out: list[object] = []
        for leaf in reversed(self.leaves):
            if _is(leaf, "COMMA", "LBRACE", "NAMED_LBRACE", "_LEAD") and not (
                self.opens and self.opens[-1].type in ("SLASH", "LSQB")
                and leaf.start_pos > self.opens[-1].start_pos  # type: ignore[union-attr]
            ):
                break
            out.append(leaf)
        return out[::-1]


def _flatten(value: object, out: list[object]) -> None:
    if isinstance(value, Tree):
        for child in value.children:
            _flatten(child, out)
    elif isinstance(value, (list, tuple)):
        for child in value:
            _flatten(child, out)
    else:
        out.append(value)


def _describe_char(c: str) -> str:
    if c.isprintable() and c not in BLANKS:
        return f"'{c}'"
    return f"U+{ord(c):04X}"


def _diagnose(text: str, stop: _SyntaxStop) -> Diagnostic:
    """Turn a parse stop into one precise diagnostic (COMPAT 1.3, corpus README *Spans*)."""
    stack = _Stack.of(stop)
    if stop.at_end:
        return _at_end(text, stack)
    tok = stop.token
    pos = stop.pos
    expected = set(stop.expected)
    if pos >= len(text):
        return _at_end(text, stack)
    char = text[pos]
    if tok is not None and tok.type == "VALUE" and str(tok).startswith("'"):
        tok = None  # a quote where no value may stand: report the quote character itself
    if char in BLANKS:
        return error(
            "ES003", "white space not allowed here (only around , { } and at the ends)",
            Span(pos, pos + 1), help=("remove the blank",), perf_message=None,
        )
    span = _trimmed(tok) if tok is not None else Span(pos, pos + 1)
    if char == "]" and tok is not None:
        span = Span(pos, pos + 1)
    return _unexpected(text, stack, tok, span, expected)


def _at_end(text: str, stack: _Stack) -> Diagnostic:
    if stack.opens:
        opener = stack.opens[-1]
        start = _trimmed(opener).start
        what = {
            "SLASH": ("term list is not closed (missing '/')", "close the term list with '/'"),
            "LSQB": ("index list is not closed (missing ']')", "close the index list with ']'"),
        }.get(opener.type, ("group is not closed (missing '}')", "close the group with '}'"))
        return error("ES004", what[0], Span(start, start + 1), help=(what[1],),
                     perf_message=None if opener.type.endswith("LBRACE") else PARSER_ERROR)
    prev = stack.prev
    if not isinstance(prev, _TOKENS) or prev.type == "_LEAD":
        if prev is None or _is(prev, "_LEAD"):
            return error("ES012", "empty event string (no event)", Span(0, len(text)),
                         help=("write an event, for example 'cycles'",), perf_message=None)
        end = _end(prev)
        return error("ES001", "unexpected end of the event string", Span(end, end),
                     perf_message=PARSER_ERROR)
    span = _trimmed(prev)
    kind = prev.type
    before = stack.before_prev_type()
    if kind == "COMMA":
        return _trailing_comma(span.start)
    if kind == "COLON" and before == "NUMBER" and _numeric_type_colon(stack):
        return error("ES010", "expected a config number after ':'", span,
                     help=("a numeric event is TYPE:CONFIG, for example '1:0'",), perf_message=PARSER_ERROR)
    if kind == "COLON" and before == "RBRACE":
        return error("ES010", "expected group modifiers after ':'", span,
                     help=("remove the ':' or add modifiers such as ':u'",), perf_message=PARSER_ERROR)
    if kind == "NUMBER" and len(stack.current_event()) == 1:
        return error("ES010", "a numeric event needs ':CONFIG' after the type", span,
                     help=(f"for example '{prev}:0'",), perf_message=PARSER_ERROR)
    if kind == "BP_SLASH":
        return error("ES010", "expected a breakpoint length after '/'", span,
                     help=("write the length in bytes, for example 'mem:0x1000/8'",),
                     perf_message=PARSER_ERROR)
    if kind == "EQUALS":
        return error("ES010", "expected a value after '='", span, perf_message=PARSER_ERROR)
    return error("ES001", f"unexpected end of the event string after '{prev}'", span,
                 perf_message=PARSER_ERROR)


def _numeric_type_colon(stack: _Stack) -> bool:
    event = stack.current_event()
    return len(event) == 2 and _is(event[0], "NUMBER")


def _unexpected(text: str, stack: _Stack, tok: AnyTok | None, span: Span, expected: set[str]) -> Diagnostic:
    pos = span.start
    char = text[pos]
    shown = f"'{text[span.start:span.end]}'" if tok is not None else _describe_char(char)
    kind = tok.type if tok is not None else None
    prev = stack.prev
    prev_type = stack.prev_type
    top = stack.opens[-1].type if stack.opens else None

    def err(code: str, message: str, where: Span = span, *help_lines: str) -> Diagnostic:
        return error(code, message, where, help=help_lines, perf_message=PARSER_ERROR)

    if char == "'" and text.find("'", pos + 1) < 0:
        return err("ES004", "quoted value is not closed (missing \"'\")", Span(pos, pos + 1))
    if top == "LSQB":
        lsqb = stack.opens[-1]
        if char == "]" and prev_type == "LSQB":
            return err("ES006", "empty index list", Span(lsqb.start_pos, span.end),
                       "list indices and ranges (e.g. [0,3...6]) or write [all]")
        if "]" not in text[pos:]:
            return err("ES004", "index list is not closed (missing ']')", Span(lsqb.start_pos, lsqb.start_pos + 1))
        return err("ES001", f"unexpected {shown} in an index list",
                   span, "an index list holds numbers and ranges a...b separated by ',', or 'all'")
    if kind == "RBRACE":
        if prev_type in ("LBRACE", "NAMED_LBRACE"):
            return err("ES005", "empty group", Span(_trimmed(prev).start, span.end),  # type: ignore[arg-type]
                       "a group needs at least one event")
        if not stack.in_group:
            return err("ES001", "unexpected '}' (no group is open)", span, "remove the '}' or open the group with '{'")
        if prev_type == "COMMA":
            return err("ES001", "unexpected '}' (an event must come first)", span, "remove the trailing ','")
    if kind in ("LBRACE", "NAMED_LBRACE") and stack.in_group:
        return err("ES007", "groups cannot be nested", Span(span.end - 1, span.end))
    if kind == "COMMA" and prev_type in _EVENT_START:
        return err("ES001", "unexpected ',' (an event must come first)", span)
    if prev_type == "BPF_PATH" and kind == "COLON":
        return _bpf_colon(text, prev, span)  # type: ignore[arg-type]
    after_terms = stack.prev_closes_terms or isinstance(prev, Terms)
    if after_terms and kind == "COLON" and any(_is(x, "BPF_PATH") for x in stack.current_event()):
        return err("ES008", "modifiers follow the closing '/' directly (no ':')", span, "remove the ':'")
    if kind in ("SLASH", "BP_SLASH"):
        event = stack.current_event()
        if after_terms:
            return err("ES009", "only one term list per event", span, "put all terms in one /.../ list")
        if any(_is(x, "MEM") for x in event):
            return err("ES009", "breakpoints take no terms (and only one /LEN)", span)
        if prev_type == "WORD":
            return err("ES009", "a term list must come before the modifiers", span)
    if prev_type == "COLON":
        if _numeric_type_colon(stack):
            return err("ES010", "expected a config number after ':'", span,
                       "a numeric event is TYPE:CONFIG, for example '1:0'")
        if stack.before_prev_type() == "RBRACE":
            return err("ES010", f"unexpected {shown} after ':' (expected group modifiers)", span)
        return err("ES001", f"unexpected text after ':' ({shown})", span,
                   "after ':' come modifier letters (u k h I G H p P S D W e b) or a tracepoint event")
    if kind == "COLON" and prev_type == "WORD":
        return err("ES008", "only one modifier list per event", span, "write all modifier letters after one ':'")
    if prev_type == "BP_SLASH":
        return err("ES010", "expected a breakpoint length after '/' (breakpoints take no terms)", span)
    if prev_type == "EQUALS":
        return err("ES010", "expected a value after '='", span,
                   "a value is a number (decimal or 0x-hex), a name, or a quoted '...' string")
    if prev_type in ("TERM_COMMA",) or (prev_type == "SLASH" and top == "SLASH"):
        return err("ES010", "expected a term name", span, "remove the extra ','" if prev_type == "TERM_COMMA" else
                   "terms are NAME or NAME=VALUE separated by ','")
    if (prev_type in ("NUMBER", "VALUE") and isinstance(prev, _TOKENS) and str(prev)[0].isdigit()
            and prev.end_pos == pos and char in _WORD_CHARS):
        if top == "SLASH":
            return err("ES001", "a value that starts with a digit must be a number (decimal or 0x-hex)",
                       span, "quote it: name='1x'")
        if len(stack.current_event()) == 1:
            return err("ES010", "a numeric event needs ':CONFIG' after the type", span)
    if prev_type == "RBRACE" and (kind in _WORDISH or char in _WORD_CHARS):
        word = text[span.start:span.end]
        if lexicon.is_modifier_word(word):
            return err("ES008", "group modifiers need a ':' ('{...}:u')", span, f"write ':{word}'")
        return err("ES001", "unexpected text after the group", span, "separate items with ','")
    if prev_type in _EVENT_START and tok is not None:
        return err("ES001", f"unexpected {shown} at the start of an event", span,
                   "an event starts with a name, a number (TYPE:CONFIG), mem:ADDR or a BPF object path")
    if prev_type in _EVENT_START:
        if char in "./":
            m = re.compile(r"[^,{}]*").match(text, pos)
            end = pos + len(m.group(0).rstrip(BLANKS)) if m else pos + 1
            return err("ES011", "not a BPF object path: the name must end in .o, .obj or .c",
                       Span(pos, max(end, pos + 1)))
        return err("ES002", f"unexpected character {_describe_char(char)} at the start of an event", span,
                   *(("quotes only delimit term values (name='...')",) if char == "'" else ()))
    if tok is None:
        help_lines = ("events are separated by ','",) if char in ";|" else ()
        return err("ES002", f"unexpected character {_describe_char(char)}", span, *help_lines)
    wanted = sorted({_EXPECTED[e] for e in expected if e in _EXPECTED})
    return err("ES001", f"unexpected {shown}", span, *((f"expected {', '.join(wanted)}",) if wanted else ()))


def _bpf_colon(text: str, path: AnyTok, span: Span) -> Diagnostic:
    m = re.compile(r":([A-Za-z]+)").match(text, span.start)
    fix = f"{path}//{m.group(1)}" if m else f"{path}//"
    return error(
        "ES008", "a BPF object takes modifiers only after a /.../ term list ('./x.o//u')", span,
        help=(f"did you mean '{fix}'?",), perf_message=PARSER_ERROR,
    )
