"""libbpf's CO-RE rules one at a time, on hand-made BTF (tests/btf_builder.py), each with a case
where a wrong rule gives another answer than libbpf's relo_core.c (and the kernel's copy of it):
``bpf_core_type_matches`` (__bpf_core_types_match), type relocations' compatibility
(__bpf_core_types_are_compat), a field's compatibility (bpf_core_fields_are_compat), enum
matching, array bounds, the nesting limits, and the values of field relocations on bitfields.
The mutants these tests were written to kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Callable

import pytest
from btf_builder import BtfBuilder
from conftest import oracle
from corpus_files import DATA
from evspec.loader.btf.core import (
    CoreError,
    CoreKind,
    CoreResolver,
    fields_compat,
    parse_access,
    types_compat,
    types_match,
)
from evspec.loader.btf.core_patch import relocate_object
from evspec.loader.btf.reader import BtfKind, write_btf
from evspec.loader.btf.target import TargetBtf
from evspec.loader.kernel import Kernel
from evspec.loader.load.live import load_object
from evspec.loader.object.reader import read_object_bytes
from evspec.loader.object.spec import ObjectSpec, ProgType
from test_core_kernel import _load_with_kernel_core as load_with_kernel_core

INSN = struct.Struct("<BBhi")


def _matches(local: BtfBuilder, lid: int, target: BtfBuilder, tid: int, behind_ptr: bool = False) -> bool:
    return types_match(local.btf(), lid, target.btf(), tid, behind_ptr)


def _int_pair(lsigned: bool, lsize: int, tsigned: bool, tsize: int) -> tuple[BtfBuilder, int, BtfBuilder, int]:
    local, target = BtfBuilder(), BtfBuilder()
    return local, local.int_("int", lsize, lsigned), target, target.int_("int", tsize, tsigned)


@pytest.mark.parametrize(("lsigned", "lsize", "tsigned", "tsize", "expected"), [
    (True, 4, True, 4, True),
    (False, 4, False, 4, True),
    (True, 4, False, 4, False),   # signedness differs
    (False, 4, True, 4, False),
    (True, 4, True, 8, False),    # size differs
])  # fmt: skip
def test_type_matches_ints_by_size_and_signedness(lsigned: bool, lsize: int, tsigned: bool, tsize: int,
                                                  expected: bool) -> None:
    """libbpf: integers match when their sizes are equal and both or neither are signed."""
    local, lid, target, tid = _int_pair(lsigned, lsize, tsigned, tsize)
    assert _matches(local, lid, target, tid) is expected


def _enum_pair(local_values: list[str], target_values: list[str], lsize: int = 4,
               tsize: int = 4) -> tuple[BtfBuilder, int, BtfBuilder, int]:
    local, target = BtfBuilder(), BtfBuilder()
    lid = local.enum("e___l", lsize, [(n, i) for i, n in enumerate(local_values)])
    tid = target.enum("e", tsize, [(n, i + 7) for i, n in enumerate(target_values)])
    return local, lid, target, tid


@pytest.mark.parametrize(("local_values", "target_values", "lsize", "tsize", "expected"), [
    (["A", "B"], ["B", "C", "A"], 4, 4, True),       # each local name is in the target; values do not count
    (["A", "B", "C"], ["A", "B", "C"], 4, 4, True),  # as many enumerators
    (["A", "B", "C"], ["A", "B"], 4, 4, False),      # more enumerators locally than in the target
    (["A", "X"], ["A", "B", "C"], 4, 4, False),      # X is not in the target
    (["A"], ["A"], 4, 8, False),                     # sizes differ
])  # fmt: skip
def test_type_matches_enums_by_size_and_names(local_values: list[str], target_values: list[str], lsize: int,
                                              tsize: int, expected: bool) -> None:
    """libbpf (bpf_core_enums_match): the sizes are equal, the local enum has no more enumerators
    than the target, and each local enumerator's name is one of the target's."""
    local, lid, target, tid = _enum_pair(local_values, target_values, lsize, tsize)
    assert _matches(local, lid, target, tid) is expected


def test_type_matches_an_enum_with_an_enum64_and_nothing_else() -> None:
    """libbpf: an enum matches an enum or enum64 of the same size and names; never an integer."""
    local, target = BtfBuilder(), BtfBuilder()
    lid = local.enum("e___l", 8, [("A", 1)])
    assert _matches(local, lid, target, target.enum64("e", [("A", 1 << 40)]))
    assert not _matches(local, lid, target, target.int_("e", 8))


def test_type_matches_arrays_of_the_same_length() -> None:
    """libbpf: arrays match when their lengths are equal and their element types match."""
    local, target = BtfBuilder(), BtfBuilder()
    lint, tint = local.int_("int", 4, True), target.int_("int", 4, True)
    four = local.array(lint, 4)
    assert _matches(local, four, target, target.array(tint, 4))
    assert not _matches(local, four, target, target.array(tint, 5))
    assert not _matches(local, four, target, target.array(target.int_("int", 4, False), 4))


def test_type_matches_function_prototypes_parameter_by_parameter() -> None:
    """libbpf: prototypes match with as many parameters, each matching, and matching returns."""
    local, target = BtfBuilder(), BtfBuilder()
    lint, tint, tlong = local.int_("int", 4, True), target.int_("int", 4, True), target.int_("long", 8, True)
    proto = local.ptr(local.func_proto(lint, [lint, lint]))
    assert _matches(local, proto, target, target.ptr(target.func_proto(tint, [tint, tint])))
    assert not _matches(local, proto, target, target.ptr(target.func_proto(tint, [tint])))
    assert not _matches(local, proto, target, target.ptr(target.func_proto(tint, [tint, tlong])))
    assert not _matches(local, proto, target, target.ptr(target.func_proto(tlong, [tint, tint])))


def _composites(members: list[str], target_members: list[str], *, union: bool = False,
                target_member_type_signed: bool = True) -> tuple[BtfBuilder, int, BtfBuilder, int]:
    local, target = BtfBuilder(), BtfBuilder()
    lint, tint = local.int_("int", 4, True), target.int_("int", 4, target_member_type_signed)
    lid = local.struct("s___l", 4 * len(members), [(n, lint, 32 * i) for i, n in enumerate(members)], union)
    tid = target.struct("s", 4 * len(target_members), [(n, tint, 32 * i) for i, n in enumerate(target_members)],
                        union)
    return local, lid, target, tid


def test_type_matches_structs_member_by_member_unless_behind_a_pointer() -> None:
    """libbpf: a struct or union matches one of the same kind whose members include each local
    member by name with a matching type; behind a pointer only the kind (and name) is compared."""
    assert _matches(*_composites(["a", "b"], ["b", "x", "a"]))
    assert not _matches(*_composites(["a", "b", "c"], ["a", "b"]))     # more local members
    assert not _matches(*_composites(["a", "y"], ["a", "b"]))          # y is not in the target
    assert not _matches(*_composites(["a"], ["a"], target_member_type_signed=False))  # a's type differs
    assert _matches(*_composites(["a"], ["a"], target_member_type_signed=False), behind_ptr=True)
    assert _matches(*_composites(["a", "y"], ["a", "b"]), behind_ptr=True)
    local, lid, target, tid = _composites(["a"], ["a"])
    assert not _matches(local, lid, *_composites(["a"], ["a"], union=True)[2:])  # struct vs union
    assert _matches(*_composites(["a"], ["a"], union=True))


def test_type_matches_forward_declarations() -> None:
    """libbpf: a fwd matches a fwd of the same flavour (struct/union); behind a pointer, also the
    struct (or union) it declares; a struct behind a pointer matches a fwd of its flavour."""
    local, target = BtfBuilder(), BtfBuilder()
    fwd_struct, fwd_union = local.fwd("s___l"), local.fwd("s___l", union=True)
    t_struct, t_union = target.struct("s", 0, []), target.struct("s", 0, [], union=True)
    t_fwd_struct, t_fwd_union = target.fwd("s"), target.fwd("s", union=True)
    assert _matches(local, fwd_struct, target, t_fwd_struct)
    assert not _matches(local, fwd_struct, target, t_fwd_union)
    assert _matches(local, fwd_union, target, t_fwd_union)
    assert not _matches(local, fwd_struct, target, t_struct)  # not behind a pointer
    assert _matches(local, fwd_struct, target, t_struct, behind_ptr=True)
    assert not _matches(local, fwd_struct, target, t_union, behind_ptr=True)
    assert _matches(local, fwd_union, target, t_union, behind_ptr=True)
    assert not _matches(local, fwd_union, target, t_struct, behind_ptr=True)
    l_struct, l_union = local.struct("s___m", 0, []), local.struct("s___m", 0, [], union=True)
    assert _matches(local, l_struct, target, t_fwd_struct, behind_ptr=True)
    assert not _matches(local, l_struct, target, t_fwd_union, behind_ptr=True)
    assert _matches(local, l_union, target, t_fwd_union, behind_ptr=True)
    assert not _matches(local, l_union, target, t_fwd_struct, behind_ptr=True)
    assert not _matches(local, l_struct, target, t_union, behind_ptr=True)


def test_type_matches_through_a_pointer_compares_the_pointee_as_behind_one() -> None:
    """libbpf: a pointer matches a pointer whose pointee matches, the pointee compared as behind a
    pointer (a struct by kind only, a fwd by flavour); names count on both sides."""
    local, target = BtfBuilder(), BtfBuilder()
    lfwd = local.ptr(local.fwd("task___l"))
    assert _matches(local, lfwd, target, target.ptr(target.struct("task", 8, [])))
    assert not _matches(local, lfwd, target, target.ptr(target.struct("other", 8, [])))
    assert not _matches(local, lfwd, target, target.struct("task", 8, []))
    void_ptr = local.ptr(0)
    assert _matches(local, void_ptr, target, target.ptr(0))
    assert not _matches(local, void_ptr, target, target.ptr(target.int_("int", 4)))


def test_type_matches_names_count_and_anonymous_types_match_anonymous_ones() -> None:
    """libbpf: the essential names (flavour suffix stripped) are equal; an anonymous target type
    matches only an anonymous local one."""
    local, target = BtfBuilder(), BtfBuilder()
    lint = local.int_("int", 4, True)
    tint = target.int_("int", 4, True)
    anon = local.struct("", 4, [("a", lint, 0)])
    assert _matches(local, anon, target, target.struct("", 4, [("a", tint, 0)]))
    assert not _matches(local, local.struct("s", 4, [("a", lint, 0)]), target, target.struct("", 4, [("a", tint, 0)]))
    assert not _matches(local, lint, target, target.int_("long", 4, True))


def _chain(builder: BtfBuilder, depth: int, signed: bool = True) -> int:
    """A pointer to a prototype whose parameter is a pointer to a prototype ... ``depth`` times."""
    tid = builder.int_("int", 4, signed)
    for _ in range(depth):
        tid = builder.ptr(builder.func_proto(0, [tid]))
    return tid


def _assert_matches_to_depth_31(chain: Callable[..., int]) -> None:
    """``chain(builder, depth, signed=...)`` nested 31 deep is matched to the end (a difference
    there is still seen); 32 deep is an error."""
    local, target, other = BtfBuilder(), BtfBuilder(), BtfBuilder()
    lid, tid, oid = chain(local, 31), chain(target, 31), chain(other, 31, signed=False)
    assert _matches(local, lid, target, tid)
    assert not _matches(local, lid, other, oid)
    deep_l, deep_t = BtfBuilder(), BtfBuilder()
    dl, dt = chain(deep_l, 32), chain(deep_t, 32)
    with pytest.raises(CoreError, match="nested too deep"):
        _matches(deep_l, dl, deep_t, dt)


def test_type_matches_follows_parameters_to_libbpfs_depth_and_no_further() -> None:
    """libbpf: __bpf_core_types_match is called with level 32 and recurses into each parameter
    with level - 1, failing (-EINVAL) at level 0: 31 nested parameters are compared to the end
    (where a difference is still found), 32 are an error."""
    _assert_matches_to_depth_31(_chain)


def test_type_relocations_follow_parameters_to_libbpfs_depth_and_no_further() -> None:
    """libbpf: __bpf_core_types_are_compat recurses into parameters with level - 1 from 32 and
    fails at level 0 (before comparing a parameter), so 32 nested parameters are followed to
    the end and 33 are an error."""
    local, target, other = BtfBuilder(), BtfBuilder(), BtfBuilder()
    lid, tid = _chain(local, 32), _chain(target, 32)
    assert types_compat(local.btf(), lid, target.btf(), tid)
    fid = other.float_("int", 4)
    for _ in range(32):
        fid = other.ptr(other.func_proto(0, [fid]))
    assert not types_compat(local.btf(), lid, other.btf(), fid)
    deep_l, deep_t = BtfBuilder(), BtfBuilder()
    dl, dt = _chain(deep_l, 33), _chain(deep_t, 33)
    with pytest.raises(CoreError, match="nested too deep"):
        types_compat(deep_l.btf(), dl, deep_t.btf(), dt)


@pytest.mark.parametrize(("loffset", "toffset", "expected"), [(0, 0, True), (0, 3, False), (3, 0, False)])
def test_type_relocations_refuse_integers_with_a_bit_offset(loffset: int, toffset: int, expected: bool) -> None:
    """libbpf (bpf_core_types_are_compat): integers are compatible unless either has a non-zero
    bit offset in its encoding; their sizes and signedness do not count."""
    local, target = BtfBuilder(), BtfBuilder()
    lid = local.int_("int", 4, True, bits=29 if loffset else None, offset=loffset)
    tid = target.int_("int", 8, False, bits=29 if toffset else None, offset=toffset)
    assert types_compat(local.btf(), lid, target.btf(), tid) is expected
    assert fields_compat(local.btf(), lid, target.btf(), tid) is expected


class _later:
    """The builder's BTF as it is when a comparison runs (the arguments after it add types)."""

    def __init__(self, builder: BtfBuilder) -> None:
        self.builder = builder

    def __call__(self) -> _later:
        return self

    def __getattr__(self, name: str) -> object:
        return getattr(self.builder.btf(), name)


