"""Resolving events against a described system, and the semantic checks that fall out of it.

``resolve_event`` turns one AST event into the evsels perf would create for it, before modifiers
and command defaults: attr type, the config fields (keyword ``config*`` terms, PMU format terms and
aliases encoded into their bit fields), tracepoint ids, breakpoint fields, fixed names. Whatever
cannot be resolved becomes a diagnostic with the span of the offending text and perf's wording.
``check_semantics`` is that resolution run for its diagnostics only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from evspec.ast import (
    AliasEvent,
    BpfEvent,
    BreakpointEvent,
    CacheEvent,
    Event,
    EventList,
    Number,
    NumericEvent,
    PmuEvent,
    RawEvent,
    SymbolEvent,
    SymbolKind,
    Term,
    TermKind,
    Terms,
    TracepointEvent,
    Word,
)
from evspec.compiler import attr as A
from evspec.diagnostics import Diagnostic, EvspecError, error, warning
from evspec.span import Span
from evspec.system.model import Pmu, PmuAlias, System, TracefsUnavailable

Mode = Literal["record", "stat"]

#: the keyword terms perf stat keeps (§5.3); evspec adds config3 to perf 6.1's list
STAT_TERMS = frozenset({"config", "config1", "config2", "config3", "name", "metric-id", "period", "percore"})

#: perf 6.1's list of hard-coded terms, in its order, as the unknown-term help prints it
STATIC_TERMS_HELP = (
    "config,config1,config2,name,period,freq,branch_type,time,call-graph,stack-size,no-inherit,"
    "inherit,max-stack,nr,no-overwrite,overwrite,driver-config,percore,aux-output,"
    "aux-sample-size,metric-id"
)
STAT_TERMS_HELP = "config,config1,config2,name,period,percore,metric-id"

CONFIG_TERMS = ("config", "config1", "config2", "config3")

TRACING_EVENTS_PATH = "/sys/kernel/tracing/events"


@dataclass(frozen=True, slots=True)
class BaseEvsel:
    """One evsel an event creates, before modifiers, keyword terms other than ``config*`` and
    the command's defaults."""

    event: Event
    type: int
    config: int = 0
    config1: int = 0
    config2: int = 0
    config3: int = 0
    bp_type: int = 0
    bp_addr: int = 0
    bp_len: int = 0
    sample_period: int = 0  # preset by the event kind (tracepoints, breakpoints)
    fixed_name: str | None = None  # a name the event kind gives (tracepoint, cache event)
    pmu: str | None = None
    alias: PmuAlias | None = None
    tracepoint: tuple[str, str] | None = None
    tool: bool = False
    system_wide: bool = False  # the PMU has a cpumask: counted per CPU, not on the workload


@dataclass(frozen=True, slots=True)
class Resolution:
    evsels: tuple[BaseEvsel, ...]
    diagnostics: tuple[Diagnostic, ...]
    #: the event breaks a system-independent rule (reported by the parser's rules, not here)
    invalid: bool = False

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


# --------------------------------------------------------------------------------------------
# public entry points


def check_semantics(events: EventList, system: System, mode: Mode = "record") -> list[Diagnostic]:
    """Every semantic finding about ``events`` against ``system``: unknown PMUs, aliases, terms,
    tracepoints, format ranges, and (``mode="stat"``) terms perf stat does not take. BPF events
    are left to the BPF object checks. Findings are ordered left to right."""
    out: list[Diagnostic] = []
    for event in events.events():
        out.extend(mode_diagnostics(event, mode))
        if isinstance(event, BpfEvent):
            continue
        out.extend(resolve_event(event, system).diagnostics)
    out.sort(key=lambda d: d.span.start)
    return out


def mode_diagnostics(event: Event, mode: Mode) -> list[Diagnostic]:
    """``'TERM' is not usable in 'perf stat'`` for each keyword term perf stat drops."""
    if mode != "stat":
        return []
    terms = getattr(event, "terms", None)
    out = []
    for term in terms.items if terms is not None else ():
        if isinstance(term, Term) and term.kind is TermKind.KEYWORD and term.key not in STAT_TERMS:
            out.append(
                error(
                    "EM012",
                    f"term '{term.key}' is not usable in 'perf stat'",
                    term.key_span,
                    help=(f"perf stat takes only the terms {STAT_TERMS_HELP} (and PMU format terms)",),
                    perf_message=f"'{term.key}' is not usable in 'perf stat'",
                )
            )
    return out


