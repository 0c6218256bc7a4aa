"""The kernel layer against the real kernel (root): maps, programs, perf events, ring buffers."""

from __future__ import annotations

import array
import ctypes
import fcntl
import os
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from evspec.loader.abi import bpf as abi
from evspec.loader.abi.perf import AttrFlag, PerfEventAttr, PerfType, SampleType, SwConfig
from evspec.loader.kernel import Kernel, KernelError, RingMapping, VerifierError
from evspec.loader.load.live import LiveObject, load_object
from evspec.loader.object.reader import read_object
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec, ProgramSpec, ProgType, Relocation
from evspec.loader.output.perf_ring import Lost, PerfRing, Sample, wait_readable

TRACEFS = Path("/sys/kernel/tracing")
SAMPLE_TYPE = SampleType.RAW | SampleType.TID | SampleType.TIME | SampleType.CPU
HELPER_MAP_LOOKUP_ELEM = abi.FUNC_MAP_LOOKUP_ELEM
HELPER_PERF_EVENT_OUTPUT = 25


# --------------------------------------------------------- a tiny assembler


insn = abi.encode_insn


def ld_map(dst: int) -> bytes:
    """ld_imm64 dst, <map> (imm 0: the relocation fills it in)."""
    return insn(abi.OP_LD_IMM64, dst) + insn(0)


def mov64_reg(dst: int, src: int) -> bytes:
    return insn(0xBF, dst, src)


def mov64_imm(dst: int, imm: int) -> bytes:
    return insn(0xB7, dst, imm=imm)


def mov32_imm(dst: int, imm: int) -> bytes:
    return insn(0xB4, dst, imm=imm)


def add64_imm(dst: int, imm: int) -> bytes:
    return insn(0x07, dst, imm=imm)


def call(helper: int) -> bytes:
    return insn(abi.OP_CALL, imm=helper)


EXIT = insn(abi.OP_EXIT)


def bpf_output_attr() -> PerfEventAttr:
    """A sampling bpf-output event that wakes its reader at every sample."""
    return PerfEventAttr(
        type=PerfType.SOFTWARE, config=SwConfig.BPF_OUTPUT, sample_period=1, sample_type=SAMPLE_TYPE, wakeup_events=1
    )


def output_program() -> tuple[bytes, tuple[Relocation, ...]]:
    """Look up arr[0] and send its value (as a u64) to the perf event array ``channel``."""
    body = [
        mov64_reg(6, 1),  # 0: r6 = ctx
        insn(0x62, 10, off=-4, imm=0),  # 1: *(u32 *)(r10 - 4) = 0
        mov64_reg(2, 10),  # 2: r2 = r10
        add64_imm(2, -4),  # 3: r2 += -4
        ld_map(1),  # 4-5: r1 = &arr
        call(HELPER_MAP_LOOKUP_ELEM),  # 6
        insn(0x15, 0, off=10, imm=0),  # 7: if r0 == 0 goto 18
        insn(0x61, 1, 0, off=0),  # 8: r1 = *(u32 *)(r0 + 0)
        insn(0x7B, 10, 1, off=-16),  # 9: *(u64 *)(r10 - 16) = r1
        mov64_reg(4, 10),  # 10: r4 = r10
        add64_imm(4, -16),  # 11: r4 += -16
        mov64_reg(1, 6),  # 12: r1 = ctx
        ld_map(2),  # 13-14: r2 = &channel
        mov32_imm(3, -1),  # 15: r3 = BPF_F_CURRENT_CPU (0xffffffff)
        mov64_imm(5, 8),  # 16: r5 = 8
        call(HELPER_PERF_EVENT_OUTPUT),  # 17
        mov64_imm(0, 0),  # 18: r0 = 0
        EXIT,  # 19
    ]
    relocs = (Relocation(4, "map", "arr", "arr"), Relocation(13, "map", "channel", "channel"))
    return b"".join(body), relocs


def output_object(cpus: int) -> ObjectSpec:
    insns, relocs = output_program()
    return ObjectSpec(
        path="<assembled>",
        license="GPL",
        kernel_version=None,
        maps=(
            MapSpec("arr", MapType.ARRAY, 4, 4, 8),
            MapSpec("channel", MapType.PERF_EVENT_ARRAY, 4, 4, cpus),
        ),
        programs=(ProgramSpec("emit", "syscalls:sys_enter_getppid", insns, relocations=relocs),),
    )


