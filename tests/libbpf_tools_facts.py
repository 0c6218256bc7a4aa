"""Facts about the objects of Debian sid's libbpf-tools 0.37 (tests/data/libbpf_tools/objects.json).

Per object, two kinds of keys. libbpf's view, made by ``derive`` from what
tests/data/libbpf_tools/objfacts.c prints (an object opened with the chroot's libbpf 1.7, not
loaded): ``programs`` (section, program type, expected attach type), ``maps`` (type, sizes, BTF
key and value types), ``globals`` (the variables of each data section), ``sized_by_libbpf`` (perf
event arrays with max_entries 0: libbpf makes them one per possible CPU) and each output's
``in_btf`` (whether the object's BTF has the record's struct). And facts read from the tools' C
sources, kept by hand: ``tools`` (the tool names that embed it), ``choices`` (programs that are
alternatives of each other, loaded only if something exists, chosen by an option, or attached by
hand, as user space decides with bpf_program__set_autoload), ``sized_by_user_space`` (maps user
space resizes before load), ``outputs`` (perf event arrays and ring buffers, with the record they
carry), ``histograms``, ``tables``, ``options`` (which command-line option sets each global) and
``constants`` (``.rodata`` globals no option sets). ``problems`` checks the hand-kept keys against
libbpf's view: every name they use exists; every output map, every map libbpf cannot create as
the object has it and every ``.rodata`` global is described; and programs that hook the same
function entry, function return or event by different mechanisms are alternatives of a choice.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from chroot_clang import build_runner
from libbpf_tools_refs import DATA

OBJECTS = DATA / "objects.json"
OBJFACTS = DATA / "objfacts.c"
DERIVED = ("programs", "maps", "globals", "sized_by_libbpf")
KEPT = ("tools", "choices", "sized_by_user_space", "outputs", "histograms", "tables", "options", "constants")
# what a section hooks, by its prefix: alternatives hook the same function or event
_HOOKS = {"fentry": "entry", "kprobe": "entry", "fexit": "exit", "kretprobe": "exit", "tp_btf": "event",
          "raw_tp": "event", "raw_tracepoint": "event", "tracepoint": "event", "tp": "event"}
DATASECS = (".rodata", ".data", ".bss", ".kconfig", ".ksyms")
OUTPUT_TYPES = ("perf_event_array", "ringbuf")


def build_objfacts(clang: str, out: Path) -> Path:
    """objfacts.c built against the chroot's libbpf (``out`` below /tmp)."""
    return build_runner(clang, OBJFACTS, out)


def run_objfacts(sid_run: str, binary: Path, objects: Mapping[str, Path]) -> dict[str, dict[str, Any]]:
    """libbpf's view of each object, by stem (``sid_run`` runs the binary inside the chroot)."""
    stems = {str(path): stem for stem, path in objects.items()}
    proc = subprocess.run([sid_run, str(binary), *stems], capture_output=True, text=True)
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    failed = [d for d in lines if "error" in d]
    if proc.returncode != 0 or failed or len(lines) != len(stems):
        raise RuntimeError(f"objfacts failed ({proc.returncode}): {failed} {proc.stderr[-2000:]}")
    return {stems[d["object"]]: d for d in lines}


def _attach_type(program: Mapping[str, Any]) -> str | None:
    """libbpf's name of a program's expected attach type; None for 0 (which libbpf names
    cgroup_inet_ingress) where the program type has no attach type."""
    if program["attach_type"] == "cgroup_inet_ingress" and program["type"] != "cgroup_skb":
        return None
    return program["attach_type"]


