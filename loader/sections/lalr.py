"""Section names parsed over the committed tables of ``grammar/section.lark``
(``section_tables.json``, written by ``sections.tablegen``), without importing Lark.

It is Lark's LALR parser as ``sections.names`` configured it — contextual lexer, parse trees with
``propagate_positions``, no placeholders — run over the data Lark computed: in each parser state
only that state's terminals are tried, in Lark's order, as one alternation (the first alternative
that matches wins); a token whose whole text is one of the literals folded into its terminal takes
the literal's type; rules build ``Tree`` nodes shaped as Lark shapes them (filtered children,
inlined rules, ``?rule`` handing over a single child) and carrying the span of everything they
were reduced from. Where a state's lexer fails, the root lexer names the token that stands there,
as Lark's contextual lexer does. Errors are ``SectionSyntaxError``: an unexpected token, an
unexpected character, or the unexpected end.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

TABLES_FILE = "section_tables.json"
END = "$END"


class Token(str):
    """A token: its text (the ``str`` itself and ``value``), its terminal (``type``) and its span
    ``[start_pos, end_pos)``, like Lark's ``Token``."""

    type: str
    value: str
    start_pos: int
    end_pos: int

    def __new__(cls, type: str, value: str, start_pos: int, end_pos: int) -> Token:
        token = str.__new__(cls, value)
        token.type = type
        token.value = value
        token.start_pos = start_pos
        token.end_pos = end_pos
        return token

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {self.value!r}, {self.start_pos})"


class Meta:
    """Where a tree's text is: ``start_pos``/``end_pos`` of its own span; ``container_*`` also
    cover what a parent rule reduced around a tree it handed over (``?rule``), as in Lark."""

    __slots__ = ("start_pos", "end_pos", "container_start_pos", "container_end_pos")

    def __init__(self) -> None:
        self.start_pos: int | None = None
        self.end_pos: int | None = None
        self.container_start_pos = 0
        self.container_end_pos = 0

    @property
    def empty(self) -> bool:
        return self.start_pos is None


class Tree:
    """A parse tree node: the rule (or alias) name, the kept children, the span."""

    __slots__ = ("data", "children", "meta")

    def __init__(self, data: str, children: list[Tree | Token]) -> None:
        self.data = data
        self.children = children
        self.meta = Meta()

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"


class SectionSyntaxError(Exception):
    """The text does not fit the grammar: ``token`` (an unexpected token), else an unexpected
    character at ``pos``, or (``at_end``) the text ended too early."""

    def __init__(self, pos: int, token: Token | None = None, at_end: bool = False) -> None:
        super().__init__(f"syntax error at {pos}")
        self.pos = pos
        self.token = token
        self.at_end = at_end


class _Lexer:
    """One state's lexer: an alternation of its terminals and the literal folds."""

    __slots__ = ("pattern", "folds")

    def __init__(self, terminals: dict[str, str], names: list[str], folds: dict[str, list[str]]) -> None:
        self.pattern = re.compile("|".join(f"(?P<{n}>{terminals[n]})" for n in names) or "(?!)")
        self.folds = {kind: re.compile("|".join(f"(?P<{n}>{terminals[n]})" for n in literals))
                      for kind, literals in folds.items()}

    def token(self, text: str, pos: int) -> tuple[Token, str] | None:
        """The token at ``pos`` and the terminal that matched it (before any folding)."""
        m = self.pattern.match(text, pos)
        if m is None:
            return None
        matched = kind = m.lastgroup
        assert matched is not None and kind is not None
        value = m.group()
        fold = self.folds.get(kind)
        if fold is not None:
            whole = fold.fullmatch(value)
            if whole is not None:
                kind = whole.lastgroup or kind
        return Token(kind, value, pos, m.end()), matched


# (length, tree name, kept children as (index, inline), hand over a single child)
_Rule = tuple[int, str, tuple[tuple[int, bool], ...], bool]