def test_type_relocations_follow_pointers_arrays_and_prototypes() -> None:
    """libbpf (bpf_core_types_are_compat): pointers and arrays are compatible when what they point
    to or hold is (array lengths do not count); prototypes need as many parameters, each
    compatible, and compatible returns; other kinds must be the same kind."""
    local, target = BtfBuilder(), BtfBuilder()
    lint, tint, tflt = local.int_("int", 4), target.int_("int", 8), target.float_("double", 8)
    lb, tb = _later(local), _later(target)
    assert types_compat(lb(), local.array(lint, 2), tb(), target.array(tint, 9))
    assert not types_compat(lb(), local.array(lint, 2), tb(), target.array(tflt, 2))
    assert types_compat(lb(), local.ptr(lint), tb(), target.ptr(tint))
    assert not types_compat(lb(), local.ptr(lint), tb(), target.ptr(tflt))
    assert not types_compat(lb(), local.ptr(lint), tb(), tint)
    proto = local.func_proto(lint, [lint])
    assert types_compat(lb(), proto, tb(), target.func_proto(tint, [tint]))
    assert not types_compat(lb(), proto, tb(), target.func_proto(tint, [tint, tint]))
    assert not types_compat(lb(), proto, tb(), target.func_proto(tint, [tflt]))
    assert not types_compat(lb(), proto, tb(), target.func_proto(tflt, [tint]))
    assert not types_compat(lb(), local.float_("double", 8), tb(), target.float_("double", 8))
    assert types_compat(lb(), local.enum("e___x", 4, [("A", 0)]), tb(), target.enum64("e", [("B", 1)]))


