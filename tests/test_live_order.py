"""Live records in time order across rings, a round at a time as perf orders its rings; task
names as the tracking records say; the follower's decoding, naming and stopping early."""

from __future__ import annotations

from evspec.loader.output.follow import BpfSource, Follower
from evspec.loader.output.order import TimeOrder, first_time, merge
from evspec.loader.output.samples import Lost, RingDecoder, TaskEvent
from evspec.loader.output.script import LostLine, RingRecordLine, SampleRun
from evspec.loader.output.spool import BPF, END, MIN_MEMORY, PERF, ROUND, Frame, Spool
from evspec.loader.output.tasks import TaskNames
from evspec.loader.session import SAMPLE_TYPE, TRACKING_SAMPLE_TYPE
from hypothesis import given, settings
from hypothesis import strategies as st
from perf_records import comm_record, fork_record, full_sample, lost_record


def run(source: int, times: list[int]) -> SampleRun:
    n = len(times)
    return SampleRun(f"e{source}", [source] * n, [source] * n, [source] * n, list(times), [0] * n,
                     [bytes([source])] * n)


def records(items: list[object]) -> list[tuple[int, int]]:
    """(time, source) of every record of ``items``, runs one by one."""
    out: list[tuple[int, int]] = []
    for item in items:
        if isinstance(item, SampleRun):
            out.extend((t, item.tids[0]) for t in item.times)
        else:
            out.append((item.time, -1))  # type: ignore[attr-defined]
    return out


_stream = st.lists(st.integers(0, 50), max_size=30).map(sorted)


@settings(max_examples=200, deadline=None)
@given(st.lists(_stream, min_size=1, max_size=4), st.lists(st.integers(1, 5), max_size=8))
def test_merge_gives_every_record_once_in_time_order(streams: list[list[int]], cuts: list[int]) -> None:
    """Streams of runs (cut in places) and lone items: all out, by time, equal times by stream."""
    built: list[list[object]] = []
    for source, times in enumerate(streams):
        items: list[object] = []
        at = 0
        for cut in [*cuts, len(times)]:
            if at < len(times):
                part = times[at : at + cut]
                items.append(run(source, part) if len(part) > 1 else Lost(part[0], "x", source, 1))
                at += cut
        built.append(items)
    merged = merge(built)  # type: ignore[arg-type]
    got = records(merged)
    expected = sorted(((t, s) for s, times in enumerate(streams) for t in times), key=lambda x: (x[0], x[1]))
    assert [t for t, _ in got] == [t for t, _ in expected]
    assert sorted(got) == sorted(records([item for items in built for item in items]))  # each one once


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 6)), max_size=5), max_size=8))
def test_rounds_hand_out_what_no_later_round_can_precede(rounds: list[list[tuple[int, int]]]) -> None:
    """Each round, each source writes records after every time seen before: what end_round hands
    out is sorted across rounds, and everything comes out once by the end."""
    order = TimeOrder()
    clock = 0
    out: list[object] = []
    written = 0
    for writes in rounds:
        for source, count in writes:
            times = [clock + i for i in range(count)]
            clock += count
            order.add(source, [run(source, times)])
            written += count
        out.extend(order.end_round())
        assert all(first_time(item) <= clock for item in out)  # type: ignore[arg-type]
    out.extend(order.flush())
    times = [t for t, _ in records(out)]
    assert times == sorted(times) and len(times) == written


def test_a_round_holds_back_what_the_next_round_may_precede() -> None:
    order = TimeOrder()
    order.add(0, [run(0, [10, 20, 30])])
    assert order.end_round() == []  # nothing was seen before this round
    order.add(1, [run(1, [15, 25])])
    assert records(order.end_round()) == [(10, 0), (15, 1), (20, 0), (25, 1), (30, 0)]
    order.add(0, [run(0, [40, 50])])
    assert records(order.end_round()) == []  # up to 30: nothing new
    assert records(order.pending) == [(40, 0), (50, 0)]
    assert records(order.flush()) == [(40, 0), (50, 0)]


def test_task_names_follow_comm_and_fork_records() -> None:
    tasks = TaskNames()
    tasks.apply(TaskEvent(1, 10, "sh", None))
    tasks.apply(TaskEvent(2, 11, None, 10))  # a child, named as its parent
    assert tasks.names([10, 10, 10], [10, 11, 11]) == ["sh", "sh", "sh"]
    tasks.apply(TaskEvent(3, 11, "loop", None))  # it execs
    assert tasks.names([10, 10], [10, 11]) == ["sh", "loop"] and tasks.names([], []) == []
    assert tasks.name(2**22 + 7, 2**22 + 7) == f":{2**22 + 7}"  # gone before it was named: perf's name


