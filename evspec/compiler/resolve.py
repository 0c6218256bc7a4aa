"""Resolving events against a described system, and the semantic checks that fall out of it.

``resolve_event`` turns one AST event into the evsels a perf release (``releases.py``; the newest
by default) would create for it, before modifiers and command defaults: attr type, the config
fields (keyword ``config*`` terms, PMU format terms and aliases encoded into their bit fields,
perf's legacy hardware and cache events of core PMUs), tracepoint ids, breakpoint fields, fixed
names. Whatever cannot be resolved becomes a diagnostic with the span of the offending text and
perf's wording. ``check_semantics`` is that resolution run for its diagnostics only.

Since perf 7.2 every named event is a PMU event: ``cycles`` is the event of each core PMU that
has it (one evsel per core PMU on a hybrid machine), ``cpu-clock`` the software PMU's,
``duration_time`` the tool PMU's (``perf_pmus.py``). Older releases resolve built-in names from
their symbol tables, with the per-core-PMU expansion of hybrid machines.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

from evspec import lexicon
from evspec.ast import (
    AliasEvent,
    BpfEvent,
    BreakpointEvent,
    CacheEvent,
    Event,
    EventList,
    Number,
    NumericEvent,
    RawEvent,
    SymbolEvent,
    SymbolKind,
    Term,
    TermKind,
    Terms,
    TracepointEvent,
    Word,
)
from evspec.ast import PmuEvent as PmuEventNode
from evspec.compiler import attr as A
from evspec.compiler import suggestions
from evspec.compiler.perf_pmus import PerfPmus, PmuEvent
from evspec.compiler.releases import LATEST, PERF_PMU_TYPE_TOOL, Release
from evspec.cpus import parse_cpu_list
from evspec.diagnostics import Diagnostic, EvspecError, error, warning
from evspec.rules import cache_name_findings
from evspec.span import Slotted, Span, replace
from evspec.system.model import Pmu, PmuAlias, System, TracefsUnavailable

Mode = Literal["record", "stat"]

#: the keyword terms perf stat keeps (§5.3), in the newest release
STAT_TERMS = LATEST.stat_terms

CONFIG_TERMS = ("config", "config1", "config2", "config3", "config4")

#: the terms perf sets on a PMU's events before the user's (its perf_event_attr_init_default):
#: intel_pt's tsc, pt and branch (perf adds mtc and psb periods its caps/ offer, which a system
#: description does not hold)
DEFAULT_TERMS: dict[str, tuple[str, ...]] = {"intel_pt": ("tsc", "pt", "branch")}

TRACING_EVENTS_PATH = "/sys/kernel/tracing/events"


class BaseEvsel(Slotted):
    """One evsel an event creates, before modifiers, keyword terms other than ``config*`` and
    the command's defaults."""

    event: Event
    type: int
    config: int = 0
    config1: int = 0
    config2: int = 0
    config3: int = 0
    config4: int = 0
    bp_type: int = 0
    bp_addr: int = 0
    bp_len: int = 0
    sample_period: int = 0  # preset by the event kind (tracepoints, breakpoints)
    sample_type: int = 0  # preset by the event kind (tracepoints: RAW|TIME|CPU|PERIOD)
    fixed_name: str | None = None  # a name the event kind gives (tracepoint, cache event)
    pmu: str | None = None
    alias: PmuAlias | None = None
    tracepoint: tuple[str, str] | None = None
    tool: bool = False
    system_wide: bool = False  # the PMU has a cpumask: counted per CPU, not on the workload
    #: the legacy hardware event a core PMU's sysfs event stands for (perf's alternate_hw_config)
    alternate_hw: int | None = None
    cpus: tuple[int, ...] | None = None  # the PMU's CPUs where they are not all (cpu_core, uncore)


class Resolution(Slotted):
    evsels: tuple[BaseEvsel, ...]
    diagnostics: tuple[Diagnostic, ...]
    #: the event breaks a system-independent rule (reported by the parser's rules, not here)
    invalid: bool = False

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


# --------------------------------------------------------------------------------------------
# public entry points


