"""How a resolved CO-RE relocation changes an instruction (libbpf's bpf_core_patch_insn), on
hand-made instructions: a load's width follows its field's new size for each width, the bounds
of the function are checked, a poisoned ld_imm64 loses both halves, a load carrying a type
relocation has its offset patched without a size check. The mutants these tests were written
to kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

import struct

import pytest
from btf_builder import BtfBuilder
from evspec.loader.btf.core import CoreError, CoreKind, CoreResult
from evspec.loader.btf.core_patch import POISON_HELPER, CorePatch, core_check, patch_insns, relocate_object
from evspec.loader.btf.reader import BtfError
from evspec.loader.btf.target import TargetBtf
from evspec.loader.errors import ObjectError
from evspec.loader.object.reader import read_object_bytes
from evspec.loader.object.spec import ObjectSpec, replace

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


@pytest.mark.parametrize(("code", "at"), [(0x62, "off"), (0x7A, "off"), (0x73, "off"), (0xB4, "imm"), (0x07, "imm")])
def test_stores_and_32_bit_alu_instructions_take_relocations_too(code: int, at: str) -> None:
    """libbpf (bpf_core_patch_insn): BPF_ST and BPF_STX stores get the new offset like loads;
    ALU (32-bit) immediates like ALU64 ones."""
    insn = INSN.pack(code, 0x01, 8 if at == "off" else 0, 8 if at == "imm" else 0)
    out, _ = patch_insns(insn, [CorePatch(0, "r", _field(8, 24, 0, 0))])
    _, _, off, imm = INSN.unpack(out)
    assert (off if at == "off" else imm) == 24


def test_an_offset_must_fit_16_signed_bits() -> None:
    """libbpf: a new offset past 32767 does not fit the instruction ("insn #%d (LDX/ST/STX)
    value too big"); 32767 does."""
    out, _ = patch_insns(_load(4, 8), [CorePatch(0, "r", _field(8, 32767, 4, 4))])
    assert INSN.unpack(out)[2] == 32767
    with pytest.raises(CoreError, match="offset 32768 does not fit an instruction's 16-bit offset"):
        patch_insns(_load(4, 8), [CorePatch(0, "r", _field(8, 32768, 4, 4))])


def test_other_instructions_cannot_take_a_relocation() -> None:
    """libbpf: only ALU immediates, load/store offsets and ld_imm64 values are relocated; an
    LD_ABS, an ld_imm64 cut off by the function's end or a jump is refused."""
    result = CoreResult(CoreKind.ENUMVAL_VALUE, 5, 9)
    ld_abs = INSN.pack(0x20, 0, 0, 5) + INSN.pack(0, 0, 0, 0)
    with pytest.raises(CoreError, match="a BPF_LD instruction that is no ld_imm64 \\(opcode 0x20\\)"):
        patch_insns(ld_abs, [CorePatch(0, "r", result)])
    with pytest.raises(CoreError, match="no ld_imm64 \\(opcode 0x18\\)"):
        patch_insns(INSN.pack(0x18, 0x01, 0, 5), [CorePatch(0, "r", result)])
    with pytest.raises(CoreError, match="opcode 0x05 cannot take a CO-RE relocation"):
        patch_insns(INSN.pack(0x05, 0, 0, 5), [CorePatch(0, "r", result)])


@pytest.mark.parametrize("value", [0x1_0000_0005, 0xFFFF_FFFF_0000_0005, 0x8000_0000_FFFF_FFFF])
def test_an_ld_imm64_holds_the_local_value_in_both_halves(value: int) -> None:
    """libbpf: an ld_imm64's value is its low slot's 32 bits and its high slot's 32 bits."""
    lo, hi = value & 0xFFFFFFFF, value >> 32
    ld = INSN.pack(0x18, 0x01, 0, struct.unpack("<i", struct.pack("<I", lo))[0]) + INSN.pack(
        0, 0, 0, struct.unpack("<i", struct.pack("<I", hi))[0])
    out, _ = patch_insns(ld, [CorePatch(0, "r", CoreResult(CoreKind.ENUMVAL_VALUE, value, 7))])
    assert (INSN.unpack_from(out, 0)[3], INSN.unpack_from(out, 8)[3]) == (7, 0)


@pytest.fixture(scope="module")
def relocs(tmp_path_factory: pytest.TempPathFactory) -> ObjectSpec:
    """tests/data/core/relocs.c, as test_core_resolve.py builds it."""
    from test_core_resolve import build

    return read_object_bytes(build(tmp_path_factory.mktemp("relocs"), "relocs"), "relocs.o")


@pytest.fixture(scope="module")
def relocs_target(tmp_path_factory: pytest.TempPathFactory) -> TargetBtf:
    """tests/data/core/target.c's BTF: relocs.c's types laid out otherwise."""
    from test_core_resolve import btf_of, build

    return TargetBtf(btf_of(build(tmp_path_factory.mktemp("target"), "target")), "target.o", cache=False)


def test_an_object_whose_relocations_cannot_be_applied_is_refused(relocs: ObjectSpec,
                                                                  relocs_target: TargetBtf) -> None:
    """A whole object: relocations without a .BTF section, or on an instruction of the wrong
    kind, are an EB015 error naming the object and the function."""
    target = relocs_target
    with pytest.raises(ObjectError, match="relocs.o: CO-RE relocations without a .BTF section"):
        relocate_object(replace(relocs, btf=None), target)
    prog = next(p for p in relocs.programs if p.core_relocations)
    wrecked = replace(prog, insns=bytes(len(prog.insns)))  # every instruction opcode 0 (BPF_LD)
    spec = replace(relocs, programs=tuple(wrecked if p is prog else p for p in relocs.programs))
    with pytest.raises(ObjectError, match=f"function '{prog.name}', instruction"):
        relocate_object(spec, target)


def test_without_the_kernels_btf_the_pending_relocations_are_counted(relocs: ObjectSpec,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`evspec check` on a machine without kernel BTF: a warning that the object's N relocations
    were not checked, and why."""
    def no_btf() -> None:
        raise BtfError("no /sys/kernel/btf/vmlinux")

    monkeypatch.setattr(TargetBtf, "running_kernel", staticmethod(no_btf))
    count = len(relocs.core_relocations())
    code, message, is_error = core_check(relocs)  # type: ignore[misc]
    assert count > 1 and not is_error
    assert message.startswith(f"{count} CO-RE relocation(s) not checked: CO-RE relocations need the kernel's BTF")


def test_edges_of_the_32_bit_immediate_and_of_the_function() -> None:
    """A new value 0x80000000 is the s32 -2**31 in an immediate; a poisoned ld_imm64 in the
    function's last two slots loses both."""
    mov = INSN.pack(0xB7, 0x01, 0, 5)
    out, _ = patch_insns(mov, [CorePatch(0, "r", CoreResult(CoreKind.ENUMVAL_VALUE, 5, 0x80000000))])
    assert INSN.unpack(out)[3] == -(1 << 31)
    tail = _load(4, 8)
    ld = INSN.pack(0x18, 0x01, 0, 5) + INSN.pack(0, 0, 0, 0)
    out, _ = patch_insns(tail + ld, [CorePatch(1, "r", CoreResult(CoreKind.ENUMVAL_VALUE, 5, 0, True, "x"))])
    call = (0x85, 0, 0, POISON_HELPER)
    assert [INSN.unpack_from(out, i * 8) for i in range(3)] == [INSN.unpack(tail), call, call]


def test_instructions_that_do_not_hold_what_the_relocation_expects_are_refused() -> None:
    """libbpf (bpf_core_patch_insn): an ALU with a register operand has no immediate; a load's
    offset must be the local value; a size change must be to a load width (1, 2, 4, 8)."""
    with pytest.raises(CoreError, match="an ALU instruction with a register operand has no immediate"):
        patch_insns(INSN.pack(0x0F, 0x12, 0, 0), [CorePatch(0, "r", _field(8, 24, 0, 0))])
    with pytest.raises(CoreError, match="the instruction's offset is 8, expected 12"):
        patch_insns(_load(4, 8), [CorePatch(0, "r", _field(12, 24, 4, 4))])
    with pytest.raises(CoreError, match="no load or store is 3 bytes wide"):
        patch_insns(_load(4, 8), [CorePatch(0, "r", _field(8, 24, 4, 3))])


def test_a_load_whose_field_changed_size_unsafely_is_poisoned_and_said() -> None:
    """libbpf (fail_memsz_adjust): a load that cannot follow its field's new size is poisoned;
    the finding says both sizes and the target."""
    result = CoreResult(CoreKind.FIELD_BYTE_OFFSET, 8, 24, True, None, 8, 4, True, "struct t [3].x")
    out, [finding] = patch_insns(_load(8, 8), [CorePatch(0, "f of s", result)], "prog")
    assert INSN.unpack(out) == (0x85, 0, 0, POISON_HELPER)
    assert finding.message == ("f of s: the field is 8 bytes here and 4 in the target (struct t [3].x); a load "
                               "of another width would not read the same value")


def test_applied_relocations_are_left_alone(relocs: ObjectSpec, relocs_target: TargetBtf) -> None:
    """Relocating twice changes nothing the second time, and a function whose first relocation
    is already applied still gets the others."""
    relocated, findings = relocate_object(relocs, relocs_target)
    assert findings and relocate_object(relocated, relocs_target) == (relocated, [])
    prog = next(p for p in relocs.programs if len(p.core_relocations) >= 2)
    first, *rest = prog.core_relocations
    half = replace(prog, core_relocations=(replace(first, applied=True), *rest))
    spec = replace(relocs, programs=tuple(half if p is prog else p for p in relocs.programs))
    again, _ = relocate_object(spec, relocs_target)
    done = next(p for p in again.programs if p.name == prog.name)
    full = next(p for p in relocated.programs if p.name == prog.name)
    assert all(r.applied for r in done.core_relocations)
    at = first.insn * 8
    assert done.insns[at:at + 8] == prog.insns[at:at + 8]  # left as it was
    assert done.insns[:at] + done.insns[at + 8:] == full.insns[:at] + full.insns[at + 8:]
    mixed = replace(relocated, programs=tuple(prog if p.name == prog.name else p for p in relocated.programs))
    assert relocate_object(mixed, relocs_target)[0] == relocated  # the applied functions pass through


def test_check_says_what_a_relocation_against_a_target_gives(relocs: ObjectSpec, relocs_target: TargetBtf) -> None:
    """`evspec check`: an object that cannot be relocated is an error (EB015) without the path;
    poisoned relocations are a warning counting them and showing the first three."""
    code, message, is_error = core_check(replace(relocs, btf=None), relocs_target)  # type: ignore[misc]
    assert (message, is_error) == ("CO-RE relocations without a .BTF section", True)
    code, message, is_error = core_check(relocs, relocs_target)  # type: ignore[misc]
    assert not is_error and message.startswith("1 CO-RE relocation(s) do not resolve against target.o: function ")
    assert "(and" not in message
    empty = TargetBtf(BtfBuilder().blob(), "empty", cache=False)
    code, message, is_error = core_check(relocs, empty)  # type: ignore[misc]
    _, everything = relocate_object(relocs, empty)
    assert len(everything) > 4 and not is_error
    assert message.startswith(f"{len(everything)} CO-RE relocation(s) do not resolve against empty: ")
    assert message.endswith(f" (and {len(everything) - 3} more)") and message.count("function '") == 3
    prog = next(p for p in relocs.programs if sum(r.kind.startswith("field_") for r in p.core_relocations) >= 4)
    fields = tuple(r for r in prog.core_relocations if r.kind.startswith("field_"))
    for count, suffix in ((3, ""), (4, " (and 1 more)")):
        some = replace(relocs, programs=(replace(prog, core_relocations=fields[:count]),), subprograms=())
        code, message, is_error = core_check(some, empty)  # type: ignore[misc]
        assert message.startswith(f"{count} CO-RE relocation(s)") and message.endswith(f"call {POISON_HELPER}`, "
                                  f"which the verifier refuses if it is reached{suffix}")
