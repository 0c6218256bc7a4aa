"""Mutation fuzzing of the object reader: whatever the bytes, only ObjectError comes out.

Inputs are the corpus fixture objects mutated by random byte flips, overwrites of header-like
fields with extreme values, truncations, and splices of two objects. Thousands of cases when
``CI=true``; a few hundred otherwise. The seed is fixed per run and printed on failure
(``EVSPEC_FUZZ_SEED`` picks another).
"""

from __future__ import annotations

import os
import random
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.object.reader import read_object_bytes

CASES = 4000 if os.environ.get("CI") == "true" else 400
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


MUTATORS: tuple[Callable[[random.Random, bytes, bytes], bytes], ...] = (_flip, _overwrite, _truncate, _splice)


def test_only_object_errors_escape(bpf_fixtures: Path) -> None:
    originals = [(bpf_fixtures / name).read_bytes() for name in SOURCES]
    rng = random.Random(SEED)
    outcomes = {"read": 0, "ObjectError": 0}
    codes: set[str] = set()
    for case in range(CASES):
        data = rng.choice(originals)
        mutated = rng.choice(MUTATORS)(rng, data, rng.choice(originals))
        try:
            read_object_bytes(mutated, "fuzz.o")
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
