"""evspec record reads its rings in a drain process and prints behind it, for real (root): a
renderer stalled by a slow output pipe costs no record, the records waiting past --max-memory go
to a temporary file that is gone afterwards, a second ^C stops printing and says what was left,
records of several CPUs come out in time order, and the kernel's losses are printed where they
happened and counted per CPU at the end. Each recording is a process of its own."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bpf_build import build_bpf, build_program, require_tools
from record_cli import run_record

DATA = Path(__file__).parent / "data"
HEADER = re.compile(r"^\s*(\S+)\s+(\d+) \[(\d{3})\]\s+(\d+)\.(\d{6}):", re.M)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, root_kernel: None) -> Path:
    require_tools("clang", "cc")
    folder = tmp_path_factory.mktemp("drain")
    (folder / "emit.c").write_text((DATA / "capture" / "emit.c").read_text())
    build_bpf(folder, "emit.c", "emit.o")
    build_program(folder, str(DATA / "capture" / "loop.c"), "loop")
    subprocess.run(["cc", "-O2", "-pthread", "-o", str(folder / "two_threads"),
                    str(DATA / "live" / "two_threads.c")], check=True)
    return folder


def recorder(built: Path, spool_dir: Path, *argv: str) -> subprocess.Popen[bytes]:
    """``python -m evspec record ARGV`` in ``built``, its spool in ``spool_dir``; output piped
    and not read until the test reads it."""
    return subprocess.Popen([sys.executable, "-m", "evspec", "record", *argv], cwd=built,
                            env={**os.environ, "TMPDIR": str(spool_dir)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def spool_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("evspec-spool-*"))


def wait_for_spool(folder: Path, size: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> int:
    """Wait until a spool file in ``folder`` holds ``size`` bytes (the recording still running:
    the renderer is stalled); the size seen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1].decode()
        sizes = [p.stat().st_size for p in spool_files(folder) if p.exists()]
        if sizes and max(sizes) >= size:
            return max(sizes)
        time.sleep(0.05)
    raise AssertionError(f"no spool file of {size} bytes in {folder}: {spool_files(folder)}")


def wait_until_still(folder: Path, proc: subprocess.Popen[bytes], quiet: float = 0.5) -> None:
    """Wait until the spool file in ``folder`` has not grown for ``quiet`` seconds."""
    last = -1
    while (size := wait_for_spool(folder, 1, proc)) != last:
        last = size
        time.sleep(quiet)


def test_a_stalled_renderer_loses_nothing_and_its_spool_file_is_removed(built: Path, tmp_path: Path) -> None:
    """Nobody reads the output while 200,000 records are made: the renderer blocks on the full
    pipe, the drain goes on, 64 KiB of memory and then a temporary file hold the records; once
    the pipe is read, every record is printed, none lost, and the file is gone."""
    calls = 200_000
    proc = recorder(built, tmp_path, "-v", "--format", "json", "--max-memory", "64K", "-e", "./emit.o", "--",
                    "./loop", str(calls))
    size = wait_for_spool(tmp_path, 16 << 20, proc)  # of the 24 MB of ring records, most wait in the file
    assert proc.poll() is None  # still printing: stalled
    out, err = proc.communicate(timeout=300)
    text = err.decode()
    assert proc.returncode == 0, text
    rows = [json.loads(line) for line in out.splitlines()]
    assert sum(1 for r in rows if "raw_hex" in r) == calls and rows[-1] == {"summary": {"samples": calls, "lost": 0}}
    assert f"[ evspec record: {calls} samples, 0 lost ]" in text
    (note,) = re.findall(r"records waiting to be printed took at most (\d+) bytes of memory; (\d+) bytes went to "
                         r"(\S+) \(at most (\d+) at once\), removed", text)
    memory, spilled, path, peak = note
    assert int(memory) <= 64 << 10 and int(spilled) >= size and int(peak) >= size
    assert Path(path).parent == tmp_path and spool_files(tmp_path) == []


def test_a_second_stop_stops_printing_and_says_what_was_left(built: Path, tmp_path: Path) -> None:
    """The first SIGINT stops the workload (asleep after its calls), the second the printing: what
    was printed and what was not add up to every record made."""
    calls = 300_000
    proc = recorder(built, tmp_path, "--format", "json", "--max-memory", "64K", "-e", "./emit.o", "--",
                    "./loop", str(calls), "30")
    wait_for_spool(tmp_path, 30 << 20, proc)  # 36 MB of records: most of them made
    wait_until_still(tmp_path, proc)  # and then all: the workload sleeps
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    text = err.decode()
    assert proc.returncode == 128 + signal.SIGINT, text  # the workload's status
    rows = [json.loads(line) for line in out.splitlines()]
    printed = sum(1 for r in rows if "raw_hex" in r)
    (left,) = map(int, re.findall(r"evspec record: printing stopped: (\d+) records were not printed\n", text))
    assert left > 0 and printed + left == calls
    assert rows[-1] == {"summary": {"samples": printed, "lost": 0, "not_printed": left}}
    assert f"[ evspec record: {printed} samples, 0 lost, {left} not printed ]" in text
    assert spool_files(tmp_path) == []