def follower(collected: list[object], tracking: bool = True) -> Follower:
    decoders = [RingDecoder("dummy:tracking", 0, int(TRACKING_SAMPLE_TYPE)),
                RingDecoder("out", 0, int(SAMPLE_TYPE)), RingDecoder("out", 1, int(SAMPLE_TYPE))]

    def render(batch: list[object]) -> tuple[()]:
        for line in batch:
            collected.extend(line.lines() if isinstance(line, SampleRun) else [line])
        return ()

    return Follower(decoders if tracking else decoders[1:], [BpfSource("rb")], render, lambda _: None)


def test_the_follower_names_orders_and_counts_what_the_frames_bring() -> None:
    """Two CPUs' rings whose samples alternate in time, the tracking ring's exec, a loss, ring
    buffer records read at time 25: out in time order, named, counted."""
    out: list[object] = []
    f = follower(out)
    f.take(Frame(PERF, 0, 0, comm_record(9, 9, b"loop", 5) + fork_record(10, 9, 6)))
    f.take(Frame(PERF, 1, 0, b"".join(full_sample(9, 9, t, 0, b"a") for t in (10, 30)) + lost_record(3, 35)))
    f.take(Frame(PERF, 2, 0, b"".join(full_sample(9, 10, t, 1, b"b") for t in (20, 40))))
    f.take(Frame(BPF, 0, 25, (3).to_bytes(4, "little") + bytes(4) + b"rb!" + bytes(5)))
    f.take(Frame(ROUND, 0, 0, b""))
    assert out == []  # the first round: nothing seen before it
    f.finish()
    assert [(type(x).__name__, getattr(x, "time_ns", None), getattr(x, "comm", None)) for x in out] == [
        ("SampleLine", 10, "loop"), ("SampleLine", 20, "loop"), ("RingRecordLine", None, None),
        ("SampleLine", 30, "loop"), ("LostLine", None, None), ("SampleLine", 40, "loop")]
    assert out[2] == RingRecordLine("rb", b"rb!") and out[4] == LostLine("out", 0, 3)
    assert (f.counts.samples, f.decoders[1].lost) == (5, 3)


def test_stopped_early_the_follower_counts_what_it_leaves() -> None:
    """A second ^C: nothing more printed; the records decoded and waiting, and those still in the
    spool, are counted, not printed."""
    out: list[object] = []
    with Spool(MIN_MEMORY) as spool:
        f = follower(out, tracking=False)
        f.take(Frame(PERF, 0, 0, b"".join(full_sample(9, 9, t, 0, b"a") for t in range(100, 110))))
        spool.put(ROUND, 0, 0)
        spool.put(PERF, 1, 0, [b"".join(full_sample(9, 9, t, 1, b"b") for t in range(200, 207)) + lost_record(2)])
        spool.put(BPF, 0, 300, [(3).to_bytes(4, "little") + bytes(4) + b"rb!" + bytes(5)])
        spool.put(END, 0, 0)
        counts = f.run(spool, lambda: True, stop_early=lambda: True)
    assert out == [] and counts.stopped and counts.unprinted == 10 + 7 + 1 and counts.samples == 0


def test_a_drain_gone_without_its_end_is_an_error() -> None:
    import pytest
    from evspec.loader.kernel import KernelError

    with Spool(MIN_MEMORY) as spool:
        spool.put(PERF, 0, 0, [full_sample(9, 9, 1, 0, b"a")])
        with pytest.raises(KernelError, match="the drain of the rings ended without finishing its work"):
            follower([], tracking=False).run(spool, lambda: True)


def test_an_error_of_the_drain_is_raised_with_its_message() -> None:
    import pytest
    from evspec.loader.kernel import KernelError
    from evspec.loader.output.spool import ERROR

    with Spool(MIN_MEMORY) as spool:
        spool.put(ERROR, 0, 0, [b"corrupt perf ring buffer record: header at position 8 says 4 bytes"])
        with pytest.raises(KernelError, match="header at position 8 says 4 bytes"):
            follower([], tracking=False).run(spool, lambda: False)