def check_semantics(events: EventList, system: System, mode: Mode = "record",
                    release: Release = LATEST) -> list[Diagnostic]:
    """Every semantic finding about ``events`` against ``system``: unknown PMUs, aliases, terms,
    tracepoints, format ranges, CPUs, and (``mode="stat"``) terms perf stat does not take. BPF
    events are left to the BPF object checks. Findings are ordered left to right."""
    out: list[Diagnostic] = []
    for event in events.events():
        out.extend(mode_diagnostics(event, mode, release))
        if isinstance(event, BpfEvent):
            continue
        out.extend(resolve_event(event, system, release).diagnostics)
    out.sort(key=lambda d: d.span.start)
    return out


def mode_diagnostics(event: Event, mode: Mode, release: Release = LATEST) -> list[Diagnostic]:
    """``'TERM' is not usable in 'perf stat'`` for each keyword term perf stat drops."""
    if mode != "stat":
        return []
    terms = getattr(event, "terms", None)
    out = []
    for term in terms.items if terms is not None else ():
        if isinstance(term, Term) and term.kind is TermKind.KEYWORD and term.key not in release.stat_terms and \
                term.key not in lexicon.LEGACY_CONFIG_TERMS:  # a PMU's own terms: perf stat takes them
            kept = ",".join(t for t in lexicon.KEYWORD_TERMS if t in release.stat_terms)
            out.append(
                error(
                    "EM012",
                    f"term '{term.key}' is not usable in 'perf stat'",
                    term.key_span,
                    help=(f"perf stat takes only the terms {kept} (and PMU format terms)",),
                    perf_message=f"'{term.key}' is not usable in 'perf stat'",
                )
            )
    return out


def resolve_event(event: Event, system: System | None, release: Release = LATEST) -> Resolution:
    """The evsels ``event`` creates on ``system`` under perf ``release`` (system None: only
    system-independent kinds resolve, built-in names from the symbol tables)."""
    if isinstance(event, RawEvent):
        return _with_cpus(_numeric(event, A.PERF_TYPE_RAW, event.code.value, system, release), event, system, release)
    if isinstance(event, NumericEvent):
        return _with_cpus(_numeric(event, event.type.value & 0xFFFFFFFF, event.config.value, system, release),
                          event, system, release)
    if isinstance(event, BreakpointEvent):
        return _with_cpus(Resolution((_breakpoint(event),), ()), event, system, release)
    if isinstance(event, TracepointEvent):
        return _tracepoint(event, system)
    if system is not None and release.tool_pmu:  # perf 7.2+: named events are PMU events
        pmus = perf_pmus(system, release)
        if isinstance(event, PmuEventNode):
            return _with_cpus(_pmu_or_event(event, pmus), event, system, release)
        if isinstance(event, CacheEvent) and any(d.is_error for d in cache_name_findings(event)):
            return Resolution((), (), invalid=True)  # the syntax rules report the name
        if isinstance(event, (SymbolEvent, CacheEvent, AliasEvent)):
            return _with_cpus(_named_event(event, event.name, getattr(event, "terms", None), pmus),
                              event, system, release)
    if isinstance(event, SymbolEvent):
        return _symbol(event, system, release)
    if isinstance(event, CacheEvent):
        return _cache(event, system, release)
    if isinstance(event, PmuEventNode):
        return _pmu_event(event, system, release)
    if isinstance(event, AliasEvent):
        return _alias_event(event, system)
    raise TypeError(f"resolve_event: {type(event).__name__} is resolved by the BPF loader")


@lru_cache(maxsize=8)
def perf_pmus(system: System, release: Release) -> PerfPmus:
    """``system``'s PMUs as ``release`` sees them (one view per system and release)."""
    return PerfPmus(system, release)


