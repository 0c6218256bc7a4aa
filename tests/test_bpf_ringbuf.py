"""BPF ring buffer maps (BPF_MAP_TYPE_RINGBUF): the reader over hand-made memory, and record
reading every ring buffer of its objects with no term, for real."""

from __future__ import annotations

import argparse
import ctypes
import io
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from bpf_build import build_bpf, build_program, copy_sources, require_tools
from corpus_files import DATA
from evspec.loader.kernel import BpfRingMapping, KernelError
from evspec.loader.output.bpf_ringbuf import BUSY_BIT, DISCARD_BIT, BpfRingReader, cut_records
from record_cli import run_record as _record

from evspec.compiler.recording import recording_plan

PAGE = 4096


class FakeRing:
    """The layout the kernel maps, in ctypes memory: consumer page, producer page, data twice."""

    def __init__(self, size: int = PAGE) -> None:
        self.size = size
        self.consumer = ctypes.create_string_buffer(PAGE)
        self.producer = ctypes.create_string_buffer(PAGE + 2 * size)
        self.mapping = BpfRingMapping(-1, ctypes.addressof(self.consumer), ctypes.addressof(self.producer), size, PAGE)
        self.pos = 0

    def write(self, payload: bytes, flags: int = 0) -> None:
        total = (len(payload) + 8 + 7) & ~7
        record = struct.pack("=II", len(payload) | flags, 0) + payload + b"\0" * (total - 8 - len(payload))
        for i, byte in enumerate(record):  # both copies of the data, as the kernel maps them
            at = (self.pos + i) % self.size
            self.producer[PAGE + at] = byte
            self.producer[PAGE + self.size + at] = byte
        self.pos += total
        struct.pack_into("=Q", self.producer, 0, self.pos)

    @property
    def consumed(self) -> int:
        return struct.unpack_from("=Q", self.consumer, 0)[0]


def test_records_in_order_discarded_skipped_and_space_released() -> None:
    ring = FakeRing()
    reader = BpfRingReader("events", ring.mapping)
    ring.write(b"one")
    ring.write(b"gone", DISCARD_BIT)
    ring.write(b"three!!!")
    assert reader.take() == [b"one", b"three!!!"]
    assert reader.discarded == 1 and ring.consumed == ring.pos == 16 + 16 + 16
    assert reader.take() == []


def test_a_busy_record_stops_the_reader_until_it_is_committed() -> None:
    ring = FakeRing()
    reader = BpfRingReader("events", ring.mapping)
    ring.write(b"a")
    busy_at = ring.pos
    ring.write(b"b", BUSY_BIT)
    ring.write(b"c")
    assert reader.take() == [b"a"] and ring.consumed == busy_at
    struct.pack_into("=I", ring.producer, PAGE + busy_at, 1)  # the program commits it
    struct.pack_into("=I", ring.producer, PAGE + ring.size + busy_at, 1)
    assert reader.take() == [b"b", b"c"]


def test_a_record_across_the_end_of_the_data_reads_whole() -> None:
    ring = FakeRing()
    reader = BpfRingReader("events", ring.mapping)
    for _ in range(127):  # 127 * 32 bytes: the next record starts 32 bytes before the end
        ring.write(b"x" * 24)
    assert len(reader.take()) == 127
    ring.write(bytes(range(40)))
    assert reader.take() == [bytes(range(40))]


def test_a_corrupt_ring_is_an_error_naming_it() -> None:
    ring = FakeRing()
    reader = BpfRingReader("events", ring.mapping)
    struct.pack_into("=Q", ring.producer, 0, 3 * PAGE)
    with pytest.raises(KernelError, match="corrupt BPF ring buffer events: producer_pos 12288 is more than"):
        reader.take()
    ring = FakeRing()
    reader = BpfRingReader("events", ring.mapping)
    ring.write(b"abc")
    struct.pack_into("=I", ring.producer, PAGE, 4000)
    with pytest.raises(KernelError, match="a record of 4000 bytes at 0 runs past producer_pos 16"):
        reader.take()