def test_field_compatibility_by_kind() -> None:
    """libbpf (bpf_core_fields_are_compat): two structs/unions are compatible whatever their
    members; pointers and floats by kind alone; enums and fwds by essential name (or when one is
    anonymous); arrays by element; an int is not compatible with a struct."""
    local, target = BtfBuilder(), BtfBuilder()
    lb, tb = _later(local), _later(target)
    assert fields_compat(lb(), local.struct("a", 4, []), tb(), target.struct("b", 8, [], union=True))
    assert not fields_compat(lb(), local.struct("a", 4, []), tb(), target.int_("int", 4))
    assert not fields_compat(lb(), local.int_("int", 4), tb(), target.struct("a", 4, []))
    assert fields_compat(lb(), local.ptr(0), tb(), target.ptr(target.int_("int", 4)))
    assert fields_compat(lb(), local.float_("float", 4), tb(), target.float_("double", 8))
    le = local.enum("e___x", 4, [("A", 0)])
    assert fields_compat(lb(), le, tb(), target.enum("e", 4, [("B", 0)]))
    assert not fields_compat(lb(), le, tb(), target.enum("f", 4, [("A", 0)]))
    assert fields_compat(lb(), le, tb(), target.enum("", 4, [("A", 0)]))
    assert fields_compat(lb(), local.enum("", 4, [("A", 0)]), tb(), target.enum("f", 4, [("A", 0)]))
    assert fields_compat(lb(), local.array(local.ptr(0), 2), tb(), target.array(target.ptr(0), 5))
    assert not fields_compat(lb(), local.array(local.ptr(0), 2), tb(), target.array(target.int_("int", 8), 2))
    assert not fields_compat(lb(), local.func_proto(0, []), tb(), target.func_proto(0, []))


def _bitfields(order: str) -> tuple[BtfBuilder, int]:
    b = BtfBuilder(order)
    u32, s32 = b.int_("unsigned int", 4), b.int_("int", 4, signed=True)
    u8, u16 = b.int_("unsigned char", 1), b.int_("unsigned short", 2)
    # struct { u32 a:3; s32 b:7; u8 pad; u32 c:20 (bits 40-59); u8 d:4 (bits 60-63);
    #          u16 e:8 (bits 12-19, across a u16's boundary: read with a 4-byte load);
    #          u8 f:4 at bit 135, across a byte: a 2-byte load at byte 16 }
    return b, b.struct("bits", 24, [("a", u32, 0, 3), ("b", s32, 3, 7), ("pad", u8, 16, 0),
                                   ("c", u32, 40, 20), ("d", u8, 60, 4), ("e", u16, 12, 8),
                                   ("f", u8, 135, 4)])  # fmt: skip


