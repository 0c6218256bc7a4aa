"""How a resolved CO-RE relocation changes an instruction (libbpf's bpf_core_patch_insn), on
hand-made instructions: a load's width follows its field's new size for each width, the bounds
of the function are checked, a poisoned ld_imm64 loses both halves, a load carrying a type
relocation has its offset patched without a size check. The mutants these tests were written
to kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

import struct

import pytest
from evspec.loader.object.btf import BtfError
from evspec.loader.object.core import CoreError, CoreKind, CoreResult
from evspec.loader.object.core_patch import POISON_HELPER, CorePatch, core_check, patch_insns
from evspec.loader.object.spec import ObjectSpec
from evspec.loader.object.target_btf import TargetBtf

INSN = struct.Struct("<BBhi")
BPF_LDX_MEM = 0x61  # class LDX | mode MEM | size W
SIZE = {8: 0x18, 4: 0x00, 2: 0x08, 1: 0x10}  # BPF_DW, BPF_W, BPF_H, BPF_B


def _load(size: int, off: int) -> bytes:
    return INSN.pack((BPF_LDX_MEM & ~0x18) | SIZE[size], 0x12, off, 0)


def _field(orig: int, new: int, orig_size: int, new_size: int) -> CoreResult:
    return CoreResult(CoreKind.FIELD_BYTE_OFFSET, orig, new, True, None, orig_size, new_size, False, "t")


@pytest.mark.parametrize(("orig_size", "new_size"), [(4, 8), (8, 4), (2, 1), (1, 2), (4, 2), (2, 8), (1, 4)])
def test_a_loads_width_follows_the_fields_size(orig_size: int, new_size: int) -> None:
    """libbpf: when a field's size changes safely (unsigned integers, pointers) the load's size
    bits become the new size (BPF_B/H/W/DW), its offset the new offset; registers stay."""
    insns = _load(orig_size, 8)
    patched, findings = patch_insns(insns, [CorePatch(0, "r", _field(8, 24, orig_size, new_size))])
    assert findings == []
    assert INSN.unpack(patched) == ((BPF_LDX_MEM & ~0x18) | SIZE[new_size], 0x12, 24, 0)


def test_a_load_of_another_width_than_the_field_is_an_error() -> None:
    """libbpf: the instruction's own width must be the field's local size to be widened."""
    with pytest.raises(CoreError, match="accesses 2 bytes, expected 4"):
        patch_insns(_load(2, 8), [CorePatch(0, "r", _field(8, 24, 4, 8))])


def test_an_instruction_past_the_function_is_an_error() -> None:
    """An instruction index must be inside the function: the last one is, the next one not."""
    two = _load(4, 8) + _load(4, 8)
    patch_insns(two, [CorePatch(1, "r", _field(8, 8, 4, 4))])
    for at in (2, 3, -1):
        with pytest.raises(CoreError, match="outside the function's 2 instructions"):
            patch_insns(two, [CorePatch(at, "r", _field(8, 8, 4, 4))])


def test_a_poisoned_ld_imm64_loses_both_halves_but_not_the_next_instruction() -> None:
    """libbpf (bpf_core_poison_insn): a poisoned ld_imm64 becomes the poison call in both of its
    slots; a poisoned single instruction only in its own, the one after it unchanged; an
    ld_imm64 cut off at the function's end is poisoned in the slot it has."""
    ld = INSN.pack(0x18, 0x01, 0, 5) + INSN.pack(0, 0, 0, 0)
    tail = _load(4, 8)
    poisoned = CoreResult(CoreKind.ENUMVAL_VALUE, 5, 0, True, "gone")
    call = (0x85, 0, 0, POISON_HELPER)
    out, [finding] = patch_insns(ld + tail, [CorePatch(0, "r", poisoned)], "f")
    assert [INSN.unpack_from(out, i * 8) for i in range(3)] == [call, call, INSN.unpack(tail)]
    assert (finding.function, finding.insn) == ("f", 0)
    out, _ = patch_insns(tail + tail, [CorePatch(0, "r", poisoned)])
    assert [INSN.unpack_from(out, i * 8) for i in range(2)] == [call, INSN.unpack(tail)]
    out, _ = patch_insns(tail + ld[:8], [CorePatch(1, "r", poisoned)])
    assert len(out) == 16 and [INSN.unpack_from(out, i * 8) for i in range(2)] == [INSN.unpack(tail), call]


