"""Symbols of a probed ELF file and where they are in the file, for uprobes and their arguments.

A uprobe is placed at a *file offset* of an executable or shared library. ``read_elf_symbols``
reads the function and data symbols (``.symtab``, else ``.dynsym`` for stripped files) and the
``PT_LOAD`` segments (the one place evspec reads a probed binary's symbols: the uprobe attacher,
the object check and ``@SYM`` probe arguments all use it); ``uprobe_sites`` turns a function name (or a glob, one site per matching function, as
perf-probe makes one probe per match), an optional ``+OFF`` and a virtual address into file
offsets: ``offset = address - p_vaddr + p_offset`` of the segment holding the address, which is
the same rule for position-dependent executables (addresses like 0x401136) and for PIE programs and
shared libraries (addresses from 0). pyelftools is imported when a file is read, not before.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from evspec.loader.errors import ObjectError

from evspec.span import Slotted

if TYPE_CHECKING:
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

from evspec.codes import kernel as codes

MAX_PROBE_POINTS = 128  # perf-probe's default limit of probe points per definition (MAX_PROBES)
_GLOB_CHARS = frozenset("*?[")
_PF_X = 1
_SHN_LORESERVE = 0xFF00  # SHN_ABS, SHN_COMMON ...: not a section of the file


class FunctionSymbol(Slotted):
    name: str
    address: int  # st_value: the virtual address in the file's own address space
    size: int
    binding: str  # STB_GLOBAL, STB_WEAK, STB_LOCAL
    ifunc: bool  # STT_GNU_IFUNC: the symbol is the resolver, not the implementation


class DataSymbol(Slotted):
    name: str
    address: int
    size: int


class LoadSegment(Slotted):
    vaddr: int
    offset: int
    filesz: int
    executable: bool

    def holds(self, address: int) -> bool:
        return self.vaddr <= address < self.vaddr + self.filesz


class UprobeSite(Slotted):
    """One probe point in a file: the function (None for a bare address), its address, the file
    offset the kernel is given."""

    function: str | None
    address: int
    file_offset: int
    ifunc: bool = False


class ElfSymbols(Slotted):
    path: str
    shared: bool  # ET_DYN: a PIE program or a shared library
    table: str  # ".symtab" or ".dynsym"
    functions: tuple[FunctionSymbol, ...]
    segments: tuple[LoadSegment, ...]
    data: tuple[DataSymbol, ...] = ()  # defined STT_OBJECT and STT_NOTYPE symbols

    def address_of(self, name: str) -> int | None:
        """The address of the function or data symbol ``name`` (None: the file defines none)."""
        for sym in (*self.functions, *self.data):
            if sym.name == name:
                return sym.address
        return None

    def lookup(self, pattern: str) -> tuple[FunctionSymbol, ...]:
        """The functions named ``pattern`` (a glob: every match, one per address, sorted by
        address); ObjectError naming the binary, the function and close matches if none."""
        if any(c in _GLOB_CHARS for c in pattern):
            found = _one_per_address(f for f in self.functions if fnmatch.fnmatchcase(f.name, pattern))
        else:
            found = _one_per_address(f for f in self.functions if f.name == pattern)
        if not found:
            raise self._not_found(pattern)
        return found

    def _not_found(self, pattern: str) -> ObjectError:
        names = sorted({f.name for f in self.functions})
        plain = pattern.translate({ord(c): None for c in "*?[]"})
        close = difflib.get_close_matches(plain, names, n=5, cutoff=0.6)
        what = "matches" if any(c in _GLOB_CHARS for c in pattern) else "named"
        return ObjectError(
            codes.PROBE_FUNCTION,
            f"no function {what} '{pattern}' in '{self.path}' ({len(names)} functions in its {self.table})",
            help=(f"close matches: {', '.join(close)}",) if close else ("list them with: nm -D --defined-only "
                                                                         f"{self.path}",),
        )

    def file_offset(self, address: int) -> int:
        """The file offset of a virtual address of code (the PT_LOAD segment holding it decides;
        a uprobe in a segment that is not executable would never fire)."""
        for seg in self.segments:
            if seg.holds(address):
                if not seg.executable:
                    raise ObjectError(
                        codes.PROBE_ADDRESS,
                        f"address {address:#x} of '{self.path}' is data, not code (its segment at "
                        f"{seg.vaddr:#x} is not executable): a uprobe there never fires",
                        help=("probe a function, or an address `objdump -d` shows",),
                    )
                return address - seg.vaddr + seg.offset
        raise ObjectError(
            codes.PROBE_ADDRESS,
            f"address {address:#x} is not in a loaded segment of '{self.path}'",
            help=("probe addresses are virtual addresses as `nm` or `objdump -d` show them",),
        )


def _preference(sym: FunctionSymbol) -> tuple[int, int, int, str]:
    """Which of several names of one address to show: global, few leading '_', short."""
    rank = {"STB_GLOBAL": 0, "STB_WEAK": 1}.get(sym.binding, 2)
    return (rank, len(sym.name) - len(sym.name.lstrip("_")), len(sym.name), sym.name)


def _one_per_address(symbols: Iterable[FunctionSymbol]) -> tuple[FunctionSymbol, ...]:
    best: dict[int, FunctionSymbol] = {}
    for sym in symbols:
        old = best.get(sym.address)
        if old is None or _preference(sym) < _preference(old):
            best[sym.address] = sym
    return tuple(best[a] for a in sorted(best))


def read_elf_symbols(path: str | Path) -> ElfSymbols:
    """Read the function symbols and loadable segments of an executable or shared library."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    name = str(path)
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            if elf["e_type"] not in ("ET_EXEC", "ET_DYN"):
                raise ObjectError(
                    codes.PROBE_TARGET,
                    f"'{name}' is not an executable or shared library (ELF type {elf['e_type']})",
                )
            file_size = os.fstat(f.fileno()).st_size
            segments = _load_segments(f, elf, name, file_size)
            functions: tuple[FunctionSymbol, ...] = ()
            data: tuple[DataSymbol, ...] = ()
            table = ".dynsym"
            for section_name in (".symtab", ".dynsym"):
                section = elf.get_section_by_name(section_name)
                if isinstance(section, SymbolTableSection):
                    functions, data = _symbols(elf, section, name, file_size)
                    table = section_name
                    if functions:
                        break
    except OSError as exc:
        raise ObjectError(codes.PROBE_TARGET, f"cannot read uprobe target '{name}': {exc.strerror or exc}") from None
    except (ELFError, struct.error, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise ObjectError(codes.PROBE_TARGET, f"uprobe target '{name}' is not an ELF file ({exc})") from None
    return ElfSymbols(name, elf["e_type"] == "ET_DYN", table, functions, segments, data)


_PT_LOAD = 1
# Elf64_Phdr / Elf32_Phdr as (layout, index of p_type, p_offset, p_vaddr, p_filesz, p_flags)
_PHDR = {64: ("IIQQQQQQ", (0, 2, 3, 5, 1)), 32: ("IIIIIIII", (0, 1, 2, 4, 6))}


def _load_segments(f: BinaryIO, elf: ELFFile, path: str, file_size: int) -> tuple[LoadSegment, ...]:
    """The PT_LOAD segments, from the program headers unpacked here (pyelftools makes an object of
    every segment, parsing a PT_DYNAMIC one's string table, which a corrupt file sends anywhere)."""
    phoff, phentsize, count = elf["e_phoff"], elf["e_phentsize"], elf.num_segments()
    layout, fields = _PHDR[elf.elfclass]
    header = struct.Struct(("<" if elf.little_endian else ">") + layout)
    if count and (phentsize < header.size or phoff + count * phentsize > file_size):
        raise ObjectError(codes.PROBE_TARGET, f"uprobe target '{path}' is a corrupt ELF file: its program "
                          f"header table ({count} entries of {phentsize} bytes at offset {phoff}) does not "
                          f"fit the file ({file_size} bytes, {header.size} a header)")
    f.seek(phoff)
    table = f.read(count * phentsize)
    out = []
    for i in range(count):
        p_type, offset, vaddr, filesz, flags = (header.unpack_from(table, i * phentsize)[k] for k in fields)
        if p_type == _PT_LOAD:
            out.append(LoadSegment(vaddr, offset, filesz, bool(flags & _PF_X)))
    return tuple(out)


_STT_NOTYPE = 0
_STT_OBJECT = 1
_STT_FUNC = 2
_STT_GNU_IFUNC = 10
_BINDINGS = {0: "STB_LOCAL", 1: "STB_GLOBAL", 2: "STB_WEAK"}


def _symbols(elf: ELFFile, section: SymbolTableSection, path: str, file_size: int
             ) -> tuple[tuple[FunctionSymbol, ...], tuple[DataSymbol, ...]]:
    """The defined function and data symbols of a symbol table, unpacked in one pass (pyelftools'
    per-symbol objects take ~0.2 s for the C library's 3,000 symbols; this takes a tenth of that)."""
    order = "<" if elf.little_endian else ">"
    if elf.elfclass == 64:  # Elf64_Sym: name, info, other, shndx, value, size
        layout, fields = struct.Struct(order + "IBBHQQ"), (0, 1, 3, 4, 5)
    else:  # Elf32_Sym: name, value, size, info, other, shndx
        layout, fields = struct.Struct(order + "IIIBBH"), (0, 3, 5, 1, 2)
    string_section = elf.get_section(section["sh_link"])
    for table in (section, string_section):  # each read whole: pyelftools would allocate a size past the file
        if table["sh_offset"] + table["sh_size"] > file_size:
            raise ObjectError(codes.PROBE_TARGET, f"uprobe target '{path}' is a corrupt ELF file: section "
                              f"{table.name!r} ({table['sh_size']} bytes at offset {table['sh_offset']}) "
                              f"extends past the end of the file ({file_size} bytes)")
    strings = string_section.data()
    data = section.data()
    functions: list[FunctionSymbol] = []
    objects: list[DataSymbol] = []
    for index, raw in enumerate(layout.iter_unpack(data[: len(data) - len(data) % layout.size])):
        name_at, info, shndx, value, size = (raw[i] for i in fields)
        kind = info & 0xF
        if shndx == 0 or shndx >= _SHN_LORESERVE or not value or not name_at:
            continue  # undefined, absolute or common: no address in this file
        if kind not in (_STT_FUNC, _STT_GNU_IFUNC, _STT_OBJECT, _STT_NOTYPE):
            continue
        end = strings.find(b"\0", name_at)
        if end < 0:
            what = "past the end of" if name_at >= len(strings) else "without a NUL in"
            raise ObjectError(codes.PROBE_TARGET, f"uprobe target '{path}' is a corrupt ELF file: symbol "
                              f"{index} of {section.name} is named at offset {name_at}, {what} its "
                              f"string table {string_section.name!r} ({len(strings)} bytes)")
        name = strings[name_at:end].decode("utf-8", "replace")
        if kind in (_STT_FUNC, _STT_GNU_IFUNC):
            functions.append(
                FunctionSymbol(name, value, size, _BINDINGS.get(info >> 4, "STB_OTHER"), kind == _STT_GNU_IFUNC)
            )
        else:
            objects.append(DataSymbol(name, value, size))
    return tuple(functions), tuple(objects)


def check_probe_count(pattern: str, count: int, what: str) -> None:
    """perf-probe makes at most MAX_PROBE_POINTS probe points from one definition."""
    if count > MAX_PROBE_POINTS:
        raise ObjectError(
            codes.PROBE_TOO_MANY,
            f"'{pattern}' matches {count} {what}; perf-probe makes at most {MAX_PROBE_POINTS} probe points "
            "from one definition",
            help=("narrow the glob",),
        )


def uprobe_sites(
    symbols: ElfSymbols, function: str | None, *, offset: int = 0, address: int | None = None
) -> tuple[UprobeSite, ...]:
    """The probe points of ``FUNC[+OFF]`` (a glob gives one per matching function) or of a bare
    virtual ``address``; ObjectError when a function is missing, an offset lies past the end of
    its function, or a glob matches more than MAX_PROBE_POINTS functions."""
    if function is None:
        if address is None:
            raise ValueError("uprobe_sites needs a function or an address")
        return (UprobeSite(None, address, symbols.file_offset(address)),)
    found = symbols.lookup(function)
    check_probe_count(function, len(found), f"functions in '{symbols.path}'")
    sites: list[UprobeSite] = []
    for sym in found:
        if offset and sym.size and offset >= sym.size:
            raise ObjectError(
                codes.PROBE_ADDRESS,
                f"offset {offset:#x} is past the end of '{sym.name}' in '{symbols.path}' "
                f"({sym.size:#x} bytes long)",
            )
        at = sym.address + offset
        sites.append(UprobeSite(sym.name, at, symbols.file_offset(at), sym.ifunc))
    return tuple(sites)
