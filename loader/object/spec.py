"""Plain-data description of a BPF object, read from its ELF file without any syscall.

An ``ObjectSpec`` is what the reader produces, what the offline map-term checks read, and what the
kernel layer turns into live maps and programs (the cilium/ebpf CollectionSpec idea).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


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


class ProgType(IntEnum):
    """``enum bpf_prog_type`` (the ones evspec loads)."""

    UNSPEC = 0
    SOCKET_FILTER = 1
    KPROBE = 2
    SCHED_CLS = 3
    SCHED_ACT = 4
    TRACEPOINT = 5
    XDP = 6
    PERF_EVENT = 7
    RAW_TRACEPOINT = 17


@dataclass(frozen=True, slots=True)
class MapSpec:
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

    @property
    def map_type(self) -> MapType | None:
        try:
            return MapType(self.type)
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class Relocation:
    """One instruction of a program that needs a fix-up before loading."""

    insn_index: int  # index of the instruction (8-byte units) inside the program
    kind: str  # "map" (ld_imm64 of a map), "data" (global data), "call" (bpf-to-bpf call)
    symbol: str
    target: str  # map name, data section name, or called function
    addend: int = 0  # offset into the data section / symbol


@dataclass(frozen=True, slots=True)
class LineInfo:
    insn_offset: int  # in instructions, relative to the program start
    file: str
    line: int
    column: int
    source_line: str


CORE_HELP = ("`evspec inspect OBJ.o` lists the relocations; build the object without CO-RE "
             "(no preserve_access_index, BPF_CORE_READ or vmlinux.h) to run it with this version",)


@dataclass(frozen=True, slots=True)
class CoreRelocation:
    """A CO-RE relocation record of a function (``.BTF.ext`` core_relo): the instruction it
    patches (index inside the function), its kind (``field_byte_offset``, ...), the local type it
    starts from (``struct task_struct___mine``) and the access string (``0:1``)."""

    insn: int
    kind: str
    type_name: str
    access: str

    def describe(self) -> str:
        return f"{self.kind} of {self.type_name} (access {self.access}) at instruction {self.insn}"


@dataclass(frozen=True, slots=True)
class ProgramSpec:
    name: str  # function symbol
    section: str  # the ELF section name (perf-style or libbpf-style attach description)
    insns: bytes  # raw instructions (multiple of 8 bytes)
    offset: int = 0  # offset of the function inside its section
    relocations: tuple[Relocation, ...] = ()
    line_info: tuple[LineInfo, ...] = ()
    core_relocations: tuple[CoreRelocation, ...] = ()

    @property
    def insn_count(self) -> int:
        return len(self.insns) // 8


@dataclass(frozen=True, slots=True)
class SectionLayout:
    """An allocated data section's size and where its named symbols sit: the facts a BTF DATASEC
    describes, which clang leaves for the loader to fill in."""

    name: str
    size: int
    symbols: tuple[tuple[str, int], ...] = ()  # (symbol name, offset) of each named object symbol


@dataclass(frozen=True, slots=True)
class ObjectSpec:
    path: str
    license: str
    kernel_version: int | None
    maps: tuple[MapSpec, ...]
    programs: tuple[ProgramSpec, ...]
    subprograms: tuple[ProgramSpec, ...] = ()  # .text functions reached by bpf-to-bpf calls
    btf: bytes | None = field(default=None, repr=False)  # the raw .BTF section, for loading
    btf_ext: bytes | None = field(default=None, repr=False)
    layouts: tuple[SectionLayout, ...] = field(default=(), repr=False)  # with .BTF only

    def core_relocations(self) -> tuple[tuple[ProgramSpec, CoreRelocation], ...]:
        """Every CO-RE relocation of the object's functions (programs and subprograms)."""
        return tuple((p, r) for p in (*self.programs, *self.subprograms) for r in p.core_relocations)

    def unloadable_reason(self) -> str | None:
        """Why evspec cannot load this object correctly (None: it can). Loading an object while
        ignoring its CO-RE relocations would read wrong offsets without a word, so it is refused."""
        relos = self.core_relocations()
        if not relos:
            return None
        prog, first = relos[0]
        return (f"{self.path}: {len(relos)} CO-RE relocation(s), which evspec cannot apply yet "
                f"(the first: program '{prog.name}', {first.describe()}); loaded without them the "
                "programs would read wrong offsets")

    def map(self, name: str) -> MapSpec | None:
        for m in self.maps:
            if m.name == name:
                return m
        return None
