"""The renderer of a live recording, following the drain through the spool.

Frames are decoded as they come (``RingDecoder`` for a perf ring's bytes, ``cut_records`` for a
BPF ring buffer's), put in time order a round at a time (``TimeOrder``), named (``TaskNames``),
rendered and written. It may fall behind the workload as far as the spool lets it; it catches up
after the recording has stopped. When told to stop early (a second ^C), it renders nothing more
and counts what it leaves: the records decoded and not yet written and those still in the spool.
"""

from __future__ import annotations

import select
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat

from evspec.loader.kernel import KernelError
from evspec.loader.output.bpf_ringbuf import cut_records
from evspec.loader.output.live.order import Item, RingRecords, TimeOrder
from evspec.loader.output.live.samples import Lost, RingDecoder
from evspec.loader.output.live.spool import BPF, END, ERROR, PERF, ROUND, Frame, Spool
from evspec.loader.output.live.tasks import TaskNames
from evspec.loader.output.script import LostLine, RingRecordLine, SampleRun
from evspec.loader.output.typed import RecordDecoder

from evspec.codes import kernel as codes
from evspec.span import Slotted

BATCH = 4096  # records rendered and written at a time
_WAIT_MS = 200

Line = SampleRun | LostLine | RingRecordLine


class BpfSource(Slotted):
    """A BPF ring buffer map's frames: its name, and its ``map:NAME.type=`` decoder if typed."""

    name: str
    typed: RecordDecoder | None = None


class FollowCounts(Slotted, frozen=False):
    """What the follower printed: records (samples and ring buffer records), the sum of the
    PERF_RECORD_LOST counts read, and when it was stopped early, the records it left."""

    __slots__ = ("samples", "lost_reported", "unprinted", "stopped")
    samples: int
    lost_reported: int
    unprinted: int
    stopped: bool

    def __init__(self) -> None:
        self.samples = self.lost_reported = self.unprinted = 0
        self.stopped = False


