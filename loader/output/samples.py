"""The bytes of one perf ring, as the drain took them, decoded a run of samples at a time.

A ring's records are mostly runs of samples of one size (one program, one payload size). A run
becomes one ``SampleRun`` whose fields are columns, each read from the run's bytes by one strided
memoryview copy, and whose payloads are cut from them by one ``struct`` of many records: no
Python step per record. Anything else (a lone sample, one whose raw size word does not fill its
record) goes through ``SampleLayout.unpack``, which checks every bound. PERF_RECORD_LOST records
become ``Lost`` items and COMM/FORK records (the tracking event's) ``TaskEvent`` items, each with
the time of its sample_id trailer, so that the renderer can put everything in time order.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import NamedTuple

from evspec.loader.abi.perf import RecordType
from evspec.loader.kernel import KernelError
from evspec.loader.output.perf_ring import SampleLayout, cut_column, run_length
from evspec.loader.output.perfdata import SampleIdTrailer
from evspec.loader.output.script import SampleRun

from evspec.codes import kernel as codes

_HEADER = struct.Struct("<IHH")
_LOST = struct.Struct("<QQ")
_COMM = struct.Struct("<II")
_FORK = struct.Struct("<IIIIQ")  # pid, ppid, tid, ptid, time
_FIRST_RUN, _MAX_RUN = 16, 1 << 14  # samples looked ahead for a run of equal headers

FieldsOf = Callable[[bytes | None], object]


class Lost(NamedTuple):
    """A PERF_RECORD_LOST: ``lost`` samples of ``event`` had no room in the ring of ``cpu``."""

    time: int
    event: str
    cpu: int
    lost: int


class TaskEvent(NamedTuple):
    """A task's name as of ``time``: a COMM record (``comm``), or a FORK record (``parent`` is
    the forking thread, whose name the child has until it sets its own)."""

    time: int
    tid: int
    comm: str | None
    parent: int | None


Item = SampleRun | Lost | TaskEvent


class RingDecoder:
    """Decodes the bytes of one perf ring: the samples of event ``event`` (``sample_type``) taken
    from the ring of ``cpu``; ``fields_of`` decodes a sample's payload (a tracepoint's format,
    a typed map's type) or is None."""

    def __init__(self, event: str, cpu: int, sample_type: int, fields_of: FieldsOf | None = None) -> None:
        self.event = event
        self.cpu = cpu
        self.layout = SampleLayout(sample_type)
        self.fields_of = fields_of
        self.trailer = SampleIdTrailer(sample_type)
        offsets = self.layout.offsets()
        self._bulk = self.layout.bulk_ready
        self._columns = [(offsets[name], name) for name in ("pid", "tid", "time", "cpu", "period")] if self._bulk else []
        self._raw_word = 8 + self.layout.fixed.size  # where the raw size word is in a record
        self.samples = 0
        self.lost = 0  # the sum of the PERF_RECORD_LOST counts

    def decode(self, chunk: bytes) -> list[Item]:
        """The items of ``chunk``, a run of whole records as the ring held them."""
        out: list[Item] = []
        header = _HEADER.unpack_from
        pos, end = 0, len(chunk)
        window = _FIRST_RUN
        view = memoryview(chunk)
        while pos < end:
            if pos + 8 > end:
                raise KernelError(codes.RING_BUFFER, f"corrupt perf ring buffer record: {end - pos} bytes left at {pos}")
            rtype, _misc, size = header(chunk, pos)
            if size < 8 or pos + size > end:
                raise KernelError(codes.RING_BUFFER, f"corrupt perf ring buffer record: header at position {pos} "
                                                     f"says {size} bytes, {end - pos} are available")
            if rtype == RecordType.SAMPLE:
                run, window = self._run_length(chunk, pos, size, window) if self._bulk else (1, window)
                out.append(self._run(chunk, view, pos, size, run))
                pos += run * size
                continue
            if rtype == RecordType.LOST:
                out.append(self._lost(chunk, pos, size))
            elif rtype == RecordType.COMM:
                pid_tid = _COMM.unpack_from(chunk, pos + 8)
                name_at = pos + 8 + _COMM.size
                name_end = chunk.find(b"\0", name_at, pos + size)
                comm = chunk[name_at : name_end if name_end >= 0 else pos + size].decode(errors="replace")
                out.append(TaskEvent(self._time(chunk, pos, size, 8 + _COMM.size), pid_tid[1], comm, None))
            elif rtype == RecordType.FORK and size >= 8 + _FORK.size:
                _pid, _ppid, tid, ptid, time = _FORK.unpack_from(chunk, pos + 8)
                out.append(TaskEvent(time, tid, None, ptid))
            pos += size
        return out

    @staticmethod
    def _run_length(chunk: bytes, pos: int, size: int, window: int) -> tuple[int, int]:
        """How many records from ``pos`` have its header, looked for ``window`` records at a time,
        a window growing while runs fill it; and the window to start the next run with."""
        head = chunk[pos : pos + 8]
        count, end = 0, len(chunk)
        while True:
            at = pos + count * size
            fits = min(window, (end - at) // size)
            if fits <= 0 or (count and chunk[at : at + 8] != head):
                return count, window
            found = run_length(chunk, at, size, fits)
            count += found
            if found < fits:
                return count, _FIRST_RUN
            window = min(window * 4, _MAX_RUN)

    def _time(self, chunk: bytes, pos: int, size: int, body: int) -> int:
        return self.trailer.read(chunk, pos + size, pos + body).get("time", 0)

    def _lost(self, chunk: bytes, pos: int, size: int) -> Lost:
        if size < 8 + _LOST.size:
            raise KernelError(codes.RING_BUFFER, f"corrupt perf ring buffer record: PERF_RECORD_LOST of {size} bytes")
        _id, lost = _LOST.unpack_from(chunk, pos + 8)
        self.lost += lost
        return Lost(self._time(chunk, pos, size, 8 + _LOST.size), self.event, self.cpu, lost)

    def _run(self, chunk: bytes, view: memoryview, pos: int, size: int, count: int) -> SampleRun:
        """``count`` samples of ``size`` bytes from ``pos``: columns when their raw size words all
        say that the payload fills the record, else one checked sample at a time."""
        span = view[pos : pos + count * size]
        length = size - self._raw_word - 4
        words = span.cast("I")
        expected = struct.pack("=I", length)
        if count > 1 and length >= 0 and words[self._raw_word // 4 :: size // 4].tobytes() == expected * count:
            longs = span.cast("Q")
            columns = {name: (longs[at // 8 :: size // 8] if name in ("time", "period") else
                              words[at // 4 :: size // 4]).tolist() for at, name in self._columns}
            raws = cut_column(span, self._raw_word + 4, length, size, count)
            run = SampleRun(self.event, columns["pid"], columns["tid"], columns["cpu"], columns["time"],
                            columns["period"], raws)
        else:
            run = SampleRun(self.event, [], [], [], [], [], [])
            for at in range(pos, pos + count * size, size):
                values, _chain, raw = self.layout.unpack(chunk, at + 8, at + size)
                f = dict(zip(self.layout.names, values, strict=False))
                run.pids.append(f.get("pid", 0))
                run.tids.append(f.get("tid", 0))
                run.cpus.append(f.get("cpu", self.cpu))
                run.times.append(f.get("time", 0))
                run.periods.append(f.get("period", 0))
                run.raws.append(raw)  # type: ignore[arg-type]
        if self.fields_of is not None:
            run.fields = list(map(self.fields_of, run.raws))
        self.samples += count
        return run
