"""The ``bpf(2)`` ABI: command numbers, flags, and one ctypes Structure per ``union bpf_attr`` variant.

Each structure is written out field by field in the order and at the offsets of
include/uapi/linux/bpf.h, with explicit padding; ``tests/test_kernel_abi.py`` checks every size and
offset against the installed UAPI header. Fields that start with ``_pad`` are alignment holes the
kernel requires to be zero.
"""

from __future__ import annotations

import ctypes
from enum import IntEnum, IntFlag

u8 = ctypes.c_uint8
u16 = ctypes.c_uint16
u32 = ctypes.c_uint32
u64 = ctypes.c_uint64
s16 = ctypes.c_int16
s32 = ctypes.c_int32

BPF_OBJ_NAME_LEN = 16
BPF_TAG_SIZE = 8


class Cmd(IntEnum):
    """``enum bpf_cmd``."""

    MAP_CREATE = 0
    MAP_LOOKUP_ELEM = 1
    MAP_UPDATE_ELEM = 2
    MAP_DELETE_ELEM = 3
    MAP_GET_NEXT_KEY = 4
    PROG_LOAD = 5
    OBJ_PIN = 6
    OBJ_GET = 7
    PROG_ATTACH = 8
    PROG_DETACH = 9
    PROG_TEST_RUN = 10
    PROG_GET_NEXT_ID = 11
    MAP_GET_NEXT_ID = 12
    PROG_GET_FD_BY_ID = 13
    MAP_GET_FD_BY_ID = 14
    OBJ_GET_INFO_BY_FD = 15
    PROG_QUERY = 16
    RAW_TRACEPOINT_OPEN = 17
    BTF_LOAD = 18
    BTF_GET_FD_BY_ID = 19
    TASK_FD_QUERY = 20
    MAP_LOOKUP_AND_DELETE_ELEM = 21
    MAP_FREEZE = 22
    BTF_GET_NEXT_ID = 23
    MAP_LOOKUP_BATCH = 24
    MAP_LOOKUP_AND_DELETE_BATCH = 25
    MAP_UPDATE_BATCH = 26
    MAP_DELETE_BATCH = 27
    LINK_CREATE = 28

    @property
    def operation(self) -> str:
        return f"BPF_{self.name}"


class MapFlag(IntFlag):
    """``map_flags`` of BPF_MAP_CREATE."""

    NO_PREALLOC = 1 << 0
    NO_COMMON_LRU = 1 << 1
    NUMA_NODE = 1 << 2
    RDONLY = 1 << 3
    WRONLY = 1 << 4
    STACK_BUILD_ID = 1 << 5
    ZERO_SEED = 1 << 6
    RDONLY_PROG = 1 << 7
    WRONLY_PROG = 1 << 8
    CLONE = 1 << 9
    MMAPABLE = 1 << 10


class UpdateFlag(IntEnum):
    """``flags`` of BPF_MAP_UPDATE_ELEM."""

    ANY = 0
    NOEXIST = 1
    EXIST = 2
    F_LOCK = 4


# Program load flags, log levels and attach types used here.
BPF_LOG_LEVEL1 = 1
BPF_LOG_LEVEL2 = 2
BPF_LOG_STATS = 4
BPF_PERF_EVENT = 41  # enum bpf_attach_type, for BPF_LINK_CREATE on a perf event fd
BPF_TRACE_UPROBE_MULTI = 48  # enum bpf_attach_type, for a uprobe_multi link
BPF_TRACE_RAW_TP = 23  # enum bpf_attach_type: the expected attach type of a tp_btf program

# ``src_reg`` markers of a relocated instruction.
BPF_PSEUDO_MAP_FD = 1
BPF_PSEUDO_MAP_VALUE = 2
BPF_PSEUDO_CALL = 1
BPF_PSEUDO_FUNC = 4  # ld_imm64 of a subprogram's address (callbacks)
BPF_PSEUDO_BTF_ID = 3  # ld_imm64 of a kernel variable (or function) by its BTF id: typed __ksym
BPF_PSEUDO_KFUNC_CALL = 2  # call of a kernel function by its BTF id: kfunc


# Helper function ids (``enum bpf_func_id``) of the programs evspec writes itself.
FUNC_MAP_LOOKUP_ELEM = 1
FUNC_LOOP = 181
FUNC_GET_ATTACH_COOKIE = 174  # what libbpf's LINUX_HAS_BPF_COOKIE probe calls


class BpfInsn(ctypes.Structure):
    """``struct bpf_insn``: opcode, dst/src registers (4 bits each), offset, immediate (the
    layout; ``evspec.loader.asm`` encodes and decodes instructions)."""

    _fields_ = [
        ("code", u8),
        ("dst_reg", u8, 4),
        ("src_reg", u8, 4),
        ("off", s16),
        ("imm", s32),
    ]


