"""The numbers of ``perf_event_attr`` that are no bits, once for both sides: its published sizes,
its ``type`` (``perf_type_id``) and the software event ids (the bits of its words are in
``perf_bits``). Both the front end's semantic checks and the kernel layer import them; this
module needs no ctypes, and its two small enums cost a check little.

Values follow include/uapi/linux/perf_event.h; ``tests/test_kernel_abi.py`` checks them against
the installed header.
"""

from __future__ import annotations

from enum import IntEnum

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
