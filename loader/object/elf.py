"""The ELF side of a BPF object: header checks, sections, symbols and relocations.

The identification bytes and the machine are checked first, so that the common mistakes (an
empty file, a text file, a host object, a big-endian BPF object) get a precise message; then the
ELF header, the section headers, the symbols and the relocations are unpacked with ``struct``
(a BPF object needs nothing more, and pyelftools alone takes longer to import than reading a whole
object this way), every offset checked against the file size before data is sliced out.
"""

from __future__ import annotations

import struct
import sys
from functools import cached_property

from evspec.loader.errors import ObjectError

from evspec.codes import bpf as codes
from evspec.span import Slotted

EM_BPF = 247
ET_REL = 1
SHF_WRITE = 0x1
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SECTION_HEADER_SIZE = 64
SYMBOL_SIZE = 24
REL_SIZE = 16
SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
_U32 = (1 << 32) - 1
_ORDER = "<" if sys.byteorder == "little" else ">"  # objects in the other byte order are refused
_STT = {0: "STT_NOTYPE", 1: "STT_OBJECT", 2: "STT_FUNC", 3: "STT_SECTION", 4: "STT_FILE",
        5: "STT_COMMON", 6: "STT_TLS"}
_STB = {0: "STB_LOCAL", 1: "STB_GLOBAL", 2: "STB_WEAK"}

_MACHINES = {
    3: "x86 (i386)", 8: "MIPS", 20: "PowerPC", 21: "PowerPC64", 22: "S/390", 40: "ARM",
    62: "x86-64", 183: "AArch64", 243: "RISC-V", 258: "LoongArch",
}
_ELF_TYPES = {0: "NONE", 1: "REL", 2: "EXEC", 3: "DYN", 4: "CORE"}
# Section types by the names pyelftools gives them (others become SHT_0x..., as it leaves them).
_SHT = {
    0: "SHT_NULL", 1: "SHT_PROGBITS", 2: "SHT_SYMTAB", 3: "SHT_STRTAB", 4: "SHT_RELA", 5: "SHT_HASH",
    6: "SHT_DYNAMIC", 7: "SHT_NOTE", 8: "SHT_NOBITS", 9: "SHT_REL", 10: "SHT_SHLIB", 11: "SHT_DYNSYM",
    14: "SHT_INIT_ARRAY", 15: "SHT_FINI_ARRAY", 16: "SHT_PREINIT_ARRAY", 17: "SHT_GROUP",
    18: "SHT_SYMTAB_SHNDX", 19: "SHT_RELR", 0x6FFFFFF5: "SHT_GNU_ATTRIBUTES", 0x6FFFFFF6: "SHT_GNU_HASH",
    0x6FFFFFFD: "SHT_GNU_verdef", 0x6FFFFFFE: "SHT_GNU_verneed", 0x6FFFFFFF: "SHT_GNU_versym",
}
_EHDR = struct.Struct(_ORDER + "16sHHIQQQIHHHHHH")  # Elf64_Ehdr
_SHDR = struct.Struct(_ORDER + "IIQQQQIIQQ")  # Elf64_Shdr


def machine_name(machine: int) -> str:
    return _MACHINES.get(machine, f"number {machine}")


class Section(Slotted):
    index: int
    name: str
    type: str  # pyelftools' name: "SHT_PROGBITS", "SHT_NOBITS", "SHT_REL" ...
    flags: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int

    @property
    def executable(self) -> bool:
        return self.type == "SHT_PROGBITS" and bool(self.flags & SHF_EXECINSTR)


class Symbol(Slotted):
    index: int
    name: str
    value: int
    size: int
    type: str  # "STT_FUNC", "STT_OBJECT", "STT_SECTION", "STT_NOTYPE" ...
    bind: str  # "STB_GLOBAL", "STB_LOCAL", "STB_WEAK"
    section_index: int | None  # None for SHN_UNDEF, SHN_ABS, SHN_COMMON

    @property
    def undefined(self) -> bool:
        return self.section_index is None


class Rel(Slotted):
    offset: int  # byte offset inside the relocated section
    symbol: int  # symbol table index
    type: int  # R_BPF_*


def _looks_like_text(head: bytes) -> bool:
    return all(32 <= b < 127 or b in b"\t\n\r" for b in head)