def derive(raw: Mapping[str, Any], outputs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The derived keys of one object from its objfacts line (``outputs``: the object's hand-kept
    outputs, whose records ``in_btf`` is told for)."""
    maps = {m["name"]: {k: m[k] for k in ("type", "key_size", "value_size", "max_entries", "key", "value")}
            for m in raw["maps"] if not m["internal"]}
    structs = set(raw["structs"])
    in_btf = {}
    for name, out in outputs.items():
        record = re.match(r"struct (\w+)", out["record"])
        in_btf[name] = bool(record and record.group(1) in structs)
    return {
        "programs": {p["name"]: {"section": p["section"], "type": p["type"], "attach_type": _attach_type(p)}
                     for p in raw["programs"]},
        "maps": maps,
        "globals": {sec: {v["name"]: v["type"] for v in vs} for sec, vs in raw["datasecs"].items() if sec in DATASECS},
        "sized_by_libbpf": {name: "one entry per possible CPU (a perf event array with max_entries 0)"
                            for name, m in maps.items() if m["type"] == "perf_event_array" and m["max_entries"] == 0},
        "in_btf": in_btf,
    }


def merge(kept: Mapping[str, Any], derived: Mapping[str, Any]) -> dict[str, Any]:
    """One object's entry: the hand-kept keys with libbpf's view, each output told ``in_btf``."""
    entry = {key: kept[key] for key in KEPT}
    entry["outputs"] = {name: {**out, "in_btf": derived["in_btf"][name]} for name, out in kept["outputs"].items()}
    entry.update({key: derived[key] for key in DERIVED})
    return entry


def _programs_named(choice: Mapping[str, Any]) -> Iterable[str]:
    for group in choice.get("prefer", []):
        yield from group
    yield from choice.get("programs", [])
    yield from choice.get("otherwise", [])
    if "program" in choice:
        yield choice["program"]


def _where(name: str, entry: Mapping[str, Any]) -> list[str]:
    """What a histogram's or table's name misses: a map, or ``.bss`` globals (``.bss a, b``)."""
    if name.startswith(".bss "):
        have = entry["globals"].get(".bss", {})
        return [f".bss {v}" for v in re.split(r",\s*", name[5:]) if v not in have]
    return [] if name in entry["maps"] else [name]


def hook(section: str) -> tuple[str, str] | None:
    """``("entry", "vfs_read")`` for ``fentry/vfs_read`` and ``kprobe/vfs_read``, ``("event",
    "sched_switch")`` for ``tp_btf/sched_switch`` and ``tracepoint/sched/sched_switch``."""
    prefix, _, target = section.partition("/")
    if prefix not in _HOOKS or not target:
        return None
    return _HOOKS[prefix], target.rsplit("/", 1)[-1]


def _unchosen(entry: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Pairs of programs of the same hook and different mechanisms no alternatives choice sets apart."""
    by_hook: dict[tuple[str, str], list[str]] = {}
    for name, prog in entry["programs"].items():
        if (key := hook(prog["section"])) is not None:
            by_hook.setdefault(key, []).append(name)
    apart = set()
    for choice in entry["choices"]:
        groups = choice.get("prefer", []) if choice["kind"] == "alternatives" else []
        apart |= {(a, b) for i, g in enumerate(groups) for a in g for h in groups[i + 1:] for b in h}
    pairs = []
    for names in by_hook.values():
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                same = entry["programs"][a]["section"].split("/")[0] == entry["programs"][b]["section"].split("/")[0]
                if not same and (a, b) not in apart and (b, a) not in apart:
                    pairs.append((a, b))
    return pairs


def problems(objects: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Where the hand-kept keys disagree with libbpf's view (see the module)."""
    found = []
    for stem, entry in objects.items():
        programs, maps, rodata = entry["programs"], entry["maps"], entry["globals"].get(".rodata", {})
        for choice in entry["choices"]:
            found += [f"{stem}: choice names no program {p}" for p in _programs_named(choice) if p not in programs]
        for name in entry["sized_by_user_space"]:
            if name not in maps:
                found.append(f"{stem}: sized_by_user_space names no map {name}")
        for name, m in maps.items():
            unsized = m["max_entries"] == 0 or (m["value_size"] == 0 and m["type"] == "stack_trace")
            if unsized and m["type"] != "perf_event_array" and name not in entry["sized_by_user_space"]:
                found.append(f"{stem}: map {name} cannot be created as the object has it, and nothing says who sizes it")
            if m["type"] in OUTPUT_TYPES and name not in entry["outputs"]:
                found.append(f"{stem}: output map {name} ({m['type']}) is not in outputs")
        for name, out in entry["outputs"].items():
            if maps.get(name, {}).get("type") != out["kind"]:
                found.append(f"{stem}: output {name} is not a {out['kind']} map")
        for kind in ("histograms", "tables"):
            for name in entry[kind]:
                found += [f"{stem}: {kind} names no map or global {m}" for m in _where(name, entry)]
        globals_ = {v for sec in entry["globals"].values() for v in sec}
        found += [f"{stem}: options names no global {g}" for g in entry["options"] if g not in globals_]
        found += [f"{stem}: .rodata global {g} is neither in options nor in constants" for g in rodata
                  if "." not in g and g not in entry["options"] and g not in entry["constants"]]
        found += [f"{stem}: {a} and {b} hook the same and no alternatives choice sets them apart"
                  for a, b in _unchosen(entry)]
    return found


def read_objects(path: Path = OBJECTS) -> dict[str, dict[str, Any]]:
    return json.loads(path.read_text())


def write_objects(objects: Mapping[str, Any], path: Path = OBJECTS) -> None:
    path.write_text(json.dumps(dict(sorted(objects.items())), indent=1, ensure_ascii=False) + "\n")
