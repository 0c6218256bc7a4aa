"""Capture mode and evspec script on the running kernel (root), against perf 6.1.

The workload is a C loop calling getppid() N times and the object emits one 56-byte bpf-output
record per call, so record counts are exact and multisets can be compared.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from record_cli import run_record, run_script

DATA = Path(__file__).parent / "data" / "capture"
PAYLOAD = (bytes([7]) + bytes(7) + b"getppid record").ljust(56, b"\0") + bytes(4)  # + the kernel's padding
N = 300


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root_kernel: None) -> Path:
    for tool in ("clang", "cc"):
        if shutil.which(tool) is None:
            if os.environ.get("CI") == "true":
                pytest.fail(f"{tool} is required in CI (scripts/test.sh installs it)")
            pytest.skip(f"{tool} not installed")
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c",
                    str(DATA / "emit.c"), "-o", str(tmp_path / "emit.o")], check=True)
    subprocess.run(["cc", "-O2", "-o", str(tmp_path / "loop"), str(DATA / "loop.c")], check=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _no_leak(command: Callable[..., tuple[int, str, str]], *argv: str) -> tuple[int, str, str]:
    before = _fds()
    result = command(*argv)
    assert _fds() == before, "descriptors left open"
    return result


def record(*argv: str) -> tuple[int, str, str]:
    return _no_leak(run_record, *argv)


def script(*argv: str) -> tuple[int, str, str]:
    return _no_leak(run_script, *argv)


Row = tuple[str, str, int, int, int, str, bytes]  # event, comm, pid, tid, cpu, time (µs), payload


def json_rows(text: str) -> list[Row]:
    rows = []
    for line in text.splitlines():
        r = json.loads(line)
        if "time_ns" not in r:  # the summary of live record output, a PERF_RECORD_LOST's line
            continue
        secs, nanos = divmod(r["time_ns"], 1_000_000_000)
        rows.append((r["event"], r["comm"], r["pid"], r["tid"], r["cpu"], f"{secs}.{nanos // 1000:06d}",
                     bytes.fromhex(r["raw_hex"])))
    return rows


_HEAD = re.compile(r"^\s*(\S+)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+(\d+\.\d{6}):\s+\d+\s+(\S+):")
_DUMP = re.compile(r"^\s*(?:BPF output:)?\s*[0-9a-f]{4}:((?: [0-9a-f]{2})+)")


def perf_rows(text: str) -> list[Row]:
    """Rows from `perf script -F +pid` text (header line, then the BPF output hexdump)."""
    rows: list[Row] = []
    head: tuple[str, ...] | None = None
    data = b""

    def flush() -> None:
        if head is not None:
            comm, pid, tid, cpu, stamp, event = head
            rows.append((event, comm, int(pid), int(tid), int(cpu), stamp, data))

    for line in text.splitlines():
        m = _HEAD.match(line)
        if m:
            flush()
            head, data = m.groups(), b""
            continue
        m = _DUMP.match(line)
        if m:
            data += bytes.fromhex(m.group(1).replace(" ", ""))
    flush()
    return rows


def perf_script(perf: str, path: str) -> list[Row]:
    done = subprocess.run([perf, "script", "-F", "+pid", "-i", path], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return perf_rows(done.stdout)


def test_perf_script_and_evspec_script_agree_on_a_capture(workdir: Path, perf_binary: str) -> None:
    status, out, err = record("-o", "cap.data", "-e", "./emit.o", "--", "./loop", str(N))
    assert status == 0 and out == "", err
    assert err.endswith(f"({N} samples, 0 lost) ]\n")
    status, text, err = script("-i", "cap.data", "--format", "json")
    assert status == 0, err
    ours = json_rows(text)
    assert len(ours) == N and {r[6] for r in ours} == {PAYLOAD} and {r[1] for r in ours} == {"loop"}
    assert sorted(perf_script(perf_binary, "cap.data")) == sorted(ours)


def test_script_text_equals_live_text(workdir: Path) -> None:
    status, live, err = record("-e", "./emit.o", "--", "./loop", "3")
    assert status == 0, err
    status, _, err = record("-o", "cap.data", "-e", "./emit.o", "--", "./loop", "3")
    assert status == 0, err
    status, text, err = script("-i", "cap.data")
    assert status == 0, err
    strip = re.compile(r"^\s*loop\s+\d+ \[\d{3}\]\s+\d+\.\d{6}:", re.M)  # pid, cpu and time differ per run
    assert strip.sub("HEAD", text) == strip.sub("HEAD", live)
    assert text.count("HEAD") == 0 and len(strip.findall(text)) == 3


def test_multisets_equal_perf_record_live_and_capture(workdir: Path, perf_binary: str) -> None:
    rec = subprocess.run([perf_binary, "record", "-q", "-o", "perf.data", "-e", "./emit.o", "--", "./loop", str(N)],
                         capture_output=True, text=True)
    assert rec.returncode == 0, rec.stderr
    perf = Counter((r[0], r[6]) for r in perf_script(perf_binary, "perf.data"))
    status, live, err = record("--format", "json", "-e", "./emit.o", "--", "./loop", str(N))
    assert status == 0, err
    status, _, err = record("-o", "cap.data", "-e", "./emit.o", "--", "./loop", str(N))
    assert status == 0, err
    capture = Counter((r[0], r[6]) for r in json_rows(script("-i", "cap.data", "--format", "json")[1]))
    assert perf == Counter((r[0], r[6]) for r in json_rows(live)) == capture == Counter({("__bpf_stdout__", PAYLOAD): N})


def test_evspec_script_reads_perfs_own_file(workdir: Path, perf_binary: str) -> None:
    rec = subprocess.run([perf_binary, "record", "-q", "-o", "perf.data", "-e", "syscalls:sys_enter_getppid",
                          "-e", "./emit.o", "--", "./loop", "5"], capture_output=True, text=True)
    assert rec.returncode == 0, rec.stderr
    status, text, err = script("-i", "perf.data", "--format", "json")
    assert status == 0, err
    ours = json_rows(text)
    # the BPF program returns 0, so perf keeps no tracepoint samples of the event it rides on
    assert sorted(perf_script(perf_binary, "perf.data")) == sorted(ours)
    assert Counter((r[0], r[1], r[6]) for r in ours) == Counter({("__bpf_stdout__", "loop", PAYLOAD): 5})
    rec = subprocess.run([perf_binary, "record", "-q", "-o", "tp.data", "-e", "syscalls:sys_enter_getppid",
                          "--", "./loop", "4"], capture_output=True, text=True)
    assert rec.returncode == 0, rec.stderr
    status, text, err = script("-i", "tp.data", "--format", "json")
    assert status == 0, err
    rows = json_rows(text)
    assert [(r[0], r[1]) for r in rows] == [("syscalls:sys_enter_getppid", "loop")] * 4
    assert all(r[3] == rows[0][3] for r in rows)


def _cli(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "evspec", "record", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_sigterm_finishes_the_capture_file(workdir: Path) -> None:
    proc = _cli("-o", "cap.data", "-e", "./emit.o", "--", "./loop", "10", "30")
    try:
        time.sleep(3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "(10 samples, 0 lost)" in err
    status, text, err = script("-i", "cap.data", "--format", "json")
    assert status == 0 and err == ""
    assert len(json_rows(text)) == 10


def test_a_killed_writer_leaves_a_readable_file(workdir: Path) -> None:
    proc = _cli("-o", "cap.data", "-e", "./emit.o", "--", "./loop", "10", "30")
    try:
        time.sleep(3)  # several rounds of reading have been written
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=20)
    finally:
        proc.kill()
    status, text, err = script("-i", "cap.data", "--format", "json")
    assert status == 0 and "was not finished" in err
    rows = json_rows(text)  # no HEADER_EVENT_DESC yet: perf's default event name
    assert [(r[0], r[1], r[6]) for r in rows] == [("bpf-output", "loop", PAYLOAD)] * 10


def test_loss_counts_are_exact(workdir: Path) -> None:
    """A one-page ring cannot keep 20,000 records: samples + lost is the number of calls, where the
    PERF_RECORD_LOST records alone miss the drops after the last record that fitted."""
    calls = 20_000
    status, out, err = record("-m", "1", "--format", "json", "-e", "./emit.o", "--", "./loop", str(calls))
    assert status == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    summary = lines[-1]["summary"]
    assert summary["samples"] == len(json_rows(out)) and summary["lost"] > 0
    assert summary.get("lost_reported", summary["lost"]) == sum(x.get("lost", 0) for x in lines[:-1])
    assert summary["samples"] + summary["lost"] == calls
    assert summary.get("lost_reported", summary["lost"]) <= summary["lost"]
    status, out, err = record("-m", "1", "-o", "cap.data", "-e", "./emit.o", "--", "./loop", str(calls))
    assert status == 0, err
    m = re.search(r"\((\d+) samples, (\d+) lost", err)
    assert m is not None and int(m.group(1)) + int(m.group(2)) == calls, err


def test_a_capture_carries_its_exact_losses(workdir: Path, perf_binary: str) -> None:
    """From the file alone: samples + PERF_RECORD_LOST_SAMPLES counts == calls, for evspec script
    (one loss line per CPU that lost samples, the JSON summary) as for perf report --stats."""
    calls = 20_000
    status, _, err = record("-m", "1", "-o", "cap.data", "-e", "./emit.o", "--", "./loop", str(calls))
    assert status == 0, err
    status, text, err = script("-i", "cap.data", "--format", "json")
    assert status == 0 and err == ""
    lines = [json.loads(line) for line in text.splitlines()]
    totals = [x for x in lines if "lost_samples" in x]
    summary = lines[-1]["summary"]
    assert totals and all(x["event"] == "__bpf_stdout__" and x["lost_samples"] > 0 for x in totals)
    assert len({x["cpu"] for x in totals}) == len(totals)
    assert summary["lost"] == sum(x["lost_samples"] for x in totals)
    assert summary["samples"] == len(json_rows(text)) and summary["samples"] + summary["lost"] == calls
    assert summary.get("lost_reported", summary["lost"]) == sum(x.get("lost", 0) for x in lines[:-1])
    status, text, _ = script("-i", "cap.data")
    assert [line for line in text.splitlines() if line.startswith("LOST_SAMPLES ")] == [
        f"LOST_SAMPLES {x['lost_samples']} of __bpf_stdout__ on cpu {x['cpu']}" for x in totals
    ]
    # (perf's own output is not always UTF-8)
    done = subprocess.run([perf_binary, "script", "-i", "cap.data"], capture_output=True, encoding="utf-8",
                          errors="replace")
    assert done.returncode == 0, done.stderr
    # perf's only complaint is the losses, as for a file of its own: the LOST chunks, the share lost
    warnings = [line for line in done.stderr.splitlines() if line and not line.startswith(("Warning:", "Check IO"))]
    chunks = sum(1 for x in lines if "lost" in x and "event" in x)  # the PERF_RECORD_LOST lines
    drop_rate = summary["lost"] / (summary["samples"] + summary["lost"])  # perf's double arithmetic
    share_warned = drop_rate > 0.05  # perf warns of the share lost above 5% only
    assert len(warnings) == 1 + share_warned, warnings
    assert re.fullmatch(rf"Processed \d+ events and lost {chunks} chunks!", warnings[0])
    if share_warned:
        assert warnings[1] == f"Processed {calls} samples and lost {drop_rate * 100.0:.2f}%!"
    stats = subprocess.run([perf_binary, "report", "--stats", "-i", "cap.data"], capture_output=True, text=True)
    assert stats.returncode == 0, stats.stderr
    per_event = stats.stdout[stats.stdout.index("__bpf_stdout__ stats:"):]
    assert re.search(rf"SAMPLE events:\s+{summary['samples']}\n", per_event), per_event
    assert re.search(rf"LOST_SAMPLES events:\s+{summary['lost']}\n", per_event), per_event


def test_verbose_notes(workdir: Path) -> None:
    status, _, err = record("-v", "-e", "./emit.o", "--", "./loop", "1")
    assert status == 0
    assert f"evspec record: {workdir / 'emit.o'}: BTF loaded (1 of 2 maps with key/value types)\n" in err


@pytest.fixture
def keep(workdir: Path) -> Path:
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c",
                    str(DATA.parent / "live" / "keep.c"), "-o", str(workdir / "keep.o")], check=True)
    return workdir / "keep.o"


_TP_LINE = re.compile(r"^\s*(\S+)\s+(\d+)\s+\[(\d+)\]\s+(\d+\.\d{6}):\s+(\S+): (.*)$")


def tracepoint_lines(text: str) -> list[tuple[str, ...]]:
    return sorted(m.groups() for m in map(_TP_LINE.match, text.splitlines()) if m)


def test_tracepoint_fields_live_in_capture_and_against_perf_script(keep: Path, perf_binary: str) -> None:
    status, live, err = record("--format", "json", "-e", "./keep.o", "--", "./loop", "3")
    assert status == 0, err
    rows = [json.loads(line) for line in live.splitlines()[:-1]]
    execs = [r for r in rows if r["event"] == "sched:sched_process_exec"]
    assert len(execs) == 1 and execs[0]["fields"] == {"filename": "./loop", "pid": execs[0]["pid"],
                                                       "old_pid": execs[0]["pid"]}
    getppid = [r["fields"] for r in rows if r["event"] == "syscalls:sys_enter_getppid"]
    assert len(getppid) == 3 and len({str(f) for f in getppid}) == 1 and set(getppid[0]) == {"__syscall_nr"}
    status, _, err = record("-o", "cap.data", "-e", "./keep.o", "--", "./loop", "3")
    assert status == 0, err
    status, ours, err = script("-i", "cap.data")
    assert status == 0, err
    done = subprocess.run([perf_binary, "script", "-i", "cap.data"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    ours_lines, perf_lines = tracepoint_lines(ours), tracepoint_lines(done.stdout)
    assert len(ours_lines) == len(perf_lines) == 4
    # both print with the tracepoint's print fmt: sched_process_exec's name=value list, and
    # nothing for sys_enter_getppid (whose one field JSON carries)
    assert ours_lines == perf_lines
    assert {x[5] for x in ours_lines if "getppid" in x[4]} == {""}


def test_a_full_file_system_is_an_error_and_the_file_holds_what_fits(workdir: Path, perf_binary: str) -> None:
    """-o onto a 200 KiB tmpfs (mounted in a private mount namespace): exit 2 naming the file and
    ENOSPC, the summary saying how many samples were not written, and a complete file of the
    samples that fit, which perf script and evspec script read alike."""
    small = workdir / "small"
    small.mkdir()
    evspec = f"{sys.executable} -m evspec"
    steps = (f"mount -t tmpfs -o size=200k tmpfs {small} || exit 99\n"
             f"{evspec} record -o {small}/cap.data -e ./emit.o -- ./loop 12000 2> record.err; echo $? > record.rc\n"
             f"{evspec} script --format json -i {small}/cap.data > script.json 2> script.err\n"
             f"{perf_binary} script -F +pid -i {small}/cap.data > perf.txt 2> perf.err\n")
    subprocess.run(["unshare", "-m", "sh", "-c", steps], cwd=workdir, check=True)
    err = (workdir / "record.err").read_text()
    assert (workdir / "record.rc").read_text() == "2\n", err
    unwritten = re.search(rf"^evspec record: error: cannot write {small}/cap\.data: No space left on device "
                          r"\(ENOSPC\); (\d+) samples were not written$", err, re.M)
    summary = re.search(rf"^\[ evspec record: wrote \d+ bytes to {small}/cap\.data \((\d+) samples, (\d+) lost, "
                        r"(\d+) not written\) \]$", err, re.M)
    assert unwritten and summary and "Traceback" not in err, err
    kept, lost, not_written = map(int, summary.groups())
    assert int(unwritten.group(1)) == not_written and kept > 0 and kept + lost + not_written == 12000
    assert f"evspec record: {small}/cap.data holds the {kept} samples read before, and is complete" in err
    ours = json_rows((workdir / "script.json").read_text())
    assert len(ours) == kept and sorted(ours) == sorted(perf_rows((workdir / "perf.txt").read_text()))
