"""Corrupt CO-RE records: the .BTF.ext core_relo records of tests/data/core/relocs.c mutated at
random (instruction offsets, type ids, access strings, kinds, and raw bytes), and the access
strings themselves rewritten; relocating against target.c's BTF must either succeed or end in
evspec's own ObjectError, never a traceback (the reader lets the exceptions only a bug raises
through: AttributeError, KeyError, RecursionError ...)."""

from __future__ import annotations

import random
import struct

import pytest
from evspec.loader.btf.core_patch import relocate_object
from evspec.loader.btf.target import TargetBtf
from evspec.loader.errors import ObjectError
from evspec.loader.object.elf import BpfElf
from evspec.loader.object.reader import read_object_bytes
from test_core_resolve import btf_of, build


def _records(data: bytes) -> list[int]:
    """The offset of every core_relo record in the object's bytes."""
    spec = read_object_bytes(data, "relocs.o")
    assert spec.btf_ext is not None
    ext = spec.btf_ext
    hdr_len, core_off, core_len = struct.unpack_from("<I", ext, 4)[0], *struct.unpack_from("<II", ext, 24)
    base = data.index(ext) + hdr_len + core_off
    pos, end, out = base + 4, base + core_len, []
    size = struct.unpack_from("<I", data, base)[0]
    while pos < end:
        count = struct.unpack_from("<I", data, pos + 4)[0]
        out.extend(pos + 8 + i * size for i in range(count))
        pos += 8 + count * size
    return out


def _access_strings(data: bytes) -> list[tuple[int, int]]:
    """(start, end) in the object's bytes of every string of the .BTF strings that starts with a
    digit: the access strings, ``0:1:2``."""
    sec = BpfElf("relocs.o", data).section(".BTF")
    assert sec is not None
    hdr_len, _, _, str_off, str_len = struct.unpack_from("<IIIII", data, sec.offset + 4)
    start = sec.offset + hdr_len + str_off
    out = []
    pos = start
    while pos < start + str_len:
        end = data.index(b"\0", pos)
        if data[pos:pos + 1].isdigit():
            out.append((pos, end))
        pos = end + 1
    return out


def _rewrite_access(rng: random.Random, data: bytearray, strings: list[tuple[int, int]]) -> None:
    start, end = rng.choice(strings)
    data[start:end] = bytes(rng.choice(b"0123456789:::") for _ in range(end - start))


def test_mutated_core_records_end_in_object_errors(tmp_path_factory: pytest.TempPathFactory) -> None:
    out = tmp_path_factory.mktemp("core-fuzz")
    data, target = build(out, "relocs"), TargetBtf(btf_of(build(out, "target")), "target.o")
    records = _records(data)
    assert len(records) == 25
    strings = _access_strings(data)
    assert len(strings) >= 5, strings
    rng = random.Random(20240)
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(4000):
        bad = bytearray(data)
        at = rng.choice(records)
        field = rng.randrange(6)
        if field == 5:
            _rewrite_access(rng, bad, strings)
        elif field < 4:
            value = rng.choice([0, 1, 2, 3, 7, 8, 13, 24, 99, 0xFFFF, 0xFFFFFFFF, rng.randrange(1 << 32)])
            struct.pack_into("<I", bad, at + 4 * field, value)
        else:
            bad[at + rng.randrange(16)] ^= 1 << rng.randrange(8)
        try:
            relocate_object(read_object_bytes(bytes(bad), "bad.o"), target)
            outcomes["loaded"] += 1
        except ObjectError as exc:
            assert exc.code.startswith("EB") and exc.message
            outcomes["refused"] += 1
    assert outcomes["loaded"] > 0 and outcomes["refused"] > 0, outcomes
