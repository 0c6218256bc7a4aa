"""The perf ring-buffer reader over a buffer laid out like the kernel's mapping."""

from __future__ import annotations

import ctypes
import struct

import pytest
from evspec.loader.abi.perf import MmapPage, RecordType, SampleType
from evspec.loader.kernel import Kernel, KernelError, RingMapping
from evspec.loader.kernel.fake import FakeKernel
from evspec.loader.output import perf_ring
from evspec.loader.output.perf_ring import Atomics, Lost, OtherRecord, PerfRing, Sample
from evspec.loader.session import OpenedEvent, RecordSession, perf_attr
from hypothesis import given, settings
from hypothesis import strategies as st
from perf_records import full_sample, lost_record

PAGE = 4096
RAW_TID_TIME_CPU = SampleType.RAW | SampleType.TID | SampleType.TIME | SampleType.CPU


class FakeRing:
    """The kernel's side: writes records at data_head, wrapping around the data area."""

    def __init__(self, data_size: int = 256, *, set_data_fields: bool = True) -> None:
        self.data_size = data_size
        self.buf = ctypes.create_string_buffer(PAGE + data_size)
        self.address = ctypes.addressof(self.buf)
        self.page = MmapPage.from_address(self.address)
        if set_data_fields:
            self.page.data_offset, self.page.data_size = PAGE, data_size
        self.mapping = RingMapping(fd=-1, address=self.address, length=PAGE + data_size, page_size=PAGE)

    def start_at(self, position: int) -> None:
        self.page.data_head = self.page.data_tail = position

    def free(self) -> int:
        return self.data_size - (self.page.data_head - self.page.data_tail)

    def write(self, rtype: int, body: bytes, misc: int = 0) -> None:
        record = struct.pack("=IHH", rtype, misc, 8 + len(body)) + body
        assert len(record) % 8 == 0 and len(record) <= self.free()
        head = self.page.data_head
        for i, byte in enumerate(record):
            self.buf[PAGE + (head + i) % self.data_size] = byte
        self.page.data_head = head + len(record)


def raw_sample(pid: int, tid: int, time: int, cpu: int, payload: bytes) -> bytes:
    size = (len(payload) + 4 + 7) // 8 * 8 - 4  # the kernel pads size word + payload to u64s
    return (
        struct.pack("=IIQII", pid, tid, time, cpu, 0) + struct.pack("=I", size) + payload.ljust(size, b"\0")
    )


def test_samples_decode_with_raw_tid_time_cpu() -> None:
    ring = FakeRing()
    ring.write(RecordType.SAMPLE, raw_sample(10, 11, 12345, 1, b"hello1\0"), misc=2)
    ring.write(RecordType.SAMPLE, raw_sample(20, 21, 23456, 0, bytes(range(8))))
    records = list(PerfRing(ring.mapping, RAW_TID_TIME_CPU).records())
    assert records == [
        Sample(misc=2, pid=10, tid=11, time=12345, cpu=1, raw=b"hello1\0" + bytes(5)),
        Sample(misc=0, pid=20, tid=21, time=23456, cpu=0, raw=bytes(range(8)) + bytes(4)),
    ]
    assert ring.page.data_tail == ring.page.data_head


def test_a_record_that_wraps_around_the_end_is_whole() -> None:
    ring = FakeRing(256)
    ring.start_at(256 * 3 + 232)  # 24 bytes before the end of the area: header fits, body wraps
    payload = bytes(range(40))
    ring.write(RecordType.SAMPLE, raw_sample(1, 2, 3, 0, payload))
    (sample,) = PerfRing(ring.mapping, RAW_TID_TIME_CPU).records()
    assert isinstance(sample, Sample) and sample.raw == payload + bytes(4)
    assert ring.page.data_tail == 256 * 3 + 232 + 8 + 24 + 4 + 44  # header, tid/time/cpu, raw


def test_lost_and_other_records() -> None:
    ring = FakeRing()
    ring.write(RecordType.LOST, struct.pack("=QQ", 77, 5))
    ring.write(RecordType.COMM, b"comm\0\0\0\0")
    records = list(PerfRing(ring.mapping, RAW_TID_TIME_CPU).records())
    assert records == [Lost(id=77, lost=5), OtherRecord(RecordType.COMM, 0, b"comm\0\0\0\0")]


