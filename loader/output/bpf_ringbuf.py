"""The consumer side of a ``BPF_MAP_TYPE_RINGBUF`` map (``BpfRingMapping``).

Each record starts with an 8-byte header: a 32-bit length whose top bits say the record is still
being written (BUSY) or was given up by the program (DISCARD), and the record's page offset. A
record takes its length plus the header, rounded up to 8 bytes. The kernel's ``producer_pos``
says how far records were reserved; the reader stops at the first busy one, takes the committed
ones up to it (skipping discarded ones), and writes ``consumer_pos`` back to free their space.
"""

from __future__ import annotations

import ctypes
import struct
from itertools import chain
from typing import NamedTuple

from evspec.loader.kernel import BpfRingMapping, KernelError
from evspec.loader.output.perf_ring import Atomics

from evspec.codes import kernel as codes

BUSY_BIT = 1 << 31
DISCARD_BIT = 1 << 30
HEADER_SIZE = 8
_LENGTH_MASK = ~(BUSY_BIT | DISCARD_BIT) & 0xFFFFFFFF
_FIRST_RUN = 16  # records whose headers are looked at first; the window grows while runs fill it
_MAX_RUN = 1 << 14
_GROUP = 64  # records cut from a run's copy by one struct unpack
_CUTTERS: dict[tuple[int, int, int], struct.Struct] = {}


def _cutter(length: int, total: int, count: int) -> struct.Struct:
    """A ``struct`` taking the payloads of ``count`` records of ``length`` bytes, ``total`` apart."""
    key = (length, total, count)
    cutter = _CUTTERS.get(key)
    if cutter is None:
        if len(_CUTTERS) >= 1024:  # programs of many record sizes: forget them all now and then
            _CUTTERS.clear()
        record = f"{HEADER_SIZE}x{length}s{total - HEADER_SIZE - length}x"
        cutter = _CUTTERS[key] = struct.Struct("=" + record * count)
    return cutter


def run_payloads(span: bytes, length: int, total: int, count: int) -> list[bytes]:
    """The payloads of the ``count`` records of one size that ``span`` holds, in order."""
    groups, rest = divmod(count, _GROUP)
    out: list[bytes] = []
    if groups:
        out.extend(chain.from_iterable(_cutter(length, total, _GROUP).iter_unpack(memoryview(span)[: groups * _GROUP * total])))
    if rest:
        out.extend(_cutter(length, total, rest).unpack_from(span, groups * _GROUP * total))
    return out


class RecordRun(NamedTuple):
    """``count`` committed records of ``length`` bytes each, ``total`` bytes apart, as the ring
    holds them (their headers and padding included) in ``span``."""

    span: bytes
    length: int
    total: int
    count: int


class BpfRingReader:
    """Takes the committed records of one BPF ring buffer map, called ``name`` in the output."""

    def __init__(self, name: str, mapping: BpfRingMapping, *, atomics: Atomics | None = None) -> None:
        self.name = name
        self.mapping = mapping
        self.atomics = atomics or Atomics()
        self.discarded = 0  # records the program reserved and then discarded
        self._mask = mapping.data_size - 1
        # the data twice in a row: a record is contiguous whatever its position
        self._data = memoryview((ctypes.c_char * (2 * mapping.data_size)).from_address(mapping.data)).cast("B")

    def _load(self, address: int) -> int:
        if self.atomics.plain:
            return ctypes.c_uint64.from_address(address).value
        return self.atomics.load_acquire(address)

    def take(self) -> list[bytes]:
        """The records committed since the last call, in order; their space goes back at once."""
        return self._take(False)  # type: ignore[return-value]

    def take_runs(self) -> list[bytes | RecordRun]:
        """``take``, but a run of records of one size with none discarded stays one ``RecordRun``
        (a copy of the ring's bytes): capture mode makes its samples without cutting them."""
        return self._take(True)

    def _take(self, runs: bool) -> list[bytes | RecordRun]:
        """The records committed since the last call, in order; their space goes back at once."""
        consumer, producer = self._positions()
        out: list[bytes | RecordRun] = []
        used, dropped = walk(self._data, consumer & self._mask, producer - consumer, out, runs,
                             where=(self.name, consumer))
        self.discarded += dropped
        self._release(consumer + used)
        return out

    def committed(self) -> tuple[memoryview, int]:
        """The committed records (discarded ones included) as the ring holds them, headers and
        padding too, up to the first record still being written, in place; and the position
        to ``release`` once they are copied. ``cut_records`` cuts such bytes into records."""
        consumer, producer = self._positions()
        at = consumer & self._mask
        used, _ = walk(self._data, at, producer - consumer, None, False, where=(self.name, consumer))
        return self._data[at : at + used], consumer + used

    def release(self, position: int) -> None:
        """Hand the space up to ``position`` (from ``committed``) back to the kernel."""
        self._release(position)

    def _positions(self) -> tuple[int, int]:
        consumer = self._load(self.mapping.consumer)
        producer = self._load(self.mapping.producer)
        if producer - consumer > self.mapping.data_size:
            raise KernelError(codes.RING_BUFFER, f"corrupt BPF ring buffer {self.name}: producer_pos {producer} is "
                                                 f"more than its {self.mapping.data_size} bytes past consumer_pos "
                                                 f"{consumer}")
        return consumer, producer

    def _release(self, position: int) -> None:
        if self.atomics.plain:
            ctypes.c_uint64.from_address(self.mapping.consumer).value = position
        else:
            self.atomics.store_release(self.mapping.consumer, position)


