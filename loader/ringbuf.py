"""Reading a perf event's mmap'ed ring buffer (one per CPU) and decoding its records.

The kernel writes records at ``data_head`` and we consume them from ``data_tail``. The protocol of
include/uapi/linux/perf_event.h needs a load-acquire of ``data_head`` before the records are read,
and a store-release of ``data_tail`` after they were copied out; both go through libatomic's
``__atomic_load_8`` / ``__atomic_store_8`` (C11 semantics) when it is present. Without libatomic
only x86_64 is safe, where every aligned load is an acquire and every store a release (TSO).
"""

from __future__ import annotations

import ctypes
import platform
import select
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from evspec.loader.kernel import KernelError, RingMapping
from evspec.loader.perf_abi import EventHeader, MmapPage, RecordType, SampleType

from evspec.codes import kernel as codes

_ATOMIC_ACQUIRE = 2  # __ATOMIC_ACQUIRE
_ATOMIC_RELEASE = 3  # __ATOMIC_RELEASE
_HEAD = MmapPage.data_head.offset
_TAIL = MmapPage.data_tail.offset
_HEADER = struct.Struct("=IHH")
_U64 = struct.Struct("=Q")
_U32X2 = struct.Struct("=II")

# The sample fields this reader decodes, in the order the kernel writes them.
DECODED_SAMPLE_TYPES = (
    SampleType.IDENTIFIER
    | SampleType.IP
    | SampleType.TID
    | SampleType.TIME
    | SampleType.ADDR
    | SampleType.ID
    | SampleType.STREAM_ID
    | SampleType.CPU
    | SampleType.PERIOD
    | SampleType.CALLCHAIN
    | SampleType.RAW
)


class Atomics:
    """64-bit load-acquire and store-release on a shared mapping."""

    def __init__(self, machine: str | None = None) -> None:
        self._load = self._store = None
        try:
            lib = ctypes.CDLL("libatomic.so.1")
        except OSError:
            machine = machine or platform.machine()
            if machine not in ("x86_64", "amd64"):
                raise KernelError(
                    codes.RING_BUFFER,
                    f"reading perf ring buffers on {machine} needs libatomic (libatomic.so.1) for "
                    "acquire/release ordering; install it (Debian: libatomic1)",
                ) from None
            return
        self._load = lib["__atomic_load_8"]
        self._load.argtypes = (ctypes.c_void_p, ctypes.c_int)
        self._load.restype = ctypes.c_uint64
        self._store = lib["__atomic_store_8"]
        self._store.argtypes = (ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int)
        self._store.restype = None

    def load_acquire(self, address: int) -> int:
        if self._load is None:
            return ctypes.c_uint64.from_address(address).value
        return int(self._load(address, _ATOMIC_ACQUIRE))

    def store_release(self, address: int, value: int) -> None:
        if self._store is None:
            ctypes.c_uint64.from_address(address).value = value
        else:
            self._store(address, value, _ATOMIC_RELEASE)


@dataclass(frozen=True, slots=True)
class Sample:
    """A PERF_RECORD_SAMPLE; fields the event does not sample are None.

    ``raw`` is the PERF_SAMPLE_RAW payload as the kernel stores it: what the BPF program passed to
    ``bpf_perf_event_output()``, zero-padded so that size word plus payload fill whole u64s.
    """

    misc: int
    identifier: int | None = None
    ip: int | None = None
    pid: int | None = None
    tid: int | None = None
    time: int | None = None
    addr: int | None = None
    id: int | None = None
    stream_id: int | None = None
    cpu: int | None = None
    period: int | None = None
    callchain: tuple[int, ...] | None = None
    raw: bytes | None = None


@dataclass(frozen=True, slots=True)
class Lost:
    """A PERF_RECORD_LOST: ``lost`` records of event ``id`` were dropped (the ring was full)."""

    id: int
    lost: int


@dataclass(frozen=True, slots=True)
class OtherRecord:
    """Any other record type, undecoded."""

    type: int
    misc: int
    payload: bytes


Record = Sample | Lost | OtherRecord


def _corrupt(message: str) -> KernelError:
    return KernelError(codes.RING_BUFFER, f"corrupt perf ring buffer record: {message}")


