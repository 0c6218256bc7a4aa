"""Section names parsed over the committed tables of ``grammar/section.lark``
(``section_tables.json``, written by ``sections.tablegen``) by the grammars' one LALR runtime
(``evspec.grammar.lalr``), without importing Lark.

It is Lark's LALR parser as ``sections.names`` configures it — contextual lexer, parse trees with
``propagate_positions``, no placeholders — run over the data Lark computed: each state's own
lexer, with Lark's folding of literals, and rules that build ``Tree`` nodes shaped as Lark shapes
them (filtered children, inlined rules, ``?rule`` handing over a single child) and carrying the
span of everything they were reduced from. Errors are ``SectionSyntaxError``: an unexpected token,
an unexpected character, or the unexpected end.
"""

from __future__ import annotations

from functools import lru_cache

from evspec.grammar.lalr import LalrMachine, SyntaxStop, Tok
from evspec.grammar.tables import LalrTables, decode_json, read_tables_text

TABLES_FILE = "section_tables.json"


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
    """A parse tree node: the rule (or alias) name, the kept children (trees and the runtime's
    tokens), the span."""

    __slots__ = ("data", "children", "meta")

    def __init__(self, data: str, children: list[Tree | Tok]) -> None:
        self.data = data
        self.children = children
        self.meta = Meta()

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"


class SectionSyntaxError(Exception):
    """The text does not fit the grammar: ``token`` (an unexpected token), else an unexpected
    character at ``pos``, or (``at_end``) the text ended too early."""

    def __init__(self, pos: int, token: Tok | None = None, at_end: bool = False) -> None:
        super().__init__(f"syntax error at {pos}")
        self.pos = pos
        self.token = token
        self.at_end = at_end


# (tree name, kept children as (index, inline), hand over a single child)
_Shape = tuple[str, tuple[tuple[int, bool], ...], bool]


class SectionParser:
    """The parser over one set of tables (``load_parser`` for the committed ones)."""

    def __init__(self, data: dict[str, object]) -> None:
        if data["ignore"]:
            raise ValueError(f"section tables: ignored terminals are not supported: {data['ignore']}")
        states: list[tuple[int, dict[str, int]]] = data["states"]  # type: ignore[assignment]
        tables = LalrTables({
            "terminals": data["terminals"], "rules": [], "states": [actions for _, actions in states],
            "start": data["start"], "end": data["end"],
            "lexers": data["lexers"], "state_lexers": [lexer for lexer, _ in states],
        })
        rules = [(size, origin, _reducer((name, tuple((i, inline) for i, inline in kept), expand)))
                 for origin, size, name, kept, expand in data["rules"]]  # type: ignore[attr-defined]
        self._machine = LalrMachine(tables, rules=rules)

    def parse(self, text: str, start: str) -> Tree:
        """The tree of ``text`` read as ``start``; ``SectionSyntaxError`` where it does not fit."""
        try:
            tree = self._machine.parse(text, start)
        except SyntaxStop as stop:
            raise SectionSyntaxError(stop.pos, stop.token, stop.at_end) from None
        assert isinstance(tree, Tree)
        return tree


def _reducer(shape: _Shape):  # type: ignore[no-untyped-def]
    def reduce(children: list[Tree | Tok]) -> Tree | Tok:
        return _reduce(shape, children)

    return reduce


def _reduce(shape: _Shape, children: list[Tree | Tok]) -> Tree | Tok:
    name, kept, expand = shape
    filtered: list[Tree | Tok] = []
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


def _place(meta: Meta, children: list[Tree | Tok]) -> None:
    """Lark's ``propagate_positions`` over all the children a rule was reduced from."""
    first = next((c for c in children if isinstance(c, Tok) or not c.meta.empty), None)
    if first is None:
        return
    last = next(c for c in reversed(children) if isinstance(c, Tok) or not c.meta.empty)
    start = first.start_pos if isinstance(first, Tok) else first.meta.container_start_pos
    end = last.end_pos if isinstance(last, Tok) else last.meta.container_end_pos
    if meta.start_pos is None:  # not a tree a ``?rule`` handed over, placed already
        meta.start_pos, meta.end_pos = start, end
    meta.container_start_pos, meta.container_end_pos = start, end


@lru_cache(maxsize=1)
def load_parser() -> SectionParser:
    """The parser over the committed tables (read once)."""
    return SectionParser(decode_json(read_tables_text(TABLES_FILE)))  # type: ignore[arg-type]