def test_an_ld_imm64_gets_both_halves_of_a_64_bit_value() -> None:
    """libbpf: an ld_imm64 holds the low 32 bits in its first slot, the high 32 in its second."""
    ld = INSN.pack(0x18, 0x01, 0, 5) + INSN.pack(0, 0, 0, 0)
    value = (0x12345678 << 32) | 0x9ABCDEF0
    result = CoreResult(CoreKind.ENUMVAL_VALUE, 5, value)
    out, _ = patch_insns(ld, [CorePatch(0, "r", result)])
    lo, hi = INSN.unpack_from(out, 0)[3] & 0xFFFFFFFF, INSN.unpack_from(out, 8)[3] & 0xFFFFFFFF
    assert (hi << 32 | lo) == value


def test_a_type_relocation_on_a_load_patches_its_offset_without_a_size_check() -> None:
    """libbpf: only a field byte offset carries sizes; a type_id_local relocation (sizes 0, no
    size change) on a load instruction sets its offset like any other value."""
    result = CoreResult(CoreKind.TYPE_ID_LOCAL, 7, 7, validate=False)
    out, findings = patch_insns(_load(4, 3), [CorePatch(0, "r", result)])
    assert findings == [] and INSN.unpack(out) == (BPF_LDX_MEM, 0x12, 7, 0)


def test_a_poisoned_ld_imm64_after_other_instructions_loses_both_halves() -> None:
    """The poisoned instruction's own opcode decides whether a second slot goes too, wherever
    it is in the function (here at index 1, after a load)."""
    tail = _load(4, 8)
    ld = INSN.pack(0x18, 0x01, 0, 5) + INSN.pack(0, 0, 0, 0)
    out, _ = patch_insns(tail + ld + tail, [CorePatch(1, "r", CoreResult(CoreKind.ENUMVAL_VALUE, 5, 0, True, "x"))])
    call = (0x85, 0, 0, POISON_HELPER)
    assert [INSN.unpack_from(out, i * 8) for i in range(4)] == [INSN.unpack(tail), call, call, INSN.unpack(tail)]


def test_an_alu_immediate_or_a_load_offset_is_compared_sign_extended() -> None:
    """libbpf: an instruction's s32 immediate (or s16 offset) is compared with the 64-bit local
    value sign-extended, so an enumerator -1 (0xffffffffffffffff locally) in a mov, or as a
    load's offset, is the expected one."""
    mov = INSN.pack(0xB7, 0x01, 0, -1)  # r1 = -1
    out, _ = patch_insns(mov, [CorePatch(0, "r", CoreResult(CoreKind.ENUMVAL_VALUE, (1 << 64) - 1, 5))])
    assert INSN.unpack(out) == (0xB7, 0x01, 0, 5)
    with pytest.raises(CoreError, match="immediate is -1, expected 4294967295"):
        patch_insns(mov, [CorePatch(0, "r", CoreResult(CoreKind.ENUMVAL_VALUE, 0xFFFFFFFF, 5))])
    out, _ = patch_insns(_load(4, -1), [CorePatch(0, "r", CoreResult(CoreKind.ENUMVAL_VALUE, (1 << 64) - 1, 5))])
    assert INSN.unpack(out) == (BPF_LDX_MEM, 0x12, 5, 0)


def test_an_ld_imm64_of_another_form_or_value_is_an_error() -> None:
    """libbpf: a relocated ld_imm64 has no source register (a map or BTF id reference is not a
    CO-RE value) and holds the local value in its two halves; anything else fails."""
    result = CoreResult(CoreKind.ENUMVAL_VALUE, 5, 9)
    pseudo = INSN.pack(0x18, 0x11, 0, 5) + INSN.pack(0, 0, 0, 0)  # src_reg 1: BPF_PSEUDO_MAP_FD
    with pytest.raises(CoreError, match="unexpected form"):
        patch_insns(pseudo, [CorePatch(0, "r", result)])
    other = INSN.pack(0x18, 0x01, 0, 6) + INSN.pack(0, 0, 0, 0)
    with pytest.raises(CoreError, match="the ld_imm64 holds 6, expected 5"):
        patch_insns(other, [CorePatch(0, "r", result)])


def test_an_object_without_co_re_relocations_needs_no_kernel_btf(monkeypatch: pytest.MonkeyPatch) -> None:
    """`evspec check` says nothing of CO-RE for an object that has no relocation, even on a
    kernel without BTF (it never asks for one); with a relocation pending it would say so."""
    def no_btf() -> None:
        raise BtfError("no /sys/kernel/btf/vmlinux")

    monkeypatch.setattr(TargetBtf, "running_kernel", staticmethod(no_btf))
    assert core_check(ObjectSpec("plain.o", "GPL", None, (), ())) is None
