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

    def __init_subclass__(cls) -> None:
        slots: tuple[str, ...] = cls.__slots__
        positions = tuple(n for n in slots if _is_position(n))
        super().__init_subclass__(uncompared=positions, hidden=positions)


# --------------------------------------------------------------------------------------------
# values, terms, modifiers


class Number(_Node):
    """An unsigned number as written: decimal (``10``) or hex (``0x1a``)."""

    __slots__ = ("value", "text", "span")
    value: int
    text: str
    span: Span

    def __init__(self, value: int, text: str, span: Span) -> None:
        _set(self, "value", value)
        _set(self, "text", text)
        _set(self, "span", span)


class Word(_Node):
    """A name or string value; ``quoted`` if it was written as ``'...'`` (quotes not in ``text``)."""

    __slots__ = ("text", "quoted", "span")
    text: str
    quoted: bool
    span: Span

    def __init__(self, text: str, quoted: bool = False, span: Span = Span(0, 0)) -> None:  # noqa: B008 - immutable
        _set(self, "text", text)
        _set(self, "quoted", quoted)
        _set(self, "span", span)


Value = Number | Word


class TermKind(str, Enum):
    KEYWORD = "keyword"  # config, config1..3, name, period, freq, branch_type, time, call-graph, ...
    USER = "user"  # any other NAME[=VALUE]: a PMU format term or alias, or an object term
    RAW = "raw"  # rHEX / r0xHEX inside /.../: sets config
    DRIVER = "driver"  # @cfg or @cfg=value


class Term(_Node):
    """``key``, ``key=value``; ``value`` is None for a bare term."""

    __slots__ = ("kind", "key", "value", "span", "key_span")
    kind: TermKind
    key: str
    value: Value | None
    span: Span
    key_span: Span

    def __init__(self, kind: TermKind, key: str, value: Value | None, span: Span, key_span: Span) -> None:
        _set(self, "kind", kind)
        _set(self, "key", key)
        _set(self, "value", value)
        _set(self, "span", span)
        _set(self, "key_span", key_span)


class IndexItem(_Node):
    """One index (``3``) or inclusive range (``3...6``) of a map term's index list."""

    __slots__ = ("first", "last", "span")
    first: Number
    last: Number | None
    span: Span

    def __init__(self, first: Number, last: Number | None, span: Span) -> None:
        _set(self, "first", first)
        _set(self, "last", last)
        _set(self, "span", span)


class AllIndices(_Node):
    """``[all]``."""

    __slots__ = ("span",)
    span: Span

    def __init__(self, span: Span) -> None:
        _set(self, "span", span)


class IndexList(_Node):
    """``[0,3...6]`` (blanks allowed inside the brackets)."""

    __slots__ = ("items", "span")
    items: tuple[IndexItem, ...]
    span: Span

    def __init__(self, items: tuple[IndexItem, ...], span: Span) -> None:
        _set(self, "items", items)
        _set(self, "span", span)


Indices = AllIndices | IndexList


class MapTerm(_Node):
    """``map:NAME.OPTION[INDICES]=VALUE`` — an object term of a BPF event.

    ``option`` is kept as written (perf accepts ``value`` and ``event``; anything else is a
    semantic error checked against the object). ``value`` is None when ``=VALUE`` is missing.
    ``key_span`` covers ``map:NAME.OPTION`` with its index list.
    """

    __slots__ = ("map_name", "option", "indices", "value", "span", "key_span", "name_span", "option_span")
    map_name: str
    option: str
    indices: Indices | None
    value: Value | None
    span: Span
    key_span: Span
    name_span: Span
    option_span: Span

    def __init__(self, map_name: str, option: str, indices: Indices | None, value: Value | None, span: Span,
                 key_span: Span, name_span: Span, option_span: Span) -> None:
        _set(self, "map_name", map_name)
        _set(self, "option", option)
        _set(self, "indices", indices)
        _set(self, "value", value)
        _set(self, "span", span)
        _set(self, "key_span", key_span)
        _set(self, "name_span", name_span)
        _set(self, "option_span", option_span)


class ProgTerm(_Node):
    """``prog:NAME.OPTION=VALUE`` — an object term naming a program of a BPF event (COMPAT 1.14):
    ``prog:on_tick.event=cpu-clock`` attaches the ``perf_event`` program ``on_tick`` to the event
    ``cpu-clock`` defined earlier. ``option`` is kept as written (only ``event`` exists)."""

    __slots__ = ("prog_name", "option", "value", "span", "key_span", "name_span", "option_span")
    prog_name: str
    option: str
    value: Value | None
    span: Span
    key_span: Span
    name_span: Span
    option_span: Span

    def __init__(self, prog_name: str, option: str, value: Value | None, span: Span, key_span: Span,
                 name_span: Span, option_span: Span) -> None:
        _set(self, "prog_name", prog_name)
        _set(self, "option", option)
        _set(self, "value", value)
        _set(self, "span", span)
        _set(self, "key_span", key_span)
        _set(self, "name_span", name_span)
        _set(self, "option_span", option_span)


