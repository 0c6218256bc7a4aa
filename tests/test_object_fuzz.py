"""Mutation fuzzing of the object reader: whatever the bytes, only ObjectError comes out.

Inputs are the corpus fixture objects mutated by random byte flips, overwrites of header-like
fields with extreme values, truncations, splices of two objects, and structured mutations: a field
of a section header or a symbol, a word of a BTF type record (often made to refer to itself or a
neighbour: loops), a word of the .BTF.ext section. The maps of what still reads are decoded as
``--dump-maps`` decodes them. Tens of thousands of cases when ``CI=true``; a few hundred otherwise.
The seed is fixed per run and printed on failure (``EVSPEC_FUZZ_SEED`` picks another).

Only ObjectError: the reader turns what slicing and unpacking corrupt bytes raise (struct.error,
IndexError, ...) into one, but not the exceptions only a bug raises (AttributeError, KeyError,
TypeError, RecursionError, MemoryError ...), so a case that raises one of those fails here.
"""

from __future__ import annotations

import os
import random
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from evspec.loader.btf.reader import Btf
from evspec.loader.errors import ObjectError
from evspec.loader.object.elf import BpfElf
from evspec.loader.object.map_dump import decode_map, dumpable, is_per_cpu, per_cpu_stride
from evspec.loader.object.reader import read_object_bytes
from evspec.loader.object.spec import ObjectSpec

CASES = 30000 if os.environ.get("CI") == "true" else 1000
SEED = int(os.environ.get("EVSPEC_FUZZ_SEED", "20160412"))
SOURCES = ("maps.o", "legacy_maps.o", "nanosleep.o", "tpbang.o", "noprog.o", "stdout1.o", "up1.o")
EXTREMES = (0, 1, 7, 8, 0x7F, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)


