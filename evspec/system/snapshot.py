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
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evspec.cpus import format_cpu_list, parse_cpu_list
from evspec.inputs import InputError
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

#: the largest snapshot file read (one written with --btf is about 3 MB)
MAX_SNAPSHOT_BYTES = 64 << 20
#: the most a compressed blob may say it holds, and inflate to (a kernel's BTF is 5-10 MB)
MAX_BLOB_BYTES = 64 << 20
#: the highest CPU number a snapshot's CPU lists may name (the kernel's NR_CPUS is at most 8192)
MAX_CPU = 65535


class SnapshotError(InputError, ValueError):
    """A snapshot that cannot be used (not a regular file, too big, not JSON, wrong shape, unknown
    version); the message names the file (when there is one) and the field."""


class SnapshotSystem(System):
    """A system read from snapshot data (a parsed JSON document). Every field but the compressed
    blobs is checked here, so that a damaged snapshot is one ``SnapshotError`` naming the field
    (and ``origin``, the file it came from) before any check runs; the blobs (``kernel_btf``,
    ``extern_sources``) are inflated when first used, never past the size they declare."""

    def __init__(self, data: Mapping[str, Any], *, cwd: str | None = None, origin: str | None = None) -> None:
        self._origin = origin
        if not isinstance(data, Mapping):
            raise self._error(f"it holds {_kind(data)}, not a JSON object")
        if data.get("evspec_system") != SNAPSHOT_VERSION:
            raise self._error(f"it is not an evspec system snapshot of version {SNAPSHOT_VERSION} "
                              f"(evspec_system = {_shown(data.get('evspec_system'))})")
        self.notes = []
        self._data = data
        try:
            self._pmus = _pmus_from_json(_optional(data, "pmus", Mapping, {}, "an object"))
            tracefs = _optional(data, "tracefs", Mapping, {}, "an object")
            self._tracefs_available = _optional(tracefs, "available", bool, False, "true or false", "tracefs.")
            self._tracefs_reason = (_optional(tracefs, "reason", str, None, "a string", "tracefs.")
                                    or "tracefs not available")
            self._tracefs_help = tuple(_strings(tracefs.get("help"), "tracefs.help"))
            self._tracepoints = _tracepoints_from_json(_optional(tracefs, "events", Mapping, {}, "an object",
                                                                 "tracefs."))
            self._cpus = _cpus_from_json(_optional(data, "cpus", str, "0", "a string"), "cpus")
            self._features = _features_from_json(_optional(data, "features", Mapping, {}, "an object"))
            recorded_cwd = _optional(data, "cwd", str, None, "a string")
            self._confine = _optional(data, "confine_files", bool, False, "true or false")
            if data.get("kernel_btf") is not None:
                _blob_header(data["kernel_btf"], "kernel_btf", owner="")
        except SnapshotError as exc:
            raise self._error(str(exc)) from None
        self._cwd = cwd if cwd is not None else (recorded_cwd or os.getcwd())
        self._kernel_btf: bytes | None = None
        self._extern_facts: ExternFacts | None = None

    def _error(self, problem: str) -> SnapshotError:
        where = f"system snapshot {self._origin!r}" if self._origin is not None else "the system snapshot"
        return SnapshotError(f"{where}: {problem}")

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
            import dataclasses

            self._extern_facts = dataclasses.replace(decode_extern_facts(raw), kprobes=self._features.kprobe_events)
        return self._extern_facts

    # ---- PMUs

    def pmu_names(self) -> tuple[str, ...]:
        return tuple(sorted(self._pmus))

    def pmu(self, name: str) -> Pmu | None:
        return self._pmus.get(name)

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
        return self._tracepoints.get(system, {}).get(event)

    # ---- CPUs, features, files

    def possible_cpus(self) -> tuple[int, ...]:
        return self._cpus

    def features(self) -> Features:
        return self._features

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


# --------------------------------------------------------------------------------------------
# reading the fields (each error names its field; SnapshotSystem adds the file)


def _shown(value: Any) -> str:  # noqa: ANN401 - JSON data
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _kind(value: Any) -> str:  # noqa: ANN401 - JSON data
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _wrong(field: str, wanted: str, value: Any) -> SnapshotError:  # noqa: ANN401 - JSON data
    return SnapshotError(f"{field} is {_kind(value)}, not {wanted}")


def _optional(data: Mapping[str, Any], key: str, kind: type, default: Any, wanted: str,  # noqa: ANN401
              prefix: str = "") -> Any:  # noqa: ANN401 - JSON data
    """``data[key]`` if it is of ``kind`` (bool is no int), ``default`` if absent or null."""
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _wrong(prefix + key, wanted, value)
    return value


def _strings(value: Any, field: str) -> list[str]:  # noqa: ANN401 - JSON data
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SnapshotError(f"{field} is not a list of strings")
    return value


