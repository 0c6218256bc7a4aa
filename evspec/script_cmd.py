"""``evspec script -i FILE``: print a perf.data file's records as live ``evspec record`` prints them.

The file may be evspec's capture or perf record's own. Records are replayed in time order (as perf
script does): COMM and FORK records name the tasks, samples become ``SampleLine``s and
PERF_RECORD_LOST records ``LostLine``s, rendered by ``evspec.loader.script_output``.
"""

from __future__ import annotations

import argparse
import struct
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from evspec.loader.perfdata import FileAttr, PerfData
    from evspec.loader.script_output import LostLine, SampleLine
    from evspec.loader.tracefs_format import TraceFormat

EXIT_ERROR = 2
_U64 = struct.Struct("<Q")
_COMM = struct.Struct("<II")
_FORK = struct.Struct("<IIIIQ")  # pid, ppid, tid, ptid, time
_LOST = struct.Struct("<QQ")
# sample_id_all trailer fields, in the order the kernel appends them (perf_event.h)
_TRAILER_FIELDS = (
    (1 << 1, "II", ("pid", "tid")),  # TID
    (1 << 2, "Q", ("time",)),  # TIME
    (1 << 6, "Q", ("id",)),  # ID
    (1 << 9, "Q", ("stream_id",)),  # STREAM_ID
    (1 << 7, "II", ("cpu", "_res")),  # CPU
    (1 << 16, "Q", ("identifier",)),  # IDENTIFIER
)


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


class _Trailer:
    """Reads the sample_id_all fields at the end of a non-sample record."""

    def __init__(self, sample_type: int) -> None:
        codes, names = "<", []
        for bit, code, field_names in _TRAILER_FIELDS:
            if sample_type & bit:
                codes += code
                names.extend(field_names)
        self.struct = struct.Struct(codes)
        self.names = tuple(names)

    def read(self, buf: bytes, end: int, body_start: int) -> dict[str, int]:
        if not self.names or end - self.struct.size < body_start:
            return {}
        return dict(zip(self.names, self.struct.unpack_from(buf, end - self.struct.size), strict=True))


def _event_of(data: PerfData) -> tuple[int | None, dict[int, FileAttr]]:
    from evspec.codes import kernel as codes
    from evspec.loader.errors import ObjectError
    from evspec.loader.perfdata import sample_id_position

    pos = sample_id_position(data.attrs)
    if pos == -1:
        raise ObjectError(
            codes.PERF_DATA_UNSUPPORTED,
            f"{data.path}: its events sample their id at different places (or not at all), so "
            "samples cannot be told apart",
        )
    return pos, data.id_map()


def _is_tracking(attr: FileAttr) -> bool:
    from evspec.loader.perf_abi import PerfType, SwConfig

    parsed = attr.parsed()
    return parsed.type == PerfType.SOFTWARE and parsed.config == SwConfig.DUMMY


def name_width(data: PerfData) -> int:
    """The width live record right-aligns event names to: the longest non-tracking event name."""
    return max((len(a.name) for a in data.attrs if not _is_tracking(a)), default=0)


def tracepoint_formats(data: PerfData) -> dict[int, TraceFormat]:
    """The format of each tracepoint event of the file (by ``id()`` of its attr), parsed from
    the file's HEADER_TRACING_DATA; events whose format the file lacks print undecoded."""
    from evspec.loader.perf_abi import PerfType
    from evspec.loader.tracefs_format import parse_format

    out: dict[int, TraceFormat] = {}
    for attr in data.attrs:
        parsed = attr.parsed()
        saved = data.tracepoints.get(parsed.config) if parsed.type == PerfType.TRACEPOINT else None
        if saved is not None:
            out[id(attr)] = parse_format(saved.text, saved.system, saved.name)
    return out


def script_lines(data: PerfData) -> Iterator[SampleLine | LostLine]:
    """The file's samples and losses in time order, with task names from its COMM/FORK records."""
    from evspec.loader.perf_abi import AttrFlag, RecordType
    from evspec.loader.ringbuf import SampleLayout
    from evspec.loader.script_output import LostLine, SampleLine

    id_pos, by_id = _event_of(data)
    first = data.attrs[0]
    layouts = {id(a): SampleLayout(a.sample_type) for a in data.attrs}
    formats = tracepoint_formats(data)
    trailer = _Trailer(first.sample_type if first.parsed().flags & AttrFlag.SAMPLE_ID_ALL else 0)
    buf = data.buf
    # (time, file order, kind, values...) sorted before anything is printed
    queue: list[tuple[int, int, int, tuple[object, ...]]] = []
    for seq, rec in enumerate(data.records()):
        start, end = rec.offset + 8, rec.offset + rec.size
        if rec.type == RecordType.SAMPLE:
            attr = first if id_pos is None else by_id.get(_U64.unpack_from(buf, start + id_pos)[0], first)
            layout = layouts[id(attr)]
            values, _chain, raw = layout.unpack(buf, start, end)
            fields = dict(zip(layout.names, values, strict=True))
            queue.append((fields.get("time", 0), seq, RecordType.SAMPLE, (attr, fields, raw)))
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
            yield LostLine(name, cpu, lost)  # type: ignore[arg-type]
        else:
            attr, fields, raw = values
            f: dict[str, int] = fields  # type: ignore[assignment]
            pid, tid = f.get("pid", 0), f.get("tid", 0)
            comm = comms.get(tid) or comms.get(pid) or f":{tid}"
            fmt = formats.get(id(attr))
            decoded = tuple(fmt.decode(raw).items()) if fmt is not None and raw is not None else None  # type: ignore[arg-type]
            yield SampleLine(attr.name, comm, pid, tid, f.get("cpu", 0), time, f.get("period", 0), raw, decoded)  # type: ignore[arg-type, union-attr]


def script_main(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    from evspec.loader.errors import ObjectError
    from evspec.loader.perfdata import read_perf_data
    from evspec.loader.script_output import JsonRenderer, TextRenderer, paused_gc

    out = stdout or sys.stdout
    err = stderr or sys.stderr
    try:
        data = read_perf_data(args.input)
        renderer = JsonRenderer() if args.format == "json" else TextRenderer(name_width(data))
        batch: list[SampleLine | LostLine] = []
        with paused_gc():
            for line in script_lines(data):
                batch.append(line)
                if len(batch) >= 4096:
                    out.write(renderer.render(batch))
                    batch.clear()
            out.write(renderer.render(batch))
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


def main(argv: list[str] | None = None) -> int:
    """``python -m evspec.script_cmd -i FILE``: the sub-command on its own."""
    parser = argparse.ArgumentParser(prog="evspec")
    add_script_parser(parser.add_subparsers(dest="cmd", required=True))
    args = parser.parse_args(["script", *(sys.argv[1:] if argv is None else argv)])
    return script_main(args)


if __name__ == "__main__":
    sys.exit(main())
