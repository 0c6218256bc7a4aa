"""Typed AST of perf event strings.

Every node carries the span of the text it came from. Spans (and the source text) are left out of
equality, so ``parse(print(ast)) == ast`` compares structure only: the printer may normalise white
space and separators, never meaning.

Nodes are immutable value objects (``evspec.span.Slotted``) that behave like
``@dataclass(frozen=True, slots=True)`` classes whose span fields are
``field(compare=False, repr=False)``.
"""

from __future__ import annotations

from enum import Enum

from evspec.span import Slotted, Span, set_field

_set = set_field


def _is_position(field_name: str) -> bool:
    """Fields that say where a node was written, not what it is: not part of its value."""
    return field_name in ("span", "source") or field_name.endswith(("_span", "_spans"))


class _Node(Slotted):
    """Base of the AST nodes: records whose position fields are neither compared nor shown."""

    __slots__ = ()

    @classmethod
    def _positions(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(n for n in names if _is_position(n))


# --------------------------------------------------------------------------------------------
# values, terms, modifiers


class Number(_Node):
    """An unsigned number as written: decimal (``10``) or hex (``0x1a``)."""

    value: int
    text: str
    span: Span


class Word(_Node):
    """A name or string value; ``quoted`` if it was written as ``'...'`` (quotes not in ``text``)."""

    text: str
    quoted: bool = False
    span: Span = Span(0, 0)


Value = Number | Word


class TermKind(str, Enum):
    KEYWORD = "keyword"  # config, config1..3, name, period, freq, branch_type, time, call-graph, ...
    USER = "user"  # any other NAME[=VALUE]: a PMU format term or alias, or an object term
    RAW = "raw"  # rHEX / r0xHEX inside /.../: sets config
    DRIVER = "driver"  # @cfg or @cfg=value


class Term(_Node):
    """``key``, ``key=value``; ``value`` is None for a bare term."""

    kind: TermKind
    key: str
    value: Value | None
    span: Span
    key_span: Span


class IndexItem(_Node):
    """One index (``3``) or inclusive range (``3...6``) of a map term's index list."""

    first: Number
    last: Number | None
    span: Span


class AllIndices(_Node):
    """``[all]``."""

    span: Span


class IndexList(_Node):
    """``[0,3...6]`` (blanks allowed inside the brackets)."""

    items: tuple[IndexItem, ...]
    span: Span


Indices = AllIndices | IndexList


class MapTerm(_Node):
    """``map:NAME.OPTION[INDICES]=VALUE`` — an object term of a BPF event.

    ``option`` is kept as written (perf accepts ``value`` and ``event``; anything else is a
    semantic error checked against the object). ``value`` is None when ``=VALUE`` is missing.
    ``key_span`` covers ``map:NAME.OPTION`` with its index list.
    """

    map_name: str
    option: str
    indices: Indices | None
    value: Value | None
    span: Span
    key_span: Span
    name_span: Span
    option_span: Span


class ProgTerm(_Node):
    """``prog:NAME.OPTION=VALUE`` — an object term naming a program of a BPF event (COMPAT 1.14):
    ``prog:on_tick.event=cpu-clock`` attaches the ``perf_event`` program ``on_tick`` to the event
    ``cpu-clock`` defined earlier. ``option`` is kept as written (only ``event`` exists)."""

    prog_name: str
    option: str
    value: Value | None
    span: Span
    key_span: Span
    name_span: Span
    option_span: Span


class VarTerm(_Node):
    """``var:NAME=VALUE`` — an object term setting the global variable NAME of a BPF event's object
    before it is loaded (COMPAT 1.14): ``var:targ_pid=42``, ``var:targ_comm='bash'``. ``name`` is
    kept as written (a ``.`` in it is a syntax error); ``value`` is None when ``=VALUE`` is missing."""

    name: str
    value: Value | None
    span: Span
    key_span: Span
    name_span: Span


AnyTerm = Term | MapTerm | ProgTerm | VarTerm


class Terms(_Node):
    """A ``/term,term,.../`` list; ``items`` is empty for ``//``. ``span`` covers both slashes."""

    items: tuple[AnyTerm, ...]
    span: Span


class Modifiers(_Node):
    """Event or group modifier letters (``ukhIGHpPSDWeb``) without the ``:``."""

    letters: str
    span: Span


# --------------------------------------------------------------------------------------------
# events


class SymbolKind(str, Enum):
    HARDWARE = "hardware"  # PERF_TYPE_HARDWARE: cycles, instructions, ...
    SOFTWARE = "software"  # PERF_TYPE_SOFTWARE: cpu-clock, faults, bpf-output, ...
    TOOL = "tool"  # duration_time, user_time, system_time


class SymbolEvent(_Node):
    """A built-in hardware, software or tool event; ``name`` as written (an alias spelling such
    as ``cs`` and the letter case are kept); ``quoted`` if written ``'cpu-clock'`` (the quotes
    are not in ``name``)."""

    kind: SymbolKind
    name: str
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span
    name_span: Span
    quoted: bool = False


class CacheEvent(_Node):
    """``TYPE[-OP_OR_RESULT[-OP_OR_RESULT]]``, e.g. ``L1-dcache-load-misses``; words as written."""

    cache_type: str
    parts: tuple[str, ...]
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span
    name_span: Span
    part_spans: tuple[Span, ...] = ()
    quoted: bool = False

    @property
    def name(self) -> str:
        return "-".join((self.cache_type, *self.parts))


class RawEvent(_Node):
    """``rHEX``; ``code.text`` is the hex digits as written (with ``0x`` for ``r0x1a``)."""

    code: Number
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span


class NumericEvent(_Node):
    """``TYPE:CONFIG`` with numbers, e.g. ``4:0x6530160``."""

    type: Number
    config: Number
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span


class BreakpointEvent(_Node):
    """``mem:ADDR[/LEN][:ACCESS][/terms/]``; ``access`` is the ``rwx`` letters as written, or None."""

    address: Number
    length: Number | None
    access: str | None
    modifiers: Modifiers | None
    span: Span
    access_span: Span | None = None
    terms: Terms | None = None


class TracepointEvent(_Node):
    """``SYSTEM:EVENT`` (either part may be a glob); ``name_span`` covers ``SYSTEM:EVENT``."""

    system: str
    event: str
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span
    name_span: Span
    system_span: Span
    event_span: Span

    @property
    def name(self) -> str:
        return f"{self.system}:{self.event}"


class PmuEvent(_Node):
    """``NAME/terms/``: NAME is a PMU (or PMU wildcard such as ``uncore_imc``), or an alias with
    terms (``energy-psys/name=x/``); which one is decided against a system."""

    pmu: str
    terms: Terms
    modifiers: Modifiers | None
    span: Span
    name_span: Span
    quoted: bool = False


class AliasEvent(_Node):
    """A bare word that is no built-in event name: a PMU event alias (``tsc``, ``energy-psys``),
    looked up in every PMU of a system."""

    name: str
    modifiers: Modifiers | None
    span: Span
    name_span: Span
    quoted: bool = False


class BpfEvent(_Node):
    """A BPF object (``.o``, ``.obj``) or source (``.c``) path with optional terms."""

    path: str
    is_source: bool
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span
    path_span: Span

    @property
    def object_terms(self) -> tuple[MapTerm, ...]:
        return tuple(t for t in self.terms.items if isinstance(t, MapTerm)) if self.terms else ()

    @property
    def prog_terms(self) -> tuple[ProgTerm, ...]:
        return tuple(t for t in self.terms.items if isinstance(t, ProgTerm)) if self.terms else ()

    @property
    def var_terms(self) -> tuple[VarTerm, ...]:
        return tuple(t for t in self.terms.items if isinstance(t, VarTerm)) if self.terms else ()


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


class Group(_Node):
    """``[NAME]{event,...}[:MODIFIERS]``; ``quoted`` if the name was written ``'grp'`` (the quotes
    are not in ``name``)."""

    name: str | None
    events: tuple[Event, ...]
    modifiers: Modifiers | None
    span: Span
    name_span: Span | None = None
    quoted: bool = False


Item = Event | Group


class EventList(_Node):
    """One whole event string (one ``-e`` argument): its items in order."""

    items: tuple[Item, ...]
    source: str = ""

    def events(self) -> tuple[Event, ...]:
        """Every event in order, group members included."""
        out: list[Event] = []
        for item in self.items:
            out.extend(item.events if isinstance(item, Group) else (item,))
        return tuple(out)