def resolve_event(event: Event, system: System | None) -> Resolution:
    """The evsels ``event`` creates on ``system`` (None: only system-independent kinds resolve)."""
    if isinstance(event, SymbolEvent):
        return _symbol(event, system)
    if isinstance(event, CacheEvent):
        return _cache(event, system)
    if isinstance(event, RawEvent):
        return _numeric(event, A.PERF_TYPE_RAW, event.code.value, system)
    if isinstance(event, NumericEvent):
        return _numeric(event, event.type.value & 0xFFFFFFFF, event.config.value, system)
    if isinstance(event, BreakpointEvent):
        return Resolution((_breakpoint(event),), ())
    if isinstance(event, TracepointEvent):
        return _tracepoint(event, system)
    if isinstance(event, PmuEvent):
        return _pmu_event(event, system)
    if isinstance(event, AliasEvent):
        return _alias_event(event, system)
    raise TypeError(f"resolve_event: {type(event).__name__} is resolved by the BPF loader")


# --------------------------------------------------------------------------------------------
# built-in kinds


def _config_terms(base: BaseEvsel, terms: Terms | None) -> BaseEvsel:
    """Apply ``config*=N`` and ``rHEX`` terms (they assign the attr field, in order)."""
    if terms is None:
        return base
    changes: dict[str, int] = {}
    for term in terms.items:
        if not isinstance(term, Term):
            continue
        if term.kind is TermKind.RAW and isinstance(term.value, Number):
            changes["config"] = term.value.value
        elif term.kind is TermKind.KEYWORD and term.key in CONFIG_TERMS and isinstance(term.value, Number):
            changes[term.key] = term.value.value
        elif term.kind is TermKind.KEYWORD and term.key in CONFIG_TERMS and term.value is None:
            changes[term.key] = 1
    return replace(base, **changes) if changes else base


def _no_core_pmu(event: Event, span: Span, system: System | None) -> tuple[Diagnostic, ...]:
    if system is None or system.core_pmus():
        return ()
    return (
        warning(
            "WM001",
            "this system has no hardware PMU: the event cannot be counted here",
            span,
            notes=("perf reports such events as <not supported>",),
        ),
    )


def _hybrid(bases: BaseEvsel, system: System | None) -> tuple[BaseEvsel, ...]:
    """perf 6.1 on hybrid machines: hardware and cache events get one evsel per core PMU with the
    PMU type in config bits 32-63; raw events get the PMU's type."""
    if system is None:
        return (bases,)
    hybrid = system.hybrid_pmus()
    if not hybrid:
        return (bases,)
    out = []
    for pmu in hybrid:
        if bases.type in (A.PERF_TYPE_HARDWARE, A.PERF_TYPE_HW_CACHE):
            out.append(replace(bases, config=bases.config | pmu.type << A.PERF_PMU_TYPE_SHIFT, pmu=pmu.name))
        elif bases.type == A.PERF_TYPE_RAW:
            out.append(replace(bases, type=pmu.type, pmu=pmu.name))
        else:
            return (bases,)
    return tuple(out)


def _symbol(event: SymbolEvent, system: System | None) -> Resolution:
    if event.kind is SymbolKind.HARDWARE:
        base = BaseEvsel(event, A.PERF_TYPE_HARDWARE, A.HARDWARE_EVENTS[event.name.lower()])
        base = _config_terms(base, event.terms)
        return Resolution(_hybrid(base, system), _no_core_pmu(event, event.name_span, system))
    if event.kind is SymbolKind.SOFTWARE:
        base = BaseEvsel(event, A.PERF_TYPE_SOFTWARE, A.SOFTWARE_EVENTS[event.name.lower()])
        return Resolution((_config_terms(base, event.terms),), ())
    return Resolution((BaseEvsel(event, A.PERF_TYPE_SOFTWARE, A.PERF_COUNT_SW_DUMMY, tool=True),), ())


def _cache(event: CacheEvent, system: System | None) -> Resolution:
    try:
        config = A.cache_config(event.cache_type, event.parts)
    except ValueError:
        return Resolution((), (), invalid=True)
    base = BaseEvsel(event, A.PERF_TYPE_HW_CACHE, config, fixed_name=event.name)
    base = _config_terms(base, event.terms)
    return Resolution(_hybrid(base, system), _no_core_pmu(event, event.name_span, system))