def _with_cpus(resolution: Resolution, event: Event, system: System | None, release: Release) -> Resolution:
    """The CPUs of the event's ``cpu=`` terms on each evsel (perf 7.2+), or their findings."""
    terms = getattr(event, "terms", None)
    cpu_terms = [t for t in (terms.items if terms is not None else ())
                 if isinstance(t, Term) and t.kind is TermKind.KEYWORD and t.key == "cpu"]
    if not cpu_terms or system is None or not release.takes_term("cpu"):
        return resolution
    cpus: set[int] = set()
    diags = list(resolution.diagnostics)
    possible = system.possible_cpus()
    for term in cpu_terms:
        value = term.value
        if value is None or isinstance(value, Number):
            number = 1 if value is None else value.value
            if number >= len(possible):
                diags.append(error(
                    "EM016", f"cpu={number} is not a CPU of this system (it has {len(possible)})",
                    term.span if value is None else value.span, perf_message="too big",
                    help=(f"CPUs are 0 to {len(possible) - 1} here",)))
            cpus.add(number)
            continue
        if not isinstance(value, Word):
            continue
        pmu = perf_pmus(system, release).find(value.text)
        if pmu is not None:
            listed = pmu.cpus or pmu.cpumask
            cpus.update(parse_cpu_list(listed) if listed else possible)
            continue
        try:
            cpus.update(parse_cpu_list(value.text))
        except ValueError:
            diags.append(error(
                "EM017", f"cpu={value.text}: no PMU is named so, and it is no CPU list", value.span,
                perf_message="not a valid PMU or CPU number",
                help=("cpu= takes a CPU number, a CPU list such as 0-3 or '0,2', or a PMU name (its CPUs)",)))
    if any(d.is_error for d in diags):
        return Resolution(resolution.evsels, tuple(diags), resolution.invalid)
    chosen = tuple(sorted(cpus))
    return Resolution(tuple(replace(e, cpus=chosen) for e in resolution.evsels), tuple(diags), resolution.invalid)


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
            notes=("perf stat shows it as <not supported>; perf record samples a software clock in place of "
                   "cycles and cannot open the others ('evspec explain WM001')",),
        ),
    )


def _per_core_pmu(base: BaseEvsel, system: System | None, release: Release, *,
                  every_pmu: bool = False) -> tuple[BaseEvsel, ...]:
    """A hardware, cache or raw event on a machine with several core PMUs: perf 6.1 makes one
    evsel per core PMU (the PMU's type in config bits 32-63, or as the type of a raw event);
    later releases do so for hardware events where the kernel takes the extended type, for cache
    events always (``every_pmu``: the type bits only where the kernel takes them), and open a raw
    event once, on the PMU of type 4."""
    if system is None:
        return (base,)
    pmus = perf_pmus(system, release)
    if not pmus.multiple_core:
        return (base,)
    out = []
    for pmu in pmus.core:
        if base.type in (A.PERF_TYPE_HARDWARE, A.PERF_TYPE_HW_CACHE):
            extended = release.hybrid_raw_per_pmu or pmus.extended_type
            if extended or every_pmu:
                bits = pmu.type << A.PERF_PMU_TYPE_SHIFT if extended else 0
                out.append(replace(base, config=base.config | bits, pmu=pmu.name, cpus=_pmu_cpus(pmu)))
            else:
                return (base,)
        elif base.type == A.PERF_TYPE_RAW and release.hybrid_raw_per_pmu:
            out.append(replace(base, type=pmu.type, pmu=pmu.name, cpus=_pmu_cpus(pmu)))
        else:
            return (base,)
    return tuple(out)


def _pmu_cpus(pmu: Pmu) -> tuple[int, ...] | None:
    listed = pmu.cpus or pmu.cpumask
    return parse_cpu_list(listed) if listed else None


def _symbol(event: SymbolEvent, system: System | None, release: Release) -> Resolution:
    name = event.name.lower()
    if event.kind is SymbolKind.HARDWARE:
        base = BaseEvsel(event, A.PERF_TYPE_HARDWARE, A.HARDWARE_EVENTS[name])
        base = _config_terms(base, event.terms)
        return Resolution(_per_core_pmu(base, system, release), _no_core_pmu(event, event.name_span, system))
    if event.kind is SymbolKind.SOFTWARE:
        base = BaseEvsel(event, A.PERF_TYPE_SOFTWARE, A.SOFTWARE_EVENTS[name])
        return Resolution((_config_terms(base, event.terms),), ())
    return Resolution((_tool_evsel(event, name, release),), ())


