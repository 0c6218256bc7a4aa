"""`evspec verify` of a CO-RE object against this kernel, side by side with `bpftool prog loadall`
(issue "Objects of today load correctly").

Object: bench/core_fields.c (one program, about 50 CO-RE relocations into task_struct, mm_struct,
file, inode, cred, signal_struct), compiled once with clang. Measured in one run, interleaved
(medians of the wall times of each command, runs alternating so that machine noise hits both):
`evspec verify OBJ` and `bpftool prog loadall OBJ DIR` (DIR on bpffs, removed after every run,
outside the timing). Also the CO-RE resolution alone in ms (best of several, in this process):
opening the kernel's BTF, and resolving every relocation of the object against it.
Targets: verify <= 4x bpftool's wall time; resolution <= 100 ms. Needs root (both load programs).
Usage: sudo python bench/core_bench.py [--runs N]
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
from collections.abc import Callable, Sequence
from pathlib import Path

from _common import REPO

SOURCE = REPO / "bench" / "core_fields.c"
TARGET_RATIO, TARGET_MS = 4.0, 100.0


def _is_bpffs(path: str) -> bool:
    with open("/proc/mounts", encoding="utf-8") as f:
        return any(line.split()[1:3] == [path, "bpf"] for line in f)


def interleaved(commands: Sequence[Sequence[str]], after: Sequence[Callable[[], None]], runs: int) -> list[float]:
    """Median wall time of each command, runs interleaved; ``after[i]`` runs untimed after command i."""
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for i, cmd in enumerate(commands):
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd="/tmp", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
            times[i].append(time.perf_counter() - start)
            after[i]()
            if proc.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}")
    return [statistics.median(t) for t in times]


def resolution_ms(obj: Path, rounds: int = 5) -> tuple[float, float, int]:
    """(best ms to open the kernel's BTF, best ms to resolve every relocation, relocations)."""
    from evspec.loader.object.core_patch import relocate_object
    from evspec.loader.object.reader import read_object
    from evspec.loader.object.target_btf import TargetBtf

    spec = read_object(obj)
    opening, resolving = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        target = TargetBtf.running_kernel()
        opened = time.perf_counter()
        relocate_object(spec, target)
        done = time.perf_counter()
        opening.append(opened - start)
        resolving.append(done - opened)
    return 1e3 * min(opening), 1e3 * min(resolving), len(spec.core_relocations())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("core_bench needs root: both commands load programs into the kernel")
    for tool in ("clang", "bpftool"):
        if shutil.which(tool) is None:
            sys.exit(f"core_bench needs {tool}")
    evspec = [sys.executable, "-m", "evspec"]
    with tempfile.TemporaryDirectory(prefix="core-bench-") as tmp:
        obj = Path(tmp) / "core_fields.o"
        subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c",
                        str(SOURCE), "-o", str(obj)], check=True)
        mounted = None
        if _is_bpffs("/sys/fs/bpf"):
            fs = tempfile.mkdtemp(prefix="core-bench-", dir="/sys/fs/bpf")
        else:  # a private bpffs, unmounted again
            fs = mounted = str(Path(tmp) / "bpffs")
            os.mkdir(fs)
            subprocess.run(["mount", "-t", "bpf", "bpf", fs], check=True)
        pin_dir = os.path.join(fs, "loadall")
        try:
            verify = [*evspec, "verify", str(obj)]
            bpftool = ["bpftool", "prog", "loadall", str(obj), pin_dir]
            ours, theirs = interleaved([verify, bpftool], [lambda: None, lambda: shutil.rmtree(pin_dir)],
                                       args.runs)
        finally:
            if os.path.exists(pin_dir):
                shutil.rmtree(pin_dir)
            if mounted is not None:
                subprocess.run(["umount", mounted], check=False)
            else:
                os.rmdir(fs)
        opening, resolving, relocations = resolution_ms(obj)
    ratio = ours / theirs
    print(f"object: bench/core_fields.c, {relocations} CO-RE relocations, {args.runs} interleaved runs")
    print(f"evspec verify          {1e3 * ours:8.1f} ms (median wall)")
    print(f"bpftool prog loadall   {1e3 * theirs:8.1f} ms (median wall)")
    print(f"ratio                  {ratio:8.2f}x   (target <= {TARGET_RATIO:.0f}x: "
          f"{'met' if ratio <= TARGET_RATIO else 'NOT met'})")
    total = opening + resolving
    print(f"CO-RE: open vmlinux BTF {opening:.1f} ms + resolve {resolving:.1f} ms = {total:.1f} ms "
          f"(target <= {TARGET_MS:.0f} ms: {'met' if total <= TARGET_MS else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
