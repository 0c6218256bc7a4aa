"""Argument prologues without a kernel: the generated instructions are decoded and executed by a
small BPF interpreter (the subset a prologue may use) against synthetic pt_regs and memory, and
PrologueCache runs on the fake kernel."""

from __future__ import annotations

import errno
import struct
from dataclasses import dataclass, field

import pytest
from evspec.loader.attach.prologue import (
    HELPER_PROBE_READ_KERNEL,
    HELPER_PROBE_READ_USER,
    PrologueCache,
    assemble_prologue,
    build_prologue,
    fetched_count,
)
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.kernel.fake import FakeKernel
from evspec.loader.load.live import LiveObject, load_object
from evspec.loader.object.spec import (
    LineInfo,
    MapSpec,
    MapType,
    ObjectSpec,
    ProgramSpec,
    ProgType,
    Relocation,
)
from evspec.loader.sections.names import ProbeArg
from evspec.loader.sections.probe_args import AARCH64, U64, X86_64, FetchPlace, ValueType
from hypothesis import given, settings
from hypothesis import strategies as st

from evspec.span import Span

CTX = 0x1000
FP = 0x9000  # R10; the stack is the 512 bytes below it
MASK = (1 << 64) - 1


@dataclass
class Machine:
    """Registers, a pt_regs block at CTX, a stack, and 'probed memory' only helpers may read."""

    pt_regs: bytearray
    memory: dict[int, int] = field(default_factory=dict)  # address -> byte
    regs: list[int] = field(default_factory=lambda: [0] * 11)
    stack: bytearray = field(default_factory=lambda: bytearray(512))
    helpers: list[int] = field(default_factory=list)

    def load(self, address: int, size: int) -> int:
        if CTX <= address and address + size <= CTX + len(self.pt_regs):
            assert size == 8 and (address - CTX) % 8 == 0, "pt_regs is read as aligned u64"
            return int.from_bytes(self.pt_regs[address - CTX : address - CTX + size], "little")
        assert FP - 512 <= address and address + size <= FP, f"load outside ctx/stack at {address:#x}"
        return int.from_bytes(self.stack[address - FP + 512 : address - FP + 512 + size], "little")

    def store(self, address: int, size: int, value: int) -> None:
        assert FP - 512 <= address and address + size <= FP, "stores go to the stack only"
        at = address - FP + 512
        self.stack[at : at + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")

    def probe_read(self, dst: int, size: int, src: int) -> int:
        data = [self.memory.get((src + i) & MASK) for i in range(size)]
        if any(b is None for b in data):
            self.stack[dst - FP + 512 : dst - FP + 512 + size] = bytes(size)
            return -errno.EFAULT & MASK
        self.stack[dst - FP + 512 : dst - FP + 512 + size] = bytes(data)  # type: ignore[arg-type]
        return 0


def run(code: bytes, m: Machine) -> Machine:
    """Execute a prologue until it falls through past its last instruction (into the program)."""
    insns = [code[i : i + 8] for i in range(0, len(code), 8)]
    r = m.regs
    r[1], r[10] = CTX, FP
    pc = 0
    for _ in range(10_000):
        if pc == len(insns):
            return m
        op, regs, off, imm = struct.unpack("<BBhi", insns[pc])
        dst, src = regs & 0xF, regs >> 4
        pc += 1
        if op == 0xBF:
            r[dst] = r[src]
        elif op == 0xB7:
            r[dst] = imm & MASK
        elif op == 0x07:
            r[dst] = (r[dst] + imm) & MASK
        elif op == 0x0F:
            r[dst] = (r[dst] + r[src]) & MASK
        elif op == 0x67:
            r[dst] = (r[dst] << imm) & MASK
        elif op == 0x77:
            r[dst] >>= imm
        elif op == 0xC7:
            signed = r[dst] - (1 << 64) if r[dst] >> 63 else r[dst]
            r[dst] = (signed >> imm) & MASK
        elif op in (0x79, 0x61, 0x69, 0x71):
            size = {0x79: 8, 0x61: 4, 0x69: 2, 0x71: 1}[op]
            r[dst] = m.load((r[src] + off) & MASK, size)
        elif op == 0x7B:
            m.store((r[dst] + off) & MASK, 8, r[src])
        elif op == 0x18:
            high = struct.unpack("<BBhI", insns[pc])[3]
            r[dst] = (imm & 0xFFFFFFFF) | high << 32
            pc += 1
        elif op == 0x85:
            m.helpers.append(imm)
            assert imm in (HELPER_PROBE_READ_USER, HELPER_PROBE_READ_KERNEL)
            r[0] = m.probe_read(r[1], r[2], r[3])
            r[1:6] = [0xDEAD] * 5  # clobbered by the call
        elif op == 0x55:
            if r[dst] != imm & MASK:
                pc += off
        elif op == 0x05:
            pc += off
        else:
            raise AssertionError(f"unexpected opcode {op:#04x} at {pc - 1}")
        assert 0 <= pc <= len(insns), "jump outside the prologue"
    raise AssertionError("the prologue does not terminate")


def regs_block(arch_regs: dict[str, int], values: dict[str, int]) -> bytearray:
    block = bytearray(max(arch_regs.values()) + 8)
    for name, value in values.items():
        block[arch_regs[name] : arch_regs[name] + 8] = (value & MASK).to_bytes(8, "little")
    return block


def memory_with(*chunks: tuple[int, bytes]) -> dict[int, int]:
    return {base + i: b for base, data in chunks for i, b in enumerate(data)}


def place(reg: str | None, *derefs: int, type: ValueType = U64, address: int = 0) -> FetchPlace:
    return FetchPlace("t", X86_64.regs[reg] if reg else None, address, tuple(derefs), type)


def execute(places: list[FetchPlace], regs: dict[str, int], memory: dict[int, int] | None = None,
            *, user: bool = True) -> Machine:
    code = assemble_prologue(places, user=user)
    return run(code, Machine(regs_block(X86_64.regs, regs), memory or {}))


def arg(fetch: str, type: str | None = None) -> ProbeArg:
    return ProbeArg(None, fetch, type, Span(0, len(fetch)))


# ----------------------------------------------------------------- what the code computes


def test_registers_land_in_r3_to_r5_with_ctx_restored() -> None:
    m = execute([place("di"), place("si"), place("r9")], {"di": 11, "si": -2, "r9": 1 << 63})
    assert m.regs[1] == CTX and m.regs[6] == CTX
    assert m.regs[2] == 0
    assert m.regs[3:6] == [11, (-2) & MASK, 1 << 63]
    assert m.helpers == []


@pytest.mark.parametrize(
    ("vtype", "raw", "expected"),
    [
        (ValueType(4, False), 0xFFFF_FFFF_8000_0001, 0x8000_0001),
        (ValueType(4, True), 0xFFFF_FFFF_8000_0001, (-0x7FFF_FFFF) & MASK),
        (ValueType(1, True), 0x1FF, MASK),
        (ValueType(2, False), 0x12345, 0x2345),
        (ValueType(8, True), 0x8000_0000_0000_0000, 0x8000_0000_0000_0000),
        (ValueType(1, False, 2, 3), 0b1011_0100, 0b101),
        (ValueType(8, False, 60, 4), 0xA000_0000_0000_0000, 0xA),
        (ValueType(4, True, 4, 8), 0x0000_0F80, (-8) & MASK),
    ],
)
def test_register_values_are_narrowed_to_their_type(vtype: ValueType, raw: int, expected: int) -> None:
    m = execute([place("ax", type=vtype)], {"ax": raw})
    assert m.regs[3] == expected


def test_nested_dereferences_read_user_memory() -> None:
    memory = memory_with((0x5008, (0x7000).to_bytes(8, "little")), (0x7004, (-5 & 0xFFFFFFFF).to_bytes(4, "little")))
    m = execute([place("di", 8, 4, type=ValueType(4, True)), place("di", 8)], {"di": 0x5000}, memory)
    assert m.regs[2] == 0
    assert m.regs[3] == (-5) & MASK
    assert m.regs[4] == 0x7000
    assert m.helpers == [HELPER_PROBE_READ_USER] * 3


@pytest.mark.parametrize(("size", "signed", "stored", "expected"), [
    (1, False, b"\xfe", 0xFE), (1, True, b"\xfe", (-2) & MASK), (2, True, b"\x00\x80", (-32768) & MASK),
    (4, False, b"\x01\x02\x03\x04", 0x04030201),
])
def test_memory_reads_have_the_types_size(size: int, signed: bool, stored: bytes, expected: int) -> None:
    # bytes after the value are not mapped: reading more than `size` would fail the fetch
    m = execute([place("si", -2, type=ValueType(size, signed))], {"si": 0x4002}, memory_with((0x4000, stored)))
    assert (m.regs[2], m.regs[3]) == (0, expected)


def test_a_failed_read_sets_the_error_flag_and_zeroes_every_value() -> None:
    memory = memory_with((0x5000, (77).to_bytes(8, "little")))
    m = execute([place("di", 0), place("si", 0), place("dx")], {"di": 0x5000, "si": 0xBAD, "dx": 9}, memory)
    assert m.regs[2] == 1
    assert m.regs[3:6] == [0, 0, 0]
    assert m.regs[1] == CTX


def test_kernel_probes_read_with_probe_read_kernel() -> None:
    m = execute([place("di", 0)], {"di": 0x5000}, memory_with((0x5000, bytes(8))), user=False)
    assert m.helpers == [HELPER_PROBE_READ_KERNEL]


def test_a_constant_base_is_a_64_bit_immediate() -> None:
    address = 0xFFFF_FFFF_8123_4560
    memory = memory_with((address + 16, (42).to_bytes(8, "little")))
    m = execute([place(None, 16, address=address)], {}, memory, user=False)
    assert (m.regs[2], m.regs[3]) == (0, 42)


def test_offsets_beyond_32_bits_are_added_through_a_register() -> None:
    memory = memory_with((0x1_2345_6789 + 0x100, (5).to_bytes(8, "little")))
    m = execute([place("ip", 0x1_2345_6789)], {"ip": 0x100}, memory)
    assert (m.regs[2], m.regs[3]) == (0, 5)


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.integers(0, MASK), min_size=1, max_size=3),
    offsets=st.lists(st.integers(-64, 64), min_size=3, max_size=3),
    types=st.lists(st.sampled_from([ValueType(s, sg) for s in (1, 2, 4, 8) for sg in (False, True)]), min_size=3, max_size=3),
    depth=st.lists(st.integers(0, 2), min_size=3, max_size=3),
)
def test_against_a_reference_model(values: list[int], offsets: list[int], types: list[ValueType], depth: list[int]) -> None:
    """Random chains of up to two reads over a memory where address A holds A+0x100 (u64 words)."""
    memory: dict[int, int] = {}

    def word(address: int) -> int:
        return (address + 0x100) & MASK

    places, expected = [], []
    regs = {}
    for i, (reg, value) in enumerate(zip(("di", "si", "dx"), values, strict=False)):
        base = 0x10000 + 0x1000 * i
        regs[reg] = base if depth[i] else value
        derefs = tuple(offsets[:depth[i]])
        vtype = types[i]
        current = regs[reg]
        for step, off in enumerate(derefs):
            size = vtype.size if step == len(derefs) - 1 else 8
            address = current + off
            content = word(address).to_bytes(8, "little")[:size]
            memory.update({address + k: content[k] for k in range(size)})
            current = int.from_bytes(content, "little")
        bits = vtype.size * 8
        current &= (1 << bits) - 1
        if vtype.signed and current >> (bits - 1):
            current = (current - (1 << bits)) & MASK
        places.append(place(reg, *derefs, type=vtype))
        expected.append(current)
    m = execute(places, regs, memory)
    assert m.regs[2] == 0
    assert m.regs[3 : 3 + len(places)] == expected


