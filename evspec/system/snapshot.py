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
     "cwd": "/home/me/project", "confine_files": false,
     "kernel_btf": {"encoding": "zlib+base64", "size": 6123456, "data": "eJzs..."}}

``kernel_btf`` (written by ``evspec system snapshot --btf``, absent otherwise) is the machine's
``/sys/kernel/btf/vmlinux``, zlib-compressed and base64-encoded: checks against the snapshot
resolve BPF objects' CO-RE relocations against it (``SnapshotSystem.kernel_btf()``).
``extern_sources`` (written with it) holds the rest of what their ``__kconfig``/``__ksym`` externs
and kfuncs are resolved against (``SnapshotSystem.extern_facts()``)::

     "extern_sources": {
      "uname": {"release": "6.1.0", "version": "#1 SMP Debian 6.1.76-1", "machine": "x86_64"},
      "version_signature": null,
      "kconfig": {"source": "/boot/config-6.1.0", "encoding": "zlib+base64", "size": 123, "data": "eJ..."},
      "kallsyms": {"encoding": "zlib+base64", "size": 3338073, "lines": 122169, "data": "eJ...",
                   "ambiguous": {"pgd_val": 2}},
      "module_btfs": ["nf_conntrack", "nf_nat"]}

``kconfig`` holds the ``CONFIG_NAME=VALUE`` lines of the Kconfig file the machine's libbpf reads,
or why none could be read (``{"unreadable": [[FILE, WHY], ...]}``, or ``{"invalid": WHY}`` for a
file that does not parse); ``kallsyms`` the ``LETTER NAME`` of each line of ``/proc/kallsyms``,
without addresses, and the names listed at more than one address (null: the addresses were
hidden from the user who wrote the snapshot), or ``{"unreadable": WHY}``; ``module_btfs`` the
names of the modules that had a BTF (their BTF itself is not saved). A snapshot without the
block (no ``--btf``, or written before it existed) leaves externs unchecked.

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

from evspec.cpus import parse_cpu_list
from evspec.system.model import (
    ExternFacts,
    ExternFactsUnavailable,
    Features,
    FormatField,
    Pmu,
    PmuAlias,
    System,
    TracefsUnavailable,
    parse_format,
)

SNAPSHOT_VERSION = 1
BTF_ENCODING = "zlib+base64"
EXTERN_SOURCES = "extern_sources"


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
        self._kernel_btf: bytes | None = None
        self._extern_facts: ExternFacts | None = None

    # ---- the kernel's BTF

    def has_kernel_btf(self) -> bool:
        """Whether the snapshot carries the kernel's BTF (without decoding it)."""
        return bool(self._data.get("kernel_btf"))

    def kernel_btf(self) -> bytes | None:
        """The kernel's BTF (``/sys/kernel/btf/vmlinux`` of the machine), when the snapshot was
        written with ``--btf``; ``SnapshotError`` when it is there but cannot be decoded."""
        if self._kernel_btf is None and self.has_kernel_btf():
            self._kernel_btf = decode_btf(self._data["kernel_btf"])
        return self._kernel_btf

    # ---- what BPF externs are resolved against

    def extern_facts(self, *, kconfig: bool = True, kallsyms: bool = True) -> ExternFacts:
        """The ``extern_sources`` block, decoded once (the whole of it: ``kconfig`` and
        ``kallsyms`` are ignored); ``ExternFactsUnavailable`` without one, ``SnapshotError`` naming
        the field when it cannot be decoded."""
        if self._extern_facts is None:
            raw = self._data.get(EXTERN_SOURCES)
            if raw is None:
                raise ExternFactsUnavailable(
                    "the system snapshot holds no extern sources: write it again with 'evspec system "
                    "snapshot --btf'" + ("" if self.has_kernel_btf() else " (it was written without --btf)"))
            self._extern_facts = decode_extern_facts(raw)
        return self._extern_facts

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
            hybrid_extended_type=bool(f.get("hybrid_extended_type", True)),
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


def encode_btf(data: bytes) -> dict[str, Any]:
    """A BTF blob as the snapshot holds it (any blob: the extern sources' texts too)."""
    import base64
    import zlib

    return {"encoding": BTF_ENCODING, "size": len(data),
            "data": base64.b64encode(zlib.compress(data, 6)).decode("ascii")}