def _tool_evsel(event: Event, name: str, release: Release) -> BaseEvsel:
    """A tool event: the tool PMU's (perf 7.2+), else a software dummy evsel perf reads itself."""
    if release.tool_pmu:
        return BaseEvsel(event, PERF_PMU_TYPE_TOOL, release.tool_events.index(name) + 1, tool=True, pmu="tool")
    return BaseEvsel(event, A.PERF_TYPE_SOFTWARE, A.PERF_COUNT_SW_DUMMY, tool=True)


def _cache(event: CacheEvent, system: System | None, release: Release) -> Resolution:
    try:
        config = A.cache_config(event.cache_type, event.parts)
    except ValueError:
        return Resolution((), (), invalid=True)
    base = BaseEvsel(event, A.PERF_TYPE_HW_CACHE, config, fixed_name=event.name)
    base = _config_terms(base, event.terms)
    return Resolution(_per_core_pmu(base, system, release, every_pmu=True),
                      _no_core_pmu(event, event.name_span, system))


def _numeric(event: RawEvent | NumericEvent, type_: int, config: int, system: System | None,
             release: Release) -> Resolution:
    base = _config_terms(BaseEvsel(event, type_, config), event.terms)
    if system is not None and release.placeholder_core_pmu:
        pmu = perf_pmus(system, release).by_type(type_)
        if pmu is not None:
            base = replace(base, pmu=pmu.name, cpus=_pmu_cpus(pmu))
    if type_ in (A.PERF_TYPE_RAW, A.PERF_TYPE_HARDWARE, A.PERF_TYPE_HW_CACHE):
        span = event.span if isinstance(event, RawEvent) else event.type.span
        # perf 6.1 opens a raw or numeric hardware event on every core PMU; later releases once
        evsels = _per_core_pmu(base, system, release) if release.hybrid_raw_per_pmu else (base,)
        return Resolution(evsels, _no_core_pmu(event, span, system))
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


def _tracefs_error(exc: TracefsUnavailable, event: TracepointEvent) -> Diagnostic:
    perf_help = None if exc.denied is None else (
        f"Error:\tNo permissions to read {exc.denied}/events/{event.system}/{event.event}\n"
        f"Hint:\tTry 'sudo mount -o remount,mode=755 {exc.denied}/'")
    return error("EM011", exc.reason, event.name_span, help=exc.help, perf_message="can't access trace events",
                 perf_help=perf_help)


def _tracepoint(event: TracepointEvent, system: System | None) -> Resolution:
    if system is None:
        return Resolution((), (_needs_system(f"tracepoint '{event.name}'", event.name_span),))
    try:
        match = system.match_tracepoints(event.system, event.event)
    except TracefsUnavailable as exc:
        return Resolution((), (_tracefs_error(exc, event),))
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
                    help=(*suggestions.for_unknown_tracepoint(event.system, event.event, system),
                          f"list the events of a system with 'evspec list \"{event.system}:*\"'"),
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
            sample_type=A.SAMPLE["RAW"] | A.SAMPLE["TIME"] | A.SAMPLE["CPU"] | A.SAMPLE["PERIOD"],
            fixed_name=f"{sys_name}:{ev_name}",
            tracepoint=(sys_name, ev_name),
        )
        for sys_name, ev_name, tp_id in match.found
    )
    return Resolution(evsels, ())


# --------------------------------------------------------------------------------------------
# PMU events and aliases


def _unknown_pmu(name: str, span: Span, system: System) -> Diagnostic:
    return error(
        "EM001",
        f"unknown PMU '{name}'",
        span,
        help=(*suggestions.for_unknown_pmu(name, system), "list the PMUs and their events with 'evspec list pmu'"),
        perf_message=f"Cannot find PMU `{name}'. Missing kernel support?",
    )


