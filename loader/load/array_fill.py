"""Filling a key range of an ARRAY map from inside the kernel.

BPF_MAP_UPDATE_BATCH costs the kernel about 115 ns an element (two copy_from_user and an update
call each), 0.12 s for a million keys. A program run once with BPF_PROG_TEST_RUN writes the same
million values in about 3 ms: bpf_loop calls a callback that looks the key up (inlined for ARRAY
maps) and stores the value. It needs bpf_loop (5.17) and BPF_PROG_TEST_RUN of raw tracepoint
programs (5.10); where either is missing, or the map refuses program writes, ``KernelFill.fill``
says so and the caller writes the values with batches instead.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterator

from evspec.loader import asm
from evspec.loader.abi import bpf as abi
from evspec.loader.btf.reader import FUNC_STATIC, INT_SIGNED, BtfKind, RawType, type_info, write_btf
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.load.live import LiveMap
from evspec.loader.object.spec import MapType, ProgType

BPF_MAX_LOOPS = 1 << 23  # the most iterations one bpf_loop call makes
FILL_PROGRAM_NAME = "evspec_fill"
FILL_LICENSE = "Dual MIT/GPL"
FILL_CTX = struct.Struct("=QQQ")  # first key, key count, value: the program's u64 arguments
STORE_SIZES = frozenset(asm.BYTES_SIZE)  # the value sizes one store writes
LDX_DW, ST_DW, STX_W, STX_DW = asm.ldx(8), asm.st(8), asm.stx(4), asm.stx(8)
MOV64_X, MOV64_K, ADD64_X, ADD64_K = asm.OP_MOV64_REG, asm.OP_MOV64_IMM, asm.OP_ADD64_REG, asm.OP_ADD64_IMM
CALLBACK_START = 15  # index of the callback's first instruction in fill_program()

_insn = asm.encode


def fill_program(map_fd: int, value_size: int) -> bytes:
    """The fill program for the ARRAY map ``map_fd``: its context holds the first key, the key
    count and the value; it stores the value's low ``value_size`` bytes at each key and returns
    how many it stored.

    The main function keeps (first, value, stored) on its stack at r10-24 and passes their address
    to bpf_loop, which calls the callback with the iteration index and that address.
    """
    if value_size not in STORE_SIZES:
        raise ValueError(f"a fill program stores 1, 2, 4 or 8 bytes, not {value_size}")
    main = [
        _insn(LDX_DW, 2, 1, 0),  # r2 = first
        _insn(LDX_DW, 3, 1, 8),  # r3 = count
        _insn(LDX_DW, 4, 1, 16),  # r4 = value
        _insn(STX_DW, 10, 2, -24),
        _insn(STX_DW, 10, 4, -16),
        _insn(ST_DW, 10, 0, -8, 0),  # stored = 0
        _insn(MOV64_X, 1, 3),  # r1 = count
        asm.ld_imm64(2, CALLBACK_START - 7 - 1, abi.BPF_PSEUDO_FUNC),  # r2 = &callback (2 instructions)
        _insn(MOV64_X, 3, 10),
        _insn(ADD64_K, 3, 0, 0, -24),  # r3 = &(first, value, stored)
        _insn(MOV64_K, 4, 0, 0, 0),  # flags
        _insn(asm.OP_CALL, imm=abi.FUNC_LOOP),
        _insn(LDX_DW, 0, 10, -8),  # return stored
        _insn(asm.OP_EXIT),
    ]
    assert asm.count(b"".join(main)) == CALLBACK_START
    callback = [  # (r1 = index, r2 = &(first, value, stored))
        _insn(MOV64_X, 6, 2),
        _insn(LDX_DW, 3, 6, 0),
        _insn(ADD64_X, 3, 1),  # key = first + index
        _insn(STX_W, 10, 3, -4),
        asm.ld_imm64(1, map_fd, abi.BPF_PSEUDO_MAP_FD),
        _insn(MOV64_X, 2, 10),
        _insn(ADD64_K, 2, 0, 0, -4),
        _insn(asm.OP_CALL, imm=abi.FUNC_MAP_LOOKUP_ELEM),
        _insn(asm.OP_JEQ_IMM, 0, 0, 7, 0),  # no element: stop the loop
        _insn(LDX_DW, 1, 6, 8),
        _insn(asm.stx(value_size), 0, 1, 0),  # *value = r1
        _insn(LDX_DW, 1, 6, 16),
        _insn(ADD64_K, 1, 0, 0, 1),
        _insn(STX_DW, 6, 1, 16),  # stored += 1
        _insn(MOV64_K, 0, 0, 0, 0),
        _insn(asm.OP_EXIT),
        _insn(MOV64_K, 0, 0, 0, 1),
        _insn(asm.OP_EXIT),
    ]
    return b"".join(main + callback)


def _fill_btf() -> bytes:
    """BTF describing the fill program's two functions (the verifier wants a FUNC for each
    function whose address is taken): ``int evspec_fill(void)`` and ``int evspec_fill_cb(void)``,
    both static."""
    strings = b"\0int\0evspec_fill\0evspec_fill_cb\0"
    order = "<" if sys.byteorder == "little" else ">"
    types = (
        RawType(strings.index(b"int"), type_info(BtfKind.INT), 4, struct.pack(order + "I", INT_SIGNED << 24 | 32)),
        RawType(0, type_info(BtfKind.FUNC_PROTO), 1),  # int (void)
        RawType(strings.index(b"evspec_fill\0"), type_info(BtfKind.FUNC, FUNC_STATIC), 2),
        RawType(strings.index(b"evspec_fill_cb"), type_info(BtfKind.FUNC, FUNC_STATIC), 2),
    )
    return write_btf(types, strings, order)


FILL_BTF = _fill_btf()
FILL_FUNC_INFO = ((0, 3), (CALLBACK_START, 4))  # (instruction, BTF FUNC id)


def _chunks(first: int, last: int, chunk: int) -> Iterator[tuple[int, int]]:
    """(first key, count) pieces of the inclusive range ``first...last``, ``chunk`` keys at most."""
    for start in range(first, last + 1, chunk):
        yield start, min(chunk, last + 1 - start)


class KernelFill:
    """Writes one value over a key range of an ARRAY map with the fill program, loaded once per
    map; ``fill`` returns False when the kernel-side fill is not available for that map (the
    caller then writes with batches). ``close`` releases the programs and the BTF."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._btf_fd: int | None = None
        self._available = True  # False once the kernel showed it cannot load or run fill programs
        self._programs: dict[int, int | None] = {}  # map fd -> fill program fd (None: not usable)

    def _program(self, lm: LiveMap) -> int | None:
        if lm.fd in self._programs:
            return self._programs[lm.fd]
        prog: int | None = None
        writable = not lm.spec.readonly and not lm.spec.flags & abi.MapFlag.RDONLY_PROG
        if writable and lm.spec.type == MapType.ARRAY and lm.spec.value_size in STORE_SIZES:
            try:
                if self._btf_fd is None:
                    self._btf_fd = self.kernel.load_btf(FILL_BTF)
                prog = self.kernel.load_program(
                    ProgType.RAW_TRACEPOINT,
                    fill_program(lm.fd, lm.spec.value_size),
                    FILL_LICENSE,
                    name=FILL_PROGRAM_NAME,
                    btf_fd=self._btf_fd,
                    func_info=FILL_FUNC_INFO,
                )
            except KernelError:
                self._available = self._btf_fd is not None  # no BTF: no fill program for any map
        self._programs[lm.fd] = prog
        return prog

    def fill(self, lm: LiveMap, first: int, count: int, value: bytes) -> bool:
        """Store ``value`` at keys ``first`` ... ``first + count - 1``; False if it was not done
        (then some of those keys may hold the value already)."""
        prog = self._program(lm) if self._available else None
        if prog is None:
            return False
        number = int.from_bytes(value, sys.byteorder)
        for start, n in _chunks(first, first + count - 1, BPF_MAX_LOOPS):
            try:
                stored = self.kernel.run_program(prog, ctx=FILL_CTX.pack(start, n, number), what=f"map '{lm.name}'")
            except KernelError:
                self._available = False  # the kernel cannot run such programs: batches from now on
                return False
            if stored != n:
                return False
        return True

    def close(self) -> None:
        """Close the fill programs and their BTF; the first failure is raised after all were tried."""
        fds = [fd for fd in self._programs.values() if fd is not None]
        if self._btf_fd is not None:
            fds.append(self._btf_fd)
        self._programs.clear()
        self._btf_fd = None
        self.kernel.close_all(fds)
