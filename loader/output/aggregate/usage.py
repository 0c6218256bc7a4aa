"""How an object's programs use its maps and global variables, read from their instructions:
where they count (an atomic operation through a pointer to a value, or a number loaded through
one and stored back where it came from: ``x->n++``), where they store otherwise, which maps they
look up, update or delete entries of. What ``detect`` decides what to print from: a map or global
counted into, whose entries no program deletes, holds a result, and so does a map the programs
only write with ``bpf_map_update_elem``; a map whose entries are deleted (start times keyed by
tid) or whose counted field is also set by a plain store (a per-CPU scratch buffer's
``e->n = 0; ... e->n++``) is the programs' own state.

The scan is linear, function by function: a register holds a map (``ld_imm64`` of a map), a
global variable (``ld_imm64`` of a data section's symbol), a pointer to a map's value (the result
of ``bpf_map_lookup_elem``) or a number loaded through one of those; moves and stack spills copy
that, arithmetic keeps a pointer a pointer and a loaded number loaded, any other write forgets
it, a call clobbers r0-r5. Branches are not followed: clang keeps these pointers in a register or
a stack slot across the few instructions that use them."""

from __future__ import annotations

from evspec.loader import asm
from evspec.loader.object.spec import ObjectSpec, ProgramSpec

from evspec.span import Slotted, value_field

# helpers (include/uapi/linux/bpf.h's numbering) whose first argument is a map
LOOKUP, UPDATE, DELETE = 1, 2, 3
LOOKUP_AND_DELETE = 153
_ATOMIC = 0xC0  # the load/store mode of BPF_ATOMIC
_ALU_KEEP = (asm.ADD, 0x10)  # add, sub: a pointer plus an index stays in its value
_STACK_SLOTS = 64


class Usage(Slotted, frozen=False):
    """What the programs do with one map (by map name) or global variable (``section:variable``)."""

    counted: set[int] = value_field(default_factory=set)  # offsets of atomic operations or of x->n++
    overwritten: set[int] = value_field(default_factory=set)  # offsets of other stores through a pointer
    updated: bool = False  # bpf_map_update_elem
    deleted: bool = False  # bpf_map_delete_elem or bpf_map_lookup_and_delete_elem
    looked_up: bool = False

    @property
    def accumulated(self) -> bool:
        """Some place of the value is counted into and never set otherwise (a field that is
        reset by a plain store, ``e->n = 0; ... e->n++``, is a scratch buffer's)."""
        return bool(self.counted - self.overwritten)


# ("map", NAME) a map; ("value", NAME) a pointer into its value; ("var", "SEC:VAR") a pointer into a
# global; ("loaded", NAME, OFFSET) a number loaded through one of those at OFFSET (and what
# arithmetic made of it); the offset is 0 for the others
Ref = tuple[str, str, int]


def object_usage(spec: ObjectSpec) -> dict[str, Usage]:
    """Map name or ``SECTION:VARIABLE`` → how the programs of ``spec`` use it."""
    out: dict[str, Usage] = {}
    for prog in (*spec.programs, *spec.subprograms):
        _scan(prog, out)
    return out


def _scan(prog: ProgramSpec, out: dict[str, Usage]) -> None:
    relocs = {r.insn_index: r for r in prog.relocations if r.kind in ("map", "data")}
    regs: dict[int, Ref] = {}
    stack: dict[int, Ref] = {}
    count = asm.count(prog.insns)
    i = 0
    while i < count:
        insn = asm.decode(prog.insns, i)
        code, cls = insn.code, insn.code & 0x07
        if code == asm.OP_LD_IMM64:
            r = relocs.get(i)
            if r is None:
                regs.pop(insn.dst, None)
            elif r.kind == "map":
                regs[insn.dst] = ("map", r.target, 0)
            else:
                regs[insn.dst] = ("var", f"{r.target}:{r.symbol}", 0)
            i += 2
            continue
        if cls in (asm.ALU64, asm.ALU):
            _alu(insn, regs)
        elif cls == asm.LDX:
            src = regs.get(insn.src)
            if insn.src == asm.FRAME and insn.code & 0xE0 == asm.MEM and insn.off in stack:
                regs[insn.dst] = stack[insn.off]
            elif src is not None and src[0] in ("value", "var"):
                regs[insn.dst] = ("loaded", src[1], insn.off)
            else:
                regs.pop(insn.dst, None)
        elif cls in (asm.ST, asm.STX):
            _store(insn, regs, stack, out)
        elif cls == asm.JMP and insn.code & 0xF0 == asm.CALL and insn.src == 0:
            _call(insn.imm, regs, out)
        i += 1