@pytest.mark.parametrize(("order", "member", "expected"), [
    # (byte offset, byte size, signed, lshift, rshift) as libbpf's bpf_core_calc_field_relo gives them
    ("<", 1, (0, 4, 1, 54, 57)),
    ("<", 3, (4, 4, 0, 36, 44)),
    ("<", 4, (7, 1, 0, 56, 60)),
    ("<", 5, (0, 4, 0, 44, 56)),
    ("<", 6, (16, 2, 0, 53, 60)),
    (">", 1, (0, 4, 1, 35, 57)),
    (">", 3, (4, 4, 0, 40, 44)),
    (">", 4, (7, 1, 0, 60, 60)),
    (">", 5, (0, 4, 0, 44, 56)),
    (">", 6, (16, 2, 0, 55, 60)),
])  # fmt: skip
def test_bitfield_relocation_values(order: str, member: int, expected: tuple[int, ...]) -> None:
    """libbpf: a bitfield's byte offset is its bit offset rounded down to its type's size (widened
    while the field crosses it), byte size that load's size, lshift 64 - (bit end within the load)
    on little-endian and (8 - size) * 8 + bit start within the load on big-endian, rshift
    64 - bits; the local and the target computed alike (here the same BTF on both sides)."""
    builder, sid = _bitfields(order)
    resolver = CoreResolver(builder.btf(), builder.target())
    kinds = (CoreKind.FIELD_BYTE_OFFSET, CoreKind.FIELD_BYTE_SIZE, CoreKind.FIELD_SIGNED,
             CoreKind.FIELD_LSHIFT_U64, CoreKind.FIELD_RSHIFT_U64)
    results = [resolver.resolve(sid, f"0:{member}", kind) for kind in kinds]
    assert tuple(r.new for r in results) == expected
    assert tuple(r.orig for r in results) == expected
    assert [r.validate for r in results] == [False, False, True, False, True]


def test_enum_values_are_read_as_s32_for_32_bit_enums_and_widened() -> None:
    """libbpf: an ENUMVAL_VALUE of a 4-byte enum is the s32 value sign-extended to 64 bits; of an
    enum64, the 64-bit value."""
    b = BtfBuilder()
    e32 = b.enum("e", 4, [("NEG", 0xFFFFFFFE), ("POS", 0x7FFFFFFF)])
    e64 = b.enum64("f", [("BIG", 0xFFFFFFFE)])
    resolver = CoreResolver(b.btf(), b.target())
    value = CoreKind.ENUMVAL_VALUE
    assert resolver.resolve(e32, "0", value).new == (1 << 64) - 2
    assert resolver.resolve(e32, "1", value).new == 0x7FFFFFFF
    assert resolver.resolve(e64, "0", value).new == 0xFFFFFFFE


def test_an_array_index_past_the_end_of_the_target_array_does_not_match() -> None:
    """libbpf (bpf_core_spec_match): an index into an array must be inside the target array's
    length (a flexible array member excepted); else the candidate does not match and a field
    relocation without other candidate is poisoned."""
    local, target = BtfBuilder(), BtfBuilder()
    lint, tint = local.int_("int", 4), target.int_("int", 4)
    lid = local.struct("s___l", 32, [("x", local.array(lint, 8), 0)])
    target.struct("s", 16, [("x", target.array(tint, 4), 0)])
    resolver = CoreResolver(local.btf(), target.target())
    assert resolver.resolve(lid, "0:0:3", CoreKind.FIELD_BYTE_OFFSET).new == 12
    assert resolver.resolve(lid, "0:0:4", CoreKind.FIELD_BYTE_OFFSET).poison is not None
    assert resolver.resolve(lid, "0:0:4", CoreKind.FIELD_EXISTS).new == 0
    assert resolver.resolve(lid, "0:0:3", CoreKind.FIELD_EXISTS).new == 1


def test_a_flexible_array_member_takes_any_index() -> None:
    """libbpf: a zero-length array that is the last member of its struct takes any index, on the
    local side and in the target; a zero-length array elsewhere takes none."""
    local, target = BtfBuilder(), BtfBuilder()
    lint, tint = local.int_("int", 4), target.int_("int", 4)
    lid = local.struct("s___l", 4, [("n", lint, 0), ("data", local.array(lint, 0), 32)])
    target.struct("s", 8, [("pad", tint, 0), ("n", tint, 32), ("data", target.array(tint, 0), 64)])
    mid = local.struct("m___l", 8, [("data", local.array(lint, 0), 0), ("n", lint, 0)])
    resolver = CoreResolver(local.btf(), target.target())
    assert resolver.resolve(lid, "0:1:5", CoreKind.FIELD_BYTE_OFFSET).new == 8 + 20
    with pytest.raises(CoreError, match="element 5 of an array of 0"):
        resolver.resolve(mid, "0:0:5", CoreKind.FIELD_BYTE_OFFSET)
    flex_not_last = BtfBuilder()
    fint = flex_not_last.int_("int", 4)
    flex_not_last.struct("s", 8, [("n", fint, 0), ("data", flex_not_last.array(fint, 0), 32), ("z", fint, 32)])
    other = CoreResolver(local.btf(), flex_not_last.target())
    assert other.resolve(lid, "0:1:5", CoreKind.FIELD_BYTE_OFFSET).poison is not None


def test_type_kinds_of_a_candidate_must_be_compatible() -> None:
    """libbpf: a candidate has the local type's kind (enum and enum64 count as one); its
    relocations of another kind find none."""
    local, target = BtfBuilder(), BtfBuilder()
    lid = local.struct("t___x", 4, [])
    target.ref(BtfKind.TYPEDEF, target.int_("int", 4), "t")
    resolver = CoreResolver(local.btf(), target.target())
    assert resolver.resolve(lid, "0", CoreKind.TYPE_EXISTS).new == 0
    e = local.enum("e___x", 4, [("A", 0)])
    target.enum64("e", [("A", 5)])
    resolver = CoreResolver(local.btf(), target.target())
    assert resolver.resolve(e, "0", CoreKind.TYPE_EXISTS).new == 1


# -- the kernel's own CO-RE as the oracle (root, clang 21 for type_matches) ----------------------

#: what each bpf_core_type_matches of kernel_matches.c answers against a kernel of today, by bit
KERNEL_MATCHES = {
    "list_head___same": 1, "list_head___more": 0, "list_head___renamed": 0, "list_head___int": 0,
    "pid_type___subset": 1, "pid_type___stranger": 0, "pid_type___wide": 0, "pid_t___signed": 1,
    "pid_t___unsigned": 0, "pid_t___long": 0, "ethhdr___same": 1, "ethhdr___short": 0,
    "ethhdr___signed": 0, "rcu_callback_t___same": 1, "rcu_callback_t___args": 0, "rcu_callback_t___ret": 0,
    "rcu_callback_t___other": 0, "callback_head___union": 0,
}  # fmt: skip


