"""The object reader tells corrupt input from its own bugs.

Corrupt bytes end in an ObjectError that names what is wrong and where; an exception that only a
bug raises (AttributeError, KeyError, TypeError, AssertionError ...) is not dressed up as corrupt
input but reaches the CLI, which reports it as an internal error (exit 3). One regression test per
path that a fuzz run found raising something else than an ObjectError on corrupt input.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from bpf_build import build_bpf, build_program, require_tools
from bpf_elf import SHF_ALLOC, SHF_WRITE, SHT_NOBITS, SHT_PROGBITS, bpf_elf
from evspec.loader.btf.reader import MAX_NESTING, Btf, BtfError, BtfKind, RawType, type_info, write_btf
from evspec.loader.errors import ObjectError
from evspec.loader.object import reader
from evspec.loader.object.elf import BpfElf
from evspec.loader.object.elf_symbols import read_elf_symbols
from evspec.loader.object.map_dump import decode_map, decode_type
from evspec.loader.object.reader import read_object_bytes
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec

from evspec.cli import main
from evspec.codes import bpf as codes

EXIT_INTERNAL = 3


LICENSE_ONLY = (("license", SHT_PROGBITS, SHF_ALLOC, b"GPL\0"),)


# -- bugs are not corrupt input ------------------------------------------------------------------


@pytest.mark.parametrize("bug", [AttributeError("'NoneType' object has no attribute 'name'"),
                                 KeyError("channel"), TypeError("unsupported operand"),
                                 AssertionError("unreachable"), ZeroDivisionError("division by zero")])
def test_a_bug_in_the_reader_is_not_reported_as_corrupt_input(monkeypatch: pytest.MonkeyPatch,
                                                               bug: Exception) -> None:
    data = bpf_elf(LICENSE_ONLY)
    assert read_object_bytes(data, "ok.o").license == "GPL"

    def broken(self: object) -> list[MapSpec]:
        raise bug

    monkeypatch.setattr(reader._Reader, "legacy_maps", broken)
    with pytest.raises(type(bug)) as raised:
        read_object_bytes(data, f"bug-{type(bug).__name__}.o")
    assert raised.value is bug


def test_what_unpacking_corrupt_bytes_raises_is_still_corrupt_input(monkeypatch: pytest.MonkeyPatch) -> None:
    def short(self: object) -> list[MapSpec]:
        raise struct.error("unpack_from requires a buffer of at least 16 bytes")

    monkeypatch.setattr(reader._Reader, "legacy_maps", short)
    with pytest.raises(ObjectError) as raised:
        read_object_bytes(bpf_elf(LICENSE_ONLY), "short.o")
    assert raised.value.code == codes.CORRUPT_ELF
    assert raised.value.message == ("short.o: corrupt ELF file (error: unpack_from requires a buffer of "
                                    "at least 16 bytes)")


BROKEN_INSPECT = """
import sys
from evspec.cli import main
from evspec.loader.object import reader

def broken(self):
    raise AttributeError("'NoneType' object has no attribute 'section'")

