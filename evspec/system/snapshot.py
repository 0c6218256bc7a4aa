"""System descriptions as data: write a snapshot of a system, read one back, pick a system by name.

The snapshot is JSON::

    {"evspec_system": 1,
     "pmus": {"msr": {"type": 10, "format": {"event": "config:0-63"},
                      "events": {"tsc": {"definition": "event=0x00", "unit": null, "scale": null,
                                         "per_pkg": false, "snapshot": false}},
                      "cpus": null, "cpumask": null}},
     "tracefs": {"available": true, "reason": null, "help": [],
                 "events": {"sched": {"sched_switch": 372}}},
     "cpus": "0-1",
     "features": {"kernel_release": "6.1.0", "kprobe_events": false, "uprobe_events": true,
                  "btf_vmlinux": true},
     "cwd": "/home/me/project", "confine_files": false}

Files named in event strings are looked up on the machine that runs the check, relative to the
working directory (a snapshot describes the kernel of another machine, not the repository being
checked); ``confine_files`` makes everything outside ``cwd`` count as missing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evspec.system.model import (
    Features,
    FormatField,
    Pmu,
    PmuAlias,
    System,
    TracefsUnavailable,
    parse_cpu_list,
    parse_format,
)

SNAPSHOT_VERSION = 1


class SnapshotError(ValueError):
    """A snapshot file that cannot be used (bad JSON, wrong shape, unknown version)."""


class SnapshotSystem(System):
    """A system read from snapshot data (a parsed JSON document)."""

    def __init__(self, data: Mapping[str, Any], *, cwd: str | None = None) -> None:
        if data.get("evspec_system") != SNAPSHOT_VERSION:
            raise SnapshotError(
                f"not an evspec system snapshot of version {SNAPSHOT_VERSION} "
                f"(evspec_system = {data.get('evspec_system')!r})"
            )
        self.notes = []
        self._data = data
        self._cwd = cwd if cwd is not None else (data.get("cwd") or os.getcwd())
        self._confine = bool(data.get("confine_files", False))
        self._pmus: dict[str, Pmu] = {}
        tracefs = data.get("tracefs") or {}
        self._tracefs_available = bool(tracefs.get("available", False))
        self._tracefs_reason = tracefs.get("reason") or "tracefs not available"
        self._tracefs_help = tuple(tracefs.get("help") or ())
        self._tracepoints: Mapping[str, Mapping[str, int]] = tracefs.get("events") or {}

    # ---- PMUs

    def pmu_names(self) -> tuple[str, ...]:
        return tuple(sorted(self._data.get("pmus", {})))

    def pmu(self, name: str) -> Pmu | None:
        if name in self._pmus:
            return self._pmus[name]
        raw = self._data.get("pmus", {}).get(name)
        if raw is None:
            return None
        try:
            pmu = _pmu_from_json(name, raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise SnapshotError(f"PMU {name!r}: {exc}") from exc
        self._pmus[name] = pmu
        return pmu

    # ---- tracepoints

    def _require_tracefs(self) -> None:
        if not self._tracefs_available:
            raise TracefsUnavailable(self._tracefs_reason, self._tracefs_help)

    def tracepoint_systems(self) -> tuple[str, ...]:
        self._require_tracefs()
        return tuple(self._tracepoints)

    def has_tracepoint_system(self, system: str) -> bool:
        self._require_tracefs()
        return system in self._tracepoints

    def tracepoint_events(self, system: str) -> tuple[str, ...]:
        self._require_tracefs()
        return tuple(self._tracepoints.get(system, {}))

    def tracepoint_id(self, system: str, event: str) -> int | None:
        self._require_tracefs()
        value = self._tracepoints.get(system, {}).get(event)
        return int(value) if value is not None else None

    # ---- CPUs, features, files

    def possible_cpus(self) -> tuple[int, ...]:
        return parse_cpu_list(self._data.get("cpus", "0"))

    def features(self) -> Features:
        f = self._data.get("features") or {}
        return Features(
            kernel_release=str(f.get("kernel_release", "")),
            kprobe_events=bool(f.get("kprobe_events", False)),
            uprobe_events=bool(f.get("uprobe_events", False)),
            btf_vmlinux=bool(f.get("btf_vmlinux", False)),
        )

    @property
    def cwd(self) -> str:
        return self._cwd

    def file_exists(self, path: str) -> bool:
        full = os.path.normpath(os.path.join(self._cwd, path))
        if self._confine:
            base = os.path.normpath(self._cwd)
            if os.path.commonpath([base, full]) != base:
                return False
        return os.path.isfile(full)


def _pmu_from_json(name: str, raw: Mapping[str, Any]) -> Pmu:
    formats = {term: parse_format(term, text) for term, text in (raw.get("format") or {}).items()}
    aliases = {}
    for alias_name, a in (raw.get("events") or {}).items():
        aliases[alias_name.lower()] = PmuAlias(
            name=alias_name,
            definition=a["definition"],
            unit=a.get("unit"),
            scale=a.get("scale"),
            per_pkg=bool(a.get("per_pkg", False)),
            snapshot=bool(a.get("snapshot", False)),
        )
    return Pmu(name, int(raw["type"]), formats, aliases, raw.get("cpus"), raw.get("cpumask"))


def _format_json(f: FormatField) -> str:
    return f.text()


def snapshot(system: System) -> dict[str, Any]:
    """Everything the checks read from ``system``, as JSON-ready data."""
    pmus: dict[str, Any] = {}
    for pmu in system.pmus():
        pmus[pmu.name] = {
            "type": pmu.type,
            "format": {name: _format_json(f) for name, f in sorted(pmu.formats.items())},
            "events": {
                a.name: {
                    "definition": a.definition,
                    "unit": a.unit,
                    "scale": a.scale,
                    "per_pkg": a.per_pkg,
                    "snapshot": a.snapshot,
                }
                for a in sorted(pmu.aliases.values(), key=lambda a: a.name)
            },
            "cpus": pmu.cpus,
            "cpumask": pmu.cpumask,
        }
    try:
        events: dict[str, dict[str, int]] = {}
        for sys_name in system.tracepoint_systems():
            ids = {}
            for ev in system.tracepoint_events(sys_name):
                tp_id = system.tracepoint_id(sys_name, ev)
                if tp_id is not None:
                    ids[ev] = tp_id
            events[sys_name] = ids
        tracefs: dict[str, Any] = {"available": True, "reason": None, "help": [], "events": events}
    except TracefsUnavailable as exc:
        tracefs = {"available": False, "reason": exc.reason, "help": list(exc.help), "events": {}}
    f = system.features()
    return {
        "evspec_system": SNAPSHOT_VERSION,
        "pmus": pmus,
        "tracefs": tracefs,
        "cpus": _cpu_list_text(system.possible_cpus()),
        "features": {
            "kernel_release": f.kernel_release,
            "kprobe_events": f.kprobe_events,
            "uprobe_events": f.uprobe_events,
            "btf_vmlinux": f.btf_vmlinux,
        },
        "cwd": system.cwd,
        "confine_files": False,
    }


def _cpu_list_text(cpus: tuple[int, ...]) -> str:
    parts: list[str] = []
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(f"{cpus[i]}-{cpus[j]}" if j > i else f"{cpus[i]}")
        i = j + 1
    return ",".join(parts)


def snapshot_text(system: System) -> str:
    """The snapshot file's text. Not sort_keys: trace systems and events keep the machine's
    directory order (perf's glob order); everything else is sorted by ``snapshot`` already."""
    return json.dumps(snapshot(system), indent=1) + "\n"


def write_snapshot(system: System, path: str | os.PathLike[str]) -> None:
    Path(path).write_text(snapshot_text(system))


def read_snapshot(path: str | os.PathLike[str], *, cwd: str | None = None) -> SnapshotSystem:
    """Load a snapshot file; relative paths in event strings resolve against ``cwd`` (default:
    the current directory of the process, not the one recorded in the file)."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise SnapshotError(f"cannot read system snapshot {os.fspath(path)!r}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"system snapshot {os.fspath(path)!r} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise SnapshotError(f"system snapshot {os.fspath(path)!r} is not a JSON object")
    return SnapshotSystem(data, cwd=cwd if cwd is not None else os.getcwd())


def load_system(spec: str) -> System | None:
    """``"live"`` -> this machine, ``"none"`` -> no system (skip semantic checks), else a snapshot
    file path."""
    if spec == "none":
        return None
    if spec == "live":
        from evspec.system.live import LiveSystem

        return LiveSystem()
    return read_snapshot(spec)
