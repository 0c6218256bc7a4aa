"""Where an object's programs send records: every call of an output helper
(``bpf_perf_event_output``, ``bpf_skb_output``, ``bpf_xdp_output``, ``bpf_ringbuf_output``), with
the map it names and what is known of the data it passes, found by following each program's
registers and 8-byte stack slots through its instructions (and into the subprograms it calls).

What a value can be known as: a map (``ld_imm64`` of a map), a map value (what
``bpf_map_lookup_elem`` of a map returned), a stack address, a constant. Everything else is
unknown; where two paths meet with different values, the value is unknown. This is what
``plan_outputs`` needs: which perf event arrays the programs send to, and, when the data is a
map's value (or a stack buffer also stored as a map's value), the BTF type of the records.
"""

from __future__ import annotations

from collections.abc import Iterator

from evspec.loader import asm
from evspec.loader.object.spec import ObjectSpec, ProgramSpec

from evspec.span import Slotted

# helper ids (include/uapi/linux/bpf.h): (map argument, data argument, size argument), registers
PERF_OUTPUT_HELPERS = {25: "bpf_perf_event_output", 111: "bpf_skb_output", 121: "bpf_xdp_output"}
RINGBUF_OUTPUT = 130
HELPER_NAMES = {**PERF_OUTPUT_HELPERS, RINGBUF_OUTPUT: "bpf_ringbuf_output"}
_MAP_LOOKUP, _MAP_UPDATE = 1, 2
_ARGS = {25: (2, 4, 5), 111: (2, 4, 5), 121: (2, 4, 5), RINGBUF_OUTPUT: (1, 2, 3)}
_MAX_DEPTH = 8  # nested bpf-to-bpf calls followed
_MAX_VISITS = 64  # times one instruction is reached before its function is given up on


class MapRef(Slotted):
    name: str


class MapValue(Slotted):
    """A pointer into the value ``bpf_map_lookup_elem`` returned for map ``name``."""

    name: str
    offset: int


class Stack(Slotted):
    """An address in the stack frame of call depth ``frame``."""

    frame: int
    offset: int


class Const(Slotted):
    value: int


Value = MapRef | MapValue | Stack | Const | None


class OutputCall(Slotted):
    """One call of an output helper. ``map_name`` None: the analysis could not tell which map;
    ``candidates`` then names the maps its function refers to. ``stored_as``: the maps (and
    whether as key or value) the data's stack address is also passed to, in the same function."""

    program: str  # the program (entry point) the call is reached from
    function: str  # the function the call is in
    insn: int  # its index in that function
    helper: int
    map_name: str | None
    data: Value
    size: int | None
    candidates: tuple[str, ...] = ()
    stored_as: tuple[tuple[str, str], ...] = ()

    @property
    def helper_name(self) -> str:
        return HELPER_NAMES[self.helper]


class _State:
    __slots__ = ("regs", "stack")

    def __init__(self, regs: tuple[Value, ...], stack: dict[tuple[int, int], Value]) -> None:
        self.regs = regs
        self.stack = stack

    def join(self, other: _State) -> _State | None:
        """The state where both meet, None when it is ``self`` (nothing new)."""
        regs = tuple(a if a == b else None for a, b in zip(self.regs, other.regs, strict=True))
        stack: dict[tuple[int, int], Value] = {k: v for k, v in self.stack.items()
                                                if other.stack.get(k) == v and v is not None}
        if regs == self.regs and stack == self.stack:
            return None
        return _State(regs, stack)


class _Function:
    """One function's instructions with its relocations by instruction."""

    def __init__(self, fn: ProgramSpec) -> None:
        self.fn = fn
        self.count = asm.count(fn.insns)
        self.relocs = {r.insn_index: r for r in fn.relocations}
        self.maps = tuple(sorted({r.target for r in fn.relocations if r.kind == "map"}))