def _pmu_event(event: PmuEventNode, system: System | None, release: Release) -> Resolution:
    """``NAME/terms/`` as perf 6.1 and 6.12 resolve it: an alias with terms, a PMU, a PMU
    wildcard (6.12: a hardware or cache name among the terms is that core PMU's legacy event)."""
    if system is None:
        return Resolution((), (_needs_system(f"PMU event '{event.pmu}/.../'", event.name_span),))
    view = perf_pmus(system, release) if release.legacy_events_on_core_pmus else None
    with_alias = system.pmus_with_alias(event.pmu)
    if with_alias:
        alias_term = Term(TermKind.USER, event.pmu, None, event.name_span, event.name_span)
        return _on_pmus([p for p, _ in with_alias], event, (alias_term, *event.terms.items), view)
    pmu = view.find(event.pmu) if view is not None else system.pmu(event.pmu)
    if pmu is not None:
        alone = _hybrid_single_term_event(event, pmu, system, release)
        if alone is not None:
            return alone
        return _on_pmus([pmu], event, event.terms.items, view)
    matching = view.wildcard(event.pmu) if view is not None else system.pmus_matching(event.pmu)
    if matching:
        return _on_pmus(list(matching), event, event.terms.items, view)
    return Resolution((), (_unknown_pmu(event.pmu, event.name_span, system),))


def _hybrid_single_term_event(event: PmuEventNode, pmu: Pmu, system: System, release: Release) -> Resolution | None:
    """perf 6.1's ``cpu_core/LLC-loads/``: on a hybrid PMU, a lone bare term that is no alias of
    it is parsed as an event string of its own, restricted to that PMU (hardware and cache names:
    the legacy event with the PMU's type in config bits 32-63)."""
    items = event.terms.items
    if not (release.hybrid_pmu_single_term_event and pmu.is_hybrid and len(items) == 1):
        return None
    term = items[0]
    if not isinstance(term, Term) or term.kind is not TermKind.USER or term.value is not None:
        return None
    if pmu.alias(term.key) is not None or pmu.format(term.key) is not None:
        return None
    kind = lexicon.classify_word(term.key)
    if kind is SymbolKind.HARDWARE:
        config = A.HARDWARE_EVENTS[lexicon.symbol_name(term.key)]
        base = BaseEvsel(event, A.PERF_TYPE_HARDWARE, config | pmu.type << A.PERF_PMU_TYPE_SHIFT, pmu=pmu.name)
    elif isinstance(kind, lexicon.CacheWord):
        try:
            config = A.cache_config(kind.cache_type, kind.parts)
        except ValueError:
            return None
        base = BaseEvsel(event, A.PERF_TYPE_HW_CACHE, config | pmu.type << A.PERF_PMU_TYPE_SHIFT, pmu=pmu.name,
                         fixed_name=term.key)
    else:
        return None
    return Resolution((replace(base, cpus=_pmu_cpus(pmu)),), _no_core_pmu(event, event.name_span, system))


def _alias_event(event: AliasEvent, system: System | None) -> Resolution:
    if system is None:
        return Resolution((), (_needs_system(f"PMU event alias '{event.name}'", event.name_span),))
    with_alias = system.pmus_with_alias(event.name)
    if not with_alias:
        return Resolution((), (_unknown_event(event.name, event.name_span, system),))
    alias_term = Term(TermKind.USER, event.name, None, event.name_span, event.name_span)
    return _on_pmus([p for p, _ in with_alias], event, (alias_term,))


def _unknown_event(name: str, span: Span, system: System) -> Diagnostic:
    return error(
        "EM002",
        f"unknown event '{name}' (not an event name or a PMU alias here)",
        span,
        help=(*suggestions.for_unknown_event(name, system), "list the events with 'evspec list'"),
        perf_message="Bad event name",
        perf_help=f"Unable to find event on a PMU of '{name}'",
    )


def _pmu_or_event(event: PmuEventNode, pmus: PerfPmus) -> Resolution:
    """``NAME/terms/`` as perf 7.2+ resolves it: the PMU NAME (default_core, tool and the
    placeholder cpu included), else the PMUs NAME matches as a wildcard, else the event NAME with
    these terms on every PMU that has it."""
    pmu = pmus.find(event.pmu)
    if pmu is not None:
        found = _on_pmus([pmu], event, event.terms.items, pmus)
        if found.ok and pmus.is_placeholder(pmu):
            return Resolution(found.evsels, _no_core_pmu(event, event.name_span, pmus.system))
        if found.ok or not pmus.with_event(event.pmu):
            return found
    matching = tuple(p for p in pmus.wildcard(event.pmu) if p.name != event.pmu)
    if matching:
        return _on_pmus(list(matching), event, event.terms.items, pmus)
    if pmus.with_event(event.pmu):
        return _named_event(event, event.pmu, event.terms, pmus)
    return Resolution((), (_unknown_pmu(event.pmu, event.name_span, pmus.system),))


