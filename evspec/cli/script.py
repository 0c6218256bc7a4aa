"""``evspec script -i FILE``: print a perf.data file's records as live ``evspec record`` prints them.

The file may be evspec's capture or perf record's own. Records are replayed in time order (as perf
script does): COMM and FORK records name the tasks, samples become ``SampleLine``s (those of a ring
buffer map's event ``RingRecordLine``s) and PERF_RECORD_LOST records ``LostLine``s, rendered by
``evspec.loader.output.script``. The samples of an event whose attr names a BTF type (a typed
ring buffer map's, a typed bpf-output event's: ``typed_capture``) are decoded with the file's
HEADER_BPF_BTF by the decoder live ``record`` uses, and print as it prints them. The
PERF_RECORD_LOST_SAMPLES records written at the end of a recording (each event instance's exact
loss count) follow, one line each; JSON output ends with record's summary line (samples, lost).
"""

from __future__ import annotations

import argparse
import struct
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from evspec.loader.output.perfdata import FileAttr, PerfData
    from evspec.loader.output.script import LostLine, RingRecordLine, SampleLine
    from evspec.loader.output.tracefs_format import TracepointPrinter
    from evspec.loader.output.typed import RecordDecoder

EXIT_ERROR = 2
_U64 = struct.Struct("<Q")
_COMM = struct.Struct("<II")
_FORK = struct.Struct("<IIIIQ")  # pid, ppid, tid, ptid, time
_LOST = struct.Struct("<QQ")
_ANY_CPU = 0xFFFFFFFF  # (u32)-1 in a trailer: an instance that followed a task on any CPU
_RING_RECORD = -1  # the queue's kind for a sample of a ring buffer map's event


class ScriptTotals:
    """What the replayed records add up to: samples, the sum of the PERF_RECORD_LOST counts, and
    the PERF_RECORD_LOST_SAMPLES records (each event instance's exact loss count)."""

    __slots__ = ("samples", "lost_reported", "lost_samples")

    def __init__(self) -> None:
        self.samples = 0
        self.lost_reported = 0
        self.lost_samples: list[LostLine] = []

    def summary(self) -> dict[str, int]:
        """``evspec record``'s summary of the same run: lost is exact where the file says."""
        lost = sum(x.lost for x in self.lost_samples) if self.lost_samples else self.lost_reported
        out = {"samples": self.samples, "lost": lost}
        if lost != self.lost_reported:
            out["lost_reported"] = self.lost_reported
        return out


