"""Our BTF reader: every kind, sizes and type chains, corrupt blobs, .BTF.ext, and a differential
test against bpftool's raw dump of real objects."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from evspec.loader.btf.reader import (
    INT_BOOL,
    INT_CHAR,
    INT_SIGNED,
    Btf,
    BtfError,
    BtfExt,
    BtfKind,
    BtfType,
)
from evspec.loader.object.clang import arch_include_dir

K = BtfKind


class Builder:
    """Hand-assembles a .BTF blob (and a .BTF.ext one) in the UAPI layout."""

    def __init__(self, order: str = "<") -> None:
        self.order = order
        self.strings = bytearray(b"\0")
        self.records: list[bytes] = []

    def s(self, text: str) -> int:
        if not text:
            return 0
        off = len(self.strings)
        self.strings += text.encode() + b"\0"
        return off

    def add(self, kind: BtfKind, name: str = "", word: int = 0, *, vlen: int = 0, flag: bool = False,
            extra: bytes = b"") -> int:
        info = (int(flag) << 31) | (int(kind) << 24) | vlen
        self.records.append(struct.pack(self.order + "III", self.s(name), info, word) + extra)
        return len(self.records)

    def pack(self, fmt: str, *values: int) -> bytes:
        return struct.pack(self.order + fmt, *values)

    def int_(self, name: str, size: int, bits: int, encoding: int = 0, offset: int = 0) -> int:
        return self.add(K.INT, name, size, extra=self.pack("I", (encoding << 24) | (offset << 16) | bits))

    def blob(self, *, magic: int = 0xEB9F, version: int = 1) -> bytes:
        types = b"".join(self.records)
        header = struct.pack(self.order + "HBBIIIII", magic, version, 0, 24, 0, len(types),
                             len(types), len(self.strings))
        return header + types + bytes(self.strings)


def test_every_kind_decodes() -> None:
    b = Builder()
    i32 = b.int_("int", 4, 32, INT_SIGNED)
    char = b.int_("char", 1, 8, INT_CHAR | INT_SIGNED)
    flag = b.int_("_Bool", 1, 1, INT_BOOL)
    ptr = b.add(K.PTR, word=i32)
    arr = b.add(K.ARRAY, extra=b.pack("III", char, i32, 16))
    st = b.add(K.STRUCT, "pair", 8, vlen=2, extra=b.pack("III", b.s("a"), i32, 0) + b.pack("III", b.s("b"), i32, 32))
    bits = b.add(K.STRUCT, "bits", 4, vlen=1, flag=True, extra=b.pack("III", b.s("x"), i32, (3 << 24) | 5))
    un = b.add(K.UNION, "u", 8, vlen=1, extra=b.pack("III", b.s("p"), ptr, 0))
    en = b.add(K.ENUM, "e", 4, vlen=2, flag=True, extra=b.pack("Ii", b.s("NEG"), -1) + b.pack("Ii", b.s("ONE"), 1))
    uen = b.add(K.ENUM, "ue", 4, vlen=1, extra=b.pack("II", b.s("BIG"), 0xFFFFFFFF))
    fwd = b.add(K.FWD, "later", flag=True)
    td = b.add(K.TYPEDEF, "pair_t", st)
    vol = b.add(K.VOLATILE, word=td)
    const = b.add(K.CONST, word=vol)
    restrict = b.add(K.RESTRICT, word=ptr)
    proto = b.add(K.FUNC_PROTO, word=i32, vlen=2, extra=b.pack("II", b.s("ctx"), ptr) + b.pack("II", 0, i32))
    func = b.add(K.FUNC, "prog", proto, vlen=1)
    var = b.add(K.VAR, "counter", const, extra=b.pack("I", 1))
    sec = b.add(K.DATASEC, ".data", 8, vlen=1, extra=b.pack("III", var, 0, 8))
    flt = b.add(K.FLOAT, "double", 8)
    tag = b.add(K.DECL_TAG, "user", st, extra=b.pack("i", 1))
    ttag = b.add(K.TYPE_TAG, "rcu", ptr)
    e64 = b.add(K.ENUM64, "e64", 8, vlen=1, flag=True, extra=b.pack("III", b.s("M"), 0xFFFFFFFE, 0xFFFFFFFF))
    btf = Btf(b.blob())

    assert len(btf) == e64 + 1
    t = btf.type(i32)
    assert (t.kind, t.name, t.size, t.int_bits, t.int_encoding) == (K.INT, "int", 4, 32, INT_SIGNED)
    assert btf.type(char).int_encoding == INT_CHAR | INT_SIGNED
    assert btf.type(flag).int_encoding == INT_BOOL and btf.type(flag).int_bits == 1
    assert btf.type(ptr).type == i32
    a = btf.type(arr).array
    assert a is not None and (a.type, a.index_type, a.nelems) == (char, i32, 16)
    assert [(m.name, m.type, m.bit_offset) for m in btf.type(st).members] == [("a", i32, 0), ("b", i32, 32)]
    (x,) = btf.type(bits).members
    assert (x.bit_offset, x.bitfield_size) == (5, 3)
    assert btf.type(un).kind == K.UNION and btf.type(un).members[0].type == ptr
    assert [(v.name, v.value) for v in btf.type(en).enumerators] == [("NEG", -1), ("ONE", 1)]
    assert btf.type(uen).enumerators[0].value == 0xFFFFFFFF
    assert btf.type(fwd).kind_flag  # a union forward declaration
    assert btf.type(td).type == st and btf.type(const).type == vol
    assert btf.type(restrict).kind == K.RESTRICT
    p = btf.type(proto)
    assert p.type == i32 and [(q.name, q.type) for q in p.params] == [("ctx", ptr), ("", i32)]
    assert btf.type(func).linkage == 1 and btf.type(func).type == proto
    assert btf.type(var).linkage == 1
    (info,) = btf.type(sec).secinfos
    assert (info.type, info.offset, info.size) == (var, 0, 8)
    assert btf.type(flt).size == 8
    assert btf.type(tag).component_idx == 1 and btf.type(tag).type == st
    assert btf.type(ttag).name == "rcu"
    assert btf.type(e64).enumerators[0].value == -2
    assert btf.type(0).name == "void"
    assert [t.id for t in btf.types()] == list(range(1, len(btf)))


def test_sizes_and_resolution() -> None:
    b = Builder()
    i32 = b.int_("int", 4, 32, INT_SIGNED)
    row = b.add(K.ARRAY, extra=b.pack("III", i32, i32, 4))
    grid = b.add(K.ARRAY, extra=b.pack("III", row, i32, 3))
    st = b.add(K.STRUCT, "s", 24, vlen=0)
    td = b.add(K.TYPEDEF, "s_t", st)
    cst = b.add(K.CONST, word=td)
    ttag = b.add(K.TYPE_TAG, "tag", cst)
    ptr = b.add(K.PTR, word=ttag)
    var = b.add(K.VAR, "v", grid, extra=b.pack("I", 1))
    proto = b.add(K.FUNC_PROTO, word=i32)
    fwd = b.add(K.FWD, "opaque")
    btf = Btf(b.blob())
    assert btf.size_of(grid) == 48
    assert btf.size_of(ttag) == 24 and btf.resolve(ttag).id == st
    assert btf.size_of(ptr) == 8 and btf.resolve(ptr).id == ptr
    assert btf.size_of(var) == 48
    for no_size in (0, proto, fwd):
        with pytest.raises(BtfError, match="has no size"):
            btf.size_of(no_size)
    assert btf.find("s_t") == btf.type(td)
    assert btf.find("s", K.STRUCT) == btf.type(st)
    assert btf.find("s", K.UNION) is None and btf.find("nothing") is None


def test_big_endian_blob() -> None:
    b = Builder(">")
    i32 = b.int_("int", 4, 32, INT_SIGNED)
    ptr = b.add(K.PTR, word=i32)
    btf = Btf(b.blob())
    assert btf.type(ptr).type == i32 and btf.size_of(i32) == 4


def _valid() -> bytes:
    b = Builder()
    i32 = b.int_("int", 4, 32, INT_SIGNED)
    b.add(K.PTR, word=i32)
    return b.blob()


@pytest.mark.parametrize(("mutate", "words"), [
    (lambda d: b"\x00\x00" + d[2:], "bad magic number"),
    (lambda d: d[:2] + b"\x02" + d[3:], "unsupported BTF version 2"),
    (lambda d: d[:10], "truncated"),
    (lambda d: d[:4] + struct.pack("<I", 200) + d[8:], "bad BTF header length"),
    (lambda d: d[:12] + struct.pack("<I", 999) + d[16:], "type section"),
    (lambda d: d[:20] + struct.pack("<I", 999) + d[24:], "string section"),
    (lambda d: d[:-1] + b"x", "does not end with a NUL"),
    (lambda d: d[:24 + 28] + b"x" + d[24 + 29:], "does not start with an empty string"),
    (lambda d: d[:24 + 7] + bytes([31]) + d[24 + 8:], "unknown kind 31"),
    (lambda d: d[:12] + struct.pack("<I", 20) + d[16:], "truncated at byte"),
    (lambda d: d[:8] + struct.pack("<I", 2) + d[12:], "not 4-byte aligned"),
])
def test_corrupt_blobs(mutate: Any, words: str) -> None:
    with pytest.raises(BtfError, match=words):
        Btf(mutate(_valid()))


def test_references_out_of_range_fail_when_decoded() -> None:
    b = Builder()
    b.add(K.PTR, word=99)
    b.add(K.ARRAY, extra=b.pack("III", 1, 77, 2))
    b.add(K.STRUCT, "s", 4, vlen=1, extra=b.pack("III", b.s("m"), 55, 0))
    b.add(K.TYPEDEF, "bad_name", 1)
    btf = Btf(b.blob())
    with pytest.raises(BtfError, match="refers to type 99, but the last type id is 4"):
        btf.type(1)
    with pytest.raises(BtfError, match="refers to type 77"):
        btf.type(2)
    with pytest.raises(BtfError, match="refers to type 55"):
        btf.type(3)
    with pytest.raises(BtfError, match="out of range"):
        btf.type(5)
    with pytest.raises(BtfError, match="out of range"):
        btf.type(-1)


def test_bad_strings() -> None:
    b = Builder()
    b.records.append(struct.pack("<III", 5000, int(K.FWD) << 24, 0))
    b.s("x")
    with pytest.raises(BtfError, match="string offset 5000"):
        Btf(b.blob()).type(1)
    b = Builder()
    b.strings += b"\xff\xfe\0"
    b.records.append(struct.pack("<III", 1, int(K.FWD) << 24, 0))
    with pytest.raises(BtfError, match="not valid UTF-8"):
        Btf(b.blob()).type(1)


def test_loops_in_type_chains() -> None:
    b = Builder()
    b.add(K.TYPEDEF, "a", 2)
    b.add(K.CONST, word=3)
    b.add(K.TYPEDEF, "c", 1)
    b.add(K.ARRAY, extra=b.pack("III", 4, 4, 2))  # an array of itself
    b.add(K.PTR, word=1)
    btf = Btf(b.blob())
    for tid in (1, 2, 3):
        with pytest.raises(BtfError, match="loop in the BTF type chain"):
            btf.resolve(tid)
        with pytest.raises(BtfError, match="loop in the BTF type chain"):
            btf.size_of(tid)
    with pytest.raises(BtfError, match="loop"):
        btf.size_of(4)
    assert btf.size_of(5) == 8  # a pointer into a loop still has a size


# -- .BTF.ext --------------------------------------------------------------------------------


def _ext(b: Builder, func: list[tuple[str, list[tuple[int, int]]]],
         lines: list[tuple[str, list[tuple[int, str, str, int, int]]]], *, func_rec: int = 8,
         line_rec: int = 16) -> bytes:
    f = bytearray(struct.pack("<I", func_rec))
    for sec, recs in func:
        f += struct.pack("<II", b.s(sec), len(recs))
        for off, tid in recs:
            f += struct.pack("<II", off, tid) + bytes(func_rec - 8)
    line = bytearray(struct.pack("<I", line_rec))
    for sec, lrecs in lines:
        line += struct.pack("<II", b.s(sec), len(lrecs))
        for off, file, text, ln, col in lrecs:
            line += struct.pack("<IIII", off, b.s(file), b.s(text), (ln << 10) | col) + bytes(line_rec - 16)
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(f), len(f), len(line))
    return header + bytes(f) + bytes(line)


def test_btf_ext_records() -> None:
    b = Builder()
    i32 = b.int_("int", 4, 32, INT_SIGNED)
    proto = b.add(K.FUNC_PROTO, word=i32)
    func = b.add(K.FUNC, "prog", proto, vlen=1)
    ext_bytes = _ext(b, [("tp/x", [(0, func)])],
                     [("tp/x", [(0, "a.c", "int prog(void)", 3, 0), (16, "a.c", "\treturn 1;", 5, 2)])],
                     func_rec=12, line_rec=20)
    btf = Btf(b.blob())
    ext = BtfExt(ext_bytes, btf)
    assert ext.sections == ("tp/x",)
    (fi,) = ext.func_info("tp/x")
    assert (fi.insn_off, fi.type_id) == (0, func)
    lines = ext.line_info("tp/x")
    assert [(r.insn_off, r.file, r.source_line, r.line, r.column) for r in lines] == [
        (0, "a.c", "int prog(void)", 3, 0), (16, "a.c", "\treturn 1;", 5, 2)]
    assert ext.line_info("other") == () and ext.func_info("other") == ()


def test_btf_ext_corruption() -> None:
    b = Builder()
    i32 = b.int_("int", 4, 32, INT_SIGNED)
    good = _ext(b, [("s", [(0, i32)])], [("s", [(0, "f", "l", 1, 1)])])
    btf = Btf(b.blob())
    with pytest.raises(BtfError, match="names type 1, which is no FUNC"):
        BtfExt(good, btf).func_info("s")
    with pytest.raises(BtfError, match="bad magic"):
        BtfExt(b"\0\0" + good[2:], btf)
    with pytest.raises(BtfError, match="truncated"):
        BtfExt(good[:12], btf)
    with pytest.raises(BtfError, match="line_info area"):
        BtfExt(good[:-4], btf)
    small = _ext(b, [], [("s", [(0, "f", "l", 1, 1)])])
    small = small[:24 + 4] + struct.pack("<I", 8) + small[24 + 8:]
    with pytest.raises(BtfError, match="bad BTF.ext line_info record size 8"):
        BtfExt(small, btf)
    many = bytearray(good)
    count_at = 24 + 4 + 4  # func_info: rec_size, sec_name_off, num_info
    many[count_at:count_at + 4] = struct.pack("<I", 1000)
    with pytest.raises(BtfError, match="bad record count 1000"):
        BtfExt(bytes(many), btf)
    twice = _ext(b, [("s", [(0, i32)]), ("s", [(8, i32)])], [])
    with pytest.raises(BtfError, match="listed twice"):
        BtfExt(twice, Btf(b.blob()))


# -- differential: bpftool -------------------------------------------------------------------

_INT_ENC = {0: "(none)", INT_SIGNED: "SIGNED", INT_CHAR: "CHAR", INT_BOOL: "BOOL"}
_LINKAGE = {0: "static", 1: "global", 2: "extern"}


def _as_bpftool(t: BtfType) -> dict[str, Any]:
    """Our type in the shape of `bpftool -j btf dump file X` (raw format)."""
    d: dict[str, Any] = {"id": t.id, "kind": t.kind.name, "name": t.name or "(anon)"}
    k = t.kind
    if k == K.INT:
        d |= {"size": t.size, "bits_offset": t.int_offset, "nr_bits": t.int_bits,
              "encoding": _INT_ENC[t.int_encoding]}
    elif k in (K.PTR, K.TYPEDEF, K.VOLATILE, K.CONST, K.RESTRICT, K.TYPE_TAG):
        d["type_id"] = t.type
    elif k == K.ARRAY:
        assert t.array is not None
        d |= {"type_id": t.array.type, "index_type_id": t.array.index_type, "nr_elems": t.array.nelems}
    elif k in (K.STRUCT, K.UNION):
        members = []
        for m in t.members:
            entry = {"name": m.name or "(anon)", "type_id": m.type, "bits_offset": m.bit_offset}
            if m.bitfield_size:
                entry["bitfield_size"] = m.bitfield_size
            members.append(entry)
        d |= {"size": t.size, "vlen": t.vlen, "members": members}
    elif k in (K.ENUM, K.ENUM64):
        d |= {"encoding": "SIGNED" if t.kind_flag else "UNSIGNED", "size": t.size, "vlen": t.vlen,
              "values": [{"name": v.name, "val": _bpftool_enum_value(t, v.value)} for v in t.enumerators]}
    elif k == K.FWD:
        d["fwd_kind"] = "union" if t.kind_flag else "struct"
    elif k == K.FUNC:
        d |= {"type_id": t.type, "linkage": _LINKAGE[t.linkage]}
    elif k == K.FUNC_PROTO:
        d |= {"ret_type_id": t.type, "vlen": t.vlen,
              "params": [{"name": p.name or "(anon)", "type_id": p.type} for p in t.params]}
    elif k == K.VAR:
        d |= {"type_id": t.type, "linkage": _LINKAGE[t.linkage]}
    elif k == K.DATASEC:
        d |= {"size": t.size, "vlen": t.vlen,
              "vars": [{"type_id": v.type, "offset": v.offset, "size": v.size} for v in t.secinfos]}
    elif k == K.FLOAT:
        d["size"] = t.size
    elif k == K.DECL_TAG:
        d |= {"type_id": t.type, "component_idx": t.component_idx}
    return d


def _bpftool_enum_value(t: BtfType, value: int) -> int:
    """bpftool 7.1 prints a 32-bit unsigned enum value by sign-extending it to 64 bits (clang 14
    writes kind_flag 0 even for negative values); we keep the UAPI meaning, unsigned 32 bits."""
    if t.kind == K.ENUM and not t.kind_flag and value >= 1 << 31:
        return value + (1 << 64) - (1 << 32)
    return value


RICH = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#define __tag(x) __attribute__((btf_decl_tag(x)))
#define __ttag(x) __attribute__((btf_type_tag(x)))
enum color { RED = -1, GREEN = 1, BLUE = 0x7fffffff };
enum flags { F_ONE = 1, F_BIG = 0x80000000u };
struct opaque;
union either { int i; float f; char c[3]; };
struct rich {
	unsigned int a : 3, b : 13;
	enum color col;
	enum flags fl;
	union either u;
	struct opaque *op;
	double d;
	_Bool yes;
	int __ttag("user") *tagged;
	const volatile long cv[2][3];
	struct { short x; } anon;
	int (*fp)(int, char);
} __tag("whole");
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, int);
	__type(value, struct rich);
	__uint(max_entries, 1);
} rich_map SEC(".maps");
static __attribute__((noinline)) int helper(int x __tag("param")) { return x + 1; }
SEC("raw_syscalls:sys_enter")
int prog(void *ctx)
{
	int k = 0;
	struct rich *r = bpf_map_lookup_elem(&rich_map, &k);
	return r ? r->a + helper(r->col) : 0;
}
char _license[] SEC("license") = "GPL";
"""


