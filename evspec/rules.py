"""System-independent checks over the AST: what decides the SYNTAX verdict after parsing.

Items are checked left to right, each completely before the next; within an event: its name, then
its terms in order, then its modifiers; a group's modifiers after its members (corpus README,
*Which error is the primary one*). Inside one ``map:`` term perf's order holds and only the first
problem is reported.
"""

from __future__ import annotations

import re

from evspec import lexicon
from evspec.ast import (
    BpfEvent,
    BreakpointEvent,
    CacheEvent,
    Event,
    EventList,
    Group,
    IndexList,
    Item,
    MapTerm,
    Modifiers,
    Number,
    NumericEvent,
    PmuEvent,
    ProgTerm,
    RawEvent,
    SymbolEvent,
    SymbolKind,
    Term,
    TermKind,
    Terms,
    TracepointEvent,
    VarTerm,
    Word,
)
from evspec.diagnostics import Diagnostic, error, warning
from evspec.references import add_reference_names, event_reference_names, program_event_reference
from evspec.span import Span

TYPE_CHECKING = False  # imports for annotations only: a cold start does not pay for them
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

__all__ = ["check", "check_by_item", "check_event"]

_TRACEPOINT_ONLY = "only " + ", ".join(lexicon.TRACEPOINT_TERMS)
_MAP_HINT = ("object terms are map:NAME.value[INDICES]=NUMBER, map:NAME.event[INDICES]=EVENT or "
             "map:NAME.type=TYPE")


def check(events: EventList, earlier_names: Sequence[str] = ()) -> list[Diagnostic]:
    """Every system-independent finding of ``events``, in order.

    ``earlier_names`` are the names defined by earlier event strings of the same command (for
    ``map:NAME.event=`` references; see ``references.event_reference_names``).
    """
    return [d for diags in check_by_item(events, earlier_names) for d in diags]


def check_by_item(events: EventList, earlier_names: Sequence[str] = ()) -> list[tuple[Diagnostic, ...]]:
    """The findings of ``check``, one tuple per item of ``events.items``."""
    names: set[str] = set()
    add_reference_names(names, earlier_names)
    collect = any(  # names matter only to map:NAME.event= and prog:NAME.event= terms
        isinstance(e, BpfEvent) and (any(t.option == "event" for t in e.object_terms) or bool(e.prog_terms))
        for item in events.items for e in (item.events if isinstance(item, Group) else (item,))
    )
    ratio = not events.source or "ratio-to-prev" in events.source  # a rare term: most strings need no look
    out: list[tuple[Diagnostic, ...]] = []
    for item in events.items:
        diags: list[Diagnostic] = []
        members = item.events if isinstance(item, Group) else (item,)
        for event in members:
            diags.extend(check_event(event, names))
            if collect:
                add_reference_names(names, event_reference_names(event, events.source))
        if ratio:
            diags.extend(_ratio_to_prev_position(item))
        if isinstance(item, Group):
            if item.modifiers is not None:
                diags.extend(_modifiers(item.modifiers, group=True))
                diags.extend(_combined_precise(item))
        out.append(tuple(diags))
    return out


def check_event(event: Event, names: Iterable[str] = ()) -> list[Diagnostic]:
    """The findings for one event; ``names`` are the events defined before it."""
    diags = list(_name(event))
    terms: Terms | None = getattr(event, "terms", None)
    if terms is not None:
        known: set[str] | frozenset[str]
        if isinstance(names, (set, frozenset)):
            known = names
        else:
            known = set()
            add_reference_names(known, names)
        diags.extend(_terms(event, terms, known))
    if isinstance(event, BreakpointEvent) and event.access is not None and event.access_span is not None:
        diags.extend(_repeated_access(event.access, event.access_span))
    modifiers: Modifiers | None = getattr(event, "modifiers", None)
    if modifiers is not None:
        diags.extend(_modifiers(modifiers, group=False))
    return diags


# --------------------------------------------------------------------------------------------
# event names


