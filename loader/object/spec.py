"""Plain-data description of a BPF object, read from its ELF file without any syscall.

An ``ObjectSpec`` is what the reader produces, what the offline map-term checks read, and what the
kernel layer turns into live maps and programs (the cilium/ebpf CollectionSpec idea).
"""

from __future__ import annotations

from enum import IntEnum

from evspec.span import Slotted

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from typing import TypeVar

    R = TypeVar("R", bound=Slotted)


def replace(record: R, /, **changes: object) -> R:
    """``dataclasses.replace`` for record classes, without importing ``dataclasses`` (and
    ``inspect``) into a cold ``evspec verify``: a copy of ``record`` with ``changes`` applied."""
    for name in record.__slots__:
        if name not in changes:
            changes[name] = getattr(record, name)
    return record.__class__(**changes)


class MapType(IntEnum):
    """``enum bpf_map_type`` (include/uapi/linux/bpf.h)."""

    UNSPEC = 0
    HASH = 1
    ARRAY = 2
    PROG_ARRAY = 3
    PERF_EVENT_ARRAY = 4
    PERCPU_HASH = 5
    PERCPU_ARRAY = 6
    STACK_TRACE = 7
    CGROUP_ARRAY = 8
    LRU_HASH = 9
    LRU_PERCPU_HASH = 10
    LPM_TRIE = 11
    ARRAY_OF_MAPS = 12
    HASH_OF_MAPS = 13
    DEVMAP = 14
    SOCKMAP = 15
    CPUMAP = 16
    XSKMAP = 17
    SOCKHASH = 18
    CGROUP_STORAGE = 19
    REUSEPORT_SOCKARRAY = 20
    PERCPU_CGROUP_STORAGE = 21
    QUEUE = 22
    STACK = 23
    SK_STORAGE = 24
    DEVMAP_HASH = 25
    STRUCT_OPS = 26
    RINGBUF = 27
    INODE_STORAGE = 28
    TASK_STORAGE = 29
    BLOOM_FILTER = 30
    USER_RINGBUF = 31
    CGRP_STORAGE = 32
    ARENA = 33


MAP_IN_MAP_TYPES = frozenset({MapType.ARRAY_OF_MAPS, MapType.HASH_OF_MAPS})
RING_BUFFER_TYPES = frozenset({MapType.RINGBUF, MapType.USER_RINGBUF})


class ProgType(IntEnum):
    """``enum bpf_prog_type``, all of it."""

    UNSPEC = 0
    SOCKET_FILTER = 1
    KPROBE = 2
    SCHED_CLS = 3
    SCHED_ACT = 4
    TRACEPOINT = 5
    XDP = 6
    PERF_EVENT = 7
    CGROUP_SKB = 8
    CGROUP_SOCK = 9
    LWT_IN = 10
    LWT_OUT = 11
    LWT_XMIT = 12
    SOCK_OPS = 13
    SK_SKB = 14
    CGROUP_DEVICE = 15
    SK_MSG = 16
    RAW_TRACEPOINT = 17
    CGROUP_SOCK_ADDR = 18
    LWT_SEG6LOCAL = 19
    LIRC_MODE2 = 20
    SK_REUSEPORT = 21
    FLOW_DISSECTOR = 22
    CGROUP_SYSCTL = 23
    RAW_TRACEPOINT_WRITABLE = 24
    CGROUP_SOCKOPT = 25
    TRACING = 26
    STRUCT_OPS = 27
    EXT = 28
    LSM = 29
    SK_LOOKUP = 30
    SYSCALL = 31
    NETFILTER = 32


class MapSpec(Slotted):
    name: str
    type: int  # MapType value; kept as int so unknown future types survive
    key_size: int
    value_size: int
    max_entries: int
    flags: int = 0
    pinning: int = 0
    legacy: bool = False  # declared as struct bpf_map_def in SEC("maps")
    section: str = ".maps"
    symbol_offset: int = 0  # offset of the map's symbol inside its section (relocation target)
    key_type_id: int | None = None  # BTF type ids, when known
    value_type_id: int | None = None
    initial_value: bytes | None = None  # global data maps (.data/.rodata/.bss): their contents
    readonly: bool = False  # .rodata: frozen after the initial value is written
    numa_node: int = 0  # __uint(numa_node, N): used with BPF_F_NUMA_NODE in flags
    map_extra: int = 0  # u64: __uint(map_extra, N) or __ulong(): a bloom filter's number of
    # hashes, an arena's user address
    inner: MapSpec | None = None  # map-in-map: the inner map template (__array(values, struct ..))
    # ``.values = { [i] = &x }``: (slot, program or map name), from the .rel.maps relocations
    initial_slots: tuple[tuple[int, str], ...] = ()
    mmapable: bool = False  # a global data map libbpf creates with BPF_F_MMAPABLE
    # a legacy definition's fields past map_flags (iproute2's struct bpf_elf_map: id, pinning,
    # inner_id, inner_idx, then unnamed words), the non-zero ones as (name, value)
    legacy_extra: tuple[tuple[str, int], ...] = ()

    @property
    def map_type(self) -> MapType | None:
        try:
            return MapType(self.type)
        except ValueError:
            return None


class Relocation(Slotted):
    """One instruction of a program that needs a fix-up before loading."""

    insn_index: int  # index of the instruction (8-byte units) inside the program
    kind: str  # "map" (ld_imm64 of a map), "data" (global data, __kconfig), "call" (bpf-to-bpf
    # call), "func" (callback address), "ksym" (ld_imm64 of a __ksym), "kfunc" (call of a kfunc)
    symbol: str
    target: str  # map name, data section name, or called function
    addend: int = 0  # offset into the data section / symbol