reader._Reader.legacy_maps = broken
sys.exit(main(["inspect", sys.argv[1]]))
"""


def test_inspect_reports_a_reader_bug_as_an_internal_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.o"
    path.write_bytes(bpf_elf(LICENSE_ONLY))
    assert main(["inspect", str(path)]) == 0
    assert "x.o: license GPL" in capsys.readouterr().out
    proc = subprocess.run([sys.executable, "-c", BROKEN_INSPECT, "x.o"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == EXIT_INTERNAL, proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        "evspec: internal error (AttributeError: 'NoneType' object has no attribute 'section'); this is a bug "
        "in evspec, not a finding about your input")
    assert "corrupt" not in proc.stderr and proc.stdout == ""


# -- the ELF side --------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1 << 32, 1 << 40, (1 << 63) + 1])
def test_a_zero_filled_section_too_large_for_a_map_is_refused(size: int) -> None:
    """Once a map value of 2**32 bytes, which the kernel's 32-bit value_size cannot hold, a
    MemoryError making the zero bytes, or past 2**63 an OverflowError."""
    data = bpf_elf((*LICENSE_ONLY, (".bss", SHT_NOBITS, SHF_ALLOC | SHF_WRITE, size)))
    with pytest.raises(ObjectError) as raised:
        read_object_bytes(data, "big.o")
    assert raised.value.code == codes.CORRUPT_ELF
    assert raised.value.message == (f"big.o: corrupt ELF file: section '.bss' (SHT_NOBITS) is {size} bytes; "
                                    "the zero-filled data of a BPF object becomes a map value, whose size "
                                    "is 32 bits")


def test_a_zero_filled_section_of_a_page_is_read() -> None:
    spec = read_object_bytes(bpf_elf((*LICENSE_ONLY, (".bss", SHT_NOBITS, SHF_ALLOC | SHF_WRITE, 4096))), "bss.o")
    assert [(m.name, m.value_size, m.initial_value) for m in spec.maps] == [("bss.bss", 4096, bytes(4096))]


# -- BTF met by the reader -----------------------------------------------------------------------

KEY_TYPEDEF = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
typedef unsigned int key_t;
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, key_t);
	__type(value, int);
	__uint(max_entries, 4);
} counts SEC(".maps");
SEC("tracepoint/syscalls/sys_enter_getpid")
int prog(void *ctx) { key_t k = 0; return bpf_map_lookup_elem(&counts, &k) != 0; }
char LICENSE[] SEC("license") = "GPL";
"""

HUGE_KCONFIG = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
extern char CONFIG_A[0x80000000] __kconfig;
extern char CONFIG_B[0x80000000] __kconfig;
SEC("tracepoint/syscalls/sys_enter_getpid")
int prog(void *ctx) { return CONFIG_A[0] + CONFIG_B[1]; }
char LICENSE[] SEC("license") = "GPL";
"""


def _built(tmp_path: Path, source: str) -> bytes:
    require_tools("clang")
    (tmp_path / "obj.c").write_text(source)
    return build_bpf(tmp_path, "obj.c", "obj.o").read_bytes()


def _type_word(data: bytes, name: str, kind: BtfKind, word: int) -> tuple[int, int]:
    """Where word ``word`` of the record of BTF type ``name`` is in ``data``, and the type's id."""
    sec = BpfElf("obj.o", data).section(".BTF")
    assert sec is not None
    blob = data[sec.offset:sec.offset + sec.size]
    btf = Btf(blob)
    found = btf.find(name, kind)
    assert found is not None
    hdr_len, type_off = struct.unpack_from("<II", blob, 4)
    return sec.offset + hdr_len + type_off + 4 * btf.starts[found.id] + 4 * word, found.id


def test_a_typedef_loop_in_a_map_definition_is_named(tmp_path: Path) -> None:
    """Loops of typedefs and qualifiers end in a named error, not a RecursionError."""
    data = bytearray(_built(tmp_path, KEY_TYPEDEF))
    at, typedef = _type_word(data, "key_t", BtfKind.TYPEDEF, 2)
    struct.pack_into("<I", data, at, typedef)  # typedef key_t key_t
    with pytest.raises(ObjectError) as raised:
        read_object_bytes(bytes(data), "loop.o")
    assert raised.value.code == codes.CORRUPT_BTF
    assert raised.value.message == (f"loop.o: corrupt BTF: the definition of map 'counts': loop in the BTF "
                                    f"type chain starting at type {typedef}")


def test_kconfig_externs_too_large_for_a_map_value_are_refused(tmp_path: Path) -> None:
    """Once a .kconfig map of 2**32 zero bytes whose value_size the kernel would get cut to 0."""
    with pytest.raises(ObjectError) as raised:
        read_object_bytes(_built(tmp_path, HUGE_KCONFIG), "kconfig.o")
    assert raised.value.code == codes.BAD_MAP
    assert raised.value.message == ("kconfig.o: the kconfig externs need a 4294967296-byte value of the "
                                    ".kconfig map; a map value's size is 32 bits")