def reference_take(ring: FakeRing, consumer: int) -> tuple[list[bytes], int, int]:
    """What a reader walking one header at a time takes from ``consumer`` on: the records, the
    discarded count and where it stops (the first busy record, or producer_pos)."""
    data = bytes(ring.producer[PAGE : PAGE + ring.size])
    out, discarded = [], 0
    while consumer < ring.pos:
        at = consumer % ring.size
        (word,) = struct.unpack_from("=I", data, at)
        if word & BUSY_BIT:
            break
        length = word & ~(BUSY_BIT | DISCARD_BIT)
        if word & DISCARD_BIT:
            discarded += 1
        else:
            out.append((data + data)[at + 8 : at + 8 + length])
        consumer += (length + 15) & ~7
    return out, discarded, consumer


def test_a_batch_of_equal_records_reads_whole_across_the_end() -> None:
    """Runs of one size are cut from one copy: a whole ring of them, again after a wrap, and runs
    cut short by the end of what was written, whatever their length."""
    ring = FakeRing(16 * PAGE)
    reader = BpfRingReader("events", ring.mapping)
    for round_ in range(3):  # 3 x 2000 x 24 bytes: the second and third batches wrap
        payloads = [struct.pack("=Q", round_ * 10_000 + i) + b"ring!\0\0\0" for i in range(2000)]
        for payload in payloads:
            ring.write(payload)
        assert reader.take() == payloads and ring.consumed == ring.pos
    for count in (1, 2, 3, 17, 63, 64, 65, 129):  # around the struct's group of records and the window
        payloads = [bytes([count, i % 256]) * 20 for i in range(count)]  # 40 bytes, 48 a record
        for payload in payloads:
            ring.write(payload)
        assert reader.take() == payloads and ring.consumed == ring.pos
    assert reader.discarded == 0


def test_a_busy_record_inside_a_run_of_equal_records_ends_the_take() -> None:
    ring = FakeRing(16 * PAGE)
    reader = BpfRingReader("events", ring.mapping)
    for i in range(100):
        ring.write(bytes([i]) * 16, BUSY_BIT if i == 70 else DISCARD_BIT if i % 10 == 9 else 0)
    assert reader.take() == [bytes([i]) * 16 for i in range(70) if i % 10 != 9]
    assert reader.discarded == 7 and ring.consumed == 70 * 24


@pytest.mark.parametrize("seed", range(8))
def test_mixed_sizes_discards_and_busy_records_read_as_one_header_at_a_time(seed: int) -> None:
    """Random rings: runs of one size of every length, sizes changing from record to record,
    discarded and busy records anywhere; the reader takes what a walk of one header at a time
    takes, and stops where it stops."""
    import random

    rng = random.Random(seed)
    ring = FakeRing(8 * PAGE)
    reader = BpfRingReader("events", ring.mapping)
    discarded = 0
    for _ in range(6):
        start = ring.pos
        while ring.pos - start < 6 * PAGE:
            size = rng.choice((1, 8, 16, 16, 16, 23, 40))
            for _ in range(rng.choice((1, 1, 2, 5, 30, 200))):
                flags = rng.choices((0, DISCARD_BIT, BUSY_BIT), (90, 9, 1))[0]
                if ring.pos - start + size + 16 > 6 * PAGE:
                    break
                ring.write(bytes(rng.randrange(256) for _ in range(size)), flags)
            else:
                continue
            break
        expected, dropped, stop = reference_take(ring, ring.consumed)
        assert reader.take() == expected and ring.consumed == stop
        discarded += dropped
        assert reader.discarded == discarded
        while ring.consumed < ring.pos:  # commit every busy record, take the rest
            for at in range(ring.consumed, ring.pos, 8):
                word = struct.unpack_from("=I", ring.producer, PAGE + at % ring.size)[0]
                if word & BUSY_BIT and (word & 0xFFFF) < 64:
                    for copy in (0, ring.size):
                        struct.pack_into("=I", ring.producer, PAGE + copy + at % ring.size, word & ~BUSY_BIT)
            expected, dropped, stop = reference_take(ring, ring.consumed)
            assert reader.take() == expected and ring.consumed == stop
            discarded += dropped
        assert reader.discarded == discarded


