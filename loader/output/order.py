"""The records of many rings put in time order, as perf orders its rings' records: by rounds.

The drain reads every ring once per round. A record the kernel writes after a ring was read in
round N has a later time than every record read in round N, so once round N+1 has been read too,
every record up to the highest time seen in round N is in hand: those are merged and handed out,
the rest wait for a later round (perf's ordered events, flushed at each FINISHED_ROUND the same
way). Each source's items are in time order already (a ring's records are); a run of samples is
cut where another source's records come between, so runs stay runs.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from typing import NamedTuple

from evspec.loader.output.samples import Item as PerfItem
from evspec.loader.output.script import RingRecordLine, SampleRun


class RingRecords(NamedTuple):
    """The records a round took from a BPF ring buffer map, all read at ``time`` (the kernel gives
    them none)."""

    time: int
    lines: list[RingRecordLine]


Item = PerfItem | RingRecords


def first_time(item: Item) -> int:
    return item.times[0] if type(item) is SampleRun else item.time  # type: ignore[union-attr]


def last_time(item: Item) -> int:
    return item.times[-1] if type(item) is SampleRun else item.time  # type: ignore[union-attr]


class TimeOrder:
    """Items from numbered sources (rings), handed out in time order a round at a time."""

    def __init__(self) -> None:
        self._pending: dict[int, list[Item]] = {}
        self._seen = -1  # the highest time of the rounds before the current one
        self._current = -1  # the highest time of the current round

    def add(self, source: int, items: Iterable[Item]) -> None:
        """``source``'s items of this round, in time order."""
        items = [item for item in items if type(item) is not SampleRun or len(item)]  # type: ignore[arg-type]
        if not items:
            return
        self._pending.setdefault(source, []).extend(items)
        self._current = max(self._current, max(map(last_time, items)))

    def end_round(self) -> list[Item]:
        """Every item up to the highest time of the rounds before this one, in time order."""
        limit, self._seen = self._seen, max(self._seen, self._current)
        ready: list[list[Item]] = []
        for source in sorted(self._pending):
            items = self._pending[source]
            due, rest = _split(items, limit)
            if due:
                ready.append(due)
            if rest:
                self._pending[source] = rest
            else:
                del self._pending[source]
        return merge(ready)

    def flush(self) -> list[Item]:
        """Everything still pending, in time order (the recording has ended)."""
        ready = [self._pending[source] for source in sorted(self._pending)]
        self._pending.clear()
        return merge(ready)

    @property
    def pending(self) -> list[Item]:
        """What waits for a later round, source by source (not in time order)."""
        return [item for source in sorted(self._pending) for item in self._pending[source]]


def _split(items: list[Item], limit: int) -> tuple[list[Item], list[Item]]:
    """The items (and the samples of a run) up to ``limit``, and the others."""
    for index, item in enumerate(items):
        if first_time(item) > limit:
            return items[:index], items[index:]
        if last_time(item) > limit:  # a run that ``limit`` cuts
            run: SampleRun = item  # type: ignore[assignment]
            cut = bisect_right(run.times, limit)
            return [*items[:index], run.slice(0, cut)], [run.slice(cut, len(run)), *items[index + 1:]]
    return items, []


def merge(streams: list[list[Item]]) -> list[Item]:
    """The items of ``streams`` (each in time order) in time order; on equal times the earlier
    stream first. A run is cut where another stream's item comes between its samples."""
    streams = [s for s in streams if s]
    if len(streams) <= 1:
        return streams[0] if streams else []
    if all(last_time(a[-1]) <= first_time(b[0]) for a, b in zip(streams, streams[1:], strict=False)):
        return [item for stream in streams for item in stream]  # one after the other already
    out: list[Item] = []
    index = [0] * len(streams)
    offset = [0] * len(streams)  # where the current run of each stream resumes
    heap = [(first_time(stream[0]), rank) for rank, stream in enumerate(streams)]
    heapq.heapify(heap)
    while heap:
        _time, rank = heapq.heappop(heap)
        stream = streams[rank]
        item = stream[index[rank]]
        if type(item) is SampleRun:
            start = offset[rank]
            if heap:  # up to the next stream's head: equal times stay first when this stream is earlier
                next_time, next_rank = heap[0]
                cut = bisect_right if rank < next_rank else bisect_left
                stop = max(cut(item.times, next_time, start), start + 1)
            else:
                stop = len(item)
            out.append(item if start == 0 and stop == len(item) else item.slice(start, stop))
            if stop < len(item):
                offset[rank] = stop
                heapq.heappush(heap, (item.times[stop], rank))
                continue
        else:
            out.append(item)
        index[rank] += 1
        offset[rank] = 0
        if index[rank] < len(stream):
            heapq.heappush(heap, (first_time(stream[index[rank]]), rank))
    return out