def _name(event: Event) -> Iterator[Diagnostic]:
    if isinstance(event, CacheEvent):
        yield from cache_name_findings(event)
    elif isinstance(event, RawEvent):
        if event.code.value > lexicon.U64_MAX:
            yield error("ES028", "raw event code out of range (more than 64 bits)",
                        Span(event.span.start, event.code.span.end), perf_message="parser error")
    elif isinstance(event, NumericEvent):
        if event.type.value > lexicon.U32_MAX:
            yield error("ES029", "numeric event type out of range (more than 32 bits)", event.type.span,
                        notes=("perf silently truncates the type to 32 bits",))
        yield from _u64(event.config)
    elif isinstance(event, BreakpointEvent):
        yield from _u64(event.address)
        if event.length is not None:
            yield from _u64(event.length)


_CACHE_ORDER_NOTE = ("perf 6.1 and 6.12 accept it (in any order, a repeated part ignored); perf 7.2 and "
                     "later know only TYPE, TYPE-OP, TYPE-RESULT and TYPE-OP-RESULT")


def cache_name_findings(event: CacheEvent) -> Iterator[Diagnostic]:
    """perf 7.3's legacy cache names (make_legacy_cache.py): TYPE, TYPE-OP, TYPE-RESULT or
    TYPE-OP-RESULT, with an operation the cache type supports."""
    cache = lexicon.cache_type(event.cache_type)
    spans = event.part_spans or (event.name_span,) * len(event.parts)
    op: tuple[str, lexicon.CacheOp] | None = None
    result: tuple[str, lexicon.CacheResult] | None = None
    for index, (part, span) in enumerate(zip(event.parts, spans, strict=True)):
        if index >= 2:
            yield error("ES025", "a cache event has at most two parts after the cache type", span,
                        help=("write TYPE-OP-RESULT, e.g. 'L1-dcache-load-misses'",))
            return
        if not part:
            yield error("ES024", "empty part in a cache event name", Span(span.start - 1, span.start),
                        help=("remove the extra '-'",))
            continue
        new_op = lexicon.cache_op(part)
        new_result = lexicon.cache_result(part)
        if new_op is not None:
            if op is not None:
                yield _second_part(part, op[0], "operation", span)
                continue
            if result is not None:
                yield error("ES051", f"the cache operation '{part}' comes after the result '{result[0]}'", span,
                            help=(f"write {event.cache_type}-{part}-{result[0]}",), notes=(_CACHE_ORDER_NOTE,),
                            perf_message="Bad event name")
                continue
            op = (part, new_op)
            if new_op not in lexicon.CACHE_SUPPORTED_OPS[cache]:
                supported = ", ".join(sorted(o.value for o in lexicon.CACHE_SUPPORTED_OPS[cache]))
                yield error("ES026", f"{event.cache_type} does not support the '{part}' operation", span,
                            help=(f"{event.cache_type} supports: {supported}",))
        elif new_result is not None:
            if result is not None:
                yield _second_part(part, result[0], "result", span)
                continue
            result = (part, new_result)
        else:
            yield error("ES024", f"'{part}' is not a cache operation or result", span,
                        help=("operations: load, store, prefetch (and their aliases); "
                              "results: refs, misses (and their aliases)",))


def _second_part(part: str, first: str, what: str, span: Span) -> Diagnostic:
    repeated = "repeats" if first.lower() == part.lower() else "conflicts with"
    return error("ES027", f"a cache event has one {what}; '{part}' {repeated} '{first}'", span,
                 help=(f"remove '{part}'",), notes=(_CACHE_ORDER_NOTE,), perf_message="Bad event name")


def _repeated_access(access: str, span: Span) -> Iterator[Diagnostic]:
    seen: set[str] = set()
    for offset, letter in enumerate(access):
        if letter in seen:
            at = span.start + offset
            yield error("ES023", f"breakpoint access '{letter}' repeated", Span(at, at + 1),
                        help=("each of r, w, x at most once",))
        seen.add(letter)


def _u64(number: Number) -> Iterator[Diagnostic]:
    if number.value > lexicon.U64_MAX:
        yield error("ES028", "number out of range (more than 64 bits)", number.span,
                    perf_message="parser error")


# --------------------------------------------------------------------------------------------
# modifiers


