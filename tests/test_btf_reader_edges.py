"""The BTF reader at the edges a wrong bound would get past: an INT wider than its size, a
CO-RE record naming void or a type past the last one; its numbers against the kernel's header,
and every kind with items written and read back. The mutants these tests were written to
kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
from btf_builder import BtfBuilder
from evspec.loader.btf import reader as btf_module
from evspec.loader.btf.reader import (
    INT_BOOL,
    INT_CHAR,
    INT_SIGNED,
    Btf,
    BtfError,
    BtfExt,
    BtfKind,
    RawType,
    find_record_type,
    type_info,
)


@pytest.mark.parametrize(("size", "bits", "ok"), [(4, 32, True), (4, 33, False), (16, 128, True), (32, 129, False)])
def test_an_int_wider_than_its_size_or_128_bits_is_corrupt(size: int, bits: int, ok: bool) -> None:
    """The kernel (btf_int_check_meta) refuses an INT of more than 128 bits or more bits than
    its size holds; the reader says which type it is."""
    b = BtfBuilder()
    tid = b.int_("wide", size, bits=bits)
    if ok:
        assert Btf(b.blob()).type(tid).int_bits == bits
    else:
        with pytest.raises(BtfError, match=f"BTF INT 1 has {bits} bits in {size} bytes"):
            Btf(b.blob()).type(tid)


def _ext_with_core_relo(b: BtfBuilder, type_id: int) -> bytes:
    """A .BTF.ext with no func or line info and one core_relo record in section tp/x."""
    func, line = struct.pack("<I", 8), struct.pack("<I", 16)
    relo = struct.pack("<III", 16, b.name("tp/x"), 1) + struct.pack("<IIII", 0, type_id, b.name("0:0"), 0)
    body = func + line + relo
    header = struct.pack("<HBBIIIIIII", 0xEB9F, 1, 0, 32, 0, len(func), len(func), len(line),
                         len(func) + len(line), len(relo))  # fmt: skip
    return header + body


@pytest.mark.parametrize(("type_id", "ok"), [(0, False), (1, True), (2, True), (3, False)])
def test_a_core_relo_names_an_existing_type_other_than_void(type_id: int, ok: bool) -> None:
    """libbpf refuses a CO-RE record whose type is void (no name to look for) or past the last
    type; the reader refuses it naming the type id."""
    b = BtfBuilder()
    b.struct("s", 4, [("a", b.int_("int", 4), 0)])
    ext = _ext_with_core_relo(b, type_id)
    btf = Btf(b.blob())
    if ok:
        [relo] = BtfExt(ext, btf).core_relos("tp/x")
        assert (relo.type_id, relo.access, relo.access_off) == (type_id, "0:0", b.name("0:0"))
    else:
        with pytest.raises(BtfError, match=f"names type {type_id}, which does not exist"):
            BtfExt(ext, btf).core_relos("tp/x")


def test_the_kinds_and_int_encodings_are_the_kernels() -> None:
    """BtfKind's numbers and the INT encoding bits against the kernel's UAPI header
    (/usr/include/linux/btf.h, from linux-libc-dev, which the test setup installs)."""
    header = Path("/usr/include/linux/btf.h")
    if not header.is_file():
        pytest.fail(f"{header} is missing (apt-get install linux-libc-dev)")
    text = header.read_text()
    kinds = {name: int(n) for name, n in re.findall(r"^\s*BTF_KIND_(\w+)\s*=\s*(\d+),", text, re.M)}
    assert {k.name: k.value for k in BtfKind} == {name: n for name, n in kinds.items() if name in BtfKind.__members__}
    assert set(BtfKind.__members__) == set(kinds) - {"MAX"}
    bits = {name: 1 << int(n) for name, n in re.findall(r"^#define BTF_INT_(\w+)\s+\(1 << (\d+)\)", text, re.M)}
    assert bits == {"SIGNED": INT_SIGNED, "CHAR": INT_CHAR, "BOOL": INT_BOOL}


@pytest.mark.parametrize("order", ["<", ">"])
def test_enum64_and_every_kind_with_items_write_and_read_back(order: str) -> None:
    """Every kind with items (struct, union, enum, enum64, prototypes) and fixed extra bytes
    (int, array) written by write_btf and read back alike, in either byte order."""
    b = BtfBuilder(order)
    i = b.int_("int", 4, signed=True)
    e64 = b.enum64("big", [("A", 1 << 40), ("B", -5)], signed=True)
    e32 = b.enum("small", 4, [("C", 7)])
    arr = b.array(i, 3)
    s = b.struct("s", 16, [("x", i, 0), ("y", arr, 32)])
    u = b.struct("u", 4, [("x", i, 0)], union=True)
    proto = b.func_proto(i, [i, s])
    btf = Btf(b.blob())
    assert btf.byte_order == order
    assert [(x.name, x.value) for x in btf.type(e64).enumerators] == [("A", 1 << 40), ("B", -5)]
    assert [(x.name, x.value) for x in btf.type(e32).enumerators] == [("C", 7)]
    assert btf.type(arr).array is not None and btf.type(arr).array.nelems == 3
    assert [(m.name, m.type, m.bit_offset) for m in btf.type(s).members] == [("x", i, 0), ("y", arr, 32)]
    assert btf.type(u).members[0].name == "x" and [p.type for p in btf.type(proto).params] == [i, s]
    assert btf.type(i).int_encoding == INT_SIGNED and btf.size_of(s) == 16


def test_linkages_are_the_kernels() -> None:
    """FUNC and VAR linkage numbers against the kernel's UAPI header."""
    text = Path("/usr/include/linux/btf.h").read_text()
    found = {name: int(n) for name, n in re.findall(r"^\s*BTF_((?:VAR|FUNC)_\w+)\s*=\s*(\d+),", text, re.M)}
    assert {k: found[k] for k in ("VAR_STATIC", "VAR_GLOBAL_ALLOCATED", "VAR_GLOBAL_EXTERN", "FUNC_STATIC",
                                  "FUNC_GLOBAL")} == {
        "VAR_STATIC": btf_module.VAR_STATIC, "VAR_GLOBAL_ALLOCATED": btf_module.VAR_GLOBAL_ALLOCATED,
        "VAR_GLOBAL_EXTERN": btf_module.VAR_GLOBAL_EXTERN, "FUNC_STATIC": btf_module.FUNC_STATIC,
        "FUNC_GLOBAL": btf_module.FUNC_GLOBAL}  # fmt: skip


