"""evspec record never prints its own activity: a program that sees every task's writes (into a
ring buffer, which keeps every task's records) does nothing in evspec's own process, and a plain
tracepoint recorded system-wide leaves evspec's records out at the source (an ftrace filter);
a ring buffer of a recording that follows a command is said once to hold the whole system's
records. Each recording runs as a process of its own, writing what it prints to a pipe."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bpf_build import build_bpf, copy_sources, require_tools

DATA = Path(__file__).parent / "data" / "ringbuf"


@pytest.fixture
def workdir(tmp_path: Path, root_kernel: None) -> Path:
    require_tools("clang")
    copy_sources(DATA, ("own_writes.c",), tmp_path)
    build_bpf(tmp_path, "own_writes.c", "own_writes.o")
    return tmp_path


def recorder(workdir: Path, *argv: str) -> tuple[int, int, str, str]:
    """``python -m evspec record ARGV`` in a process of its own: (its pid, status, stdout, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "evspec", "record", *argv], cwd=workdir,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=120)
    return proc.pid, proc.returncode, out, err


def test_a_ring_buffer_program_never_sees_evspec_itself(workdir: Path) -> None:
    pid, status, out, err = recorder(workdir, "--format", "json", "-e", "./own_writes.o", "--",
                                     "sh", "-c", "for i in 1 2 3; do echo $i > /dev/null; done; sleep 0.3")
    assert status == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    tasks = {int.from_bytes(bytes.fromhex(r["raw_hex"])[:4], "little") for r in rows if r.get("ringbuf")}
    assert tasks and pid not in tasks, (pid, tasks)
    assert len(rows) < 1000  # printing its own writes would have fed itself until the command ended
    assert err.count("evspec record: note: ring buffer map writes (") == 1
    assert "holds the records of the whole system" in err and "evspec's own activity is left out" in err


def test_a_system_wide_tracepoint_leaves_evspec_out(workdir: Path) -> None:
    pid, status, out, err = recorder(workdir, "-a", "-e", "syscalls:sys_enter_write", "--", "sh", "-c",
                                     "echo x > /dev/null; sleep 0.3")
    assert status == 0, err
    tids = {int(m.group(1)) for m in re.finditer(r"^\s*\S+\s+(\d+) \[\d{3}\]", out, re.M)}
    assert tids and pid not in tids
    assert "evspec record: note:" not in err  # system-wide is what -a asks for
