"""Reading a perf event's mmap'ed ring buffer (one per CPU) and decoding its records.

The kernel writes records at ``data_head`` and we consume them from ``data_tail``. The protocol of
include/uapi/linux/perf_event.h needs a load-acquire of ``data_head`` before the records are read,
and a store-release of ``data_tail`` after they were copied or written out. On x86_64 (TSO) plain
aligned loads and stores are that; elsewhere they go through libatomic's ``__atomic_load_8`` /
``__atomic_store_8`` (C11 semantics).
"""

from __future__ import annotations

import ctypes
import platform
import select
import struct
from collections.abc import Iterator, Sequence
from itertools import chain

from evspec.loader.abi.perf import MmapPage, RecordType
from evspec.loader.abi.perf_bits import SampleType
from evspec.loader.kernel import KernelError, RingMapping

from evspec.codes import kernel as codes
from evspec.span import Slotted

_ATOMIC_ACQUIRE = 2  # __ATOMIC_ACQUIRE
_ATOMIC_RELEASE = 3  # __ATOMIC_RELEASE
_HEAD = MmapPage.data_head.offset
_TAIL = MmapPage.data_tail.offset
_HEADER = struct.Struct("<IHH")
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")

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
    """64-bit load-acquire and store-release on a shared mapping.

    On x86_64 (TSO) every aligned load is an acquire and every store a release: ``plain`` is set
    and the ring reader reads and writes the words directly (a libatomic call through ctypes costs
    ten times as much). Elsewhere libatomic's C11 atomics are called."""

    def __init__(self, machine: str | None = None) -> None:
        self._load = self._store = None
        machine = machine or platform.machine()
        self.plain = machine in ("x86_64", "amd64")
        if self.plain:
            return
        try:
            lib = ctypes.CDLL("libatomic.so.1")
        except OSError:
            raise KernelError(
                codes.RING_BUFFER,
                f"reading perf ring buffers on {machine} needs libatomic (libatomic.so.1) for "
                "acquire/release ordering; install it (Debian: libatomic1)",
            ) from None
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


class Sample(Slotted):
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


class Lost(Slotted):
    """A PERF_RECORD_LOST: ``lost`` records of event ``id`` were dropped (the ring was full)."""

    id: int
    lost: int


class LostCount(Slotted):
    """The samples one event instance had no room for in its ring, as the event counts them
    (read() with PERF_FORMAT_LOST): every drop, reported by a PERF_RECORD_LOST or not."""

    event: str
    id: int  # the instance's kernel id (PERF_EVENT_IOC_ID)
    cpu: int  # -1: the instance follows a task on any CPU
    lost: int


class OtherRecord(Slotted):
    """Any other record type, undecoded."""

    type: int
    misc: int
    payload: bytes


Record = Sample | Lost | OtherRecord


def _corrupt(message: str) -> KernelError:
    return KernelError(codes.RING_BUFFER, f"corrupt perf ring buffer record: {message}")


# (bit, field names, struct codes) of the fixed-size sample fields, in the order the kernel writes
# them; CALLCHAIN (variable) and RAW (size-prefixed) come after CPU/PERIOD and are handled apart.
_FIXED_FIELDS = (
    (SampleType.IDENTIFIER, ("identifier",), "Q"),
    (SampleType.IP, ("ip",), "Q"),
    (SampleType.TID, ("pid", "tid"), "II"),
    (SampleType.TIME, ("time",), "Q"),
    (SampleType.ADDR, ("addr",), "Q"),
    (SampleType.ID, ("id",), "Q"),
    (SampleType.STREAM_ID, ("stream_id",), "Q"),
    (SampleType.CPU, ("cpu", "_cpu_reserved"), "II"),
    (SampleType.PERIOD, ("period",), "Q"),
)

# The fields a bulk-decoded sample must carry (``SampleLayout.bulk_ready``: loader.output.samples).
BULK_FIELDS = ("pid", "tid", "time", "cpu", "period")


