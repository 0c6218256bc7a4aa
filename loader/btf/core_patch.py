"""Applying resolved CO-RE relocations to instructions, and to a whole ``ObjectSpec``.

``patch_insns`` is a pure function over instruction bytes: immediates of ALU/ALU64 instructions,
offsets of LDX/ST/STX (with the load size when the field's size changed, as libbpf does) and both
halves of a ld_imm64. A relocation without a target value becomes libbpf's poison, a call of
helper 0xbad2310 that the verifier refuses by number if it is reached ("invalid func
unknown#195896080"); a ``CoreFinding`` says which type, field and access it was.
"""

from __future__ import annotations

from collections.abc import Sequence

from evspec.loader import asm
from evspec.loader.abi.bpf import INSN_SIZE
from evspec.loader.btf.core import CoreError, CoreResolver, CoreResult
from evspec.loader.btf.reader import Btf, BtfError
from evspec.loader.btf.target import TargetBtf
from evspec.loader.errors import ObjectError
from evspec.loader.object.spec import ObjectSpec, ProgramSpec, replace

from evspec.codes import bpf as codes
from evspec.span import Slotted

POISON_HELPER = 0xBAD2310  # 195896080, "bad relo"
_POISON = asm.Insn(asm.OP_CALL, 0, 0, 0, POISON_HELPER)


class CorePatch(Slotted):
    """One relocation to apply: instruction index, what it is, and its result."""

    insn: int
    relocation: str  # "field_byte_offset of struct task_struct___mine (access 0:1)"
    result: CoreResult


class CoreFinding(Slotted):
    """A relocation that could not be satisfied: its instruction was poisoned."""

    function: str
    insn: int
    message: str

    def __str__(self) -> str:
        return (f"function '{self.function}', instruction {self.insn}: {self.message}; the instruction "
                f"is now `call {POISON_HELPER}`, which the verifier refuses if it is reached")


def patch_insns(insns: bytes, patches: Sequence[CorePatch], function: str = "") -> tuple[bytes, list[CoreFinding]]:
    """The instructions with every patch applied, and a finding per poisoned instruction;
    ``CoreError`` when an instruction is not what its relocation expects."""
    buf = bytearray(insns)
    findings = []
    count = asm.count(buf)
    for p in patches:
        where = f"instruction {p.insn} ({p.relocation})"
        if not 0 <= p.insn < count:
            raise CoreError(f"{where} is outside the function's {count} instructions")
        reason = p.result.poison
        if reason is None:
            reason = _patch_one(buf, p, where)
        if reason is not None:
            _poison(buf, p.insn, count)
            findings.append(CoreFinding(function, p.insn, f"{p.relocation}: {reason}"))
    return bytes(buf), findings


def _poison(buf: bytearray, at: int, count: int) -> None:
    if asm.decode(buf, at).code == asm.OP_LD_IMM64 and at + 1 < count:  # its second half too, or
        asm.put(buf, at + 1, _POISON)  # the verifier sees opcode 0
    asm.put(buf, at, _POISON)


def _patch_one(buf: bytearray, p: CorePatch, where: str) -> str | None:
    """Patch one instruction in place; a reason to poison it instead, or None."""
    r = p.result
    at = p.insn
    insn = asm.decode(buf, at)
    code, off, imm = insn.code, insn.off, insn.imm
    cls = code & 0x07
    orig, new = r.orig & ((1 << 64) - 1), r.new & ((1 << 64) - 1)
    if cls in (asm.ALU, asm.ALU64):
        if code & asm.X:
            raise CoreError(f"{where}: an ALU instruction with a register operand has no immediate to relocate")
        if r.validate and imm & ((1 << 64) - 1) != orig:
            raise CoreError(f"{where}: the instruction's immediate is {imm}, expected {r.orig}")
        asm.put(buf, at, insn._replace(imm=asm.s32(new)))
        return None
    if cls in (asm.LDX, asm.ST, asm.STX):
        if r.validate and off & ((1 << 64) - 1) != orig:
            raise CoreError(f"{where}: the instruction's offset is {off}, expected {r.orig}")
        if new > 0x7FFF:
            raise CoreError(f"{where}: offset {new} does not fit an instruction's 16-bit offset")
        if r.bad_size_change:
            return (f"the field is {r.orig_size} bytes here and {r.new_size} in the target "
                    f"({r.target}); a load of another width would not read the same value")
        if r.new_size != r.orig_size:
            size = asm.SIZE_BYTES[code & 0x18]
            if size != r.orig_size:
                raise CoreError(f"{where}: the instruction accesses {size} bytes, expected {r.orig_size}")
            if r.new_size not in asm.BYTES_SIZE:
                raise CoreError(f"{where}: no load or store is {r.new_size} bytes wide")
            code = (code & 0xE7) | asm.BYTES_SIZE[r.new_size]
        asm.put(buf, at, insn._replace(code=code, off=new))
        return None
    if cls == asm.LD:
        if code != asm.OP_LD_IMM64 or (at + 2) * INSN_SIZE > len(buf):
            raise CoreError(f"{where}: a BPF_LD instruction that is no ld_imm64 (opcode {code:#04x})")
        second = asm.decode(buf, at + 1)
        if insn.src or off or second.code or second.dst or second.src or second.off:
            raise CoreError(f"{where}: the ld_imm64 has an unexpected form")
        value = (imm & 0xFFFFFFFF) | ((second.imm << 32) & ((1 << 64) - 1))
        if r.validate and value != orig:
            raise CoreError(f"{where}: the ld_imm64 holds {value}, expected {r.orig}")
        asm.put(buf, at, insn._replace(imm=asm.s32(new)))
        asm.put(buf, at + 1, second._replace(imm=asm.s32(new >> 32)))
        return None
    raise CoreError(f"{where}: instruction opcode {code:#04x} cannot take a CO-RE relocation")


