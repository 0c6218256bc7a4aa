"""Argument prologues: BPF instructions that fetch a probe's arguments before the user's program.

A probe definition with arguments (``EVENT=FUNC a b c``) runs its program as
``prog(ctx, err, arg1, arg2, arg3)``, as perf 4.7 did: the prologue keeps ctx (the probed task's
``pt_regs``) in R6, reads each argument into a stack slot (registers straight from pt_regs, memory
with ``bpf_probe_read_user`` for uprobes or ``bpf_probe_read_kernel`` for kprobes), then loads the
values into R3–R5, the error flag into R2 (0: all read; 1: a read failed and every value is 0) and
ctx back into R1, and falls through into the program. The prologue is prepended to the *linked*
program (map fds and bpf-to-bpf calls already patched; jumps inside the program are relative, so
they stay valid).

``PrologueCache`` loads prologue + program once per distinct prologue (through ``live.load_linked``,
so that it gets the object's BTF func/line info shifted past the prologue, like any program): probe points whose fetch
code is identical (the same arguments at the same places, e.g. two functions with the same
signature matched by one glob) share one loaded program — what perf 4.7 did and perf 6.1 fails at
("Failed to generate prologue").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from evspec.loader import asm
from evspec.loader.abi.bpf import INSN_SIZE
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError, VerifierError
from evspec.loader.load.live import LiveObject, load_linked
from evspec.loader.object.link import link_program
from evspec.loader.sections.names import ProbeArg
from evspec.loader.sections.probe_args import MAX_ARGS, POINTER_SIZE, FetchPlace, ValueType, resolve_args

from evspec.codes import kernel as codes
from evspec.span import Slotted

FIRST_ARG_REG = asm.R3  # R3..R5 carry the fetched values
ERROR_REG = asm.R2
CTX_REG, SAVED_CTX_REG, FRAME_REG = asm.R1, asm.R6, asm.FRAME
HELPER_PROBE_READ_USER = 112
HELPER_PROBE_READ_KERNEL = 113
FETCH_FAILED = 1  # the value of R2 after a failed read
_STX_DW = asm.stx(8)
_S32 = range(-(1 << 31), 1 << 31)


def _slot(index: int) -> int:
    return -POINTER_SIZE * (index + 1)


class _Code(Slotted, frozen=False):
    """Instructions being emitted; forward jumps to the error block are patched at the end."""

    insns: list[bytes]
    error_jumps: list[int]

    def emit(self, *insns: bytes) -> None:
        for chunk in insns:
            self.insns.extend(chunk[i : i + INSN_SIZE] for i in range(0, len(chunk), INSN_SIZE))

    def jump_if_failed(self) -> None:
        self.error_jumps.append(len(self.insns))
        self.insns.append(b"")  # patched by patch_error_jumps

    def patch_error_jumps(self, target: int) -> None:
        for at in self.error_jumps:
            self.insns[at] = asm.encode(asm.OP_JNE_IMM, dst=0, off=target - (at + 1), imm=0)


def _add(code: _Code, reg: int, value: int) -> None:
    if value == 0:
        return
    if value in _S32:
        code.emit(asm.encode(asm.OP_ADD64_IMM, dst=reg, imm=value))
    else:  # an offset beyond ±2 GiB (a far symbol) goes through R2, which the read sets anyway
        code.emit(asm.ld_imm64(ERROR_REG, value), asm.encode(asm.OP_ADD64_REG, dst=reg, src=ERROR_REG))


def _cast(code: _Code, reg: int, vtype: ValueType, loaded_bits: int) -> None:
    """Narrow a value held in ``reg`` (its low ``loaded_bits`` valid, zero-extended) to ``vtype``."""
    width = vtype.bits if vtype.bits is not None else vtype.size * 8
    if vtype.shift == 0 and (width == 64 or (width == loaded_bits and not vtype.signed)):
        return  # already exact
    left = 64 - vtype.shift - width
    if left:
        code.emit(asm.encode(asm.OP_LSH64_IMM, dst=reg, imm=left))
    code.emit(asm.encode(asm.OP_ARSH64_IMM if vtype.signed else asm.OP_RSH64_IMM, dst=reg, imm=64 - width))


def _fetch(code: _Code, index: int, place: FetchPlace, helper: int) -> None:
    """Leave the value of ``place`` in stack slot ``index`` (reads go through R3, the helper's
    ``unsafe_ptr`` argument)."""
    work, slot = FIRST_ARG_REG, _slot(index)
    if place.reg_offset is not None:
        code.emit(asm.encode(asm.ldx(8), dst=work, src=SAVED_CTX_REG, off=place.reg_offset))
    else:
        code.emit(asm.ld_imm64(work, place.address))
    loaded = 64
    for step, offset in enumerate(place.derefs):
        size = place.type.size if step == len(place.derefs) - 1 else POINTER_SIZE
        _add(code, work, offset)
        code.emit(
            asm.encode(asm.OP_MOV64_REG, dst=1, src=FRAME_REG),
            asm.encode(asm.OP_ADD64_IMM, dst=1, imm=slot),
            asm.encode(asm.OP_MOV64_IMM, dst=2, imm=size),
            asm.encode(asm.OP_CALL, imm=helper),
        )
        code.jump_if_failed()
        code.emit(asm.encode(asm.ldx(size), dst=work, src=FRAME_REG, off=slot))
        loaded = size * 8
    _cast(code, work, place.type, loaded)
    code.emit(asm.encode(_STX_DW, dst=FRAME_REG, src=work, off=slot))


def assemble_prologue(places: Sequence[FetchPlace], *, user: bool) -> bytes:
    """The prologue instructions for ``places`` (empty: no prologue at all)."""
    if not places:
        return b""
    if len(places) > MAX_ARGS:
        raise ObjectError(
            codes.PROBE_ARG_TOO_MANY, f"a prologue fetches at most {MAX_ARGS} values, not {len(places)}"
        )
    helper = HELPER_PROBE_READ_USER if user else HELPER_PROBE_READ_KERNEL
    code = _Code([], [])
    code.emit(asm.encode(asm.OP_MOV64_REG, dst=SAVED_CTX_REG, src=CTX_REG))
    for index, place in enumerate(places):
        _fetch(code, index, place, helper)
    args = range(FIRST_ARG_REG, FIRST_ARG_REG + len(places))
    for index, reg in enumerate(args):
        code.emit(asm.encode(asm.ldx(8), dst=reg, src=FRAME_REG, off=_slot(index)))
    code.emit(asm.encode(asm.OP_MOV64_IMM, dst=ERROR_REG, imm=0))
    if code.error_jumps:
        error_block = [asm.encode(asm.OP_MOV64_IMM, dst=ERROR_REG, imm=FETCH_FAILED)]
        error_block += [asm.encode(asm.OP_MOV64_IMM, dst=reg, imm=0) for reg in args]
        code.emit(asm.encode(asm.OP_JA, off=len(error_block)))
        code.patch_error_jumps(len(code.insns))
        code.emit(*error_block)
    code.emit(asm.encode(asm.OP_MOV64_REG, dst=CTX_REG, src=SAVED_CTX_REG))
    return b"".join(code.insns)


def build_prologue(
    args: Sequence[ProbeArg],
    *,
    binary: str | None,
    function: str | None,
    address: int | None,
    user: bool,
    retprobe: bool = False,
    arch: str | None = None,
    kallsyms: str = "/proc/kallsyms",
) -> bytes:
    """The prologue fetching ``args`` at a probe point (see ``probe_args.resolve_args`` for what
    ``binary``/``function``/``address`` mean); empty bytes when there are no arguments."""
    places = resolve_args(
        args,
        binary=binary,
        function=function,
        address=address,
        retprobe=retprobe,
        arch=arch,
        kallsyms=kallsyms,
    )
    return assemble_prologue(places, user=user)


# ----------------------------------------------------------------- loading

_UNREAD_REG = re.compile(r"\bR([2-5]) !read_ok")


def _prologue_error(program: str, exc: VerifierError, prologue: bytes) -> KernelError:
    prologue_insns = asm.count(prologue)
    index = exc.summary.insn_index
    if index is not None and index < prologue_insns:
        message = (
            f"the verifier rejected the argument prologue of program '{program}' at instruction "
            f"{index}: {exc.summary.message}"
        )
    elif (m := _UNREAD_REG.search(exc.summary.message)) is not None:
        reg = int(m.group(1))
        what = "the fetch error flag" if reg == ERROR_REG else f"argument {reg - ERROR_REG}"
        message = (
            f"program '{program}' reads R{reg} ({what}), but its probe definition fetches "
            f"{fetched_count(prologue)} argument(s): {exc.summary.render()}"
        )
    else:
        return exc
    error = KernelError(
        codes.PROLOGUE_REJECTED,
        message,
        errno=exc.errno,
        operation="BPF_PROG_LOAD",
        detail=exc.log,
        help=("declare the program as prog(ctx, err, arg1, ...) with one argument per fetched value",),
    )
    error.finding = True  # the verifier's verdict, as the VerifierError it explains
    return error


def fetched_count(prologue: bytes) -> int:
    """How many values ``prologue`` fetches: each is stored to its stack slot exactly once."""
    insns = (asm.decode(prologue, i) for i in range(asm.count(prologue)))
    return sum(1 for insn in insns if insn.code == _STX_DW and insn.dst == FRAME_REG)


class PrologueCache:
    """Loads each (object, program, prologue) once; probe points with identical fetch code share
    the program. ``close()`` closes every descriptor it loaded."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._loaded: dict[tuple[int, str, bytes], tuple[LiveObject, int]] = {}
        self._served = 0

    def program_fd(self, live: LiveObject, program: str, prog_type: int, prologue: bytes) -> int:
        """The fd of ``program`` of ``live`` with ``prologue`` in front, loading it on first use."""
        key = (id(live), program, prologue)
        hit = self._loaded.get(key)
        if hit is None:
            fd = self._load(live, program, prog_type, prologue)
            hit = self._loaded[key] = (live, fd)  # the object is kept so its id stays unique
        self._served += 1
        return hit[1]

    def _load(self, live: LiveObject, program: str, prog_type: int, prologue: bytes) -> int:
        spec = live.spec
        prog = next((p for p in spec.programs if p.name == program), None)
        if prog is None:
            raise KeyError(f"object {spec.path!r} has no program {program!r}")
        linked = link_program(prog, spec, {name: m.fd for name, m in live.maps.items()})
        try:
            return load_linked(live, prog, linked.prefixed(prologue), prog_type, prologue=asm.count(prologue))
        except VerifierError as exc:
            raise _prologue_error(program, exc, prologue) from exc

    def stats(self) -> tuple[int, int]:
        """(programs loaded, probe points served)."""
        return len(self._loaded), self._served

    def close(self) -> None:
        """Close every loaded program; the first failure is raised after all were tried."""
        fds = [fd for _live, fd in self._loaded.values()]
        self._loaded.clear()
        self.kernel.close_all(fds)