def test_a_decoded_type_has_only_the_fields_of_its_kind() -> None:
    """A pointer has its type and no size; a struct its size and no type; a non-int has no
    encoding, offset or bits; a non-function has linkage 0 (static); a non-tag the component
    index -1."""
    b = BtfBuilder()
    i = b.int_("int", 4)
    ptr, s = b.ptr(i), b.struct("s", 4, [("a", i, 0)])
    btf = Btf(b.blob())
    assert (btf.type(ptr).size, btf.type(ptr).type, btf.type(ptr).linkage) == (0, i, 0)
    assert (btf.type(s).size, btf.type(s).type, btf.type(s).component_idx) == (4, 0, -1)
    assert (btf.type(s).int_encoding, btf.type(s).int_offset, btf.type(s).int_bits) == (0, 0, 0)


def test_short_and_misaligned_blobs_are_named_for_what_they_miss() -> None:
    """Under two bytes there is no magic; two bytes of magic lack the header; a type section at
    offset 4 is aligned (read), at offset 2 it is not."""
    with pytest.raises(BtfError, match="too short for its magic number \\(1 bytes\\)"):
        Btf(b"\x9f")
    with pytest.raises(BtfError, match="BTF is truncated: 2 bytes, the header alone needs 24"):
        Btf(b"\x9f\xeb")
    b = BtfBuilder()
    b.int_("int", 4)
    blob = b.blob()
    header, body = blob[:24], blob[24:]
    _magic, _v, _f, _hl, _type_off, type_len, str_off, str_len = struct.unpack("<HBBIIIII", header)
    for pad, ok in ((4, True), (2, False)):
        moved = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, pad, type_len, str_off + pad, str_len)
        data = moved + bytes(pad) + body
        if ok:
            assert Btf(data).type(1).name == "int"
        else:
            with pytest.raises(BtfError, match="not 4-byte aligned \\(offset 2\\)"):
                Btf(data)


