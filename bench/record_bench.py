"""`evspec record` against `perf record`, measured side by side in one run (issue 5; needs root).

(a) Filling a 1,048,576-entry ARRAY map from the event string. A tiny BTF-maps object `big.o`
    (map `arr`, one program on raw_syscalls:sys_enter reading arr[0]) is built with clang. evspec's
    cost of the fill is the median wall time of
    `evspec record -e './big.o/map:arr.value[0...1048575]=7/' -- true` minus that of
    `evspec record -e ./big.o -- true`; perf's cost is `perf record -q -o FILE -e
    './big.o/map:arr.value=7/' -- true` minus `perf record -q -o FILE -e ./big.o -- true`. All four
    commands run interleaved. Printed: perf_cost / evspec_cost, from the medians of the wall times
    and from the medians of the CPU times (user + system, from wait4) of the same runs: the fill
    is CPU work in both tools (perf: one BPF_MAP_UPDATE_ELEM a key; evspec: one fill program
    run), and CPU time does not count the waits (RCU grace periods at teardown, a busy machine)
    that make a few-millisecond difference of wall times noise. Both still carry the noise of a
    whole process start (tens of ms on a busy machine), so a third line takes the CPU time of
    evspec's `record_main` run inside this process (imports done, interleaved, medians) against
    perf's CPU cost. Target: >= 10x.
(b) `evspec record -e ./stdout1.o -- true` against `perf record -q -o FILE -e ./stdout1.o -- true`
    (the corpus fixture), interleaved medians. Printed: evspec / perf wall time. Target: <= 0.5x.
(c) capture mode and live decoding are measured by bench/capture_bench.py.
The evspec command is the installed console script next to sys.executable.
Usage: python bench/record_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from _common import CORPUS

BIG_SOURCE = """\
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, int);
	__type(value, int);
	__uint(max_entries, 1048576);
} arr SEC(".maps");

SEC("raw_syscalls:sys_enter")
int enter(void *ctx)
{
	int key = 0;
	int *value = bpf_map_lookup_elem(&arr, &key);

	return value ? *value : 0;
}