class _Analysis:
    def __init__(self, spec: ObjectSpec) -> None:
        self.spec = spec
        self.functions: dict[str, _Function] = {}
        self.calls: list[OutputCall] = []

    def function(self, name: str) -> _Function | None:
        if name not in self.functions:
            fn = self.spec.function(name)
            if fn is None:
                return None
            self.functions[name] = _Function(fn)
        return self.functions[name]

    def run(self, program: str, fn: _Function, args: tuple[Value, ...], depth: int) -> None:
        """Follow ``fn`` from its first instruction, r1-r5 as ``args``; record its output calls."""
        regs: list[Value] = [None] * 11
        regs[1:6] = args
        regs[10] = Stack(depth, 0)
        states: dict[int, _State] = {0: _State(tuple(regs), {})}
        visits: dict[int, int] = {}
        work = [0]
        found: dict[int, OutputCall] = {}
        stored: dict[Stack, set[tuple[str, str]]] = {}
        while work:
            i = work.pop()
            visits[i] = visits.get(i, 0) + 1
            if visits[i] > _MAX_VISITS or not 0 <= i < fn.count:
                self._unresolved(program, fn, depth)
                return
            for j, state in self._step(program, fn, i, states[i], depth, found, stored):
                old = states.get(j)
                new = state if old is None else old.join(state)
                if new is not None:
                    states[j] = new
                    work.append(j)
        for call in found.values():
            if isinstance(call.data, Stack) and call.data in stored:
                call = OutputCall(call.program, call.function, call.insn, call.helper, call.map_name, call.data,
                                  call.size, call.candidates, tuple(sorted(stored[call.data])))
            self.calls.append(call)

    def _unresolved(self, program: str, fn: _Function, depth: int) -> None:
        """``fn`` could not be followed: each output helper call it makes counts as one to any
        map it refers to."""
        for i in range(fn.count):
            insn = asm.decode(fn.fn.insns, i)
            if insn.code == asm.OP_CALL and insn.src == 0 and insn.imm in _ARGS:
                self.calls.append(OutputCall(program, fn.fn.name, i, insn.imm, None, None, None, fn.maps))

    def _step(self, program: str, fn: _Function, i: int, state: _State, depth: int,
              found: dict[int, OutputCall], stored: dict[Stack, set[tuple[str, str]]],
              ) -> Iterator[tuple[int, _State]]:
        insn = asm.decode(fn.fn.insns, i)
        regs = list(state.regs)
        stack = state.stack
        cls = insn.code & 0x07
        if insn.code == asm.OP_LD_IMM64:
            rel = fn.relocs.get(i)
            if rel is None:
                high = asm.decode(fn.fn.insns, i + 1).imm if i + 1 < fn.count else 0
                regs[insn.dst] = Const(((high & 0xFFFFFFFF) << 32) | (insn.imm & 0xFFFFFFFF)) if insn.src == 0 else None
            else:
                regs[insn.dst] = MapRef(rel.target) if rel.kind == "map" else None
            yield i + 2, _State(tuple(regs), stack)
            return
        if cls in (asm.ALU, asm.ALU64):
            regs[insn.dst] = _alu(insn, regs, cls == asm.ALU64)
            yield i + 1, _State(tuple(regs), stack)
            return
        if cls == asm.LDX:
            base = regs[insn.src]
            size = asm.SIZE_BYTES.get(insn.code & 0x18, 0)
            slot = _slot(base, insn.off)
            regs[insn.dst] = stack.get(slot) if slot is not None and size == 8 else None
            yield i + 1, _State(tuple(regs), stack)
            return
        if cls in (asm.ST, asm.STX):
            base = regs[insn.dst]
            if isinstance(base, Stack):
                size = asm.SIZE_BYTES.get(insn.code & 0x18, 8)
                start = base.offset + insn.off
                stack = {k: v for k, v in stack.items()
                         if not (k[0] == base.frame and k[1] < start + size and start < k[1] + 8)}
                if cls == asm.STX and size == 8 and (insn.code & 0xE0) == asm.MEM:
                    stack[(base.frame, start)] = regs[insn.src]
                elif cls == asm.ST and size == 8:
                    stack[(base.frame, start)] = Const(insn.imm)
            yield i + 1, _State(tuple(regs), stack)
            return
        if cls in (asm.JMP, asm.JMP32):
            op = insn.code & 0xF0
            if op == asm.EXIT and cls == asm.JMP:
                return
            if op == asm.CALL and cls == asm.JMP:
                yield i + 1, self._call(program, fn, i, insn, regs, stack, depth, found, stored)
                return
            if op == asm.JA:
                yield i + 1 + (insn.imm if cls == asm.JMP32 else insn.off), state
                return
            yield i + 1 + insn.off, state
            yield i + 1, state
            return
        yield i + 1, _State(tuple(regs), stack)  # LD (legacy packet loads): r0 unknown, others kept

    def _call(self, program: str, fn: _Function, i: int, insn: asm.Insn, regs: list[Value],
              stack: dict[tuple[int, int], Value], depth: int, found: dict[int, OutputCall],
              stored: dict[Stack, set[tuple[str, str]]]) -> _State:
        result: Value = None
        if insn.src == 1:  # bpf-to-bpf
            rel = fn.relocs.get(i)
            callee = self.function(rel.target) if rel is not None and rel.kind == "call" else None
            if callee is not None and depth < _MAX_DEPTH:
                self.run(program, callee, tuple(regs[1:6]), depth + 1)
            elif callee is not None:
                self._unresolved(program, callee, depth + 1)
        elif insn.src == 0:
            helper = insn.imm
            if helper in (_MAP_LOOKUP, _MAP_UPDATE) and isinstance(regs[1], MapRef):
                for reg, role in ((2, "key"), (3, "value")) if helper == _MAP_UPDATE else ((2, "key"),):
                    if isinstance(regs[reg], Stack):
                        stored.setdefault(regs[reg], set()).add((regs[1].name, role))  # type: ignore[arg-type]
                if helper == _MAP_LOOKUP:
                    result = MapValue(regs[1].name, 0)
            elif helper in _ARGS:
                m, d, s = _ARGS[helper]
                target = regs[m]
                size = regs[s]
                call = OutputCall(program, fn.fn.name, i, helper,
                                  target.name if isinstance(target, MapRef) else None, regs[d],
                                  size.value if isinstance(size, Const) else None,
                                  () if isinstance(target, MapRef) else fn.maps)
                earlier = found.get(i)
                if earlier is not None and earlier != call:  # reached with different arguments
                    call = _merged(earlier, call, fn.maps)
                found[i] = call
        out: list[Value] = [result, None, None, None, None, None, *regs[6:]]
        # a helper or subprogram may write into any stack buffer it is given, from its address up
        buffers = [r for r in regs[1:6] if isinstance(r, Stack)]
        kept = {k: v for k, v in stack.items() if not any(k[0] == b.frame and k[1] + 8 > b.offset for b in buffers)}
        return _State(tuple(out), kept)


