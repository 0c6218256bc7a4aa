"""What ``evspec list [hw|sw|cache|tracepoint|pmu|GLOB]`` shows, like ``perf list``."""

from __future__ import annotations

import fnmatch
from typing import Any

from evspec.compiler import attr as A
from evspec.compiler.runtime import counts_only
from evspec.diagnostics import EvspecError
from evspec.span import Slotted
from evspec.system.model import PmuAlias, System, TracefsUnavailable

KINDS = ("hw", "sw", "cache", "tracepoint", "pmu")
_KIND_ALIASES = {"hardware": "hw", "software": "sw", "tool": "sw", "pmus": "pmu", "tracepoints": "tracepoint"}


class ListedEvent(Slotted):
    """One entry of the list: an event by its name and the other names it goes by (the same
    event), or a ``template`` of a syntax (``rNNN``, ``mem:<addr>``), which is no name.
    ``parameters`` are the terms an alias needs given (``ldlat=VALUE``)."""

    name: str
    kind: str  # one of KINDS, or "breakpoint" / "raw"
    description: str
    aliases: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()
    template: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def label(self) -> str:
        """How perf list shows it: ``cpu-cycles OR cycles``."""
        return " OR ".join(self.names)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "aliases": list(self.aliases), "kind": self.kind,
                               "description": self.description}
        if self.parameters:
            out["parameters"] = list(self.parameters)
        if self.template:
            out["template"] = True
        return out


def list_events(system: System | None, what: str | None = None) -> list[ListedEvent]:
    """The events of one kind (``hw``, ``sw``, ``cache``, ``tracepoint``, ``pmu``), or every event
    whose name matches the glob ``what`` (a plain word matches names containing it), or all.
    What the system cannot count is left out: hardware and cache events (and the raw syntax)
    without a hardware PMU, tracepoints without an id (ftrace's own events); tracepoints and PMU
    events need a system, and are left out without tracefs. Without a system (None) the
    built-in events are all listed."""
    kind = _KIND_ALIASES.get(what or "", what)
    if kind in KINDS:
        return list(_KIND_LISTERS[kind](system))
    everything = [e for lister in _KIND_LISTERS.values() for e in lister(system)]
    everything += _syntax_entries(system)
    if what is None:
        return everything
    pattern = what if any(c in what for c in "*?[") else f"*{what}*"
    return [e for e in everything if any(fnmatch.fnmatch(n.lower(), pattern.lower()) for n in e.names)]


def to_json(events: list[ListedEvent]) -> dict[str, Any]:
    return {"events": [e.to_json() for e in events]}


def _has_core_pmu(system: System | None) -> bool:
    return system is None or bool(system.core_pmus())


def _by_config(table: dict[str, int]) -> list[list[str]]:
    by_id: dict[int, list[str]] = {}
    for name, config in table.items():
        by_id.setdefault(config, []).append(name)
    return list(by_id.values())


def _hardware(system: System | None) -> list[ListedEvent]:
    if not _has_core_pmu(system):
        return []
    return [ListedEvent(names[0], "hw", "Hardware event", tuple(names[1:])) for names in _by_config(A.HARDWARE_EVENTS)]


def _software(system: System | None) -> list[ListedEvent]:
    out = [ListedEvent(names[0], "sw", "Software event", tuple(names[1:])) for names in _by_config(A.SOFTWARE_EVENTS)]
    out += [ListedEvent(name, "sw", "Tool event") for name in A.TOOL_EVENTS]
    return out


def _cache(system: System | None) -> list[ListedEvent]:
    if not _has_core_pmu(system):
        return []
    return [ListedEvent(name, "cache", "Hardware cache event") for name, _ in A.cache_event_names()]


def _tracepoints(system: System | None) -> list[ListedEvent]:
    """The tracepoints that have an id: the ones perf can open (ftrace's own events have none)."""
    if system is None:
        return []
    try:
        return [
            ListedEvent(f"{sys_name}:{event}", "tracepoint", "Tracepoint event")
            for sys_name in sorted(system.tracepoint_systems())
            for event in sorted(system.tracepoint_events(sys_name))
            if system.tracepoint_id(sys_name, event) is not None
        ]
    except TracefsUnavailable:
        return []


def _pmu_events(system: System | None) -> list[ListedEvent]:
    if system is None:
        return []
    out = []
    for pmu in system.pmus():
        counting = counts_only(pmu)
        for alias in sorted(pmu.aliases.values(), key=lambda a: a.name):
            details = [alias.definition]
            if alias.unit:
                details.append(f"unit: {alias.unit}")
            if alias.scale:
                details.append(f"scale: {alias.scale}")
            params = _parameters(alias)
            if params:
                details.append("needs: " + ",".join(f"{p}=VALUE" for p in params))
            if counting:
                details.append("counting only: perf stat counts it, perf record cannot sample it")
            out.append(ListedEvent(f"{pmu.name}/{alias.name}/", "pmu", f"Kernel PMU event ({'; '.join(details)})",
                                   parameters=params))
    return out


def _parameters(alias: PmuAlias) -> tuple[str, ...]:
    try:
        return alias.parameters()
    except EvspecError:
        return ()


def _syntax_entries(system: System | None) -> list[ListedEvent]:
    raw = [
        ListedEvent("rNNN", "raw", "Raw hardware event descriptor", template=True),
        ListedEvent("cpu/t1=v1[,t2=v2,t3 ...]/modifier", "raw", "Raw hardware event descriptor", template=True),
    ]
    return [*(raw if _has_core_pmu(system) else []),
            ListedEvent("mem:<addr>[/len][:access]", "breakpoint", "Hardware breakpoint", template=True)]


_KIND_LISTERS = {
    "hw": _hardware,
    "sw": _software,
    "cache": _cache,
    "tracepoint": _tracepoints,
    "pmu": _pmu_events,
}
