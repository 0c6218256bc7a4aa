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
        self._words = self._data.cast("I")  # the header words (every record starts 8-byte aligned)

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
        """The records committed since the last call, in order; their space goes back at once.

        Records come in runs of one size (one program, one struct): the header words of a run are
        read at once (a strided view of the live memory), and its payloads cut from one copy of
        the run by a ``struct`` of many records, so that a record costs no Python step of its own.
        A header is read before the bytes after it are copied (a committed header means its record
        is written); a busy record ends the take, a discarded one is counted and left out."""
        consumer = self._load(self.mapping.consumer)
        producer = self._load(self.mapping.producer)
        if producer - consumer > self.mapping.data_size:
            raise KernelError(codes.RING_BUFFER, f"corrupt BPF ring buffer {self.name}: producer_pos {producer} is "
                                                 f"more than its {self.mapping.data_size} bytes past consumer_pos "
                                                 f"{consumer}")
        out: list[bytes | RecordRun] = []
        data, words, mask = self._data, self._words, self._mask
        window, skip, backoff = _FIRST_RUN, 0, 4
        while consumer < producer:
            at = consumer & mask
            word = words[at >> 2]
            if word & BUSY_BIT:
                break
            length = word & _LENGTH_MASK
            total = (length + HEADER_SIZE + 7) & ~7
            if consumer + total > producer:
                raise KernelError(codes.RING_BUFFER, f"corrupt BPF ring buffer {self.name}: a record of {length} "
                                                     f"bytes at {consumer} runs past producer_pos {producer}")
            fits = 0 if skip else min(window, (producer - consumer) // total)
            if fits > 1:
                # the header words of the next ``fits`` records if they are all of this size
                heads = words[at >> 2 : (at + fits * total) >> 2 : total >> 2].tolist()
                kept = heads.count(length)
                dropped = heads.count(length | DISCARD_BIT)
                run = kept + dropped
                if run < fits:  # a busy record, or another size: the run ends at the first of them
                    run = next(i for i, w in enumerate(heads) if w != length and w != length | DISCARD_BIT)
                    dropped = heads[:run].count(length | DISCARD_BIT)
                    kept = run - dropped
                if run > 1:
                    backoff = 1
                    window = min(window * 4, _MAX_RUN) if run == fits else _FIRST_RUN
                    self.discarded += dropped
                    if kept:
                        span = bytes(data[at : at + run * total])
                        if dropped:
                            out.extend([span[i + HEADER_SIZE : i + HEADER_SIZE + length]
                                        for i, w in zip(range(0, run * total, total), heads, strict=False)
                                        if w == length])
                        elif runs:
                            out.append(RecordRun(span, length, total, run))
                        else:
                            out.extend(run_payloads(span, length, total, run))
                    consumer += run * total
                    continue
                # sizes change from record to record: one at a time for a while, longer each time
                window, backoff = _FIRST_RUN, min(backoff * 4, _MAX_RUN)
                skip = backoff
            elif skip:
                skip -= 1
            if word & DISCARD_BIT:
                self.discarded += 1
            else:
                out.append(bytes(data[at + HEADER_SIZE : at + HEADER_SIZE + length]))
            consumer += total
        self._release(consumer)
        return out

    def _release(self, position: int) -> None:
        if self.atomics.plain:
            ctypes.c_uint64.from_address(self.mapping.consumer).value = position
        else:
            self.atomics.store_release(self.mapping.consumer, position)
