"""What ``evspec list [hw|sw|cache|tracepoint|pmu|GLOB]`` shows, like ``perf list``."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from evspec.compiler import attr as A
from evspec.diagnostics import EvspecError
from evspec.system.model import PmuAlias, System, TracefsUnavailable

KINDS = ("hw", "sw", "cache", "tracepoint", "pmu")
_KIND_ALIASES = {"hardware": "hw", "software": "sw", "tool": "sw", "pmus": "pmu", "tracepoints": "tracepoint"}


@dataclass(frozen=True, slots=True)
class ListedEvent:
    name: str
    kind: str  # one of KINDS, or "breakpoint" / "raw"
    description: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "description": self.description}


def list_events(system: System | None, what: str | None = None) -> list[ListedEvent]:
    """The events of one kind (``hw``, ``sw``, ``cache``, ``tracepoint``, ``pmu``), or every event
    whose name matches the glob ``what`` (a plain word matches names containing it), or all.
    Tracepoints and PMU events need a system; without tracefs they are left out."""
    kind = _KIND_ALIASES.get(what or "", what)
    if kind in KINDS:
        return list(_KIND_LISTERS[kind](system))
    everything = [e for lister in _KIND_LISTERS.values() for e in lister(system)]
    everything += _syntax_entries()
    if what is None:
        return everything
    pattern = what if any(c in what for c in "*?[") else f"*{what}*"
    return [e for e in everything if fnmatch.fnmatch(e.name.lower(), pattern.lower())]


def to_json(events: list[ListedEvent]) -> dict[str, Any]:
    return {"events": [e.to_json() for e in events]}


def _hardware(system: System | None) -> list[ListedEvent]:
    by_id: dict[int, list[str]] = {}
    for name, config in A.HARDWARE_EVENTS.items():
        by_id.setdefault(config, []).append(name)
    return [ListedEvent(" OR ".join(names), "hw", "Hardware event") for names in by_id.values()]


def _software(system: System | None) -> list[ListedEvent]:
    by_id: dict[int, list[str]] = {}
    for name, config in A.SOFTWARE_EVENTS.items():
        by_id.setdefault(config, []).append(name)
    out = [ListedEvent(" OR ".join(names), "sw", "Software event") for names in by_id.values()]
    out += [ListedEvent(name, "sw", "Tool event") for name in A.TOOL_EVENTS]
    return out


def _cache(system: System | None) -> list[ListedEvent]:
    return [ListedEvent(name, "cache", "Hardware cache event") for name, _ in A.cache_event_names()]


def _tracepoints(system: System | None) -> list[ListedEvent]:
    if system is None:
        return []
    try:
        return [
            ListedEvent(f"{sys_name}:{event}", "tracepoint", "Tracepoint event")
            for sys_name in sorted(system.tracepoint_systems())
            for event in sorted(system.tracepoint_events(sys_name))
        ]
    except TracefsUnavailable:
        return []


def _pmu_events(system: System | None) -> list[ListedEvent]:
    if system is None:
        return []
    out = []
    for pmu in system.pmus():
        for alias in sorted(pmu.aliases.values(), key=lambda a: a.name):
            details = [alias.definition]
            if alias.unit:
                details.append(f"unit: {alias.unit}")
            if alias.scale:
                details.append(f"scale: {alias.scale}")
            params = _parameters(alias)
            if params:
                details.append("needs: " + ",".join(f"{p}=VALUE" for p in params))
            out.append(
                ListedEvent(f"{pmu.name}/{alias.name}/", "pmu", f"Kernel PMU event ({'; '.join(details)})")
            )
    return out


def _parameters(alias: PmuAlias) -> tuple[str, ...]:
    try:
        return alias.parameters()
    except EvspecError:
        return ()


def _syntax_entries() -> list[ListedEvent]:
    return [
        ListedEvent("rNNN", "raw", "Raw hardware event descriptor"),
        ListedEvent("cpu/t1=v1[,t2=v2,t3 ...]/modifier", "raw", "Raw hardware event descriptor"),
        ListedEvent("mem:<addr>[/len][:access]", "breakpoint", "Hardware breakpoint"),
    ]


_KIND_LISTERS = {
    "hw": _hardware,
    "sw": _software,
    "cache": _cache,
    "tracepoint": _tracepoints,
    "pmu": _pmu_events,
}
