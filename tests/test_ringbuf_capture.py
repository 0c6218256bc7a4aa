"""BPF ring buffer records captured with ``record -o``: samples of a synthetic event per map that
``perf script`` 6.1 and ``evspec script`` both read, against each other and against live record.

Without root: the samples of hand-made ring buffer records, read back by ``script_lines`` and by
perf script. As root (tests/data/ringbuf/capture.c): two ring buffer maps with records of three
sizes (one not a multiple of 8, some discarded) and a perf ring, captured and compared record by
record — perf script's hexdump and ``BPF string:`` lines, evspec script's text and JSON, and live
record's; then the samples' times, which must be perf's clock.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import struct
import subprocess
from pathlib import Path

import pytest
from bpf_build import build_bpf, build_program, copy_sources, require_tools
from corpus_files import DATA
from evspec.loader.abi.perf import PerfEventAttr, PerfType, RecordType, SampleType, SwConfig
from evspec.loader.errors import ObjectError
from evspec.loader.output import perfdata as pd
from evspec.loader.output.bpf_ringbuf import DISCARD_BIT, BpfRingReader, RecordRun
from evspec.loader.output.capture import Capture
from evspec.loader.output.perf_ring import SampleLayout
from evspec.loader.output.ringbuf_capture import (
    MAX_RECORD,
    RING_ID_BASE,
    RING_SAMPLE_TYPE,
    RingSamples,
    is_ring_event,
    ring_event_attr,
    sample_size,
)
from evspec.loader.output.script import RingRecordLine, ring_record_json, ring_record_text
from evspec.loader.session import SAMPLE_TYPE, TRACKING_SAMPLE_TYPE, perf_attr
from record_cli import run_record, run_script
from test_bpf_ringbuf import PAGE, FakeRing

from evspec.cli.script import name_width, script_lines

HOST = pd.HostInfo("box", "6.1.0", "evspec 0.1.0", "x86_64", 2, 2, ("evspec", "record", "-o", "x"))
TRACKING = pd.FileAttr.of("dummy:tracking", perf_attr({"type": PerfType.SOFTWARE, "config": SwConfig.DUMMY,
                                                      "sample_type": TRACKING_SAMPLE_TYPE, "sample_id_all": 1}), (1,))
CALLS = 20_000


def perf_script(perf: str, path: Path) -> str:
    # perf writes a payload's bytes 0xA0-0xFF as they are (Latin-1); evspec the same characters in UTF-8
    done = subprocess.run([perf, "script", "-i", str(path)], capture_output=True, encoding="latin-1",
                          env={**os.environ, "LC_ALL": "C"})
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr  # no out-of-order events, nothing it could not read
    return done.stdout


_PERF_HEAD = re.compile(r"^\s*(\S+)\s+(-?\d+)\s+\[(-?\d+)\]\s+(\d+\.\d{6}):\s+(\d+)\s+(\S+):")
_RING_HEAD = re.compile(r"^\s*(\S+): ring buffer record, (\d+) bytes$")
_EVSPEC_HEAD = re.compile(r"^\s*\S+\s+-?\d+\s+\[\d+\]\s+\d+\.\d{6}:\s+\d+\s+(\S+): $")
_DUMP = re.compile(r"^\s*(?:BPF output:)?\s*[0-9a-f]{4}:((?: [0-9a-f]{2})+)")

Block = tuple[str, tuple[str, ...]]  # event, then the lines of its hexdump and BPF string


def blocks(text: str, *heads: re.Pattern[str]) -> list[Block]:
    """The samples of perf script-style text: each header line, and the lines up to the next one
    (``BPF string: "\\n"`` spans two lines: split on newlines only)."""
    out: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        m = next((m for m in (h.match(line) for h in heads) if m), None)
        if m is not None:
            out.append((m.groups()[-1] if heads[0] is _PERF_HEAD else m.group(1), []))
        elif line and out:
            out[-1][1].append(line)
    return [(event, tuple(lines)) for event, lines in out]


def payload(lines: tuple[str, ...]) -> bytes:
    return b"".join(bytes.fromhex(m.group(1)) for m in map(_DUMP.match, lines) if m)


def by_event(items: list[Block]) -> dict[str, list[tuple[str, ...]]]:
    out: dict[str, list[tuple[str, ...]]] = {}
    for event, lines in items:
        out.setdefault(event, []).append(lines)
    return out


# ------------------------------------------------------------------------------ no kernel


def test_the_synthetic_event_samples_as_the_sessions_events_and_is_recognised() -> None:
    assert RING_SAMPLE_TYPE == SAMPLE_TYPE  # perf reads every sample's id at one place
    attr = ring_event_attr()
    assert (attr.type, attr.config, attr.sample_type, attr.config1) == (PerfType.SOFTWARE, SwConfig.BPF_OUTPUT,
                                                                          SAMPLE_TYPE, 27)
    assert is_ring_event(attr)
    output = perf_attr({"type": PerfType.SOFTWARE, "config": SwConfig.BPF_OUTPUT, "sample_type": SAMPLE_TYPE})
    assert not is_ring_event(output)


def test_a_record_too_big_for_a_sample_is_an_error_naming_the_map() -> None:
    samples = RingSamples("events", RING_ID_BASE)
    pieces = samples.encode([bytes(MAX_RECORD)], 5)
    assert sample_size(MAX_RECORD) <= 0xFFFF and len(b"".join(pieces)) == sample_size(MAX_RECORD)
    with pytest.raises(ObjectError, match=f"ring buffer map events: a record of {MAX_RECORD + 1} bytes does not fit"):
        samples.encode([b"x", bytes(MAX_RECORD + 1)], 5)


@pytest.mark.parametrize("length", [0, 1, 3, 4, 5, 8, 13, 16, 40, 63, 64, 65, 200])
def test_a_run_copied_by_columns_makes_the_samples_records_one_by_one_make(length: int) -> None:
    ring = FakeRing(16 * PAGE)
    reader = BpfRingReader("events", ring.mapping)
    records = [bytes((i * 7 + k) % 256 for k in range(length)) for i in range(40)]
    for raw in records:
        ring.write(raw)
    taken = reader.take_runs()
    assert any(type(item) is RecordRun for item in taken)  # whole runs, not records
    samples = RingSamples("events", RING_ID_BASE)
    one_by_one = b"".join(b"".join(samples.encode([raw], 77)) for raw in records)
    assert b"".join(samples.encode(taken, 77)) == one_by_one
    assert len(one_by_one) == 40 * sample_size(length)


def hand_capture(tmp_path: Path, rounds: list[list[tuple[bytes, int]]]) -> tuple[Path, list[bytes], list[int]]:
    """A capture of two ring buffer maps (``events``: ``rounds``, round after round; ``other``: one
    record a round) through Capture.drain, with a clock that says 1.000001 s, 2.000002 s, ...;
    the file, the records kept in order, and the times."""
    events, other = FakeRing(16 * PAGE), FakeRing()
    readers = [(BpfRingReader("events", events.mapping), RING_ID_BASE), (BpfRingReader("other", other.mapping),
                                                                         RING_ID_BASE + 1)]
    attrs = [TRACKING, *(pd.FileAttr.of(r.name, ring_event_attr(), (i,)) for r, i in readers)]
    times = iter(range(1_000_001_000, 100_000_000_000, 1_000_001_000))
    capture = Capture(tmp_path / "ring.data", attrs, [], HOST, bpf_rings=readers, clock=lambda: next(times))
    kept: list[bytes] = []
    for n, records in enumerate(rounds):
        for raw, flags in records:
            events.write(raw, flags)
            if not flags:
                kept.append(raw)
        other.write(b"round %d\0" % n)
        assert capture.drain() is True
    assert capture.drain() is False
    capture.finish()
    return capture.path, kept, [1_000_001_000 * (n + 1) for n in range(len(rounds))]


ROUNDS = [
    [(struct.pack("<Q", i) + b"ring!\0\0\0", DISCARD_BIT if i % 4 == 3 else 0) for i in range(300)],  # one size
    [(bytes([i]) * (i % 5 * 7), 0) for i in range(40)],  # sizes 0, 7, 14, 21, 28 in turn
    [(b"odd!\0", 0)] * 3 + [(bytes(range(200)), 0)] + [(b"\n\0", 0)],
    [(struct.pack("<QQ", i, -i % 2**64), 0) for i in range(500)],  # runs without discards: copied by columns
    [(bytes([i]) * 3, 0) for i in range(20)] + [(bytes([i]) * 64, 0) for i in range(20)],
    [(bytes([i]) * 65, 0) for i in range(20)] + [(b"", 0)] * 20 + [(bytes(range(i, i + 37)), 0) for i in range(99)],
]


def test_hand_made_records_round_trip_through_evspec_script(tmp_path: Path) -> None:
    path, kept, times = hand_capture(tmp_path, ROUNDS)
    data = pd.read_perf_data(path)
    lines = list(script_lines(data))
    assert [line for line in lines if line.event == "events"] == [RingRecordLine("events", raw) for raw in kept]
    assert [line.raw for line in lines if line.event == "other"] == [b"round %d\0" % n for n in range(len(ROUNDS))]
    assert all(type(line) is RingRecordLine for line in lines) and len(lines) == len(kept) + len(ROUNDS)
    # each sample: no task, no CPU, period 1, the round's time, its record's bytes exactly
    layout = SampleLayout(SAMPLE_TYPE)
    seen = []
    for rec in data.records():
        if rec.type == RecordType.SAMPLE:
            assert rec.misc == 0 and rec.size % 8 == 0
            values, _chain, raw = layout.unpack(data.buf, rec.offset + 8, rec.offset + rec.size)
            fields = dict(zip(layout.names, values, strict=True))
            assert (fields["pid"], fields["tid"], fields["cpu"], fields["ip"], fields["period"]) == (
                0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0, 1)
            seen.append((fields["identifier"], fields["time"], raw))
    events = [(t, raw) for ident, t, raw in seen if ident == RING_ID_BASE]
    assert [raw for _, raw in events] == kept
    assert {t for t, _ in events[:225]} == {times[0]} and {t for t, _ in events[225:265]} == {times[1]}
    status, text, err = run_script("-i", str(path))
    assert status == 0 and err == ""
    width = name_width(data)
    assert width == len("events") and text == "".join(ring_record_text(line, width) for line in lines)
    status, text, err = run_script("-i", str(path), "--format", "json")
    assert status == 0 and err == ""
    assert text == "".join(map(ring_record_json, lines)) + f'{{"summary": {{"samples": {len(lines)}, "lost": 0}}}}\n'


def test_perf_script_reads_the_hand_made_records_as_evspec_does(tmp_path: Path, perf_binary: str) -> None:
    path, kept, times = hand_capture(tmp_path, ROUNDS)
    perf = blocks(perf_script(perf_binary, path), _PERF_HEAD)
    status, ours, _ = run_script("-i", str(path))
    assert status == 0
    assert by_event(perf) == by_event(blocks(ours, _RING_HEAD))  # the same hexdump and string lines
    assert [payload(lines) for event, lines in perf if event == "events"] == kept
    heads = [m.groups() for m in map(_PERF_HEAD.match, perf_script(perf_binary, path).split("\n")) if m]
    assert {h[:3] for h in heads} == {(":-1", "-1", "-01")}  # no task, no CPU
    stamps = sorted({h[3] for h in heads})
    assert stamps == [f"{t // 10**9}.{t % 10**9 // 1000:06d}" for t in times]


def test_a_typed_ring_event_whose_btf_the_file_lacks_is_an_error(tmp_path: Path) -> None:
    assert pd.decode_bpf_btf(pd.encode_bpf_btf({3: b"abc", 1: b""})) == {1: b"", 3: b"abc"}
    ring = FakeRing()
    reader = BpfRingReader("events", ring.mapping)
    attrs = [TRACKING, pd.FileAttr.of("events", ring_event_attr(2, 7), (RING_ID_BASE,))]
    capture = Capture(tmp_path / "t.data", attrs, [], HOST, bpf_rings=[(reader, RING_ID_BASE)], clock=lambda: 5,
                      btfs={1: b"not this one"})
    ring.write(b"abcd")
    capture.drain()
    capture.finish()
    status, out, err = run_script("-i", str(capture.path))
    assert (status, out) == (2, "")
    assert "ring buffer map events is typed by BTF object 2, which HEADER_BPF_BTF does not hold" in err


# ------------------------------------------------------------------------------ for real


def expected(calls: int) -> dict[str, list[bytes]]:
    """What capture.c writes for ``calls`` getppid() calls, per map (and __bpf_stdout__)."""
    out: dict[str, list[bytes]] = {"events": [], "texts": [], "__bpf_stdout__": []}
    for n in range(calls):
        count = struct.pack("<Q", n)
        if n % 3 == 1:
            out["events"].append(count + b"odd!\0")
        elif n % 4 != 3:
            out["events"].append(count + (b"ring!\0\0\0" if n % 3 == 0 else b"a forty-byte ring buffer record\0"))
        if n % 2 == 0:
            out["texts"].append(b"ring buffer 2\0")
        if n % 5 == 0:
            out["__bpf_stdout__"].append(count + bytes(4))  # the kernel pads the raw data to 8 bytes
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, root_kernel: None) -> dict[str, object]:
    """One capture and one live run of each format, of CALLS calls."""
    require_tools("clang", "cc")
    out = tmp_path_factory.mktemp("ringbuf-capture")
    copy_sources(DATA / "ringbuf", ("capture.c", "getppid.c"), out)
    build_bpf(out, "capture.c", "capture.o")
    build_program(out, "getppid.c", "rbuf_capture")  # the program counts this task's calls only
    cwd = os.getcwd()
    os.chdir(out)
    try:
        command = ("-e", "./capture.o", "--", "./rbuf_capture", str(CALLS))
        results: dict[str, object] = {"dir": out}
        for name, argv in (("capture", ("-o", str(out / "cap.data"), "--format", "json")), ("text", ()),
                           ("json", ("--format", "json"))):
            status, text, err = run_record("--dump-maps", "counters", *argv,
                                    *command)
            assert status == 0, err
            results[name] = (text, err)
    finally:
        os.chdir(cwd)
    return results


def _no_failed_writes(output: str) -> None:
    """The program's `counters` (--dump-maps, JSON): every call seen, no write failed (no ring filled)."""
    counters = {e["key"]: e["value"] for e in map(json.loads, output.splitlines()) if e.get("map") == "counters"}
    assert counters == {0: CALLS, 1: 0}, counters


