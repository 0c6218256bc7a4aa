"""`evspec verify` of a CO-RE object against this kernel, side by side with `bpftool prog loadall`
(issue "Objects of today load correctly").

Object: bench/core_fields.c (one program, about 50 CO-RE relocations into task_struct, mm_struct,
file, inode, cred, signal_struct), compiled once with clang. Measured in one run, interleaved
(medians of the wall times of each command, runs alternating so that machine noise hits all, one
untimed warm-up run of each first): `evspec verify OBJ`; the same with an empty cache directory
(XDG_CACHE_HOME, fresh for every run: the first verify after a kernel boots with new BTF, which
makes the kernel's BTF index again); `bpftool prog loadall OBJ DIR` (DIR on bpffs, removed after
every run, outside the timing); with --compare REV, also the verify of that git revision (its
files taken with `git archive`, laid out as installed, imported ahead of the working tree).
Also the CO-RE resolution alone in ms (best of several, in a process of its own, after one
untimed round): opening the kernel's BTF, and resolving every relocation of the object against it.
Targets: verify <= 4x bpftool's wall time; resolution <= 100 ms. Needs root (both load programs).
Usage: sudo python bench/core_bench.py [--runs N] [--compare REV]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from _common import REPO

SOURCE = REPO / "bench" / "core_fields.c"
TARGET_RATIO, TARGET_MS = 4.0, 100.0

RESOLUTION = """
import json, sys, time
from evspec.loader.object.reader import read_object
try:
    from evspec.loader.btf.core_patch import relocate_object
    from evspec.loader.btf.target import TargetBtf
except ImportError:  # a --compare revision from before loader/btf/ (issue 23)
    from evspec.loader.object.core_patch import relocate_object
    from evspec.loader.object.target_btf import TargetBtf

spec = read_object(sys.argv[1])
opening, resolving = [], []
for _ in range(1 + int(sys.argv[2])):
    start = time.perf_counter()
    target = TargetBtf.running_kernel()
    opened = time.perf_counter()
    relocate_object(spec, target)
    done = time.perf_counter()
    opening.append(opened - start)
    resolving.append(done - opened)