def _count(value: Any, field: str, limit: int = (1 << 32) - 1) -> int:  # noqa: ANN401 - JSON data
    if not isinstance(value, int) or isinstance(value, bool):
        raise _wrong(field, "an integer", value)
    if not 0 <= value <= limit:
        raise SnapshotError(f"{field} is {value}, not an integer from 0 to {limit}")
    return value


def _pmus_from_json(raw: Mapping[str, Any]) -> dict[str, Pmu]:
    return {name: _pmu_from_json(name, pmu) for name, pmu in raw.items()}


def _pmu_from_json(name: str, raw: Any) -> Pmu:  # noqa: ANN401 - JSON data
    where = f"pmus.{name}"
    if not isinstance(raw, Mapping):
        raise _wrong(where, "an object", raw)
    formats = {}
    for term, text in _optional(raw, "format", Mapping, {}, "an object", f"{where}.").items():
        if not isinstance(text, str):
            raise _wrong(f"{where}.format.{term}", "a string", text)
        try:
            formats[term] = parse_format(term, text)
        except ValueError as exc:
            raise SnapshotError(f"{where}.format.{term}: {exc}") from None
    aliases = {}
    for alias_name, a in _optional(raw, "events", Mapping, {}, "an object", f"{where}.").items():
        at = f"{where}.events.{alias_name}"
        if not isinstance(a, Mapping):
            raise _wrong(at, "an object", a)
        definition = a.get("definition")
        if not isinstance(definition, str):
            raise _wrong(f"{at}.definition", "a string", definition)
        aliases[alias_name.lower()] = PmuAlias(
            name=alias_name,
            definition=definition,
            unit=_optional(a, "unit", str, None, "a string", f"{at}."),
            scale=_optional(a, "scale", str, None, "a string", f"{at}."),
            per_pkg=_optional(a, "per_pkg", bool, False, "true or false", f"{at}."),
            snapshot=_optional(a, "snapshot", bool, False, "true or false", f"{at}."),
        )
    if "type" not in raw:
        raise SnapshotError(f"{where}.type is missing")
    cpus = _optional(raw, "cpus", str, None, "a string", f"{where}.")
    cpumask = _optional(raw, "cpumask", str, None, "a string", f"{where}.")
    for key, text in (("cpus", cpus), ("cpumask", cpumask)):
        if text is not None:
            _cpus_from_json(text, f"{where}.{key}")
    return Pmu(name, _count(raw["type"], f"{where}.type"), formats, aliases, cpus, cpumask)


