"""Plain tracepoint events in ``evspec record``: sampled as perf record samples them (every hit)
and printed as perf script prints them, live, in JSON and in a capture that
evspec script, perf 6.1 and perf 7.2 read; an event record can neither print nor give to a program
is refused before anything runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from conftest import oracle
from record_cli import run_record, run_script

EVENTS = ("-e", "syscalls:sys_enter_openat", "-e", "sched:sched_process_exec")
_LINE = re.compile(r"^\s*(\S+)\s+(\d+)(?:/\d+)?\s+(?:\[(\d+)\]\s+)?(\d+\.\d{6}):\s+(\S+):\s?(.*)$")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root_kernel: None) -> Path:
    (tmp_path / "file.txt").write_text("hello\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def record(*argv: str) -> tuple[int, str, str]:
    before = _fds()
    result = run_record(*argv)
    assert _fds() == before, "descriptors left open"
    return result


def lines(text: str) -> list[tuple[str, ...]]:
    """(comm, tid, cpu, time, event, text) of each tracepoint line of perf-script text."""
    return [m.groups() for m in map(_LINE.match, text.splitlines()) if m]  # type: ignore[misc]


def shape(text: str) -> Counter[tuple[str, str, str]]:
    """What two runs of one workload share: task, event and the printed fields, with pids and
    user addresses (which differ from run to run) masked."""
    out: Counter[tuple[str, str, str]] = Counter()
    for comm, _tid, _cpu, _time, event, rest in lines(text):
        out[(comm, event, re.sub(r"pid=\d+", "pid=N", re.sub(r"0x[0-9a-f]{9,}", "ADDR", rest)))] += 1
    return out


def test_a_plain_tracepoint_is_sampled_and_printed_as_perf_prints_it(workdir: Path, perf_binary: str) -> None:
    status, out, err = record(*EVENTS, "--", "cat", "file.txt")
    assert status == 0, err
    count = len(lines(out))
    assert count >= 5 and err.endswith(f"[ evspec record: {count} samples, 0 lost ]\n")
    assert re.search(r"^\s+cat\s+\d+ \[\d{3}\]\s+\d+\.\d{6}: syscalls:sys_enter_openat: dfd: 0xffffff9c, "
                     r"filename: 0x[0-9a-f]+, flags: 0x[0-9a-f]{8}, mode: 0x[0-9a-f]{8}$", out, re.M), out
    done = subprocess.run([perf_binary, "record", "-q", "-o", "perf.data", *EVENTS, "--", "cat", "file.txt"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    perf = subprocess.run([perf_binary, "script", "-i", "perf.data"], capture_output=True, text=True, check=True)
    assert shape(out) == shape(perf.stdout)


def test_json_lines_carry_the_fields(workdir: Path) -> None:
    status, out, err = record("--format", "json", *EVENTS, "--", "cat", "file.txt")
    assert status == 0, err
    *rows, summary = [json.loads(line) for line in out.splitlines()]
    (execs,) = [r for r in rows if r["event"] == "sched:sched_process_exec"]
    assert execs["fields"] == {"filename": "/usr/bin/cat", "pid": execs["pid"], "old_pid": execs["pid"]}
    opens = [r for r in rows if r["event"] == "syscalls:sys_enter_openat"]
    assert len(opens) + 1 == len(rows)
    assert all(set(r["fields"]) == {"__syscall_nr", "dfd", "filename", "flags", "mode"} for r in opens)
    assert summary == {"summary": {"samples": len(rows), "lost": 0}}


def test_a_capture_reads_back_in_evspec_perf_61_and_perf_72(workdir: Path, perf_binary: str) -> None:
    status, out, err = record("-o", "cap.data", *EVENTS, "--", "cat", "file.txt")
    assert (status, out) == (0, ""), err
    samples = int(re.search(r"\((\d+) samples, 0 lost\)", err).group(1))  # type: ignore[union-attr]
    status, ours, err = run_script("-i", "cap.data")
    assert status == 0, err
    perf61 = subprocess.run([perf_binary, "script", "-i", "cap.data"], capture_output=True, text=True)
    assert perf61.returncode == 0, perf61.stderr
    assert ours.splitlines() == perf61.stdout.splitlines() and len(lines(ours)) == samples
    perf72 = subprocess.run([oracle("perf-7.2"), "script", "-i", "cap.data"], capture_output=True, text=True)
    assert perf72.returncode == 0, perf72.stderr
    assert lines(ours) == lines(perf72.stdout)  # perf 7.2 pads the tid wider


def test_a_counter_nothing_reads_is_refused_before_anything_runs(workdir: Path) -> None:
    status, out, err = record("-e", "cpu-clock", "-e", "syscalls:sys_enter_getppid", "--", "touch", "ran")
    assert (status, out) == (2, ""), err
    assert ("evspec record: error: event 'cpu-clock' (-e #1) cannot be recorded: evspec record prints the samples "
            "of tracepoint and bpf-output events only, and those of a software event are instruction pointers") in err
    assert "help: or give it to a program of a BPF object: map:NAME.event=EVENT" in err
    assert not (workdir / "ran").exists()


def test_a_tool_event_is_refused_as_what_it_is(workdir: Path) -> None:
    """perf 7.2+ gives tool events a PMU type of their own that no kernel knows: opening one said
    "no event of type 4294967294"."""
    status, out, err = record("-e", "duration_time", "--", "touch", "ran")
    assert (status, out) == (2, ""), err
    assert ("evspec record: error: event 'duration_time' (-e #1) cannot be recorded: it is one of perf's tool "
            "events, which perf stat computes in user space") in err
    assert "help: count it with perf stat" in err and "4294967294" not in err
    assert not (workdir / "ran").exists()
