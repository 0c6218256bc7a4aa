"""Capture.drain's answer to the run loop: come back at once while records arrive, sleep when not."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Iterable
from pathlib import Path

import pytest
from evspec.loader.abi.perf import MmapPage, PerfType, RecordType, SwConfig
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import RingMapping
from evspec.loader.output import capture as capture_module
from evspec.loader.output import perfdata as pd
from evspec.loader.output.capture import Capture, RecordCounts
from evspec.loader.output.perf_ring import PerfRing
from evspec.loader.session import SAMPLE_TYPE, TRACKING_SAMPLE_TYPE, perf_attr

HOST = pd.HostInfo("box", "6.1.0", "evspec 0.1.0", "x86_64", 2, 2, ("evspec", "record", "-o", "x"))
PAGE = 4096
RING_BYTES = 1 << 16


def file_attr(name: str, config: int, sample_type: int, ids: tuple[int, ...]) -> pd.FileAttr:
    attr = perf_attr({"type": PerfType.SOFTWARE, "config": config, "sample_type": sample_type, "sample_id_all": 1})
    return pd.FileAttr.of(name, attr, ids)


ATTRS = [
    file_attr("dummy:tracking", SwConfig.DUMMY, TRACKING_SAMPLE_TYPE, (1, 2)),
    file_attr("__bpf_stdout__", SwConfig.BPF_OUTPUT, SAMPLE_TYPE, (3, 4)),
]


def one_sample(time: int) -> bytes:
    """A 56-byte bpf-output payload sampled with SAMPLE_TYPE (identifier, ip, tid, time, cpu, period, raw)."""
    body = struct.pack("<QQIIQIIQ", 3, 0, 7, 7, time, 0, 0, 1) + struct.pack("<I", 60) + bytes(60)
    return struct.pack("<IHH", RecordType.SAMPLE, 0, 8 + len(body)) + body


def lost_record(count: int) -> bytes:
    """A PERF_RECORD_LOST of ``count`` samples with the sample_id_all trailer of SAMPLE_TYPE."""
    body = struct.pack("<QQ", 3, count) + struct.pack("<IIQIIQ", 0, 0, 0, 0, 0, 3)
    return struct.pack("<IHH", RecordType.LOST, 0, 8 + len(body)) + body


class Ring:
    """A mapping laid out like the kernel's, filled at data_head as the kernel would."""

    def __init__(self) -> None:
        self.buf = ctypes.create_string_buffer(PAGE + RING_BYTES)
        self.page = MmapPage.from_address(ctypes.addressof(self.buf))
        self.page.data_offset, self.page.data_size = PAGE, RING_BYTES
        self.reader = PerfRing(RingMapping(-1, ctypes.addressof(self.buf), PAGE + RING_BYTES, PAGE), SAMPLE_TYPE)

    def put(self, record: bytes) -> None:
        head = self.page.data_head
        start = head % RING_BYTES
        assert start + len(record) <= RING_BYTES  # these tests never wrap
        ctypes.memmove(ctypes.addressof(self.buf) + PAGE + start, record, len(record))
        self.page.data_head = head + len(record)


def test_drain_asks_for_another_round_while_any_records_arrive(tmp_path: Path) -> None:
    rings = [Ring(), Ring()]
    capture = Capture(tmp_path / "c.data", ATTRS, [r.reader for r in rings], HOST)
    assert capture.drain() is False  # nothing yet: the reader may sleep until a wakeup
    rings[1].put(one_sample(1))  # far below any wakeup mark (one record of 4096 a ring holds)
    assert capture.drain() is True
    assert rings[1].page.data_tail == rings[1].page.data_head
    assert capture.drain() is False  # the round found nothing new
    for time in range(2, 200):
        rings[time % 2].put(one_sample(time))
    assert capture.drain() is True
    assert capture.drain() is False
    capture.finish()
    assert capture.samples == 199
    data = pd.read_perf_data(tmp_path / "c.data")
    assert sum(r.type == RecordType.SAMPLE for r in data.records()) == 199
    assert sum(r.type == pd.FINISHED_ROUND for r in data.records()) == 2  # no empty rounds


def test_records_are_counted_from_the_file_not_while_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ring = Ring()
    capture = Capture(tmp_path / "c.data", ATTRS, [ring.reader], HOST)
    counted: list[int] = []
    real_count_span = capture_module.count_span

    def count_span(parts: Iterable[bytes | memoryview]) -> RecordCounts:
        pieces = list(parts)
        counted.append(sum(len(p) for p in pieces))
        return real_count_span(pieces)

    monkeypatch.setattr(capture_module, "count_span", count_span)
    for time in range(10):
        ring.put(one_sample(time))
    ring.put(lost_record(7))
    capture.drain()
    assert counted == []  # the round only wrote and released
    assert (capture.samples, capture.lost, capture.lost_records) == (10, 7, 1)
    ring.put(one_sample(11))
    capture.drain()
    assert capture.samples == 11  # counted again while the file grows
    capture.finish()
    calls = len(counted)
    assert (capture.samples, capture.lost) == (11, 7)
    assert len(counted) == calls  # a finished file is counted once


def test_a_corrupt_record_is_reported_when_counted(tmp_path: Path) -> None:
    ring = Ring()
    ring.put(one_sample(1))
    ring.put(struct.pack("<IHH", RecordType.SAMPLE, 0, 4096) + bytes(8))  # says more than is there
    capture = Capture(tmp_path / "c.data", ATTRS, [ring.reader], HOST)
    capture.drain()
    with pytest.raises(ObjectError, match="says 4096 bytes"):
        _ = capture.samples
    capture.finish()