def test_matches_bpftool(bpf_fixtures: Path, tmp_path: Path) -> None:
    bpftool = shutil.which("bpftool") or next(
        (p for p in ("/usr/sbin/bpftool", "/sbin/bpftool") if os.access(p, os.X_OK)), None)
    if bpftool is None:
        if os.environ.get("CI") == "true":
            pytest.fail("bpftool is required in CI for the differential test (scripts/test.sh installs it)")
        pytest.skip("bpftool not installed (apt-get install bpftool) for the differential test")
    from elftools.elf.elffile import ELFFile

    rich = tmp_path / "rich.c"
    rich.write_text(RICH)
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", f"-I{arch_include_dir() or '/usr/include'}", "-c",
                    str(rich), "-o", str(tmp_path / "rich.o")], check=True)
    objects = [tmp_path / "rich.o", *sorted(bpf_fixtures.glob("*.o"))]
    kinds: set[str] = set()
    compared = 0
    for obj in objects:
        if obj.name in ("notelf.o", "empty.o", "x86.o"):
            continue
        dump = subprocess.run([bpftool, "-j", "btf", "dump", "file", str(obj)], capture_output=True,
                              text=True, check=True)
        expected = json.loads(dump.stdout)["types"]
        with obj.open("rb") as f:
            section = ELFFile(f).get_section_by_name(".BTF")
            assert section is not None
            btf = Btf(section.data())
        ours = [_as_bpftool(t) for t in btf.types()]
        assert ours == expected, obj.name
        kinds |= {t["kind"] for t in expected}
        compared += 1
    assert compared > 20
    assert kinds >= {"INT", "PTR", "ARRAY", "STRUCT", "UNION", "ENUM", "FWD", "TYPEDEF", "VOLATILE",
                     "CONST", "FUNC", "FUNC_PROTO", "VAR", "DATASEC", "FLOAT", "DECL_TAG", "TYPE_TAG"}