@pytest.fixture(scope="module")
def kernel_matches(tmp_path_factory: pytest.TempPathFactory) -> ObjectSpec:
    out = tmp_path_factory.mktemp("matches")
    shutil.copy(DATA / "core" / "kernel_matches.c", out)
    subprocess.run([oracle("clang-21"), "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu",
                    "-c", "kernel_matches.c", "-o", "kernel_matches.o"], check=True, cwd=out)  # fmt: skip
    return read_object_bytes((out / "kernel_matches.o").read_bytes(), "kernel_matches.o")


def test_type_matches_answers_as_the_kernel_does(root_kernel: None, kernel_matches: ObjectSpec) -> None:
    """The kernel's CO-RE (relo_core.c, libbpf's own rules) and evspec's on one object: each
    bpf_core_type_matches of kernel_matches.c (list_head with another member count, member name
    or member type; pid_type as a subset, with a stranger, as an enum64; pid_t signed, unsigned,
    long; in6_addr with another array length or a struct for a union; callback_head with other
    prototypes, through a fwd, as a union) and type_exists/type_size of some: the translated
    programs are equal, and the answers are the ones KERNEL_MATCHES says."""
    spec = kernel_matches
    relocated, findings = relocate_object(spec, TargetBtf.running_kernel())
    assert findings == []
    answers = {}
    for prog in relocated.programs:
        for r in prog.core_relocations:
            code, _, _, imm = INSN.unpack_from(prog.insns, r.insn * 8)
            if r.kind == "type_matches":
                answers[r.type_name.split(" ")[-1]] = imm
    assert answers == KERNEL_MATCHES
    kernel = Kernel()
    names = [p.name for p in spec.programs]
    with load_object(spec, {n: ProgType.TRACEPOINT for n in names}, kernel=kernel) as ours:
        mine = {name: kernel.program_xlated(ours.program(name).fd) for name in names}
    with load_object(spec, {n: ProgType.TRACEPOINT for n in names}, kernel=kernel, deferred=names) as live:
        for prog in spec.programs:
            fd = load_with_kernel_core(live, spec, prog)
            try:
                assert kernel.program_xlated(fd) == mine[prog.name], prog.name
            finally:
                kernel.close(fd)
    assert sorted(names) == ["compat", "matches"]


def test_a_pointer_read_as_a_narrower_integer_is_a_bad_size_change() -> None:
    """libbpf (bpf_core_calc_relo): a load may change width only when both sides are pointers or
    both unsigned integers; an element of a root array that is a pointer here and an int in the
    target keeps its offset but the load is poisoned (fail_memsz_adjust)."""
    local, target = BtfBuilder(), BtfBuilder()
    lid = local.ref(BtfKind.TYPEDEF, local.ptr(0), "p___x")
    target.ref(BtfKind.TYPEDEF, target.int_("unsigned int", 4), "p")
    result = CoreResolver(local.btf(), target.target()).resolve(lid, "1", CoreKind.FIELD_BYTE_OFFSET)
    assert (result.orig, result.new, result.orig_size, result.new_size) == (8, 4, 8, 4)
    assert result.bad_size_change
    local, target = BtfBuilder(), BtfBuilder()  # and an unsigned int here that is a pointer there
    lid = local.ref(BtfKind.TYPEDEF, local.int_("unsigned int", 4), "p___x")
    target.ref(BtfKind.TYPEDEF, target.ptr(0), "p")
    result = CoreResolver(local.btf(), target.target()).resolve(lid, "1", CoreKind.FIELD_BYTE_OFFSET)
    assert (result.orig, result.new, result.bad_size_change) == (4, 8, True)


def test_candidates_that_did_not_match_are_dropped_for_the_types_later_relocations() -> None:
    """libbpf (bpf_core_apply_relo): the candidates of a local type that fail one of its
    relocations are dropped for the next ones, so a field both target flavours have is
    answered by the flavour that matched before, not refused as ambiguous."""
    local, target = BtfBuilder(), BtfBuilder()
    lint, tint = local.int_("int", 4), target.int_("int", 4)
    lid = local.struct("s___l", 8, [("y", lint, 0), ("x", lint, 32)])
    target.struct("s___a", 4, [("x", tint, 0)])
    target.struct("s___b", 8, [("y", tint, 0), ("x", tint, 32)])
    resolver = CoreResolver(local.btf(), target.target())
    assert resolver.resolve(lid, "0:0", CoreKind.FIELD_BYTE_OFFSET).new == 0
    assert resolver.resolve(lid, "0:1", CoreKind.FIELD_BYTE_OFFSET).new == 4
    with pytest.raises(CoreError, match="ambiguous"):
        CoreResolver(local.btf(), target.target()).resolve(lid, "0:1", CoreKind.FIELD_BYTE_OFFSET)


def test_a_bitfield_across_a_64_bit_boundary_is_an_error() -> None:
    """libbpf (bpf_core_calc_field_relo): a bitfield whose bits a 64-bit load cannot cover
    (bits 60-67 of a u64 field) fails the relocation (-E2BIG) instead of a wider load."""
    b = BtfBuilder()
    u64 = b.int_("unsigned long long", 8)
    sid = b.struct("wide", 16, [("x", u64, 60, 8)])
    with pytest.raises(CoreError, match="cannot be read with one 64-bit load"):
        CoreResolver(b.btf(), b.target()).resolve(sid, "0:0", CoreKind.FIELD_BYTE_OFFSET)


@pytest.mark.parametrize(("count", "listed"), [(4, "m0, m1, m2, m3)"), (5, "m0, m1, m2, m3, ... (5 in all))")])
def test_a_type_no_btf_has_names_the_modules_searched(count: int, listed: str) -> None:
    """A poisoned relocation of a type neither vmlinux nor a module has names up to four module
    BTFs it searched, and how many there were past four."""
    local, vmlinux = BtfBuilder(), BtfBuilder()
    lid = local.struct("gone___l", 4, [("a", local.int_("int", 4), 0)])
    vmlinux.int_("int", 4)
    empty_split = write_btf([], b"\0")
    target = TargetBtf(vmlinux.blob(), "vmlinux", cache=False,
                       modules=lambda: [(f"m{i}", empty_split) for i in range(count)])
    result = CoreResolver(local.btf(), target).resolve(lid, "0:0", CoreKind.FIELD_BYTE_OFFSET)
    assert result.poison == f"vmlinux has no type named 'gone', nor has any of its module BTFs ({listed}"