def test_every_decoded_field_in_kernel_order() -> None:
    st_all = perf_ring.DECODED_SAMPLE_TYPES
    body = struct.pack(
        "=QQIIQQQQIIQ",
        1,  # identifier
        0xFFFF0000,  # ip
        5,
        6,  # pid, tid
        7,  # time
        8,  # addr
        9,  # id
        10,  # stream_id
        3,
        0,  # cpu, reserved
        11,  # period
    )
    body += struct.pack("=QQQ", 2, 0xA, 0xB)  # callchain
    body += struct.pack("=I", 4) + b"abcd"  # raw
    ring = FakeRing()
    ring.write(RecordType.SAMPLE, body)
    (s,) = PerfRing(ring.mapping, st_all).records()
    assert s == Sample(0, 1, 0xFFFF0000, 5, 6, 7, 8, 9, 10, 3, 11, (0xA, 0xB), b"abcd")


def test_records_are_released_before_they_are_decoded() -> None:
    ring = FakeRing()
    ring.write(RecordType.LOST, struct.pack("=QQ", 1, 1))
    ring.write(RecordType.LOST, struct.pack("=QQ", 2, 2))
    reader = PerfRing(ring.mapping, 0)
    it = reader.records()
    assert next(it) == Lost(1, 1)
    assert ring.page.data_tail == 48 and reader.pending() == 0
    ring.write(RecordType.LOST, struct.pack("=QQ", 3, 3))
    assert list(it) == [Lost(2, 2)]  # the batch taken first
    assert list(reader.records()) == [Lost(3, 3)]


def test_take_joins_the_wrap_around_and_releases() -> None:
    ring = FakeRing(256)
    ring.start_at(256 * 5 + 240)  # 16 bytes before the end
    ring.write(RecordType.LOST, struct.pack("=QQ", 9, 1))
    ring.write(RecordType.LOST, struct.pack("=QQ", 8, 2))
    reader = PerfRing(ring.mapping, 0)
    chunk = reader.take()
    assert chunk == b"".join(
        struct.pack("=IHHQQ", RecordType.LOST, 0, 24, i, n) for i, n in ((9, 1), (8, 2))
    )
    assert ring.page.data_tail == ring.page.data_head and reader.take() == b""


def test_take_refuses_a_head_beyond_the_ring() -> None:
    ring = FakeRing(256)
    ring.page.data_head = 512
    with pytest.raises(KernelError, match="more than the ring's 256 bytes"):
        PerfRing(ring.mapping, 0).take()


def test_walk_records_gives_offsets_and_refuses_a_partial_record() -> None:
    data = struct.pack("=IHH", 9, 1, 16) + bytes(8) + struct.pack("=IHH", 2, 0, 8)
    assert list(perf_ring.walk_records(data)) == [(9, 1, 0, 16), (2, 0, 16, 8)]
    with pytest.raises(KernelError, match="less than a record header"):
        list(perf_ring.walk_records(data + b"\0" * 4))


def test_sample_layout_indexes_fields() -> None:
    layout = perf_ring.SampleLayout(SampleType.IDENTIFIER | SampleType.TID | SampleType.CPU | SampleType.RAW)
    assert layout.names == ("identifier", "pid", "tid", "cpu", "_cpu_reserved")
    assert (layout.index("tid"), layout.index("time")) == (2, None)
    body = struct.pack("=QIIII", 7, 1, 2, 3, 0) + struct.pack("=I", 4) + b"abcd"
    assert layout.unpack(body, 0, len(body)) == ((7, 1, 2, 3, 0), None, b"abcd")


def test_data_area_defaults_to_the_mapping_when_the_page_does_not_say() -> None:
    ring = FakeRing(512, set_data_fields=False)
    ring.write(RecordType.LOST, struct.pack("=QQ", 3, 4))
    reader = PerfRing(ring.mapping, 0)
    assert (reader.data_offset, reader.data_size) == (PAGE, 512)
    assert list(reader.records()) == [Lost(3, 4)]


def test_sample_fields_the_reader_cannot_decode_are_refused() -> None:
    ring = FakeRing()
    with pytest.raises(KernelError) as info:
        PerfRing(ring.mapping, SampleType.RAW | SampleType.READ | SampleType.BRANCH_STACK)
    assert info.value.code == "EK013"
    assert "READ|BRANCH_STACK" in info.value.message