def _numeric(event: RawEvent | NumericEvent, type_: int, config: int, system: System | None) -> Resolution:
    base = _config_terms(BaseEvsel(event, type_, config), event.terms)
    if type_ in (A.PERF_TYPE_RAW, A.PERF_TYPE_HARDWARE, A.PERF_TYPE_HW_CACHE):
        span = event.span if isinstance(event, RawEvent) else event.type.span
        return Resolution(_hybrid(base, system), _no_core_pmu(event, span, system))
    return Resolution((base,), ())


def _breakpoint(event: BreakpointEvent) -> BaseEvsel:
    bp_type = 0
    for letter in event.access or "":
        bp_type |= {"r": A.HW_BREAKPOINT_R, "w": A.HW_BREAKPOINT_W, "x": A.HW_BREAKPOINT_X}[letter]
    if not bp_type:
        bp_type = A.HW_BREAKPOINT_R | A.HW_BREAKPOINT_W
    length = event.length.value if event.length is not None else 0
    if not length:
        length = A.SIZEOF_LONG if bp_type == A.HW_BREAKPOINT_X else A.HW_BREAKPOINT_LEN_4
    base = BaseEvsel(
        event,
        A.PERF_TYPE_BREAKPOINT,
        bp_type=bp_type,
        bp_addr=event.address.value,
        bp_len=length,
        sample_period=1,
    )
    # config1/config2 terms share their words with bp_addr/bp_len (perf 6.12+: config_term_common
    # runs after the address and length are set)
    with_terms = _config_terms(base, event.terms)
    return replace(with_terms, bp_addr=with_terms.config1 or base.bp_addr, bp_len=with_terms.config2 or base.bp_len,
                   config1=0, config2=0) if with_terms is not base else base


# --------------------------------------------------------------------------------------------
# tracepoints


def _needs_system(what: str, span: Span) -> Diagnostic:
    return error(
        "EM013",
        f"{what} needs a system description to compile",
        span,
        help=("pass a system: '--system live' or '--system FILE' (a snapshot)",),
    )


def _tracefs_error(exc: TracefsUnavailable, span: Span) -> Diagnostic:
    return error("EM011", exc.reason, span, help=exc.help, perf_message="can't access trace events")


def _tracepoint(event: TracepointEvent, system: System | None) -> Resolution:
    if system is None:
        return Resolution((), (_needs_system(f"tracepoint '{event.name}'", event.name_span),))
    try:
        match = system.match_tracepoints(event.system, event.event)
    except TracefsUnavailable as exc:
        return Resolution((), (_tracefs_error(exc, event.name_span),))
    if match.no_system:
        return Resolution(
            (),
            (
                error(
                    "EM010",
                    f"no tracepoint system matches '{event.system}'",
                    event.name_span,
                    help=("list the trace systems with 'evspec list tracepoint'",),
                    perf_message="WARNING: event parser found nothing",
                ),
            ),
        )
    if not match.found:
        return Resolution(
            (),
            (
                error(
                    "EM009",
                    f"unknown tracepoint '{event.name}'",
                    event.name_span,
                    help=(f"list the events of a system with 'evspec list \"{event.system}:*\"'",),
                    perf_message="unknown tracepoint",
                    perf_help=(
                        f"Error:\tFile {TRACING_EVENTS_PATH}/{event.system}/{event.event} not found.\n"
                        "Hint:\tPerhaps this kernel misses some CONFIG_ setting to enable this feature?."
                    ),
                ),
            ),
        )
    evsels = tuple(
        BaseEvsel(
            event,
            A.PERF_TYPE_TRACEPOINT,
            tp_id,
            sample_period=1,
            fixed_name=f"{sys_name}:{ev_name}",
            tracepoint=(sys_name, ev_name),
        )
        for sys_name, ev_name, tp_id in match.found
    )
    return Resolution(evsels, ())


# --------------------------------------------------------------------------------------------
# PMU events and aliases


def _unknown_pmu(name: str, span: Span) -> Diagnostic:
    return error(
        "EM001",
        f"unknown PMU '{name}'",
        span,
        help=("list the PMUs and their events with 'evspec list pmu'",),
        perf_message=f"Cannot find PMU `{name}'. Missing kernel support?",
    )