def _nested_structs(builder: BtfBuilder, depth: int, anonymous_at: int = -1) -> int:
    """struct n{depth} { struct n{depth-1} m; } ... struct n1 { int m; }: ``depth`` member steps;
    at ``anonymous_at`` an anonymous struct wraps the member (one more step, no accessor)."""
    tid = builder.int_("int", 4)
    for level in range(1, depth + 1):
        tid = builder.struct(f"n{level}", 4, [("m", tid, 0)])
        if level == anonymous_at:
            tid = builder.struct("", 4, [("", tid, 0)])
    return tid


def test_an_access_of_more_than_64_steps_is_refused_on_both_sides() -> None:
    """libbpf: an access string has at most BPF_CORE_SPEC_MAX_LEN (64) indices locally, and the
    access followed in a candidate (anonymous members add steps there) at most 64 too."""
    local, target, anonymous = BtfBuilder(), BtfBuilder(), BtfBuilder()
    deep, deeper = _nested_structs(local, 63), _nested_structs(local, 64)
    _nested_structs(target, 63)
    _nested_structs(anonymous, 63, anonymous_at=40)
    resolver = CoreResolver(local.btf(), target.target())
    assert resolver.resolve(deep, ":".join(["0"] * 64), CoreKind.FIELD_BYTE_OFFSET).new == 0
    with pytest.raises(CoreError, match="longer than 64 steps"):
        resolver.resolve(deeper, ":".join(["0"] * 65), CoreKind.FIELD_BYTE_OFFSET)
    with pytest.raises(CoreError, match="the access in struct n63 is longer than 64 steps"):
        CoreResolver(local.btf(), anonymous.target()).resolve(deep, ":".join(["0"] * 64), CoreKind.FIELD_BYTE_OFFSET)


def test_an_access_into_a_type_without_size_or_past_the_members_is_refused() -> None:
    """libbpf (bpf_core_parse_spec): the root's size scales the first index, so a root without
    one (a prototype) fails; a member index must be below the struct's member count."""
    b = BtfBuilder()
    proto = b.func_proto(b.int_("int", 4), [])
    two = b.struct("two", 8, [("a", 1, 0), ("b", 1, 32)])
    resolver = CoreResolver(b.btf(), b.target())
    with pytest.raises(CoreError, match="has no size"):
        resolver.resolve(proto, "0:0", CoreKind.FIELD_BYTE_OFFSET)
    with pytest.raises(CoreError, match="step 1 is member 2, but struct two has 2"):
        resolver.resolve(two, "0:2", CoreKind.FIELD_BYTE_OFFSET)


def test_a_one_element_array_at_the_end_is_no_flexible_array() -> None:
    """libbpf (is_flex_arr): only a zero-length last member takes any index; data[1] takes 0."""
    b = BtfBuilder()
    i = b.int_("int", 4)
    sid = b.struct("s", 8, [("n", i, 0), ("data", b.array(i, 1), 32)])
    resolver = CoreResolver(b.btf(), b.target())
    assert resolver.resolve(sid, "0:1:0", CoreKind.FIELD_BYTE_OFFSET).new == 4
    with pytest.raises(CoreError, match="element 3 of an array of 1"):
        resolver.resolve(sid, "0:1:3", CoreKind.FIELD_BYTE_OFFSET)


def test_a_field_that_is_a_bitfield_only_in_the_target_cannot_be_loaded_at_another_width() -> None:
    """libbpf (bpf_core_calc_field_relo): a bitfield has no load size (0) and no type, so a
    plain u8 here that is a bitfield in the target is a size change no load can follow."""
    local, target = BtfBuilder(), BtfBuilder()
    lid = local.struct("s___l", 1, [("x", local.int_("unsigned char", 1), 0)])
    target.struct("s", 1, [("x", target.int_("unsigned char", 1), 0, 4)])
    result = CoreResolver(local.btf(), target.target()).resolve(lid, "0:0", CoreKind.FIELD_BYTE_OFFSET)
    assert (result.orig_size, result.new_size, result.bad_size_change) == (1, 0, True)


def test_a_local_type_id_is_the_types_own_id_and_never_validated() -> None:
    """libbpf: a type_id_local relocation is the local id itself, not checked against the
    instruction (ids may change when objects are linked)."""
    b = BtfBuilder()
    sid = b.struct("s", 4, [("a", b.int_("int", 4), 0)])
    result = CoreResolver(b.btf(), BtfBuilder().target()).resolve(sid, "0", CoreKind.TYPE_ID_LOCAL)
    assert (result.kind, result.orig, result.new, result.validate, result.poison) == (
        CoreKind.TYPE_ID_LOCAL, sid, sid, False, None)


def test_two_candidates_at_one_offset_with_other_values_are_ambiguous() -> None:
    """libbpf (bpf_core_apply_relo_insn): candidates that agree on the field's offset but not on
    the relocation's value (its size here) are a "relocation decision ambiguity"."""
    local, target = BtfBuilder(), BtfBuilder()
    lid = local.struct("s___l", 4, [("x", local.int_("int", 4), 0)])
    target.struct("s___a", 4, [("x", target.int_("int", 4), 0)])
    target.struct("s___b", 8, [("x", target.int_("long", 8), 0)])
    resolver = CoreResolver(local.btf(), target.target())
    assert resolver.resolve(lid, "0:0", CoreKind.FIELD_BYTE_OFFSET).new == 0
    with pytest.raises(CoreError, match="ambiguous"):
        CoreResolver(local.btf(), target.target()).resolve(lid, "0:0", CoreKind.FIELD_BYTE_SIZE)


