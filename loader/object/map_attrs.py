"""What BPF_MAP_CREATE is given for a map spec, as libbpf 1.x computes it, with no syscall: the
max_entries of perf event arrays and ring buffers, the flags of global data maps. The kernel side
creates maps with them and compares a pinned map against them. Also whether a pinning path lies
on a BPF filesystem."""

from __future__ import annotations

import os

from evspec.loader.abi import bpf as abi
from evspec.loader.object.spec import RING_BUFFER_TYPES, MapSpec, MapType

from evspec.span import Slotted

_U32_MAX = 0xFFFFFFFF


def ringbuf_size(size: int, page_size: int) -> int:
    """The max_entries libbpf gives a ring buffer: ``size`` when it is a power-of-two multiple of
    the page size, else the smallest such multiple above it (0 and impossible sizes unchanged)."""
    if size == 0:
        return 0
    pages, rest = divmod(size, page_size)
    if rest == 0 and pages & (pages - 1) == 0:
        return size
    mul = 1
    while mul * page_size <= _U32_MAX:
        if mul * page_size > size:
            return mul * page_size
        mul <<= 1
    return size


class MapAttributes(Slotted):
    """What BPF_MAP_CREATE is given for a map spec (and what a pinned map must match)."""

    max_entries: int
    flags: int


def map_attributes(m: MapSpec, cpus: int, page_size: int) -> MapAttributes:
    """The max_entries and flags of ``m`` on a machine of ``cpus`` possible CPUs and pages of
    ``page_size`` bytes: a perf event array of max_entries 0 gets one entry per CPU, a ring buffer
    its rounded size; read-only and mmapable global data their flags."""
    max_entries = m.max_entries
    if m.type == MapType.PERF_EVENT_ARRAY and max_entries == 0:
        max_entries = cpus
    if m.type in RING_BUFFER_TYPES:
        max_entries = ringbuf_size(max_entries, page_size)
    flags = m.flags | (abi.MapFlag.RDONLY_PROG if m.readonly else 0) | (abi.MapFlag.MMAPABLE if m.mmapable else 0)
    return MapAttributes(max_entries, int(flags))


def on_bpffs(path: str, mounts: str = "/proc/mounts") -> bool:
    """Whether ``path`` lies on a BPF filesystem: the mount that holds it (the longest mount point
    it is under) is of type bpf."""
    where = os.path.realpath(path)
    best, kind = "", ""
    try:
        with open(mounts, encoding="utf-8") as f:
            for line in f:
                fields = line.split()
                if len(fields) < 3:
                    continue
                point = fields[1].replace("\\040", " ")
                under = where == point or where.startswith(point.rstrip("/") + "/")
                if under and len(point) >= len(best):
                    best, kind = point, fields[2]
    except OSError:
        return False
    return kind == "bpf"