# ----------------------------------------------------------------- the instructions themselves


def _ops(code: bytes) -> list[tuple[int, int, int, int, int]]:
    out = []
    for i in range(0, len(code), 8):
        op, regs, off, imm = struct.unpack("<BBhi", code[i : i + 8])
        out.append((op, regs & 0xF, regs >> 4, off, imm))
    return out


def test_no_arguments_no_prologue() -> None:
    assert assemble_prologue([], user=True) == b""
    assert build_prologue([], binary=None, function="f", address=None, user=False) == b""


def test_register_only_prologue_is_exact_and_has_no_error_block() -> None:
    code = build_prologue([arg("%di"), arg("%si", "u32")], binary=None, function=None, address=None,
                          user=False, arch="x86_64")
    assert _ops(code) == [
        (0xBF, 6, 1, 0, 0),  # r6 = r1
        (0x79, 3, 6, 112, 0),  # r3 = *(u64 *)(r6 + 112)   pt_regs->di
        (0x7B, 10, 3, -8, 0),  # *(u64 *)(r10 - 8) = r3
        (0x79, 3, 6, 104, 0),  # r3 = pt_regs->si
        (0x67, 3, 0, 0, 32),  # r3 <<= 32
        (0x77, 3, 0, 0, 32),  # r3 >>= 32
        (0x7B, 10, 3, -16, 0),
        (0x79, 3, 10, -8, 0),  # r3 = slot 0
        (0x79, 4, 10, -16, 0),  # r4 = slot 1
        (0xB7, 2, 0, 0, 0),  # r2 = 0
        (0xBF, 1, 6, 0, 0),  # r1 = r6
    ]
    assert fetched_count(code) == 2