def test_a_type_relocation_takes_only_the_access_string_0() -> None:
    """libbpf (bpf_core_parse_spec): type-based relocations, type_id_local included, have the
    access string "0"; a local type id of a prototype (no size) is fine."""
    b = BtfBuilder()
    sid = b.struct("s", 8, [("a", b.int_("int", 4), 0), ("b", 1, 32)])
    proto = b.func_proto(1, [1])
    resolver = CoreResolver(b.btf(), b.target())
    for kind in (CoreKind.TYPE_ID_LOCAL, CoreKind.TYPE_EXISTS):
        with pytest.raises(CoreError, match="a type relocation's access string is '0'"):
            resolver.resolve(sid, "1", kind)
    local = resolver.resolve(proto, "0", CoreKind.TYPE_ID_LOCAL)
    assert (local.kind, local.new) == (CoreKind.TYPE_ID_LOCAL, proto)


def test_an_enumerator_access_is_one_index_below_the_count() -> None:
    """libbpf: an enumerator relocation's access is one index of an enumerator that exists."""
    b = BtfBuilder()
    e = b.enum("e", 4, [("A", 1), ("B", 2)])
    resolver = CoreResolver(b.btf(), b.target())
    assert resolver.resolve(e, "1", CoreKind.ENUMVAL_VALUE).new == 2
    for access in ("2", "0:0"):
        with pytest.raises(CoreError, match="names no enumerator"):
            resolver.resolve(e, access, CoreKind.ENUMVAL_VALUE)


def test_an_enum_is_no_candidate_for_a_type_of_another_kind() -> None:
    """libbpf: enum and enum64 are one kind for candidates; an enum is not a typedef's."""
    local, target = BtfBuilder(), BtfBuilder()
    e = local.enum("e___x", 4, [("A", 0)])
    target.ref(BtfKind.TYPEDEF, target.int_("int", 4), "e")
    assert CoreResolver(local.btf(), target.target()).resolve(e, "0", CoreKind.TYPE_EXISTS).new == 0


def test_the_flexible_array_is_the_last_member_of_the_struct_that_holds_it() -> None:
    """libbpf (is_flex_arr): the struct of the accessor just before the array decides, not an
    outer one: data[5] of inner, the last member of inner, which is not last in outer."""
    b = BtfBuilder()
    i = b.int_("int", 4)
    inner = b.struct("inner", 4, [("n", i, 0), ("data", b.array(i, 0), 32)])
    outer = b.struct("outer", 12, [("x", i, 0), ("in", inner, 32), ("y", i, 64)])
    resolver = CoreResolver(b.btf(), b.target())
    assert resolver.resolve(outer, "0:1:1:5", CoreKind.FIELD_BYTE_OFFSET).new == 4 + 4 + 20


def test_a_missing_fields_path_shows_every_index_after_the_root() -> None:
    """The finding names the access as C: [1] for the second root element, [0] for an element
    0 after a member (the first root index, 0, is not shown)."""
    local, target = BtfBuilder(), BtfBuilder()
    i = local.int_("int", 4)
    sid = local.struct("s___l", 16, [("a", local.array(i, 2), 0), ("gone", i, 64)])
    target.struct("s", 4, [("b", target.int_("int", 4), 0)])
    resolver = CoreResolver(local.btf(), target.target())
    assert "field struct s___l[1].gone (access 1:1)" in (resolver.resolve(sid, "1:1", CoreKind.FIELD_BYTE_OFFSET).poison or "")
    assert "field struct s___l.a[0] (access 0:0:0)" in (resolver.resolve(sid, "0:0:0", CoreKind.FIELD_BYTE_OFFSET).poison or "")


def test_field_and_type_compatibility_give_up_past_32_levels() -> None:
    """libbpf: bpf_core_fields_are_compat and bpf_core_types_are_compat follow at most 32
    levels of arrays or pointers (-EINVAL past them)."""
    local, target = BtfBuilder(), BtfBuilder()
    la, ta = local.int_("int", 4), target.int_("int", 4)
    lp, tp = la, ta
    for _ in range(33):
        la, ta = local.array(la, 1), target.array(ta, 1)
        lp, tp = local.ptr(lp), target.ptr(tp)
    with pytest.raises(CoreError, match="type nesting deeper than 32"):
        fields_compat(local.btf(), la, target.btf(), ta)
    with pytest.raises(CoreError, match="type nesting deeper than 32"):
        types_compat(local.btf(), lp, target.btf(), tp)


def test_an_access_into_a_root_array_shows_its_element() -> None:
    b = BtfBuilder()
    arr = b.ref(BtfKind.TYPEDEF, b.array(b.int_("int", 4), 4), "arr")
    btf = b.btf()
    assert parse_access(btf, arr, "0:0", CoreKind.FIELD_BYTE_OFFSET).path() == "[0]"
    assert parse_access(btf, arr, "1:3", CoreKind.FIELD_BYTE_OFFSET).path() == "[1][3]"


def test_type_matches_other_kinds_and_floats_never() -> None:
    """libbpf (__bpf_core_types_match): kinds must be equal, and a kind it has no rule for (a
    float) does not match even itself ("unexpected kind relocated")."""
    local, target = BtfBuilder(), BtfBuilder()
    lint = local.int_("x", 4)
    assert not _matches(local, lint, target, target.float_("x", 4))
    assert not _matches(local, local.float_("double", 8), target, target.float_("double", 8))


def _struct_chain(builder: BtfBuilder, depth: int, signed: bool = True) -> int:
    tid = builder.int_("int", 4, signed)
    for level in range(depth):
        tid = builder.struct(f"n{level}", 4, [("m", tid, 0)])
    return tid


def test_type_matches_compares_members_as_values_to_libbpfs_depth() -> None:
    """libbpf: a struct's members are compared as values (not as behind a pointer), one level
    down each; 31 nested structs are followed to the end (where a difference is still seen),
    32 are an error."""
    _assert_matches_to_depth_31(_struct_chain)
    lp, tp = BtfBuilder(), BtfBuilder()
    lptr, tptr = lp.int_("int", 4), tp.int_("int", 4)
    for _ in range(33):
        lptr, tptr = lp.ptr(lptr), tp.ptr(tptr)
    with pytest.raises(CoreError, match="type nesting deeper than 32 matching"):
        _matches(lp, lptr, tp, tptr)


def _anonymous_chain(builder: BtfBuilder, depth: int) -> int:
    """struct s { struct { ... struct { int pad; int x; } ... }; } with ``depth`` anonymous levels."""
    i = builder.int_("int", 4)
    tid = builder.struct("", 8, [("pad", i, 0), ("x", i, 32)])
    for _ in range(depth - 1):
        tid = builder.struct("", 8, [("", tid, 0)])
    return builder.struct("s", 8, [("", tid, 0)])


