"""`evspec script` against `perf script` on the same capture of tracepoints, side by side.

perf (6.1, on PATH) records whole tracepoint systems (syscalls, sched, signal, timer) over a small
shell workload into a temporary file; both tools then print it, runs interleaved. Printed: the
records, each tool's median wall time, and evspec / perf. The text of the two is compared too
(tests/test_printfmt.py holds them equal): a difference is printed, not timed away.
Needs root (perf record of tracepoints). Usage: python bench/script_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import interleaved_wall

SYSTEMS = ("syscalls", "sched", "signal", "timer")
WORKLOAD = "for i in 1 2 3 4 5 6 7 8; do ls -R /usr/lib/python3 > /dev/null; cat /etc/passwd > /dev/null; done"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    perf = shutil.which("perf")
    if perf is None:
        print("perf is not installed", file=sys.stderr)
        return 2
    evspec = str(Path(sys.executable).with_name("evspec"))
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        subprocess.run([perf, "record", "-q", "-o", str(data), *(f"-e{s}:*" for s in SYSTEMS), "--",
                        "sh", "-c", WORKLOAD], check=True, stdout=subprocess.DEVNULL)
        theirs = subprocess.run([perf, "script", "-i", str(data)], capture_output=True, text=True).stdout
        ours = subprocess.run([evspec, "script", "-i", str(data)], capture_output=True, text=True).stdout
        ours = "".join(line for line in ours.splitlines(keepends=True) if not line.startswith("LOST"))
        records = len(theirs.splitlines())
        if ours != theirs:
            print("the texts differ", file=sys.stderr)
        perf_time, evspec_time = interleaved_wall([[perf, "script", "-i", str(data)],
                                                   [evspec, "script", "-i", str(data)]], runs=args.runs)
    print(f"{records} records: perf script {perf_time:.3f} s, evspec script {evspec_time:.3f} s, "
          f"evspec / perf = {evspec_time / perf_time:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