INSN_SIZE = 8  # bytes of one struct bpf_insn


class MapCreateAttr(ctypes.Structure):
    """BPF_MAP_CREATE."""

    _fields_ = [
        ("map_type", u32),
        ("key_size", u32),
        ("value_size", u32),
        ("max_entries", u32),
        ("map_flags", u32),
        ("inner_map_fd", u32),
        ("numa_node", u32),
        ("map_name", ctypes.c_char * BPF_OBJ_NAME_LEN),
        ("map_ifindex", u32),
        ("btf_fd", u32),
        ("btf_key_type_id", u32),
        ("btf_value_type_id", u32),
        ("btf_vmlinux_value_type_id", u32),
        ("map_extra", u64),
    ]


class _ElemValue(ctypes.Union):
    _fields_ = [("value", u64), ("next_key", u64)]


class MapElemAttr(ctypes.Structure):
    """BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM, BPF_MAP_DELETE_ELEM, BPF_MAP_GET_NEXT_KEY, BPF_MAP_FREEZE."""

    _anonymous_ = ("_value",)
    _fields_ = [
        ("map_fd", u32),
        ("_pad0", u32),
        ("key", u64),
        ("_value", _ElemValue),
        ("flags", u64),
    ]


class MapBatchAttr(ctypes.Structure):
    """BPF_MAP_UPDATE_BATCH, BPF_MAP_LOOKUP_BATCH (``attr.batch``)."""

    _fields_ = [
        ("in_batch", u64),
        ("out_batch", u64),
        ("keys", u64),
        ("values", u64),
        ("count", u32),
        ("map_fd", u32),
        ("elem_flags", u64),
        ("flags", u64),
    ]


class ProgLoadAttr(ctypes.Structure):
    """BPF_PROG_LOAD; ``log_true_size`` is filled in by kernels >= 6.4."""

    _fields_ = [
        ("prog_type", u32),
        ("insn_cnt", u32),
        ("insns", u64),
        ("license", u64),
        ("log_level", u32),
        ("log_size", u32),
        ("log_buf", u64),
        ("kern_version", u32),
        ("prog_flags", u32),
        ("prog_name", ctypes.c_char * BPF_OBJ_NAME_LEN),
        ("prog_ifindex", u32),
        ("expected_attach_type", u32),
        ("prog_btf_fd", u32),
        ("func_info_rec_size", u32),
        ("func_info", u64),
        ("func_info_cnt", u32),
        ("line_info_rec_size", u32),
        ("line_info", u64),
        ("line_info_cnt", u32),
        ("attach_btf_id", u32),
        ("attach_prog_fd", u32),  # union with attach_btf_obj_fd
        ("core_relo_cnt", u32),
        ("fd_array", u64),
        ("core_relos", u64),
        ("core_relo_rec_size", u32),
        ("log_true_size", u32),
    ]


class BtfLoadAttr(ctypes.Structure):
    """BPF_BTF_LOAD; ``btf_log_true_size`` is filled in by kernels >= 6.4."""

    _fields_ = [
        ("btf", u64),
        ("btf_log_buf", u64),
        ("btf_size", u32),
        ("btf_log_size", u32),
        ("btf_log_level", u32),
        ("btf_log_true_size", u32),
    ]


class ProgTestRunAttr(ctypes.Structure):
    """BPF_PROG_TEST_RUN (``attr.test``); the kernel writes the program's return value to ``retval``."""

    _fields_ = [
        ("prog_fd", u32),
        ("retval", u32),
        ("data_size_in", u32),
        ("data_size_out", u32),
        ("data_in", u64),
        ("data_out", u64),
        ("repeat", u32),
        ("duration", u32),
        ("ctx_size_in", u32),
        ("ctx_size_out", u32),
        ("ctx_in", u64),
        ("ctx_out", u64),
        ("flags", u32),
        ("cpu", u32),
        ("batch_size", u32),
        ("_pad0", u32),
    ]


class GetNextIdAttr(ctypes.Structure):
    """BPF_PROG_GET_NEXT_ID, BPF_MAP_GET_NEXT_ID (``start_id`` is a union with prog_id/map_id/…)."""

    _fields_ = [
        ("start_id", u32),
        ("next_id", u32),
        ("open_flags", u32),
    ]


class ObjInfoAttr(ctypes.Structure):
    """BPF_OBJ_GET_INFO_BY_FD (``attr.info``)."""

    _fields_ = [
        ("bpf_fd", u32),
        ("info_len", u32),
        ("info", u64),
    ]


class ObjAttr(ctypes.Structure):
    """BPF_OBJ_PIN, BPF_OBJ_GET (``attr.pathname``, ``bpf_fd``, ``file_flags``, ``path_fd``)."""

    _fields_ = [
        ("pathname", u64),
        ("bpf_fd", u32),
        ("file_flags", u32),
        ("path_fd", s32),
        ("_pad0", u32),
    ]


