"""The spool between the drain and the renderer: frames in order through shared memory and, past
its bound, a temporary file; one writer process and one reader process."""

from __future__ import annotations

import os
import select
import struct
import time
from pathlib import Path

import pytest
from evspec.loader.output import spool as spool_mod
from evspec.loader.output.spool import BPF, END, MIN_MEMORY, PERF, Frame, Spool
from hypothesis import given, settings
from hypothesis import strategies as st

_PATTERN = bytes(range(256)) * (4 * MIN_MEMORY // 256 + 2)


def payload(n: int, size: int) -> bytes:
    """Frame ``n``'s bytes: its number, then a pattern that starts where ``n`` says, ``size``
    bytes in all."""
    return (struct.pack("=I", n) + _PATTERN[n & 0xFF : (n & 0xFF) + size])[:size]


def read_all(spool: Spool) -> list[Frame]:
    out = []
    while (frame := spool.get()) is not None:
        out.append(frame)
    return out


def test_frames_come_back_in_order_with_their_kind_source_and_stamp(tmp_path: Path) -> None:
    with Spool(MIN_MEMORY, str(tmp_path)) as spool:
        assert spool.get() is None
        assert spool.put(PERF, 3, 0, [b"abc", memoryview(b"defgh")])
        assert spool.put(BPF, 1, 123456789, [b"x" * 100])
        assert spool.put(END, 0, 0)
        assert read_all(spool) == [Frame(PERF, 3, 0, b"abcdefgh"), Frame(BPF, 1, 123456789, b"x" * 100),
                                   Frame(END, 0, 0, b"")]
        stats = spool.stats()
        assert stats.spilled == 0 and stats.file_peak == 0 and 0 < stats.memory_peak <= spool.capacity


def test_past_the_bound_frames_go_to_the_file_and_memory_stays_bounded(tmp_path: Path) -> None:
    """Nothing read while 40 frames of 8 KiB are put into 64 KiB: the memory takes what fits,
    the file the rest, and the reader gets all of them in order; the file is removed by close."""
    with Spool(MIN_MEMORY, str(tmp_path)) as spool:
        path = Path(spool.path)
        assert path.parent == tmp_path and path.name.startswith("evspec-spool-")
        frames = [payload(n, 8192) for n in range(40)]
        for n, data in enumerate(frames):
            assert spool.put(PERF, n % 4, 0, [data])
        stats = spool.stats()
        assert stats.memory_peak <= spool.capacity
        assert stats.spilled >= 30 * 8192 and stats.file_peak == stats.spilled == path.stat().st_size
        got = read_all(spool)
        assert [f.payload for f in got] == frames and [f.source for f in got] == [n % 4 for n in range(40)]
    assert not path.exists()


def test_a_frame_larger_than_the_memory_goes_to_the_file(tmp_path: Path) -> None:
    with Spool(MIN_MEMORY, str(tmp_path)) as spool:
        big = payload(7, 3 * MIN_MEMORY)
        assert spool.put(PERF, 0, 0, [b"small"]) and spool.put(PERF, 1, 0, [big]) and spool.put(PERF, 2, 0, [b"after"])
        assert [f.payload for f in read_all(spool)] == [b"small", big, b"after"]
        assert spool.stats().spilled >= len(big)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40_000), st.integers(0, 6)), min_size=1, max_size=80))