class Follower:
    """Renders frames: perf ring ``i``'s through ``decoders[i]``, BPF ring buffer ``j``'s as
    ``bpf_sources[j]`` says; ``render`` makes the bytes of a batch of lines a piece at a time (a
    piece may be reused by the next) and ``write`` writes each. ``run`` follows a spool; ``take``
    and ``finish`` are the same steps for frames from elsewhere."""

    def __init__(self, decoders: Sequence[RingDecoder], bpf_sources: Sequence[BpfSource],
                 render: Callable[[list[Line]], Iterable[bytes | bytearray | memoryview]],
                 write: Callable[[bytes | bytearray | memoryview], None],
                 tasks: TaskNames | None = None) -> None:
        self.decoders = tuple(decoders)
        self.bpf_sources = tuple(bpf_sources)
        self.render = render
        self.write = write
        self.tasks = tasks or TaskNames()
        self.order = TimeOrder()
        self.counts = FollowCounts()
        self.discarded = [0] * len(bpf_sources)  # records each ring buffer's program discarded

    def run(self, spool: Spool, drain_gone: Callable[[], bool], wake_fds: Sequence[int] = (),
            stop_early: Callable[[], bool] = lambda: False) -> FollowCounts:
        """Render ``spool``'s frames until the drain's END (an ERROR frame is raised as a
        ``KernelError``). ``drain_gone`` says whether the drain process has exited (then a
        missing END is an error); ``wake_fds`` also wake a wait for frames; when ``stop_early()``
        becomes true, rendering stops and the rest is counted."""
        poller = select.poll()
        for fd in (spool.wake_fd, *wake_fds):
            poller.register(fd, select.POLLIN)
        while True:
            if stop_early():
                self._stop(spool, drain_gone)
                return self.counts
            frame = spool.get()
            if frame is None:
                if drain_gone() and (frame := spool.get()) is None:
                    raise KernelError(codes.RING_BUFFER, "the drain of the rings ended without finishing its work")
            if frame is None:
                poller.poll(_WAIT_MS)
                spool.clear_wake()
                continue
            if frame.kind == END:
                self.finish()
                return self.counts
            self.take(frame)

    def finish(self) -> None:
        """Render everything still waiting for a later round."""
        self._emit(self.order.flush())

    def take(self, frame: Frame) -> None:
        """Decode a frame; a ROUND frame renders what the rounds so far put in order."""
        if frame.kind == PERF:
            self.order.add(frame.source, self.decoders[frame.source].decode(frame.payload))
        elif frame.kind == BPF:
            source = self.bpf_sources[frame.source]
            records, discarded = cut_records(source.name, frame.payload)
            self.discarded[frame.source] += discarded
            typed = source.typed
            lines = (list(map(RingRecordLine, repeat(source.name), records)) if typed is None else
                     [RingRecordLine(source.name, raw, typed.decode(raw)) for raw in records])
            self.order.add(len(self.decoders) + frame.source, [RingRecords(frame.stamp, lines)])
        elif frame.kind == ROUND:
            self._emit(self.order.end_round())
        elif frame.kind == ERROR:
            raise KernelError(codes.RING_BUFFER, frame.payload.decode(errors="replace"))

    def _emit(self, items: Iterable[Item]) -> None:
        """Name, render and write ``items``, ``BATCH`` records at a time."""
        batch: list[Line] = []
        size = 0
        tasks = self.tasks
        for item in items:
            kind = type(item)
            if kind is SampleRun:
                run: SampleRun = item  # type: ignore[assignment]
                run.comms = tasks.names(run.pids, run.tids)
                batch.append(run)
                size += len(run)
                self.counts.samples += len(run)
            elif kind is RingRecords:
                batch.extend(item.lines)  # type: ignore[union-attr]
                size += len(item.lines)  # type: ignore[union-attr]
                self.counts.samples += len(item.lines)  # type: ignore[union-attr]
            elif kind is Lost:
                lost: Lost = item  # type: ignore[assignment]
                batch.append(LostLine(lost.event, lost.cpu, lost.lost))
                self.counts.lost_reported += lost.lost
            else:
                tasks.apply(item)  # type: ignore[arg-type]
            if size >= BATCH:
                self._write(batch)
                batch, size = [], 0
        if batch:
            self._write(batch)

    def _write(self, batch: list[Line]) -> None:
        for piece in self.render(batch):
            self.write(piece)

    def _stop(self, spool: Spool, drain_gone: Callable[[], bool]) -> None:
        """Render nothing more; count the records decoded and waiting, then those still in the
        spool as the drain leaves them (it ends the recording and puts END)."""
        counts = self.counts
        counts.stopped = True
        counts.unprinted += _records(self.order.pending)
        self.order = TimeOrder()
        while True:
            frame = spool.get()
            if frame is None:
                if drain_gone() and (frame := spool.get()) is None:
                    raise KernelError(codes.RING_BUFFER, "the drain of the rings ended without finishing its work")
            if frame is None:
                select.select([spool.wake_fd], [], [], _WAIT_MS / 1000)
                spool.clear_wake()
                continue
            if frame.kind == END:
                return
            if frame.kind == ERROR:
                raise KernelError(codes.RING_BUFFER, frame.payload.decode(errors="replace"))
            if frame.kind == PERF:
                from evspec.loader.output.saved.capture import count_records

                counts.unprinted += count_records(frame.payload).samples
            elif frame.kind == BPF:
                records, discarded = cut_records(self.bpf_sources[frame.source].name, frame.payload)
                counts.unprinted += len(records)
                self.discarded[frame.source] += discarded


def _records(items: Iterable[Item]) -> int:
    count = 0
    for item in items:
        if type(item) is SampleRun:
            count += len(item)  # type: ignore[arg-type]
        elif type(item) is RingRecords:
            count += len(item.lines)  # type: ignore[union-attr]
    return count