@pytest.mark.parametrize("seed", range(4))
def test_committed_bytes_cut_later_are_what_a_take_gives(seed: int) -> None:
    """The drain's way: ``committed`` hands the records up to the first busy one as the ring holds
    them, in place, and ``release`` gives their space back; ``cut_records`` over a copy of those
    bytes gives what a walk of one header at a time takes, discarded ones counted."""
    import random

    rng = random.Random(seed)
    ring = FakeRing(8 * PAGE)
    reader = BpfRingReader("events", ring.mapping)
    for _ in range(20):
        while ring.pos - ring.consumed < 6 * PAGE:
            size = rng.choice((1, 8, 16, 16, 40))
            for _ in range(rng.choice((1, 3, 30, 100))):
                if ring.pos - ring.consumed + size + 16 > 6 * PAGE:
                    break
                ring.write(bytes(rng.randrange(256) for _ in range(size)),
                           rng.choices((0, DISCARD_BIT, BUSY_BIT), (90, 9, 1))[0])
            else:
                continue
            break
        expected, dropped, stop = reference_take(ring, ring.consumed)
        span, position = reader.committed()
        assert position == stop and len(span) == stop - ring.consumed
        assert cut_records("events", bytes(span)) == (expected, dropped)
        reader.release(position)
        assert ring.consumed == stop
        for at in range(ring.consumed, ring.pos, 8):  # commit the busy record where the next take starts
            word = struct.unpack_from("=I", ring.producer, PAGE + at % ring.size)[0]
            if at == ring.consumed and word & BUSY_BIT:
                for copy in (0, ring.size):
                    struct.pack_into("=I", ring.producer, PAGE + copy + at % ring.size, word & ~BUSY_BIT)


def test_cut_records_refuses_bytes_with_a_record_being_written() -> None:
    span = struct.pack("=II", 3, 0) + b"abc\0\0\0\0\0" + struct.pack("=II", 3 | BUSY_BIT, 0) + bytes(8)
    with pytest.raises(KernelError, match="a record at 16 of 32 bytes is marked as being written"):
        cut_records("events", span)
    with pytest.raises(KernelError, match="a record of 4000 bytes at 0 runs past producer_pos 16"):
        cut_records("events", struct.pack("=II", 4000, 0) + bytes(8))


def test_ring_records_reach_the_renderer_in_order_and_render_as_the_line_functions() -> None:
    """A ring's committed bytes, copied whole and cut behind (a live recording's way), reach the
    renderer as RingRecordLines in order, discarded ones counted; the renderers print a batch of
    ring records (the same payloads cached, unique ones not) as ring_record_text and
    ring_record_json print each, mixed with samples too."""
    from evspec.loader.output.live.follow import BpfSource, Follower
    from evspec.loader.output.live.spool import BPF, ROUND, Frame
    from evspec.loader.output.script import (
        JsonRenderer,
        RingRecordLine,
        SampleLine,
        TextRenderer,
        ring_record_json,
        ring_record_text,
        sample_json,
        sample_text,
    )

    ring = FakeRing(16 * PAGE)
    payloads = [b"ring!" + bytes(11) if i % 3 else struct.pack("=Q", i) + b"x\0" for i in range(1000)]
    for i, payload in enumerate(payloads):
        ring.write(payload, DISCARD_BIT if i % 100 == 99 else 0)
    reader = BpfRingReader("events", ring.mapping)
    batches: list[list[object]] = []
    follower = Follower([], [BpfSource("events")], lambda batch: batches.append(batch) or (), lambda _: None)
    span, position = reader.committed()
    follower.take(Frame(BPF, 0, 5, bytes(span)))
    reader.release(position)
    assert ring.consumed == ring.pos
    follower.take(Frame(ROUND, 0, 0, b""))
    follower.finish()
    lines = [line for batch in batches for line in batch]
    kept = [p for i, p in enumerate(payloads) if i % 100 != 99]
    assert lines == [RingRecordLine("events", p) for p in kept] and follower.discarded == [10]
    assert follower.counts.samples == len(kept)
    sample = SampleLine("__bpf_stdout__", "getppid", 7, 7, 1, 1_000_000_123, 1, b"hi\0", None)
    mixed = [lines[0], sample, lines[1]]
    for renderer, one in ((TextRenderer(14), lambda line: ring_record_text(line, 14)), (JsonRenderer(), ring_record_json)):
        for _ in range(2):  # the second time from the renderer's cache
            assert renderer.render(lines) == "".join(map(one, lines))
        text = renderer.render(mixed)
        assert text == one(lines[0]) + (sample_text(sample, 14) if isinstance(renderer, TextRenderer)
                                        else sample_json(sample)) + one(lines[1])
    # a NUL, then more than NULs: no string, as perf's bpf-output printer decides
    assert json.loads(ring_record_json(lines[0])) == {"event": "events", "ringbuf": True,
                                                      "raw_hex": payloads[0].hex(), "string": None}
    assert json.loads(ring_record_json(lines[1]))["string"] == "ring!"