def _pmu_event(event: PmuEvent, system: System | None) -> Resolution:
    if system is None:
        return Resolution((), (_needs_system(f"PMU event '{event.pmu}/.../'", event.name_span),))
    with_alias = system.pmus_with_alias(event.pmu)
    if with_alias:
        alias_term = Term(TermKind.USER, event.pmu, None, event.name_span, event.name_span)
        return _on_pmus([p for p, _ in with_alias], event, (alias_term, *event.terms.items))
    pmu = system.pmu(event.pmu)
    if pmu is not None:
        return _on_pmus([pmu], event, event.terms.items)
    matching = system.pmus_matching(event.pmu)
    if matching:
        return _on_pmus(list(matching), event, event.terms.items)
    return Resolution((), (_unknown_pmu(event.pmu, event.name_span),))


def _alias_event(event: AliasEvent, system: System | None) -> Resolution:
    if system is None:
        return Resolution((), (_needs_system(f"PMU event alias '{event.name}'", event.name_span),))
    with_alias = system.pmus_with_alias(event.name)
    if not with_alias:
        return Resolution(
            (),
            (
                error(
                    "EM002",
                    f"unknown event '{event.name}' (not an event name or a PMU alias here)",
                    event.name_span,
                    help=("list the events with 'evspec list'; event names are case-sensitive",),
                ),
            ),
        )
    alias_term = Term(TermKind.USER, event.name, None, event.name_span, event.name_span)
    return _on_pmus([p for p, _ in with_alias], event, (alias_term,))


def _on_pmus(pmus: Sequence[Pmu], event: Event, terms: Sequence[object]) -> Resolution:
    """Encode ``terms`` for each PMU; keep the PMUs where that works (perf adds an event for each
    success), else report the first PMU's findings."""
    good: list[BaseEvsel] = []
    first_failure: tuple[Diagnostic, ...] | None = None
    for pmu in pmus:
        evsel, diags = _encode_pmu_terms(pmu, event, terms)
        if evsel is not None and not any(d.is_error for d in diags):
            good.append(evsel)
        elif first_failure is None:
            first_failure = diags
    if good:
        return Resolution(tuple(good), ())
    assert first_failure is not None
    return Resolution((), first_failure)


def _is_alias_reference(pmu: Pmu, term: Term) -> PmuAlias | None:
    """perf's ``pmu_find_alias``: a bare term or ``NAME=1`` that is no format term, or
    ``event=NAME``, names an alias (case-insensitively)."""
    if term.kind is not TermKind.USER:
        return None
    value = term.value
    if value is None or (isinstance(value, Number) and value.value == 1):
        if pmu.format(term.key) is not None:
            return None
        return pmu.alias(term.key)
    if isinstance(value, Word) and term.key.lower() == "event":
        return pmu.alias(value.text)
    return None


def _valid_terms_help(pmu: Pmu) -> str:
    formats = ",".join(sorted(pmu.formats))
    return f"valid terms: {formats},{STATIC_TERMS_HELP}" if formats else f"valid terms: {STATIC_TERMS_HELP}"