def test_the_records_of_two_cpus_come_out_in_time_order(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads pinned to two CPUs call getppid() together; system-wide, each CPU's ring has
    one thread's records, and the output has them all in the order of their times."""
    monkeypatch.chdir(built)
    calls = 20_000
    status, out, err = run_record("-a", "-e", "./emit.o", "--", str(built / "two_threads"), str(calls))
    assert status == 0, err
    mine = [(int(s), int(us), int(cpu)) for comm, _tid, cpu, s, us in HEADER.findall(out) if comm == "two_threads"]
    assert len(mine) == 2 * calls
    times = [s * 1_000_000 + us for s, us, _ in mine]
    assert times == sorted(times)
    if len(os.sched_getaffinity(0)) > 1:
        cpus = [cpu for _, _, cpu in mine]
        assert len(set(cpus)) == 2 and sum(a != b for a, b in zip(cpus, cpus[1:], strict=False)) > 10  # interleaved


def test_losses_are_printed_where_they_happen_and_counted_per_cpu(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-page ring cannot hold 20,000 records: PERF_RECORD_LOST lines in the records, each
    CPU's exact count after them (LOST_SAMPLES lines; JSON lost_samples objects), adding up."""
    monkeypatch.chdir(built)
    calls = 20_000
    status, out, err = run_record("-m", "1", "-e", "./emit.o", "--", str(built / "loop"), str(calls))
    assert status == 0, err
    samples, lost = map(int, re.search(r"\[ evspec record: (\d+) samples, (\d+) lost", err).groups())  # type: ignore[union-attr]
    assert lost > 0 and samples + lost == calls
    assert re.search(r"^LOST \d+ records of __bpf_stdout__ on cpu \d+$", out, re.M)
    per_cpu = [int(n) for n in re.findall(r"^LOST_SAMPLES (\d+) of __bpf_stdout__ on cpu \d+$", out, re.M)]
    assert sum(per_cpu) == lost and out.rstrip("\n").split("\n")[-1].startswith("LOST_SAMPLES ")
    status, out, err = run_record("-m", "1", "--format", "json", "-e", "./emit.o", "--", str(built / "loop"),
                                  str(calls))
    assert status == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    summary = rows[-1]["summary"]
    totals = [r for r in rows if "lost_samples" in r]
    assert totals and len({r["cpu"] for r in totals}) == len(totals)
    assert sum(r["lost_samples"] for r in totals) == summary["lost"] > 0
    assert summary["samples"] + summary["lost"] == calls


def nice_of(pid: int) -> int:
    """A task's nice value, from /proc/PID/stat (its 19th field)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[16])


def children_of(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def wait_for_nice(pid: int, nice: int, timeout: float = 30) -> None:
    """Wait until task ``pid`` (a zombie's nice value stays readable until it is reaped) runs at
    ``nice``."""
    deadline = time.monotonic() + timeout
    while (now := nice_of(pid)) != nice:
        assert time.monotonic() < deadline, f"task {pid} runs at nice {now}, not {nice}"
        time.sleep(0.02)


@pytest.mark.parametrize("mode", ["live", "-o"])
def test_the_reader_of_the_rings_runs_ahead_of_the_workload_and_the_renderer(
        mode: str, built: Path, tmp_path: Path) -> None:
    """The rings' reader runs at nice -10 (live: the drain process; -o: evspec's reading
    thread, given back its nice value afterwards); the workload and the renderer keep theirs."""
    argv = ("-o", str(tmp_path / "x.data")) if mode == "-o" else ()
    proc = recorder(built, tmp_path, *argv, "-e", "./emit.o", "--", "./loop", "10", "30")
    try:
        deadline = time.monotonic() + 30
        while len(kids := children_of(proc.pid)) < (2 if mode == "live" else 1) or not any(
                Path(f"/proc/{k}/exe").resolve() == built / "loop" for k in kids):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1].decode()
            time.sleep(0.02)
        (workload,) = [k for k in kids if Path(f"/proc/{k}/exe").resolve() == built / "loop"]
        reader = next(k for k in kids if k != workload) if mode == "live" else proc.pid
        wait_for_nice(reader, -10)
        assert nice_of(workload) == 0
        if mode == "live":
            assert nice_of(proc.pid) == 0  # the renderer
        proc.send_signal(signal.SIGINT)
        if mode == "-o":
            wait_for_nice(proc.pid, 0)  # given back before the file is completed
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signal.SIGINT, err.decode()
    assert "10 samples, 0 lost" in err.decode()


@pytest.mark.parametrize(("value", "message"), [("12x", "'12x' is not a size"), ("1K", "1K: at least 64K"),
                                                 ("M", "'M' is not a size")])
def test_max_memory_must_be_a_size_of_at_least_64k(value: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        run_record("--max-memory", value, "-e", "./x.o", "--", "true")
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_max_memory_is_for_printed_output() -> None:
    status, out, err = run_record("--max-memory", "1M", "-o", "x.data", "-e", "./x.o", "--", "true")
    assert (status, out) == (2, "") and "--max-memory bounds the records waiting to be printed" in err