def test_record_o_writes_every_record_and_perf_script_agrees(recorded: dict[str, object], perf_binary: str) -> None:
    path = recorded["dir"] / "cap.data"  # type: ignore[operator]
    want = expected(CALLS)
    total = sum(map(len, want.values()))
    out, err = recorded["capture"]  # type: ignore[misc]
    _no_failed_writes(out)
    assert f"({total} samples, 0 lost) ]" in err, err
    status, text, err = run_script("-i", str(path), "--format", "json")
    assert status == 0 and err == ""
    rows = [json.loads(line) for line in text.splitlines()]
    assert rows[-1] == {"summary": {"samples": total, "lost": 0}}
    ours: dict[str, list[bytes]] = {}
    for row in rows[:-1]:
        ours.setdefault(row["event"], []).append(bytes.fromhex(row["raw_hex"]))
        assert row.get("ringbuf", False) == (row["event"] != "__bpf_stdout__")
    assert ours == want  # every record kept, in the order the program wrote them
    perf = blocks(perf_script(perf_binary, path), _PERF_HEAD)
    assert {event: [payload(lines) for lines in items] for event, items in by_event(perf).items()} == want
    status, text, err = run_script("-i", str(path))
    assert status == 0 and err == ""
    # the same hexdump and BPF string lines, record by record, ring buffers and perf ring alike
    assert by_event(blocks(text, _RING_HEAD, _EVSPEC_HEAD)) == by_event(perf)