def test_a_member_is_found_through_up_to_64_anonymous_members() -> None:
    """libbpf (bpf_core_match_member): a named member is looked for through anonymous ones, at
    most BPF_CORE_SPEC_MAX_LEN (64) deep, each a step of the access (at most 64 steps too):
    62 levels fit, 63 and 64 make the access too long, 65 nest too deep. Offsets add up."""
    local = BtfBuilder()
    i = local.int_("int", 4)
    lid = local.struct("s___l", 8, [("pad", i, 0), ("x", i, 32)])
    for depth, error in ((1, None), (62, None), (63, "is longer than 64 steps"), (64, "is longer than 64 steps"),
                         (65, "nests anonymous members deeper than 64")):
        target = BtfBuilder()
        _anonymous_chain(target, depth)
        resolver = CoreResolver(local.btf(), target.target())
        if error is None:
            assert resolver.resolve(lid, "0:1", CoreKind.FIELD_BYTE_OFFSET).new == 4
        else:
            with pytest.raises(CoreError, match=error):
                resolver.resolve(lid, "0:1", CoreKind.FIELD_BYTE_OFFSET)
    shifted = BtfBuilder()
    si = shifted.int_("int", 4)
    inner = shifted.struct("", 8, [("pad", si, 0), ("x", si, 32)])
    shifted.struct("s", 12, [("head", si, 0), ("", inner, 32)])
    assert CoreResolver(local.btf(), shifted.target()).resolve(lid, "0:1", CoreKind.FIELD_BYTE_OFFSET).new == 8


def test_a_root_array_element_must_be_inside_the_target_array() -> None:
    """libbpf: an array index right after the root is checked against the target array too."""
    local, target = BtfBuilder(), BtfBuilder()
    lid = local.ref(BtfKind.TYPEDEF, local.array(local.int_("int", 4), 4), "arr___l")
    target.ref(BtfKind.TYPEDEF, target.array(target.int_("int", 4), 2), "arr")
    resolver = CoreResolver(local.btf(), target.target())
    assert resolver.resolve(lid, "0:1", CoreKind.FIELD_BYTE_OFFSET).new == 4
    assert resolver.resolve(lid, "0:2", CoreKind.FIELD_BYTE_OFFSET).poison is not None


def test_a_bitfield_of_a_type_without_size_is_refused() -> None:
    """A bitfield member whose type has no size field (a pointer) cannot be read as one."""
    b = BtfBuilder()
    sid = b.struct("s", 8, [("p", b.ptr(b.int_("int", 4)), 0, 3)])
    with pytest.raises(CoreError, match="bitfield .p has a type of no size"):
        CoreResolver(b.btf(), b.target()).resolve(sid, "0:0", CoreKind.FIELD_BYTE_OFFSET)


def test_shifts_and_signedness_of_plain_fields() -> None:
    """libbpf (bpf_core_calc_field_relo): a field that is no bitfield is read whole, so its
    shifts are 64 - 8 * size; signed is a signed int's or a signed enum's (kind_flag) only."""
    b = BtfBuilder()
    u32, s8 = b.int_("unsigned int", 4), b.int_("signed char", 1, signed=True)
    signed_enum, plain_enum = b.enum("se", 4, [("A", -1)], signed=True), b.enum("ue", 4, [("B", 1)])
    inner = b.struct("bits", 4, [("x", u32, 0, 3)])  # kind_flag set: it has a bitfield
    sid = b.struct("s", 20, [("u", u32, 0), ("c", s8, 32), ("se", signed_enum, 64), ("ue", plain_enum, 96),
                             ("in", inner, 128)])  # fmt: skip
    resolver = CoreResolver(b.btf(), b.target())

    def values(member: int) -> tuple[int, ...]:
        kinds = (CoreKind.FIELD_LSHIFT_U64, CoreKind.FIELD_RSHIFT_U64, CoreKind.FIELD_SIGNED)
        return tuple(resolver.resolve(sid, f"0:{member}", k).new for k in kinds)

    assert [values(m) for m in range(5)] == [(32, 32, 0), (56, 56, 1), (32, 32, 1), (32, 32, 0), (32, 32, 0)]


def test_a_target_type_id_is_not_validated_and_an_s32_edge_is_negative() -> None:
    """libbpf: a type_id_target relocation is not checked against the instruction; an
    enumerator 0x80000000 of a 4-byte enum is the s32 -2**31, sign-extended."""
    b = BtfBuilder()
    sid = b.struct("s", 4, [("a", b.int_("int", 4), 0)])
    e = b.enum("e", 4, [("EDGE", 0x80000000), ("BELOW", 0x7FFFFFFF)])
    resolver = CoreResolver(b.btf(), b.target())
    target = resolver.resolve(sid, "0", CoreKind.TYPE_ID_TARGET)
    assert (target.new, target.validate) == (sid, False)
    assert resolver.resolve(e, "0", CoreKind.ENUMVAL_VALUE).new == (1 << 64) - (1 << 31)
    assert resolver.resolve(e, "1", CoreKind.ENUMVAL_VALUE).new == 0x7FFFFFFF


def test_an_anonymous_type_cannot_be_relocated_and_a_missing_enumerator_is_named() -> None:
    """libbpf: a relocation of an anonymous local type fails ("anonymous type"); an
    enumerator the target's enum lacks poisons the relocation, the finding naming it."""
    local, target = BtfBuilder(), BtfBuilder()
    anon = local.struct("", 4, [("a", local.int_("int", 4), 0)])
    e = local.enum("e___x", 4, [("GONE", 0)])
    tid = target.enum("e", 4, [("OTHER", 0)])
    resolver = CoreResolver(local.btf(), target.target())
    with pytest.raises(CoreError, match="field_byte_offset of struct \\(anon\\): CO-RE cannot relocate an anonymous type"):
        resolver.resolve(anon, "0:0", CoreKind.FIELD_BYTE_OFFSET)
    assert resolver.resolve(e, "0", CoreKind.ENUMVAL_VALUE).poison == (
        f"enumerator GONE of enum e___x is in none of target's enum e [{tid}]")
