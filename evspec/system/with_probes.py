"""A system in which the probes ``evspec record`` will create (uprobes, kprobes of an object's
programs) already exist as tracepoints, so that ``evspec compile`` can plan their events before
they exist."""

from __future__ import annotations

from evspec.system.model import Features, Pmu, System


class WithProbes(System):
    """``system``, where the probes record will create exist as tracepoints (id 0: unknown yet)."""

    def __init__(self, system: System, probes: set[str]) -> None:
        self._system = system
        self._probes: dict[str, set[str]] = {}
        for name in probes:
            group, _, event = name.partition(":")
            self._probes.setdefault(group, set()).add(event)

    def pmu_names(self) -> tuple[str, ...]:
        return self._system.pmu_names()

    def pmu(self, name: str) -> Pmu | None:
        return self._system.pmu(name)

    def tracepoint_systems(self) -> tuple[str, ...]:
        known = self._system.tracepoint_systems()
        return known + tuple(g for g in self._probes if g not in known)

    def tracepoint_events(self, system: str) -> tuple[str, ...]:
        events = self._system.tracepoint_events(system) if system in self._system.tracepoint_systems() else ()
        return events + tuple(sorted(self._probes.get(system, set()) - set(events)))

    def tracepoint_id(self, system: str, event: str) -> int | None:
        if event in self._probes.get(system, ()):
            return 0
        return self._system.tracepoint_id(system, event)

    def possible_cpus(self) -> tuple[int, ...]:
        return self._system.possible_cpus()

    def features(self) -> Features:
        return self._system.features()

    @property
    def cwd(self) -> str:
        return self._system.cwd

    def file_exists(self, path: str) -> bool:
        return self._system.file_exists(path)