def _modifiers(mods: Modifiers, *, group: bool) -> Iterator[Diagnostic]:
    seen: set[str] = set()
    precise = 0
    for offset, letter in enumerate(mods.letters):
        at = Span(mods.span.start + offset, mods.span.start + offset + 1)
        if letter not in lexicon.MODIFIER_LETTERS:
            yield error("ES020", f"unknown modifier '{letter}'", at, perf_message="parser error",
                        help=("modifiers are " + ", ".join(lexicon.MODIFIER_LETTERS),))
        elif letter == "p":
            precise += 1
            if precise == lexicon.MAX_PRECISE + 1:
                yield error("ES022", "bad modifier: at most 'ppp'", at, perf_message="Bad modifier",
                            help=("precise levels are p, pp and ppp",))
        elif letter in seen:
            yield error("ES021", f"bad modifier: '{letter}' repeated", at, perf_message="Bad modifier",
                        help=("write each modifier once",))
        elif letter == "W" and not group:
            yield error("ES052", "the weak-group modifier 'W' is for groups", at,
                        perf_message="Weak modifier is for use with groups",
                        help=("put it on the group: '{a,b}:W'",),
                        notes=("perf 6.1 accepts it on an event (and ignores it); perf 6.12 and later reject it",))
        seen.add(letter)


def _precise(mods: Modifiers | None) -> int:
    return 0 if mods is None else min(mods.letters.count("p"), lexicon.MAX_PRECISE)


def _combined_precise(group: Group) -> Iterator[Diagnostic]:
    """perf adds a group's precise level to each member's: more than 3 is an error at the group's
    modifiers (at its first 'p')."""
    extra = _precise(group.modifiers)
    if not extra or group.modifiers is None:
        return
    for event in group.events:
        own = _precise(getattr(event, "modifiers", None))
        if own + extra > lexicon.MAX_PRECISE:
            at = group.modifiers.span.start + group.modifiers.letters.index("p")
            yield error("ES053", f"precise level {own} + {extra} is more than 3 for a member of the group",
                        Span(at, at + extra), perf_message="Maximum combined precise value is 3",
                        help=("the group's 'p' letters add to each member's; use at most 'ppp' in all",))
            return


# --------------------------------------------------------------------------------------------
# terms


def _kind_label(event: Event) -> str:
    if isinstance(event, SymbolEvent):
        return "tool events" if event.kind is SymbolKind.TOOL else "hardware/software events"
    if isinstance(event, CacheEvent):
        return "cache events"
    if isinstance(event, RawEvent):
        return "raw events"
    if isinstance(event, NumericEvent):
        return "numeric events"
    if isinstance(event, TracepointEvent):
        return "tracepoints"
    if isinstance(event, BpfEvent):
        return "BPF events"
    if isinstance(event, BreakpointEvent):
        return "breakpoints"
    return "PMU events"


def _takes_legacy_config(event: Event) -> bool | None:
    """Whether legacy-hardware-config= and legacy-cache-config= may go on ``event``: True for the
    events of core PMUs (hardware and cache events; PMU events, checked against a system), False
    for software and tool events (no core PMU), None where they are no term at all."""
    if isinstance(event, SymbolEvent):
        return event.kind is SymbolKind.HARDWARE
    if isinstance(event, (CacheEvent, PmuEvent)):
        return True
    return None