def _tracepoints_from_json(raw: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for system, events in raw.items():
        if not isinstance(events, Mapping):
            raise _wrong(f"tracefs.events.{system}", "an object of event ids", events)
        out[system] = {event: _count(tp_id, f"tracefs.events.{system}.{event}") for event, tp_id in events.items()}
    return out


_CPU_LIST = re.compile(r"\s*(?:\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)?\s*")


def _cpus_from_json(text: str, field: str) -> tuple[int, ...]:
    """A kernel CPU list (``0-3,8``) of CPUs up to ``MAX_CPU``."""
    if not _CPU_LIST.fullmatch(text) or any(int(n) > MAX_CPU for n in re.findall(r"\d+", text)):
        raise SnapshotError(f"{field} is {_shown(text)}, not a CPU list such as \"0-3,8\" (CPUs up to {MAX_CPU})")
    try:
        return parse_cpu_list(text)
    except ValueError as exc:
        raise SnapshotError(f"{field}: {exc}") from None


def _features_from_json(raw: Mapping[str, Any]) -> Features:
    def flag(key: str) -> bool | None:
        return _optional(raw, key, bool, None, "true, false or null", "features.")  # type: ignore[no-any-return]

    return Features(
        kernel_release=_optional(raw, "kernel_release", str, "", "a string", "features."),
        kprobe_events=bool(flag("kprobe_events")),
        uprobe_events=bool(flag("uprobe_events")),
        btf_vmlinux=bool(flag("btf_vmlinux")),
        hybrid_extended_type=flag("hybrid_extended_type") is not False,
    )


def _blob_header(raw: Any, field: str, owner: str = "the snapshot's ") -> int | None:  # noqa: ANN401
    """Check a compressed blob's header (``encode_btf``); its declared size, if it has one."""
    if not isinstance(raw, Mapping) or raw.get("encoding") != BTF_ENCODING or not isinstance(raw.get("data"), str):
        raise SnapshotError(f"{owner}{field} is not {BTF_ENCODING} data")
    size = raw.get("size")
    if size is None:
        return None
    return _count(size, f"{owner}{field}.size", MAX_BLOB_BYTES)


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

    size = _blob_header(raw, field)
    limit = MAX_BLOB_BYTES if size is None else size
    inflate = zlib.decompressobj()
    try:
        data = inflate.decompress(base64.b64decode(raw["data"], validate=True), limit + 1)
    except (binascii.Error, zlib.error, ValueError) as exc:
        raise SnapshotError(f"the snapshot's {field} cannot be decoded: {exc}") from exc
    if len(data) > limit:
        said = f"the {size} bytes it says" if size is not None else f"{MAX_BLOB_BYTES} bytes (evspec's limit)"
        raise SnapshotError(f"the snapshot's {field} is more than {said} (inflated)")
    if not inflate.eof:
        raise SnapshotError(f"the snapshot's {field} cannot be decoded: its compressed data is cut off")
    if size is not None and size != len(data):
        raise SnapshotError(f"the snapshot's {field} is {len(data)} bytes, not the {size} it says")
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
    probes_unknown = False
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
        if exc.denied is not None:  # there, but unknown to its writer: never say there are none
            probes_unknown = True
            tracefs["reason"] = f"the snapshot holds no tracepoints: when it was written, {exc.reason[0].lower()}{exc.reason[1:]}"
            tracefs["help"] = [f"write the snapshot again as root, or after 'mount -o remount,mode=755 {exc.denied}'"]
    f = system.features()
    out = {
        "evspec_system": SNAPSHOT_VERSION,
        "pmus": pmus,
        "tracefs": tracefs,
        "cpus": format_cpu_list(system.possible_cpus()),
        "features": {
            "kernel_release": f.kernel_release,
            # probes are created through tracefs: unknown (null) when its writer could not read it
            "kprobe_events": None if probes_unknown else f.kprobe_events,
            "uprobe_events": None if probes_unknown else f.uprobe_events,
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


def snapshot_text(system: System, *, kernel_btf: bytes | None = None, extern_facts: ExternFacts | None = None) -> str:
    """The snapshot file's text. Not sort_keys: trace systems and events keep the machine's
    directory order (perf's glob order); everything else is sorted by ``snapshot`` already."""
    return json.dumps(snapshot(system, kernel_btf=kernel_btf, extern_facts=extern_facts), indent=1) + "\n"


def write_snapshot(system: System, path: str | os.PathLike[str]) -> None:
    Path(path).write_text(snapshot_text(system))


def read_snapshot(path: str | os.PathLike[str], *, cwd: str | None = None) -> SnapshotSystem:
    """Load a snapshot file; relative paths in event strings resolve against ``cwd`` (default:
    the current directory of the process, not the one recorded in the file). Only a regular file
    of at most ``MAX_SNAPSHOT_BYTES`` is read; every problem is a ``SnapshotError`` naming it."""
    name = os.fspath(path)
    where = f"system snapshot {name!r}"
    import stat

    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not block the open
    except OSError as exc:
        raise SnapshotError(f"cannot read {where}: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise SnapshotError(f"cannot read {where}: it is {what}")
        if info.st_size > MAX_SNAPSHOT_BYTES:
            raise SnapshotError(f"{where} is {info.st_size} bytes, more than evspec reads "
                                f"({MAX_SNAPSHOT_BYTES} bytes)")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_SNAPSHOT_BYTES:  # the file may grow while it is read
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise SnapshotError(f"cannot read {where}: {exc.strerror}") from exc
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    if len(raw) > MAX_SNAPSHOT_BYTES:
        raise SnapshotError(f"{where} is more than evspec reads ({MAX_SNAPSHOT_BYTES} bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SnapshotError(f"{where} is not UTF-8 text (byte {exc.start}): not a snapshot") from None
    if not text.strip():
        raise SnapshotError(f"{where} is empty: write one with 'evspec system snapshot -o FILE'")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        cut = " (the file is cut off)" if exc.pos >= len(text.rstrip()) else ""
        raise SnapshotError(f"{where} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}{cut}") from None
    except RecursionError:
        raise SnapshotError(f"{where} is not a snapshot: its JSON is nested too deeply") from None
    return SnapshotSystem(data, cwd=cwd if cwd is not None else os.getcwd(), origin=name)


SYSTEM_NAMES = ("live", "none")


def load_system(spec: str, *, given_by: str = "--system") -> System | None:
    """``"live"`` -> this machine, ``"none"`` -> no system (skip semantic checks), else a snapshot
    file path. ``given_by`` names where ``spec`` came from, for the error when it is neither."""
    if spec == "none":
        return None
    if spec == "live":
        from evspec.system.live import LiveSystem

        return LiveSystem()
    if not os.path.lexists(spec):
        hint = f"{given_by} takes live, none or a snapshot file written by 'evspec system snapshot'"
        close = next((name for name in SYSTEM_NAMES if name == spec.strip().lower()), None)
        if close is not None:
            hint += f"; did you mean '{close}'?"
        raise SnapshotError(f"{given_by} {spec!r}: no such file ({hint})")
    return read_snapshot(spec)