def cut_records(name: str, span: bytes) -> tuple[list[bytes], int]:
    """The payloads of the records in ``span`` (what ``BpfRingReader.committed`` gave: whole
    committed records with their headers) and how many of them were discarded."""
    out: list[bytes | RecordRun] = []
    used, dropped = walk(memoryview(span), 0, len(span), out, False, where=(name, 0))
    if used != len(span):
        raise KernelError(codes.RING_BUFFER, f"corrupt BPF ring buffer {name} records: a record at {used} of "
                                             f"{len(span)} bytes is marked as being written")
    return out, dropped  # type: ignore[return-value]


def walk(data: memoryview, at: int, length: int, out: list[bytes | RecordRun] | None, runs: bool,
         where: tuple[str, int]) -> tuple[int, int]:
    """Walk the records in ``data[at:at + length]`` up to the first one still being written:
    how many bytes they take and how many were discarded; with ``out``, the payloads of the
    others appended to it (a run of one size as one ``RecordRun`` with ``runs``).

    Records come in runs of one size (one program, one struct): the header words of a run are
    read at once (a strided view), and its payloads cut from one copy of the run by a ``struct``
    of many records, so that a record costs no Python step of its own. A header is read before
    the bytes after it are copied (a committed header means its record is written); a busy
    record ends the walk. ``where`` (the ring's name, the ring position of ``at``) names the place
    of a corrupt record."""
    words = data[: (len(data) // 4) * 4].cast("I")  # the header words (every record starts 8-byte aligned)
    discarded = 0
    pos, stop = at, at + length
    window, skip, backoff = _FIRST_RUN, 0, 4
    while pos < stop:
        word = words[pos >> 2]
        if word & BUSY_BIT:
            break
        rec_len = word & _LENGTH_MASK
        total = (rec_len + HEADER_SIZE + 7) & ~7
        if pos + total > stop:
            name, base = where
            raise KernelError(codes.RING_BUFFER, f"corrupt BPF ring buffer {name}: a record of {rec_len} "
                                                 f"bytes at {base + pos - at} runs past producer_pos "
                                                 f"{base + length}")
        fits = 0 if skip else min(window, (stop - pos) // total)
        if fits > 1:
            # the header words of the next ``fits`` records if they are all of this size
            heads = words[pos >> 2 : (pos + fits * total) >> 2 : total >> 2].tolist()
            kept = heads.count(rec_len)
            dropped = heads.count(rec_len | DISCARD_BIT)
            run = kept + dropped
            if run < fits:  # a busy record, or another size: the run ends at the first of them
                run = next(i for i, w in enumerate(heads) if w != rec_len and w != rec_len | DISCARD_BIT)
                dropped = heads[:run].count(rec_len | DISCARD_BIT)
                kept = run - dropped
            if run > 1:
                backoff = 1
                window = min(window * 4, _MAX_RUN) if run == fits else _FIRST_RUN
                discarded += dropped
                if kept and out is not None:
                    span = bytes(data[pos : pos + run * total])
                    if dropped:
                        out.extend([span[i + HEADER_SIZE : i + HEADER_SIZE + rec_len]
                                    for i, w in zip(range(0, run * total, total), heads, strict=False)
                                    if w == rec_len])
                    elif runs:
                        out.append(RecordRun(span, rec_len, total, run))
                    else:
                        out.extend(run_payloads(span, rec_len, total, run))
                pos += run * total
                continue
            # sizes change from record to record: one at a time for a while, longer each time
            window, backoff = _FIRST_RUN, min(backoff * 4, _MAX_RUN)
            skip = backoff
        elif skip:
            skip -= 1
        if word & DISCARD_BIT:
            discarded += 1
        elif out is not None:
            out.append(bytes(data[pos + HEADER_SIZE : pos + HEADER_SIZE + rec_len]))
        pos += total
    return pos - at, discarded