# ``pinning`` of a BTF-defined map (libbpf's enum libbpf_pin_type).
LIBBPF_PIN_NONE = 0
LIBBPF_PIN_BY_NAME = 1

# ``linkage`` of a BTF FUNC (enum btf_func_linkage).
BTF_FUNC_STATIC = 0
BTF_FUNC_GLOBAL = 1
# ``linkage`` of a BTF VAR (its one extra word)
BTF_VAR_STATIC = 0


class UprobeMultiLinkAttr(ctypes.Structure):
    """BPF_LINK_CREATE's ``uprobe_multi`` arm (``attr.link_create``, Linux 6.6+)."""

    _fields_ = [
        ("prog_fd", u32),
        ("target_fd", u32),
        ("attach_type", u32),
        ("flags", u32),
        ("path", u64),
        ("offsets", u64),
        ("ref_ctr_offsets", u64),
        ("cookies", u64),
        ("cnt", u32),
        ("uprobe_flags", u32),
        ("pid", u32),
    ]


class LinkCreateAttr(ctypes.Structure):
    """BPF_LINK_CREATE for a perf event target (``attr.link_create``, its ``perf_event`` arm).

    ``_union_tail`` keeps the size of the whole ``link_create`` union of the 6.1 UAPI (its largest
    arm, ``kprobe_multi``, ends at byte 48); newer kernels accept the shorter size and zero-fill.
    """

    _fields_ = [
        ("prog_fd", u32),
        ("target_fd", u32),
        ("attach_type", u32),
        ("flags", u32),
        ("bpf_cookie", u64),
        ("_union_tail", u64 * 3),
    ]


class RawTracepointOpenAttr(ctypes.Structure):
    """BPF_RAW_TRACEPOINT_OPEN (``attr.raw_tracepoint``): the tracepoint's name (a C string's
    address) and the program; the answer is a descriptor whose closing detaches."""

    _fields_ = [
        ("name", u64),
        ("prog_fd", u32),
        ("_pad", u32),
    ]


class MapInfo(ctypes.Structure):
    """``struct bpf_map_info``."""

    _fields_ = [
        ("type", u32),
        ("id", u32),
        ("key_size", u32),
        ("value_size", u32),
        ("max_entries", u32),
        ("map_flags", u32),
        ("name", ctypes.c_char * BPF_OBJ_NAME_LEN),
        ("ifindex", u32),
        ("btf_vmlinux_value_type_id", u32),
        ("netns_dev", u64),
        ("netns_ino", u64),
        ("btf_id", u32),
        ("btf_key_type_id", u32),
        ("btf_value_type_id", u32),
        ("_pad0", u32),
        ("map_extra", u64),
    ]


class ProgInfo(ctypes.Structure):
    """``struct bpf_prog_info``."""

    _fields_ = [
        ("type", u32),
        ("id", u32),
        ("tag", u8 * BPF_TAG_SIZE),
        ("jited_prog_len", u32),
        ("xlated_prog_len", u32),
        ("jited_prog_insns", u64),
        ("xlated_prog_insns", u64),
        ("load_time", u64),
        ("created_by_uid", u32),
        ("nr_map_ids", u32),
        ("map_ids", u64),
        ("name", ctypes.c_char * BPF_OBJ_NAME_LEN),
        ("ifindex", u32),
        ("gpl_compatible", u32, 1),
        ("_pad0", u32, 31),
        ("netns_dev", u64),
        ("netns_ino", u64),
        ("nr_jited_ksyms", u32),
        ("nr_jited_func_lens", u32),
        ("jited_ksyms", u64),
        ("jited_func_lens", u64),
        ("btf_id", u32),
        ("func_info_rec_size", u32),
        ("func_info", u64),
        ("nr_func_info", u32),
        ("nr_line_info", u32),
        ("line_info", u64),
        ("jited_line_info", u64),
        ("nr_jited_line_info", u32),
        ("line_info_rec_size", u32),
        ("jited_line_info_rec_size", u32),
        ("nr_prog_tags", u32),
        ("prog_tags", u64),
        ("run_time_ns", u64),
        ("run_cnt", u64),
        ("recursion_misses", u64),
        ("verified_insns", u32),
        ("attach_btf_obj_id", u32),
        ("attach_btf_id", u32),
        ("_pad1", u32),
    ]


def object_name(name: str) -> bytes:
    """A map or program name the kernel accepts: [A-Za-z0-9_.], at most 15 bytes."""
    cleaned = "".join(c if (c.isascii() and (c.isalnum() or c in "_.")) else "_" for c in name)
    return cleaned.encode("ascii")[: BPF_OBJ_NAME_LEN - 1]