# ------------------------------------------------------------------ helpers


def open_fds() -> set[int]:
    return {int(n) for n in os.listdir("/proc/self/fd")}


def tracepoint_id(system: str, event: str) -> int:
    if not (TRACEFS / "events").is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True)
    return int((TRACEFS / "events" / system / event / "id").read_text())


def getppid_syscall() -> int:
    libc = ctypes.CDLL(None)
    return int(libc.syscall(110 if os.uname().machine == "x86_64" else 173))


class Session:
    """One run of the pipeline: load, per-CPU bpf-output events and rings, tracepoint attach."""

    def __init__(self, kernel: Kernel, cpus: int) -> None:
        self.kernel = kernel
        self.cpus = cpus
        self.obj: LiveObject | None = None
        self.outputs: list[int] = []
        self.rings: list[RingMapping] = []
        self.tracepoint: int | None = None

    def start(self, value: int) -> None:
        k = self.kernel
        self.obj = load_object(output_object(self.cpus), {"emit": ProgType.TRACEPOINT}, kernel=k)
        arr = self.obj.map("arr").fd
        k.update_elem(arr, struct.pack("<I", 0), struct.pack("<I", value))
        for cpu in range(self.cpus):
            fd = k.perf_event_open(bpf_output_attr(), pid=-1, cpu=cpu)
            self.outputs.append(fd)
            self.rings.append(k.mmap_ring(fd, 8))
            k.update_elem(self.obj.map("channel").fd, struct.pack("<I", cpu), struct.pack("<I", fd))
        tp = PerfEventAttr(
            type=PerfType.TRACEPOINT,
            config=tracepoint_id("syscalls", "sys_enter_getppid"),
            sample_period=1,
            flags=AttrFlag.DISABLED,
        )
        self.tracepoint = k.perf_event_open(tp, pid=-1, cpu=0)
        k.set_bpf(self.tracepoint, self.obj.program("emit").fd)
        k.enable(self.tracepoint)

    def read(self) -> list[Sample]:
        samples: list[Sample] = []
        for ring in self.rings:
            for rec in PerfRing(ring, SAMPLE_TYPE).records():
                assert not isinstance(rec, Lost)
                assert isinstance(rec, Sample)
                samples.append(rec)
        return samples

    def stop(self) -> None:
        k = self.kernel
        if self.tracepoint is not None:
            k.close(self.tracepoint)
        for ring in self.rings:
            k.munmap(ring)
        for fd in self.outputs:
            k.close(fd)
        if self.obj is not None:
            self.obj.close()


@pytest.fixture
def no_leaks() -> Iterator[None]:
    before = open_fds()
    yield
    assert open_fds() == before


@pytest.fixture
def kernel(root_kernel: None) -> Kernel:
    return Kernel()


# -------------------------------------------------------------------- tests


def test_million_entry_array_filled_with_update_batch(kernel: Kernel, no_leaks: None) -> None:
    n = 1 << 20
    fd = kernel.create_map(MapType.ARRAY, 4, 8, n, name="million")
    try:
        keys = array.array("I", range(n)).tobytes()
        values = array.array("Q", (i * 2654435761 & 0xFFFFFFFFFFFF for i in range(n))).tobytes()
        assert kernel.update_batch(fd, keys, values, key_size=4, value_size=8) == n
        for i in (0, 1, 4095, 4096, 65537, 500_000, n - 2, n - 1):
            got = kernel.lookup(fd, struct.pack("<I", i), 8)
            assert got == struct.pack("<Q", i * 2654435761 & 0xFFFFFFFFFFFF)
        assert kernel.lookup(fd, struct.pack("<I", n), 8) is None
        read_keys, read_values = kernel.lookup_batch(fd, key_size=4, value_size=8, chunk=1 << 16)
        assert read_keys == keys and read_values == values
        info = kernel.map_info(fd)
        assert (info.type, info.key_size, info.value_size, info.max_entries, info.name) == (
            MapType.ARRAY,
            4,
            8,
            n,
            "million",
        )
    finally:
        kernel.close(fd)


