"""Function symbols and file offsets of probed ELF files: PIE, non-PIE, shared, stripped."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.object.elf_symbols import (
    MAX_PROBE_POINTS,
    ElfSymbols,
    FunctionSymbol,
    LoadSegment,
    read_elf_symbols,
    uprobe_sites,
)

from evspec.codes import kernel as codes

TARGET_C = Path(__file__).parent / "data" / "probes" / "target.c"
IN_CI = os.environ.get("CI") == "true"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """target.c built -O2 -g four ways: PIE, non-PIE, shared library, stripped shared library."""
    cc = shutil.which("cc")
    if cc is None:
        if IN_CI:
            raise RuntimeError("cc is required in CI (building the probed program)")
        pytest.skip("cc not installed")
    out = tmp_path_factory.mktemp("elf")
    for name, flags in (
        ("pie", ["-fPIE", "-pie"]),
        ("nopie", ["-fno-PIE", "-no-pie"]),
        ("lib.so", ["-fPIC", "-shared"]),
        ("obj.o", ["-c"]),
    ):
        subprocess.run([cc, "-O2", "-g", *flags, "-o", str(out / name), str(TARGET_C)], check=True)
    shutil.copy(out / "lib.so", out / "stripped.so")
    subprocess.run(["strip", "--strip-all", str(out / "stripped.so")], check=True)
    return out


def _bytes_by_sections(path: Path, address: int, size: int) -> bytes:
    """The bytes at a virtual address found through the section headers (not the segments)."""
    from elftools.elf.elffile import ELFFile

    with path.open("rb") as f:
        elf = ELFFile(f)
        for section in elf.iter_sections():
            start = section["sh_addr"]
            if section["sh_type"] == "SHT_PROGBITS" and start <= address < start + section["sh_size"]:
                return section.data()[address - start : address - start + size]
    raise AssertionError(f"no section holds {address:#x}")


def _nm(path: Path, name: str, dynamic: bool = False) -> int:
    out = subprocess.run(["nm", *(["-D"] if dynamic else []), str(path)], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    raise AssertionError(f"nm does not list {name}")


def _readelf_file_offset(path: Path, address: int) -> int:
    """The file offset of ``address`` by the PT_LOAD lines of ``readelf -lW`` (binutils)."""
    out = subprocess.run(["readelf", "-lW", str(path)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD":  # Type Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align
            offset, vaddr, filesz = int(parts[1], 16), int(parts[2], 16), int(parts[4], 16)
            if vaddr <= address < vaddr + filesz:
                return address - vaddr + offset
    raise AssertionError(f"readelf shows no LOAD segment of {path} holding {address:#x}")


@pytest.mark.parametrize(("name", "shared", "table"), [
    ("pie", True, ".symtab"), ("nopie", False, ".symtab"), ("lib.so", True, ".symtab"), ("stripped.so", True, ".dynsym"),
])
def test_file_offset_of_each_kind_of_binary(built: Path, name: str, shared: bool, table: str) -> None:
    path = built / name
    symbols = read_elf_symbols(path)
    assert (symbols.shared, symbols.table) == (shared, table)
    (site,) = uprobe_sites(symbols, "probed_mul")
    assert site.address == _nm(path, "probed_mul", dynamic=table == ".dynsym")
    assert site.file_offset == _readelf_file_offset(path, site.address)
    with path.open("rb") as f:
        f.seek(site.file_offset)
        at_offset = f.read(16)
    expected = _bytes_by_sections(path, site.address, 16)  # probed_mul may end .text: fewer bytes
    assert len(expected) >= 4 and at_offset[: len(expected)] == expected


def test_non_pie_addresses_differ_from_file_offsets(built: Path) -> None:
    (site,) = uprobe_sites(read_elf_symbols(built / "nopie"), "probed_add")
    assert site.address >= 0x400000 and site.file_offset < 0x100000


def test_offset_is_added_inside_the_function(built: Path) -> None:
    symbols = read_elf_symbols(built / "pie")
    (plain,) = uprobe_sites(symbols, "probed_add")
    (moved,) = uprobe_sites(symbols, "probed_add", offset=3)
    assert (moved.address, moved.file_offset) == (plain.address + 3, plain.file_offset + 3)
    size = next(f.size for f in symbols.functions if f.name == "probed_add")
    with pytest.raises(ObjectError, match=f"offset {size:#x} is past the end of 'probed_add'") as exc:
        uprobe_sites(symbols, "probed_add", offset=size)
    assert exc.value.code == codes.PROBE_ADDRESS


def test_glob_makes_one_site_per_function_in_address_order(built: Path) -> None:
    sites = uprobe_sites(read_elf_symbols(built / "pie"), "probed_*")
    assert [s.function for s in sites] == ["probed_add", "probed_mul"]
    assert sites[0].address < sites[1].address


def test_names_of_one_address_give_one_site() -> None:
    text = LoadSegment(0x1000, 0x1000, 0x1000, True)
    syms = ElfSymbols("/x", True, ".dynsym", (
        FunctionSymbol("__getpid", 0x1100, 8, "STB_GLOBAL", False),
        FunctionSymbol("getpid", 0x1100, 8, "STB_WEAK", False),
        FunctionSymbol("getppid", 0x1200, 8, "STB_GLOBAL", False),
        FunctionSymbol("getpid_alias", 0x1100, 8, "STB_GLOBAL", False),
    ), (text,))
    # global beats weak, then fewer leading underscores, then the shorter name
    assert [s.function for s in uprobe_sites(syms, "*getp*id*")] == ["getpid_alias", "getppid"]
    assert [s.function for s in uprobe_sites(syms, "getpid")] == ["getpid"]


def test_missing_function_names_binary_and_close_matches(built: Path) -> None:
    path = built / "pie"
    with pytest.raises(ObjectError) as exc:
        uprobe_sites(read_elf_symbols(path), "probed_ad")
    assert exc.value.code == codes.PROBE_FUNCTION
    assert exc.value.message.startswith(f"no function named 'probed_ad' in '{path}' (")
    assert "probed_add" in exc.value.help[0]
    with pytest.raises(ObjectError, match=r"no function matches 'nothing_\*'"):
        uprobe_sites(read_elf_symbols(path), "nothing_*")


def test_bare_address_and_addresses_outside_the_segments(built: Path) -> None:
    symbols = read_elf_symbols(built / "nopie")
    address = _nm(built / "nopie", "main")
    (site,) = uprobe_sites(symbols, None, address=address)
    assert site.function is None and site.address == address
    assert site.file_offset == _readelf_file_offset(built / "nopie", address)
    assert site.file_offset != address  # non-PIE: the offset is not the address itself
    with pytest.raises(ObjectError, match="address 0x10 is not in a loaded segment") as exc:
        uprobe_sites(symbols, None, address=0x10)
    assert exc.value.code == codes.PROBE_ADDRESS


def test_glob_limit_is_perf_probes(tmp_path: Path) -> None:
    funcs = tuple(FunctionSymbol(f"f{i}", 0x1000 + 16 * i, 16, "STB_GLOBAL", False) for i in range(MAX_PROBE_POINTS + 1))
    syms = ElfSymbols("/x", True, ".symtab", funcs, (LoadSegment(0x1000, 0, 0x10000, True),))
    assert len(uprobe_sites(syms, "f1*")) < MAX_PROBE_POINTS
    with pytest.raises(ObjectError, match=f"matches {MAX_PROBE_POINTS + 1} functions") as exc:
        uprobe_sites(syms, "f*")
    assert exc.value.code == codes.PROBE_TOO_MANY


@pytest.mark.parametrize("content", [None, b"not an elf\n", b"\x7fELF\x02\x01\x01" + bytes(9)])
def test_unreadable_targets(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "target"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ObjectError, match=f"uprobe target '{path}'") as exc:
        read_elf_symbols(path)
    assert exc.value.code == codes.PROBE_TARGET


def test_relocatable_object_is_not_a_target(built: Path) -> None:
    with pytest.raises(ObjectError, match="is not an executable or shared library .ELF type ET_REL."):
        read_elf_symbols(built / "obj.o")


def test_ifunc_symbols_are_functions_marked_as_resolvers(built: Path) -> None:
    for name in ("pie", "stripped.so"):
        (site,) = uprobe_sites(read_elf_symbols(built / name), "chosen")
        assert site.ifunc and site.function == "chosen"
    assert not uprobe_sites(read_elf_symbols(built / "pie"), "probed_add")[0].ifunc


@pytest.mark.parametrize("name", ["pie", "nopie", "lib.so"])
def test_data_symbols_have_addresses_but_are_not_probe_points(built: Path, name: str) -> None:
    """``@SYM`` probe arguments read data symbols from the same table; an address in a segment
    that is not executable is refused as a probe point (a uprobe there would never fire)."""
    path = built / name
    symbols = read_elf_symbols(path)
    data = _nm(path, "__dso_handle")  # crtbegin's STT_OBJECT in .data, in every kind of binary
    assert symbols.address_of("__dso_handle") == data
    assert symbols.address_of("probed_add") == _nm(path, "probed_add")
    assert symbols.address_of("no_such_symbol") is None
    with pytest.raises(ObjectError) as exc:
        uprobe_sites(symbols, None, address=data)
    assert exc.value.code == codes.PROBE_ADDRESS
    assert f"address {data:#x} of '{path}' is data, not code" in exc.value.message
