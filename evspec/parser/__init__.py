"""Event strings to AST: the public parsing API.

``parse`` and ``analyze`` read one event string (one ``-e`` argument); ``parse_terms`` reads a bare
term list (a PMU alias file). Spans in the AST and in diagnostics are offsets into that string.

The grammar is ``evspec.grammar/events.lark``. Its LALR(1) tables, computed by Lark, are committed
next to it (``events_tables.json``, written by ``scripts/gen_tables.py``, read by
``evspec.grammar.tables``); strings are parsed by the grammars' one LALR runtime over those tables
(``evspec.grammar.lalr``, which section names use too), which builds the AST as it reduces
(``evspec.parser.builder``). Lark is imported only by ``earley_parser``, the same grammar under
Lark's Earley parser: the oracle of the differential tests. The parts:
  builder          the reduce actions: AST nodes and the shape errors the grammar lets through
  diagnose         one precise diagnostic where the parser stopped
  recover          one diagnostic per bad item
"""

from __future__ import annotations

from functools import lru_cache

from evspec import rules
from evspec.ast import EventList, Item, Terms
from evspec.diagnostics import Diagnostic, EvspecError
from evspec.grammar.lalr import LalrMachine, SyntaxStop
from evspec.grammar.tables import load_tables
from evspec.parser.builder import AstBuilder, Fault

TYPE_CHECKING = False  # imports for annotations only: a cold start does not pay for them
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["ParseResult", "analyze", "parse", "parse_terms", "machine", "earley_parser", "grammar_text"]

GRAMMAR_FILE = "events.lark"


class ParseResult:
    """What ``analyze`` found: the items that parsed, and every diagnostic, left to right."""

    __slots__ = ("events", "diagnostics")

    def __init__(self, events: EventList, diagnostics: tuple[Diagnostic, ...]) -> None:
        self.events = events
        self.diagnostics = diagnostics

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    def __repr__(self) -> str:
        return f"ParseResult(events={self.events!r}, diagnostics={self.diagnostics!r})"


def parse(text: str) -> EventList:
    """Parse one event string; raise EvspecError with all diagnostics if any of them is an error."""
    result = analyze(text)
    if not result.ok:
        raise EvspecError(result.diagnostics)
    return result.events


def analyze(text: str, earlier_names: Sequence[str] = ()) -> ParseResult:
    """Syntax and system-independent rules; every bad item gets its own diagnostic.

    ``earlier_names`` are the names of events defined by earlier event strings of the same command
    (see ``references.event_reference_names``), for ``map:NAME.event=`` references.
    """
    try:
        items: tuple[Item, ...] = machine().parse(text, "events")  # type: ignore[assignment]
        syntax: list[Diagnostic] = []
    except (SyntaxStop, Fault) as stop:
        from evspec.parser.recover import recover

        items, syntax = recover(text, machine(), stop)
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
        terms: Terms = machine().parse(text, "term_list")  # type: ignore[assignment]
    except Fault as fault:
        raise EvspecError(fault.diagnostic.located(text)) from None
    except SyntaxStop as stop:
        from evspec.parser.diagnose import diagnose

        raise EvspecError(diagnose(text, stop).located(text)) from None
    return terms


@lru_cache(maxsize=1)
def machine() -> LalrMachine:
    """The production parser: the committed LALR tables driven by ``LalrMachine`` with ``AstBuilder``."""
    return LalrMachine(load_tables(), AstBuilder())


@lru_cache(maxsize=1)
def grammar_text() -> str:
    import importlib.resources

    return importlib.resources.files("evspec.grammar").joinpath(GRAMMAR_FILE).read_text("utf-8")


@lru_cache(maxsize=1)
def earley_parser():  # type: ignore[no-untyped-def]  # a lark.Lark; Lark is not imported for parsing
    """The same grammar under Lark's Earley parser (dynamic lexer): the differential tests' oracle.

    It yields a parse tree; ``AstBuilder().transform(tree)`` turns it into the same AST.
    """
    from lark import Lark

    from evspec.grammar.tablegen import STARTS

    return Lark(
        grammar_text(),
        parser="earley",
        lexer="dynamic",
        start=list(STARTS),
        maybe_placeholders=False,
        ambiguity="explicit",
    )