class VarTerm(_Node):
    """``var:NAME=VALUE`` — an object term setting the global variable NAME of a BPF event's object
    before it is loaded (COMPAT 1.14): ``var:targ_pid=42``, ``var:targ_comm='bash'``. ``name`` is
    kept as written (a ``.`` in it is a syntax error); ``value`` is None when ``=VALUE`` is missing."""

    __slots__ = ("name", "value", "span", "key_span", "name_span")
    name: str
    value: Value | None
    span: Span
    key_span: Span
    name_span: Span

    def __init__(self, name: str, value: Value | None, span: Span, key_span: Span, name_span: Span) -> None:
        _set(self, "name", name)
        _set(self, "value", value)
        _set(self, "span", span)
        _set(self, "key_span", key_span)
        _set(self, "name_span", name_span)


AnyTerm = Term | MapTerm | ProgTerm | VarTerm


class Terms(_Node):
    """A ``/term,term,.../`` list; ``items`` is empty for ``//``. ``span`` covers both slashes."""

    __slots__ = ("items", "span")
    items: tuple[AnyTerm, ...]
    span: Span

    def __init__(self, items: tuple[AnyTerm, ...], span: Span) -> None:
        _set(self, "items", items)
        _set(self, "span", span)


class Modifiers(_Node):
    """Event or group modifier letters (``ukhIGHpPSDWeb``) without the ``:``."""

    __slots__ = ("letters", "span")
    letters: str
    span: Span

    def __init__(self, letters: str, span: Span) -> None:
        _set(self, "letters", letters)
        _set(self, "span", span)


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

    __slots__ = ("kind", "name", "terms", "modifiers", "span", "name_span", "quoted")
    kind: SymbolKind
    name: str
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span
    name_span: Span
    quoted: bool

    def __init__(self, kind: SymbolKind, name: str, terms: Terms | None, modifiers: Modifiers | None,
                 span: Span, name_span: Span, quoted: bool = False) -> None:
        _set(self, "kind", kind)
        _set(self, "name", name)
        _set(self, "terms", terms)
        _set(self, "modifiers", modifiers)
        _set(self, "span", span)
        _set(self, "name_span", name_span)
        _set(self, "quoted", quoted)


class CacheEvent(_Node):
    """``TYPE[-OP_OR_RESULT[-OP_OR_RESULT]]``, e.g. ``L1-dcache-load-misses``; words as written."""

    __slots__ = ("cache_type", "parts", "terms", "modifiers", "span", "name_span", "part_spans", "quoted")
    cache_type: str
    parts: tuple[str, ...]
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span
    name_span: Span
    part_spans: tuple[Span, ...]
    quoted: bool

    def __init__(self, cache_type: str, parts: tuple[str, ...], terms: Terms | None, modifiers: Modifiers | None,
                 span: Span, name_span: Span, part_spans: tuple[Span, ...] = (), quoted: bool = False) -> None:
        _set(self, "cache_type", cache_type)
        _set(self, "parts", parts)
        _set(self, "terms", terms)
        _set(self, "modifiers", modifiers)
        _set(self, "span", span)
        _set(self, "name_span", name_span)
        _set(self, "part_spans", part_spans)
        _set(self, "quoted", quoted)

    @property
    def name(self) -> str:
        return "-".join((self.cache_type, *self.parts))


class RawEvent(_Node):
    """``rHEX``; ``code.text`` is the hex digits as written (with ``0x`` for ``r0x1a``)."""

    __slots__ = ("code", "terms", "modifiers", "span")
    code: Number
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span

    def __init__(self, code: Number, terms: Terms | None, modifiers: Modifiers | None, span: Span) -> None:
        _set(self, "code", code)
        _set(self, "terms", terms)
        _set(self, "modifiers", modifiers)
        _set(self, "span", span)


class NumericEvent(_Node):
    """``TYPE:CONFIG`` with numbers, e.g. ``4:0x6530160``."""

    __slots__ = ("type", "config", "terms", "modifiers", "span")
    type: Number
    config: Number
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span

    def __init__(self, type: Number, config: Number, terms: Terms | None, modifiers: Modifiers | None,
                 span: Span) -> None:
        _set(self, "type", type)
        _set(self, "config", config)
        _set(self, "terms", terms)
        _set(self, "modifiers", modifiers)
        _set(self, "span", span)