def test_evspec_script_prints_ring_records_as_live_record(recorded: dict[str, object]) -> None:
    path = recorded["dir"] / "cap.data"  # type: ignore[operator]
    live_text, _ = recorded["text"]  # type: ignore[misc]
    live_json, _ = recorded["json"]  # type: ignore[misc]
    _no_failed_writes(live_json)
    status, text, _ = run_script("-i", str(path))
    assert status == 0
    records = "\n".join(line for line in live_text.split("\n") if not line.startswith("counters["))  # --dump-maps
    live = by_event(blocks(records, _RING_HEAD, _EVSPEC_HEAD))
    script = by_event(blocks(text, _RING_HEAD, _EVSPEC_HEAD))
    assert script["events"] == live["events"] and script["texts"] == live["texts"]
    width = len("syscalls:sys_enter_getppid")  # the names align to the longest event's, live and script
    ring_text = {line for line in text.split("\n") if "ring buffer record" in line}
    assert ring_text == {f"{'events':>{width}}: ring buffer record, {n} bytes" for n in (13, 16, 40)} | {
        f"{'texts':>{width}}: ring buffer record, 14 bytes"}
    assert ring_text == {line for line in live_text.split("\n") if "ring buffer record" in line}
    status, text, _ = run_script("-i", str(path), "--format", "json")
    assert status == 0
    for event in ("events", "texts"):
        assert [line for line in text.splitlines() if f'"event": "{event}"' in line] == [
            line for line in live_json.splitlines() if f'"event": "{event}"' in line]


