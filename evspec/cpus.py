"""CPU lists as the kernel writes them (``0-3,8,10-11``), and the number of possible CPUs: kept
apart from the system model so that loading a BPF object (map sizes, ``__NR_CPUS__``) imports
nothing else."""

from __future__ import annotations

import os

POSSIBLE = "/sys/devices/system/cpu/possible"


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """``0-3,8,10-11`` -> (0, 1, 2, 3, 8, 10, 11)."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        first, last = int(lo), int(hi or lo)
        if last < first:
            raise ValueError(f"bad CPU range {part!r}")
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def format_cpu_list(cpus: tuple[int, ...]) -> str:
    """(0, 1, 2, 3, 8) -> ``0-3,8``: sorted CPUs as the kernel writes them."""
    parts: list[str] = []
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(f"{cpus[i]}-{cpus[j]}" if j > i else f"{cpus[i]}")
        i = j + 1
    return ",".join(parts)


def possible_cpus(sysfs: str | os.PathLike[str] = POSSIBLE) -> int:
    """How many CPUs the kernel can ever bring up (``__NR_CPUS__`` of a compiled program, the
    size of per-CPU values and of a default perf event array)."""
    try:
        with open(sysfs, encoding="ascii") as f:
            text = f.read().strip()
    except OSError:
        return os.cpu_count() or 1
    return len(parse_cpu_list(text))