char _license[] SEC("license") = "GPL";
"""


def run_or_fail(cmd: list[str], cwd: Path) -> None:
    """Run one command once and stop the bench with its output if it fails: a failing command
    would be timed as a fast one."""
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"record_bench: {' '.join(cmd)!r} failed ({done.returncode}):\n{done.stdout}{done.stderr}")


def build(tmp: Path) -> Path:
    folder = tmp / "bpf"
    shutil.copytree(CORPUS / "bpf", folder)
    subprocess.run(["make", "-s", "-C", str(folder), "stdout1.o"], check=True, stdout=subprocess.DEVNULL)
    (folder / "big.c").write_text(BIG_SOURCE)
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu",
                    "-c", "big.c", "-o", "big.o"], cwd=folder, check=True)
    return folder


@dataclass(frozen=True, slots=True)
class Cost:
    """Medians over the runs of one command: wall time and CPU time (user + system), seconds."""

    wall: float
    cpu: float


def interleaved_costs(commands: Sequence[Sequence[str]], runs: int, cwd: Path) -> list[Cost]:
    """Wall and CPU time of each command, runs interleaved so that machine noise hits all alike."""
    walls: list[list[float]] = [[] for _ in commands]
    cpus: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for i, cmd in enumerate(commands):
            start = time.perf_counter()
            child = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _pid, _status, usage = os.wait4(child.pid, 0)
            walls[i].append(time.perf_counter() - start)
            cpus[i].append(usage.ru_utime + usage.ru_stime)
            child.returncode = 0  # reaped above; keeps Popen from waiting again
    return [Cost(statistics.median(w), statistics.median(c)) for w, c in zip(walls, cpus, strict=True)]


def _ratio(perf_cost: float, ev_cost: float) -> str:
    if ev_cost <= 0:
        return f"not meaningful: evspec's cost ({ev_cost:.1f} ms) is below the noise"
    return f"{perf_cost / ev_cost:.1f}x"


def in_process_costs(specs: Sequence[str], runs: int, folder: Path) -> list[float]:
    """Median CPU time (s, user + system of this process) of `evspec record -e SPEC -- true` run
    by record_main inside this process, for each spec, interleaved after one warm-up run each."""
    import argparse
    import io

    from evspec.cli.record import add_record_parser, record_main

    def once(spec: str) -> float:
        parser = argparse.ArgumentParser()
        add_record_parser(parser.add_subparsers(dest="cmd"))
        args = parser.parse_args(["record", "-e", spec, "--", "true"])
        start = time.process_time()
        status = record_main(args, stdout=io.StringIO(), stderr=io.StringIO())
        elapsed = time.process_time() - start
        if status != 0:
            sys.exit(f"record_bench: in-process record -e {spec!r} failed ({status})")
        return elapsed

    cwd = os.getcwd()
    os.chdir(folder)
    try:
        for spec in specs:
            once(spec)
        times: list[list[float]] = [[] for _ in specs]
        for _ in range(runs):
            for i, spec in enumerate(specs):
                times[i].append(once(spec))
    finally:
        os.chdir(cwd)
    return [statistics.median(t) for t in times]


def fill(evspec: str, folder: Path, runs: int) -> None:
    perf_data = str(folder / "perf.data")
    commands = [
        [evspec, "record", "-e", "./big.o/map:arr.value[0...1048575]=7/", "--", "true"],
        [evspec, "record", "-e", "./big.o", "--", "true"],
        ["perf", "record", "-q", "-o", perf_data, "-e", "./big.o/map:arr.value=7/", "--", "true"],
        ["perf", "record", "-q", "-o", perf_data, "-e", "./big.o", "--", "true"],
    ]
    for cmd in commands:
        run_or_fail(cmd, folder)
    ev_fill, ev_plain, perf_fill, perf_plain = interleaved_costs(commands, runs, folder)
    print("(a) fill of a 1,048,576-entry array (target: perf_cost / evspec_cost >= 10x)")
    for what in ("wall", "cpu"):
        ef, ep, pf, pp = (getattr(c, what) * 1000 for c in (ev_fill, ev_plain, perf_fill, perf_plain))
        print(f"    {what:>4}: evspec {ef:.0f} - {ep:.0f} = {ef - ep:.1f} ms, perf {pf:.0f} - {pp:.0f} = "
              f"{pf - pp:.1f} ms, perf_cost / evspec_cost = {_ratio(pf - pp, ef - ep)}")
    ef, ep = (t * 1000 for t in in_process_costs([commands[0][3], commands[1][3]], runs, folder))
    pf, pp = perf_fill.cpu * 1000, perf_plain.cpu * 1000
    print(f"    cpu in-process: evspec {ef:.1f} - {ep:.1f} = {ef - ep:.1f} ms, perf (above) {pf - pp:.1f} ms, "
          f"perf_cost / evspec_cost = {_ratio(pf - pp, ef - ep)}")


def plain_record(evspec: str, folder: Path, runs: int) -> None:
    commands = [
        [evspec, "record", "-e", "./stdout1.o", "--", "true"],
        ["perf", "record", "-q", "-o", str(folder / "perf.data"), "-e", "./stdout1.o", "--", "true"],
    ]
    for cmd in commands:
        run_or_fail(cmd, folder)
    ev, perf = (c.wall for c in interleaved_costs(commands, runs, folder))
    print(f"(b) record ./stdout1.o -- true: evspec {ev * 1000:.0f} ms, perf {perf * 1000:.0f} ms, "
          f"ratio {ev / perf:.2f}x of perf's wall time (target <= 0.5x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=11)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("record_bench: needs root (it loads BPF programs with evspec record and perf record)")
    evspec = Path(sys.executable).parent / "evspec"
    if not evspec.exists():
        sys.exit(f"record_bench: no evspec console script at {evspec} (install the package in this venv)")
    if shutil.which("perf") is None or shutil.which("clang") is None:
        sys.exit("record_bench: needs perf and clang on PATH")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    with tempfile.TemporaryDirectory(prefix="evspec-record-bench-") as tmp:
        folder = build(Path(tmp))
        fill(str(evspec), folder, args.runs)
        plain_record(str(evspec), folder, args.runs)
    print("(c) capture mode and live decoding: see bench/capture_bench.py")


if __name__ == "__main__":
    main()