class SectionParser:
    """The parser over one set of tables (``load_parser`` for the committed ones)."""

    def __init__(self, data: dict[str, object]) -> None:
        terminals = dict(data["terminals"])  # type: ignore[call-overload]
        self._lexer_data: list[list[object]] = data["lexers"]  # type: ignore[assignment]
        self._terminals: dict[str, str] = terminals
        self._lexers: dict[int, _Lexer] = {}
        self._ignore = frozenset(data["ignore"])  # type: ignore[call-overload]
        self._rules: list[tuple[str, _Rule]] = [
            (origin, (size, name, tuple((i, inline) for i, inline in kept), expand))
            for origin, size, name, kept, expand in data["rules"]]  # type: ignore[attr-defined]
        self._states: list[tuple[int, dict[str, int]]] = [(lexer, actions) for lexer, actions in data["states"]]  # type: ignore[attr-defined]
        self._start: dict[str, int] = data["start"]  # type: ignore[assignment]
        self._end: dict[str, int] = data["end"]  # type: ignore[assignment]

    def _lexer(self, number: int) -> _Lexer:
        lexer = self._lexers.get(number)
        if lexer is None:
            names, folds = self._lexer_data[number]
            lexer = self._lexers[number] = _Lexer(self._terminals, names, folds)  # type: ignore[arg-type]
        return lexer

    def _next(self, text: str, pos: int, state: int) -> Token | None:
        """The next token (None at the end) the lexer of ``state`` sees at ``pos``."""
        lexer = self._lexer(self._states[state][0])
        while pos < len(text):
            found = lexer.token(text, pos)
            if found is None:
                there = self._lexer(0).token(text, pos)  # the root lexer: which token is there
                raise SectionSyntaxError(pos, None if there is None else there[0])
            token, matched = found
            if matched not in self._ignore:  # Lark skips by the terminal that matched
                return token
            pos = token.end_pos
        return None

    def parse(self, text: str, start: str) -> Tree:
        """The tree of ``text`` read as ``start``; ``SectionSyntaxError`` where it does not fit."""
        states, rules = self._states, self._rules
        end_state = self._end[start]
        stack = [self._start[start]]
        values: list[Tree | Token] = []
        pos = 0
        while True:
            token = self._next(text, pos, stack[-1])
            kind = END if token is None else token.type
            while True:
                code = states[stack[-1]][1].get(kind)
                if code is None:
                    raise SectionSyntaxError(len(text) if token is None else token.start_pos, token, token is None)
                if code >= 0:
                    assert token is not None
                    stack.append(code)
                    values.append(token)
                    pos = token.end_pos
                    break
                origin, rule = rules[~code]
                size = rule[0]
                children = values[len(values) - size:]
                del values[len(values) - size:]
                del stack[len(stack) - size:]
                values.append(_reduce(rule, children))
                stack.append(states[stack[-1]][1][origin])
                if token is None and stack[-1] == end_state:
                    node = values[-1]
                    assert isinstance(node, Tree)
                    return node


def _reduce(rule: _Rule, children: list[Tree | Token]) -> Tree | Token:
    _, name, kept, expand = rule
    filtered: list[Tree | Token] = []
    for i, inline in kept:
        child = children[i]
        if inline:
            assert isinstance(child, Tree)
            filtered.extend(child.children)
        else:
            filtered.append(child)
    node = filtered[0] if expand and len(filtered) == 1 else Tree(name, filtered)
    if isinstance(node, Tree):
        _place(node.meta, children)
    return node


def _place(meta: Meta, children: list[Tree | Token]) -> None:
    """Lark's ``propagate_positions`` over all the children a rule was reduced from."""
    first = next((c for c in children if isinstance(c, Token) or not c.meta.empty), None)
    if first is None:
        return
    last = next(c for c in reversed(children) if isinstance(c, Token) or not c.meta.empty)
    start = first.start_pos if isinstance(first, Token) else first.meta.container_start_pos
    end = last.end_pos if isinstance(last, Token) else last.meta.container_end_pos
    if meta.start_pos is None:  # not a tree a ``?rule`` handed over, placed already
        meta.start_pos, meta.end_pos = start, end
    meta.container_start_pos, meta.container_end_pos = start, end


def read_tables_text(name: str = TABLES_FILE) -> str:
    """A data file of the ``evspec.grammar`` package, read through the package's loader
    (``importlib.resources`` would cost some 20 ms of imports)."""
    import evspec.grammar as package

    loader = package.__spec__.loader
    path = os.path.join(os.path.dirname(package.__file__), name)
    return loader.get_data(path).decode("utf-8")  # type: ignore[no-any-return, union-attr]


@lru_cache(maxsize=1)
def load_parser() -> SectionParser:
    """The parser over the committed tables (read once)."""
    import json

    return SectionParser(json.loads(read_tables_text()))
