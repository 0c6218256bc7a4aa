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

from evspec.loader.kernel import BpfRingMapping, KernelError
from evspec.loader.output.ringbuf import Atomics

from evspec.codes import kernel as codes

BUSY_BIT = 1 << 31
DISCARD_BIT = 1 << 30
HEADER_SIZE = 8
_HEADER = struct.Struct("=I")


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
        consumer = self._load(self.mapping.consumer)
        producer = self._load(self.mapping.producer)
        if producer - consumer > self.mapping.data_size:
            raise KernelError(codes.RING_BUFFER, f"corrupt BPF ring buffer {self.name}: producer_pos {producer} is "
                                                 f"more than its {self.mapping.data_size} bytes past consumer_pos "
                                                 f"{consumer}")
        out: list[bytes] = []
        data = self._data
        while consumer < producer:
            at = consumer & self._mask
            (word,) = _HEADER.unpack_from(data, at)
            if word & BUSY_BIT:
                break
            length = word & ~(BUSY_BIT | DISCARD_BIT)
            total = (length + HEADER_SIZE + 7) & ~7
            if consumer + total > producer:
                raise KernelError(codes.RING_BUFFER, f"corrupt BPF ring buffer {self.name}: a record of {length} "
                                                     f"bytes at {consumer} runs past producer_pos {producer}")
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
