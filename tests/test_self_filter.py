"""The prelude that keeps a recording's tracing programs from seeing the recording itself: its
instructions, the program types it goes in front of, and load_object putting it there (line
records shifted with the program)."""

from __future__ import annotations

import pytest
from evspec.loader.abi import bpf as abi
from evspec.loader.kernel import Kernel
from evspec.loader.kernel.fake import FakeKernel
from evspec.loader.load.live import load_object
from evspec.loader.load.self_filter import GET_CURRENT_PID_TGID, prelude_for, skip_task
from evspec.loader.object.spec import LineInfo, ObjectSpec, ProgramSpec, ProgType

MOV0 = abi.encode_insn(0xB7, dst=0, imm=0)
EXIT = abi.encode_insn(abi.OP_EXIT)


def decoded(code: bytes) -> list[tuple[int, int, int, int, int]]:
    insns = [abi.BpfInsn.from_buffer_copy(code, at) for at in range(0, len(code), abi.INSN_SIZE)]
    return [(i.code, i.dst_reg, i.src_reg, i.off, i.imm) for i in insns]


def test_the_prelude_returns_0_in_the_recordings_own_process() -> None:
    assert decoded(skip_task(4242)) == [
        (0xBF, 6, 1, 0, 0),  # r6 = r1
        (abi.OP_CALL, 0, 0, 0, GET_CURRENT_PID_TGID),
        (0x77, 0, 0, 0, 32),  # r0 >>= 32: the tgid
        (0x55, 0, 0, 2, 4242),  # if r0 != 4242 goto the program
        (0xB7, 0, 0, 0, 0),  # r0 = 0
        (abi.OP_EXIT, 0, 0, 0, 0),
        (0xBF, 1, 6, 0, 0),  # r1 = r6
    ]
    with pytest.raises(ValueError, match="not a process id"):
        skip_task(0)


def test_the_prelude_of_several_processes_returns_0_in_each() -> None:
    """The recording and its drain process: one equality test each but the last, all jumping to
    the return; a tuple of one is the single tgid's prelude."""
    assert decoded(skip_task(4242, 77, 78)) == [
        (0xBF, 6, 1, 0, 0),
        (abi.OP_CALL, 0, 0, 0, GET_CURRENT_PID_TGID),
        (0x77, 0, 0, 0, 32),
        (0x15, 0, 0, 2, 77),  # if r0 == 77 goto r0 = 0
        (0x15, 0, 0, 1, 78),  # if r0 == 78 goto r0 = 0
        (0x55, 0, 0, 2, 4242),
        (0xB7, 0, 0, 0, 0),
        (abi.OP_EXIT, 0, 0, 0, 0),
        (0xBF, 1, 6, 0, 0),
    ]
    assert prelude_for(ProgType.TRACEPOINT, (4242, 77, 78)) == skip_task(4242, 77, 78)
    assert prelude_for(ProgType.TRACEPOINT, (9,)) == skip_task(9) == prelude_for(ProgType.TRACEPOINT, 9)
    with pytest.raises(ValueError, match="not a process id: -1"):
        skip_task(5, -1)


@pytest.mark.parametrize("prog_type", [ProgType.TRACEPOINT, ProgType.KPROBE, ProgType.PERF_EVENT,
                                       ProgType.RAW_TRACEPOINT, ProgType.TRACING])
def test_tracing_programs_get_it(prog_type: ProgType) -> None:
    assert prelude_for(prog_type, 7) == skip_task(7)


@pytest.mark.parametrize("prog_type", [ProgType.XDP, ProgType.SCHED_CLS, ProgType.LSM, ProgType.SOCKET_FILTER])
def test_programs_whose_return_value_decides_something_else_do_not(prog_type: ProgType) -> None:
    assert prelude_for(prog_type, 7) == b"" and prelude_for(ProgType.TRACEPOINT, None) == b""


def test_load_object_puts_it_in_front_of_tracing_programs_only() -> None:
    line = LineInfo(0, "t.c", 3, 1, "return 0;")
    traced = ProgramSpec("traced", "syscalls:sys_enter_write", MOV0 + EXIT, line_info=(line,))
    net = ProgramSpec("net", "xdp", MOV0 + EXIT)
    fake = FakeKernel()
    spec = ObjectSpec("f.o", "GPL", None, (), (traced, net))
    types = {"traced": int(ProgType.TRACEPOINT), "net": int(ProgType.XDP)}
    with load_object(spec, types, kernel=Kernel(fake), use_btf=False, cpus=1, skip_tgid=99) as live:
        loaded = {p["prog_type"]: p["insns"] for p in fake.programs.values()}
        assert loaded == {ProgType.TRACEPOINT: skip_task(99) + MOV0 + EXIT, ProgType.XDP: MOV0 + EXIT}
        assert sorted(live.programs) == ["net", "traced"]


def test_a_prefixed_program_keeps_its_line_records_on_its_instructions() -> None:
    from evspec.loader.load.live import LinkedProgram

    line = LineInfo(1, "t.c", 3, 1, "return 0;")
    linked = LinkedProgram(MOV0 + EXIT, (line,), (("p", 0),))
    front = skip_task(5)
    moved = linked.prefixed(front)
    assert moved.insns == front + MOV0 + EXIT and moved.layout == linked.layout
    assert [e.insn_offset for e in moved.line_info] == [1 + len(front) // abi.INSN_SIZE]
    assert linked.prefixed(b"") is linked