def _named_event(event: Event, name: str, terms: Terms | None, pmus: PerfPmus) -> Resolution:
    """An event name (``cycles``, ``cpu-clock``, ``tsc``, ``L1-dcache-loads``) with its terms,
    as perf 7.2+ adds it: on every PMU that has the event, in perf's scan order."""
    found = pmus.with_event(name)
    span = getattr(event, "name_span", event.span)
    if not found:
        return Resolution((), (_unknown_event(name, span, pmus.system),))
    name_term = Term(TermKind.USER, name, None, span, span)
    resolution = _on_pmus([p for p, _ in found], event, (name_term, *(terms.items if terms else ())), pmus)
    if resolution.ok and all(pmus.is_placeholder(p) for p, _ in found) and any(
            e.type in (A.PERF_TYPE_HARDWARE, A.PERF_TYPE_HW_CACHE) for e in resolution.evsels):
        return Resolution(resolution.evsels, _no_core_pmu(event, span, pmus.system))
    return resolution


def _on_pmus(pmus: Sequence[Pmu], event: Event, terms: Sequence[object], view: PerfPmus | None = None) -> Resolution:
    """Encode ``terms`` for each PMU; keep the PMUs where that works (perf adds an event for each
    success), else report the first PMU's findings. ``view``: the release's PMU view, through
    which a bare term may name one of perf's own events of the PMU (perf 6.12+)."""
    good: list[BaseEvsel] = []
    first_failure: list[Diagnostic] | None = None
    for pmu in pmus:
        evsel, diags = _encode_pmu_terms(pmu, event, terms, view)
        if evsel is not None and not any(d.is_error for d in diags):
            good.append(evsel)
        elif first_failure is None:
            first_failure = diags
    if good:
        return Resolution(tuple(good), ())
    assert first_failure is not None
    return Resolution((), tuple(first_failure))


def _is_alias_reference(pmu: Pmu, term: Term) -> PmuAlias | None:
    """perf's ``pmu_find_alias``: a bare term or ``NAME=1`` that is no format term, or
    ``event=NAME``, names an alias (case-insensitively)."""
    found = _event_reference(None, pmu, term)
    return found.alias if found is not None else None


def _event_reference(view: PerfPmus | None, pmu: Pmu, term: Term) -> PmuEvent | None:
    """The event of ``pmu`` a term names (perf's ``pmu_find_alias``): a bare term or ``NAME=1``
    that is no format term, or ``event=NAME``; through ``view`` perf's own events of the PMU
    too (legacy hardware and cache events of a core PMU, software and tool events)."""
    if term.kind is not TermKind.USER:
        return None
    value = term.value
    if value is None or (isinstance(value, Number) and value.value == 1):
        if pmu.format(term.key) is not None:
            return None
        name = term.key
    elif isinstance(value, Word) and term.key.lower() == "event":
        name = value.text
    else:
        return None
    if view is not None:
        return view.event(pmu, name)
    alias = pmu.alias(name)
    return PmuEvent("alias", alias=alias) if alias is not None else None


def _valid_terms_help(pmu: Pmu) -> str:
    formats = ",".join(sorted(pmu.formats))
    return f"valid terms: {formats},{lexicon.VALID_TERMS_HELP}" if formats else f"valid terms: {lexicon.VALID_TERMS_HELP}"