def _terms(event: Event, terms: Terms, names: set[str] | frozenset[str]) -> Iterator[Diagnostic]:
    label = _kind_label(event)
    restricted = isinstance(event, (TracepointEvent, BpfEvent))
    keywords_seen: dict[str, Term] = {}
    vars_seen: dict[str, VarTerm] = {}
    for term in terms.items:
        if isinstance(term, VarTerm):
            if isinstance(event, BpfEvent):
                yield from _var_term(term, vars_seen)
            else:
                yield _not_for(term.key_span, f"var:{term.name}", label, restricted)
            continue
        if isinstance(term, MapTerm):
            if isinstance(event, BpfEvent):
                yield from _map_term(term, names)
            elif not isinstance(event, PmuEvent):
                yield _not_for(term.key_span, f"map:{term.map_name}", label, restricted)
            continue
        if isinstance(term, ProgTerm):
            if isinstance(event, BpfEvent):
                yield from _prog_term(term, names)
            else:
                yield _not_for(term.key_span, f"prog:{term.prog_name}", label, restricted)
            continue
        if term.kind is TermKind.DRIVER:
            if not isinstance(event, PmuEvent):
                yield error("ES032", f"driver-config term not valid for this event kind ({label})",
                            term.key_span, perf_message="unknown term",
                            help=("@ terms are passed to the driver of a PMU: PMU/@cfg/",))
            continue
        if term.kind is TermKind.KEYWORD and term.key in lexicon.LEGACY_CONFIG_TERMS:
            takes = _takes_legacy_config(event)
            if takes is None:
                yield _not_for(term.key_span, term.key, label, restricted)
                continue
            if not takes:
                yield error("ES054", f"'{term.key}' needs an event of a core PMU ({event.name} is a "  # type: ignore[union-attr]
                            f"{'tool' if event.kind is SymbolKind.TOOL else 'software'} event)",  # type: ignore[union-attr]
                            term.key_span, perf_message="needs a core PMU",
                            help=("it turns a CPU PMU's event into a legacy hardware or cache event: "
                                  "cpu/legacy-hardware-config=1/",))
                continue
        if term.kind is TermKind.KEYWORD and (not restricted or term.key in lexicon.TRACEPOINT_TERMS):
            yield from _keyword(term)
            first = keywords_seen.setdefault(term.key, term)
            if first is not term:
                which = "first" if term.key == "name" else "last"
                yield warning("WS002", f"term '{term.key}' given twice; the {which} value is used",
                              term.key_span, labels=(), help=("remove one of them",))
            continue
        if isinstance(event, PmuEvent):
            if isinstance(term.value, Number):
                yield from _u64(term.value)
            continue
        if term.kind is TermKind.RAW and not restricted:
            if isinstance(term.value, Number):
                yield from _u64(term.value)
            continue
        if isinstance(event, BpfEvent) and term.kind is TermKind.USER:
            yield error("ES046", f"unknown BPF object term '{term.key}' (object terms are "
                        "map:NAME.OPTION=VALUE)", term.key_span, perf_message="Invalid object config option",
                        help=(_MAP_HINT, f"event terms: {', '.join(lexicon.TRACEPOINT_TERMS)}"))
            continue
        yield _not_for(term.key_span, term.key, label, restricted)


def _not_for(span: Span, key: str, label: str, restricted: bool) -> Diagnostic:
    if restricted:
        return error("ES031", f"term '{key}' not valid for {label} ({_TRACEPOINT_ONLY})", span,
                     perf_message="unknown term",
                     help=("valid terms: " + ",".join(lexicon.TRACEPOINT_TERMS),))
    return error("ES030", f"unknown term '{key}' for {label}", span, perf_message="unknown term",
                 help=("valid terms: " + lexicon.VALID_TERMS_HELP,))


