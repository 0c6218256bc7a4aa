"""BPF instructions as bytes, written once: the opcodes evspec emits or patches, by name; encoding
one instruction (``encode``, ``ld_imm64``); reading and rewriting instruction N of a program
(``decode``, ``put``).

An instruction is ``struct bpf_insn`` (``abi.bpf.BpfInsn``): opcode, the destination and source
registers in one byte (dst in the low nibble on a little-endian host, as the kernel's bit-fields
lay it out), a signed 16-bit offset and a signed 32-bit immediate, in the host's byte order: what
the running kernel reads. A ``ld_imm64`` is two instructions, the value's high half in the
second one's immediate. Opcodes are class | operation or mode | size | source, as in
include/uapi/linux/bpf_common.h.
"""

from __future__ import annotations

import struct
import sys
from collections import namedtuple

from evspec.loader.abi.bpf import INSN_SIZE

_INSN = struct.Struct("=BBhi")  # code, registers, off, imm
_LITTLE = sys.byteorder == "little"

# instruction classes (code & 0x07)
LD, LDX, ST, STX, ALU, JMP, JMP32, ALU64 = range(8)
# load/store sizes (code & 0x18) and the bytes they move
W, H, B, DW = 0x00, 0x08, 0x10, 0x18
SIZE_BYTES = {DW: 8, W: 4, H: 2, B: 1}
BYTES_SIZE = {v: k for k, v in SIZE_BYTES.items()}
# load/store modes
IMM, MEM = 0x00, 0x60
# source of an ALU or jump operand: the immediate (K) or the source register (X)
K, X = 0x00, 0x08
# ALU operations
ADD, LSH, RSH, ARSH, MOV = 0x00, 0x60, 0x70, 0xC0, 0xB0
# jump operations
JA, JEQ, JNE, CALL, EXIT = 0x00, 0x10, 0x50, 0x80, 0x90

# the whole opcodes evspec writes or patches
OP_LD_IMM64 = LD | IMM | DW  # 0x18, two instructions
OP_MOV64_IMM, OP_MOV64_REG = ALU64 | MOV | K, ALU64 | MOV | X
OP_ADD64_IMM, OP_ADD64_REG = ALU64 | ADD | K, ALU64 | ADD | X
OP_LSH64_IMM, OP_RSH64_IMM, OP_ARSH64_IMM = ALU64 | LSH | K, ALU64 | RSH | K, ALU64 | ARSH | K
OP_JEQ_IMM, OP_JNE_IMM, OP_JA = JMP | JEQ | K, JMP | JNE | K, JMP | JA
OP_CALL, OP_EXIT = JMP | CALL, JMP | EXIT  # 0x85, 0x95

# registers with a fixed role
R0, R1, R2, R3, R4, R5, R6, R10 = 0, 1, 2, 3, 4, 5, 6, 10
FRAME = R10  # the read-only frame pointer


TYPE_CHECKING = False  # typing costs a cold start 2-3 ms; only the type checker needs it
if TYPE_CHECKING:
    from typing import NamedTuple

    class Insn(NamedTuple):
        """One decoded instruction."""

        code: int
        dst: int
        src: int
        off: int
        imm: int
else:
    Insn = namedtuple("Insn", "code dst src off imm")


def ldx(size: int) -> int:
    """``dst = *(size *)(src + off)``, ``size`` in bytes (1, 2, 4, 8)."""
    return LDX | MEM | BYTES_SIZE[size]


def stx(size: int) -> int:
    """``*(size *)(dst + off) = src``."""
    return STX | MEM | BYTES_SIZE[size]


def st(size: int) -> int:
    """``*(size *)(dst + off) = imm``."""
    return ST | MEM | BYTES_SIZE[size]


def s32(value: int) -> int:
    """The low 32 bits of ``value`` as the signed immediate an instruction holds."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def src_reg(regs: int) -> int:
    """The source register of an instruction's register byte."""
    return regs >> 4 if _LITTLE else regs & 0x0F


def _regs(dst: int, src: int) -> int:
    return (src << 4 | dst) if _LITTLE else (dst << 4 | src)


def encode(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    """One instruction as the kernel reads it."""
    return _INSN.pack(code, _regs(dst, src), off, imm)


def ld_imm64(dst: int, value: int, src: int = 0) -> bytes:
    """The two instructions of ``dst = value`` (64 bits; ``src`` a BPF_PSEUDO_* kind or 0)."""
    value &= (1 << 64) - 1
    return encode(OP_LD_IMM64, dst, src, 0, s32(value)) + encode(0, imm=s32(value >> 32))


def decode(insns: bytes | bytearray, index: int) -> Insn:
    """Instruction ``index`` of ``insns``."""
    code, regs, off, imm = _INSN.unpack_from(insns, index * INSN_SIZE)
    low, high = regs & 0x0F, regs >> 4
    return Insn(code, low, high, off, imm) if _LITTLE else Insn(code, high, low, off, imm)


def put(buf: bytearray, index: int, insn: Insn) -> None:
    """Write ``insn`` over instruction ``index`` of ``buf``."""
    _INSN.pack_into(buf, index * INSN_SIZE, insn.code, _regs(insn.dst, insn.src), insn.off, insn.imm)


def count(insns: bytes | bytearray) -> int:
    """How many instructions ``insns`` holds."""
    return len(insns) // INSN_SIZE
