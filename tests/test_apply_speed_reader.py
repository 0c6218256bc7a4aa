"""The struct-based ELF reading of BPF objects (no pyelftools on the record path): the section table
against pyelftools' reading of the same objects, corrupt section tables, and the imports."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.object.elf import SECTION_HEADER_SIZE, BpfElf
from evspec.loader.object.reader import read_object, read_object_bytes

from evspec.codes import bpf as codes


def _objects(folder: Path) -> list[Path]:
    found = sorted(folder.glob("*.o"))
    assert found, f"no objects built in {folder}"
    return found


def test_section_table_matches_pyelftools(bpf_fixtures: Path) -> None:
    from io import BytesIO

    from elftools.elf.elffile import ELFFile

    compared = 0
    for path in _objects(bpf_fixtures):
        data = path.read_bytes()
        try:
            ours = BpfElf(str(path), data).sections
        except ObjectError:
            continue  # fixtures made to be refused (empty, host objects...)
        compared += 1
        elf = ELFFile(BytesIO(data))
        theirs = []
        for index, section in enumerate(elf.iter_sections()):
            h = section.header
            kind = h["sh_type"] if isinstance(h["sh_type"], str) else f"SHT_{h['sh_type']:#x}"
            theirs.append((index, section.name, kind, h["sh_flags"], h["sh_offset"], h["sh_size"],
                           h["sh_link"], h["sh_info"], h["sh_entsize"]))
        assert [(s.index, s.name, s.type, s.flags, s.offset, s.size, s.link, s.info, s.entsize)
                for s in ours] == theirs, path.name
    assert compared >= 10


def _first_progbits(data: bytes) -> int:
    return next(s.index for s in BpfElf("x.o", data).sections if s.type == "SHT_PROGBITS")


def _with_section_header(data: bytes, index: int, field: str, value: int) -> bytes:
    """``data`` with one field of section header ``index`` replaced."""
    shoff = struct.unpack_from("<Q", data, 40)[0]
    offsets = {"name": (0, "<I"), "type": (4, "<I"), "offset": (24, "<Q"), "size": (32, "<Q")}
    at, fmt = offsets[field]
    out = bytearray(data)
    struct.pack_into(fmt, out, shoff + index * SECTION_HEADER_SIZE + at, value)
    return bytes(out)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("name", 1 << 30, "past the section name table"),
        ("size", 1 << 40, "extends past the end of the file"),
    ],
)
def test_corrupt_section_headers_are_object_errors(bpf_fixtures: Path, field: str, value: int, message: str) -> None:
    data = (bpf_fixtures / "stdout1.o").read_bytes()
    with pytest.raises(ObjectError, match=message) as info:
        read_object_bytes(_with_section_header(data, _first_progbits(data), field, value), "bad.o")
    assert info.value.code == codes.CORRUPT_ELF


def test_name_table_that_is_no_string_table(bpf_fixtures: Path) -> None:
    data = (bpf_fixtures / "stdout1.o").read_bytes()
    shstrndx = struct.unpack_from("<H", data, 62)[0]
    with pytest.raises(ObjectError, match="bad section name table"):
        read_object_bytes(_with_section_header(data, shstrndx, "type", 1), "bad.o")


def test_unknown_section_types_keep_their_number(bpf_fixtures: Path) -> None:
    data = (bpf_fixtures / "stdout1.o").read_bytes()
    index = _first_progbits(data)
    elf = BpfElf("x.o", _with_section_header(data, index, "type", 0x60000042))
    assert elf.sections[index].type == "SHT_0x60000042"


def test_reading_an_object_does_not_import_pyelftools(bpf_fixtures: Path, tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from evspec.loader.object.reader import read_object\n"
        f"spec = read_object({str(bpf_fixtures / 'stdout1.o')!r})\n"
        "assert spec.programs and spec.maps\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'elftools'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# the objects of tests/data/corpus/bpf that read_object must refuse: a host object, a text file
# and an empty file; every other *.o there is a BPF object that reads
REFUSED = {"x86.o", "notelf.o", "empty.o"}


def test_objects_read_the_same_through_either_entry(bpf_fixtures: Path) -> None:
    compared = 0
    for path in _objects(bpf_fixtures):
        # read_object_bytes is memoised on (bytes, name), and read_object goes through it: clear the
        # memo before each entry so that each does a read of its own
        read_object_bytes.cache_clear()
        if path.name in REFUSED:
            with pytest.raises(ObjectError):
                read_object(path)
            continue
        from_file = read_object(path)
        read_object_bytes.cache_clear()
        from_bytes = read_object_bytes(bytes(bytearray(path.read_bytes())), str(path))
        assert from_bytes is not from_file, "the second read was served by the memo"
        assert from_bytes == from_file, path.name
        compared += 1
    assert compared >= 28, f"only {compared} objects were compared"  # the 28 BPF objects of the Makefile
