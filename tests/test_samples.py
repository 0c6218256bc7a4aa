"""Live mode's decoder of a perf ring's bytes: runs of samples as columns, losses and task
records with their trailer's time; the same records as the checked decoder of one sample gives."""

from __future__ import annotations

import struct
from functools import partial
from pathlib import Path

import pytest
from evspec.loader.abi.perf import RecordType
from evspec.loader.kernel import KernelError
from evspec.loader.output import perf_ring
from evspec.loader.output.samples import Lost, RingDecoder, TaskEvent
from evspec.loader.output.script import LostLine, SampleLine, SampleRun
from evspec.loader.output.tracefs_format import TracepointDecoders
from evspec.loader.session import SAMPLE_TYPE, TRACKING_SAMPLE_TYPE
from hypothesis import given, settings
from hypothesis import strategies as st
from perf_records import comm_record, fork_record, full_sample, lost_record

COMMS = {5: "five", 6: "six"}


def lines(items: list[object]) -> list[SampleLine | LostLine]:
    out: list[SampleLine | LostLine] = []
    for item in items:
        if isinstance(item, SampleRun):
            item.comms = [COMMS[tid] for tid in item.tids]
            out.extend(item.lines())
        elif isinstance(item, Lost):
            out.append(LostLine(item.event, item.cpu, item.lost))
    return out


def reference(chunk: bytes) -> list[SampleLine | LostLine]:
    """Record by record, with the checked decoder of single samples."""
    out: list[SampleLine | LostLine] = []
    for rtype, misc, pos, size in perf_ring.walk_records(chunk):
        if rtype == RecordType.LOST:
            out.append(LostLine("evt", 3, struct.unpack_from("=Q", chunk, pos + 16)[0]))
        elif rtype == RecordType.SAMPLE:
            s = perf_ring.decode_sample(chunk[pos + 8 : pos + size], misc, int(SAMPLE_TYPE))
            out.append(SampleLine("evt", COMMS[s.tid], s.pid, s.tid, s.cpu, s.time, s.period, s.raw))  # type: ignore[arg-type,index]
    return out


_records = st.lists(
    st.one_of(
        st.tuples(st.sampled_from([5, 6]), st.integers(0, 1 << 40), st.integers(0, 3),
                  st.sampled_from([b"same payload", b"other", b"x" * 20, b""])),
        st.integers(1, 9),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(_records, st.integers(1, 3))
def test_decoding_in_runs_equals_decoding_one_by_one(records: list[object], repeat: int) -> None:
    """Runs of every length (each record repeated ``repeat`` times makes runs), mixed sizes and
    losses: the columns give what the one-sample decoder gives, in order; counts add up."""
    chunk = b"".join(
        (lost_record(r) if isinstance(r, int) else full_sample(r[0], r[0], r[1], r[2], r[3])) * repeat  # type: ignore[index]
        for r in records
    )
    decoder = RingDecoder("evt", 3, int(SAMPLE_TYPE))
    got = lines(decoder.decode(chunk))
    assert got == reference(chunk)
    assert decoder.samples == sum(1 for x in got if isinstance(x, SampleLine))
    assert decoder.lost == repeat * sum(r for r in records if isinstance(r, int))


def test_a_run_is_one_item_of_columns() -> None:
    chunk = b"".join(full_sample(5, 6, 100 + i, 1, b"abc") for i in range(1000))
    (run,) = RingDecoder("evt", 3, int(SAMPLE_TYPE)).decode(chunk)
    assert isinstance(run, SampleRun) and len(run) == 1000
    assert run.times == [100 + i for i in range(1000)] and set(run.tids) == {6} and set(run.cpus) == {1}
    assert run.raws == [b"abc\0"] * 1000 and run.fields is None


def test_a_raw_size_word_short_of_its_record_is_decoded_one_sample_at_a_time() -> None:
    chunk = bytearray(b"".join(full_sample(5, 6, 100 + i, 1, b"abc") for i in range(4)))
    size = len(chunk) // 4
    word_at = 8 + perf_ring.SampleLayout(int(SAMPLE_TYPE)).fixed.size
    struct.pack_into("=I", chunk, size * 2 + word_at, 2)  # the third says 2 payload bytes of 4
    (run,) = RingDecoder("evt", 3, int(SAMPLE_TYPE)).decode(bytes(chunk))
    assert run.raws == [b"abc\0", b"abc\0", b"ab", b"abc\0"]  # type: ignore[union-attr]


@pytest.mark.parametrize(("chunk", "message"), [
    (full_sample(5, 5, 1, 0, b"abc")[:-8], "header at position 0 says 64 bytes, 56 are available"),
    (b"\0" * 4, "4 bytes left at 0"),
    (struct.pack("=IHHQ", RecordType.LOST, 0, 16, 1), "PERF_RECORD_LOST of 16 bytes"),
])
def test_corrupt_records_are_errors(chunk: bytes, message: str) -> None:
    with pytest.raises(KernelError, match=message):
        RingDecoder("evt", 3, int(SAMPLE_TYPE)).decode(chunk)


def test_losses_and_task_records_carry_their_trailers_time() -> None:
    tracking = RingDecoder("dummy:tracking", 0, int(TRACKING_SAMPLE_TYPE))
    assert tracking.decode(comm_record(5, 5, b"loop", 10) + fork_record(6, 5, 11)) == [
        TaskEvent(10, 5, "loop", None), TaskEvent(11, 6, None, 5)]
    decoder = RingDecoder("evt", 3, int(SAMPLE_TYPE))
    assert decoder.decode(lost_record(4, 12)) == [Lost(12, "evt", 3, 4)] and decoder.lost == 4


def test_tracepoint_samples_carry_their_decoded_fields(tmp_path: Path) -> None:
    folder = tmp_path / "events" / "demo" / "tp"
    folder.mkdir(parents=True)
    (folder / "format").write_text(
        "name: tp\nID: 9\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
        "\tfield:int value;\toffset:4;\tsize:4;\tsigned:1;\n\nprint fmt: \"\"\n"
    )
    chunk = b"".join(full_sample(5, 5, i, 0, struct.pack("=Hxxi", 9, -i)) for i in range(3))
    decoder = RingDecoder("demo:tp", 0, int(SAMPLE_TYPE), partial(TracepointDecoders(tmp_path).fields, "demo:tp"))
    (run,) = decoder.decode(chunk)
    assert list(run.fields) == [(("value", -i),) for i in range(3)]  # type: ignore[union-attr, arg-type]
