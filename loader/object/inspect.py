"""The ``evspec inspect`` report of a BPF object: a dict (for JSON) and a bpftool-like text: its
maps, programs, global variables (what ``var:`` terms set, with the object's values) and externs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evspec.loader.btf.reader import Btf, BtfError
from evspec.loader.errors import ObjectError
from evspec.loader.externs.resolve import type_text
from evspec.loader.lint.libbpf_differences import libbpf_differences
from evspec.loader.lint.terms.variables import global_variables
from evspec.loader.object.map_dump import decode_type, value_text
from evspec.loader.object.spec import ExternSpec, MapSpec, MapType, ObjectSpec, ProgramSpec

from evspec.codes import bpf as codes

AttachDescriber = Callable[[str], dict[str, Any]]


def map_type_name(value: int) -> str | int:
    """``perf_event_array`` for 4; the number itself for a type this evspec does not know."""
    try:
        return MapType(value).name.lower()
    except ValueError:
        return value


def kernel_version_text(code: int) -> str:
    return f"{code >> 16}.{(code >> 8) & 0xFF}.{code & 0xFF}"


_PINNING = {0: "none", 1: "by_name"}


def _map_entry(m: MapSpec) -> dict[str, Any]:
    return {
        "name": m.name, "type": map_type_name(m.type), "key_size": m.key_size,
        "value_size": m.value_size, "max_entries": m.max_entries, "flags": m.flags,
        "legacy": m.legacy, "section": m.section, "pinning": m.pinning,
        "global_data": m.initial_value is not None, "readonly": m.readonly,
        "map_extra": m.map_extra, "numa_node": m.numa_node,
        "inner": None if m.inner is None else _map_entry(m.inner),
        "initial_values": [{"slot": slot, "target": target} for slot, target in m.initial_slots],
        "legacy_extra": dict(m.legacy_extra),
    }


def _map_line(m: dict[str, Any]) -> str:
    tags = [t for t, on in (("legacy", m["legacy"]), ("readonly", m.get("readonly"))) if on]
    line = (f"{m['name']}: {m['type']}  key {m['key_size']}B  value {m['value_size']}B  "
            f"max_entries {m['max_entries']}")
    if m["flags"]:
        line += f"  flags 0x{m['flags']:x}"
    if m.get("pinning"):
        line += f"  pinning {_PINNING.get(m['pinning'], m['pinning'])}"
    if m.get("map_extra"):
        extra = m["map_extra"]
        line += f"  map_extra {extra:#x}" if extra >> 32 else f"  map_extra {extra}"  # 64 bits: an address
    if m.get("numa_node"):
        line += f"  numa_node {m['numa_node']}"
    for k, v in (m.get("legacy_extra") or {}).items():
        line += f"  {k} {v}"
    if tags:
        line += "  " + " ".join(tags)
    return line


def _program_type(attach: dict[str, Any]) -> str:
    for key in ("prog_type", "program_type", "type"):
        value = attach.get(key)
        if isinstance(value, str):
            return value.lower()
        if isinstance(value, int):
            return str(value)
    return "unknown"


def _program_entry(p: ProgramSpec, attach: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": p.name, "section": p.section, "type": _program_type(attach), "insns": p.insn_count,
        "attach": attach,
        "relocations": [{"insn": r.insn_index, "kind": r.kind, "target": r.target, "addend": r.addend}
                        for r in p.relocations],
        "core_relocations": _core_entries(p),
    }


def _core_entries(p: ProgramSpec) -> list[dict[str, Any]]:
    return [{"insn": r.insn, "kind": r.kind, "type": r.type_name, "access": r.access} for r in p.core_relocations]


def inspect_report(spec: ObjectSpec, attach: AttachDescriber | None = None) -> dict[str, Any]:
    """The report as plain data. ``attach(section)`` describes a program's section (the section
    parser's ``to_json()``); its ``prog_type`` gives the program's type."""
    programs = []
    for p in spec.programs:
        described = attach(p.section) if attach is not None else {}
        programs.append(_program_entry(p, described))
    report = {
        "path": spec.path,
        "license": spec.license,
        "kernel_version": None if spec.kernel_version is None else kernel_version_text(spec.kernel_version),
        "btf": spec.btf is not None,
        "maps": [_map_entry(m) for m in spec.maps],
        "programs": programs,
        "subprograms": [{"name": p.name, "section": p.section, "insns": p.insn_count,
                         "core_relocations": _core_entries(p)} for p in spec.subprograms],
    }
    report["globals"] = global_entries(spec)
    report["notes"] = libbpf_differences(spec)
    if spec.externs:  # only then: reports of objects without externs stay as they were
        report["externs"] = [_extern_entry(e) for e in spec.externs]
    return report


def global_entries(spec: ObjectSpec) -> list[dict[str, Any]]:
    """The global variables ``var:`` terms set (none without BTF): name, C type, section, offset,
    size, and the value the object gives it (``.rodata``/``.data`` bytes, zero in ``.bss``), decoded
    as ``--dump-maps`` decodes it. ``ObjectError`` (EB009) when the BTF cannot say."""
    if not spec.btf:
        return []
    try:
        btf = Btf(spec.btf)
        out = []
        for var in global_variables(spec, btf).values():
            data = spec.map(var.map_name)
            assert data is not None  # global_variables finds variables in the data maps
            raw = (data.initial_value or b"")[var.offset:var.offset + var.size].ljust(var.size, b"\0")
            out.append({"name": var.name, "type": type_text(btf, var.type_id), "section": data.section,
                        "offset": var.offset, "size": var.size,
                        "value": decode_type(btf, btf.resolve(var.type_id), raw)})
        return out
    except BtfError as exc:
        raise ObjectError(codes.CORRUPT_BTF, f"{spec.path}: corrupt BTF: its global variables cannot be "
                          f"decoded: {exc}") from None


def _extern_entry(e: ExternSpec) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": e.name, "kind": e.kind, "type": e.type_name, "weak": e.weak}
    if e.kind == "kconfig":
        entry["offset"] = e.offset
    return entry


_NOT_ATTACH = ("prog_type", "program_type", "type", "section")  # shown on the program's own line


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return "{" + " ".join(f"{k}={_value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return ",".join(_value_text(v) for v in value)
    return str(value)


def _attach_text(attach: dict[str, Any]) -> str:
    return "  ".join(f"{k}={_value_text(v)}" for k, v in attach.items()
                     if k not in _NOT_ATTACH and v not in (None, "", (), [], {}))


def inspect_text(report: dict[str, Any]) -> str:
    """A bpftool-like listing of a report made by ``inspect_report``."""
    lines = []
    head = f"{report.get('path', '?')}: license {report['license'] or '(none)'}"
    if report.get("kernel_version"):
        head += f"  version {report['kernel_version']}"
    if "btf" in report:
        head += "  btf" if report["btf"] else "  no btf"
    lines.append(head)
    lines.append(f"maps: {len(report['maps'])}")
    for m in report["maps"]:
        lines.append("  " + _map_line(m))
        if m.get("inner"):
            lines.append("      inner " + _map_line(m["inner"]))
        for v in m.get("initial_values", ()):
            lines.append(f"      [{v['slot']}] = {v['target']}")
    lines.append(f"programs: {len(report['programs'])}")
    for p in report["programs"]:
        lines.append(f"  {p['name']}: {p['type']}  section {p['section']!r}  insns {p['insns']}")
        attach = _attach_text(p["attach"])
        if attach:
            lines.append(f"      attach {attach}")
        for r in p.get("relocations", ()):
            extra = f"+{r['addend']}" if r["addend"] else ""
            lines.append(f"      insn {r['insn']}: {r['kind']} {r['target']}{extra}")
        lines.extend(_core_lines(p))
    if report.get("globals"):
        lines.append(f"globals: {len(report['globals'])}")
        for g in report["globals"]:
            lines.append(f"  {g['name']}: {g['type']}  {g['section']}+{g['offset']}  size {g['size']}  "
                         f"= {value_text(g['value'])}")
    if report.get("externs"):
        lines.append(f"externs: {len(report['externs'])}")
        for e in report["externs"]:
            where = f"  .kconfig+{e['offset']}" if "offset" in e else ""
            weak = "  weak" if e["weak"] else ""
            lines.append(f"  {e['name']}: {e['kind']}  type {e['type']}{weak}{where}")
    if report.get("subprograms"):
        lines.append(f"subprograms: {len(report['subprograms'])}")
        for p in report["subprograms"]:
            lines.append(f"  {p['name']}: section {p['section']!r}  insns {p['insns']}")
            lines.extend(_core_lines(p))
    lines.extend(f"note: {text}" for text in report.get("notes", ()))
    return "\n".join(lines) + "\n"


def _core_lines(p: dict[str, Any]) -> list[str]:
    return [f"      insn {r['insn']}: CO-RE {r['kind']} {r['type']} access {r['access']}"
            for r in p.get("core_relocations", ())]