def decode_sample(body: bytes, misc: int, sample_type: int) -> Sample:
    """Decode the body (after the header) of a PERF_RECORD_SAMPLE written with ``sample_type``."""
    pos = 0
    fields: dict[str, object] = {}

    def u64() -> int:
        nonlocal pos
        if pos + 8 > len(body):
            raise _corrupt(f"sample ends at byte {len(body)}, a field at {pos} needs 8 more")
        (value,) = _U64.unpack_from(body, pos)
        pos += 8
        return int(value)

    def two_u32() -> tuple[int, int]:
        nonlocal pos
        if pos + 8 > len(body):
            raise _corrupt(f"sample ends at byte {len(body)}, a field at {pos} needs 8 more")
        a, b = _U32X2.unpack_from(body, pos)
        pos += 8
        return int(a), int(b)

    if sample_type & SampleType.IDENTIFIER:
        fields["identifier"] = u64()
    if sample_type & SampleType.IP:
        fields["ip"] = u64()
    if sample_type & SampleType.TID:
        fields["pid"], fields["tid"] = two_u32()
    if sample_type & SampleType.TIME:
        fields["time"] = u64()
    if sample_type & SampleType.ADDR:
        fields["addr"] = u64()
    if sample_type & SampleType.ID:
        fields["id"] = u64()
    if sample_type & SampleType.STREAM_ID:
        fields["stream_id"] = u64()
    if sample_type & SampleType.CPU:
        fields["cpu"], _reserved = two_u32()
    if sample_type & SampleType.PERIOD:
        fields["period"] = u64()
    if sample_type & SampleType.CALLCHAIN:
        nr = u64()
        fields["callchain"] = tuple(u64() for _ in range(nr))
    if sample_type & SampleType.RAW:
        if pos + 4 > len(body):
            raise _corrupt("the raw data size is missing")
        (size,) = struct.unpack_from("=I", body, pos)
        pos += 4
        if pos + size > len(body):
            raise _corrupt(f"raw data of {size} bytes does not fit the {len(body) - pos} left in the record")
        fields["raw"] = bytes(body[pos : pos + size])
    return Sample(misc, **fields)  # type: ignore[arg-type]


def decode_record(record: bytes, sample_type: int) -> Record:
    """Decode one whole record (header included)."""
    rtype, misc, _size = _HEADER.unpack_from(record, 0)
    body = record[_HEADER.size :]
    if rtype == RecordType.SAMPLE:
        return decode_sample(body, misc, sample_type)
    if rtype == RecordType.LOST:
        if len(body) < 16:
            raise _corrupt(f"PERF_RECORD_LOST of {len(record)} bytes")
        lost_id, lost = struct.unpack_from("=QQ", body, 0)
        return Lost(lost_id, lost)
    return OtherRecord(rtype, misc, bytes(body))


class PerfRing:
    """The consumer side of one perf event ring buffer (a ``RingMapping``)."""

    def __init__(self, ring: RingMapping, sample_type: int, *, atomics: Atomics | None = None) -> None:
        unknown = sample_type & ~DECODED_SAMPLE_TYPES
        if unknown:
            names = "|".join(f.name or "?" for f in SampleType if unknown & f)
            raise KernelError(
                codes.RING_BUFFER, f"the ring buffer reader does not decode sample fields {names}"
            )
        self.ring = ring
        self.sample_type = sample_type
        self.atomics = atomics or Atomics()
        page = MmapPage.from_address(ring.address)
        self.data_offset = page.data_offset or ring.page_size
        self.data_size = page.data_size or ring.data_size
        if self.data_size <= 0 or self.data_size & (self.data_size - 1):
            raise KernelError(
                codes.RING_BUFFER, f"ring buffer data size {self.data_size} is not a power of two"
            )
        self._base = ring.address + self.data_offset

    def pending(self) -> int:
        """Bytes written by the kernel and not consumed yet."""
        head = self.atomics.load_acquire(self.ring.address + _HEAD)
        tail = ctypes.c_uint64.from_address(self.ring.address + _TAIL).value
        return head - tail

    def _copy(self, position: int, length: int) -> bytes:
        start = position & (self.data_size - 1)
        first = min(length, self.data_size - start)
        data = ctypes.string_at(self._base + start, first)
        if first < length:
            data += ctypes.string_at(self._base, length - first)
        return data

    def records(self) -> Iterator[Record]:
        """Yield every record available now; each is released to the kernel once copied out."""
        head = self.atomics.load_acquire(self.ring.address + _HEAD)
        tail = ctypes.c_uint64.from_address(self.ring.address + _TAIL).value
        while tail < head:
            header = EventHeader.from_buffer_copy(self._copy(tail, ctypes.sizeof(EventHeader)))
            if header.size < ctypes.sizeof(EventHeader) or header.size > head - tail:
                raise _corrupt(
                    f"header at position {tail} says {header.size} bytes, {head - tail} are available"
                )
            record = self._copy(tail, header.size)
            tail += header.size
            self.atomics.store_release(self.ring.address + _TAIL, tail)
            yield decode_record(record, self.sample_type)


def wait_readable(fds: Sequence[int], timeout_ms: int) -> list[int]:
    """The perf event fds whose ring has data (reached its wakeup mark), waiting up to ``timeout_ms``."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, events in poller.poll(timeout_ms) if events & select.POLLIN]