def test_ring_records_are_stamped_with_perfs_clock_after_they_were_written(recorded: dict[str, object]) -> None:
    """A ring buffer record's time is when the reader took it: not before the kernel's time of the
    __bpf_stdout__ sample the same call wrote (right after it), give or take the moment between
    the take and the clock read."""
    data = pd.read_perf_data(recorded["dir"] / "cap.data")  # type: ignore[operator]
    names = {i: a.name for a in data.attrs for i in a.ids}
    layout = SampleLayout(SAMPLE_TYPE)
    ring_time: dict[int, int] = {}
    stdout_time: dict[int, int] = {}
    for rec in data.records():
        if rec.type != RecordType.SAMPLE:
            continue
        values, _chain, raw = layout.unpack(data.buf, rec.offset + 8, rec.offset + rec.size)
        fields = dict(zip(layout.names, values, strict=True))
        n = int.from_bytes(raw[:8], "little")
        if names[fields["identifier"]] == "events" and n % 5 == 0:
            ring_time[n] = fields["time"]
        elif names[fields["identifier"]] == "__bpf_stdout__":
            stdout_time[n] = fields["time"]
    early = [n for n in ring_time if ring_time[n] < stdout_time[n] - 200_000]
    assert len(ring_time) > 1000 and early == []


def test_typed_ring_records_print_typed_from_the_capture(
    tmp_path: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch, perf_binary: str
) -> None:
    """map:events.type=event: the capture names the type (HEADER_BPF_BTF carries the object's
    BTF), and evspec script prints each record decoded as live record decodes it; perf script
    reads the file as ever."""
    from evspec.loader.object.reader import read_object
    from evspec.loader.output.typed import RecordDecoder

    require_tools("clang", "cc")
    workload = f"typed_{os.getpid()}"  # typed.c counts the getppid() calls of the task of that comm only
    copy_sources(DATA / "typed", ("typed.c",), tmp_path)
    copy_sources(DATA / "ringbuf", ("getppid.c",), tmp_path)
    build_bpf(tmp_path, "typed.c", "typed.o")
    build_program(tmp_path, "getppid.c", workload)
    monkeypatch.chdir(tmp_path)
    status, _, err = run_record("-o", "typed.data", "-e",
                         f"./typed.o/map:events.type=event,var:targ_comm='{workload}'/", "--", f"./{workload}", "5")
    assert status == 0, err
    decoder = RecordDecoder.named(read_object(tmp_path / "typed.o").btf, "event")
    data = pd.read_perf_data(tmp_path / "typed.data")
    assert set(data.btfs()) == {1}
    status, text, err = run_script("-i", "typed.data", "--format", "json")
    assert status == 0 and err == ""
    rings = [line for line in text.splitlines() if line.startswith('{"event": "events"')]
    lines = [RingRecordLine("events", raw, decoder.decode(raw))
             for raw in (bytes.fromhex(json.loads(line)["raw_hex"]) for line in rings)]
    assert rings == [ring_record_json(line).rstrip("\n") for line in lines]
    records = [json.loads(line) for line in rings]
    assert len(records) == 5 and len({r["fields"]["pid"] for r in records}) == 1
    assert all(r["fields"]["comm"] == workload and r["fields"]["k"] == "KIND_ENTER" and r["size"] == 40
               for r in records)
    status, text, err = run_script("-i", "typed.data")
    assert status == 0 and err == ""
    width = name_width(data)
    assert [line + "\n" for line in text.splitlines() if line.lstrip().startswith("events: ")] == [
        ring_record_text(line, width) for line in lines]
    perf_script(perf_binary, tmp_path / "typed.data")  # exit 0, nothing on stderr


