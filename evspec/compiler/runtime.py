"""What perf does at run time with an event the described machine cannot count or sample, per tool:
``perf record`` (per task and with ``-a``) and ``perf stat``. The string is valid and its names
resolve (the semantic checks say so); these findings say whether perf then fails, drops the event,
swaps it for another, or counts nothing:

- no hardware PMU (a VM without PMU passthrough): hardware, cache and raw events cannot be
  opened. ``cycles`` in perf record becomes a software clock without a word (WM001); every other
  one makes perf record fail (EM030). perf stat shows it as ``<not supported>`` (WM001), but a
  group it leads is not counted at all (EM031).
- a PMU that only counts (msr, power, cstate, uncore: their kernel drivers refuse a sampling
  event) cannot be sampled by perf record, per task nor with -a (EM032).

Facts observed on such a machine with perf 6.1 and perf 7.2 (tests/data/perf_runtime/).
"""

from __future__ import annotations

from evspec.ast import (
    AliasEvent,
    CacheEvent,
    Event,
    EventList,
    Group,
    NumericEvent,
    PmuEvent,
    RawEvent,
    SymbolEvent,
)
from evspec.compiler import attr as A
from evspec.diagnostics import Diagnostic, error, warning
from evspec.span import Span
from evspec.system.model import Pmu, System

NO_HARDWARE_PMU = "WM001"
NOT_OPENED_BY_RECORD = "EM030"
GROUP_NOT_COUNTED = "EM031"
NOT_SAMPLED = "EM032"
#: every code of this module: findings about a valid string's fate on the machine, not its validity
CODES = (NO_HARDWARE_PMU, NOT_OPENED_BY_RECORD, GROUP_NOT_COUNTED, NOT_SAMPLED)

#: PMUs whose kernel drivers refuse sampling events; any PMU with a cpumask (uncore) too
COUNTING_ONLY = frozenset({"msr", "power", "cstate_core", "cstate_pkg", "cstate_module"})

_CORE_TYPES = (A.PERF_TYPE_HARDWARE, A.PERF_TYPE_HW_CACHE, A.PERF_TYPE_RAW)
_RECORD_FALLBACK = ("perf 6.1 samples cpu-clock instead, perf 7.x task-clock (cpu-clock with -a), "
                    "and says so only with -v")


def runtime_findings(events: EventList, system: System, mode: str) -> list[Diagnostic]:
    """The run-time findings about ``events`` on ``system`` for perf ``mode`` (record or stat)."""
    has_core = bool(system.core_pmus())
    out: list[Diagnostic] = []
    for item in events.items:
        members = item.events if isinstance(item, Group) else (item,)
        for position, event in enumerate(members):
            leads = isinstance(item, Group) and position == 0 and len(members) > 1
            if not has_core and _needs_core_pmu(event):
                out.append(_no_core(event, mode, leads, events.source))
            elif mode == "record":
                pmu = _counting_pmu(event, system)
                if pmu is not None:
                    out.append(_not_sampled(event, pmu, events.source))
    return out


def _needs_core_pmu(event: Event) -> bool:
    if isinstance(event, (CacheEvent, RawEvent)):
        return True
    if isinstance(event, SymbolEvent):
        return event.name in A.HARDWARE_EVENTS
    if isinstance(event, NumericEvent):
        return event.type.value in _CORE_TYPES
    return False


def _is_cycles(event: Event) -> bool:
    """perf's evsel__fallback test: the attr is PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES."""
    if isinstance(event, SymbolEvent):
        return A.HARDWARE_EVENTS.get(event.name) == 0
    return isinstance(event, NumericEvent) and event.type.value == A.PERF_TYPE_HARDWARE and event.config.value == 0


def _name_span(event: Event) -> Span:
    if isinstance(event, (SymbolEvent, CacheEvent)):
        return event.name_span
    if isinstance(event, NumericEvent):
        return Span(event.type.span.start, event.config.span.end)
    return event.span


def _no_core(event: Event, mode: str, leads: bool, source: str) -> Diagnostic:
    span = _name_span(event)
    text = source[event.span.start:event.span.end]
    perf_says = f"The {text} event is not supported."
    name = f"'{text}'"
    stat = "perf stat shows it as <not supported> (perf 7.x fails, 'No supported events found.', when no event " \
           "of the command can be counted)"
    if mode == "stat":
        if leads:
            return error(GROUP_NOT_COUNTED, f"this system has no hardware PMU: perf stat cannot count the group "
                                             f"{name} leads", span,
                         help=("put an event this machine can count first, or count it outside the group",),
                         notes=(f"perf 6.1 fails ('{perf_says}', exit 255); perf 7.x counts no event of the "
                                "group",),
                         perf_message=perf_says)
        return warning(NO_HARDWARE_PMU, f"this system has no hardware PMU: {name} cannot be counted here", span,
                       notes=(stat,), help=("count software events here (cpu-clock, task-clock)",))
    if _is_cycles(event):
        return warning(NO_HARDWARE_PMU, f"this system has no hardware PMU: perf record samples a software clock "
                                        f"in place of {name}", span,
                       notes=(_RECORD_FALLBACK,),
                       help=("write the clock you want (cpu-clock, task-clock)",))
    return error(NOT_OPENED_BY_RECORD, f"this system has no hardware PMU: perf record cannot open {name}", span,
                 help=("record software events here (cpu-clock, task-clock), or count it with perf stat "
                       "(--mode stat) where it shows as <not supported>",),
                 notes=("perf 6.1 fails (exit 255), per task and with -a; perf 7.x drops the event, records the "
                        "others, and fails when none is left",),
                 perf_message=perf_says)


def _counting_pmu(event: Event, system: System) -> Pmu | None:
    """The PMU that only counts an event is on, if it is on one."""
    if isinstance(event, PmuEvent):
        names = [event.pmu]
    elif isinstance(event, AliasEvent):
        names = [pmu.name for pmu, _ in system.pmus_with_alias(event.name)]
    else:
        return None
    for name in names:
        pmu = system.pmu(name)
        if pmu is None and isinstance(event, PmuEvent):
            matching = system.pmus_matching(event.pmu)
            pmu = matching[0] if matching else None
        if pmu is not None and counts_only(pmu):
            return pmu
    return None


def counts_only(pmu: Pmu) -> bool:
    """Whether the kernel refuses a sampling event of ``pmu``: perf stat counts its events,
    perf record cannot sample them."""
    return pmu.name in COUNTING_ONLY or pmu.cpumask is not None or pmu.name.startswith("uncore_")


def _not_sampled(event: Event, pmu: Pmu, source: str) -> Diagnostic:
    text = source[event.span.start:event.span.end]
    return error(NOT_SAMPLED, f"PMU '{pmu.name}' only counts: perf record cannot sample '{text}'", event.span,
                 help=("count it with perf stat (--mode stat)",),
                 notes=(f"per task perf says \"Invalid event ({text}) in per-thread mode, enable system wide with "
                        f"'-a'.\", and with -a the kernel refuses it too (EINVAL): perf 6.1 fails (exit 255), "
                        "perf 7.x drops the event, records the others, and fails when none is left",),
                 perf_message=f"Invalid event ({text}) in per-thread mode, enable system wide with '-a'.")