# -- map dumps decoded with the object's BTF -----------------------------------------------------

STRINGS = b"\0int\0s\0a\0d\0"
INT, S, A, D = 1, 5, 7, 9  # name offsets
INT_RECORD = RawType(INT, type_info(BtfKind.INT), 4, struct.pack("<I", 32))


def _dump(types: Sequence[RawType], value_type: int, value: bytes) -> object:
    spec = ObjectSpec("t.o", "GPL", None, (), (), btf=write_btf(types, STRINGS))
    m = MapSpec("m", int(MapType.HASH), 4, len(value), 1, key_type_id=1, value_type_id=value_type)
    return decode_map(spec, m, [(bytes(4), value)], 1).entries


def _struct(member_type: int) -> RawType:
    return RawType(S, type_info(BtfKind.STRUCT, 1), 4, struct.pack("<III", A, member_type, 0))


def test_a_struct_that_holds_itself_is_named_not_a_recursion_error() -> None:
    types = [INT_RECORD, _struct(2)]
    with pytest.raises(ObjectError) as raised:
        _dump(types, 2, bytes(4))
    assert raised.value.code == codes.CORRUPT_BTF
    assert raised.value.message == (
        f"t.o: map 'm': its entries cannot be decoded with the object's BTF: BTF type 2 (STRUCT s) is "
        f"nested more than {MAX_NESTING} levels deep in the decoded type: a struct or array that holds itself")
    btf = Btf(write_btf(types, STRINGS))
    with pytest.raises(BtfError, match="nested more than 32 levels"):  # typed output maps decode with it too
        decode_type(btf, btf.type(2), bytes(4))


def test_nesting_up_to_the_limit_decodes() -> None:
    """int[1][1]...: MAX_NESTING arrays around the int."""
    types = [INT_RECORD]
    for level in range(MAX_NESTING):
        types.append(RawType(0, type_info(BtfKind.ARRAY), 0, struct.pack("<III", level + 1, 1, 1)))
    value: object = 7
    for _ in range(MAX_NESTING):
        value = [value]
    assert _dump(types, MAX_NESTING + 1, struct.pack("<i", 7)) == ((0, value),)


def test_an_array_larger_than_its_bytes_is_named() -> None:
    """Once a list of 2**32 elements (an array of 0-sized ones: as many empty structs)."""
    types = [INT_RECORD, RawType(0, type_info(BtfKind.ARRAY), 0, struct.pack("<III", 1, 1, 1000))]
    with pytest.raises(ObjectError) as raised:
        _dump(types, 2, bytes(8))
    assert raised.value.message == ("t.o: map 'm': its entries cannot be decoded with the object's BTF: BTF "
                                    "array type 2 has 1000 elements of 4 bytes, more than the 8 bytes that "
                                    "hold it")


def test_a_member_of_a_type_that_does_not_exist_is_named() -> None:
    """Once a BtfError that escaped ``record --dump-maps`` as an internal error."""
    with pytest.raises(ObjectError) as raised:
        _dump([INT_RECORD, _struct(99)], 2, bytes(4))
    assert raised.value.message == ("t.o: map 'm': its entries cannot be decoded with the object's BTF: BTF "
                                    "type 2 refers to type 99, but the last type id is 2")


def test_a_float_wider_than_its_bytes_is_shown_in_hex() -> None:
    """Once a struct.error: a DATASEC variable of a float type whose secinfo gives fewer bytes."""
    double = RawType(D, type_info(BtfKind.FLOAT), 8)
    assert _dump([INT_RECORD, double], 2, b"\x01\x02\x03\x04") == ((0, "01 02 03 04"),)
    assert _dump([INT_RECORD, double], 2, struct.pack("<d", 1.5)) == ((0, 1.5),)