CORE_HELP = ("`evspec inspect OBJ.o` lists the CO-RE relocations; `bpftool btf dump file "
             "/sys/kernel/btf/vmlinux format c` shows the kernel's types",)


def _function_patches(fn: ProgramSpec, resolver: CoreResolver) -> list[CorePatch]:
    out = []
    for r in fn.core_relocations:
        if r.applied:
            continue
        what = f"{r.kind} of {r.type_name} (access {r.access})"
        try:
            result = resolver.resolve(r.type_id, r.access, r.kind_id)
        except CoreError as exc:
            raise CoreError(f"function '{fn.name}', instruction {r.insn}: {what}: {exc}") from None
        out.append(CorePatch(r.insn, what, result))
    return out


def _relocated(fn: ProgramSpec, resolver: CoreResolver) -> tuple[ProgramSpec, list[CoreFinding]]:
    if not any(not r.applied for r in fn.core_relocations):
        return fn, []
    patches = _function_patches(fn, resolver)
    try:
        insns, findings = patch_insns(fn.insns, patches, fn.name)
    except CoreError as exc:
        raise CoreError(f"function '{fn.name}', {exc}") from None
    poisoned = {f.insn: f.message for f in findings}
    applied = tuple(replace(r, applied=True, poison=poisoned.get(r.insn)) if not r.applied else r
                    for r in fn.core_relocations)
    return replace(fn, insns=insns, core_relocations=applied), findings


def unloadable_reason(spec: ObjectSpec, target: TargetBtf | None = None) -> str | None:
    """Why evspec cannot load ``spec`` correctly against the ``target`` BTF (None: it can). CO-RE
    relocations that are not applied yet need a target to resolve against; one that cannot be
    resolved at all (ambiguous, malformed, an unknown kind) makes the object unloadable. Poisoned
    relocations do not: the verifier refuses them only if reached."""
    pending = [(p, r) for p, r in spec.core_relocations() if not r.applied]
    if not pending:
        return None
    if target is None:
        prog, first = pending[0]
        return (f"{spec.path}: {len(pending)} CO-RE relocation(s) and no target BTF to resolve them "
                f"against (the first: program '{prog.name}', {first.describe()})")
    try:
        relocate_object(spec, target)
    except ObjectError as exc:
        return exc.message
    return None


def relocate_object(spec: ObjectSpec, target: TargetBtf) -> tuple[ObjectSpec, list[CoreFinding]]:
    """``spec`` with the CO-RE relocations of every function (programs and subprograms) applied
    against ``target``, and the poisoned ones; ``ObjectError`` (EB015) if one cannot be applied."""
    if not any(not r.applied for _, r in spec.core_relocations()):
        return spec, []
    if spec.btf is None:
        raise ObjectError(codes.CORE_RELOCATION, f"{spec.path}: CO-RE relocations without a .BTF section")
    findings: list[CoreFinding] = []
    try:
        resolver = CoreResolver(Btf(spec.btf), target)
        programs, subprograms = [], []
        for group, out in ((spec.programs, programs), (spec.subprograms, subprograms)):
            for fn in group:
                relocated, found = _relocated(fn, resolver)
                out.append(relocated)
                findings.extend(found)
    except (CoreError, BtfError) as exc:
        raise ObjectError(codes.CORE_RELOCATION, f"{spec.path}: CO-RE relocation against {target.name}: {exc}",
                          help=CORE_HELP) from None
    return replace(spec, programs=tuple(programs), subprograms=tuple(subprograms)), findings


def core_findings(spec: ObjectSpec) -> list[CoreFinding]:
    """The poisoned relocations of a relocated spec."""
    return [CoreFinding(fn.name, r.insn, r.poison) for fn in (*spec.programs, *spec.subprograms)
            for r in fn.core_relocations if r.applied and r.poison is not None]


def load_target(target: TargetBtf | None) -> TargetBtf:
    """``target``, else the running kernel's BTF (its module BTFs searched where it has no
    candidate); ``ObjectError`` (EB015) if there is none."""
    if target is not None:
        return target
    try:
        return TargetBtf.running_kernel()
    except BtfError as exc:
        raise ObjectError(codes.CORE_RELOCATION,
                          f"CO-RE relocations need the kernel's BTF, which cannot be used: {exc}",
                          help=("build the kernel with CONFIG_DEBUG_INFO_BTF=y, or give the target "
                                "kernel's BTF",)) from None


def core_check(spec: ObjectSpec, target: TargetBtf | None = None) -> tuple[str, str, bool] | None:
    """What ``evspec check`` says of the object's CO-RE relocations against ``target`` (else the
    running kernel's BTF): (code, message, is_error), or None when there is nothing to say."""
    pending = sum(1 for _, r in spec.core_relocations() if not r.applied)
    if not pending:
        return None
    try:
        target = load_target(target)
        _, findings = relocate_object(spec, target)
    except ObjectError as exc:
        if exc.code == codes.CORE_RELOCATION and "need the kernel's BTF" in exc.message:
            return codes.CORE_UNRESOLVED, f"{pending} CO-RE relocation(s) not checked: {exc.message}", False
        return exc.code, exc.message.removeprefix(f"{spec.path}: "), True
    if not findings:
        return None
    shown = "; ".join(str(f) for f in findings[:3])
    more = f" (and {len(findings) - 3} more)" if len(findings) > 3 else ""
    return (codes.CORE_UNRESOLVED,
            f"{len(findings)} CO-RE relocation(s) do not resolve against {target.name}: {shown}{more}", False)
