"""What a described system offers in place of a name it does not have: the help lines of the
semantic checks (``resolve``) for an unknown event, tracepoint, PMU or term, made of the nearest
names of that system (``evspec.suggest`` measures the distance).
"""

from __future__ import annotations

from evspec.compiler.attr import cache_event_names
from evspec.suggest import builtin_event_names, closest, did_you_mean, hex_problem
from evspec.system.model import TracefsUnavailable, is_glob

TYPE_CHECKING = False  # imports for annotations only
if TYPE_CHECKING:
    from collections.abc import Iterable

    from evspec.system.model import Pmu, System


def for_unknown_event(name: str, system: System) -> tuple[str, ...]:
    """Help lines for a word that is no event here: why it is no raw event, the nearest built-in
    events and PMU aliases, and the tracepoints of that name (written without ``SYSTEM:``)."""
    lines = []
    problem = hex_problem(name)
    if problem is not None:
        lines.append(problem)
    aliases = [a.name for pmu in system.pmus() for a in pmu.aliases.values()]
    candidates = [*builtin_event_names(), *(n for n, _ in cache_event_names()), *aliases]
    near = did_you_mean(closest(name, candidates))
    if near is not None:
        lines.append(near)
    tracepoints = _tracepoints_named(name, system)
    if tracepoints:
        lines.append(f"a tracepoint is written SYSTEM:EVENT: {did_you_mean(tracepoints)}")
    return tuple(lines)


def _tracepoints_named(event: str, system: System) -> list[str]:
    try:
        return [f"{s}:{event}" for s in system.tracepoint_systems() if system.tracepoint_id(s, event) is not None][:3]
    except TracefsUnavailable:
        return []


def for_unknown_tracepoint(trace_system: str, event: str, system: System) -> tuple[str, ...]:
    """Help lines for ``SYSTEM:EVENT`` that is no tracepoint here: the nearest events of that
    system, or of the nearest systems when there is no such system."""
    if is_glob(trace_system) or is_glob(event):
        return ()
    try:
        if system.has_tracepoint_system(trace_system):
            found = [f"{trace_system}:{e}" for e in closest(event, system.tracepoint_events(trace_system))]
        else:
            found = []
            for near in closest(trace_system, system.tracepoint_systems()):
                events = system.tracepoint_events(near)
                found += [f"{near}:{e}" for e in ([event] if event in events else closest(event, events))]
    except TracefsUnavailable:
        return ()
    near_text = did_you_mean(found[:3])
    return (near_text,) if near_text is not None else ()


def for_unknown_pmu(name: str, system: System) -> tuple[str, ...]:
    near = did_you_mean(closest(name, system.pmu_names()))
    return (near,) if near is not None else ()


def for_unknown_term(term: str, pmu: Pmu, static_terms: Iterable[str]) -> tuple[str, ...]:
    """``did you mean 'tsc'?`` among the PMU's format terms, its aliases and the built-in terms."""
    near = did_you_mean(closest(term, [*pmu.formats, *(a.name for a in pmu.aliases.values()), *static_terms]))
    return (near,) if near is not None else ()