def add_script_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "script",
        help="print the records of a perf.data file (evspec record -o, or perf record)",
        description="perf script for bpf-output and tracepoint samples: -i FILE",
    )
    p.add_argument("-i", "--input", default="perf.data", metavar="FILE", help="the file (default: perf.data)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=script_main)
    return p


def _event_of(data: PerfData) -> tuple[int | None, dict[int, FileAttr]]:
    from evspec.codes import kernel as codes
    from evspec.loader.errors import ObjectError
    from evspec.loader.output.perfdata import sample_id_position

    pos = sample_id_position(data.attrs)
    if pos == -1:
        raise ObjectError(
            codes.PERF_DATA_UNSUPPORTED,
            f"{data.path}: its events sample their id at different places (or not at all), so "
            "samples cannot be told apart",
        )
    return pos, data.id_map()


def _is_tracking(attr: FileAttr) -> bool:
    from evspec.loader.abi.perf import PerfType, SwConfig

    parsed = attr.parsed()
    return parsed.type == PerfType.SOFTWARE and parsed.config == SwConfig.DUMMY


def name_width(data: PerfData) -> int:
    """The width live record right-aligns event names to: the longest non-tracking event name."""
    return max((len(a.name) for a in data.attrs if not _is_tracking(a)), default=0)


def tracepoint_formats(data: PerfData) -> dict[int, TracepointPrinter]:
    """The format of each tracepoint event of the file (by ``id()`` of its attr), parsed from
    the file's HEADER_TRACING_DATA, with its printer (kernel addresses named with this machine's
    symbols, as perf script names them); events whose format the file lacks print undecoded."""
    from evspec.loader.abi.perf import PerfType
    from evspec.loader.output.printfmt import kernel_symbols
    from evspec.loader.output.tracefs_format import TracepointPrinter, parse_format

    out: dict[int, TracepointPrinter] = {}
    resolve = kernel_symbols()
    for attr in data.attrs:
        parsed = attr.parsed()
        saved = data.tracepoints.get(parsed.config) if parsed.type == PerfType.TRACEPOINT else None
        if saved is not None:
            out[id(attr)] = TracepointPrinter(parse_format(saved.text, saved.system, saved.name), resolve,
                                              data.printk)
    return out


def typed_decoder(data: PerfData, attr: FileAttr) -> RecordDecoder | None:
    """The decoder of the samples of an event whose attr names their type (``typed_capture``: a
    typed ring buffer map's event, a typed bpf-output event), from the BTF the file carries; None
    for any other event. What the attr names must be there, and be what map:NAME.type takes (a
    struct, union or typedef); a sample shorter than the type is decoded as far as it goes and
    says so (``TypedFields.short``), as live."""
    from evspec.codes import kernel as codes
    from evspec.loader.abi.perf import SampleType
    from evspec.loader.errors import ObjectError
    from evspec.loader.object.btf import RECORD_TYPE_KINDS, Btf, BtfError
    from evspec.loader.output.ringbuf_capture import is_ring_event, ring_event_type
    from evspec.loader.output.typed import RecordDecoder
    from evspec.loader.output.typed_capture import (
        PERF_EVENT_ARRAY_MAP_TYPE,
        config_type,
        is_typed_output_event,
    )

    def corrupt(message: str) -> ObjectError:
        return ObjectError(codes.PERF_DATA_CORRUPT, f"{data.path}: {message}")

    parsed = attr.parsed()
    if is_ring_event(parsed):
        what, typed = f"ring buffer map {attr.name}", ring_event_type(parsed)
        if typed is None:
            return None
    elif is_typed_output_event(parsed):
        what, typed = f"bpf-output event {attr.name}", config_type(parsed.config2)
        if typed is None:
            raise corrupt(f"{what} is marked typed (config1 = {PERF_EVENT_ARRAY_MAP_TYPE}) but names no type "
                          "(config2 = 0)")
    else:
        return None
    if not parsed.sample_type & SampleType.RAW:
        raise corrupt(f"{what} is typed, but its samples carry no raw data (sample_type {parsed.sample_type:#x})")
    btf_id, type_id = typed
    blob = data.btfs().get(btf_id)
    if blob is None:
        raise corrupt(f"{what} is typed by BTF object {btf_id}, which HEADER_BPF_BTF does not hold")
    try:
        btf = Btf(blob)
        found = btf.type(type_id)
        if found.kind not in RECORD_TYPE_KINDS:
            raise corrupt(f"the type {type_id} of {what} in BTF object {btf_id} is {found.kind.name} "
                          f"'{found.name}', not a struct, union or typedef")
        return RecordDecoder(btf, found)
    except BtfError as exc:
        raise corrupt(f"the type {type_id} of {what} in BTF object {btf_id}: {exc}") from None


def script_lines(data: PerfData, totals: ScriptTotals | None = None) -> Iterator[SampleLine | LostLine | RingRecordLine]:
    """The file's samples and losses in time order, with task names from its COMM/FORK records;
    ``totals`` (when given) counts them and collects the PERF_RECORD_LOST_SAMPLES records. The
    samples of a ring buffer map's event (``ringbuf_capture``) are its records, and those of an
    event that names their type are decoded (``typed_decoder``), as live."""
    from evspec.loader.abi.perf import AttrFlag, RecordType
    from evspec.loader.output.perf_ring import SampleLayout
    from evspec.loader.output.perfdata import SampleIdTrailer
    from evspec.loader.output.ringbuf_capture import is_ring_event
    from evspec.loader.output.script import LostLine, RingRecordLine, SampleLine

    totals = totals if totals is not None else ScriptTotals()
    id_pos, by_id = _event_of(data)
    first = data.attrs[0]
    layouts = {id(a): SampleLayout(a.sample_type) for a in data.attrs}
    formats = tracepoint_formats(data)
    rings = {id(a) for a in data.attrs if is_ring_event(a.parsed())}
    typed = {id(a): typed_decoder(data, a) for a in data.attrs}
    trailer = SampleIdTrailer(first.sample_type if first.parsed().flags & AttrFlag.SAMPLE_ID_ALL else 0)
    buf = data.buf

    def trailer_event(fields: dict[str, int]) -> FileAttr:
        return by_id.get(fields.get("identifier", fields.get("id", -1)), first)

    # (time, file order, kind, values...) sorted before anything is printed
    queue: list[tuple[int, int, int, tuple[object, ...]]] = []
    for seq, rec in enumerate(data.records()):
        start, end = rec.offset + 8, rec.offset + rec.size
        if rec.type == RecordType.SAMPLE:
            attr = first if id_pos is None else by_id.get(_U64.unpack_from(buf, start + id_pos)[0], first)
            layout = layouts[id(attr)]
            values, _chain, raw = layout.unpack(buf, start, end)
            fields = dict(zip(layout.names, values, strict=True))
            kind = _RING_RECORD if id(attr) in rings else RecordType.SAMPLE
            queue.append((fields.get("time", 0), seq, kind, (attr, fields, raw)))
        elif rec.type == RecordType.COMM:
            pid, tid = _COMM.unpack_from(buf, start)
            name_at = start + _COMM.size
            comm = buf[name_at : buf.find(b"\0", name_at, end)].decode(errors="replace")
            queue.append((trailer.read(buf, end, start).get("time", 0), seq, RecordType.COMM, (tid, comm)))
        elif rec.type == RecordType.FORK:
            _pid, _ppid, tid, ptid, time = _FORK.unpack_from(buf, start)
            queue.append((time, seq, RecordType.FORK, (tid, ptid)))
        elif rec.type == RecordType.LOST:
            lost_id, lost = _LOST.unpack_from(buf, start)
            extra = trailer.read(buf, end, start + _LOST.size)
            attr = by_id.get(lost_id, first)
            queue.append((extra.get("time", 0), seq, RecordType.LOST, (attr.name, extra.get("cpu", 0), lost)))
        elif rec.type == RecordType.LOST_SAMPLES and rec.size >= 16:
            (lost,) = _U64.unpack_from(buf, start)
            extra = trailer.read(buf, end, start + _U64.size)
            cpu = extra.get("cpu", 0)
            totals.lost_samples.append(LostLine(trailer_event(extra).name, -1 if cpu == _ANY_CPU else cpu, lost))
    queue.sort(key=lambda item: (item[0], item[1]))
    comms: dict[int, str] = {}
    for time, _seq, kind, values in queue:
        if kind == RecordType.COMM:
            tid, comm = values
            comms[tid] = comm  # type: ignore[index]
        elif kind == RecordType.FORK:
            tid, ptid = values
            if ptid in comms:
                comms[tid] = comms[ptid]  # type: ignore[index]
        elif kind == RecordType.LOST:
            name, cpu, lost = values
            totals.lost_reported += lost  # type: ignore[operator]
            yield LostLine(name, cpu, lost)  # type: ignore[arg-type]
        elif kind == _RING_RECORD:
            attr, _fields, raw = values
            totals.samples += 1
            decoder, record = typed[id(attr)], raw or b""
            yield RingRecordLine(attr.name, record, None if decoder is None else decoder.decode(record))  # type: ignore[attr-defined, arg-type]
        else:
            attr, fields, raw = values
            f: dict[str, int] = fields  # type: ignore[assignment]
            pid, tid = f.get("pid", 0), f.get("tid", 0)
            comm = comms.get(tid) or comms.get(pid) or f":{tid}"
            fmt, decoder = formats.get(id(attr)), typed[id(attr)]
            if decoder is not None:  # a typed bpf-output event's: its raw data is checked to be there
                decoded = decoder.decode_sample(raw)  # type: ignore[arg-type]
            else:
                decoded = fmt.fields(raw) if fmt is not None and raw is not None else None  # type: ignore[arg-type]
            totals.samples += 1
            yield SampleLine(attr.name, comm, pid, tid, f.get("cpu", 0), time, f.get("period", 0), raw, decoded)  # type: ignore[arg-type, union-attr]


def script_main(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    from evspec.loader.errors import ObjectError
    from evspec.loader.output.perfdata import read_perf_data
    from evspec.loader.output.script import JsonRenderer, TextRenderer, paused_gc, summary_json

    out = stdout or sys.stdout
    err = stderr or sys.stderr
    fmt_json = args.format == "json"
    try:
        data = read_perf_data(args.input)
        renderer = JsonRenderer() if fmt_json else TextRenderer(name_width(data))
        batch: list[SampleLine | LostLine | RingRecordLine] = []
        totals = ScriptTotals()
        with paused_gc():
            for line in script_lines(data, totals):
                batch.append(line)
                if len(batch) >= 4096:
                    out.write(renderer.render(batch))
                    batch.clear()
            out.write(renderer.render(batch))
        from evspec.loader.output.script import lost_samples_json, lost_samples_text

        render_lost = lost_samples_json if fmt_json else lost_samples_text
        out.write("".join(render_lost(x) for x in totals.lost_samples))
        if fmt_json:
            out.write(summary_json(totals.summary()))
        out.flush()
    except ObjectError as exc:
        err.write(f"evspec script: error: {exc.message}\n")
        for line in exc.help:
            err.write(f"  help: {line}\n")
        return EXIT_ERROR
    except BrokenPipeError:
        return 0
    if data.truncated:
        err.write(f"evspec script: warning: {args.input} was not finished by its writer; "
                  "read up to its last complete record\n")
    return 0
