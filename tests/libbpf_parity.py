"""Per-program parity of ``evspec verify`` with libbpf 1.1 (tests/test_heldout_tools.py,
tests/test_progtypes.py, bench/heldout_parity.py).

libbpf's side is tests/data/heldout/load_one.c, built with ``cc -O1 ... -lbpf``: each program of an
object loaded on its own (one bpf_object per program, every other program's autoload off), one
JSON line per program. evspec's side is ``evspec verify --format json`` over the same objects, in
this process. ``compare`` pairs the two per program:

* a program libbpf loads, evspec loads, with the same instruction count and the same count of
  instructions as the kernel reports them (xlated);
* a program the kernel refused under libbpf (the program's load, or a map creation), the kernel
  refuses under evspec with the same errno, or evspec refuses its section by name before loading
  (``struct_ops``, which evspec does not load);
* a program libbpf refused itself, before the kernel saw it (a section it cannot read, a target
  missing from the kernel's BTF), evspec refuses before loading it too.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

RUNNER_SOURCE = Path(__file__).parent / "data" / "heldout" / "load_one.c"
# what libbpf prints first when the kernel, not libbpf, refused: the program's load, a map's creation
_KERNEL_WORDS = ("BPF program load failed", "failed to create")

Verdict = dict[str, Any]
Key = tuple[str, str]  # (object stem, program)


def _require(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{tool} is required in CI (scripts/test.sh installs it)")
        pytest.skip(f"{tool} not installed")
    return found


def build_runner(out: Path) -> Path:
    """tests/data/heldout/load_one.c linked against the system's libbpf, as ``out/load_one``."""
    runner = out / "load_one"
    proc = subprocess.run([_require("cc"), "-O1", "-o", str(runner), str(RUNNER_SOURCE), "-lbpf"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"building the libbpf runner failed (libbpf-dev installed?):\n{proc.stderr}")
    return runner


def libbpf_verdicts(runner: Path, objects: Mapping[str, Path]) -> dict[Key, Verdict]:
    out: dict[Key, Verdict] = {}
    for stem, path in objects.items():
        proc = subprocess.run([str(runner), str(path)], capture_output=True, text=True, check=False)
        lines = [json.loads(line) for line in proc.stdout.splitlines()]
        if proc.returncode != 0 or any("open_error" in d for d in lines):
            pytest.fail(f"libbpf cannot open {path}: {proc.stdout}{proc.stderr[-2000:]}")
        for d in lines:
            d["in_kernel"] = not d["loaded"] and any(w in d["message"] for w in _KERNEL_WORDS)
            out[(stem, d["prog"])] = d
    return out


def evspec_verdicts(objects: Mapping[str, Path]) -> dict[Key, Verdict]:
    """``evspec verify --format json`` of all ``objects`` in one run."""
    from evspec.cli import build_parser
    from evspec.cli.verify import verify_main

    stems = {str(path): stem for stem, path in objects.items()}
    args = build_parser("verify").parse_args(["verify", "--format", "json", *stems])
    stdout, stderr = io.StringIO(), io.StringIO()
    status = verify_main(args, stdout=stdout, stderr=stderr)
    if status not in (0, 1):
        pytest.fail(f"evspec verify failed as a command ({status}): {stderr.getvalue()}")
    return {(stems[p["object"]], p["name"]): p for p in json.loads(stdout.getvalue())["programs"]}


@dataclass(frozen=True, slots=True)
class Row:
    object: str
    program: str
    section: str
    libbpf: Verdict | None
    evspec: Verdict | None
    problem: str | None  # None: the two agree


def _problem(lib: Verdict | None, ev: Verdict | None) -> str | None:
    if lib is None or ev is None:
        return "only evspec has this program" if lib is None else "only libbpf has this program"
    if lib["loaded"]:
        if not ev["loaded"]:
            return "libbpf loads it, evspec does not"
        if (lib["insns"], lib["xlated"]) != (ev["insns"], ev["xlated"]):
            return (f"instructions differ: libbpf {lib['insns']} (xlated {lib['xlated']}), evspec {ev['insns']} "
                    f"(xlated {ev['xlated']})")
        return None
    if ev["loaded"]:
        return "evspec loads it, libbpf does not"
    by_name = ev["errno"] is None and (ev["error"] or "").startswith(f"section '{ev['section']}': ")
    if ev["errno"] != lib["errno"] and not (lib["in_kernel"] and by_name):
        return f"refused with {lib['errno']} by libbpf, with {ev['errno']} by evspec"
    if not lib["in_kernel"] and ev["verifier"] is not None:
        return f"libbpf refused it before loading, evspec's load reached the kernel ({ev['errno']})"
    return None


def compare(lib: Mapping[Key, Verdict], ev: Mapping[Key, Verdict]) -> list[Row]:
    rows = []
    for key in sorted(set(lib) | set(ev)):
        a, b = lib.get(key), ev.get(key)
        section = (a or b or {}).get("section", "?")
        rows.append(Row(key[0], key[1], section, a, b, _problem(a, b)))
    return rows


def _reason(v: Verdict | None, *, evspec: bool) -> str:
    if v is None:
        return "-"
    if v["loaded"]:
        return f"loaded, {v['insns']} insns"
    text = (v.get("verifier") or v.get("error") or "") if evspec else v.get("message", "")
    return f"{v['errno'] or 'refused'}: {text[:90]}"


def table(rows: Iterable[Row]) -> str:
    """One line per row: object, program, section, problem, and each side's verdict."""
    lines = [f"{'object':14} {'program':28} {'section':32} problem / libbpf / evspec"]
    for r in rows:
        lines.append(f"{r.object:14} {r.program:28} {r.section:32} {r.problem or 'agree'}")
        lines.append(f"{'':76} libbpf: {_reason(r.libbpf, evspec=False)}")
        lines.append(f"{'':76} evspec: {_reason(r.evspec, evspec=True)}")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Summary:
    objects: int
    objects_libbpf: int  # objects every program of which libbpf loads
    objects_evspec: int
    programs: int
    programs_libbpf: int
    programs_evspec: int
    mismatches: int


def summarize(rows: list[Row]) -> Summary:
    by_object: dict[str, list[Row]] = {}
    for r in rows:
        by_object.setdefault(r.object, []).append(r)

    def all_loaded(side: str, rs: list[Row]) -> bool:
        return all(getattr(r, side) is not None and getattr(r, side)["loaded"] for r in rs)

    return Summary(
        objects=len(by_object),
        objects_libbpf=sum(all_loaded("libbpf", rs) for rs in by_object.values()),
        objects_evspec=sum(all_loaded("evspec", rs) for rs in by_object.values()),
        programs=len(rows),
        programs_libbpf=sum(r.libbpf is not None and r.libbpf["loaded"] for r in rows),
        programs_evspec=sum(r.evspec is not None and r.evspec["loaded"] for r in rows),
        mismatches=sum(r.problem is not None for r in rows),
    )
