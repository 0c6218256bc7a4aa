"""perf.data writer and reader, capture counting and script replay, without a kernel."""

from __future__ import annotations

import argparse
import ctypes
import io
import json
import os
import struct
from pathlib import Path

import pytest
from evspec.loader.abi.perf import PERF_ATTR_SIZE_VER7, MmapPage, PerfType, RecordType, SampleType, SwConfig
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import RingMapping
from evspec.loader.output import perfdata as pd
from evspec.loader.output.capture import Capture, comm_record, count_records, count_span
from evspec.loader.output.perf_ring import LostCount, PerfRing
from evspec.loader.session import SAMPLE_TYPE, TRACKING_SAMPLE_TYPE, perf_attr

from evspec.cli.script import add_script_parser, script_lines, script_main

HOST = pd.HostInfo("box", "6.1.0", "evspec 0.1.0", "x86_64", 4, 2, ("evspec", "record", "-o", "x"))
PAGE = 4096


def attr(name: str, type_: int, config: int, sample_type: int, ids: tuple[int, ...]) -> pd.FileAttr:
    a = perf_attr({"type": type_, "config": config, "sample_type": sample_type, "sample_id_all": 1})
    return pd.FileAttr.of(name, a, ids)


TRACKING = attr("dummy:tracking", PerfType.SOFTWARE, SwConfig.DUMMY, TRACKING_SAMPLE_TYPE, (1, 2))
OUTPUT = attr("__bpf_stdout__", PerfType.SOFTWARE, SwConfig.BPF_OUTPUT, SAMPLE_TYPE, (3, 4))


def sample(ident: int, pid: int, tid: int, time: int, cpu: int, payload: bytes) -> bytes:
    size = (len(payload) + 4 + 7) // 8 * 8 - 4
    body = struct.pack("<QQIIQIIQ", ident, 0xFFFF, pid, tid, time, cpu, 0, 1)
    body += struct.pack("<I", size) + payload.ljust(size, b"\0")
    return struct.pack("<IHH", RecordType.SAMPLE, 1, 8 + len(body)) + body


def trailer(pid: int, tid: int, time: int, cpu: int, ident: int) -> bytes:
    return struct.pack("<IIQIIQ", pid, tid, time, cpu, 0, ident)


def lost(ident: int, count: int, time: int, cpu: int) -> bytes:
    body = struct.pack("<QQ", ident, count) + trailer(0, 0, time, cpu, ident)
    return struct.pack("<IHH", RecordType.LOST, 0, 8 + len(body)) + body


def fork(pid: int, ppid: int, tid: int, ptid: int, time: int) -> bytes:
    body = struct.pack("<IIIIQ", pid, ppid, tid, ptid, time) + trailer(pid, tid, time, 0, 1)
    return struct.pack("<IHH", RecordType.FORK, 0, 8 + len(body)) + body


def write_file(path: Path, records: bytes, *, finish: bool = True) -> pd.PerfDataWriter:
    writer = pd.PerfDataWriter(path, [TRACKING, OUTPUT], features=HOST.features())
    writer.write(records)
    writer.end_round()
    if finish:
        writer.finish()
    writer.close()
    return writer


def test_round_trip_of_attrs_ids_features_and_records(tmp_path: Path) -> None:
    records = comm_record(10, 10, "loop", 1) + sample(3, 10, 10, 500, 1, b"hello\0")
    write_file(tmp_path / "f.data", records)
    data = pd.read_perf_data(tmp_path / "f.data")
    assert [(a.name, a.ids) for a in data.attrs] == [("dummy:tracking", (1, 2)), ("__bpf_stdout__", (3, 4))]
    assert data.attrs[1].sample_type == SAMPLE_TYPE and len(data.attrs[1].attr) == PERF_ATTR_SIZE_VER7
    assert data.host == HOST and not data.truncated
    refs = list(data.records())
    assert [r.type for r in refs] == [RecordType.COMM, RecordType.SAMPLE, pd.FINISHED_ROUND]
    assert data.buf[refs[1].offset : refs[1].offset + refs[1].size] == records[len(comm_record(10, 10, "loop", 1)) :]
    assert set(data.features) == {3, 4, 5, 6, 7, 11, 12}


