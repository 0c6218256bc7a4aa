"""Capture mode (``evspec record -o FILE``): ring-buffer bytes copied into a perf.data file.

A round of reading writes every ring's new records straight from the mapped ring buffers (no
copy in between: the slices of the mapping, the wrap-around as a second slice) with one writev()
for all rings and the round's PERF_RECORD_FINISHED_ROUND, then hands the space back to the kernel.
The reader does nothing else: samples and PERF_RECORD_LOST counts are read back from the file
when they are asked for, after the recording (perf record counts its samples from its file at the
end as well). Under CPU contention every microsecond the reader spends on a CPU it shares with
the workload is paid back in waits for the next tick, while the rings fill. The records of BPF
ring buffer maps cannot be written as they lie (a perf.data file holds perf records): the round
takes them and writes each as a sample of its map's event (``ringbuf_capture``) in the same
writev(), after the perf rings' bytes. Samples are not
decoded: ``count_span`` finds the record boundaries by runs — records of one header follow each
other, and a run is checked with one strided copy of its headers at C speed — so a million equal
samples cost a few slices, not a million steps. PERF_RECORD_LOST records are rare and read one by
one for their counts. At the end, the events' own loss counts
(PERF_FORMAT_LOST) go into the file as PERF_RECORD_LOST_SAMPLES, as perf record writes them.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from evspec.loader.abi.perf import RecordType
from evspec.loader.errors import ObjectError
from evspec.loader.output.bpf_ringbuf import BpfRingReader
from evspec.loader.output.perf_ring import LostCount, PerfRing, RingSpan, run_length
from evspec.loader.output.saved.perfdata import (
    Feature,
    FileAttr,
    HostInfo,
    PerfDataWriter,
    SampleIdTrailer,
    WriteError,
    build_tracing_data,
    encode_bpf_btf,
    lost_samples_record,
)
from evspec.loader.output.saved.ringbuf_capture import RingSamples

from evspec.codes import kernel as codes
from evspec.span import Slotted

_HEADER = struct.Struct("<IHH")
_LOST = struct.Struct("<QQ")
_COMM_IDS = struct.Struct("<II")
_ID_SAMPLE = struct.Struct("<IIQIIQ")  # sample_id_all trailer: TID, TIME, CPU, IDENTIFIER
_FIRST_WINDOW = 16
_MAX_WINDOW = 1 << 16
_READ_PIECE = 1 << 23  # bytes of the file counted at a time
_BLOCK = 4096  # what a salvage first cuts beyond the features' size (a file system block)
TRACEFS_EVENTS = (Path("/sys/kernel/tracing/events"), Path("/sys/kernel/debug/tracing/events"))


class RecordCounts(Slotted):
    samples: int
    lost: int  # samples the kernel dropped (the sum of PERF_RECORD_LOST counts)
    lost_records: int  # how many PERF_RECORD_LOST records said so


def _count(buffer: bytes | memoryview, pos: int, end: int) -> tuple[int, int, int, int]:
    """Samples, lost samples and LOST records among the whole records of ``buffer[pos:end]``, and
    where the first record that does not end there starts (``end`` when every one does)."""
    samples = lost = lost_records = 0
    window = _MAX_WINDOW  # a span is usually one run: try it whole, then small after a short run
    while pos + 8 <= end:
        rtype, _misc, size = _HEADER.unpack_from(buffer, pos)
        if size < 8:
            raise ObjectError(codes.RING_BUFFER, f"corrupt perf ring buffer record: header at {pos} says {size} bytes")
        if pos + size > end:
            break
        if rtype == RecordType.LOST:
            if size < 8 + _LOST.size:
                raise ObjectError(codes.RING_BUFFER, f"corrupt perf ring buffer record: LOST of {size} bytes")
            lost += _LOST.unpack_from(buffer, pos + 8)[1]
            lost_records += 1
            pos += size
            continue
        if rtype != RecordType.SAMPLE:
            pos += size  # a COMM, a FINISHED_ROUND between two rounds' runs: one at a time
            continue
        fits = min(window, (end - pos) // size)
        run = run_length(buffer, pos, size, fits)
        # runs tend to be alike (a file's rounds, alternating sizes): the next try fits this one
        window = min(window * 4, _MAX_WINDOW) if run == fits else max(_FIRST_WINDOW, 2 * run)
        samples += run
        pos += run * size
    return samples, lost, lost_records, pos


def count_records(chunk: bytes | memoryview) -> RecordCounts:
    """Samples and losses in ``chunk``, a run of whole records as a ring buffer holds them."""
    samples, lost, lost_records, stop = _count(chunk, 0, len(chunk))
    if stop < len(chunk):
        _cut_off(chunk, stop)
    return RecordCounts(samples, lost, lost_records)


def count_span(parts: Iterable[bytes | memoryview]) -> RecordCounts:
    """``count_records`` over consecutive pieces of one run of whole records (a ring buffer's
    span: a record may straddle the end of the data area)."""
    samples = lost = lost_records = 0
    carry = b""  # the beginning of a record that continues in the next piece
    for part in parts:
        pos = 0
        if carry:
            header = carry + bytes(part[: max(0, _HEADER.size - len(carry))])
            size = _HEADER.unpack_from(header, 0)[2] if len(header) >= _HEADER.size else 0
            rest = size - len(carry)
            if size < _HEADER.size or rest > len(part):
                carry += bytes(part)
                continue
            counts = count_records(carry + bytes(part[:rest]))
            samples, lost, lost_records = samples + counts.samples, lost + counts.lost, lost_records + counts.lost_records
            pos, carry = rest, b""
        more_samples, more_lost, more_records, stop = _count(part, pos, len(part))
        samples, lost, lost_records = samples + more_samples, lost + more_lost, lost_records + more_records
        carry = bytes(part[stop:])
    if carry:
        _cut_off(carry, 0)
    return RecordCounts(samples, lost, lost_records)


def _pieces(fd: int, start: int, size: int, piece: int = _READ_PIECE) -> Iterator[bytes]:
    """``size`` bytes of the file ``fd`` from ``start``, read a piece at a time."""
    end = start + size
    while start < end:
        data = os.pread(fd, min(piece, end - start), start)
        if not data:
            raise ObjectError(codes.PERF_DATA_WRITE, f"the file ends at byte {start}, {end} were written")
        start += len(data)
        yield data


def _cut_off(buffer: bytes | memoryview, pos: int) -> None:
    end = len(buffer)
    if pos + 8 > end:
        raise ObjectError(codes.RING_BUFFER, f"a record header at {pos} is cut off at {end}")
    size = _HEADER.unpack_from(buffer, pos)[2]
    raise ObjectError(
        codes.RING_BUFFER,
        f"corrupt perf ring buffer record: header at {pos} says {size} bytes, {end - pos} are available",
    )


def comm_record(pid: int, tid: int, comm: str, identifier: int) -> bytes:
    """A synthesized PERF_RECORD_COMM for a task that existed before the recording (-p, -a), with
    the sample_id_all trailer of the tracking event (time 0: before every sample)."""
    name = comm.encode()[:15] + b"\0"
    name = name.ljust(-(-len(name) // 8) * 8, b"\0")
    body = _COMM_IDS.pack(pid, tid) + name + _ID_SAMPLE.pack(pid, tid, 0, 0, 0, identifier)
    return _HEADER.pack(RecordType.COMM, 0, 8 + len(body)) + body


def existing_tasks(pids: Iterable[int] | None) -> list[tuple[int, int, str]]:
    """(pid, tid, comm) of the threads of ``pids`` (None: of every process), read from /proc."""
    out = []
    chosen = pids if pids is not None else (int(p) for p in os.listdir("/proc") if p.isdigit())
    for pid in chosen:
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue  # the task ended meanwhile
        for tid in sorted(tids):
            try:
                with open(f"/proc/{pid}/task/{tid}/comm", encoding="utf-8", errors="replace") as f:
                    out.append((pid, tid, f.read().rstrip("\n")))
            except OSError:
                continue
    return out


def tracing_feature(tracepoints: Sequence[tuple[str, str]], page_size: int) -> bytes | None:
    """HEADER_TRACING_DATA with the formats of ``tracepoints`` ((system, event) in tracefs: perf
    script needs it to read a file with tracepoint events at all); None when there are none."""
    wanted = list(tracepoints)
    if not wanted:
        return None
    for events_dir in TRACEFS_EVENTS:
        if (events_dir / "header_page").exists():
            try:
                return build_tracing_data(events_dir, wanted, page_size)
            except OSError as exc:
                raise ObjectError(
                    codes.PERF_DATA_WRITE, f"cannot read the tracepoint formats from {events_dir}: {exc.strerror}"
                ) from None
    raise ObjectError(codes.PERF_DATA_WRITE, "tracefs is not mounted: the tracepoint formats cannot be saved")


class Capture:
    """A perf.data file being filled from a session's rings; ``finish()`` completes it.

    ``bpf_rings``: the readers of BPF ring buffer maps, each with the id of its event among
    ``attrs`` (``ringbuf_capture``); their records are written as samples stamped by ``clock``
    (perf's clock: ``PerfClock.now``). ``btfs``: the BTF objects, by id, that the attrs of typed
    events name (ring buffer maps' and bpf-output events': ``typed_capture``), for HEADER_BPF_BTF.
    ``tracepoints``: (system, event) of the tracefs formats of the tracepoint events, for
    HEADER_TRACING_DATA (a probe shown as perf named it has its format in evspec's own group)."""

    def __init__(
        self,
        path: str | Path,
        attrs: Sequence[FileAttr],
        rings: Sequence[PerfRing],
        host: HostInfo,
        *,
        bpf_rings: Sequence[tuple[BpfRingReader, int]] = (),
        clock: Callable[[], int] | None = None,
        btfs: Mapping[int, bytes] | None = None,
        tracepoints: Sequence[tuple[str, str]] = (),
        page_size: int = os.sysconf("SC_PAGE_SIZE"),
    ) -> None:
        if bpf_rings and clock is None:
            raise ValueError("ring buffer records need a clock for their samples' time")
        features: dict[int, bytes] = host.features()
        if btfs:
            features[Feature.BPF_BTF] = encode_bpf_btf(btfs)
        tracing = tracing_feature(tracepoints, page_size)
        if tracing is not None:
            features[Feature.TRACING_DATA] = tracing
        self.writer = PerfDataWriter(path, attrs, features=features)
        self.rings = tuple(rings)
        self.bpf_rings = tuple((reader, RingSamples(reader.name, ident)) for reader, ident in bpf_rings)
        self._clock = clock
        self._counts: RecordCounts | None = None
        self.failure: WriteError | None = None  # the write that failed; nothing is written after it
        self.unwritten = 0  # samples read from the rings and not in the file
        self.removed = False  # the file could not be completed even empty, and is gone

    @property
    def path(self) -> Path:
        return self.writer.path

    @property
    def bytes_written(self) -> int:
        return self.writer.data_size

    @property
    def counts(self) -> RecordCounts:
        """Samples and PERF_RECORD_LOST counts of the records written so far, counted from the
        file, not while reading: the reader spends its time on the rings alone (perf record, too,
        counts its samples from the file at the end)."""
        if self._counts is None or not self.writer.finished:
            self._counts = self._count_written()
        return self._counts

    @property
    def samples(self) -> int:
        return self.counts.samples

    @property
    def lost(self) -> int:
        return self.counts.lost

    @property
    def lost_records(self) -> int:
        return self.counts.lost_records

    def _count_written(self) -> RecordCounts:
        start, size = self.writer.data_offset, self.writer.data_size
        try:
            with open(self.writer.path, "rb") as f:
                return count_span(_pieces(f.fileno(), start, size))
        except OSError as exc:
            raise ObjectError(
                codes.PERF_DATA_WRITE, f"cannot read back {self.writer.path} to count its records: {exc.strerror}"
            ) from None

    def add_tasks(self, tasks: Iterable[tuple[int, int, str]], identifier: int) -> None:
        """COMM records for tasks that exist already (perf synthesizes them the same way)."""
        records = b"".join(comm_record(pid, tid, comm, identifier) for pid, tid, comm in tasks)
        if records and self.failure is None:
            try:
                self.writer.write_round((records,))
            except WriteError as exc:
                self.failure = exc

    def drain(self) -> bool:
        """One round: every perf ring's new records appended to the file straight from the
        mapping, then every BPF ring buffer's as samples, and their space released. True when
        there were any: records are still arriving, and the reader should come back at once
        rather than sleep until a ring's wakeup mark (perf record reads the same way). A reader
        that stays runnable while data flows keeps its CPU share; one that sleeps between wakeups
        must win a wakeup preemption against whatever else runs on its CPU, and loses it to a
        CPU-bound task for up to a tick (4 ms at HZ=250) — longer than a loaded ring takes to
        fill."""
        taken: list[tuple[PerfRing, RingSpan]] = []
        for ring in self.rings:
            span = ring.peek()
            if span is not None:
                taken.append((ring, span))
        chunks: list[bytes | memoryview] = [part for _, span in taken for part in span.parts]
        records = [(samples, got) for reader, samples in self.bpf_rings if (got := reader.take_runs())]
        if records:
            now = self._clock()  # type: ignore[misc]  # after the takes: later than the perf rings' samples
            for samples, got in records:
                chunks.extend(samples.encode(got, now))
        if chunks:
            if self.failure is None:
                try:
                    self.writer.write_round(chunks)
                except WriteError as exc:
                    self.failure = exc
            if self.failure is not None:  # read on, so that what is not written is counted
                self.unwritten += count_span(chunks).samples
            for ring, span in taken:
                ring.release(span)
        return bool(chunks)

    def add_lost_counts(self, counts: Iterable[LostCount]) -> None:
        """PERF_RECORD_LOST_SAMPLES for every event instance that lost samples, after the last
        round (as perf record writes them at the end), with the instance's sample_id trailer;
        nothing once a write has failed."""
        if self.failure is not None:
            return
        trailers = {i: SampleIdTrailer(a.sample_type) for a in self.writer.attrs for i in a.ids}
        records = b"".join(
            lost_samples_record(
                c.lost, trailers[c.id].pack(id=c.id, identifier=c.id, cpu=c.cpu & 0xFFFFFFFF)
            )
            for c in counts
            if c.lost and c.id in trailers
        )
        if records:
            try:
                self.writer.write(records)
            except WriteError as exc:
                self.failure = exc

    def finish(self) -> None:
        """Write the features and the final header, and close the file (safe to call twice).
        After a failed write the file is completed with what it holds whole (``salvage``)."""
        try:
            if self.failure is None:
                try:
                    self.writer.finish()
                except WriteError as exc:  # the data is whole; what follows it is not records
                    self.failure = exc
                    self.writer.cut_data(self.writer.data_size)
            if self.failure is not None and not self.writer.finished and not self.removed:
                self._salvage()
        except WriteError:  # the file cannot even be cut back: it is no perf.data file
            self._remove()
        finally:
            self.writer.close()

    def _remove(self) -> None:
        self.writer.close()
        try:
            os.unlink(self.writer.path)
        except FileNotFoundError:
            pass
        self.removed = True

    def _salvage(self) -> None:
        """Make the file a complete perf.data file of its first records: drop a round written in
        part, then write the features and header, cutting whole records off the end until they
        fit; when not even an empty data section leaves room for them, remove the file. The
        samples cut off are added to ``unwritten``."""
        written = self._count_written().samples
        size = self._boundary_before(os.fstat(self.writer.fd).st_size - self.writer.data_offset)
        room, slack = self.writer.feature_bytes(), _BLOCK
        while True:
            self.writer.cut_data(size)
            try:
                self.writer.finish()
                break
            except WriteError:
                if size == 0:
                    self._remove()
                    self.unwritten += written
                    return
                size = self._boundary_before(max(0, size - room - slack))
                slack *= 2  # the file system's blocks, its metadata: cut more each time
        self._counts = None
        self.unwritten += written - self.counts.samples

    def _boundary_before(self, limit: int) -> int:
        """The end of the last whole record of the data in the file (the part of a failed round
        written before it failed included) that ends at or before ``limit`` (runs of equal records
        stepped over at once, as ``_count`` does)."""
        start = self.writer.data_offset
        with open(self.writer.path, "rb") as f:
            end = start + min(limit, os.fstat(f.fileno()).st_size - start)
            if end <= start:
                return 0
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        with data:
            pos = start
            while pos + 8 <= end:
                size = _HEADER.unpack_from(data, pos)[2]
                if size < 8 or pos + size > end:
                    break
                pos += size * run_length(data, pos, size, (end - pos) // size)
        return pos - start