class BreakpointEvent(_Node):
    """``mem:ADDR[/LEN][:ACCESS][/terms/]``; ``access`` is the ``rwx`` letters as written, or None."""

    __slots__ = ("address", "length", "access", "modifiers", "span", "access_span", "terms")
    address: Number
    length: Number | None
    access: str | None
    modifiers: Modifiers | None
    span: Span
    access_span: Span | None
    terms: Terms | None

    def __init__(self, address: Number, length: Number | None, access: str | None, modifiers: Modifiers | None,
                 span: Span, access_span: Span | None = None, terms: Terms | None = None) -> None:
        _set(self, "address", address)
        _set(self, "length", length)
        _set(self, "access", access)
        _set(self, "modifiers", modifiers)
        _set(self, "span", span)
        _set(self, "access_span", access_span)
        _set(self, "terms", terms)


class TracepointEvent(_Node):
    """``SYSTEM:EVENT`` (either part may be a glob); ``name_span`` covers ``SYSTEM:EVENT``."""

    __slots__ = ("system", "event", "terms", "modifiers", "span", "name_span", "system_span", "event_span")
    system: str
    event: str
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span
    name_span: Span
    system_span: Span
    event_span: Span

    def __init__(self, system: str, event: str, terms: Terms | None, modifiers: Modifiers | None, span: Span,
                 name_span: Span, system_span: Span, event_span: Span) -> None:
        _set(self, "system", system)
        _set(self, "event", event)
        _set(self, "terms", terms)
        _set(self, "modifiers", modifiers)
        _set(self, "span", span)
        _set(self, "name_span", name_span)
        _set(self, "system_span", system_span)
        _set(self, "event_span", event_span)

    @property
    def name(self) -> str:
        return f"{self.system}:{self.event}"


class PmuEvent(_Node):
    """``NAME/terms/``: NAME is a PMU (or PMU wildcard such as ``uncore_imc``), or an alias with
    terms (``energy-psys/name=x/``); which one is decided against a system."""

    __slots__ = ("pmu", "terms", "modifiers", "span", "name_span", "quoted")
    pmu: str
    terms: Terms
    modifiers: Modifiers | None
    span: Span
    name_span: Span
    quoted: bool

    def __init__(self, pmu: str, terms: Terms, modifiers: Modifiers | None, span: Span, name_span: Span, quoted: bool = False) -> None:
        _set(self, "pmu", pmu)
        _set(self, "terms", terms)
        _set(self, "modifiers", modifiers)
        _set(self, "span", span)
        _set(self, "name_span", name_span)
        _set(self, "quoted", quoted)


class AliasEvent(_Node):
    """A bare word that is no built-in event name: a PMU event alias (``tsc``, ``energy-psys``),
    looked up in every PMU of a system."""

    __slots__ = ("name", "modifiers", "span", "name_span", "quoted")
    name: str
    modifiers: Modifiers | None
    span: Span
    name_span: Span
    quoted: bool

    def __init__(self, name: str, modifiers: Modifiers | None, span: Span, name_span: Span, quoted: bool = False) -> None:
        _set(self, "name", name)
        _set(self, "modifiers", modifiers)
        _set(self, "span", span)
        _set(self, "name_span", name_span)
        _set(self, "quoted", quoted)


class BpfEvent(_Node):
    """A BPF object (``.o``, ``.obj``) or source (``.c``) path with optional terms."""

    __slots__ = ("path", "is_source", "terms", "modifiers", "span", "path_span")
    path: str
    is_source: bool
    terms: Terms | None
    modifiers: Modifiers | None
    span: Span
    path_span: Span

    def __init__(self, path: str, is_source: bool, terms: Terms | None, modifiers: Modifiers | None, span: Span,
                 path_span: Span) -> None:
        _set(self, "path", path)
        _set(self, "is_source", is_source)
        _set(self, "terms", terms)
        _set(self, "modifiers", modifiers)
        _set(self, "span", span)
        _set(self, "path_span", path_span)

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

    __slots__ = ("name", "events", "modifiers", "span", "name_span", "quoted")
    name: str | None
    events: tuple[Event, ...]
    modifiers: Modifiers | None
    span: Span
    name_span: Span | None
    quoted: bool

    def __init__(self, name: str | None, events: tuple[Event, ...], modifiers: Modifiers | None, span: Span,
                 name_span: Span | None = None, quoted: bool = False) -> None:
        _set(self, "name", name)
        _set(self, "events", events)
        _set(self, "modifiers", modifiers)
        _set(self, "span", span)
        _set(self, "name_span", name_span)
        _set(self, "quoted", quoted)


Item = Event | Group


class EventList(_Node):
    """One whole event string (one ``-e`` argument): its items in order."""

    __slots__ = ("items", "source")
    items: tuple[Item, ...]
    source: str

    def __init__(self, items: tuple[Item, ...], source: str = "") -> None:
        _set(self, "items", items)
        _set(self, "source", source)

    def events(self) -> tuple[Event, ...]:
        """Every event in order, group members included."""
        out: list[Event] = []
        for item in self.items:
            out.extend(item.events if isinstance(item, Group) else (item,))
        return tuple(out)
