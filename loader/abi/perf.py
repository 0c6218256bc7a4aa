"""The ``perf_event_open(2)`` ABI as ctypes: ``perf_event_attr``, ioctls, the mmap'ed ring and its
records. The names of the attr's bits and ids are in ``perf_bits`` (which the front end's compiler
imports too, without ctypes).

Layouts follow include/uapi/linux/perf_event.h; ``tests/test_kernel_abi.py`` checks them against
the installed header.
"""

from __future__ import annotations

import ctypes
from enum import IntEnum

u8 = ctypes.c_uint8
u16 = ctypes.c_uint16
u32 = ctypes.c_uint32
u64 = ctypes.c_uint64
s32 = ctypes.c_int32
s64 = ctypes.c_int64

class PerfEventAttr(ctypes.Structure):
    """``struct perf_event_attr`` up to PERF_ATTR_SIZE_VER8 (``config3``).

    Unions of the UAPI are represented by their first member: ``sample_period`` (or
    ``sample_freq``), ``wakeup_events`` (or ``wakeup_watermark``), ``config1`` (``bp_addr``,
    ``kprobe_func``, ``uprobe_path``), ``config2`` (``bp_len``, ``kprobe_addr``, ``probe_offset``).
    """

    _fields_ = [
        ("type", u32),
        ("size", u32),
        ("config", u64),
        ("sample_period", u64),
        ("sample_type", u64),
        ("read_format", u64),
        ("flags", u64),
        ("wakeup_events", u32),
        ("bp_type", u32),
        ("config1", u64),
        ("config2", u64),
        ("branch_sample_type", u64),
        ("sample_regs_user", u64),
        ("sample_stack_user", u32),
        ("clockid", s32),
        ("sample_regs_intr", u64),
        ("aux_watermark", u32),
        ("sample_max_stack", u16),
        ("_reserved_2", u16),
        ("aux_sample_size", u32),
        ("_reserved_3", u32),
        ("sig_data", u64),
        ("config3", u64),
    ]


def _ioc(direction: int, kind: str, nr: int, size: int) -> int:
    # asm-generic/ioctl.h: nr bits 0-7, type 8-15, size 16-29, direction 30-31 (x86_64 and arm64).
    return (direction << 30) | (size << 16) | (ord(kind) << 8) | nr


_NONE, _WRITE, _READ = 0, 1, 2


class Ioctl(IntEnum):
    """``PERF_EVENT_IOC_*``."""

    ENABLE = _ioc(_NONE, "$", 0, 0)
    DISABLE = _ioc(_NONE, "$", 1, 0)
    REFRESH = _ioc(_NONE, "$", 2, 0)
    RESET = _ioc(_NONE, "$", 3, 0)
    PERIOD = _ioc(_WRITE, "$", 4, 8)
    SET_OUTPUT = _ioc(_NONE, "$", 5, 0)
    SET_FILTER = _ioc(_WRITE, "$", 6, 8)
    ID = _ioc(_READ, "$", 7, 8)
    SET_BPF = _ioc(_WRITE, "$", 8, 4)
    PAUSE_OUTPUT = _ioc(_WRITE, "$", 9, 4)
    QUERY_BPF = _ioc(_READ | _WRITE, "$", 10, 8)
    MODIFY_ATTRIBUTES = _ioc(_WRITE, "$", 11, 8)


class MmapPage(ctypes.Structure):
    """``struct perf_event_mmap_page``: the first page of a perf ring-buffer mapping."""

    _fields_ = [
        ("version", u32),
        ("compat_version", u32),
        ("lock", u32),
        ("index", u32),
        ("offset", s64),
        ("time_enabled", u64),
        ("time_running", u64),
        ("capabilities", u64),
        ("pmc_width", u16),
        ("time_shift", u16),
        ("time_mult", u32),
        ("time_offset", u64),
        ("time_zero", u64),
        ("size", u32),
        ("_reserved_1", u32),
        ("time_cycles", u64),
        ("time_mask", u64),
        ("_reserved", u64 * 116),
        ("data_head", u64),
        ("data_tail", u64),
        ("data_offset", u64),
        ("data_size", u64),
        ("aux_head", u64),
        ("aux_tail", u64),
        ("aux_offset", u64),
        ("aux_size", u64),
    ]


class EventHeader(ctypes.Structure):
    """``struct perf_event_header``."""

    _fields_ = [("type", u32), ("misc", u16), ("size", u16)]


class RecordType(IntEnum):
    """``enum perf_event_type``."""

    MMAP = 1
    LOST = 2
    COMM = 3
    EXIT = 4
    THROTTLE = 5
    UNTHROTTLE = 6
    FORK = 7
    READ = 8
    SAMPLE = 9
    MMAP2 = 10
    AUX = 11
    ITRACE_START = 12
    LOST_SAMPLES = 13
    SWITCH = 14
    SWITCH_CPU_WIDE = 15
    NAMESPACES = 16
    KSYMBOL = 17
    BPF_EVENT = 18
    CGROUP = 19
    TEXT_POKE = 20
    AUX_OUTPUT_HW_ID = 21


PERF_FLAG_FD_NO_GROUP = 1 << 0
PERF_FLAG_FD_OUTPUT = 1 << 1
PERF_FLAG_PID_CGROUP = 1 << 2
PERF_FLAG_FD_CLOEXEC = 1 << 3