class BpfElf:
    """A BPF ELF relocatable object held in memory."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.data = data
        self._check_identification()
        self.sections = self._read_sections()
        self._by_name: dict[str, Section] = {}
        for s in self.sections:
            self._by_name.setdefault(s.name, s)

    # -- header ------------------------------------------------------------------------------

    def _fail(self, code: str, message: str, perf_reason: str | None = None) -> ObjectError:
        perf = f"Failed to load {self.path}: {perf_reason}" if perf_reason else None
        return ObjectError(code, f"{self.path}: {message}", perf_message=perf)

    def _check_identification(self) -> None:
        d = self.data
        if not d:
            raise self._fail(codes.NOT_ELF, "not an ELF object file: the file is empty",
                             "BPF object format invalid")
        if d[:4] != b"\x7fELF":
            hint = " (it looks like a text file)" if _looks_like_text(d[:256]) else ""
            raise self._fail(codes.NOT_ELF, f"not an ELF object file: no ELF magic number{hint}",
                             "BPF object format invalid")
        if len(d) < 20:
            raise self._fail(codes.CORRUPT_ELF, f"truncated ELF file: {len(d)} bytes, "
                             "too short for an ELF header", "BPF object format invalid")
        elf_class, encoding = d[4], d[5]
        if encoding not in (1, 2):
            raise self._fail(codes.CORRUPT_ELF, f"corrupt ELF header: unknown data encoding {encoding}",
                             "BPF object format invalid")
        order = "<" if encoding == 1 else ">"
        (machine,) = struct.unpack_from(order + "H", d, 18)
        if machine != EM_BPF:
            raise self._fail(codes.NOT_BPF, f"not a BPF object: ELF machine is {machine_name(machine)}",
                             "BPF object format invalid")
        if elf_class != 2:
            what = "32-bit" if elf_class == 1 else f"of unknown class {elf_class}"
            raise self._fail(codes.NOT_BPF, f"not a BPF object: the ELF file is {what}, BPF objects "
                             "are 64-bit", "BPF object format invalid")
        file_order = "little" if encoding == 1 else "big"
        if file_order != sys.byteorder:
            raise self._fail(
                codes.BYTE_ORDER,
                f"the BPF object is {file_order}-endian (built with -target "
                f"{'bpfel' if file_order == 'little' else 'bpfeb'}?) but this host is "
                f"{sys.byteorder}-endian; the kernel only loads programs in its own byte order",
                "Endian mismatch")
        if len(d) < 64:
            raise self._fail(codes.CORRUPT_ELF, f"truncated ELF file: {len(d)} bytes, the ELF header "
                             "needs 64", "BPF object format invalid")
        (elf_type,) = struct.unpack_from(order + "H", d, 16)
        if elf_type != ET_REL:
            name = _ELF_TYPES.get(elf_type, str(elf_type))
            raise self._fail(codes.NOT_BPF, f"not a BPF object file: ELF type is {name}, expected a "
                             "relocatable object (REL) as `clang -c` writes it",
                             "BPF object format invalid")

    def _read_sections(self) -> tuple[Section, ...]:
        size = len(self.data)
        *_, shoff, _flags, _ehsize, _phentsize, _phnum, shentsize, shnum, shstrndx = _EHDR.unpack_from(self.data)
        if shnum == 0 or shoff == 0:
            raise self._fail(codes.CORRUPT_ELF, "corrupt ELF file: it has no section header table",
                             "BPF object format invalid")
        if shentsize != SECTION_HEADER_SIZE:
            raise self._fail(codes.CORRUPT_ELF, f"corrupt ELF header: section header size "
                             f"{shentsize}, expected {SECTION_HEADER_SIZE}", "Something wrong in libelf")
        if shoff + shnum * shentsize > size:
            raise self._fail(
                codes.CORRUPT_ELF,
                f"truncated or corrupt ELF file: the section header table ({shnum} entries at offset "
                f"{shoff}) extends past the end of the file ({size} bytes)", "Something wrong in libelf")
        if not 0 < shstrndx < shnum:
            raise self._fail(codes.CORRUPT_ELF, f"corrupt ELF header: section name table index "
                             f"{shstrndx} is out of range", "Something wrong in libelf")
        headers = [_SHDR.unpack_from(self.data, shoff + i * shentsize) for i in range(shnum)]
        _, names_type, _, _, names_offset, names_size, *_ = headers[shstrndx]
        if names_type != 3 or names_offset + names_size > size:
            raise self._fail(codes.CORRUPT_ELF, "corrupt ELF file: bad section name table",
                             "Something wrong in libelf")
        names = self.data[names_offset:names_offset + names_size]
        sections = []
        for index, (name_off, type_, flags, _addr, offset, sec_size, link, info, _align, entsize) in enumerate(headers):
            if name_off >= len(names) and index:
                raise self._fail(codes.CORRUPT_ELF, f"corrupt ELF file: section {index} has name offset "
                                 f"{name_off}, past the section name table", "Something wrong in libelf")
            end = names.find(b"\0", name_off)
            name = names[name_off:end if end >= 0 else len(names)].decode("utf-8", "replace") if index else ""
            s = Section(index, name, _SHT.get(type_, f"SHT_{type_:#x}"), flags, offset, sec_size, link, info, entsize)
            if index and s.size and s.type not in ("SHT_NOBITS", "SHT_NULL") and s.offset + s.size > size:
                raise self._fail(
                    codes.CORRUPT_ELF,
                    f"truncated or corrupt ELF file: section {s.name!r} ({s.size} bytes at offset "
                    f"{s.offset}) extends past the end of the file ({size} bytes)",
                    "Something wrong in libelf")
            if s.type == "SHT_NOBITS" and s.size > _U32:
                raise self._fail(
                    codes.CORRUPT_ELF,
                    f"corrupt ELF file: section {s.name!r} (SHT_NOBITS) is {s.size} bytes; the "
                    "zero-filled data of a BPF object becomes a map value, whose size is 32 bits",
                    "Something wrong in libelf")
            sections.append(s)
        return tuple(sections)

    # -- sections ----------------------------------------------------------------------------

    def section(self, name: str) -> Section | None:
        return self._by_name.get(name)

    def section_at(self, index: int) -> Section:
        if not 0 <= index < len(self.sections):
            raise self._fail(codes.CORRUPT_ELF, f"corrupt ELF file: section index {index} is out "
                             "of range", "Something wrong in libelf")
        return self.sections[index]

    def contents(self, section: Section) -> bytes:
        if section.type == "SHT_NOBITS":
            return bytes(section.size)
        return self.data[section.offset:section.offset + section.size]

    # -- symbols -----------------------------------------------------------------------------

    @cached_property
    def symtab(self) -> Section | None:
        found = [s for s in self.sections if s.type == "SHT_SYMTAB"]
        if len(found) > 1:
            raise self._fail(codes.CORRUPT_ELF, "corrupt ELF file: more than one symbol table",
                             "BPF object format invalid")
        if not found:
            return None
        tab = found[0]
        if tab.entsize != SYMBOL_SIZE or tab.size % SYMBOL_SIZE:
            raise self._fail(codes.CORRUPT_ELF, f"corrupt symbol table: entry size {tab.entsize}, "
                             f"table size {tab.size}", "Something wrong in libelf")
        if self.section_at(tab.link).type != "SHT_STRTAB":
            raise self._fail(codes.CORRUPT_ELF, "corrupt symbol table: its string table link is "
                             "not a string table", "Something wrong in libelf")
        return tab

    @cached_property
    def symbols(self) -> tuple[Symbol, ...]:
        """The symbol table, decoded with one struct pass (pyelftools' per-symbol parsing costs
        about 0.1 ms a symbol, which objects with thousands of programs and maps feel)."""
        tab = self.symtab
        if tab is None:
            return ()
        strtab = self.section_at(tab.link)
        strings = self.contents(strtab)
        shnum = len(self.sections)
        out = []
        entry = struct.Struct(_ORDER + "IBBHQQ")
        for index, (name_off, info, _other, shndx, value, size) in enumerate(
                entry.iter_unpack(self.contents(tab))):
            if name_off and name_off >= len(strings):
                raise self._fail(codes.CORRUPT_ELF, f"corrupt symbol table: symbol {index} has name "
                                 f"offset {name_off}, past its string table", "Something wrong in libelf")
            end = strings.find(b"\0", name_off)
            name = strings[name_off:end if end >= 0 else len(strings)].decode("utf-8", "replace")
            if shndx == SHN_UNDEF or shndx >= SHN_LORESERVE:  # UNDEF, ABS, COMMON, XINDEX
                section_index = None
            elif shndx >= shnum:
                raise self._fail(codes.CORRUPT_ELF, f"corrupt symbol table: symbol {index} names "
                                 f"section {shndx}, the file has {shnum}", "Something wrong in libelf")
            else:
                section_index = shndx
            out.append(Symbol(index, name, value, size, _STT.get(info & 0xF, f"STT_{info & 0xF}"),
                              _STB.get(info >> 4, f"STB_{info >> 4}"), section_index))
        return tuple(out)

    @cached_property
    def _symbols_by_section(self) -> dict[int, list[Symbol]]:
        out: dict[int, list[Symbol]] = {}
        for sym in self.symbols:
            if sym.section_index is not None:
                out.setdefault(sym.section_index, []).append(sym)
        return out

    def symbols_in(self, section: Section) -> list[Symbol]:
        return list(self._symbols_by_section.get(section.index, ()))

    # -- relocations -------------------------------------------------------------------------

    def relocation_sections(self) -> list[tuple[Section, Section]]:
        """(relocation section, the section it relocates) for each SHT_REL/SHT_RELA section."""
        out = []
        for s in self.sections:
            if s.type in ("SHT_REL", "SHT_RELA"):
                out.append((s, self.section_at(s.info)))
        return out

    def relocations(self, rel: Section) -> tuple[Rel, ...]:
        if rel.type != "SHT_REL":
            raise ObjectError(codes.UNSUPPORTED, f"{self.path}: section {rel.name!r} holds RELA "
                              "relocations; BPF objects use REL", perf_message=f"Failed to load "
                              f"{self.path}: Relocation failed")
        if rel.entsize != REL_SIZE or rel.size % REL_SIZE:
            raise self._fail(codes.BAD_RELOCATION, f"corrupt relocation section {rel.name!r}: entry "
                             f"size {rel.entsize}, section size {rel.size}", "Relocation failed")
        symtab = self.symtab
        if symtab is None or rel.link != symtab.index:
            raise self._fail(codes.BAD_RELOCATION, f"relocation section {rel.name!r} is not linked "
                             "to the symbol table", "Relocation failed")
        fmt = struct.Struct(_ORDER + "QQ")
        body = self.contents(rel)
        return tuple(Rel(off, info >> 32, info & 0xFFFFFFFF) for off, info in fmt.iter_unpack(body))