def test_descriptors_are_close_on_exec(kernel: Kernel, no_leaks: None) -> None:
    map_fd = kernel.create_map(MapType.HASH, 4, 4, 4, name="h")
    perf_fd = kernel.perf_event_open(PerfEventAttr(type=PerfType.SOFTWARE, config=SwConfig.DUMMY), pid=0)
    try:
        for fd in (map_fd, perf_fd):
            assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    finally:
        kernel.close(perf_fd)
        kernel.close(map_fd)


def test_program_output_reaches_the_ring_buffer(kernel: Kernel, no_leaks: None) -> None:
    cpus = os.cpu_count() or 1
    parent = os.getppid()  # before the program is attached: this is a getppid call too
    session = Session(kernel, cpus)
    try:
        session.start(0xC0FFEE)
        assert session.obj is not None
        prog = kernel.program_info(session.obj.program("emit").fd)
        assert prog.type == ProgType.TRACEPOINT and prog.name == "emit" and prog.gpl_compatible
        assert {kernel.map_info(m.fd).id for m in session.obj.maps.values()} == set(prog.map_ids)
        assert prog.id in set(kernel.program_ids())
        assert getppid_syscall() == parent
        assert wait_readable(session.outputs, 1000)
        samples = session.read()
        mine = [s for s in samples if s.pid == os.getpid()]
        assert len(mine) == 1, samples
        sample = mine[0]
        assert sample.tid == os.getpid() and sample.cpu is not None and 0 <= sample.cpu < cpus
        assert sample.time and sample.time > 0
        assert sample.raw is not None
        assert sample.raw[:8] == struct.pack("<Q", 0xC0FFEE) and len(sample.raw) == 12
        # everything was consumed: what the rings hold now is other processes' getppid calls
        assert [s for s in session.read() if s.pid == os.getpid()] == []
    finally:
        session.stop()


def test_verifier_rejection_is_a_verifier_error(kernel: Kernel, no_leaks: None) -> None:
    # r0 is never written before exit.
    bad = ObjectSpec("<bad>", "GPL", None, (), (ProgramSpec("bad", "syscalls:sys_enter_getppid", EXIT),))
    with pytest.raises(VerifierError) as info:
        load_object(bad, {"bad": ProgType.TRACEPOINT}, kernel=kernel)
    err = info.value
    assert err.code == "EK007"
    assert err.summary.message == "R0 !read_ok"
    assert err.summary.insn_index == 0
    assert "R0 !read_ok" in err.log and "processed" in err.log
    assert "the verifier rejected program 'bad': R0 !read_ok" in err.message


def test_kernel_errors_name_the_command(kernel: Kernel, no_leaks: None) -> None:
    with pytest.raises(KernelError) as info:
        kernel.create_map(MapType.ARRAY, 4, 0, 4, name="novalue")
    assert info.value.code == "EK005"
    assert info.value.message.startswith("BPF_MAP_CREATE for map 'novalue': Invalid argument")
    fd = kernel.create_map(MapType.ARRAY, 4, 4, 4, name="small")
    try:
        with pytest.raises(KernelError) as info:
            kernel.update_elem(fd, struct.pack("<I", 4), bytes(4))
        assert info.value.errno == 7 and info.value.code == "EK006"
        kernel.freeze(fd)
        with pytest.raises(KernelError) as info:
            kernel.update_elem(fd, struct.pack("<I", 0), bytes(4))
        assert info.value.operation == "BPF_MAP_UPDATE_ELEM"
    finally:
        kernel.close(fd)