def test_a_split_type_named_past_the_strings_is_refused() -> None:
    """A split BTF's names are offsets into its base's strings and then its own: a name at the
    first offset past both (or later) means the blob was split from another base."""
    base = BtfBuilder()
    base.int_("int", 4)
    base_btf = Btf(base.blob())
    end = len(base_btf.string_section())
    own = b"a\0"
    for name_off, ok in ((end, True), (end + len(own), False)):
        types = [RawType(end, type_info(BtfKind.INT), 4, struct.pack("<I", 32)),
                 RawType(name_off, type_info(BtfKind.PTR), 1)]  # fmt: skip
        body = b"".join(t.encode("<") for t in types)
        blob = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(body), len(body), len(own)) + body + own
        if ok:
            assert Btf(blob, base=base_btf).type(3).name == "a"
        else:
            with pytest.raises(BtfError, match=f"named at string offset {name_off}, past the"):
                Btf(blob, base=base_btf)


def test_a_stored_index_is_used_only_where_it_fits_the_blob() -> None:
    """``Btf(data, starts=...)`` (the name index kept in the user's cache) is checked against the
    data: void's placeholder and the first record at 0, the last record ending with the type
    section (its items counted); anything else is refused, not trusted."""
    b = BtfBuilder()
    i = b.int_("int", 4)
    b.struct("s", 8, [("a", i, 0), ("b", i, 32)])
    blob = b.blob()
    good = list(Btf(blob).starts)
    assert good == [0, 0, 4]
    assert Btf(blob, starts=good).type(2).members[1].name == "b"
    for bad in ([], [1, 0, 4], [0, 1, 4], [0, 0, 3], [0, 0, 5], [0, 0]):
        with pytest.raises(BtfError, match="the given index of the BTF type records"):
            Btf(blob, starts=bad)
    single = BtfBuilder()
    single.int_("int", 4)
    assert Btf(single.blob(), starts=[0, 0]).type(1).name == "int"


def test_ids_are_found_by_many_name_offsets_as_by_few() -> None:
    """ids_named_at searches the name-offset table directly for up to 16 offsets and through a
    table by offset for more: both give the ids in id order."""
    b = BtfBuilder()
    i = b.int_("int", 4)
    names = [f"t{n}" for n in range(20)]
    ids = [b.ref(BtfKind.TYPEDEF, i, name) for name in names]
    btf = Btf(b.blob())
    offsets = [b.name(name) for name in names]
    assert btf.ids_named_at(offsets[:3]) == ids[:3]
    assert btf.ids_named_at(offsets) == ids
    assert btf.ids_named_at([*offsets, 0]) == ids


def test_kind_flag_is_the_info_words_top_bit() -> None:
    info = type_info(BtfKind.STRUCT, 2, True)
    assert info == 0x84000002
    raw = RawType(0, info, 8)
    assert (raw.kind, raw.vlen, raw.kind_flag) == (BtfKind.STRUCT, 2, True)
    assert RawType(0, type_info(BtfKind.FWD), 0).kind_flag is False


def test_a_record_type_is_a_struct_then_a_union_then_a_typedef() -> None:
    b = BtfBuilder()
    i = b.int_("int", 4)
    b.ref(BtfKind.TYPEDEF, i, "event")
    b.struct("event", 4, [("x", i, 0)], union=True)
    struct_ = b.struct("event", 4, [("x", i, 0)])
    b.ref(BtfKind.TYPEDEF, i, "value")
    union = b.struct("value", 4, [("x", i, 0)], union=True)
    only_typedef = b.ref(BtfKind.TYPEDEF, i, "alias")
    btf = Btf(b.blob())
    assert find_record_type(btf, "event").id == struct_  # type: ignore[union-attr]
    assert find_record_type(btf, "value").id == union  # type: ignore[union-attr]
    assert find_record_type(btf, "alias").id == only_typedef  # type: ignore[union-attr]
    assert find_record_type(btf, "nothing") is None