def test_error_jumps_land_on_the_error_block() -> None:
    code = assemble_prologue([place("di", 8), place("si", 0, 0)], user=True)
    ops = _ops(code)
    jumps = [i for i, o in enumerate(ops) if o[0] == 0x55]
    assert len(jumps) == 3
    targets = {i + 1 + ops[i][3] for i in jumps}
    assert len(targets) == 1
    target = targets.pop()
    assert ops[target] == (0xB7, 2, 0, 0, 1)  # r2 = 1
    assert ops[target - 1][0] == 0x05 and target - 1 + 1 + ops[target - 1][3] == len(ops) - 1
    assert ops[-1] == (0xBF, 1, 6, 0, 0)


def test_more_than_three_places_are_refused() -> None:
    with pytest.raises(ObjectError) as info:
        assemble_prologue([place("di")] * 4, user=True)
    assert info.value.code == "EK132"


def test_aarch64_registers() -> None:
    code = build_prologue([arg("%x1"), arg("%sp"), arg("$stack1")], binary=None, function=None,
                          address=None, user=True, arch="aarch64")
    regs = regs_block(AARCH64.regs, {"x1": 5, "sp": 0x8000})
    m = run(code, Machine(regs, memory_with((0x8008, (99).to_bytes(8, "little")))))
    assert m.regs[2:6] == [0, 5, 0x8000, 99]


