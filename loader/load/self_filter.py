"""Programs that do not see evspec's own activity.

A recording's programs run in every task that hits their tracepoints and probes, evspec's own
included: its writes of what it prints, its page faults, its calls of a probed library function
would become records it prints, and prints about. ``skip_task(tgid, ...)`` is a prelude put in
front of a program, returning 0 at once when the task is evspec's (``bpf_get_current_pid_tgid()
>> 32`` is its tgid, or that of its drain process), which for these program types means "no
sample" or is ignored:

    r6 = r1                         ; the context, kept across the call
    call bpf_get_current_pid_tgid
    r0 >>= 32
    if r0 == OTHER_TGID goto +1     ; one for each tgid but the last
    if r0 != TGID goto +2
    r0 = 0
    exit
    r1 = r6                         ; the program starts as it would have

Programs whose return value decides something else (XDP, tc, LSM, cgroup, struct_ops ...) are
left as they are: they are not in ``FILTERED_TYPES``.
"""

from __future__ import annotations

from evspec.loader.abi.bpf import OP_CALL, OP_EXIT, encode_insn
from evspec.loader.object.spec import ProgType

FILTERED_TYPES = frozenset({ProgType.KPROBE, ProgType.TRACEPOINT, ProgType.PERF_EVENT, ProgType.RAW_TRACEPOINT,
                            ProgType.RAW_TRACEPOINT_WRITABLE, ProgType.TRACING})
GET_CURRENT_PID_TGID = 14  # enum bpf_func_id
_MOV64_REG, _RSH64_IMM, _JEQ_IMM, _JNE_IMM, _MOV64_IMM = 0xBF, 0x77, 0x15, 0x55, 0xB7
CTX, SAVED = 1, 6


def skip_task(tgid: int, *more: int) -> bytes:
    """The prelude for evspec's ``tgid`` and the ``more`` of its processes (positive pids, within
    an instruction's 32-bit immediate)."""
    tgids = (*more, tgid)
    for one in tgids:
        if not 0 < one < 1 << 31:
            raise ValueError(f"not a process id: {one}")
    return b"".join((
        encode_insn(_MOV64_REG, dst=SAVED, src=CTX),
        encode_insn(OP_CALL, imm=GET_CURRENT_PID_TGID),
        encode_insn(_RSH64_IMM, dst=0, imm=32),
        *(encode_insn(_JEQ_IMM, dst=0, off=len(more) - i, imm=one) for i, one in enumerate(more)),
        encode_insn(_JNE_IMM, dst=0, off=2, imm=tgid),
        encode_insn(_MOV64_IMM, dst=0, imm=0),
        encode_insn(OP_EXIT),
        encode_insn(_MOV64_REG, dst=CTX, src=SAVED),
    ))


def prelude_for(prog_type: int, tgid: int | tuple[int, ...] | None) -> bytes:
    """What goes in front of a program of ``prog_type`` in a recording by ``tgid`` (or by the
    processes of a tuple of tgids; None: nothing)."""
    if tgid is None or prog_type not in FILTERED_TYPES:
        return b""
    first, *more = (tgid,) if isinstance(tgid, int) else tgid
    return skip_task(first, *more)