def _keyword(term: Term) -> Iterator[Diagnostic]:
    info = lexicon.KEYWORD_TERMS[term.key]
    value = term.value
    if info.value_type is lexicon.ValueType.CPUS:
        yield from _cpu_term(term)
        return
    if info.value_type is lexicon.ValueType.STRING:
        if not isinstance(value, Word):
            where = term.span if value is None else value.span
            yield error("ES035", f"'{term.key}' expects a string value", where,
                        perf_message="expected string value", help=_string_help(term.key))
        elif term.key == "call-graph" and value.text not in lexicon.CALL_GRAPH_MODES:
            yield error("ES038", f"unknown call-graph mode '{value.text}'", value.span,
                        help=("call-graph is fp, dwarf, lbr or no",))
        elif term.key == "branch_type" and value.text.lower() not in (*lexicon.BRANCH_TYPES, "no"):
            yield error("ES039", "invalid branch sample type", value.span,
                        perf_message="invalid branch sample type", help=_string_help(term.key))
        elif term.key == "aux-action" and value.text not in lexicon.AUX_ACTIONS:
            yield error("ES056", f"unknown aux-action '{value.text}'", value.span,
                        perf_message=f"Bad aux-action '{value.text}'", help=_string_help(term.key))
        elif term.key == "ratio-to-prev":
            yield from _ratio_to_prev(value)
        return
    if value is None:
        return
    if not isinstance(value, Number):
        yield error("ES034", f"'{term.key}' expects a numeric value", value.span,
                    perf_message="expected numeric value",
                    help=(value_help(term.key, value.text),))
        return
    if value.value > lexicon.U64_MAX:
        yield from _u64(value)
    elif info.value_type is lexicon.ValueType.BOOL and value.value > 1:
        yield error("ES036", f"'{term.key}' expects 0 or 1", value.span, perf_message="expected 0 or 1")
    elif info.maximum is not None and value.value > info.maximum:
        yield error("ES037", f"{term.key} too big (max {info.maximum})", value.span,
                    perf_message="too big")
    elif term.key == "legacy-cache-config":
        fields = (value.value & 0xFF, value.value >> 8 & 0xFF, value.value >> 16 & 0xFF)
        if value.value >> 24 or any(f >= limit for f, limit in zip(fields, lexicon.LEGACY_CACHE_LIMITS, strict=True)):
            yield error("ES037", "legacy-cache-config too big: TYPE | OP << 8 | RESULT << 16 with TYPE < 7, "
                        "OP < 3, RESULT < 2", value.span, perf_message="too big")


_CPU_LIST = re.compile(r"[0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*")


def _cpu_term(term: Term) -> Iterator[Diagnostic]:
    """``cpu=N``, ``cpu=LIST`` (``0-3``, quoted ``'0,2'``) or ``cpu=PMU``: a list is checked here,
    a number against the system's CPUs and a PMU name against its PMUs (compiler/resolve.py)."""
    value = term.value
    if isinstance(value, Number):
        yield from _u64(value)
        return
    if not isinstance(value, Word) or not value.text[:1].isdigit():
        return  # no value: CPU 1 (perf's value of a bare term); a word: a PMU name
    if _CPU_LIST.fullmatch(value.text) is None or _cpu_ranges_reversed(value.text):
        yield error("ES055", f"'{value.text}' is not a CPU list", value.span,
                    perf_message="not a valid PMU or CPU number",
                    help=("cpu= takes a CPU number, a range such as 0-3, a quoted list such as '0,2-3', "
                          "or the name of a PMU (its CPUs)",))


def _cpu_ranges_reversed(text: str) -> bool:
    for part in text.split(","):
        low, _, high = part.partition("-")
        if high and int(high) < int(low):
            return True
    return False


_STRTOD = re.compile(r"[ \t\n\r\f\v]*[+-]?(?:inf(?:inity)?|nan|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)",
                     re.IGNORECASE)


def _ratio_to_prev(value: Word) -> Iterator[Diagnostic]:
    """perf reads the value with strtod: the number at its start must be above zero and finite."""
    m = _STRTOD.match(value.text)
    try:
        number = float(m.group()) if m else 0.0
    except ValueError:
        number = 0.0
    if not number > 0:
        yield error("ES057", f"ratio-to-prev must be a number above zero ('{value.text}' is not)", value.span,
                    perf_message="zero or negative", help=("for example ratio-to-prev=2.0",))
    elif number == float("inf"):
        yield error("ES057", f"ratio-to-prev '{value.text}' is too big", value.span, perf_message="too big",
                    help=("for example ratio-to-prev=2.0",))


def _ratio_to_prev_position(item: Item) -> list[Diagnostic]:
    """ratio-to-prev sets an event's period from the event before it in its group: on a group
    leader or an event outside a group perf prints an error and ignores the term."""
    terms = getattr(item.events[0] if isinstance(item, Group) else item, "terms", None)
    if terms is None:
        return []
    return [warning("WS004", "ratio-to-prev has no effect on the first event of a group or on an event "
                    "outside a group", term.key_span,
                    help=("put it on a later member: '{cycles,instructions/period=200000,ratio-to-prev=2.0/}'",),
                    notes=("perf prints 'Invalid use of ratio-to-prev term without preceding element in "
                           "group' and ignores the term",))
            for term in terms.items
            if isinstance(term, Term) and term.kind is TermKind.KEYWORD and term.key == "ratio-to-prev"]