class SampleLayout:
    """Where the fields of a PERF_RECORD_SAMPLE of one ``sample_type`` are: the fixed-size fields
    unpacked with one ``struct`` call, then the callchain and the raw data.

    ``index(name)`` is the position of a field in what ``fixed.unpack_from`` returns (or None).
    """

    def __init__(self, sample_type: int) -> None:
        self.sample_type = sample_type
        names: list[str] = []
        codes_ = "<"
        for bit, field_names, code in _FIXED_FIELDS:
            if sample_type & bit:
                names.extend(field_names)
                codes_ += code
        self.fixed = struct.Struct(codes_)
        self.names = tuple(names)
        self.callchain = bool(sample_type & SampleType.CALLCHAIN)
        self.raw = bool(sample_type & SampleType.RAW)

    def offsets(self) -> dict[str, int]:
        """Where each fixed-size field is in a whole record (its 8-byte header included)."""
        out: dict[str, int] = {}
        at = _HEADER.size
        for bit, field_names, code in _FIXED_FIELDS:
            if self.sample_type & bit:
                for name, one in zip(field_names, code, strict=True):
                    out[name] = at
                    at += struct.calcsize(one)
        return out

    def index(self, name: str) -> int | None:
        return self.names.index(name) if name in self.names else None

    @property
    def bulk_ready(self) -> bool:
        """Whether runs of this layout's samples can be decoded as columns (raw data last, no
        callchain, every field of BULK_FIELDS present)."""
        return self.raw and not self.callchain and all(f in self.names for f in BULK_FIELDS)

    def unpack(self, body: bytes, pos: int, end: int) -> tuple[tuple[int, ...], tuple[int, ...] | None, bytes | None]:
        """The fixed fields, callchain and raw data of the sample whose body is ``body[pos:end]``."""
        fixed_end = pos + self.fixed.size
        if fixed_end > end:
            raise _corrupt(f"sample ends at byte {end - pos}, its fields need {self.fixed.size}")
        values = self.fixed.unpack_from(body, pos)
        pos = fixed_end
        chain = None
        if self.callchain:
            if pos + 8 > end:
                raise _corrupt(f"sample ends at byte {end - pos}, the callchain size is missing")
            (nr,) = _U64.unpack_from(body, pos)
            if pos + 8 + 8 * nr > end:
                raise _corrupt(f"a callchain of {nr} entries does not fit the sample")
            chain = struct.unpack_from(f"<{nr}Q", body, pos + 8)
            pos += 8 + 8 * nr
        raw = None
        if self.raw:
            if pos + 4 > end:
                raise _corrupt("the raw data size is missing")
            (size,) = _U32.unpack_from(body, pos)
            pos += 4
            if pos + size > end:
                raise _corrupt(f"raw data of {size} bytes does not fit the {end - pos} left in the record")
            raw = body[pos : pos + size]
        return values, chain, raw


def decode_sample(body: bytes, misc: int, sample_type: int, layout: SampleLayout | None = None) -> Sample:
    """Decode the body (after the header) of a PERF_RECORD_SAMPLE written with ``sample_type``."""
    layout = layout or SampleLayout(sample_type)
    values, chain, raw = layout.unpack(body, 0, len(body))
    fields = dict(zip(layout.names, values, strict=True))
    fields.pop("_cpu_reserved", None)
    return Sample(misc, callchain=chain, raw=raw, **fields)  # type: ignore[arg-type]


