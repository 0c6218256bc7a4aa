"""Nothing lost at a million records: `evspec record` against bpftrace on one producer, side by side
in one run (issue 25; needs root, bpftrace from scripts/oracles.sh).

The producer: a BPF object that emits a 56-byte record through bpf_perf_event_output on every
getppid() (tests/data/capture/emit.c, automatic __bpf_stdout__), and a C loop of N getppid() calls
(tests/data/capture/loop.c), built with clang and cc into a folder under /tmp (bpftrace runs in
the Debian sid chroot, whose /tmp is this machine's). bpftrace 0.27 runs
`tracepoint:syscalls:sys_enter_getppid { printf("%d %s\\n", 7, "getppid record"); }` on the same
loop. Each round runs, interleaved, with output to /dev/null:
  bpftrace                      losses: its "Lost N events" report
  evspec record (text)          losses: record's summary (exact: PERF_FORMAT_LOST)
  evspec record --format json   the same
  evspec record -o FILE         the same, counted from the file
Printed per round: losses and wall times; then the medians of the wall times and their ratios to
bpftrace's. Targets: 0 lost in every evspec run; text wall time <= bpftrace's.
Then (unless --quick) 5,000,000 calls at the producer's full rate with -o (target: 0 lost), and
the start time of `evspec record -e ./stdout1.o -- true` (the corpus's stdout1.c) against
bpftrace's with its one tracepoint and `-c true`, interleaved medians (target: <= 0.5x).
--pages P1,P2,... instead measures the losses of text and -o runs for each ring size (-m), to
choose the default. The evspec command is the console script next to sys.executable (install the
package as a wheel: an editable install starts slower).
Usage: python bench/loss_bench.py [--calls N] [--runs R] [--quick] [--pages P,...]
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

from _common import CORPUS, REPO

DATA = REPO / "tests" / "data" / "capture"
ORACLE = Path("/var/cache/evspec/oracles/bin/bpftrace")
BPFTRACE_PROGRAM = 'tracepoint:syscalls:sys_enter_getppid { printf("%d %s\\n", 7, "getppid record"); }'
_EVSPEC = re.compile(r"(?:\[ evspec record: |\()(\d+) samples, (\d+) lost")
_BPFTRACE_LOST = re.compile(r"Lost (\d+) events")


def build(folder: Path) -> None:
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c",
                    str(DATA / "emit.c"), "-o", str(folder / "emit.o")], check=True)
    subprocess.run(["cc", "-O2", "-o", str(folder / "loop"), str(DATA / "loop.c")], check=True)
    shutil.copytree(CORPUS / "bpf", folder / "corpus")
    subprocess.run(["make", "-s", "-C", str(folder / "corpus"), "stdout1.o"], check=True, stdout=subprocess.DEVNULL)


def timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    """Wall time and standard error of ``cmd`` (standard output to /dev/null); a failing command
    stops the bench: it would be timed as a fast one."""
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"loss_bench: {' '.join(cmd)!r} failed ({done.returncode}):\n{done.stderr}")
    return elapsed, done.stderr


def evspec_lost(stderr: str, calls: int) -> int:
    m = _EVSPEC.search(stderr)
    if m is None:
        sys.exit(f"loss_bench: no evspec report in:\n{stderr}")
    samples, lost = map(int, m.groups())
    if samples + lost != calls:
        sys.exit(f"loss_bench: {samples} samples + {lost} lost is not {calls} calls:\n{stderr}")
    return lost


def bpftrace_lost(stderr: str) -> int:
    if "Attached 1 probe" not in stderr:
        sys.exit(f"loss_bench: bpftrace did not attach its probe:\n{stderr}")
    return sum(int(m.group(1)) for m in _BPFTRACE_LOST.finditer(stderr))


def commands(evspec: str, folder: Path, calls: int, pages: int | None = None) -> dict[str, list[str]]:
    loop = [str(folder / "loop"), str(calls)]
    m = ["-m", str(pages)] if pages else []
    return {
        "bpftrace": [str(ORACLE), "-e", BPFTRACE_PROGRAM, "-c", " ".join(loop)],
        "text": [evspec, "record", *m, "-e", "./emit.o", "--", *loop],
        "json": [evspec, "record", *m, "--format", "json", "-e", "./emit.o", "--", *loop],
        "-o": [evspec, "record", *m, "-o", str(folder / "cap.data"), "-e", "./emit.o", "--", *loop],
    }


def side_by_side(evspec: str, folder: Path, calls: int, runs: int) -> None:
    cmds = commands(evspec, folder, calls)
    walls: dict[str, list[float]] = {name: [] for name in cmds}
    losses: dict[str, list[int]] = {name: [] for name in cmds}
    print(f"{calls:,} getppid calls, {runs} interleaved rounds, output to /dev/null; lost / wall time (s)")
    print(f"{'round':>5} " + " ".join(f"{name:>18}" for name in cmds))
    for round_ in range(runs):
        row = f"{round_:5d} "
        for name, cmd in cmds.items():
            wall, stderr = timed(cmd, folder)
            lost = bpftrace_lost(stderr) if name == "bpftrace" else evspec_lost(stderr, calls)
            walls[name].append(wall)
            losses[name].append(lost)
            row += f"{f'{lost} / {wall:.2f}':>18} "
        print(row, flush=True)
    med = {name: statistics.median(w) for name, w in walls.items()}
    print("lost in all rounds: " + ", ".join(f"{name} {sum(v)}" for name, v in losses.items())
          + " (target: evspec 0)")
    print("wall time medians: " + ", ".join(f"{name} {t:.2f} s" for name, t in med.items()))
    print("evspec / bpftrace wall time: " + ", ".join(f"{name} {med[name] / med['bpftrace']:.2f}x"
                                                      for name in cmds if name != "bpftrace")
          + " (target: text <= 1.00x)")


def full_rate(evspec: str, folder: Path, calls: int) -> None:
    cmd = commands(evspec, folder, calls)["-o"]
    wall, stderr = timed(cmd, folder)
    lost = evspec_lost(stderr, calls)
    print(f"{calls:,} calls at the producer's full rate, -o: {lost} lost, {wall:.2f} s, "
          f"{calls / wall:,.0f} records/s (target: 0 lost)")


def start_times(evspec: str, folder: Path, runs: int) -> None:
    cmds = {"evspec": [evspec, "record", "-e", "./corpus/stdout1.o", "--", "true"],
            "bpftrace": [str(ORACLE), "-e", BPFTRACE_PROGRAM, "-c", "true"]}
    walls: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            walls[name].append(timed(cmd, folder)[0])
    med = {name: statistics.median(w) for name, w in walls.items()}
    print(f"start time, `-- true`, medians of {runs}: evspec record {med['evspec']:.3f} s, bpftrace "
          f"{med['bpftrace']:.3f} s, ratio {med['evspec'] / med['bpftrace']:.2f}x (target: <= 0.50x)")


def sweep(evspec: str, folder: Path, calls: int, runs: int, sizes: list[int]) -> None:
    print(f"{calls:,} getppid calls, {runs} interleaved rounds; lost by ring size (-m pages per CPU)")
    lost: dict[tuple[int, str], list[int]] = {}
    walls: dict[tuple[int, str], list[float]] = {}
    for _ in range(runs):
        for pages in sizes:
            cmds = commands(evspec, folder, calls, pages)
            for name in ("text", "-o"):
                wall, stderr = timed(cmds[name], folder)
                lost.setdefault((pages, name), []).append(evspec_lost(stderr, calls))
                walls.setdefault((pages, name), []).append(wall)
    for (pages, name), values in lost.items():
        print(f"-m {pages:5d} {name:>5}: lost {values}, wall median {statistics.median(walls[(pages, name)]):.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="only the side-by-side rounds")
    ap.add_argument("--pages", help="ring sizes to compare (comma-separated -m values) instead")
    opts = ap.parse_args()
    evspec = str(Path(sys.executable).with_name("evspec"))
    if not ORACLE.exists():
        sys.exit(f"loss_bench: {ORACLE} is missing: run scripts/oracles.sh as root")
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="loss-bench-") as tmp:
        folder = Path(tmp)
        build(folder)
        if opts.pages:
            sweep(evspec, folder, opts.calls, opts.runs, [int(p) for p in opts.pages.split(",")])
            return
        side_by_side(evspec, folder, opts.calls, opts.runs)
        if not opts.quick:
            full_rate(evspec, folder, 5 * opts.calls)
            start_times(evspec, folder, 9)


if __name__ == "__main__":
    main()