print(json.dumps([1e3 * min(opening[1:]), 1e3 * min(resolving[1:]), len(spec.core_relocations())]))
"""


@dataclass
class Command:
    label: str
    argv: list[str]
    env: Callable[[], dict[str, str]] = field(default=lambda: dict(os.environ))
    after: Callable[[], None] = field(default=lambda: None)


def _is_bpffs(path: str) -> bool:
    with open("/proc/mounts", encoding="utf-8") as f:
        return any(line.split()[1:3] == [path, "bpf"] for line in f)


def _run(cmd: Command) -> float:
    env = cmd.env()
    start = time.perf_counter()
    proc = subprocess.run(cmd.argv, cwd="/tmp", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          check=False)
    elapsed = time.perf_counter() - start
    cmd.after()
    if proc.returncode != 0:
        sys.exit(f"{cmd.label}: {' '.join(cmd.argv)} failed ({proc.returncode}): "
                 f"{proc.stderr.decode(errors='replace')}")
    return elapsed


def interleaved(commands: Sequence[Command], runs: int) -> list[float]:
    """Median wall time of each command, after one warm-up run of each, runs interleaved."""
    for cmd in commands:
        _run(cmd)
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for i, cmd in enumerate(commands):
            times[i].append(_run(cmd))
    return [statistics.median(t) for t in times]


def resolution_ms(obj: Path, env: dict[str, str], rounds: int = 5) -> tuple[float, float, int]:
    """(best ms to open the kernel's BTF, best ms to resolve every relocation, relocations)."""
    out = subprocess.run([sys.executable, "-c", RESOLUTION, str(obj), str(rounds)], cwd="/tmp", env=env,
                         check=True, capture_output=True, text=True).stdout
    opening, resolving, count = json.loads(out)
    return opening, resolving, count


def baseline_tree(rev: str, into: Path) -> Path:
    """The package of git revision ``rev`` laid out as installed (evspec/, evspec/loader,
    evspec/grammar) under ``into``; the directory to put on PYTHONPATH."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev], check=True,
                             capture_output=True).stdout
    src, site = into / "src", into / "site"
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(src, filter="data")
    shutil.copytree(src / "evspec", site / "evspec")
    for name in ("loader", "grammar"):
        os.symlink(src / name, site / "evspec" / name)
    return site


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--compare", metavar="REV", help="also measure the verify of this git revision")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("core_bench needs root: both commands load programs into the kernel")
    for tool in ("clang", "bpftool"):
        if shutil.which(tool) is None:
            sys.exit(f"core_bench needs {tool}")
    # The installed command, as users run it (``python -m evspec`` also imports runpy, ~4 ms).
    script = Path(sys.executable).parent / "evspec"
    evspec = [str(script)] if script.is_file() else [sys.executable, "-m", "evspec"]
    with tempfile.TemporaryDirectory(prefix="core-bench-") as tmp:
        obj = Path(tmp) / "core_fields.o"
        subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c",
                        str(SOURCE), "-o", str(obj)], check=True)
        fresh = iter(range(1 << 30))

        def empty_cache() -> dict[str, str]:
            cache = Path(tmp) / f"cache-{next(fresh)}"
            cache.mkdir(mode=0o700)
            return {**os.environ, "XDG_CACHE_HOME": str(cache)}

        baseline_env: dict[str, str] | None = None
        if args.compare:
            site = baseline_tree(args.compare, Path(tmp) / "baseline")
            baseline_env = {**os.environ, "PYTHONPATH": str(site)}
        mounted = None
        if _is_bpffs("/sys/fs/bpf"):
            fs = tempfile.mkdtemp(prefix="core-bench-", dir="/sys/fs/bpf")
        else:  # a private bpffs, unmounted again
            fs = mounted = str(Path(tmp) / "bpffs")
            os.mkdir(fs)
            subprocess.run(["mount", "-t", "bpf", "bpf", fs], check=True)
        pin_dir = os.path.join(fs, "loadall")
        verify = [*evspec, "verify", str(obj)]
        commands = [Command("evspec verify", verify),
                    Command("  with an empty cache", verify, env=empty_cache),
                    Command("bpftool prog loadall", ["bpftool", "prog", "loadall", str(obj), pin_dir],
                            after=lambda: shutil.rmtree(pin_dir))]
        if baseline_env is not None:
            env = baseline_env
            commands.append(Command(f"evspec verify at {args.compare}", verify, env=lambda: env))
        try:
            medians = interleaved(commands, args.runs)
        finally:
            if os.path.exists(pin_dir):
                shutil.rmtree(pin_dir)
            if mounted is not None:
                subprocess.run(["umount", mounted], check=False)
            else:
                os.rmdir(fs)
        resolutions = [("", resolution_ms(obj, dict(os.environ)))]
        if baseline_env is not None:
            resolutions.append((f" at {args.compare}", resolution_ms(obj, baseline_env)))
    theirs = medians[2]
    relocations = resolutions[0][1][2]
    print(f"object: bench/core_fields.c, {relocations} CO-RE relocations, {args.runs} interleaved runs")
    for cmd, median in zip(commands, medians, strict=True):
        ratio = "" if cmd.label.startswith("bpftool") else f"   {median / theirs:6.2f}x bpftool"
        print(f"{cmd.label:32s} {1e3 * median:8.1f} ms (median wall){ratio}")
    ratio = medians[0] / theirs
    print(f"ratio {ratio:.2f}x (target <= {TARGET_RATIO:.0f}x: {'met' if ratio <= TARGET_RATIO else 'NOT met'})")
    for suffix, (opening, resolving, _) in resolutions:
        total = opening + resolving
        print(f"CO-RE{suffix}: open vmlinux BTF {opening:.1f} ms + resolve {resolving:.1f} ms = {total:.1f} ms "
              f"(target <= {TARGET_MS:.0f} ms: {'met' if total <= TARGET_MS else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