def decode_btf(raw: Any, field: str = "kernel_btf") -> bytes:  # noqa: ANN401 - JSON data
    """A blob written by ``encode_btf``; ``SnapshotError`` naming ``field`` if it is not one."""
    import base64
    import binascii
    import zlib

    if not isinstance(raw, Mapping) or raw.get("encoding") != BTF_ENCODING or not isinstance(raw.get("data"), str):
        raise SnapshotError(f"the snapshot's {field} is not {BTF_ENCODING} data")
    try:
        data = zlib.decompress(base64.b64decode(raw["data"], validate=True))
    except (binascii.Error, zlib.error, ValueError) as exc:
        raise SnapshotError(f"the snapshot's {field} cannot be decoded: {exc}") from exc
    if raw.get("size") is not None and raw["size"] != len(data):
        raise SnapshotError(f"the snapshot's {field} is {len(data)} bytes, not the {raw['size']} it says")
    return data


def encode_extern_facts(facts: ExternFacts) -> dict[str, Any]:
    """``facts`` as the snapshot's ``extern_sources`` block (see the module docstring)."""
    kconfig: dict[str, Any]
    if facts.kconfig is not None:
        values, source = facts.kconfig
        text = "".join(f"{name}={value}\n" for name, value in values.items())
        kconfig = {"source": source, **encode_btf(text.encode())}
    elif facts.kconfig_invalid is not None:
        kconfig = {"invalid": facts.kconfig_invalid}
    else:
        kconfig = {"unreadable": [list(tried) for tried in facts.kconfig_unreadable]}
    kallsyms: dict[str, Any]
    if facts.kallsyms is not None:
        text = "".join(f"{letter} {name}\n" for letter, name in facts.kallsyms)
        ambiguous = None if facts.ambiguous is None else dict(sorted(facts.ambiguous.items()))
        kallsyms = {**encode_btf(text.encode()), "lines": len(facts.kallsyms), "ambiguous": ambiguous}
    else:
        kallsyms = {"unreadable": facts.kallsyms_unreadable}
    return {"uname": {"release": facts.release, "version": facts.version, "machine": facts.machine},
            "version_signature": facts.version_signature, "kconfig": kconfig, "kallsyms": kallsyms,
            "module_btfs": None if facts.module_btfs is None else list(facts.module_btfs)}


def decode_extern_facts(raw: Any) -> ExternFacts:  # noqa: ANN401 - JSON data
    """The ``extern_sources`` block read back; ``SnapshotError`` naming the field that is wrong."""
    where = EXTERN_SOURCES
    block = _mapping(raw, where)
    uname = _mapping(block.get("uname"), f"{where}.uname")
    release, version, machine = (_string(uname.get(key), f"{where}.uname.{key}")
                                 for key in ("release", "version", "machine"))
    signature = block.get("version_signature")
    if signature is not None:
        signature = _string(signature, f"{where}.version_signature")
    kconfig = _mapping(block.get("kconfig"), f"{where}.kconfig")
    values: tuple[dict[str, str], str] | None = None
    tried: tuple[tuple[str, str], ...] = ()
    invalid = None
    if "data" in kconfig:
        text = _text(kconfig, f"{where}.kconfig")
        config: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), 1):
            name, sep, value = line.partition("=")
            if not sep or not name.startswith("CONFIG_") or not value:
                raise SnapshotError(f"the snapshot's {where}.kconfig, line {number}: {line!r} is not CONFIG_NAME=VALUE")
            config.setdefault(name, value)
        values = config, _string(kconfig.get("source"), f"{where}.kconfig.source")
    elif "invalid" in kconfig:
        invalid = _string(kconfig["invalid"], f"{where}.kconfig.invalid")
    else:
        listed = kconfig.get("unreadable")
        if not isinstance(listed, list) or not all(
                isinstance(t, list) and len(t) == 2 and all(isinstance(x, str) for x in t) for t in listed):
            raise SnapshotError(f"the snapshot's {where}.kconfig has neither data nor a list of [FILE, WHY] "
                                "as 'unreadable'")
        tried = tuple((path, why) for path, why in listed)
    kallsyms = _mapping(block.get("kallsyms"), f"{where}.kallsyms")
    names: tuple[tuple[str, str], ...] | None = None
    ambiguous: dict[str, int] | None = None
    unreadable = ""
    if "data" in kallsyms:
        names = _kallsyms_lines(_text(kallsyms, f"{where}.kallsyms"), f"{where}.kallsyms")
        if kallsyms.get("lines") is not None and kallsyms["lines"] != len(names):
            raise SnapshotError(f"the snapshot's {where}.kallsyms has {len(names)} lines, not the "
                                f"{kallsyms['lines']} it says")
        listed = kallsyms.get("ambiguous")
        if listed is not None:
            if not isinstance(listed, Mapping) or not all(
                    isinstance(n, str) and type(c) is int and c > 1 for n, c in listed.items()):
                raise SnapshotError(f"the snapshot's {where}.kallsyms.ambiguous is not an object of names and "
                                    "address counts (over 1)")
            ambiguous = dict(listed)
    else:
        unreadable = _string(kallsyms.get("unreadable"), f"{where}.kallsyms.unreadable")
    modules = block.get("module_btfs")
    if modules is not None and (not isinstance(modules, list) or not all(isinstance(m, str) for m in modules)):
        raise SnapshotError(f"the snapshot's {where}.module_btfs is not a list of module names")
    return ExternFacts(release=release, version=version, machine=machine, version_signature=signature,
                       kconfig=values, kconfig_unreadable=tried, kconfig_invalid=invalid, kallsyms=names,
                       kallsyms_unreadable=unreadable, ambiguous=ambiguous,
                       module_btfs=None if modules is None else tuple(modules), recorded=True)