def test_perf_clock_reads_the_time_the_kernel_stamps_samples_with(root_kernel: None) -> None:
    """A getppid() of this thread between two readings of PerfClock: the kernel's time of its
    tracepoint sample lies between them (CLOCK_MONOTONIC alone is a millisecond off here)."""
    from evspec.loader.kernel import Kernel
    from evspec.loader.output.perf_clock import PerfClock
    from evspec.loader.output.perf_ring import PerfRing, walk_records

    from evspec.system import load_system

    kernel = Kernel()
    clock = PerfClock.calibrate(kernel)
    assert 0 < clock.error < 1_000_000
    tp_id = load_system("live").tracepoint_id("syscalls", "sys_enter_getppid")
    assert tp_id is not None
    attr = PerfEventAttr(type=PerfType.TRACEPOINT, config=tp_id, sample_period=1, sample_type=SampleType.TIME)
    attr.size = ctypes.sizeof(PerfEventAttr)
    fd = kernel.perf_event_open(attr, pid=0, cpu=-1)
    mapping = kernel.mmap_ring(fd, 1)
    try:
        ring = PerfRing(mapping, int(SampleType.TIME))
        for _ in range(5):
            before = clock.now()
            os.getppid()
            after = clock.now()
            chunk = ring.take()
            (stamp,) = [struct.unpack_from("<Q", chunk, pos + 8)[0]
                        for rtype, _misc, pos, _size in walk_records(chunk) if rtype == RecordType.SAMPLE]
            assert before - 20_000 <= stamp <= after + clock.error + 20_000, (before, stamp, after, clock)
    finally:
        kernel.munmap(mapping)
        kernel.close(fd)


def test_a_capture_without_ring_buffers_has_no_ring_event(tmp_path: Path) -> None:
    attrs = [TRACKING]
    capture = Capture(tmp_path / "c.data", attrs, [], HOST)
    capture.finish()
    assert not any(is_ring_event(a.parsed()) for a in pd.read_perf_data(capture.path).attrs)
    with pytest.raises(ValueError, match="need a clock"):
        Capture(tmp_path / "d.data", attrs, [], HOST, bpf_rings=[(BpfRingReader("events", FakeRing().mapping), 1)])