def test_any_interleaving_of_puts_and_gets_keeps_every_frame_in_order(steps: list[tuple[int, int]]) -> None:
    """Each step puts a frame of some size, then gets up to some frames: the segments of the file
    and the memory ring's wrap-around, however they fall, keep the order."""
    with Spool(MIN_MEMORY) as spool:
        put: list[bytes] = []
        got: list[bytes] = []
        for n, (size, gets) in enumerate(steps):
            data = payload(n, size)
            assert spool.put(PERF, n & 0xFFFF, n, [data[: size // 3], data[size // 3 :]])
            put.append(data)
            for _ in range(gets):
                frame = spool.get()
                if frame is None:
                    break
                got.append(frame.payload)
            assert spool.stats().memory_peak <= spool.capacity
        got.extend(f.payload for f in read_all(spool))
        assert got == put


def test_the_file_is_written_from_its_start_again_once_read(tmp_path: Path) -> None:
    with Spool(MIN_MEMORY, str(tmp_path)) as spool:
        for round_ in range(5):
            frames = [payload(n, 8192) for n in range(20)]
            for data in frames:
                assert spool.put(PERF, round_, 0, [data])
            assert [f.payload for f in read_all(spool)] == frames
        stats = spool.stats()
        assert stats.spilled >= 5 * 10 * 8192 and stats.file_peak < 20 * 8192


def test_a_file_that_cannot_be_written_refuses_the_frame_and_says_why(tmp_path: Path) -> None:
    """Memory full and the file on a full disk (/dev/full): put says no, nothing half-stored;
    once the reader frees memory, frames fit again."""
    with Spool(MIN_MEMORY, str(tmp_path)) as spool:
        real = spool.fd
        spool.fd = os.open("/dev/full", os.O_WRONLY)
        try:
            stored = [payload(n, 8192) for n in range(12) if spool.put(PERF, 0, 0, [payload(n, 8192)])]
            assert 0 < len(stored) < 12 and spool.stats().errno == 28
            refused = payload(99, 8192)
            assert not spool.put(PERF, 0, 0, [refused])
            assert [f.payload for f in read_all(spool)] == stored
            assert spool.put(PERF, 0, 0, [refused]) and read_all(spool)[0].payload == refused
        finally:
            os.close(spool.fd)
            spool.fd = real


def test_a_writer_too_many_segments_ahead_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spool_mod, "_SLOTS", 2)
    with Spool(MIN_MEMORY, str(tmp_path)) as spool:
        big = payload(1, 2 * MIN_MEMORY)  # each one a segment of its own, between small frames
        outcomes = [spool.put(PERF, 0, 0, [data]) for data in (big, b"a", big, b"b", big)]
        assert outcomes == [True, True, True, True, False]
        assert [f.payload for f in read_all(spool)] == [big, b"a", big, b"b"]
        assert spool.put(PERF, 0, 0, [big])


def test_a_writer_process_and_a_slow_reader(tmp_path: Path) -> None:
    """The drain's case: the writer forked after the spool was made puts 3,000 frames of 1-20 KiB
    without waiting; the reader starts late and takes them slowly, and gets each one, in order."""
    sizes = [1024 + (n * 7919) % 20_000 for n in range(3000)]
    with Spool(MIN_MEMORY * 4, str(tmp_path)) as spool:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                for n, size in enumerate(sizes):
                    if not spool.put(PERF, n & 0xFFFF, n, [payload(n, size)]):
                        code = 1
                        break
                    spool.wake()
                spool.put(END, 0, 0)
                spool.wake()
            finally:
                os._exit(code)
        got = []
        time.sleep(0.2)  # the writer fills the memory meanwhile
        while True:
            frame = spool.get()
            if frame is None:
                select.select([spool.wake_fd], [], [], 1.0)
                spool.clear_wake()
                continue
            if frame.kind == END:
                break
            got.append(frame)
            if len(got) % 100 == 0:
                time.sleep(0.002)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert [f.stamp for f in got] == list(range(3000))
        assert all(f.payload == payload(n, size) for n, (f, size) in enumerate(zip(got, sizes, strict=True)))
        assert spool.stats().spilled > 0


def test_a_killed_recordings_file_is_removed_by_the_next(tmp_path: Path) -> None:
    """SIGKILL leaves no chance to remove the file: the next spool in the same directory does."""
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)  # a PID that no longer runs
    dead = tmp_path / f"evspec-spool-{child}-0badf00d"
    living = tmp_path / f"evspec-spool-{os.getppid()}-0badf00d"
    other = tmp_path / f"evspec-spool-{child}-notours-x"
    for path in (dead, living, other):
        path.write_bytes(b"x")
    spool = Spool(MIN_MEMORY, str(tmp_path))
    try:
        assert not dead.exists() and living.exists() and other.exists()
    finally:
        spool.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([living.name, other.name])
