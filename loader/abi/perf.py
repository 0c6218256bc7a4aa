"""The ``perf_event_open(2)`` ABI: ``perf_event_attr``, its flags word, ioctls, and the mmap'ed ring.

Layouts follow include/uapi/linux/perf_event.h; ``tests/test_kernel_abi.py`` checks them against
the installed header.
"""

from __future__ import annotations

import ctypes
from enum import IntEnum, IntFlag

u8 = ctypes.c_uint8
u16 = ctypes.c_uint16
u32 = ctypes.c_uint32
u64 = ctypes.c_uint64
s32 = ctypes.c_int32
s64 = ctypes.c_int64

# Published sizes of perf_event_attr (the kernel accepts any of them, and tells the size it wants
# by writing it into ``attr.size`` when it fails with E2BIG).
PERF_ATTR_SIZE_VER0 = 64
PERF_ATTR_SIZE_VER1 = 72
PERF_ATTR_SIZE_VER2 = 80
PERF_ATTR_SIZE_VER3 = 96
PERF_ATTR_SIZE_VER4 = 104
PERF_ATTR_SIZE_VER5 = 112
PERF_ATTR_SIZE_VER6 = 120
PERF_ATTR_SIZE_VER7 = 128
PERF_ATTR_SIZE_VER8 = 136


class PerfType(IntEnum):
    HARDWARE = 0
    SOFTWARE = 1
    TRACEPOINT = 2
    HW_CACHE = 3
    RAW = 4
    BREAKPOINT = 5


class SwConfig(IntEnum):
    """``enum perf_sw_ids``."""

    CPU_CLOCK = 0
    TASK_CLOCK = 1
    PAGE_FAULTS = 2
    CONTEXT_SWITCHES = 3
    CPU_MIGRATIONS = 4
    PAGE_FAULTS_MIN = 5
    PAGE_FAULTS_MAJ = 6
    ALIGNMENT_FAULTS = 7
    EMULATION_FAULTS = 8
    DUMMY = 9
    BPF_OUTPUT = 10
    CGROUP_SWITCHES = 11


class SampleType(IntFlag):
    """``enum perf_event_sample_format``."""

    IP = 1 << 0
    TID = 1 << 1
    TIME = 1 << 2
    ADDR = 1 << 3
    READ = 1 << 4
    CALLCHAIN = 1 << 5
    ID = 1 << 6
    CPU = 1 << 7
    PERIOD = 1 << 8
    STREAM_ID = 1 << 9
    RAW = 1 << 10
    BRANCH_STACK = 1 << 11
    REGS_USER = 1 << 12
    STACK_USER = 1 << 13
    WEIGHT = 1 << 14
    DATA_SRC = 1 << 15
    IDENTIFIER = 1 << 16
    TRANSACTION = 1 << 17
    REGS_INTR = 1 << 18
    PHYS_ADDR = 1 << 19
    AUX = 1 << 20
    CGROUP = 1 << 21
    DATA_PAGE_SIZE = 1 << 22
    CODE_PAGE_SIZE = 1 << 23
    WEIGHT_STRUCT = 1 << 24


PERF_FORMAT_LOST = 1 << 4  # read_format: read(2) gives the samples the event's ring dropped (6.0)


class AttrFlag(IntFlag):
    """The bit-field word of ``perf_event_attr`` (the u64 after ``read_format``), one name per bit.

    ``precise_ip`` is a two-bit field: use ``precise_ip(n)``.
    """

    DISABLED = 1 << 0
    INHERIT = 1 << 1
    PINNED = 1 << 2
    EXCLUSIVE = 1 << 3
    EXCLUDE_USER = 1 << 4
    EXCLUDE_KERNEL = 1 << 5
    EXCLUDE_HV = 1 << 6
    EXCLUDE_IDLE = 1 << 7
    MMAP = 1 << 8
    COMM = 1 << 9
    FREQ = 1 << 10
    INHERIT_STAT = 1 << 11
    ENABLE_ON_EXEC = 1 << 12
    TASK = 1 << 13
    WATERMARK = 1 << 14
    PRECISE_IP_LOW = 1 << 15
    PRECISE_IP_HIGH = 1 << 16
    MMAP_DATA = 1 << 17
    SAMPLE_ID_ALL = 1 << 18
    EXCLUDE_HOST = 1 << 19
    EXCLUDE_GUEST = 1 << 20
    EXCLUDE_CALLCHAIN_KERNEL = 1 << 21
    EXCLUDE_CALLCHAIN_USER = 1 << 22
    MMAP2 = 1 << 23
    COMM_EXEC = 1 << 24
    USE_CLOCKID = 1 << 25
    CONTEXT_SWITCH = 1 << 26
    WRITE_BACKWARD = 1 << 27
    NAMESPACES = 1 << 28
    KSYMBOL = 1 << 29
    BPF_EVENT = 1 << 30
    AUX_OUTPUT = 1 << 31
    CGROUP = 1 << 32
    TEXT_POKE = 1 << 33
    BUILD_ID = 1 << 34
    INHERIT_THREAD = 1 << 35
    REMOVE_ON_EXEC = 1 << 36
    SIGTRAP = 1 << 37


PRECISE_IP_SHIFT = 15


def precise_ip(level: int) -> AttrFlag:
    if not 0 <= level <= 3:
        raise ValueError(f"precise_ip is 0..3, not {level}")
    return AttrFlag(level << PRECISE_IP_SHIFT)


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
