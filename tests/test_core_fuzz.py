"""Corrupt CO-RE records: the .BTF.ext core_relo records of tests/data/core/relocs.c mutated at
random (instruction offsets, type ids, access strings, kinds, and raw bytes); relocating against
target.c's BTF must either succeed or end in evspec's own ObjectError, never a traceback."""

from __future__ import annotations

import random
import struct

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.object.core_patch import relocate_object
from evspec.loader.object.reader import read_object_bytes
from evspec.loader.object.target_btf import TargetBtf
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


def test_mutated_core_records_end_in_object_errors(tmp_path_factory: pytest.TempPathFactory) -> None:
    out = tmp_path_factory.mktemp("core-fuzz")
    data, target = build(out, "relocs"), TargetBtf(btf_of(build(out, "target")), "target.o")
    records = _records(data)
    assert len(records) == 25
    rng = random.Random(20240)
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(600):
        bad = bytearray(data)
        at = rng.choice(records)
        field = rng.randrange(5)
        if field < 4:
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