def _string_help(key: str) -> tuple[str, ...]:
    if key == "call-graph":
        return ("call-graph is fp, dwarf, lbr or no",)
    if key == "branch_type":
        return ("branch_type is no or one of: " + ", ".join(lexicon.BRANCH_TYPES),)
    if key == "aux-action":
        return ("aux-action is " + ", ".join(lexicon.AUX_ACTIONS),)
    if key == "ratio-to-prev":
        return ("a number above zero, written as a word: ratio-to-prev=2.0",)
    return (f"for example {key}=foo, or quoted: {key}='a:b'",)


_PROG_HINT = "a program term is prog:NAME.event=EVENT, EVENT defined earlier (cpu-clock/freq=99/)"


def _prog_term(term: ProgTerm, names: set[str] | frozenset[str]) -> Iterator[Diagnostic]:
    """``prog:NAME.event=EVENT``: structure, option, value present and a word, the event earlier."""
    key = f"prog:{term.prog_name}"
    if not term.prog_name or term.option not in lexicon.PROG_OPTIONS:
        where = term.key_span if not term.prog_name or not term.option else term.option_span
        what = "empty program name" if not term.prog_name else (
            f"unknown program option '{term.option}' (expected event or autoload)" if term.option else
            "program term without '.event'")
        yield error("ES048", what, where, help=(_PROG_HINT,))
        return
    if term.value is None:
        yield error("ES044", f"'{key}.{term.option}' has no value (missing '=')", term.key_span, help=(_PROG_HINT,))
        return
    if term.option == "autoload":
        if not (isinstance(term.value, Number) and term.value.value in (0, 1)):
            yield error("EB035", f"'{key}.autoload' is 0 or 1, not '{term.value.text}'", term.value.span,
                        help=(f"write {key}.autoload=0 to leave the program out, =1 to load it",))
        return
    if not isinstance(term.value, Word):
        yield error("ES045", f"'{key}.event' needs the name of an event", term.value.span, help=(_PROG_HINT,))
        return
    try:
        found = program_event_reference(term.value.text, names)
    except ValueError:
        yield error("ES047", f"more than one earlier event is a '{term.value.text}' event", term.value.span,
                    help=(f"give the one to use a name, e.g. '{term.value.text}/freq=99,name=tick/', and "
                          f"write {key}.event=tick",))
        return
    if found is None:
        yield error("ES047", f"no earlier event named '{term.value.text}'", term.value.span,
                    help=(f"define the event before this one, e.g. '-e {term.value.text}/freq=99/ -e ...'",))


_VAR_HINT = "a variable term is var:NAME=VALUE: var:targ_pid=42, var:verbose=true, var:targ_comm='bash'"


def _var_term(term: VarTerm, seen: dict[str, VarTerm]) -> Iterator[Diagnostic]:
    """``var:NAME=VALUE``: a name without '.', a value; a variable set again (the last wins) is a
    warning. The variable and its value are checked against the object (loader/lint/terms/variables.py)."""
    if not term.name:
        yield error("ES049", "empty variable name", term.key_span, help=(_VAR_HINT,))
        return
    dot = term.name.find(".")
    if dot >= 0:
        start = term.name_span.start + dot
        yield error("ES049", f"a variable name has no '.' part ('{term.name[dot:]}')",
                    Span(start, term.name_span.end), help=(_VAR_HINT,))
        return
    if term.value is None:
        yield error("ES049", f"'var:{term.name}' has no value (missing '=')", term.key_span, help=(_VAR_HINT,))
        return
    first = seen.get(term.name)
    seen[term.name] = term
    if first is not None:
        yield warning("WS003", f"variable '{term.name}' set twice; the last value is used", term.key_span,
                      help=(f"remove one of the var:{term.name}= terms",))