def test_layout_matches_perfs_header(tmp_path: Path) -> None:
    write_file(tmp_path / "f.data", b"")
    raw = (tmp_path / "f.data").read_bytes()
    magic, size, attr_size, attrs_at, attrs_size, data_at = struct.unpack_from("<8sQQQQQ", raw)
    assert (magic, size, attr_size) == (b"PERFILE2", 104, PERF_ATTR_SIZE_VER7 + 16)
    assert attrs_at == 104 + 4 * 8  # the ids come first, as perf writes them
    assert (attrs_size, data_at) == (2 * attr_size, attrs_at + attrs_size)
    assert struct.unpack_from("<4Q", raw, 72)[0] == sum(1 << f for f in (3, 4, 5, 6, 7, 11, 12))


def test_strings_are_padded_to_64_bytes() -> None:
    encoded = pd.encode_string("vm")
    assert encoded[:4] == struct.pack("<I", 64) and len(encoded) == 68
    assert pd.decode_string(encoded, 0) == ("vm", 68)
    assert len(pd.encode_string("x" * 64)) == 4 + 128  # the NUL needs a second block
    assert pd.decode_strings(pd.encode_strings(["a", "bc"])) == ("a", "bc")


def test_event_desc_round_trip() -> None:
    assert pd.decode_event_desc(pd.encode_event_desc([TRACKING, OUTPUT])) == (
        ("dummy:tracking", (1, 2)),
        ("__bpf_stdout__", (3, 4)),
    )


def test_a_writer_that_died_leaves_a_readable_file(tmp_path: Path) -> None:
    path = tmp_path / "f.data"
    one = sample(3, 10, 10, 500, 0, b"a\0")
    writer = pd.PerfDataWriter(path, [TRACKING, OUTPUT])
    writer.write(one)
    writer.end_round()
    writer.write(one + one[:20])  # a second round, its last record cut off
    writer.close()
    data = pd.read_perf_data(path)
    assert data.truncated and data.features == {}
    assert [r.type for r in data.records()] == [RecordType.SAMPLE, pd.FINISHED_ROUND, RecordType.SAMPLE]
    # without event names the reader falls back to perf's default names
    assert [a.name for a in data.attrs] == ["dummy", "bpf-output"]


@pytest.mark.parametrize(
    ("content", "code", "message"),
    [
        (b"PERF", "EK150", "shorter than the magic"),
        (b"NOTPERF!" + bytes(100), "EK150", "does not start with PERFILE2"),
        (b"PERFFILE" + bytes(100), "EK151", "old PERFFILE"),
        (b"2ELIFREP" + bytes(100), "EK151", "byte-swapped"),
        (b"PERFILE2" + struct.pack("<Q", 16) + bytes(8), "EK151", "pipe-mode"),
        (b"PERFILE2" + bytes(20), "EK150", "shorter than the 104-byte header"),
        (b"PERFILE2" + struct.pack("<QQQQ", 104, 144, 104, 1 << 20) + bytes(64), "EK150", "do not fit"),
    ],
)
def test_malformed_files(tmp_path: Path, content: bytes, code: str, message: str) -> None:
    path = tmp_path / "bad.data"
    path.write_bytes(content)
    with pytest.raises(ObjectError, match=message) as info:
        pd.read_perf_data(path)
    assert info.value.code == code


def test_a_record_running_past_a_finished_data_section_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "f.data"
    write_file(path, sample(3, 1, 1, 1, 0, b"x\0"))
    raw = bytearray(path.read_bytes())
    (data_at,) = struct.unpack_from("<Q", raw, 40)
    (size,) = struct.unpack_from("<H", raw, data_at + 6)
    struct.pack_into("<H", raw, data_at + 6, size + 16)  # past the round mark that ends the data
    path.write_bytes(bytes(raw))
    with pytest.raises(ObjectError, match="runs past the data section"):
        list(pd.read_perf_data(path).records())


def test_unwritable_capture_path(tmp_path: Path) -> None:
    with pytest.raises(ObjectError, match="cannot write") as info:
        pd.PerfDataWriter(tmp_path / "no" / "such" / "dir.data", [OUTPUT])
    assert info.value.code == "EK152"


def test_tracing_data_round_trip(tmp_path: Path) -> None:
    events = tmp_path / "events"
    (events / "syscalls" / "sys_enter_getppid").mkdir(parents=True)
    (events / "header_page").write_text("\tfield: u64 timestamp;\n")
    (events / "header_event").write_text("# compressed entry header\n")
    fmt = "name: sys_enter_getppid\nID: 305\nformat:\n\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
    (events / "syscalls" / "sys_enter_getppid" / "format").write_text(fmt)
    (tmp_path / "printk_formats").write_text('0xffffffff8281afc3 : "Start scheduler-tick"\n'
                                             '0xffffffff8281b000 : "a line\\n"\n')
    blob = pd.build_tracing_data(events, [("syscalls", "sys_enter_getppid")] * 2, PAGE)
    assert blob.startswith(b"\x17\x08Dtracing0.6\0\0\x08")
    assert pd.parse_tracing_data(blob) == {305: pd.TraceFormat("syscalls", "sys_enter_getppid", 305, fmt)}
    # the printk formats as perf record saves them and libtraceevent keeps them
    assert pd.read_tracing_data(blob)[1] == {0xFFFFFFFF8281AFC3: "Start scheduler-tick", 0xFFFFFFFF8281B000: "a line"}
    with pytest.raises(ValueError, match="magic"):
        pd.parse_tracing_data(b"\x17\x08Dtracinx")