def test_corrupt_records_raise() -> None:
    ring = FakeRing()
    ring.write(RecordType.SAMPLE, struct.pack("=IIQ", 1, 2, 3))  # TID|TIME only, RAW missing
    with pytest.raises(KernelError, match="raw data size is missing"):
        list(PerfRing(ring.mapping, SampleType.TID | SampleType.TIME | SampleType.RAW).records())
    ring = FakeRing()
    ring.write(RecordType.SAMPLE, struct.pack("=IIQ", 1, 2, 3))
    with pytest.raises(KernelError, match="sample ends at byte 16, its fields need 24"):
        list(PerfRing(ring.mapping, RAW_TID_TIME_CPU).records())
    ring = FakeRing()
    ring.write(RecordType.LOST, struct.pack("=QQ", 1, 1))
    ring.page.data_head = 16  # the header claims 24 bytes, only 16 were published
    with pytest.raises(KernelError, match="says 24 bytes, 16 are available"):
        list(PerfRing(ring.mapping, 0).records())
    ring = FakeRing()
    ring.write(RecordType.SAMPLE, struct.pack("=II", 1, 2) + struct.pack("=I", 100) + bytes(4))
    with pytest.raises(KernelError, match="raw data of 100 bytes"):
        list(PerfRing(ring.mapping, SampleType.TID | SampleType.RAW).records())


def test_data_area_must_be_a_power_of_two() -> None:
    ring = FakeRing(256)
    ring.page.data_size = 200
    with pytest.raises(KernelError, match="not a power of two"):
        PerfRing(ring.mapping, 0)


def test_atomics_without_libatomic(monkeypatch: pytest.MonkeyPatch) -> None:
    real_cdll = ctypes.CDLL

    def no_libatomic(name: str, *a: object, **kw: object) -> ctypes.CDLL:
        if name == "libatomic.so.1":
            raise OSError(name)
        return real_cdll(name, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(ctypes, "CDLL", no_libatomic)
    word = ctypes.c_uint64(5)
    plain = Atomics("x86_64")
    assert plain.load_acquire(ctypes.addressof(word)) == 5
    plain.store_release(ctypes.addressof(word), 9)
    assert word.value == 9
    with pytest.raises(KernelError, match="needs libatomic"):
        Atomics("aarch64")


def test_atomics_with_libatomic() -> None:
    word = ctypes.c_uint64(1 << 40)
    atomics = Atomics("aarch64")  # not TSO: libatomic's acquire/release calls
    assert not atomics.plain and Atomics("x86_64").plain
    assert atomics.load_acquire(ctypes.addressof(word)) == 1 << 40
    atomics.store_release(ctypes.addressof(word), 3)
    assert word.value == 3


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=60), min_size=1, max_size=40), st.integers(0, 255))
def test_any_sequence_of_payloads_comes_back_in_order(payloads: list[bytes], start: int) -> None:
    ring = FakeRing(256)
    ring.start_at(start * 8)
    reader = PerfRing(ring.mapping, SampleType.RAW)
    got: list[bytes] = []
    for payload in payloads:
        size = (len(payload) + 4 + 7) // 8 * 8 - 4
        body = struct.pack("=I", size) + payload.ljust(size, b"\0")
        if 8 + len(body) > ring.free():
            got += [r.raw for r in reader.records() if isinstance(r, Sample) and r.raw is not None]
        ring.write(RecordType.SAMPLE, body)
    got += [r.raw for r in reader.records() if isinstance(r, Sample) and r.raw is not None]
    assert [g.rstrip(b"\0") for g in got] == [p.rstrip(b"\0") for p in payloads]
    assert all(len(g) % 8 == 4 for g in got)


class ReadingFunnel(FakeKernel):
    """A fake kernel whose perf events answer read(2) with {value, lost}."""

    def __init__(self, lost: int) -> None:
        super().__init__()
        self.lost = lost

    def read(self, fd: int, size: int) -> bytes:
        assert self.open_fds.get(fd) == "perf"
        return struct.pack("=QQ", 1, self.lost)[:size]