def test_a_half_right_magic_and_type_zero_are_refused() -> None:
    """Both magic bytes must match one byte order; void (type 0) has no record to read."""
    b = BtfBuilder()
    b.int_("int", 4)
    blob = b.blob()
    with pytest.raises(BtfError, match="bad magic number 0x9f00"):
        Btf(b"\x9f\x00" + blob[2:])
    with pytest.raises(BtfError, match="BTF type id 0 is out of range"):
        Btf(blob).raw_type(0)


@pytest.mark.parametrize("order", ["<", ">"])
def test_a_blobs_own_index_is_accepted_back_in_either_byte_order(order: str) -> None:
    """The index a Btf made (by the fast path in the host's order, the checked one otherwise)
    starts with void's placeholder 0 and is taken back; a blob without types has [0]."""
    b = BtfBuilder(order)
    i = b.int_("int", 4)
    b.struct("s", 4, [("a", i, 0)])
    blob = b.blob()
    starts = list(Btf(blob).starts)
    assert starts == [0, 0, 4]
    assert Btf(blob, starts=starts).type(2).name == "s"
    empty = BtfBuilder(order).blob()
    assert list(Btf(empty).starts) == [0] and len(Btf(empty, starts=[0])) == 1


def test_a_string_offset_at_the_end_of_the_strings_is_outside() -> None:
    b = BtfBuilder()
    b.int_("int", 4)
    btf = Btf(b.blob())
    end = len(btf.string_section())
    assert btf.raw_string(end - 4) == b"int" and btf.string(end - 4) == "int"
    for read in (btf.raw_string, btf.string):
        with pytest.raises(BtfError, match=f"BTF string offset {end} is outside the string section"):
            read(end)


def test_relocation_kinds_are_the_kernels() -> None:
    """CORE_RELO_KINDS against enum bpf_core_relo_kind of the kernel's UAPI header."""
    text = Path("/usr/include/linux/bpf.h").read_text()
    kernel = {int(n): name.lower() for name, n in re.findall(r"^\s*BPF_CORE_(\w+)\s*=\s*(\d+),", text, re.M)}
    assert len(kernel) >= 12
    assert {n: btf_module.CORE_RELO_KINDS[n] for n in kernel} == kernel


def test_decoding_and_lookup_edges() -> None:
    """An INT's bit offset and bits, the first type found by name, the size of what holds void,
    a core_relo area past the end of the .BTF.ext."""
    b = BtfBuilder()
    first = b.int_("first", 4, bits=20, offset=3)
    void_alias = b.ref(BtfKind.TYPEDEF, 0, "nothing")
    btf = Btf(b.blob())
    t = btf.type(first)
    assert (t.int_offset, t.int_bits) == (3, 20)
    assert btf.find("first") is not None and btf.find("first").id == first  # type: ignore[union-attr]
    with pytest.raises(BtfError, match=f"BTF type {void_alias} has no size: it is or contains void"):
        btf.size_of(void_alias)
    ext = bytearray(_ext_with_core_relo(b, first))
    struct.pack_into("<I", ext, 24, 1000)  # core_relo_off far past the end
    with pytest.raises(BtfError, match="the BTF.ext core_relo area .* extends past the end"):
        BtfExt(bytes(ext), Btf(b.blob()))


def test_a_header_alone_is_long_enough_and_lacks_its_strings() -> None:
    """24 bytes hold the whole header: what is missing then is the string section."""
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, 0, 0, 0)
    with pytest.raises(BtfError, match="the BTF string section does not start with an empty string"):
        Btf(header)
    with pytest.raises(BtfError, match="BTF is truncated: 23 bytes"):
        Btf(header[:23])