def test_the_renderers_print_a_repeated_payload_once_and_alike() -> None:
    from evspec.loader.output import script
    from evspec.loader.output.script import JsonRenderer, RingRecordLine, TextRenderer

    lines = [RingRecordLine("events", bytes([i]) * 9) for i in range(5)] * 20
    assert TextRenderer(6).render(lines) == "".join(script.ring_record_text(line, 6) for line in lines)
    assert JsonRenderer().render(lines) == "".join(map(script.ring_record_json, lines))


@pytest.mark.parametrize("seed", range(4))
def test_ring_records_in_bulk_print_as_one_at_a_time(seed: int) -> None:
    """The renderers print runs of ring records in bulk: byte for byte ring_record_json (and
    ring_record_text) of each,
    whatever the mix — strings (Latin-1 too), binary records, empty ones, typed ones, two maps,
    samples and losses in between; and bpf_string's rule is the bulk path's."""
    import random

    from evspec.loader.output.script import (
        JsonRenderer,
        LostLine,
        RingRecordLine,
        SampleLine,
        TextRenderer,
        bpf_string,
        lost_json,
        lost_text,
        ring_record_json,
        ring_record_text,
        sample_json,
        sample_text,
    )
    from evspec.loader.output.typed import TypedFields

    rng = random.Random(seed)
    pieces = [b"", b"\0", b"ok\0", b"ok\0\0\0", b"ok\0x", b"caf\xe9\0", b"\x80\0", b"tab\t\0", b'q"\\\0', b"\n\0"]

    def payload() -> bytes:
        if rng.random() < 0.5:
            return rng.choice(pieces)
        return bytes(rng.randrange(256) for _ in range(rng.randrange(24)))

    lines: list[object] = []
    for _ in range(300):
        kind = rng.random()
        if kind < 0.8:
            typed = TypedFields([("a", 1)], 4, 4, b"") if rng.random() < 0.1 else None
            lines.append(RingRecordLine(rng.choice(("events", "texts")), payload(), typed))
        elif kind < 0.9:
            lines.append(SampleLine("__bpf_stdout__", "x", 1, 1, 0, 5, 1, payload(), None))
        else:
            lines.append(LostLine("__bpf_stdout__", 0, 3))
    lines += [RingRecordLine("events", b"")] * 20 + [RingRecordLine("events", b"same\0")] * 30  # runs that repeat
    one = {RingRecordLine: ring_record_json, SampleLine: sample_json, LostLine: lost_json}
    assert JsonRenderer().render(lines) == "".join(one[type(x)](x) for x in lines)  # type: ignore[index, operator]
    text = {RingRecordLine: lambda x: ring_record_text(x, 9), SampleLine: lambda x: sample_text(x, 9),
            LostLine: lost_text}
    assert TextRenderer(9).render(lines) == "".join(text[type(x)](x) for x in lines)  # type: ignore[index, operator]
    expected = {b"": None, b"\0": "", b"ok\0": "ok", b"ok\0\0\0": "ok", b"ok\0x": None, b"caf\xe9\0": "caf\xe9",
                b"\x80\0": None, b"tab\t\0": None, b'q"\\\0': 'q"\\', b"\n\0": None}
    assert {p: bpf_string(p) for p in pieces} == expected


