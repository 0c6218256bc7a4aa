"""Live mode's bulk printing of a run of samples: byte for byte what the one-sample functions print
(perf script's layout), whatever changes from sample to sample and however wide the times are."""

from __future__ import annotations

import pytest
from evspec.loader.output.script import (
    JsonRenderer,
    SampleLine,
    SampleRun,
    TextRenderer,
    sample_json,
    sample_text,
    time_texts,
)
from hypothesis import given, settings
from hypothesis import strategies as st

_times = st.one_of(
    st.integers(0, 2_000_000_000),  # the first seconds after boot: fewer than seven digits of µs
    st.integers(99_990_000_000_000, 100_010_000_000_000),  # 99999 s to 100000 s: a digit more
    st.integers(1 << 40, 1 << 64 - 1),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_times, max_size=40))
def test_time_texts_are_perfs_seconds_and_microseconds(times: list[int]) -> None:
    assert time_texts(times) == [b"%5d.%06d" % divmod(t // 1000, 1_000_000) for t in times]


def run_of(samples: list[tuple[str, int, int, int, int, bytes]]) -> SampleRun:
    comms, tids, cpus, times, periods, raws = (list(column) for column in zip(*samples, strict=True))
    return SampleRun("__bpf_stdout__", [t + 1000 for t in tids], tids, cpus, times, periods, raws, None, comms)


_samples = st.lists(
    st.tuples(st.sampled_from(["loop", "sh", "a%b"]), st.sampled_from([7, 123456]), st.sampled_from([0, 1, 12]),
              _times, st.sampled_from([0, 1]),
              st.sampled_from([b"", b"getppid record\0\0", bytes(range(60)), b"\xe9t\xe9\0", b"x" * 9])),
    min_size=1, max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(_samples, st.booleans())
def test_a_run_prints_as_its_samples_one_by_one(samples: list[tuple[str, int, int, int, int, bytes]],
                                                constant: bool) -> None:
    """Tasks, CPUs, periods and payloads that change or not (``constant``: the first sample's,
    the times only changing: the repeated-template way), times of any width."""
    if constant:
        samples = [(*samples[0][:3], t, *samples[0][4:]) for (_, _, _, t, _, _) in samples]
    run = run_of(samples)
    lines = run.lines()
    for renderer in (TextRenderer(20), TextRenderer(20)):  # twice: from the renderer's caches too
        assert renderer.render([run]) == "".join(sample_text(line, 20) for line in lines)
        assert renderer.render([run]) == "".join(sample_text(line, 20) for line in lines)
    assert JsonRenderer().render([run]) == "".join(sample_json(line) for line in lines)


def test_a_long_run_prints_in_chunks_and_a_reused_buffer_is_yielded_a_piece_at_a_time() -> None:
    """A run longer than a chunk is printed in pieces; in the repeated-template way a piece is the
    renderer's buffer, rewritten for the next piece: written (here: copied) before asking on."""
    times = [5_000_000_000_000 + 1000 * i for i in range(5000)]
    run = run_of([("loop", 7, 1, t, 0, b"getppid record\0\0") for t in times])
    renderer = TextRenderer(14)
    pieces = [bytes(piece) for piece in renderer.pieces([run])]
    assert len(pieces) == 3
    assert b"".join(pieces).decode() == "".join(sample_text(line, 14) for line in run.lines())


def test_samples_need_their_task_names_before_printing() -> None:
    run = SampleRun("e", [1], [1], [0], [1], [0], [b"x"])
    with pytest.raises(ValueError, match="the samples of e have no task names yet"):
        TextRenderer(1).render([run])


def test_decoded_fields_go_the_one_sample_way() -> None:
    run = run_of([("loop", 7, 1, 1_500_000_000, 0, b"x")])
    run.fields = [(("value", 3),)]
    line = SampleLine("__bpf_stdout__", "loop", 1007, 7, 1, 1_500_000_000, 0, b"x", (("value", 3),))
    assert TextRenderer(14).render([run]) == sample_text(line, 14)
    assert JsonRenderer().render([run]) == sample_json(line)
