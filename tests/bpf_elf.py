"""Little-endian BPF relocatable ELF files written from scratch, for tests that need an object of an
exact shape: a corrupt one (tests/test_reader_errors.py) or one program in a section of a given
name (tests/test_libbpf_section_table.py)."""

from __future__ import annotations

import struct
from collections.abc import Sequence

SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOBITS = 1, 2, 3, 8
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 1, 2, 4
STB_GLOBAL, STT_FUNC = 1, 2
EXIT_0 = struct.pack("<BBhi", 0xB7, 0, 0, 0) + struct.pack("<BBhi", 0x95, 0, 0, 0)  # r0 = 0; exit

# name, type, flags, contents (or the size of a SHT_NOBITS section); then sh_link, sh_info, sh_entsize
Section = tuple[str, int, int, bytes | int] | tuple[str, int, int, bytes | int, int, int, int]


def bpf_elf(sections: Sequence[Section]) -> bytes:
    """An ELF of ``sections`` (numbered from 1), with its section name table last."""
    names = b"\0"
    name_offsets = []
    for name, *_ in (*sections, (".shstrtab",)):
        name_offsets.append(len(names))
        names += name.encode() + b"\0"
    body = b""
    headers = [bytes(64)]
    for section, name_off in zip((*sections, (".shstrtab", SHT_STRTAB, 0, names)), name_offsets, strict=True):
        _, type_, flags, contents, *rest = section
        link, info, entsize = rest or (0, 0, 0)
        offset = 64 + len(body)
        if isinstance(contents, int):
            size = contents
        else:
            size = len(contents)
            body += contents
        headers.append(struct.pack("<IIQQQQIIQQ", name_off, type_, flags, 0, offset, size, link, info, 1, entsize))
    shoff = 64 + len(body)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header = ident + struct.pack("<HHIQQQIHHHHHH", 1, 247, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(headers),
                                 len(headers) - 1)
    return header + body + b"".join(headers)


def one_program(section: str, name: str, insns: bytes = EXIT_0) -> bytes:
    """An object with one global function ``name`` (``r0 = 0; exit`` unless told) in a section
    named ``section``, a GPL license and no BTF: what clang makes of
    ``SEC("SECTION") int NAME(void *ctx) { return 0; }`` without -g."""
    strtab = b"\0" + name.encode() + b"\0"
    symtab = bytes(24) + struct.pack("<IBBHQQ", 1, (STB_GLOBAL << 4) | STT_FUNC, 0, 1, 0, len(insns))
    return bpf_elf((
        (section, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, insns),  # 1
        ("license", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, b"GPL\0"),  # 2
        (".symtab", SHT_SYMTAB, 0, symtab, 4, 1, 24),  # 3: link .strtab, first global is 1
        (".strtab", SHT_STRTAB, 0, strtab),  # 4
    ))