# ------------------------------------------------------------------------------ for real


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tools("clang", "cc")
    out = tmp_path_factory.mktemp("ringbuf")
    copy_sources(DATA / "ringbuf", ("ringbuf.c", "getppid.c"), out)
    build_program(out, "getppid.c", "getppid")
    # ringbuf.c counts the calls of this copy only (other tasks' getppid() run its program too)
    build_program(out, "getppid.c", "rbuf_reader")
    for name, size in (("ringbuf.o", 1 << 20), ("small.o", PAGE)):
        build_bpf(out, "ringbuf.c", name, f"-DRINGBUF_BYTES={size}")
    return out


def test_record_reads_every_ring_buffer_without_a_term(
    built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(built)
    status, out, err = _record("--format", "json", "-e", "./ringbuf.o", "--", "./rbuf_reader", "200")
    assert status == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    records, (summary,) = [line for line in lines[:-1] if "event" in line], lines[-1:]  # not the table of 'counters'
    assert all(r["event"] == "events" and r["ringbuf"] for r in records)
    counts = [int.from_bytes(bytes.fromhex(r["raw_hex"])[:8], "little") for r in records]
    assert counts == [n for n in range(200) if n % 4 != 3]  # every submitted one, in order
    assert all(bytes.fromhex(r["raw_hex"])[8:] == b"ring!\0\0\0" for r in records)
    assert summary["summary"]["samples"] == 150 and summary["summary"]["ringbuf_discarded"] == 50


def test_record_prints_ring_buffer_records_like_bpf_output(
    built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(built)
    status, out, err = _record("-e", "./ringbuf.o", "--", "./rbuf_reader", "1")
    assert status == 0, err
    # names aligned with the other events' (the program's tracepoint is the longest)
    assert out == (f"{'events':>{len('syscalls:sys_enter_getppid')}}: ring buffer record, 16 bytes\n"
                   "      BPF output: 0000: 00 00 00 00 00 00 00 00  ........\n"
                   "                  0008: 72 69 6e 67 21 00 00 00  ring!...\n\n"  # no BPF string: not NULs after the NUL
                   "\ncounters:\nkey  value\n  0      1\n")  # then the map the program counts into, at exit


def test_record_to_a_file_keeps_ring_buffer_records(built: Path, root_kernel: None,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """-o: every submitted record is a sample of the map's event (tests/test_ringbuf_capture.py
    compares them with perf script's); evspec script prints them as live record does."""
    from evspec.cli.script import add_script_parser, script_main

    monkeypatch.chdir(built)
    status, out, err = _record("-o", str(built / "perf.data"), "-e", "./ringbuf.o", "--", "./rbuf_reader", "200")
    assert (status, out) == (0, "\ncounters:\nkey  value\n  0    200\n"), err  # the records go to the file
    assert "(150 samples, 0 lost) ]" in err
    parser = argparse.ArgumentParser()
    add_script_parser(parser.add_subparsers(dest="cmd"))
    text = io.StringIO()
    assert script_main(parser.parse_args(["script", "-i", str(built / "perf.data"), "--format", "json"]),
                       stdout=text, stderr=io.StringIO()) == 0
    records = [json.loads(line) for line in text.getvalue().splitlines()][:-1]
    assert [int.from_bytes(bytes.fromhex(r["raw_hex"])[:8], "little") for r in records] == [
        n for n in range(200) if n % 4 != 3]
    assert all(r["event"] == "events" and r["ringbuf"] for r in records)


@pytest.mark.parametrize(("obj", "calls"), [("ringbuf.o", 20_000), ("small.o", 1_000_000)])
def test_every_record_written_is_read_and_the_overflow_is_counted(
    built: Path, root_kernel: None, obj: str, calls: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tight loop of getppid(): what the program counted (submitted, discarded, and reservations
    that failed on a full ring) adds up to what record read. A million calls overflow a 4 KiB ring
    (ring buffers drop at reserve time, and only the program can count that); 20,000 records of
    16 bytes fit in 1 MiB whatever the reader does."""
    from evspec.loader.session import RecordSession, Workload

    from evspec.parser import parse
    from evspec.system import load_system

    monkeypatch.chdir(built)
    workload = Workload(["./rbuf_reader", str(calls)])
    session = RecordSession()
    read = 0
    try:
        lists, system = [parse(f"./{obj}")], load_system("live")
        session.prepare(lists, recording_plan(lists, system), system, built, workload)
        session.start()
        workload.start()

        def count(line: object) -> None:
            nonlocal read
            read += type(line).__name__ == "RingRecordLine"

        session.run(lambda: session.drain(count), workload)
        assert workload.wait() == 0
        counters = session.objects[0].live.maps["counters"].fd
        seen, dropped = (int.from_bytes(session.kernel.lookup(counters, k.to_bytes(4, "little"), 8) or b"", "little")
                         for k in (0, 1))
        discarded = session.discarded
    finally:
        session.close()
        workload.close()
    assert seen + dropped == calls
    assert read + discarded == seen
    assert discarded == seen // 4  # the counts 3, 7, 11, ... below seen
    if obj == "small.o":
        assert dropped > 0  # the 4 KiB ring overflowed: the program saw its reservations fail
    else:
        assert dropped == 0


@pytest.mark.parametrize("source", ["raw_getppid.c", "btf_getppid.c"])
def test_a_raw_tracepoint_program_is_attached_and_detached(
    built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """raw_tp/sys_enter through BPF_RAW_TRACEPOINT_OPEN, and tp_btf/sys_enter (loaded as a
    tracing program for the kernel's btf_trace_sys_enter, attached with no name): each runs
    system-wide, so the program keeps the workload's getppid() calls only; afterwards no link is left."""
    shutil.copy(DATA / "ringbuf" / source, built / source)
    monkeypatch.chdir(built)
    links_before = subprocess.run(["bpftool", "link", "show"], capture_output=True, text=True, check=True).stdout
    fds_before = set(os.listdir("/proc/self/fd"))
    status, out, err = _record("-v", "--format", "json", "-e", f"./{source}", "--", "./getppid", "50")
    assert set(os.listdir("/proc/self/fd")) == fds_before, "descriptors left open"
    assert status == 0, err
    records = [r for r in (json.loads(line) for line in out.splitlines()) if "event" in r]  # no table, summary
    assert len(records) == 50 and {r["event"] for r in records} == {"__bpf_stdout__"}
    assert all(int.from_bytes(bytes.fromhex(r["raw_hex"]), "little") == 110 for r in records)
    assert "evspec record: program 'on_sys_enter' attached to raw tracepoint sys_enter\n" in err
    assert subprocess.run(["bpftool", "link", "show"], capture_output=True, text=True, check=True).stdout == links_before


def test_a_program_the_object_leaves_off_is_loaded_not_attached(
    built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libbpf's SEC("?...") convention: the program is loaded (the verifier checks it) but no
    event carries it, so only the other program's records arrive."""
    from evspec.loader.sections.names import AttachKind, parse_section

    name = "?tracepoint/syscalls/sys_enter_getppid"
    section = parse_section(name)
    assert (section.attach, section.autoload, section.program_type.name) == (AttachKind.NONE, False, "TRACEPOINT")
    assert section.main_span.start == 1 and section.to_json()["autoload"] is False
    shutil.copy(DATA / "ringbuf" / "autoload.c", built / "autoload.c")
    workload = f"aload_{os.getpid()}"  # autoload.c sends for the task of that comm only
    shutil.copy(built / "getppid", built / workload)
    monkeypatch.chdir(built)
    status, out, err = _record("--format", "json", "-e", f"./autoload.c/var:targ_comm='{workload}'/", "--",
                               f"./{workload}", "5")
    assert status == 0, err
    records = [json.loads(line) for line in out.splitlines()][:-1]
    assert [int.from_bytes(bytes.fromhex(r["raw_hex"]), "little") for r in records] == [2] * 5