def _encode_pmu_terms(
    pmu: Pmu, event: Event, terms: Sequence[object]
) -> tuple[BaseEvsel | None, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    fields = {"config": 0, "config1": 0, "config2": 0, "config3": 0}
    user_terms = [t for t in terms if isinstance(t, Term)]

    # keyword config terms and raw terms assign their field before format terms OR into it
    for term in user_terms:
        if term.kind is TermKind.RAW and isinstance(term.value, Number):
            fields["config"] = term.value.value
        elif term.kind is TermKind.KEYWORD and term.key in CONFIG_TERMS:
            fields[term.key] = term.value.value if isinstance(term.value, Number) else 1

    alias_found: PmuAlias | None = None
    alias_term: Term | None = None
    used_params: set[int] = set()
    for term in user_terms:
        alias = _is_alias_reference(pmu, term)
        if alias is None:
            continue
        if alias_found is not None:
            diags.append(
                error(
                    "EM007",
                    f"second PMU event alias '{alias.name}' in one event (the first is '{alias_found.name}')",
                    term.span,
                    help=(f"write two events: '{pmu.name}/{alias_found.name}/,{pmu.name}/{alias.name}/'",),
                )
            )
            continue
        alias_found, alias_term = alias, term
        diags.extend(_apply_alias(pmu, alias, term, user_terms, fields, used_params))

    for term in user_terms:
        if term.kind is not TermKind.USER or id(term) in used_params or term is alias_term:
            continue
        if _is_alias_reference(pmu, term) is not None:
            continue
        fmt = pmu.format(term.key)
        if fmt is None:
            diags.append(
                error(
                    "EM003",
                    f"unknown term '{term.key}' for PMU '{pmu.name}'",
                    term.key_span,
                    help=(_valid_terms_help(pmu),),
                    perf_message=f"unknown term '{term.key}' for pmu '{pmu.name}'",
                    perf_help=_valid_terms_help(pmu),
                )
            )
            continue
        value = term.value
        if value is None:
            if fmt.width > 1:
                diags.append(
                    error(
                        "EM006",
                        f"format term '{term.key}' of PMU '{pmu.name}' needs a value "
                        f"({fmt.width} bits: {fmt.text()})",
                        term.span,
                        help=(f"write '{term.key}=VALUE' (at most {fmt.max_value:#x})",),
                        perf_message="no value assigned for term",
                    )
                )
                continue
            number = 1
        elif isinstance(value, Word):
            diags.append(
                error(
                    "EM004",
                    f"format term '{term.key}' of PMU '{pmu.name}' expects a number",
                    value.span,
                    perf_message="expected numeric value",
                )
            )
            continue
        else:
            number = value.value
            if number > fmt.max_value:
                diags.append(_too_big(fmt.max_value, value.span))
                continue
        fields[fmt.field] |= fmt.encode(number)

    if any(d.is_error for d in diags):
        return None, diags
    evsel = BaseEvsel(
        event,
        pmu.type,
        fields["config"],
        fields["config1"],
        fields["config2"],
        fields["config3"],
        pmu=pmu.name,
        alias=alias_found,
        system_wide=pmu.cpumask is not None,
    )
    return evsel, diags


def _too_big(maximum: int, span: Span) -> Diagnostic:
    return error(
        "EM005",
        f"value too big for format, maximum is {maximum}",
        span,
        help=(f"the format field holds at most {maximum} ({maximum:#x})",),
        perf_message=f"value too big for format, maximum is {maximum}",
    )


def _apply_alias(
    pmu: Pmu,
    alias: PmuAlias,
    at: Term,
    user_terms: Sequence[Term],
    fields: dict[str, int],
    used_params: set[int],
) -> list[Diagnostic]:
    """OR the alias definition's format terms into ``fields``; ``?`` values come from the user's
    ``NAME=VALUE`` terms of the same event (marked used)."""
    try:
        definition = alias.terms()
    except EvspecError:
        return [_bad_alias(pmu, alias, at, "its definition is not a term list")]
    diags: list[Diagnostic] = []
    for item in definition.items:
        if not isinstance(item, Term):
            return [_bad_alias(pmu, alias, at, "its definition is not a term list")]
        if item.kind is TermKind.KEYWORD and item.key in CONFIG_TERMS and isinstance(item.value, Number):
            fields[item.key] |= item.value.value
            continue
        if item.kind is not TermKind.USER:
            continue
        fmt = pmu.format(item.key)
        if fmt is None:
            return [_bad_alias(pmu, alias, at, f"term '{item.key}' is no format of PMU '{pmu.name}'")]
        value = item.value
        if isinstance(value, Word) and value.text == "?":
            supplied = next(
                (
                    t
                    for t in user_terms
                    if t.kind is TermKind.USER and t.key == item.key and isinstance(t.value, Number)
                ),
                None,
            )
            if supplied is None:
                diags.append(
                    error(
                        "EM008",
                        f"alias '{alias.name}' of PMU '{pmu.name}' needs the parameter '{item.key}'",
                        at.span,
                        help=(f"add '{item.key}=VALUE' to the terms (the alias defines {alias.definition})",),
                        notes=(f"perf: Required parameter '{item.key}' not specified",),
                    )
                )
                continue
            used_params.add(id(supplied))
            assert isinstance(supplied.value, Number)
            number = supplied.value.value
            if number > fmt.max_value:
                diags.append(_too_big(fmt.max_value, supplied.value.span))
                continue
        elif isinstance(value, Number):
            number = value.value
        elif value is None:
            number = 1
        else:
            return [_bad_alias(pmu, alias, at, f"term '{item.key}' has a non-numeric value")]
        fields[fmt.field] |= fmt.encode(number)
    return diags


def _bad_alias(pmu: Pmu, alias: PmuAlias, at: Term, why: str) -> Diagnostic:
    return error(
        "EM014",
        f"alias '{alias.name}' of PMU '{pmu.name}' cannot be encoded: {why}",
        at.span,
        notes=(f"events/{alias.name} contains: {alias.definition}",),
    )
