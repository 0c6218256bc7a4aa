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
from corpus_files import DATA
from evspec.loader.kernel import BpfRingMapping, KernelError
from evspec.loader.output.bpf_ringbuf import BUSY_BIT, DISCARD_BIT, BpfRingReader

from evspec.cli.record import add_record_parser, record_main

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


# ------------------------------------------------------------------------------ for real


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for tool in ("clang", "cc"):
        if shutil.which(tool) is None:
            if os.environ.get("CI") == "true":
                pytest.fail(f"{tool} is required in CI")
            pytest.skip(f"{tool} not installed")
    out = tmp_path_factory.mktemp("ringbuf")
    for name in ("ringbuf.c", "getppid.c"):
        shutil.copy(DATA / "ringbuf" / name, out / name)
    subprocess.run(["cc", "-O2", "-o", "getppid", "getppid.c"], cwd=out, check=True)
    for name, size in (("ringbuf.o", 1 << 20), ("small.o", PAGE)):
        subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu",
                        f"-DRINGBUF_BYTES={size}", "-c", "ringbuf.c", "-o", name], cwd=out, check=True)
    return out


def _record(*argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    add_record_parser(parser.add_subparsers(dest="cmd"))
    out, err = io.StringIO(), io.StringIO()
    status = record_main(parser.parse_args(["record", *argv]), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_record_reads_every_ring_buffer_without_a_term(
    built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(built)
    status, out, err = _record("--format", "json", "-e", "./ringbuf.o", "--", "./getppid", "200")
    assert status == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    records, (summary,) = lines[:-1], lines[-1:]
    assert all(r["event"] == "events" and r["ringbuf"] for r in records)
    counts = [int.from_bytes(bytes.fromhex(r["raw_hex"])[:8], "little") for r in records]
    assert counts == [n for n in range(200) if n % 4 != 3]  # every submitted one, in order
    assert all(bytes.fromhex(r["raw_hex"])[8:] == b"ring!\0\0\0" for r in records)
    assert summary["summary"]["samples"] == 150 and summary["summary"]["ringbuf_discarded"] == 50


def test_record_prints_ring_buffer_records_like_bpf_output(
    built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(built)
    status, out, err = _record("-e", "./ringbuf.o", "--", "./getppid", "1")
    assert status == 0, err
    # names aligned with the other events' (the program's tracepoint is the longest)
    assert out == (f"{'events':>{len('syscalls:sys_enter_getppid')}}: ring buffer record, 16 bytes\n"
                   "      BPF output: 0000: 00 00 00 00 00 00 00 00  ........\n"
                   "                  0008: 72 69 6e 67 21 00 00 00  ring!...\n"
                   '      BPF string: ""\n\n')


def test_record_to_a_file_refuses_ring_buffers(built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(built)
    status, out, err = _record("-o", str(built / "perf.data"), "-e", "./ringbuf.o", "--", "./getppid", "1")
    assert (status, out) == (2, "")
    assert "ring buffer records (events) are not written to perf.data yet: record them without -o" in err


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
    workload = Workload(["./getppid", str(calls)])
    session = RecordSession()
    read = 0
    try:
        session.prepare([parse(f"./{obj}")], load_system("live"), built, workload)
        session.start()
        workload.start()

        def drain() -> bool:
            nonlocal read
            busy = session.take()
            read += sum(1 for line in session.decode() if type(line).__name__ == "RingRecordLine")
            return busy

        session.run(drain, workload)
        assert workload.wait() == 0
        counters = session.objects[0].live.maps["counters"].fd
        seen, dropped = (int.from_bytes(session.kernel.lookup(counters, k.to_bytes(4, "little"), 8) or b"", "little")
                         for k in (0, 1))
        discarded = session.bpf_rings[0].discarded
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
    records = [json.loads(line) for line in out.splitlines()][:-1]
    assert len(records) == 50 and {r["event"] for r in records} == {"__bpf_stdout__"}
    assert all(int.from_bytes(bytes.fromhex(r["raw_hex"]), "little") == 110 for r in records)
    assert "evspec record: program 'on_sys_enter' attached to raw tracepoint sys_enter\n" in err
    assert subprocess.run(["bpftool", "link", "show"], capture_output=True, text=True, check=True).stdout == links_before
