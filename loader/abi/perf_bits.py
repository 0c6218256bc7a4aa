"""The bits of ``perf_event_attr``'s words, by name, once for both sides: ``sample_type``,
``read_format``, ``branch_sample_type`` and the flags word (its numbers that are no bits are in
``perf_ids``). The front end's compiler and the kernel layer both import them; this module needs
no ctypes.

Values follow include/uapi/linux/perf_event.h; ``tests/test_kernel_abi.py`` checks them against
the installed header.
"""

from __future__ import annotations

from enum import IntFlag


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


class ReadFormat(IntFlag):
    """``enum perf_event_read_format``."""

    TOTAL_TIME_ENABLED = 1 << 0
    TOTAL_TIME_RUNNING = 1 << 1
    ID = 1 << 2
    GROUP = 1 << 3
    LOST = 1 << 4  # read(2) gives the samples the event's ring dropped (6.0)


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


class BranchSampleType(IntFlag):
    """``enum perf_branch_sample_type``: the bits of ``branch_sample_type``."""

    USER = 1 << 0
    KERNEL = 1 << 1
    HV = 1 << 2
    ANY = 1 << 3
    ANY_CALL = 1 << 4
    ANY_RETURN = 1 << 5
    IND_CALL = 1 << 6
    ABORT_TX = 1 << 7
    IN_TX = 1 << 8
    NO_TX = 1 << 9
    COND = 1 << 10
    CALL_STACK = 1 << 11
    IND_JUMP = 1 << 12
    CALL = 1 << 13
    NO_FLAGS = 1 << 14
    NO_CYCLES = 1 << 15
    TYPE_SAVE = 1 << 16
    HW_INDEX = 1 << 17
    PRIV_SAVE = 1 << 18