def _encode_pmu_terms(
    pmu: Pmu, event: Event, terms: Sequence[object], view: PerfPmus | None = None
) -> tuple[BaseEvsel | None, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    fields = {"config": 0, "config1": 0, "config2": 0, "config3": 0, "config4": 0}
    for name in DEFAULT_TERMS.get(pmu.name, ()):  # perf_event_attr_init_default: a PMU's defaults
        fmt = pmu.format(name)
        if fmt is not None:
            fields[fmt.field] |= fmt.encode(1)
    attr_type = pmu.type
    user_terms = [t for t in terms if isinstance(t, Term)]

    # keyword config terms and raw terms assign their field before format terms OR into it
    for term in user_terms:
        if term.kind is TermKind.RAW and isinstance(term.value, Number):
            fields["config"] = term.value.value
        elif term.kind is TermKind.KEYWORD and term.key in CONFIG_TERMS:
            fields[term.key] = term.value.value if isinstance(term.value, Number) else 1
        elif term.kind is TermKind.KEYWORD and term.key in lexicon.LEGACY_CONFIG_TERMS:
            number = term.value.value if isinstance(term.value, Number) else 1
            if view is None or not view.is_core(pmu):
                diags.append(_needs_core_pmu(term, pmu))
                continue
            attr_type = A.PERF_TYPE_HARDWARE if term.key == "legacy-hardware-config" else A.PERF_TYPE_HW_CACHE
            fields["config"] = number | (pmu.type << A.PERF_PMU_TYPE_SHIFT if view.extended_type else 0)

    alias_found: PmuAlias | None = None
    event_found: tuple[Term, PmuEvent] | None = None
    used_params: set[int] = set()
    for term in user_terms:
        found = _event_reference(view, pmu, term)
        if found is None:
            continue
        if event_found is not None:
            first = event_found[0].value.text if event_found[0].key.lower() == "event" and isinstance(
                event_found[0].value, Word) else event_found[0].key
            diags.append(
                error(
                    "EM007",
                    f"second PMU event '{term.key}' in one event (the first is '{first}')",
                    term.span,
                    help=(f"write two events: '{pmu.name}/{first}/,{pmu.name}/{term.key}/'",),
                )
            )
            continue
        event_found = (term, found)
        if found.alias is not None:
            alias_found = found.alias
            diags.extend(_apply_alias(pmu, found.alias, term, user_terms, fields, used_params))
        elif found.kind == "tool":
            attr_type, fields["config"] = PERF_PMU_TYPE_TOOL, found.config
        elif found.kind == "software":
            fields["config"] = found.config
        else:  # a legacy hardware or cache event of this core PMU
            attr_type = A.PERF_TYPE_HARDWARE if found.kind == "hardware" else A.PERF_TYPE_HW_CACHE
            extended = view is not None and view.extended_type
            fields["config"] = found.config | (pmu.type << A.PERF_PMU_TYPE_SHIFT if extended else 0)

    for term in user_terms:
        if term.kind is not TermKind.USER or id(term) in used_params or (
                event_found is not None and term is event_found[0]):
            continue
        if _event_reference(view, pmu, term) is not None:
            continue
        fmt = pmu.format(term.key)
        if fmt is None:
            diags.append(
                error(
                    "EM003",
                    f"unknown term '{term.key}' for PMU '{pmu.name}'",
                    term.key_span,
                    help=(*suggestions.for_unknown_term(term.key, pmu, lexicon.VALID_TERMS_HELP.split(",")),
                          _valid_terms_help(pmu)),
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
    found_event = event_found[1] if event_found is not None else None
    evsel = BaseEvsel(
        event,
        attr_type,
        fields["config"],
        fields["config1"],
        fields["config2"],
        fields["config3"],
        fields["config4"],
        pmu=pmu.name,
        alias=alias_found,
        tool=attr_type == PERF_PMU_TYPE_TOOL,
        system_wide=pmu.cpumask is not None,
        alternate_hw=found_event.alternate_hw if found_event is not None else None,
        cpus=_pmu_cpus(pmu) if pmu.cpus else None,
    )
    return evsel, diags


def _needs_core_pmu(term: Term, pmu: Pmu) -> Diagnostic:
    return error(
        "EM018",
        f"'{term.key}' needs a core PMU ('{pmu.name}' is none)",
        term.value.span if term.value is not None else term.span,
        perf_message="needs a core PMU",
        help=("legacy-hardware-config= and legacy-cache-config= go on a CPU PMU: cpu/legacy-hardware-config=1/",),
    )


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