def test_global_data_is_written_and_rodata_frozen(kernel: Kernel, no_leaks: None) -> None:
    # r0 = *(u32 *)(&.rodata + 4); exit
    insns = insn(0x18, 1) + insn(0) + insn(0x61, 0, 1, 0) + EXIT
    spec = ObjectSpec(
        "<data>",
        "GPL",
        None,
        (
            MapSpec(
                ".rodata",
                MapType.ARRAY,
                4,
                8,
                1,
                section=".rodata",
                initial_value=struct.pack("<II", 7, 42),
                readonly=True,
            ),
        ),
        (
            ProgramSpec(
                "ro",
                "syscalls:sys_enter_getppid",
                insns,
                relocations=(Relocation(0, "data", ".rodata", ".rodata", 4),),
            ),
        ),
    )
    with load_object(spec, {"ro": ProgType.TRACEPOINT}, kernel=kernel) as obj:
        fd = obj.map(".rodata").fd
        assert kernel.lookup(fd, bytes(4), 8) == struct.pack("<II", 7, 42)
        assert kernel.map_info(fd).flags & abi.MapFlag.RDONLY_PROG
        with pytest.raises(KernelError):
            kernel.update_elem(fd, bytes(4), bytes(8))


def test_two_hundred_cycles_leave_no_descriptor_behind(kernel: Kernel, no_leaks: None) -> None:
    cpus = os.cpu_count() or 1
    for cycle in range(200):
        session = Session(kernel, cpus)
        try:
            session.start(cycle)
            getppid_syscall()
            values = [s.raw[:8] for s in session.read() if s.pid == os.getpid() and s.raw]
            assert values == [struct.pack("<Q", cycle)]
        finally:
            session.stop()


def _read_fixture(path: Path) -> ObjectSpec:
    return read_object(path)


@pytest.mark.parametrize("name", ["maps.o", "legacy_maps.o"])
def test_fixture_objects_load(kernel: Kernel, bpf_fixtures: Path, no_leaks: None, name: str) -> None:
    spec = _read_fixture(bpf_fixtures / name)
    with load_object(spec, {p.name: ProgType.TRACEPOINT for p in spec.programs}, kernel=kernel) as obj:
        for m in spec.maps:
            info = kernel.map_info(obj.map(m.name).fd)
            assert (info.type, info.key_size, info.value_size, info.max_entries) == (
                m.type,
                m.key_size,
                m.value_size,
                m.max_entries,
            )
        prog = kernel.program_info(obj.program("on_enter").fd)
        assert prog.map_ids == (kernel.map_info(obj.map("arr").fd).id,)
        # the fixed-up BTF loads for every fixture (programs get func/line info even when every
        # map is a legacy one); typed maps are created with their key/value types
        assert obj.btf_fd is not None and obj.btf_error is None
        typed = [m.name for m in spec.maps if m.key_type_id is not None and not m.legacy]
        assert typed == [] or any(obj.map(name).with_btf for name in typed)
        assert kernel.program_info(obj.program("on_enter").fd).nr_func_info > 0


def test_fixture_output_reaches_the_ring_buffer(kernel: Kernel, bpf_fixtures: Path, no_leaks: None) -> None:
    """stdout1.o writes "hello1" to its one-slot __bpf_stdout__ array on every syscall entry."""
    spec = _read_fixture(bpf_fixtures / "stdout1.o")
    affinity = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {0})  # the map has one slot: CPU 0's event
    obj = load_object(spec, {"out1": ProgType.TRACEPOINT}, kernel=kernel)
    out = tp = -1
    ring = None
    try:
        out = kernel.perf_event_open(bpf_output_attr(), pid=-1, cpu=0)
        ring = kernel.mmap_ring(out, 64)
        kernel.update_elem(obj.map("__bpf_stdout__").fd, bytes(4), struct.pack("<I", out))
        tp_attr = PerfEventAttr(
            type=PerfType.TRACEPOINT, config=tracepoint_id("raw_syscalls", "sys_enter"), sample_period=1
        )
        tp = kernel.perf_event_open(tp_attr, pid=-1, cpu=0)
        kernel.set_bpf(tp, obj.program("out1").fd)
        getppid_syscall()
        kernel.close(tp)
        tp = -1
        mine = [
            r for r in PerfRing(ring, SAMPLE_TYPE).records() if isinstance(r, Sample) and r.pid == os.getpid()
        ]
        assert mine and all(r.raw is not None and r.raw.startswith(b"hello1\0") and r.cpu == 0 for r in mine)
    finally:
        os.sched_setaffinity(0, affinity)
        if tp >= 0:
            kernel.close(tp)
        if ring is not None:
            kernel.munmap(ring)
        if out >= 0:
            kernel.close(out)
        obj.close()