# ----------------------------------------------------------------- PrologueCache (fake kernel)


def _object() -> ObjectSpec:
    # r1 = map (ld_imm64, relocated), r0 = 0, exit
    insns = bytes.fromhex("1801000000000000" "0000000000000000" "b700000000000000" "9500000000000000")
    prog = ProgramSpec(name="probe", section="exec=/bin/true;probe=main a", insns=insns,
                       relocations=(Relocation(0, "map", "m", "m"),),
                       line_info=(LineInfo(0, "p.c", 3, 1, "return 0;"),))
    m = MapSpec(name="m", type=MapType.ARRAY, key_size=4, value_size=8, max_entries=1)
    return ObjectSpec(path="p.o", license="GPL", kernel_version=None, maps=(m,), programs=(prog,))


@pytest.fixture
def fake() -> tuple[FakeKernel, Kernel, LiveObject]:
    funnel = FakeKernel()
    kernel = Kernel(funnel)
    live = load_object(_object(), {}, kernel=kernel, cpus=1, deferred=("probe",))
    return funnel, kernel, live


def test_identical_prologues_share_one_program(fake: tuple[FakeKernel, Kernel, LiveObject]) -> None:
    funnel, kernel, live = fake
    cache = PrologueCache(kernel)
    one = assemble_prologue([place("di")], user=True)
    two = assemble_prologue([place("si")], user=True)
    fds = [cache.program_fd(live, "probe", int(ProgType.KPROBE), p) for p in (one, one, two, one)]
    assert fds[0] == fds[1] == fds[3] != fds[2]
    assert cache.stats() == (2, 4)
    loads = funnel.calls_of("BPF_PROG_LOAD")
    assert len(loads) == 2
    first = loads[0].args
    assert first["insns"].startswith(one)
    body = first["insns"][len(one):]
    map_fd = live.map("m").fd
    assert struct.unpack("<BBhi", body[:8]) == (0x18, 0x10 | 1, 0, map_fd)  # relocated after prepending
    assert first["prog_type"] == int(ProgType.KPROBE) and first["license"] == "GPL"
    cache.close()
    assert all(funnel.open_fds.get(fd) is None for fd in set(fds))
    assert cache.stats() == (0, 4)
    live.close()


