"""Typed AST of perf event strings.

Every node carries the span of the text it came from. Spans (and the source text) are left out of
equality, so ``parse(print(ast)) == ast`` compares structure only: the printer may normalise white
space and separators, never meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from evspec.span import Span

# --------------------------------------------------------------------------------------------
# values, terms, modifiers


@dataclass(frozen=True, slots=True)
class Number:
    """An unsigned number as written: decimal (``10``) or hex (``0x1a``)."""

    value: int
    text: str
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Word:
    """A name or string value; ``quoted`` if it was written as ``'...'`` (quotes not in ``text``)."""

    text: str
    quoted: bool = False
    span: Span = field(default=Span(0, 0), compare=False, repr=False)


Value = Number | Word


class TermKind(str, Enum):
    KEYWORD = "keyword"  # config, config1..3, name, period, freq, branch_type, time, call-graph, ...
    USER = "user"  # any other NAME[=VALUE]: a PMU format term or alias, or an object term
    RAW = "raw"  # rHEX / r0xHEX inside /.../: sets config
    DRIVER = "driver"  # @cfg or @cfg=value


@dataclass(frozen=True, slots=True)
class Term:
    """``key``, ``key=value``; ``value`` is None for a bare term."""

    kind: TermKind
    key: str
    value: Value | None
    span: Span = field(compare=False, repr=False)
    key_span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class IndexItem:
    """One index (``3``) or inclusive range (``3...6``) of a map term's index list."""

    first: Number
    last: Number | None
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AllIndices:
    """``[all]``."""

    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class IndexList:
    """``[0,3...6]`` (blanks allowed inside the brackets)."""

    items: tuple[IndexItem, ...]
    span: Span = field(compare=False, repr=False)


Indices = AllIndices | IndexList


@dataclass(frozen=True, slots=True)
class MapTerm:
    """``map:NAME.OPTION[INDICES]=VALUE`` — an object term of a BPF event.

    ``option`` is kept as written (perf accepts ``value`` and ``event``; anything else is a
    semantic error checked against the object). ``value`` is None when ``=VALUE`` is missing.
    """

    map_name: str
    option: str
    indices: Indices | None
    value: Value | None
    span: Span = field(compare=False, repr=False)
    key_span: Span = field(compare=False, repr=False)  # map:NAME.OPTION with its index list
    name_span: Span = field(compare=False, repr=False)
    option_span: Span = field(compare=False, repr=False)


AnyTerm = Term | MapTerm


@dataclass(frozen=True, slots=True)
class Terms:
    """A ``/term,term,.../`` list; ``items`` is empty for ``//``. ``span`` covers both slashes."""

    items: tuple[AnyTerm, ...]
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Modifiers:
    """Event or group modifier letters (``ukhIGHpPSDWeb``) without the ``:``."""

    letters: str
    span: Span = field(compare=False, repr=False)


# --------------------------------------------------------------------------------------------
# events


class SymbolKind(str, Enum):
    HARDWARE = "hardware"  # PERF_TYPE_HARDWARE: cycles, instructions, ...
    SOFTWARE = "software"  # PERF_TYPE_SOFTWARE: cpu-clock, faults, bpf-output, ...
    TOOL = "tool"  # duration_time, user_time, system_time


@dataclass(frozen=True, slots=True)
class SymbolEvent:
    kind: SymbolKind
    name: str  # as written (an alias spelling such as ``cs`` is kept)
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span = field(compare=False, repr=False)
    name_span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class CacheEvent:
    """``TYPE[-OP_OR_RESULT[-OP_OR_RESULT]]``, e.g. ``L1-dcache-load-misses``; words as written."""

    cache_type: str
    parts: tuple[str, ...]
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span = field(compare=False, repr=False)
    name_span: Span = field(compare=False, repr=False)
    part_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)

    @property
    def name(self) -> str:
        return "-".join((self.cache_type, *self.parts))


@dataclass(frozen=True, slots=True)
class RawEvent:
    """``rHEX``; ``code.text`` is the hex digits as written (with ``0x`` for ``r0x1a``)."""

    code: Number
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class NumericEvent:
    """``TYPE:CONFIG`` with numbers, e.g. ``4:0x6530160``."""

    type: Number
    config: Number
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class BreakpointEvent:
    """``mem:ADDR[/LEN][:ACCESS]``; ``access`` is the ``rwx`` letters as written, or None."""

    address: Number
    length: Number | None
    access: str | None
    modifiers: Modifiers | None
    span: Span = field(compare=False, repr=False)
    access_span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class TracepointEvent:
    """``SYSTEM:EVENT`` (either part may be a glob)."""

    system: str
    event: str
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span = field(compare=False, repr=False)
    name_span: Span = field(compare=False, repr=False)  # SYSTEM:EVENT
    system_span: Span = field(compare=False, repr=False)
    event_span: Span = field(compare=False, repr=False)

    @property
    def name(self) -> str:
        return f"{self.system}:{self.event}"


@dataclass(frozen=True, slots=True)
class PmuEvent:
    """``NAME/terms/``: NAME is a PMU (or PMU wildcard such as ``uncore_imc``), or an alias with
    terms (``energy-psys/name=x/``); which one is decided against a system."""

    pmu: str
    terms: Terms
    modifiers: Modifiers | None
    span: Span = field(compare=False, repr=False)
    name_span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AliasEvent:
    """A bare word that is no built-in event name: a PMU event alias (``tsc``, ``energy-psys``),
    looked up in every PMU of a system."""

    name: str
    modifiers: Modifiers | None
    span: Span = field(compare=False, repr=False)
    name_span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class BpfEvent:
    """A BPF object (``.o``, ``.obj``) or source (``.c``) path with optional terms."""

    path: str
    is_source: bool
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span = field(compare=False, repr=False)
    path_span: Span = field(compare=False, repr=False)

    @property
    def object_terms(self) -> tuple[MapTerm, ...]:
        return tuple(t for t in self.terms.items if isinstance(t, MapTerm)) if self.terms else ()


Event = (
    SymbolEvent
    | CacheEvent
    | RawEvent
    | NumericEvent
    | BreakpointEvent
    | TracepointEvent
    | PmuEvent
    | AliasEvent
    | BpfEvent
)


@dataclass(frozen=True, slots=True)
class Group:
    """``[NAME]{event,...}[:MODIFIERS]``."""

    name: str | None
    events: tuple[Event, ...]
    modifiers: Modifiers | None
    span: Span = field(compare=False, repr=False)
    name_span: Span | None = field(default=None, compare=False, repr=False)


Item = Event | Group


@dataclass(frozen=True, slots=True)
class EventList:
    """One whole event string (one ``-e`` argument): its items in order."""

    items: tuple[Item, ...]
    source: str = field(default="", compare=False, repr=False)

    def events(self) -> tuple[Event, ...]:
        """Every event in order, group members included."""
        out: list[Event] = []
        for item in self.items:
            out.extend(item.events if isinstance(item, Group) else (item,))
        return tuple(out)
