"""Malformed objects: each ends in an ObjectError with its own code and a clear message."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.object.clang import arch_include_dir
from evspec.loader.object.reader import read_object, read_object_bytes

INC = f"-I{arch_include_dir() or '/usr/include'}"  # asm/types.h, as compile_source adds it


@pytest.fixture(scope="module")
def clang() -> str:
    found = shutil.which("clang")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("clang is required in CI")
        pytest.skip("clang not installed")
    return found


def _compile(clang: str, tmp: Path, name: str, source: str, *flags: str) -> Path:
    src = tmp / f"{name}.c"
    src.write_text(source)
    obj = tmp / f"{name}.o"
    subprocess.run([clang, "-target", "bpf", "-O2", INC, *flags, "-c", str(src), "-o", str(obj)],
                   check=True, capture_output=True)
    return obj


def _error(data: bytes, path: str = "x.o") -> ObjectError:
    with pytest.raises(ObjectError) as info:
        read_object_bytes(data, path)
    return info.value


class Elf:
    """Byte-level access to a little-endian ELF64 object for targeted corruption."""

    def __init__(self, data: bytes) -> None:
        self.data = bytearray(data)
        self.shoff = struct.unpack_from("<Q", self.data, 40)[0]
        self.shnum, self.shstrndx = struct.unpack_from("<HH", self.data, 60)

    def header(self, index: int) -> tuple[int, int, int, int, int, int]:
        """(name offset, type, offset, size, link, info) of section ``index``."""
        base = self.shoff + 64 * index
        name, sh_type = struct.unpack_from("<II", self.data, base)
        offset, size, link, info = struct.unpack_from("<QQII", self.data, base + 24)
        return name, sh_type, offset, size, link, info

    def name(self, index: int) -> str:
        strtab = self.header(self.shstrndx)[2]
        start = strtab + self.header(index)[0]
        return self.data[start:self.data.index(b"\0", start)].decode()

    def find(self, name: str) -> int:
        return next(i for i in range(self.shnum) if self.name(i) == name)

    def body(self, name: str) -> tuple[int, int]:
        _n, _t, offset, size, _l, _i = self.header(self.find(name))
        return offset, size

    def set_header(self, index: int, field_offset: int, fmt: str, value: int) -> None:
        struct.pack_into(fmt, self.data, self.shoff + 64 * index + field_offset, value)

    def symbol_index(self, name: str) -> int:
        symtab_off, symtab_size = self.body(".symtab")
        strtab_off = self.header(self.header(self.find(".symtab"))[4])[2]
        for i in range(symtab_size // 24):
            st_name = struct.unpack_from("<I", self.data, symtab_off + 24 * i)[0]
            start = strtab_off + st_name
            if self.data[start:self.data.index(b"\0", start)] == name.encode():
                return i
        raise KeyError(name)

    def bytes(self) -> bytes:
        return bytes(self.data)


# -- the file as a whole ---------------------------------------------------------------------


def test_truncated_at_every_sixteenth(bpf_fixtures: Path) -> None:
    data = (bpf_fixtures / "maps.o").read_bytes()
    codes = []
    for k in range(16):
        cut = data[:len(data) * k // 16]
        err = _error(cut)
        codes.append(err.code)
        assert err.message.startswith("x.o: ")
    assert codes[0] == "EB002"  # nothing left
    assert set(codes[1:]) == {"EB005"}  # the section header table sits at the end


def test_truncated_inside_a_section(bpf_fixtures: Path) -> None:
    elf = Elf((bpf_fixtures / "maps.o").read_bytes())
    offset, size = elf.body(".BTF")
    elf.set_header(elf.find(".BTF"), 32, "<Q", len(elf.data) - offset + 100)
    err = _error(elf.bytes())
    assert err.code == "EB005" and "section '.BTF'" in err.message and "past the end" in err.message


@pytest.mark.parametrize(("data", "code", "words"), [
    (b"", "EB002", "the file is empty"),
    (b"#!/bin/sh\necho hello\n", "EB002", "looks like a text file"),
    (b"\x00\x01\x02\x03binary", "EB002", "no ELF magic number"),
    (b"\x7fELF\x02\x01\x01", "EB005", "too short for an ELF header"),
    (b"\x7fELF\x02\x07\x01" + bytes(57), "EB005", "unknown data encoding 7"),
    (b"\x7fELF\x01\x01\x01" + bytes(11) + struct.pack("<H", 247) + bytes(32), "EB003", "32-bit"),
    (b"\x7fELF\x02\x01\x01" + bytes(11) + struct.pack("<H", 183) + bytes(44), "EB003",
     "ELF machine is AArch64"),
    (b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack("<HH", 2, 247) + bytes(44), "EB003",
     "ELF type is EXEC"),
])
def test_not_a_bpf_object(data: bytes, code: str, words: str) -> None:
    err = _error(data)
    assert err.code == code and words in err.message


def test_big_endian_object(clang: str, tmp_path: Path) -> None:
    src = "int prog(void *ctx) __attribute__((section(\"raw_syscalls:sys_enter\"))); " \
          "int prog(void *ctx) { return 0; }\n"
    obj = _compile(clang, tmp_path, "be", src)
    be = tmp_path / "be_real.o"
    subprocess.run([clang, "-target", "bpfeb", "-O2", "-c", str(tmp_path / "be.c"), "-o", str(be)],
                   check=True)
    read_object(obj)  # the little-endian build reads
    with pytest.raises(ObjectError) as info:
        read_object(be)
    assert info.value.code == "EB004"
    assert "big-endian" in info.value.message and "little-endian" in info.value.message
    assert info.value.perf_message == f"Failed to load {be}: Endian mismatch"


@pytest.mark.parametrize(("patch", "words"), [
    (lambda e: struct.pack_into("<Q", e.data, 40, 1 << 40), "section header table"),
    (lambda e: struct.pack_into("<Q", e.data, 40, len(e.data) - 64), "section header table"),
    (lambda e: struct.pack_into("<H", e.data, 60, 0xFFFF), "section header table"),
    (lambda e: struct.pack_into("<H", e.data, 60, 0), "no section header table"),
    (lambda e: struct.pack_into("<H", e.data, 58, 40), "section header size 40"),
    (lambda e: struct.pack_into("<H", e.data, 62, 0x7FF0), "section name table index"),
    (lambda e: struct.pack_into("<H", e.data, 62, e.find(".text")), "bad section name table"),
    (lambda e: e.set_header(e.find(".maps"), 24, "<Q", 1 << 33), "section '.maps'"),
])
def test_corrupt_section_headers(bpf_fixtures: Path, patch: Callable[[Elf], None], words: str) -> None:
    elf = Elf((bpf_fixtures / "maps.o").read_bytes())
    patch(elf)
    err = _error(elf.bytes())
    assert err.code == "EB005" and words in err.message


def test_corrupt_symbol_table(bpf_fixtures: Path) -> None:
    elf = Elf((bpf_fixtures / "maps.o").read_bytes())
    elf.set_header(elf.find(".symtab"), 56, "<Q", 16)  # entry size
    assert "corrupt symbol table" in _error(elf.bytes()).message
    elf = Elf((bpf_fixtures / "maps.o").read_bytes())
    symtab_off, _ = elf.body(".symtab")
    index = elf.symbol_index("on_enter")
    struct.pack_into("<H", elf.data, symtab_off + 24 * index + 6, 500)  # st_shndx
    err = _error(elf.bytes())
    assert err.code == "EB005" and "symbol" in err.message and "section 500" in err.message


def test_function_past_its_section(bpf_fixtures: Path) -> None:
    elf = Elf((bpf_fixtures / "maps.o").read_bytes())
    symtab_off, _ = elf.body(".symtab")
    index = elf.symbol_index("on_enter")
    struct.pack_into("<Q", elf.data, symtab_off + 24 * index + 16, 4096)  # st_size
    err = _error(elf.bytes())
    assert err.code == "EB006" and "'on_enter'" in err.message and "past the end" in err.message
    struct.pack_into("<Q", elf.data, symtab_off + 24 * index + 16, 12)
    assert "whole number of instructions" in _error(elf.bytes()).message


# -- relocations -----------------------------------------------------------------------------


def _rel_patch(bpf_fixtures: Path, offset: int | None = None, sym: int | None = None,
               rtype: int | None = None) -> bytes:
    elf = Elf((bpf_fixtures / "maps.o").read_bytes())
    rel_off, rel_size = elf.body(".relraw_syscalls:sys_enter")
    assert rel_size == 16
    r_offset, r_info = struct.unpack_from("<QQ", elf.data, rel_off)
    new_info = ((r_info >> 32) if sym is None else sym) << 32 | (r_info & 0xFFFFFFFF if rtype is None else rtype)
    struct.pack_into("<QQ", elf.data, rel_off, r_offset if offset is None else offset, new_info)
    return elf.bytes()


def test_bad_relocation_entries(bpf_fixtures: Path) -> None:
    elf = Elf((bpf_fixtures / "maps.o").read_bytes())
    r_offset = struct.unpack_from("<Q", elf.data, elf.body(".relraw_syscalls:sys_enter")[0])[0]
    license_sym = elf.symbol_index("_license")
    cases = [
        (_rel_patch(bpf_fixtures, sym=9999), "symbol index 9999 is out of range"),
        (_rel_patch(bpf_fixtures, sym=0), "symbol index 0 is out of range"),
        (_rel_patch(bpf_fixtures, offset=r_offset + 3), "not at an instruction"),
        (_rel_patch(bpf_fixtures, offset=1 << 20), "not at an instruction"),
        (_rel_patch(bpf_fixtures, offset=0), "neither ld_imm64 nor call"),
        (_rel_patch(bpf_fixtures, rtype=2), "relocation type 2 is not used in BPF code"),
        (_rel_patch(bpf_fixtures, sym=license_sym), "'_license' in section 'license' is neither a map"),
    ]
    for data, words in cases:
        err = _error(data)
        assert err.code == "EB007", words
        assert words in err.message
        assert err.perf_message == "Failed to load x.o: Relocation failed"


def test_relocation_to_no_map(bpf_fixtures: Path) -> None:
    elf = Elf((bpf_fixtures / "maps.o").read_bytes())
    rel_off, _ = elf.body(".relraw_syscalls:sys_enter")
    r_offset = struct.unpack_from("<Q", elf.data, rel_off)[0]
    code_off, _ = elf.body("raw_syscalls:sys_enter")
    struct.pack_into("<i", elf.data, code_off + r_offset + 4, 4)  # ld_imm64 imm: 4 bytes into "arr"
    err = _error(elf.bytes())
    assert err.code == "EB007" and "offset 4 of section '.maps', where no map starts" in err.message


def test_relocation_section_not_linked_to_symtab(bpf_fixtures: Path) -> None:
    elf = Elf((bpf_fixtures / "maps.o").read_bytes())
    elf.set_header(elf.find(".relraw_syscalls:sys_enter"), 40, "<I", elf.find(".text"))
    assert "not linked to the symbol table" in _error(elf.bytes()).message


def test_kconfig_externs_are_read_as_externs(clang: str, tmp_path: Path) -> None:
    obj = _compile(clang, tmp_path, "ext", """
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
extern int LINUX_KERNEL_VERSION __kconfig;
SEC("raw_syscalls:sys_enter")
int prog(void *ctx) { return LINUX_KERNEL_VERSION; }
char _license[] SEC("license") = "GPL";
""", "-g")
    spec = read_object(obj)
    assert [(e.name, e.kind) for e in spec.externs] == [("LINUX_KERNEL_VERSION", "kconfig")]


# -- maps, license, version ------------------------------------------------------------------


@pytest.mark.parametrize(("body", "words"), [
    ("struct bpf_map_def { unsigned int type, key_size, value_size; };\n"
     "struct bpf_map_def SEC(\"maps\") small = { 2, 4, 4 };", "12 bytes, shorter than"),
    ("struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(colour, 3); } m SEC(\".maps\");",
     "unknown field 'colour'"),
    ("struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(key_size, 8); __type(key, int); } m SEC(\".maps\");",
     "key_size 8 conflicts with the size of its key type (4)"),
    ("struct { int type; } m SEC(\".maps\");", "field 'type' must be declared with __uint()"),
    ("struct { __uint(type, 2); int key; } m SEC(\".maps\");", "field 'key' must be a pointer"),
    ("int m SEC(\".maps\");", "its definition is void, not a struct"),  # clang 14 drops the int
])
def test_bad_map_definitions(clang: str, tmp_path: Path, body: str, words: str) -> None:
    src = f"#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n{body}\nchar _license[] SEC(\"license\") = \"GPL\";\n"
    obj = _compile(clang, tmp_path, "m", src, "-g")
    with pytest.raises(ObjectError) as info:
        read_object(obj)
    assert info.value.code == "EB008"
    assert words in info.value.message


def test_btf_maps_need_btf(clang: str, bpf_fixtures: Path, tmp_path: Path) -> None:
    obj = tmp_path / "nog.o"
    subprocess.run([clang, "-target", "bpf", "-O2", INC, "-c", str(bpf_fixtures / "maps.c"), "-o", str(obj)],
                   check=True)
    with pytest.raises(ObjectError) as info:
        read_object(obj)
    assert info.value.code == "EB008" and "compile with -g" in info.value.message


def test_duplicate_map_names(bpf_fixtures: Path) -> None:
    elf = Elf((bpf_fixtures / "legacy_maps.o").read_bytes())
    strtab_off = elf.header(elf.header(elf.find(".symtab"))[4])[2]
    symtab_off, _ = elf.body(".symtab")
    st_name = struct.unpack_from("<I", elf.data, symtab_off + 24 * elf.symbol_index("chan1"))[0]
    elf.data[strtab_off + st_name:strtab_off + st_name + 6] = b"hmap\0\0"
    err = _error(elf.bytes())
    assert err.code == "EB008" and "two maps are named 'hmap'" in err.message


def test_bad_version_and_license(clang: str, tmp_path: Path) -> None:
    obj = _compile(clang, tmp_path, "v", 'long _version __attribute__((section("version"), used)) = 1;\n')
    with pytest.raises(ObjectError) as info:
        read_object(obj)
    assert info.value.code == "EB011" and "8 bytes" in info.value.message
    assert info.value.perf_message == f"Failed to load {obj}: 'version' section incorrect or lost"
    obj = _compile(clang, tmp_path, "l", 'char _l[] __attribute__((section("license"), used)) = "G\\xffL";\n')
    with pytest.raises(ObjectError) as info:
        read_object(obj)
    assert info.value.code == "EB011" and "not ASCII" in info.value.message


# -- BTF -------------------------------------------------------------------------------------


def _btf_types(data: bytearray, start: int) -> dict[str, tuple[int, int, int]]:
    """name -> (record offset, kind, type/size word) for each named type of a .BTF at ``start``."""
    hdr_len, type_off, type_len, str_off = struct.unpack_from("<IIII", data, start + 4)
    extra = {1: (4, 0), 3: (12, 0), 4: (0, 12), 5: (0, 12), 6: (0, 8), 13: (0, 8), 14: (4, 0),
             15: (0, 12), 17: (4, 0), 19: (0, 12)}
    pos, end = start + hdr_len + type_off, start + hdr_len + type_off + type_len
    strings = start + hdr_len + str_off
    out = {}
    while pos < end:
        name_off, info, word = struct.unpack_from("<III", data, pos)
        kind = (info >> 24) & 0x1F
        name = data[strings + name_off:data.index(b"\0", strings + name_off)].decode()
        if name:
            out.setdefault(name, (pos, kind, word))
        fixed, per = extra.get(kind, (0, 0))
        pos += 12 + fixed + per * (info & 0xFFFF)
    return out


def test_corrupt_btf(bpf_fixtures: Path) -> None:
    original = (bpf_fixtures / "maps.o").read_bytes()
    start, size = Elf(original).body(".BTF")

    def patched(fn: Callable[[bytearray], None]) -> ObjectError:
        data = bytearray(original)
        fn(data)
        return _error(bytes(data))

    bad_magic = patched(lambda d: d.__setitem__(slice(start, start + 2), b"\x12\x34"))
    assert bad_magic.code == "EB009" and "bad magic number 0x1234" in bad_magic.message
    truncated = patched(lambda d: struct.pack_into("<I", d, start + 12, size * 2))  # type_len
    assert truncated.code == "EB009" and "type section" in truncated.message
    types = _btf_types(bytearray(original), start)
    u64_at, kind, target = types["__u64"]
    assert kind == 8  # TYPEDEF
    out_of_range = patched(lambda d: struct.pack_into("<I", d, u64_at + 8, 0xFFFF))
    assert out_of_range.code == "EB009" and "refers to type 65535" in out_of_range.message
    # __u64 -> itself: the size of arr64's value type can never be found
    loop = patched(lambda d: _make_typedef_loop(d, start, u64_at))
    assert loop.code == "EB009" and "loop in the BTF type chain" in loop.message


def _make_typedef_loop(data: bytearray, start: int, record: int) -> None:
    """Point the TYPEDEF at ``record`` to its own type id."""
    hdr_len, type_off = struct.unpack_from("<II", data, start + 4)
    extra = {1: (4, 0), 3: (12, 0), 4: (0, 12), 5: (0, 12), 6: (0, 8), 13: (0, 8), 14: (4, 0),
             15: (0, 12), 17: (4, 0), 19: (0, 12)}
    pos, type_id = start + hdr_len + type_off, 1
    while pos != record:
        info = struct.unpack_from("<I", data, pos + 4)[0]
        fixed, per = extra.get((info >> 24) & 0x1F, (0, 0))
        pos += 12 + fixed + per * (info & 0xFFFF)
        type_id += 1
    struct.pack_into("<I", data, record + 8, type_id)


def test_corrupt_btf_ext(bpf_fixtures: Path) -> None:
    data = bytearray((bpf_fixtures / "maps.o").read_bytes())
    start, _size = Elf(bytes(data)).body(".BTF.ext")
    data[start:start + 2] = b"\0\0"
    err = _error(bytes(data))
    assert err.code == "EB010" and "corrupt BTF.ext" in err.message