def test_lost_counts_are_read_from_the_events_when_the_kernel_keeps_them() -> None:
    assert not Kernel(FakeKernel()).lost_count_readable()  # a funnel without read(2)
    kernel = Kernel(ReadingFunnel(lost=7))
    assert kernel.lost_count_readable() and not kernel.funnel.open_fds  # type: ignore[attr-defined]
    session = RecordSession(kernel=kernel)
    session._lost_readable = True
    ev = OpenedEvent("evt", perf_attr({"type": 1, "config": 10}), True)
    ev.fds = [[kernel.perf_event_open(ev.attr, pid=-1, cpu=0), kernel.perf_event_open(ev.attr, pid=-1, cpu=1)]]
    ev.cpus, ev.ids = (0, 1), [41, 42]
    session.events.append(ev)
    session.lost_reported = 5
    session.count_lost()
    assert (session.lost_counted, session.lost) == (14, 14)
    assert session.lost_counts == (perf_ring.LostCount("evt", 41, 0, 7), perf_ring.LostCount("evt", 42, 1, 7))
    assert session.summary() == {"samples": 0, "lost": 14, "lost_reported": 5}
    session.lost_counted = 5
    assert session.summary() == {"samples": 0, "lost": 5}


def test_a_short_read_of_an_event_is_an_error() -> None:
    class Short(ReadingFunnel):
        def read(self, fd: int, size: int) -> bytes:
            return b"\0" * 8

    kernel = Kernel(Short(lost=1))
    fd = kernel.perf_event_open(perf_attr({"type": 1, "config": 9}))
    with pytest.raises(KernelError, match="8 bytes, not the 16"):
        kernel.read_lost(fd)
    assert not kernel.lost_count_readable()


def test_run_length_finds_where_a_run_of_equal_headers_stops() -> None:
    one = full_sample(5, 5, 1, 0, b"abc")
    size = len(one)
    for stop in range(1, 40):
        chunk = one * stop + lost_record(1) + one * 3
        fits = min(40, len(chunk) // size)
        assert perf_ring.run_length(chunk, 0, size, fits) == stop
        assert perf_ring.run_length(memoryview(chunk), 0, size, fits) == stop  # a ring's mapping
    other_misc = one[:4] + struct.pack("=H", 1) + one[6:]
    assert perf_ring.run_length(one * 3 + other_misc, 0, size, 4) == 3  # the whole header counts
    assert perf_ring.run_length(b"\0" * 36, 0, 12, 3) == 1  # not a ring record size: one at a time
    assert perf_ring.run_length(one, 0, size, 0) == 0


def test_peek_gives_the_records_in_place_and_release_frees_them() -> None:
    ring = FakeRing(256)
    ring.start_at(256 * 2 + 240)  # 16 bytes before the end
    ring.write(RecordType.LOST, struct.pack("=QQ", 9, 1))
    reader = PerfRing(ring.mapping, 0)
    span = reader.peek()
    assert span is not None and [len(p) for p in span.parts] == [16, 8] and span.size == 24
    assert b"".join(bytes(p) for p in span.parts) == struct.pack("=IHHQQ", RecordType.LOST, 0, 24, 9, 1)
    assert reader.pending() == 24  # not released yet: the kernel cannot write over it
    ring.write(RecordType.LOST, struct.pack("=QQ", 8, 2))
    reader.release(span)
    assert ring.page.data_tail == 256 * 2 + 264 and reader.pending() == 24
    again = reader.peek()
    assert again is not None and len(again.parts) == 1 and bytes(again.parts[0])[8:16] == struct.pack("=Q", 8)
    reader.release(again)
    assert reader.peek() is None


def test_the_ring_protocol_through_libatomic() -> None:
    ring = FakeRing(256)
    ring.start_at(200)
    ring.write(RecordType.LOST, struct.pack("=QQ", 9, 1))
    reader = PerfRing(ring.mapping, 0, atomics=Atomics("aarch64"))
    assert reader.pending() == 24 and list(reader.records()) == [Lost(9, 1)]
    assert ring.page.data_tail == ring.page.data_head == 224
    ring.write(RecordType.LOST, struct.pack("=QQ", 8, 2))
    span = reader.peek()
    assert span is not None
    reader.release(span)
    assert ring.page.data_tail == 248