def test_sample_id_position() -> None:
    assert pd.sample_id_position([OUTPUT]) is None
    assert pd.sample_id_position([TRACKING, OUTPUT]) == 0
    ip_tid_id = SampleType.IP | SampleType.TID | SampleType.TIME | SampleType.ID | SampleType.RAW
    perf_like = [attr(n, PerfType.SOFTWARE, SwConfig.BPF_OUTPUT, ip_tid_id, (i,)) for i, n in enumerate("ab")]
    assert pd.sample_id_position(perf_like) == 24
    no_id = attr("c", PerfType.SOFTWARE, SwConfig.BPF_OUTPUT, SampleType.RAW, (9,))
    assert pd.sample_id_position([OUTPUT, no_id]) == -1


# ------------------------------------------------------------- capture


def test_count_records_by_runs() -> None:
    same = sample(3, 1, 1, 1, 0, bytes(56)) * 1000
    other = sample(3, 1, 1, 1, 0, bytes(8))
    chunk = comm_record(1, 1, "a", 1) + same + lost(3, 7, 5, 0) + other + same[:600] + lost(3, 2, 6, 1)
    counts = count_records(chunk)
    assert (counts.samples, counts.lost, counts.lost_records) == (1000 + 1 + 600 // len(sample(3, 1, 1, 1, 0, bytes(56))), 9, 2)
    with pytest.raises(ObjectError, match="says 4096 bytes"):
        count_records(struct.pack("<IHH", RecordType.SAMPLE, 0, 4096) + bytes(8))


def test_count_records_alternating_sizes() -> None:
    a, b = sample(3, 1, 1, 1, 0, bytes(8)), sample(3, 1, 1, 1, 0, bytes(40))
    assert count_records((a + b) * 300 + a).samples == 601


class Ring:
    """A ring laid out like the kernel's mapping, written at data_head."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self.buf = ctypes.create_string_buffer(PAGE + size)
        self.page = MmapPage.from_address(ctypes.addressof(self.buf))
        self.page.data_offset, self.page.data_size = PAGE, size
        self.page.data_head = self.page.data_tail = size - 40  # the first records wrap
        self.reader = PerfRing(RingMapping(-1, ctypes.addressof(self.buf), PAGE + size, PAGE), SAMPLE_TYPE)

    def put(self, record: bytes) -> None:
        head = self.page.data_head
        for i, byte in enumerate(record):
            self.buf[PAGE + (head + i) % self.size] = byte
        self.page.data_head = head + len(record)


def test_capture_copies_ring_bytes_and_counts(tmp_path: Path) -> None:
    rings = [Ring(), Ring()]
    recs = [sample(3, 7, 7, 100 + i, 0, b"r%d\0" % i) for i in range(5)]
    for r in recs[:3]:
        rings[0].put(r)
    rings[1].put(lost(4, 3, 102, 1))  # after r2 (same time, later in the file)
    rings[1].put(recs[3])
    capture = Capture(tmp_path / "c.data", [TRACKING, OUTPUT], [r.reader for r in rings], HOST)
    capture.add_tasks([(7, 7, "worker")], 1)
    capture.drain()
    rings[0].put(recs[4])
    capture.drain()
    capture.drain()  # nothing new: no empty round
    capture.finish()
    capture.finish()
    assert (capture.samples, capture.lost, capture.lost_records) == (5, 3, 1)
    assert all(r.page.data_tail == r.page.data_head for r in rings)
    data = pd.read_perf_data(tmp_path / "c.data")
    kinds = [r.type for r in data.records()]
    assert kinds.count(pd.FINISHED_ROUND) == 3 and kinds.count(RecordType.SAMPLE) == 5
    lines = list(script_lines(data))
    assert [getattr(x, "raw", None) for x in lines] == [b"r0\0\0", b"r1\0\0", b"r2\0\0", None, b"r3\0\0", b"r4\0\0"]
    assert {x.comm for x in lines if hasattr(x, "comm")} == {"worker"}
    lost_line = lines[3]
    assert (lost_line.event, lost_line.cpu, lost_line.lost) == ("__bpf_stdout__", 1, 3)  # type: ignore[union-attr]


def test_count_span_joins_a_record_straddling_the_pieces() -> None:
    one = sample(3, 1, 1, 1, 0, bytes(56))
    chunk = one * 5 + lost(3, 11, 2, 0) + one * 3
    for cut in (0, 4, 8, 100, len(one) * 5 + 12, len(chunk) - 8, len(chunk)):
        pieces = [memoryview(chunk)[:cut], memoryview(chunk)[cut:]]
        counts = count_span(pieces)
        assert (counts.samples, counts.lost, counts.lost_records) == (8, 11, 1), cut
    with pytest.raises(ObjectError, match="says 120 bytes, 100 are available"):
        count_span([memoryview(one)[:60], memoryview(one)[60:100]])  # the span ends inside a record
    with pytest.raises(ObjectError, match="header at 0 is cut off at 4"):
        count_span([memoryview(one)[:4]])


def test_capture_writes_straight_from_the_rings_in_one_writev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rings = [Ring(), Ring()]
    recs = [sample(3, 7, 7, 100 + i, 0, b"w%d\0" % i) for i in range(3)]
    for r in recs:
        rings[0].put(r)  # the first record wraps around the end of the area
    rings[1].put(lost(4, 2, 90, 1))
    calls: list[list[bytes]] = []
    real_writev = os.writev

    def short_writev(fd: int, buffers: list[memoryview]) -> int:
        calls.append([bytes(b) for b in buffers])
        return real_writev(fd, [bytes(buffers[0])[:5]])  # the kernel takes 5 bytes at a time

    capture = Capture(tmp_path / "c.data", [TRACKING, OUTPUT], [r.reader for r in rings], HOST)
    monkeypatch.setattr(os, "writev", short_writev)
    assert capture.drain() is True  # a ring held more than 1/16 of its 1024 bytes
    monkeypatch.undo()
    first = calls[0]
    assert b"".join(first) == b"".join(recs) + lost(4, 2, 90, 1) + struct.pack("<IHH", 68, 0, 8)
    # each ring's wrap-around is a second buffer, not a copy joined: 40 bytes up to the end
    assert [len(b) for b in first] == [40, sum(map(len, recs)) - 40, 40, len(lost(4, 2, 90, 1)) - 40, 8]
    assert all(r.page.data_tail == r.page.data_head for r in rings)
    capture.finish()
    data = pd.read_perf_data(tmp_path / "c.data")
    assert [r.type for r in data.records()] == [RecordType.SAMPLE] * 3 + [RecordType.LOST, pd.FINISHED_ROUND]


def test_a_failed_write_stops_writing_and_the_rings_are_still_read(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """After a write fails, nothing more is written and every record read is counted as not
    written; the file is then completed with what it holds whole (here: none)."""
    ring = Ring()
    ring.put(sample(3, 7, 7, 1, 0, b"lost\0"))
    capture = Capture(tmp_path / "c.data", [TRACKING, OUTPUT], [ring.reader], HOST)

    def full(fd: int, buffers: list[memoryview]) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "writev", full)
    assert capture.drain() is True
    assert capture.failure is not None and capture.failure.errno == 28
    assert ring.page.data_tail == ring.page.data_head and capture.unwritten == 1
    ring.put(sample(3, 7, 7, 2, 0, b"more\0"))
    monkeypatch.undo()  # room again: still nothing is written after a failure
    assert capture.drain() is True and capture.unwritten == 2
    capture.finish()
    assert capture.samples == 0 and pd.read_perf_data(tmp_path / "c.data").data_size == 0


def test_lost_samples_records_carry_the_instances_counts(tmp_path: Path) -> None:
    capture = Capture(tmp_path / "c.data", [TRACKING, OUTPUT], [], HOST)
    capture.writer.write(sample(3, 7, 7, 5, 0, b"a\0") + sample(4, 7, 7, 6, 1, b"b\0"))
    capture.add_lost_counts(
        [LostCount("__bpf_stdout__", 3, 0, 12), LostCount("__bpf_stdout__", 4, 1, 0), LostCount("__bpf_stdout__", 4, -1, 5)]
    )
    capture.finish()
    data = pd.read_perf_data(tmp_path / "c.data")
    refs = [r for r in data.records() if r.type == RecordType.LOST_SAMPLES]
    trailer = pd.SampleIdTrailer(SAMPLE_TYPE)
    assert [r.size for r in refs] == [16 + trailer.struct.size] * 2  # no record for a count of 0
    got = [(struct.unpack_from("<Q", data.buf, r.offset + 8)[0], trailer.read(data.buf, r.offset + r.size, r.offset + 16))
           for r in refs]
    assert got == [
        (12, {"pid": 0, "tid": 0, "time": 0, "cpu": 0, "_reserved": 0, "identifier": 3}),
        (5, {"pid": 0, "tid": 0, "time": 0, "cpu": 0xFFFFFFFF, "_reserved": 0, "identifier": 4}),
    ]
    status, out, err = run_script(tmp_path / "c.data")
    assert status == 0 and err == ""
    assert out.endswith("LOST_SAMPLES 12 of __bpf_stdout__ on cpu 0\nLOST_SAMPLES 5 of __bpf_stdout__ on cpu -1\n")
    status, out, _ = run_script(tmp_path / "c.data", "--format", "json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[2:] == [
        {"lost_samples": 12, "cpu": 0, "event": "__bpf_stdout__"},
        {"lost_samples": 5, "cpu": -1, "event": "__bpf_stdout__"},
        {"summary": {"samples": 2, "lost": 17, "lost_reported": 0}},
    ]


def test_sample_id_trailer_follows_the_sample_type() -> None:
    every = pd.SampleIdTrailer(
        SampleType.TID | SampleType.TIME | SampleType.ID | SampleType.STREAM_ID | SampleType.CPU | SampleType.IDENTIFIER
    )
    assert every.names == ("pid", "tid", "time", "id", "stream_id", "cpu", "_reserved", "identifier")
    packed = every.pack(pid=1, tid=2, time=3, id=4, stream_id=5, cpu=6, identifier=7)
    assert packed == struct.pack("<IIQQQIIQ", 1, 2, 3, 4, 5, 6, 0, 7)
    assert every.read(b"xxxxxxxx" + packed, 8 + len(packed), 8)["stream_id"] == 5
    assert every.read(packed, len(packed), 8) == {}  # the record is too short to hold them
    assert pd.SampleIdTrailer(SampleType.RAW).pack(pid=1) == b""


# -------------------------------------------------------------- script


def run_script(path: Path, *extra: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    add_script_parser(parser.add_subparsers(dest="cmd"))
    out, err = io.StringIO(), io.StringIO()
    status = script_main(parser.parse_args(["script", "-i", str(path), *extra]), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_script_orders_by_time_and_names_forked_tasks(tmp_path: Path) -> None:
    records = (
        sample(3, 20, 21, 300, 1, b"child\0")
        + comm_record(20, 20, "parent", 1)
        + fork(20, 20, 21, 20, 200)
        + sample(4, 20, 20, 100, 0, b"first\0")
        + sample(3, 99, 99, 400, 0, b"nobody\0")
    )
    write_file(tmp_path / "f.data", records)
    status, out, err = run_script(tmp_path / "f.data", "--format", "json")
    assert status == 0 and err == ""
    *got, summary = [json.loads(line) for line in out.splitlines()]
    assert [(r["comm"], r["tid"], r["time_ns"], r["string"]) for r in got] == [
        ("parent", 20, 100, "first"),
        ("parent", 21, 300, "child"),
        (":99", 99, 400, "nobody"),
    ]
    assert summary == {"summary": {"samples": 3, "lost": 0}}


def test_script_text_is_the_live_layout(tmp_path: Path) -> None:
    write_file(tmp_path / "f.data", comm_record(5, 5, "sleep", 1) + sample(3, 5, 5, 1_074_053_516_000, 0, b"hello1\0"))
    status, out, _ = run_script(tmp_path / "f.data")
    assert status == 0
    assert out.splitlines()[0] == "           sleep     5 [000]  1074.053516:          1 __bpf_stdout__: "
    assert 'BPF string: "hello1"' in out


def test_script_warns_about_an_unfinished_file_and_fails_on_a_bad_one(tmp_path: Path) -> None:
    write_file(tmp_path / "f.data", sample(3, 5, 5, 1, 0, b"x\0"), finish=False)
    status, out, err = run_script(tmp_path / "f.data", "--format", "json")
    assert status == 0 and len(out.splitlines()) == 2 and "not finished" in err  # a sample, the summary
    (tmp_path / "bad.data").write_bytes(b"garbage!" * 20)
    status, out, err = run_script(tmp_path / "bad.data")
    assert status == 2 and out == "" and "does not start with PERFILE2" in err
