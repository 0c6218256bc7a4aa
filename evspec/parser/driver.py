"""The LALR(1) driver: a contextual scanner and a shift/reduce loop over the committed tables.

This is Lark's LALR algorithm with its contextual lexer, run over the tables Lark computed for
``events.lark`` (``evspec.parser.tables``) without Lark's per-token bookkeeping (line counting,
parse-tree callbacks), which would cost more than the parsing itself. In each parser state only
the terminals that state accepts are tried, in Lark's order of preference, as one precompiled
alternation; the first alternative that matches wins, as in Lark. Rules are reduced by calling
the builder's method of the same name with the rule's children, the way a Lark ``Transformer``
sees a parse tree: rules named ``_x`` are inlined into their parent (a single child passes through
unchanged) and tokens of terminals named ``_X`` are dropped. The lists the grammar repeats
(``a (COMMA a)*``, which Lark turns into a left-recursive ``_x`` rule) grow in place, so that a
string of n items costs O(n); ``work`` counts what the machine has handled (tokens and the
values each reduction takes), for tests that hold the parser linear without timing it.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # imports for annotations only: a cold start does not pay for them
if TYPE_CHECKING:
    from collections.abc import Callable

    from evspec.parser.tables import LalrTables

    Reduce = Callable[[list[object]], object]

BLANKS = " \t\n\r\f\v"
END = "$END"


class Tok:
    """A token: the terminal's name, its text and its span ``[start_pos, end_pos)``."""

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


class Splice(list):  # type: ignore[type-arg]
    """The children of an inlined rule (``_name``), spliced into its parent."""


class SyntaxStop(Exception):
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
    """Parses with the grammar's LALR(1) tables, building values with ``builder``'s rule methods."""

    def __init__(self, tables: LalrTables, builder: object) -> None:
        terminal_names = frozenset(name for name, _ in tables.terminals)
        compiled: dict[frozenset[str], re.Pattern[str]] = {}

        def scanner(names: frozenset[str]) -> re.Pattern[str]:
            if names not in compiled:
                compiled[names] = re.compile(
                    "|".join(f"(?P<{name}>{regex})" for name, regex in tables.terminals if name in names)
                    or "(?!)"
                )
            return compiled[names]

        # (number of symbols, origin, builder method or None to splice, children need flattening,
        # the rule extends its first child: a left-recursive list rule '_x: _x ...')
        self._rules: list[tuple[int, str, Reduce | None, bool, bool]] = []
        for origin, symbols in tables.rules:
            flatten = any(s.startswith("_") for s in symbols)
            method: Reduce | None
            if origin.startswith("_"):
                unit = len(symbols) == 1 and not symbols[0].startswith("_")
                method = _first if unit else None
            else:
                method = getattr(builder, origin)
            grows = method is None and len(symbols) > 1 and symbols[0] == origin
            self._rules.append((len(symbols), origin, method, flatten, grows))
        self._actions = tables.states
        self._scanners = _LazyScanners(
            lambda state: scanner(frozenset(k for k in tables.states[state] if k in terminal_names))
        )
        self._any_terminal = lambda: scanner(terminal_names)
        self._start = tables.start
        self._end = tables.end
        self.work = 0

    def parse(self, text: str, start: str, pos: int = 0, endpos: int | None = None) -> object:
        """The builder's value for ``text[pos:endpos]`` read as ``start`` (spans stay offsets into
        ``text``, and the text ends at ``endpos`` for the scanner); raises ``SyntaxStop`` (or
        whatever the builder raises) where the text does not fit."""
        table = self._actions
        scanners = self._scanners
        rules = self._rules
        end_state = self._end[start]
        state = self._start[start]
        stack = [state]
        values: list[object] = []
        push_state = stack.append
        push_value = values.append
        n = len(text) if endpos is None else endpos
        work = 0
        while True:
            if pos < n:
                m = scanners[state].match(text, pos, n)
                if m is None:
                    self.work += work
                    raise self._no_token(text, pos, n, stack, values)
                end = m.end()
                kind = m.lastgroup
                tok: Tok | None = Tok(kind, text[pos:end], pos, end)  # type: ignore[arg-type]
                pos = end
            else:
                kind, tok = END, None
            work += 1
            while True:
                code = table[state].get(kind)  # type: ignore[arg-type]
                if code is None:
                    self.work += work
                    raise SyntaxStop(n if tok is None else tok.start_pos, tok, values,
                                     _expected(table[state]), tok is None)
                if code >= 0:
                    push_state(code)
                    push_value(tok)
                    state = code
                    break
                size, name, method, flatten, grows = rules[~code]
                work += size
                if size:
                    children = values[-size:]
                    del values[-size:]
                    del stack[-size:]
                else:
                    children = []
                if grows:
                    value: object = children[0]
                    _extend_flat(value, children, 1)  # type: ignore[arg-type]
                elif flatten:
                    children = _flat_children(children)
                    work += len(children)
                    value = Splice(children) if method is None else method(children)
                else:
                    value = Splice(children) if method is None else method(children)
                state = table[stack[-1]][name]
                push_state(state)
                push_value(value)
                if tok is None and state == end_state:
                    self.work += work
                    return value

    def _no_token(self, text: str, pos: int, endpos: int, stack: list[int], values: list[object]) -> SyntaxStop:
        """No terminal of this state matches at ``pos``: report the token that stands there if any
        terminal of the language matches (as Lark's contextual lexer does), else the character."""
        m = self._any_terminal().match(text, pos, endpos)
        tok = None if m is None else Tok(m.lastgroup, m.group(), pos, m.end())  # type: ignore[arg-type]
        return SyntaxStop(pos, tok, values, _expected(self._actions[stack[-1]]))


def _expected(actions: dict[str, int]) -> frozenset[str]:
    return frozenset(k for k in actions if k.isupper() or k == END)


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
    _extend_flat(out, children, 0)
    return out


def _extend_flat(out: list[object], children: list[object], first: int) -> None:
    """Append ``children[first:]`` to ``out``, splices spliced in and ``_X`` tokens dropped."""
    for child in children[first:]:
        if type(child) is Splice:
            out.extend(child)
        elif type(child) is Tok and child.type[0] == "_":
            continue
        else:
            out.append(child)
