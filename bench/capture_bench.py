"""Issue 5 bench (c): capture mode against perf record, and live decoding speed (needs root).

A BPF object emits one 56-byte bpf-output record per getppid() call (tests/data/capture/emit.c)
and a C loop calls getppid() N times (loop.c); both are built in a temp dir. Side by side, runs
interleaved, the same ring size (-m PAGES) for both:
  perf record -q -m PAGES -o perf.data -e ./emit.o -- ./loop N
  evspec record -m PAGES -o cap.data -e ./emit.o -- ./loop N
Printed per run: records lost by each (perf's counted from its file's LOST/LOST_SAMPLES records,
evspec's from its report), then median wall times and their ratio (target <= 1.5x, evspec losing
no more than perf). Live mode: `evspec record --format json ... > /dev/null`, records/s end to end
and its loss count; and the live decoder alone (ring bytes -> SampleLine, the code live mode runs)
over the captured data section (target >= 500,000 records/s).
The evspec command is the console script next to sys.executable (use an installed wheel).
Usage: python bench/capture_bench.py [--calls N] [--runs R] [--pages P]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "capture"
_REPORT = re.compile(r"\((\d+) samples, (\d+) lost\)|: (\d+) samples, (\d+) lost")


def build(folder: Path) -> None:
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c",
                    str(DATA / "emit.c"), "-o", str(folder / "emit.o")], check=True)
    subprocess.run(["cc", "-O2", "-o", str(folder / "loop"), str(DATA / "loop.c")], check=True)


def timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"capture_bench: {' '.join(cmd)!r} failed ({done.returncode}):\n{done.stderr}")
    return elapsed, done.stderr


def evspec_counts(stderr: str) -> tuple[int, int]:
    m = _REPORT.search(stderr)
    if m is None:
        sys.exit(f"capture_bench: no evspec report in:\n{stderr}")
    samples, lost = (g for g in m.groups() if g is not None)
    return int(samples), int(lost)


def perf_file_counts(path: Path) -> tuple[int, int]:
    """Samples and lost records of a perf.data file, from its records."""
    import struct

    from evspec.loader.perf_abi import RecordType
    from evspec.loader.perfdata import read_perf_data

    data = read_perf_data(path)
    samples = lost = 0
    for rec in data.records():
        if rec.type == RecordType.SAMPLE:
            samples += 1
        elif rec.type in (RecordType.LOST, RecordType.LOST_SAMPLES):
            offset = 16 if rec.type == RecordType.LOST else 8
            lost += struct.unpack_from("<Q", data.buf, rec.offset + offset)[0]
    return samples, lost


def decode_rate(path: Path) -> float:
    """Records/s of live mode's decoder (RecordSession._decode) over the capture's data section."""
    from evspec.loader.fake_kernel import FakeKernel
    from evspec.loader.kernel import Kernel
    from evspec.loader.perfdata import read_perf_data
    from evspec.loader.ringbuf import SampleLayout
    from evspec.loader.session import SAMPLE_TYPE, RecordSession

    data = read_perf_data(path)
    chunk = data.buf[data.data_offset : data.data_offset + data.data_size]
    session = RecordSession(kernel=Kernel(FakeKernel()))
    lines: list[object] = []
    start = time.perf_counter()
    session._decode("__bpf_stdout__", 0, SampleLayout(int(SAMPLE_TYPE)), chunk, lines.append)
    elapsed = time.perf_counter() - start
    return len(lines) / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pages", type=int, default=128)
    opts = ap.parse_args()
    evspec = str(Path(sys.executable).with_name("evspec"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build(folder)
        n, m = str(opts.calls), str(opts.pages)
        perf_cmd = ["perf", "record", "-q", "-m", m, "-o", "perf.data", "-e", "./emit.o", "--", "./loop", n]
        cap_cmd = [evspec, "record", "-m", m, "-o", "cap.data", "-e", "./emit.o", "--", "./loop", n]
        live_cmd = [evspec, "record", "-m", m, "--format", "json", "-e", "./emit.o", "--", "./loop", n]
        perf_t, cap_t, live_t = [], [], []
        print(f"{opts.calls} getppid calls, {opts.pages} ring pages, {opts.runs} interleaved runs")
        print(f"{'run':>3} {'perf lost':>10} {'capture lost':>13} {'live lost':>10} {'live rec/s':>11}")
        for run in range(opts.runs):
            t, _ = timed(perf_cmd, folder)
            perf_t.append(t)
            perf_samples, perf_lost = perf_file_counts(folder / "perf.data")
            t, err = timed(cap_cmd, folder)
            cap_t.append(t)
            _, cap_lost = evspec_counts(err)
            t, err = timed(live_cmd, folder)
            live_t.append(t)
            live_samples, live_lost = evspec_counts(err)
            print(f"{run:3d} {perf_lost:10d} {cap_lost:13d} {live_lost:10d} {live_samples / t:11,.0f}")
        perf_med, cap_med, live_med = (statistics.median(x) for x in (perf_t, cap_t, live_t))
        print(f"wall time median: perf {perf_med:.3f} s, evspec capture {cap_med:.3f} s, "
              f"ratio {cap_med / perf_med:.2f}x (target <= 1.5x)")
        print(f"live mode end to end (JSON to /dev/null): median {live_med:.3f} s")
        print(f"live decoder alone: {decode_rate(folder / 'cap.data'):,.0f} records/s (target >= 500,000)")
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