def test_verifier_errors_name_the_missing_argument(fake: tuple[FakeKernel, Kernel, LiveObject]) -> None:
    funnel, kernel, live = fake
    prologue = assemble_prologue([place("di")], user=True)
    shift = len(prologue) // 8
    log = f"0: R1=ctx()\n{shift}: (bf) r1 = r4\nR4 !read_ok\nprocessed 9 insns\n"
    funnel.script("BPF_PROG_LOAD", errno=errno.EACCES, log=log, times=None)
    cache = PrologueCache(kernel)
    with pytest.raises(KernelError) as info:
        cache.program_fd(live, "probe", int(ProgType.KPROBE), prologue)
    err = info.value
    assert err.code == "EK139"
    assert "reads R4 (argument 2), but its probe definition fetches 1 argument(s)" in err.message
    assert "p.c:3" in err.message  # the line info was shifted past the prologue
    assert err.detail == log
    assert cache.stats() == (0, 0)
    live.close()


def test_a_rejected_prologue_is_named(fake: tuple[FakeKernel, Kernel, LiveObject]) -> None:
    funnel, kernel, live = fake
    funnel.script("BPF_PROG_LOAD", errno=errno.EACCES, log="1: (79) r3 = *(u64 *)(r6 +400)\ninvalid bpf_context access off=400 size=8\n", times=None)
    with pytest.raises(KernelError) as info:
        PrologueCache(kernel).program_fd(live, "probe", int(ProgType.KPROBE), assemble_prologue([place("di")], user=True))
    assert info.value.code == "EK139"
    assert "argument prologue of program 'probe' at instruction 1" in info.value.message
    live.close()


def test_other_verifier_errors_pass_through(fake: tuple[FakeKernel, Kernel, LiveObject]) -> None:
    funnel, kernel, live = fake
    prologue = assemble_prologue([place("di")], user=True)
    funnel.script("BPF_PROG_LOAD", errno=errno.EACCES, log=f"{len(prologue) // 8 + 2}: (95) exit\nR0 !read_ok\n", times=None)
    with pytest.raises(KernelError) as info:
        PrologueCache(kernel).program_fd(live, "probe", int(ProgType.KPROBE), prologue)
    assert info.value.code == "EK007"
    live.close()


def test_unknown_program(fake: tuple[FakeKernel, Kernel, LiveObject]) -> None:
    _, kernel, live = fake
    with pytest.raises(KeyError):
        PrologueCache(kernel).program_fd(live, "nope", int(ProgType.KPROBE), b"")
    live.close()