class LineInfo(Slotted):
    insn_offset: int  # in instructions, relative to the program start
    file: str
    line: int
    column: int
    source_line: str



class CoreRelocation(Slotted):
    """A CO-RE relocation record of a function (``.BTF.ext`` core_relo): the instruction it
    patches (index inside the function), its kind (``field_byte_offset``, ...; ``kind_id`` its
    number), the local type it starts from (``struct task_struct___mine``, BTF id ``type_id``) and
    the access string (``0:1``).

    ``applied`` is set on the copies a relocated spec holds (``core_patch.relocate_object``);
    ``poison`` then says why the instruction was poisoned instead of patched."""

    insn: int
    kind: str
    type_name: str
    access: str
    type_id: int
    kind_id: int
    applied: bool = False
    poison: str | None = None

    def describe(self) -> str:
        return f"{self.kind} of {self.type_name} (access {self.access}) at instruction {self.insn}"


class FunctionProblem(Slotted):
    """Why a function cannot be linked (an instruction only a loader can fill, with no relocation
    saying how): the programs that call it are refused, the others of the object load, as libbpf
    fails only those. ``code``, ``message`` and ``help`` are the ObjectError's."""

    code: str
    message: str
    help: tuple[str, ...] = ()


class ProgramSpec(Slotted):
    name: str  # function symbol
    section: str  # the ELF section name (perf-style or libbpf-style attach description)
    insns: bytes  # raw instructions (multiple of 8 bytes)
    offset: int = 0  # offset of the function inside its section
    relocations: tuple[Relocation, ...] = ()
    line_info: tuple[LineInfo, ...] = ()
    core_relocations: tuple[CoreRelocation, ...] = ()
    global_function: bool = False  # a GLOBAL or WEAK symbol (a subprogram the verifier checks alone)
    hidden: bool = False  # global with STV_HIDDEN/STV_INTERNAL visibility (__hidden)
    problem: FunctionProblem | None = None  # why the function cannot be linked (None: it can)

    @property
    def insn_count(self) -> int:
        return len(self.insns) // 8


class ExternSpec(Slotted):
    """An extern the object declares (an undefined GLOBAL or WEAK NOTYPE symbol with a VAR or
    FUNC in the ``.kconfig`` or ``.ksyms`` DATASEC of its BTF).

    ``kind``: ``kconfig`` (``__kconfig``: a value in the ``.kconfig`` map, at ``offset``),
    ``ksym`` (``__ksym`` variable: typed when ``type_id`` is not 0, else a kallsyms address) or
    ``kfunc`` (``__ksym`` function; ``type_id`` its FUNC_PROTO)."""

    name: str
    kind: str
    weak: bool
    btf_id: int  # the VAR or FUNC in the object's BTF
    type_id: int  # its type behind typedefs and modifiers; 0 for a typeless ksym
    type_name: str  # for messages: "int", "struct rq", "bool", "char[64]", "func (void)"
    offset: int = 0  # kconfig: where the value sits in the .kconfig map
    size: int = 0  # kconfig: its size in bytes


class SectionLayout(Slotted):
    """An allocated data section's size and where its named symbols sit: the facts a BTF DATASEC
    describes, which clang leaves for the loader to fill in."""

    name: str
    size: int
    symbols: tuple[tuple[str, int], ...] = ()  # (symbol name, offset) of each named object symbol
    hidden: tuple[str, ...] = ()  # its __hidden (STV_HIDDEN/STV_INTERNAL) global variables


class StructOpsSpec(Slotted):
    """A struct_ops map: a variable of a ``SEC(".struct_ops")`` or ``SEC(".struct_ops.link")``
    section (libbpf 1.8 makes a BPF_MAP_TYPE_STRUCT_OPS map of it, ``BPF_F_LINK`` for ``.link``),
    of the kernel struct ``type_name``, whose function-pointer members name programs."""

    name: str
    section: str
    type_name: str
    members: tuple[tuple[str, str], ...] = ()  # (member, program) in member order


class ObjectSpec(Slotted, hidden=("btf", "btf_ext", "layouts")):
    path: str
    license: str
    kernel_version: int | None
    maps: tuple[MapSpec, ...]
    programs: tuple[ProgramSpec, ...]
    subprograms: tuple[ProgramSpec, ...] = ()  # .text functions reached by bpf-to-bpf calls
    btf: bytes | None = None  # the raw .BTF section, for loading
    btf_ext: bytes | None = None
    layouts: tuple[SectionLayout, ...] = ()  # with .BTF only
    externs: tuple[ExternSpec, ...] = ()  # __kconfig, __ksym and kfunc externs, in symbol order
    externs_applied: bool = False  # set on the spec ``externs.apply_externs`` returns
    struct_ops: tuple[StructOpsSpec, ...] = ()  # struct_ops maps, which evspec reads and does not create

    def core_relocations(self) -> tuple[tuple[ProgramSpec, CoreRelocation], ...]:
        """Every CO-RE relocation of the object's functions (programs and subprograms)."""
        return tuple((p, r) for p in (*self.programs, *self.subprograms) for r in p.core_relocations)

    def function(self, name: str) -> ProgramSpec | None:
        """The function ``name``: a subprogram, else a program (what a call by that name reaches)."""
        for fn in self.subprograms + self.programs:
            if fn.name == name:
                return fn
        return None

    def map(self, name: str) -> MapSpec | None:
        for m in self.maps:
            if m.name == name:
                return m
        return None