def _flip(rng: random.Random, data: bytes, _other: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def _overwrite(rng: random.Random, data: bytes, _other: bytes) -> bytes:
    """An extreme value written over an aligned word: hits sizes, offsets, counts and ids."""
    out = bytearray(data)
    width = rng.choice((2, 4, 8))
    at = rng.randrange(0, len(out) - width, width)
    struct.pack_into({2: "<H", 4: "<I", 8: "<Q"}[width], out, at, rng.choice(EXTREMES) & ((1 << 8 * width) - 1))
    return bytes(out)


def _truncate(rng: random.Random, data: bytes, _other: bytes) -> bytes:
    return data[:rng.randrange(len(data))]


def _splice(rng: random.Random, data: bytes, other: bytes) -> bytes:
    cut = rng.randrange(len(data))
    start = rng.randrange(len(other))
    return data[:cut] + other[start:start + rng.randrange(1, 512)] + data[cut + rng.randrange(0, 64):]


def _value(rng: random.Random, width: int, old: int, count: int) -> int:
    """A new value for a field of ``width`` bytes that held ``old``: extreme, near it, or a small
    index (``count``: how many of the things it may index there are)."""
    choice = rng.randrange(4)
    if choice == 0:
        value = rng.choice(EXTREMES)
    elif choice == 1:
        value = old + rng.choice((-16, -8, -4, -1, 1, 4, 8, 16))
    elif choice == 2:
        value = rng.randrange(count + 2)
    else:
        value = old ^ (1 << rng.randrange(8 * width))
    return value & ((1 << 8 * width) - 1)


_FORMATS = {1: "<B", 2: "<H", 4: "<I", 8: "<Q"}
# (offset, width) of the fields of an Elf64_Shdr and an Elf64_Sym
_SHDR_FIELDS = ((0, 4), (4, 4), (8, 8), (24, 8), (32, 8), (40, 4), (44, 4), (56, 8))
_SYM_FIELDS = ((0, 4), (4, 1), (5, 1), (6, 2), (8, 8), (16, 8))


def _set(data: bytes, at: int, width: int, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(_FORMATS[width], out, at, value)
    return bytes(out)


class _Layout:
    """Where the structured mutators find things in one original object."""

    def __init__(self, data: bytes) -> None:
        elf = BpfElf("fuzz.o", data)
        shoff = struct.unpack_from("<Q", data, 0x28)[0]
        self.section_headers = [shoff + 64 * s.index for s in elf.sections[1:]]
        tab = elf.symtab
        self.symbols = [] if tab is None else [tab.offset + 24 * i for i in range(tab.size // 24)]
        self.btf_types: list[int] = []  # where each BTF type record starts
        self.btf_words: list[tuple[int, int]] = []  # (where a word of a type record is, its type's id)
        btf = elf.section(".BTF")
        if btf is not None:
            blob = elf.contents(btf)
            hdr_len, type_off = struct.unpack_from("<II", blob, 4)
            types_at = btf.offset + hdr_len + type_off
            starts = Btf(blob).starts
            ends = [*starts[2:], struct.unpack_from("<I", blob, 12)[0] // 4]
            for type_id, (start, end) in enumerate(zip(starts[1:], ends, strict=True), 1):
                self.btf_types.append(types_at + 4 * start)
                self.btf_words.extend((types_at + 4 * w, type_id) for w in range(start, end))
        ext = elf.section(".BTF.ext")
        self.btf_ext_words = [] if ext is None else list(range(ext.offset + 4, ext.offset + ext.size - 3, 4))


def _section_field(rng: random.Random, data: bytes, layout: _Layout) -> bytes:
    at = rng.choice(layout.section_headers)
    off, width = rng.choice(_SHDR_FIELDS)
    old = int.from_bytes(data[at + off:at + off + width], "little")
    return _set(data, at + off, width, _value(rng, width, old, len(layout.section_headers)))


def _symbol_field(rng: random.Random, data: bytes, layout: _Layout) -> bytes:
    if not layout.symbols:
        return data
    at = rng.choice(layout.symbols)
    off, width = rng.choice(_SYM_FIELDS)
    old = int.from_bytes(data[at + off:at + off + width], "little")
    return _set(data, at + off, width, _value(rng, width, old, len(layout.section_headers)))


def _btf_word(rng: random.Random, data: bytes, layout: _Layout) -> bytes:
    """A word of a type record: a name offset, the kind and vlen, a size or a referenced type id
    (a member's, an element's ...), often made the type's own id or a neighbour's."""
    if not layout.btf_words:
        return data
    at, type_id = rng.choice(layout.btf_words)
    old = struct.unpack_from("<I", data, at)[0]
    if rng.random() < 0.5:
        value = rng.choice((type_id, type_id - 1, type_id + 1, 0, len(layout.btf_types) + 1))
    else:
        value = _value(rng, 4, old, len(layout.btf_types))
    return _set(data, at, 4, value)


def _btf_ext_word(rng: random.Random, data: bytes, layout: _Layout) -> bytes:
    if not layout.btf_ext_words:
        return data
    at = rng.choice(layout.btf_ext_words)
    return _set(data, at, 4, _value(rng, 4, struct.unpack_from("<I", data, at)[0], len(layout.btf_types)))


MUTATORS: tuple[Callable[[random.Random, bytes, bytes], bytes], ...] = (_flip, _overwrite, _truncate, _splice)
STRUCTURED: tuple[Callable[[random.Random, bytes, _Layout], bytes], ...] = (
    _section_field, _symbol_field, _btf_word, _btf_word, _btf_ext_word)


def _decode_maps(spec: ObjectSpec) -> None:
    """Each dumpable map's zero entry decoded as ``record --dump-maps`` decodes it (its values
    kept small: the kernel refuses larger ones before anything is read)."""
    for m in spec.maps:
        if dumpable(m) and m.key_size <= 1 << 10 and m.value_size <= 1 << 16:
            value = bytes(per_cpu_stride(m) * 2 if is_per_cpu(m) else m.value_size)
            decode_map(spec, m, [(bytes(m.key_size), value)], 2)


def test_only_object_errors_escape(bpf_fixtures: Path) -> None:
    originals = [(bpf_fixtures / name).read_bytes() for name in SOURCES]
    layouts = [_Layout(data) for data in originals]
    rng = random.Random(SEED)
    outcomes = {"read": 0, "ObjectError": 0}
    codes: set[str] = set()
    for case in range(CASES):
        pick = rng.randrange(len(originals))
        data = originals[pick]
        if rng.random() < 0.5:
            mutated = rng.choice(MUTATORS)(rng, data, rng.choice(originals))
        else:
            mutated = rng.choice(STRUCTURED)(rng, data, layouts[pick])
        try:
            _decode_maps(read_object_bytes(mutated, "fuzz.o"))
        except ObjectError as exc:
            outcomes["ObjectError"] += 1
            codes.add(exc.code)
            assert exc.message.startswith("fuzz.o: "), exc.message
        except Exception as exc:  # noqa: BLE001 - the point of the test
            pytest.fail(f"case {case} (seed {SEED}) raised {type(exc).__name__}: {exc}")
        else:
            outcomes["read"] += 1
    # the mutations reach deep: both outcomes and many different failures occur
    assert outcomes["read"] > CASES // 20 and outcomes["ObjectError"] > CASES // 4, outcomes
    assert len(codes) >= 5, codes