def run_length(buffer: bytes | memoryview, pos: int, size: int, count: int) -> int:
    """How many records from ``pos`` (at most ``count``, all ``size`` bytes apart) have the 8-byte
    header (type, misc, size) of the one at ``pos``.

    The headers are gathered with one strided copy of the buffer seen as u64s and compared with
    ``count`` copies of the first at C speed; only a run that stops early is bisected. Record
    sizes are multiples of 8 in a ring buffer; another size is never part of a run."""
    if count <= 1 or size % 8:
        return min(count, 1)
    headers = memoryview(buffer)[pos : pos + count * size].cast("Q")[:: size // 8].tobytes()
    expected = headers[:_HEADER.size] * count
    if headers == expected:
        return count
    same, differs = 1, count  # headers[:8 * same] matches, headers[:8 * differs] does not
    while differs - same > 1:
        middle = (same + differs) // 2
        if headers[: 8 * middle] == expected[: 8 * middle]:
            same = middle
        else:
            differs = middle
    return same


_CUT_GROUP = 64  # records cut by one struct
_CUTTERS: dict[tuple[int, int, int, int], struct.Struct] = {}


def _cutter(offset: int, length: int, size: int, count: int) -> struct.Struct:
    key = (offset, length, size, count)
    cutter = _CUTTERS.get(key)
    if cutter is None:
        if len(_CUTTERS) >= 1024:  # many record sizes: forget them all now and then
            _CUTTERS.clear()
        cutter = _CUTTERS[key] = struct.Struct("=" + f"{offset}x{length}s{size - offset - length}x" * count)
    return cutter


def cut_column(buffer: bytes | bytearray | memoryview, offset: int, length: int, size: int, count: int) -> list[bytes]:
    """``length`` bytes at ``offset`` of each of ``count`` records of ``size`` bytes in ``buffer``,
    cut by a ``struct`` of many records (no Python step per record)."""
    view = memoryview(buffer)
    groups, rest = divmod(count, _CUT_GROUP)
    out: list[bytes] = []
    if groups:
        out.extend(chain.from_iterable(_cutter(offset, length, size, _CUT_GROUP).iter_unpack(
            view[: groups * _CUT_GROUP * size])))
    if rest:
        out.extend(_cutter(offset, length, size, rest).unpack_from(view, groups * _CUT_GROUP * size))
    return out


def walk_records(chunk: bytes) -> Iterator[tuple[int, int, int, int]]:
    """(type, misc, offset, size) of every record in ``chunk``, a run of whole records."""
    pos, end = 0, len(chunk)
    unpack = _HEADER.unpack_from
    while pos < end:
        if pos + 8 > end:
            raise _corrupt(f"{end - pos} bytes left at position {pos}, less than a record header")
        rtype, misc, size = unpack(chunk, pos)
        if size < 8 or pos + size > end:
            raise _corrupt(f"header at position {pos} says {size} bytes, {end - pos} are available")
        yield rtype, misc, pos, size
        pos += size


def decode_record(record: bytes, sample_type: int, layout: SampleLayout | None = None) -> Record:
    """Decode one whole record (header included)."""
    rtype, misc, _size = _HEADER.unpack_from(record, 0)
    body = record[_HEADER.size :]
    if rtype == RecordType.SAMPLE:
        return decode_sample(body, misc, sample_type, layout)
    if rtype == RecordType.LOST:
        if len(body) < 16:
            raise _corrupt(f"PERF_RECORD_LOST of {len(record)} bytes")
        lost_id, lost = struct.unpack_from("<QQ", body, 0)
        return Lost(lost_id, lost)
    return OtherRecord(rtype, misc, bytes(body))


class RingSpan(Slotted):
    """Records in a ring's data area: one slice of the mapping, or two when they wrap around its
    end (a record may straddle them); ``head`` is the position to release once they are used."""

    head: int
    parts: tuple[memoryview, ...]

    @property
    def size(self) -> int:
        return sum(len(part) for part in self.parts)


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
        self.layout = SampleLayout(sample_type)
        # the data area in place, for writing records out without copying them first
        self.view = memoryview((ctypes.c_char * self.data_size).from_address(self._base)).cast("B")
        self._head = ctypes.c_uint64.from_address(ring.address + _HEAD)
        self._tail = ctypes.c_uint64.from_address(ring.address + _TAIL)

    def _span(self) -> tuple[int, int]:
        """(tail, head): what the kernel wrote since the last release."""
        if self.atomics.plain:
            head = self._head.value
        else:
            head = self.atomics.load_acquire(self.ring.address + _HEAD)
        tail = self._tail.value
        if head - tail > self.data_size:
            raise _corrupt(f"data_head {head} is more than the ring's {self.data_size} bytes past data_tail {tail}")
        return tail, head

    def pending(self) -> int:
        """Bytes written by the kernel and not consumed yet."""
        tail, head = self._span()
        return head - tail

    def take(self) -> bytes:
        """Every record written since the last call, copied out in one piece (the wrap-around
        joined); the space is handed back to the kernel at once."""
        tail, head = self._span()
        if head == tail:
            return b""
        start = tail & (self.data_size - 1)
        first = min(head - tail, self.data_size - start)
        chunk = ctypes.string_at(self._base + start, first)
        if first < head - tail:
            chunk += ctypes.string_at(self._base, head - tail - first)
        self._release(head)
        return chunk

    def peek(self) -> RingSpan | None:
        """The records written since the last ``release``, in place (None when there are none).
        The kernel does not overwrite them until they are released."""
        tail, head = self._span()
        if head == tail:
            return None
        start = tail & (self.data_size - 1)
        end = start + head - tail
        if end <= self.data_size:
            return RingSpan(head, (self.view[start:end],))
        return RingSpan(head, (self.view[start:], self.view[: end - self.data_size]))

    def release(self, span: RingSpan) -> None:
        """Hand the space of ``span`` (and of everything before it) back to the kernel."""
        self._release(span.head)

    def _release(self, head: int) -> None:
        if self.atomics.plain:
            self._tail.value = head
        else:
            self.atomics.store_release(self.ring.address + _TAIL, head)

    def records(self) -> Iterator[Record]:
        """Every record available now (the space is released before they are decoded)."""
        chunk = self.take()
        for _type, _misc, pos, size in walk_records(chunk):
            yield decode_record(chunk[pos : pos + size], self.sample_type, self.layout)


def wait_readable(fds: Sequence[int], timeout_ms: int) -> list[int]:
    """The perf event fds whose ring has data (reached its wakeup mark), waiting up to ``timeout_ms``."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, events in poller.poll(timeout_ms) if events & select.POLLIN]