def _map_term(term: MapTerm, names: set[str] | frozenset[str]) -> Iterator[Diagnostic]:
    """perf's order: structure, index list, (map exists, index too large: against the object),
    option, value present, value type, referenced event. The first problem only."""
    key = f"map:{term.map_name}"
    if not term.option:
        yield error("ES040", "map term without '.value' or '.event'", term.key_span,
                    perf_message="Invalid object config option", help=(_MAP_HINT,))
        return
    if not term.map_name:
        yield error("ES041", "empty map name", term.key_span, perf_message="Target map doesn't exist",
                    help=(_MAP_HINT,))
        return
    if isinstance(term.indices, IndexList):
        for item in term.indices.items:
            bad = next(iter(d for n in (item.first, item.last) if n is not None for d in _u64(n)), None)
            if bad is not None:
                yield bad
                return
            if item.last is not None and item.last.value < item.first.value:
                yield error("ES042", f"reversed index range ({item.first.text}...{item.last.text})",
                            item.span, help=(f"write {item.last.text}...{item.first.text}",))
                return
    head, dot, last = term.option.rpartition(".")
    if dot and last in lexicon.MAP_SETTERS:
        yield error("ES043", f"map '{term.map_name}.{head}' cannot be named in a map term (its name has a '.'): "
                    "a data section's map (NAME.rodata, NAME.bss, NAME.kconfig) takes no setters",
                    Span(term.name_span.start, term.option_span.start + len(head)),
                    perf_message="Invalid object map config option",
                    help=("set the section's variables with var:NAME=VALUE",))
        return
    if term.option not in lexicon.MAP_OPTIONS:
        yield error("ES043", f"unknown map option '{term.option}' (expected {', '.join(lexicon.MAP_OPTIONS)})",
                    term.option_span, perf_message="Invalid object map config option",
                    help=(_MAP_HINT,))
        return
    if term.option == "type" and term.indices is not None:
        yield error("ES050", f"'{key}.type' takes no index list: it names the type of every record of the map",
                    term.indices.span, help=(f"write {key}.type=TYPE",))
        return
    if term.value is None:
        yield error("ES044", f"'{key}.{term.option}' has no value (missing '=')", term.key_span,
                    perf_message="Config value not set (missing '=')", help=(_MAP_HINT,))
        return
    if term.option in lexicon.PRINT_MAP_OPTIONS:
        return  # checked against the object (loader/lint/terms/print_terms.py)
    if term.option == "value":
        if not isinstance(term.value, Number):
            yield error("ES045", f"'{key}.value' needs a number", term.value.span,
                        perf_message="Incorrect value type for map", help=(_MAP_HINT,))
        else:
            yield from _u64(term.value)
        return
    if term.option in lexicon.MAP_SETTERS:  # values checked against the map (terms/map_setters.py)
        if isinstance(term.value, Number):
            yield from _u64(term.value)
        return
    if term.option == "type":
        if not isinstance(term.value, Word):
            yield error("ES045", f"'{key}.type' needs the name of a BTF type", term.value.span,
                        help=(f"write {key}.type=NAME for a struct, union or typedef NAME of the object",))
        return
    if not isinstance(term.value, Word):
        yield error("ES045", f"'{key}.event' needs the name of an event", term.value.span,
                    perf_message="Incorrect value type for map", help=(_MAP_HINT,))
        return
    if term.value.text not in names:
        yield error(
            "ES047", f"no earlier event named '{term.value.text}'", term.value.span,
            perf_message="Event not found for map setting",
            help=(f"define the event before this one, e.g. 'bpf-output/no-inherit,name={term.value.text}/,' "
                  "and refer to it by that name",),
        )


def value_help(key: str, value: str) -> str:
    """How to write ``value`` of term ``key`` (empty: unknown) that is no number: hex with a
    capital X in lower case, the value of a name-valued term quoted, any other as a number."""
    value = value if len(value) <= 40 else value[:40] + "…"
    if re.fullmatch(r"0X[0-9a-fA-F]+", value):
        return f"a hex number is written with a lower-case x: '0x{value[2:]}'"
    term = lexicon.KEYWORD_TERMS.get(key)
    if term is not None and term.value_type is lexicon.ValueType.STRING:
        return f"quote it: {key}='{value}'"
    what = f"'{key}' takes a number" if key else "a value is a number"
    return f"{what}: decimal or 0x-hex ('{value}' is neither)"