# -- uprobe targets ------------------------------------------------------------------------------

WORKLOAD = "int g = 3; int f(int x) { return x + g; } int main(void) { return f(1); }\n"


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    require_tools("cc")
    out = tmp_path_factory.mktemp("elf_symbols")
    (out / "w.c").write_text(WORKLOAD)
    return build_program(out, "w.c", "w").read_bytes()


def _sections(data: bytes) -> dict[str, tuple[int, tuple[int, ...]]]:
    """Section name -> (where its header is, the header's fields)."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3C)
    headers = [(shoff + 64 * i, struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * i)) for i in range(shnum)]
    names_at = headers[shstrndx][1][4]
    return {data[names_at + h[0]:data.index(b"\0", names_at + h[0])].decode(): (at, h) for at, h in headers}


def _uprobe_target_error(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "w"
    path.write_bytes(data)
    with pytest.raises(ObjectError) as raised:
        read_elf_symbols(path)
    return raised.value.message.replace(str(path), "W")


def test_a_symbol_named_past_its_string_table_is_named(workload: bytes, tmp_path: Path) -> None:
    """Once "is not an ELF file (subsection not found)", a ValueError of bytes.index."""
    sections = _sections(workload)
    symtab, strtab = sections[".symtab"][1], sections[".strtab"][1]
    index = next(i for i in range(symtab[5] // 24)
                 if workload[symtab[4] + 24 * i + 4] & 0xF == 2 and struct.unpack_from(
                     "<H", workload, symtab[4] + 24 * i + 6)[0])  # a defined FUNC
    bad = bytearray(workload)
    struct.pack_into("<I", bad, symtab[4] + 24 * index, strtab[5] + 10)
    assert _uprobe_target_error(tmp_path, bytes(bad)) == (
        f"uprobe target 'W' is a corrupt ELF file: symbol {index} of .symtab is named at offset "
        f"{strtab[5] + 10}, past the end of its string table '.strtab' ({strtab[5]} bytes)")


def test_a_string_table_past_the_end_of_the_file_is_named(workload: bytes, tmp_path: Path) -> None:
    """Once a MemoryError reading 2**40 bytes."""
    at, strtab = _sections(workload)[".strtab"]
    bad = bytearray(workload)
    struct.pack_into("<Q", bad, at + 32, 1 << 40)
    assert _uprobe_target_error(tmp_path, bytes(bad)) == (
        f"uprobe target 'W' is a corrupt ELF file: section '.strtab' ({1 << 40} bytes at offset {strtab[4]}) "
        f"extends past the end of the file ({len(workload)} bytes)")


def test_a_program_header_table_past_the_end_of_the_file_is_named(workload: bytes, tmp_path: Path) -> None:
    """Once an OSError "Invalid argument" of a seek, shown as 'cannot read' the file."""
    phnum, = struct.unpack_from("<H", workload, 0x38)
    bad = bytearray(workload)
    struct.pack_into("<Q", bad, 0x20, 1 << 62)
    assert _uprobe_target_error(tmp_path, bytes(bad)) == (
        f"uprobe target 'W' is a corrupt ELF file: its program header table ({phnum} entries of 56 bytes at "
        f"offset {1 << 62}) does not fit the file ({len(workload)} bytes, 56 a header)")


def test_the_load_segments_are_read_from_the_program_headers(workload: bytes, tmp_path: Path) -> None:
    from elftools.elf.elffile import ELFFile

    path = tmp_path / "w"
    path.write_bytes(workload)
    with open(path, "rb") as f:
        expected = [(s["p_vaddr"], s["p_offset"], s["p_filesz"], bool(s["p_flags"] & 1))
                    for s in ELFFile(f).iter_segments() if s["p_type"] == "PT_LOAD"]
    got = [(s.vaddr, s.offset, s.filesz, s.executable) for s in read_elf_symbols(path).segments]
    assert got == expected and any(executable for *_, executable in got)
