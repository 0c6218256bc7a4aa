"""The BTF reader at the edges a wrong bound would get past: an INT wider than its size, a
CO-RE record naming void or a type past the last one. The mutants these tests were written to
kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

import struct

import pytest
from btf_builder import BtfBuilder
from evspec.loader.object.btf import Btf, BtfError, BtfExt


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
        assert (relo.type_id, relo.access) == (type_id, "0:0")
    else:
        with pytest.raises(BtfError, match=f"names type {type_id}, which does not exist"):
            BtfExt(ext, btf).core_relos("tp/x")