def _alu(insn: asm.Insn, regs: dict[int, Ref]) -> None:
    op, source = insn.code & 0xF0, insn.code & 0x08
    if op == asm.MOV and source == asm.X and insn.code & 0x07 == asm.ALU64:
        if insn.src in regs:
            regs[insn.dst] = regs[insn.src]
        else:
            regs.pop(insn.dst, None)
    elif regs.get(insn.dst, ("",))[0] == "loaded" and op != asm.MOV:
        pass  # a loaded number, counted on: it stays what it was derived from
    elif op in _ALU_KEEP and insn.code & 0x07 == asm.ALU64 and insn.dst in regs:
        if source == asm.X and insn.src in regs:  # pointer + pointer: nothing known
            regs.pop(insn.dst, None)
    else:
        regs.pop(insn.dst, None)


def _store(insn: asm.Insn, regs: dict[int, Ref], stack: dict[int, Ref], out: dict[str, Usage]) -> None:
    if insn.dst == asm.FRAME:  # a spill (or a stack variable): remember what it holds
        if insn.code & 0x07 == asm.STX and insn.code & 0x18 == asm.DW and insn.src in regs:
            stack[insn.off] = regs[insn.src]
        else:
            stack.pop(insn.off, None)
        return
    target = regs.get(insn.dst)
    if target is None or target[0] == "map":
        return
    use = _use(out, target)
    stx = insn.code & 0x07 == asm.STX
    if stx and (insn.code & 0xE0 == _ATOMIC or regs.get(insn.src) == ("loaded", target[1], insn.off)):
        use.counted.add(insn.off)
    else:
        use.overwritten.add(insn.off)
    if insn.code & 0xE0 == _ATOMIC and insn.imm & 0x01:  # BPF_FETCH: the old value comes back in src
        regs.pop(insn.src, None)


def _call(helper: int, regs: dict[int, Ref], out: dict[str, Usage]) -> None:
    first = regs.get(asm.R1)
    result: Ref | None = None
    if first is not None and first[0] == "map":
        use = out.setdefault(first[1], Usage())
        if helper in (LOOKUP, LOOKUP_AND_DELETE):
            use.looked_up = True
            result = ("value", first[1], 0)
        if helper == UPDATE:
            use.updated = True
        if helper in (DELETE, LOOKUP_AND_DELETE):
            use.deleted = True
    for reg in range(asm.R0, asm.R5 + 1):
        regs.pop(reg, None)
    if result is not None:
        regs[asm.R0] = result


def _use(out: dict[str, Usage], ref: Ref) -> Usage:
    return out.setdefault(ref[1], Usage())


def accumulated(usage: dict[str, Usage]) -> list[str]:
    """The maps and variables whose values the programs accumulate into and never delete."""
    return [name for name, use in usage.items() if use.accumulated and not use.deleted]


def last_values(usage: dict[str, Usage]) -> list[str]:
    """The maps the programs only write with bpf_map_update_elem: never look up, never delete
    (a result for user space to read, the last value per key)."""
    return [name for name, use in usage.items()
            if use.updated and not (use.looked_up or use.deleted or use.counted or use.overwritten)]
