"""Offline checks of a BPF event's object terms (``map:NAME.OPTION[INDICES]=VALUE``) against the
object's maps, in perf's order and with perf's messages, and the plan of map updates they make.

perf's order inside one term (corpus README, "Which error is the primary one", item 3): term
structure, index list, map exists, index too large, option, value present, value type, referenced
event exists, map type, key size, value size, value width. Each term reports at most one error.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Iterator, Mapping
from enum import Enum

from evspec.loader.lint.terms.map_setters import SETTERS, check_setter, unsized_problems
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec

from evspec.ast import (
    AllIndices,
    BpfEvent,
    BreakpointEvent,
    CacheEvent,
    Event,
    IndexList,
    MapTerm,
    Number,
    NumericEvent,
    ProgTerm,
    RawEvent,
    SymbolEvent,
    SymbolKind,
    Term,
    TermKind,
    TracepointEvent,
    VarTerm,
    Word,
)
from evspec.codes import bpfconfig as codes
from evspec.codes.bpfconfig import BPF_MAP_HINT  # perf's hint block for every map-configuration error
from evspec.diagnostics import Diagnostic, EvspecError, error, warning
from evspec.lexicon import PRINT_MAP_OPTIONS
from evspec.span import Slotted, Span, value_field

# perf's words for a map:NAME.event= it will not apply (checked offline here, again in apply)
MSG_NO_EVENT = "Event not found for map setting"
MSG_EVTINH = "Doesn't support inherit event (Hint: use -i to turn off inherit)"
MSG_EVTTYPE = "Can only put raw, hardware and BPF output event into a BPF map"

VALUE_SIZES = (1, 2, 4, 8)
OPTIONS = ("value", "event", "type", *SETTERS)  # setters: terms/map_setters.py
PRINT_OPTIONS = PRINT_MAP_OPTIONS  # how record prints it: terms/print_terms.py


class EventKind(str, Enum):
    HARDWARE = "hardware"
    SOFTWARE = "software"
    BPF_OUTPUT = "bpf-output"
    TOOL = "tool"
    CACHE = "cache"
    RAW = "raw"
    TRACEPOINT = "tracepoint"
    BREAKPOINT = "breakpoint"
    PMU = "pmu"  # a dynamic PMU or an alias: its attr.type depends on the system
    BPF = "bpf"  # a BPF object (its evsels are tracepoints and probes)


# PERF_TYPE_* of the fixed kinds
_KIND_TYPES: dict[EventKind, int] = {
    EventKind.HARDWARE: 0,
    EventKind.SOFTWARE: 1,
    EventKind.BPF_OUTPUT: 1,
    EventKind.TRACEPOINT: 2,
    EventKind.CACHE: 3,
    EventKind.RAW: 4,
    EventKind.BREAKPOINT: 5,
}
_TYPE_KINDS: dict[int, EventKind] = {0: EventKind.HARDWARE, 1: EventKind.SOFTWARE, 2: EventKind.TRACEPOINT,
                                     3: EventKind.CACHE, 4: EventKind.RAW, 5: EventKind.BREAKPOINT}


class EventFacts(Slotted):
    """What is known of an event defined earlier, for ``map:NAME.event=`` references.

    ``perf_type`` is attr.type when known (None for PMU events resolved only against a system);
    ``inherit`` is whether the event will be opened with inherit (perf record's default, unless
    ``no-inherit``/``inherit=0`` or ``-i``); ``probes`` names the ``GROUP:EVENT`` kprobe/uprobe
    events a BPF object creates (to find the same probe created twice).
    """

    kind: EventKind
    perf_type: int | None = None
    inherit: bool = True
    probes: frozenset[str] = frozenset()

    @property
    def storable_in_map(self) -> bool:
        """perf record puts only raw, hardware and bpf-output events into a PERF_EVENT_ARRAY."""
        return self.kind is EventKind.BPF_OUTPUT or self.perf_type in (0, 4)


def facts_for_event(event: Event, *, inherit_default: bool = True) -> EventFacts:
    """EventFacts from the AST alone (PMU events get ``perf_type`` None)."""
    inherit = _inherit(event, inherit_default)
    kind: EventKind
    perf_type: int | None
    if isinstance(event, SymbolEvent):
        if event.kind is SymbolKind.HARDWARE:
            kind = EventKind.HARDWARE
        elif event.kind is SymbolKind.TOOL:
            kind = EventKind.TOOL
        elif event.name == "bpf-output":
            kind = EventKind.BPF_OUTPUT
        else:
            kind = EventKind.SOFTWARE
        perf_type = _KIND_TYPES.get(kind)
    elif isinstance(event, CacheEvent):
        kind, perf_type = EventKind.CACHE, 3
    elif isinstance(event, RawEvent):
        kind, perf_type = EventKind.RAW, 4
    elif isinstance(event, NumericEvent):
        perf_type = event.type.value
        kind = _TYPE_KINDS.get(perf_type, EventKind.PMU)
    elif isinstance(event, BreakpointEvent):
        kind, perf_type = EventKind.BREAKPOINT, 5
    elif isinstance(event, TracepointEvent):
        kind, perf_type = EventKind.TRACEPOINT, 2
    elif isinstance(event, BpfEvent):
        kind, perf_type = EventKind.BPF, 2
    else:
        kind, perf_type = EventKind.PMU, None
    return EventFacts(kind, perf_type, inherit)


def _inherit(event: Event, default: bool) -> bool:
    terms = getattr(event, "terms", None)
    value = default
    if terms is None:
        return value
    for term in terms.items:
        if isinstance(term, Term) and term.kind is TermKind.KEYWORD:
            if term.key == "no-inherit":
                value = False
            elif term.key == "inherit":
                value = not (isinstance(term.value, Number) and term.value.value == 0)
    return value


# ---------------------------------------------------------------------------------------------
# checks


def check_map_terms(
    event: BpfEvent,
    spec: ObjectSpec,
    defined_events: Mapping[str, EventFacts],
    *,
    truncate_values: bool = False,
) -> list[Diagnostic]:
    """Every object term of ``event`` against ``spec``; spans into the event string.

    ``defined_events`` maps the names of the events defined before this one to their facts.
    A value wider than the map's values is an error (evspec language, corpus Decision 6); with
    ``truncate_values`` (perf 6.1's behaviour) it is a warning saying what perf stores.
    """
    out: list[Diagnostic] = []
    for term in event.terms.items if event.terms else ():
        out.extend(_check_term(term, spec, defined_events, truncate_values))
    out.extend(unsized_problems(event, spec))
    return out


def _check_term(
    term: Term | MapTerm | ProgTerm | VarTerm,
    spec: ObjectSpec,
    defined_events: Mapping[str, EventFacts] | None,
    truncate_values: bool,
) -> list[Diagnostic]:
    if isinstance(term, (ProgTerm, VarTerm)):
        return []  # a program or variable term: terms/programs.py, terms/variables.py
    if isinstance(term, Term):
        if term.kind is not TermKind.USER:
            return []  # an event term: checked with the tracepoint term set by the object checker
        return [_not_a_map_term(term)]
    return _check_map_term(term, spec, defined_events, truncate_values)


def _map_error(code: str, message: str, span: Span, perf_message: str, **kw: object) -> Diagnostic:
    return error(code, message, span, perf_message=perf_message, perf_help=BPF_MAP_HINT, **kw)


def _not_a_map_term(term: Term) -> Diagnostic:
    if term.key.startswith("map:"):
        message = f"map term '{term.key}' has no '.value' or '.event' option"
    else:
        message = f"unknown BPF object term '{term.key}' (object terms are map:NAME.OPTION=VALUE)"
    return _map_error(
        codes.NOT_A_MAP_TERM,
        message,
        term.key_span,
        "Invalid object config option",
        help=("write map:NAME.value=NUMBER for an ARRAY map or map:NAME.event=EVENT for a "
              "PERF_EVENT_ARRAY map",),
    )


def _check_map_term(
    term: MapTerm,
    spec: ObjectSpec,
    defined_events: Mapping[str, EventFacts] | None,
    truncate_values: bool,
) -> list[Diagnostic]:
    if not term.option:
        return [
            _map_error(
                codes.NOT_A_MAP_TERM,
                f"map term 'map:{term.map_name}.' has no option after the '.'",
                term.key_span,
                "Invalid object config option",
                help=(f"write map:{term.map_name}.value=... or map:{term.map_name}.event=...",),
            )
        ]
    if not term.map_name:
        return [
            _map_error(
                codes.EMPTY_MAP_NAME,
                "empty map name",
                term.key_span,
                "Target map doesn't exist",
                help=_map_names_help(spec, ""),
            )
        ]
    index_problem = _index_list_problem(term)
    if index_problem is not None:
        return [index_problem]
    if term.option in PRINT_OPTIONS:
        from evspec.loader.lint.terms.print_terms import check_print_term

        return check_print_term(term, spec)
    m = spec.map(term.map_name)
    if m is None and spec.map(f"{term.map_name}.{term.option.rpartition('.')[0]}") is not None:
        return []  # a data section's map (NAME.rodata): the syntax stage says it takes no setters
    if m is None:
        return [
            _map_error(
                codes.NO_SUCH_MAP,
                f"map '{term.map_name}' not in the object",
                term.name_span,
                "Target map doesn't exist",
                help=_map_names_help(spec, term.map_name),
            )
        ]
    if term.option == "type" and term.indices is not None:
        return [
            error(
                codes.TYPE_WITH_INDICES,
                f"map:{m.name}.type takes no index list: it names the type of every record of the map",
                term.indices.span,
                help=(f"write map:{m.name}.type=TYPE",),
            )
        ]
    if isinstance(term.indices, IndexList):
        for item in term.indices.items:
            last = (item.last or item.first).value
            if last >= m.max_entries:
                return [
                    _map_error(
                        codes.INDEX_TOO_LARGE,
                        f"index {last} too large (map '{m.name}' has {m.max_entries} entries)",
                        item.span,
                        "Index too large",
                        help=(f"valid indices of '{m.name}' are 0...{m.max_entries - 1}",)
                        if m.max_entries
                        else (),
                    )
                ]
    if term.option in SETTERS:
        return check_setter(term, m, spec)
    if term.option not in OPTIONS:
        return [
            _map_error(
                codes.BAD_MAP_OPTION,
                f"unknown map option '{term.option}' (the options are {', '.join(repr(o) for o in OPTIONS)})",
                term.option_span,
                "Invalid object map config option",
                help=_option_help(m, term.option),
            )
        ]
    if term.value is None:
        return [
            _map_error(
                codes.NO_VALUE,
                f"map term 'map:{m.name}.{term.option}' has no value (missing '=')",
                term.key_span,
                "Config value not set (missing '=')",
                help=({"value": "write =NUMBER", "type": "write =TYPE"}.get(term.option, "write =EVENT-NAME"),),
            )
        ]
    if term.option == "type":
        return _check_type_option(term, m, term.value, spec)
    if term.option == "value":
        return _check_value_option(term, m, term.value, truncate_values)
    return _check_event_option(term, m, term.value, defined_events)


def _index_list_problem(term: MapTerm) -> Diagnostic | None:
    indices = term.indices
    if indices is None or isinstance(indices, AllIndices):
        return None
    if not indices.items:
        return error(
            codes.EMPTY_INDEX_LIST,
            "empty index list",
            indices.span,
            help=("list indices and ranges ([0,3...5]) or write [all]",),
        )
    for item in indices.items:
        if item.last is not None and item.last.value < item.first.value:
            return error(
                codes.REVERSED_RANGE,
                f"reversed index range ({item.first.text}...{item.last.text})",
                item.span,
                help=(f"write the lower index first: {item.last.text}...{item.first.text}",),
            )
    return None


def _map_names_help(spec: ObjectSpec, name: str) -> tuple[str, ...]:
    names = [m.name for m in spec.maps]
    if not names:
        return ("the object has no maps",)
    out = []
    close = difflib.get_close_matches(name, names, n=1) if name else []
    if close:
        out.append(f"did you mean '{close[0]}'?")
    out.append("maps in the object: " + ", ".join(names))
    return tuple(out)


def _option_help(m: MapSpec, option: str) -> tuple[str, ...]:
    if m.type == MapType.PERF_EVENT_ARRAY:
        return (f"'{m.name}' is a PERF_EVENT_ARRAY map: write map:{m.name}.event=EVENT",)
    if m.type == MapType.ARRAY:
        return (f"'{m.name}' is an ARRAY map: write map:{m.name}.value=NUMBER",)
    close = difflib.get_close_matches(option, OPTIONS, n=1)
    return (f"did you mean '{close[0]}'?",) if close else ()


def _type_name(m: MapSpec) -> str:
    t = m.map_type
    return t.name if t is not None else f"type-{m.type}"


def _check_value_option(term: MapTerm, m: MapSpec, value: Number | Word, truncate: bool) -> list[Diagnostic]:
    if not isinstance(value, Number):
        return [
            _map_error(
                codes.WRONG_VALUE_TYPE,
                f"'{value.text}' is not a number: map:NAME.value takes a number",
                value.span,
                "Incorrect value type for map",
                help=("write a decimal or 0x-hex number",),
            )
        ]
    if m.type != MapType.ARRAY:
        return [
            _map_error(
                codes.WRONG_MAP_TYPE,
                f"map '{m.name}' is a{_an(_type_name(m))} {_type_name(m)} map, .value needs an ARRAY",
                term.option_span,
                "Can't use this config term with this map type",
                help=("map:NAME.event= is for PERF_EVENT_ARRAY maps",)
                if m.type == MapType.PERF_EVENT_ARRAY
                else (),
            )
        ]
    if m.key_size < 4:
        return [
            _map_error(
                codes.BAD_KEY_SIZE,
                f"map '{m.name}' has {m.key_size}-byte keys; perf needs at least 4",
                term.name_span,
                "Incorrect map key size",
            )
        ]
    if m.value_size not in VALUE_SIZES:
        return [
            _map_error(
                codes.BAD_VALUE_SIZE,
                f"map '{m.name}' has {m.value_size}-byte values; .value needs 1, 2, 4 or 8 bytes",
                term.name_span,
                "Incorrect map value size",
            )
        ]
    width = 8 * m.value_size
    if value.value >> width:
        stored = value.value & ((1 << width) - 1)
        limit = (1 << width) - 1
        if truncate:
            return [
                warning(
                    codes.VALUE_TRUNCATED,
                    f"value {value.text} does not fit the {m.value_size}-byte values of map "
                    f"'{m.name}': perf stores {stored}",
                    value.span,
                    help=(f"the largest value is {limit} ({hex(limit)})",),
                )
            ]
        return [
            error(
                codes.VALUE_TOO_WIDE,
                f"value {value.text} does not fit the {m.value_size}-byte values of map '{m.name}'",
                value.span,
                help=(f"the largest value is {limit} ({hex(limit)})",),
                notes=(f"perf 6.1 silently stores {stored} (the low {width} bits)",),
            )
        ]
    return []


def _an(word: str) -> str:
    return "n" if word[:1] in "AEIOU" else ""


def _check_event_option(
    term: MapTerm, m: MapSpec, value: Number | Word, defined_events: Mapping[str, EventFacts] | None
) -> list[Diagnostic]:
    if not isinstance(value, Word):
        return [
            _map_error(
                codes.WRONG_VALUE_TYPE,
                f"'{value.text}' is a number: map:NAME.event takes the name of an event",
                value.span,
                "Incorrect value type for map",
                help=("define the event earlier with a name, e.g. bpf-output/no-inherit,name=evt/, "
                      "and write map:NAME.event=evt",),
            )
        ]
    facts = None
    if defined_events is not None:
        facts = defined_events.get(value.text)
        if facts is None:
            return [
                _map_error(
                    codes.NO_SUCH_EVENT,
                    f"no earlier event named '{value.text}'",
                    value.span,
                    MSG_NO_EVENT,
                    help=_event_names_help(value.text, defined_events),
                )
            ]
    if m.type != MapType.PERF_EVENT_ARRAY:
        return [
            _map_error(
                codes.WRONG_MAP_TYPE,
                f"map '{m.name}' is a{_an(_type_name(m))} {_type_name(m)} map, .event needs a "
                "PERF_EVENT_ARRAY",
                term.option_span,
                "Can't use this config term with this map type",
                help=("map:NAME.value= is for ARRAY maps",) if m.type == MapType.ARRAY else (),
            )
        ]
    out: list[Diagnostic] = []
    if facts is not None and not facts.storable_in_map:
        out.append(
            warning(
                codes.EVENT_TYPE_NOT_STORABLE,
                f"event '{value.text}' is a {facts.kind.value} event: perf record can put only raw, "
                "hardware and bpf-output events into a BPF map",
                value.span,
                perf_message=MSG_EVTTYPE,
            )
        )
    if facts is not None and facts.inherit:
        out.append(
            warning(
                codes.INHERIT_EVENT_IN_MAP,
                f"event '{value.text}' inherits to child tasks: perf record refuses to put it into "
                "a BPF map",
                value.span,
                help=("define it with no-inherit (bpf-output/no-inherit,name=...) or record with -i",),
                perf_message=MSG_EVTINH,
            )
        )
    return out


def _check_type_option(term: MapTerm, m: MapSpec, value: Number | Word, spec: ObjectSpec) -> list[Diagnostic]:
    """map:NAME.type=TYPE (COMPAT 1.14): an output map, and a struct, union or typedef of the BTF."""
    from evspec.loader.btf.reader import Btf, find_record_type, struct_names

    if not isinstance(value, Word):
        return [
            error(
                codes.WRONG_VALUE_TYPE,
                f"'{value.text}' is a number: map:NAME.type takes the name of a BTF type",
                value.span,
                help=("write the name of a struct, union or typedef of the object (event for struct event)",),
            )
        ]
    if m.type not in (MapType.RINGBUF, MapType.PERF_EVENT_ARRAY):
        return [
            error(
                codes.WRONG_MAP_TYPE,
                f"map '{m.name}' is a{_an(_type_name(m))} {_type_name(m)} map, .type needs a RINGBUF "
                "or a PERF_EVENT_ARRAY",
                term.option_span,
                help=("records of ring buffers and of bpf-output events are typed; other maps print "
                      "with --dump-maps",),
            )
        ]
    if not spec.btf:
        return [
            error(
                codes.NO_BTF_FOR_TYPE,
                f"the object has no BTF: map:{m.name}.type cannot find '{value.text}'",
                value.span,
                help=("compile the object with clang -g",),
            )
        ]
    btf = Btf(spec.btf)
    if find_record_type(btf, value.text) is None:
        names = struct_names(btf)
        close = difflib.get_close_matches(value.text, names, n=1)
        help_lines = [f"did you mean '{close[0]}'?"] if close else []
        help_lines.append("structs in the object: " + ", ".join(names) if names else "the object has no structs")
        return [
            error(
                codes.NO_SUCH_TYPE,
                f"no struct, union or typedef named '{value.text}' in the object's BTF",
                value.span,
                help=tuple(help_lines),
            )
        ]
    return []


def record_types(event: BpfEvent, spec: ObjectSpec) -> dict[str, str]:
    """map name -> TYPE of the event's valid map:NAME.type=TYPE terms (the last one of a map)."""
    out: dict[str, str] = {}
    for term in event.terms.items if event.terms else ():
        if isinstance(term, MapTerm) and term.option == "type" and isinstance(term.value, Word):
            if not any(d.is_error for d in _check_term(term, spec, None, False)):
                out[term.map_name] = term.value.text
    return out


def _event_names_help(name: str, defined: Mapping[str, EventFacts]) -> tuple[str, ...]:
    out = ["map:NAME.event= refers to an event defined earlier, by its name= or its text"]
    close = difflib.get_close_matches(name, list(defined), n=1)
    if close:
        out.insert(0, f"did you mean '{close[0]}'?")
    else:
        out.append(f"e.g. bpf-output/no-inherit,name={name}/ before this event")
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# the plan


KeyRange = tuple[int, int]  # inclusive first, last


def range_keys(ranges: Iterable[KeyRange]) -> Iterator[int]:
    """Every key of the inclusive ``ranges``, in order."""
    for first, last in ranges:
        yield from range(first, last + 1)


class MapUpdate(Slotted):
    """One object term, ready to apply: write ``value`` (or the fd of ``event``) at every key."""

    map_name: str
    keys: tuple[KeyRange, ...]  # sorted, merged, inclusive ranges
    value: bytes | None  # in host byte order (as programs read it), the map's value size (option 'value')
    event: str | None  # the referenced event's name (option 'event')
    span: Span = value_field(default=Span(0, 0), compare=False)


def plan_map_updates(event: BpfEvent, spec: ObjectSpec, *, truncate_values: bool = False) -> list[MapUpdate]:
    """The updates the object terms of ``event`` make, in order; raises EvspecError if a term is
    invalid (event references are not resolved here: the caller knows the events)."""
    errors: list[Diagnostic] = []
    updates: list[MapUpdate] = []
    for term in event.terms.items if event.terms else ():
        found = [d for d in _check_term(term, spec, None, truncate_values) if d.is_error]
        if found:
            errors.extend(found)
            continue
        if (not isinstance(term, MapTerm) or term.option == "type" or term.option in SETTERS
                or term.option in PRINT_OPTIONS):
            continue  # .type makes no update (the records are decoded as they are read), setters
            # change the map before it is created (map_setters.apply_map_setters), print options
            # say how record prints the map
        m = spec.map(term.map_name)
        assert m is not None and term.value is not None
        keys = _key_ranges(term, m)
        if term.option == "value":
            assert isinstance(term.value, Number)
            raw = term.value.value & ((1 << (8 * m.value_size)) - 1)
            updates.append(MapUpdate(m.name, keys, raw.to_bytes(m.value_size, sys.byteorder), None, term.span))
        else:
            updates.append(MapUpdate(m.name, keys, None, term.value.text, term.span))
    if errors:
        raise EvspecError(errors)
    return updates


def _key_ranges(term: MapTerm, m: MapSpec) -> tuple[KeyRange, ...]:
    if not isinstance(term.indices, IndexList):
        return ((0, m.max_entries - 1),) if m.max_entries else ()
    ranges = sorted(
        (item.first.value, (item.last or item.first).value) for item in term.indices.items
    )
    merged: list[KeyRange] = []
    for first, last in ranges:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return tuple(merged)
