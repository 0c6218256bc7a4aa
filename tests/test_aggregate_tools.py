"""Differential: ``evspec record`` on the objects Debian sid's libbpf-tools 0.37 embed, with the
scripted workload of their reference runs, prints histograms and tables of the same shape as the
tool's own binary did (tests/data/libbpf_tools/TOOL.json, ``compare: shape``): the histogram's
unit and slot layout, the table's columns, and output where the tool printed some. The event
strings are the ones docs/language.md gives for these tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import oracle
from heldout_tools import extract_sid_objects
from libbpf_tools_refs import SPECS, WORKLOAD, Run, differences, read_reference, reference

# tool -> the terms that name what the BTF cannot: the unit, the tool's column headings
TERMS = {
    "runqlat": "map:hists.unit=usecs",
    "biolatency": "map:hists.unit=usecs",
    "softirqs": "map:counts.column[0]=SOFTIRQ,map:counts.column[1]=none,map:counts.column[2]=TOTAL_usecs",
    "hardirqs": "map:infos.column[0]=HARDIRQ,map:infos.column[1]=none,map:infos.column[2]=TOTAL_count,"
                "map:infos.column[3]=TOTAL_usecs,map:infos.column[4]=MAX_usecs",
}


@pytest.fixture(scope="module")
def sid_objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    oracle("sid-run")
    return extract_sid_objects(tmp_path_factory.mktemp("sid_objects"))


def _record_with_workload(obj: Path, terms: str, steps: tuple[str, ...]) -> Run:
    """``evspec record -a -e OBJ/TERMS/ -- WORKLOAD STEPS``: the workload is told to go once it
    says it is ready (record has attached by then) and to end once it is done."""
    argv = [sys.executable, "-m", "evspec", "record", "-a", "-e", f"{obj}/{terms}/", "--",
            sys.executable, str(WORKLOAD), *steps]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd="/")
    assert proc.stdin is not None and proc.stdout is not None
    lines: list[str] = []
    ready = done = None
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("{") and ready is None:
            ready = json.loads(line)
            proc.stdin.write("go\n")
            proc.stdin.flush()
        elif line.startswith("{") and done is None:
            done = json.loads(line)
            break
    proc.stdin.close()
    proc.stdin = None  # closed: the workload ends at the end of its input
    rest, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert ready is not None and done is not None, "".join(lines) + err
    roles = {os.getpid(): "L", ready["pid"]: "W"}
    return Run("", tuple(argv), "".join(lines) + rest, err, 0, True, roles, ready["port"])


@pytest.mark.parametrize("tool", sorted(TERMS))
def test_record_prints_the_tools_histogram_or_table(tool: str, sid_objects: dict[str, Path], root_kernel: None) -> None:
    want = read_reference(tool)
    assert want["runs"] and want["compare"] == "shape"
    spec = SPECS[tool]
    run = _record_with_workload(sid_objects[want["object"]], TERMS[tool], spec.steps)
    got = reference(Run(tool, run.argv, run.stdout, run.stderr, run.status, run.running, run.roles, run.port), spec)
    assert differences(want, got) == [], run.stdout