def _mapping(raw: Any, field: str) -> Mapping[str, Any]:  # noqa: ANN401 - JSON data
    if not isinstance(raw, Mapping):
        raise SnapshotError(f"the snapshot's {field} is not a JSON object")
    return raw


def _string(raw: Any, field: str) -> str:  # noqa: ANN401 - JSON data
    if not isinstance(raw, str):
        raise SnapshotError(f"the snapshot's {field} is not a string")
    return raw


def _text(raw: Mapping[str, Any], field: str) -> str:
    try:
        return decode_btf(raw, field).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SnapshotError(f"the snapshot's {field} is not UTF-8 text: {exc}") from None


def _kallsyms_lines(text: str, field: str) -> tuple[tuple[str, str], ...]:
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        letter, sep, name = line.partition(" ")
        if not sep or len(letter) != 1 or not name or " " in name:
            raise SnapshotError(f"the snapshot's {field}, line {number}: {line!r} is not 'LETTER NAME'")
        out.append((letter, name))
    return tuple(out)


def snapshot(system: System, *, kernel_btf: bytes | None = None,
             extern_facts: ExternFacts | None = None) -> dict[str, Any]:
    """Everything the checks read from ``system``, as JSON-ready data; with ``kernel_btf`` (the
    machine's ``/sys/kernel/btf/vmlinux``), that too, compressed, and with ``extern_facts`` the
    ``extern_sources`` block."""
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
    out = {
        "evspec_system": SNAPSHOT_VERSION,
        "pmus": pmus,
        "tracefs": tracefs,
        "cpus": _cpu_list_text(system.possible_cpus()),
        "features": {
            "kernel_release": f.kernel_release,
            "kprobe_events": f.kprobe_events,
            "uprobe_events": f.uprobe_events,
            "btf_vmlinux": f.btf_vmlinux,
            **({} if f.hybrid_extended_type else {"hybrid_extended_type": False}),
        },
        "cwd": system.cwd,
        "confine_files": False,
    }
    if kernel_btf is not None:
        out["kernel_btf"] = encode_btf(kernel_btf)
    if extern_facts is not None:
        out[EXTERN_SOURCES] = encode_extern_facts(extern_facts)
    return out


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


def snapshot_text(system: System, *, kernel_btf: bytes | None = None, extern_facts: ExternFacts | None = None) -> str:
    """The snapshot file's text. Not sort_keys: trace systems and events keep the machine's
    directory order (perf's glob order); everything else is sorted by ``snapshot`` already."""
    return json.dumps(snapshot(system, kernel_btf=kernel_btf, extern_facts=extern_facts), indent=1) + "\n"


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
