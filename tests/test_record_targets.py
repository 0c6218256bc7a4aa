"""evspec record on other targets than a command it starts (root): -p PID, -a, -C CPUS, and -i
with an event stored in a map. Every run is checked to leave no descriptor open.

keep.o keeps every sys_enter_getppid (and sched_process_exec) sample (its programs return 1), so
the tracepoint's own samples are what is recorded, with their decoded fields; the helper process
is a Python loop calling getppid() at a known pace.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evspec.cli.record import add_record_parser, record_main

DATA = Path(__file__).parent / "data"
GETPPID_NR = {"x86_64": 110, "aarch64": 173}
HELPER = ("import os, sys, time\nprint('ready', flush=True)\n"
          "for _ in range(int(sys.argv[1])):\n    os.getppid()\n    time.sleep(0.01)\n")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root_kernel: None) -> Path:
    if shutil.which("clang") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("clang is required in CI (scripts/test.sh installs it)")
        pytest.skip("clang not installed")
    for src, obj in ((DATA / "live" / "keep.c", "keep.o"), (DATA / "capture" / "emit.c", "emit.o")):
        subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c",
                        str(src), "-o", str(tmp_path / obj)], check=True)
    shutil.copy(DATA / "bpf" / "channel.c", tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def record(*argv: str) -> tuple[int, list[dict[str, object]], str]:
    """``evspec record --format json ARGV`` in this process: status, sample lines, stderr."""
    parser = argparse.ArgumentParser()
    add_record_parser(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(["record", "--format", "json", *argv])
    out, err = io.StringIO(), io.StringIO()
    before = _fds()
    status = record_main(args, stdout=out, stderr=err)
    assert _fds() == before, "descriptors left open"
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines and set(lines[-1]) == {"summary"}, out.getvalue()[-300:]
    samples = lines[:-1]
    assert lines[-1]["summary"]["samples"] == len(samples)  # type: ignore[index]
    return status, samples, err.getvalue()


def helper(calls: int) -> subprocess.Popen[bytes]:
    """A process calling getppid() ``calls`` times, 10 ms apart, started before the recording."""
    proc = subprocess.Popen([sys.executable, "-c", HELPER, str(calls)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"  # in its loop (however loaded the machine)
    return proc


def getppid_samples(samples: list[dict[str, object]]) -> list[dict[str, object]]:
    return [s for s in samples if s["event"] == "syscalls:sys_enter_getppid"]


def test_pid_records_a_running_process_until_it_exits(workdir: Path) -> None:
    proc = helper(200)
    try:
        status, samples, err = record("-p", str(proc.pid), "-e", "./keep.o")
        assert proc.poll() is not None  # record returned when the process had exited
    finally:
        proc.kill()
        proc.wait()
    assert status == 0, err
    got = getppid_samples(samples)
    assert 10 < len(got) <= 200, err  # those made after the events were enabled
    assert {(s["pid"], s["tid"]) for s in got} == {(proc.pid, proc.pid)}
    nr = GETPPID_NR.get(platform.machine())
    assert all(s["fields"] == {"__syscall_nr": nr} for s in got) or nr is None


def test_pid_stops_on_sigint(workdir: Path) -> None:
    proc = helper(100_000)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        status, samples, err = record("-p", str(proc.pid), "-e", "./keep.o")
        assert proc.poll() is None  # the recorded process is not ours to stop
    finally:
        timer.cancel()
        proc.kill()
        proc.wait()
    assert status == 0, err
    assert len(getppid_samples(samples)) > 10
    assert err.endswith(f"[ evspec record: {len(samples)} samples, 0 lost ]\n")


def test_system_wide_records_another_process(workdir: Path) -> None:
    proc = helper(300)
    try:
        status, samples, err = record("-a", "-e", "./keep.o", "--", "sleep", "0.5")
        assert proc.poll() is None  # it was calling getppid() all along
    finally:
        proc.kill()
        proc.wait()
    assert status == 0, err
    assert proc.pid in {s["pid"] for s in getppid_samples(samples)}


def test_cpu_list_limits_the_cpus(workdir: Path) -> None:
    """The same loop pinned to CPU 0 and to CPU 1: -C 1 records the second only."""
    if len(os.sched_getaffinity(0)) < 2:
        if os.environ.get("CI") == "true":
            pytest.fail(f"needs two CPUs; CI machines have 2, this process may run on {os.sched_getaffinity(0)}")
        pytest.skip("needs two CPUs")
    loop = f"{shlex.quote(sys.executable)} -c {shlex.quote(HELPER)} 30"
    both = f"taskset -c 0 {loop} & taskset -c 1 {loop}; wait"
    status, samples, err = record("-C", "1", "-e", "./keep.o", "--", "sh", "-c", both)
    assert status == 0, err
    got = getppid_samples(samples)
    assert {s["cpu"] for s in got} == {1} and 10 < len(got) <= 30 + 5, err  # + the shell's own


def test_map_event_needs_no_inherit(workdir: Path) -> None:
    argv = ("-e", "bpf-output/name=evt/", "-e", "./channel.c/map:channel.event=evt/", "--", "sleep", "0.01")
    parser = argparse.ArgumentParser()
    add_record_parser(parser.add_subparsers(dest="cmd"))
    out, err = io.StringIO(), io.StringIO()
    before = _fds()
    status = record_main(parser.parse_args(["record", *argv]), stdout=out, stderr=err)
    assert _fds() == before, "descriptors left open"
    assert status == 176 and out.getvalue() == ""
    assert "ERROR: Apply config to BPF failed: Doesn't support inherit event (Hint: use -i to turn off inherit)\n" in err.getvalue()
    status, samples, err_text = record("-i", *argv)
    assert status == 0, err_text
    assert [(s["event"], s["comm"]) for s in samples] == [("evt", "sleep")]