def _merged(a: OutputCall, b: OutputCall, maps: tuple[str, ...]) -> OutputCall:
    same_map = a.map_name == b.map_name
    return OutputCall(a.program, a.function, a.insn, a.helper, a.map_name if same_map else None,
                      a.data if a.data == b.data else None, a.size if a.size == b.size else None,
                      a.candidates if same_map else maps)


def _slot(base: Value, off: int) -> tuple[int, int] | None:
    return (base.frame, base.offset + off) if isinstance(base, Stack) else None


def _alu(insn: asm.Insn, regs: list[Value], wide: bool) -> Value:
    op = insn.code & 0xF0
    from_reg = insn.code & 0x08
    operand: Value = regs[insn.src] if from_reg else Const(insn.imm)
    dst = regs[insn.dst]
    if op == asm.MOV and insn.off == 0:  # off != 0: movsx, a sign extension
        if not wide:
            return Const(operand.value & 0xFFFFFFFF) if isinstance(operand, Const) else None
        return operand
    if op == asm.ADD and isinstance(operand, Const):
        if isinstance(dst, Const):
            mask = (1 << (64 if wide else 32)) - 1
            return Const((dst.value + operand.value) & mask)
        if wide and isinstance(dst, Stack):
            return Stack(dst.frame, dst.offset + operand.value)
        if wide and isinstance(dst, MapValue):
            return MapValue(dst.name, dst.offset + operand.value)
    return None


def output_calls(spec: ObjectSpec) -> list[OutputCall]:
    """Every output helper call reached from each of ``spec``'s programs, in program order."""
    analysis = _Analysis(spec)
    for program in spec.programs:
        fn = _Function(program)
        analysis.functions.setdefault(program.name, fn)
        analysis.run(program.name, fn, (None,) * 5, 0)
    return analysis.calls
