"""What ``evspec record`` prints for each record: perf-script style text, or JSON lines.

The text layout is perf 6.1's ``perf script`` for a sample without ip/symbol fields::

             taskset 17765 [000]  1074.053516:          0         __bpf_stdout__:
          BPF output: 0000: 68 65 6c 6c 6f 31 00 00  hello1..
                      0008: 00 00 00 00              ....
          BPF string: "hello1"

(comm ``%16s``, tid ``%5d``, cpu ``[%03d]``, time ``%5d.%06d:``, period ``%10d``, event name right
aligned to the longest name of the session, eight payload bytes per line), then an empty line.
The header line ends in a blank after the colon, and a short last hexdump line is padded with
blanks to full width, as perf prints them.

A tracepoint sample whose fields were decoded (``SampleLine.fields``, from the event's tracefs
format: ``loader.tracefs_format.TracepointDecoders``) is one line, as perf script prints
tracepoints (no period column, no empty line after it), with ``name=value`` for each field::

             sh  6152 [000]  3662.144282:   sched:sched_process_exec: filename=/usr/bin/sh pid=6152 old_pid=6152

Strings print as they are, numbers in decimal with their sign, pointers in hex, other arrays as
``[1, 2, 3]``; JSON lines carry ``"fields": {name: value}`` (strings, numbers, lists of numbers).
The records of a typed output map (``map:NAME.type=TYPE``, ``loader.output.typed``) print the
same way: a bpf-output sample's as a tracepoint's line, a ring buffer record's as
``NAME: field=value ...``; their JSON adds ``"size"``, and ``"short"`` or ``"rest_hex"``.

``TextRenderer`` and ``JsonRenderer`` print many lines at once, byte for byte what ``sample_text``
and ``sample_json`` print for each, with what repeats from sample to sample computed once: the
hexdump and string lines of a payload, the JSON of a payload, a task name, an event name.
"""

from __future__ import annotations

import gc
import json
import json.encoder
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

from evspec.loader.output.tracefs_format import FieldValue
from evspec.loader.output.typed import TypedFields, fields_json, fields_text

BYTES_PER_LINE = 8
_json_string = json.encoder.encode_basestring_ascii  # json.dumps(str), without its Python steps
_LABEL_WIDTH = 17


class SampleLine(NamedTuple):
    """One sample, with everything a renderer prints (a named tuple: live mode makes one per
    sample, a million a second)."""

    event: str
    comm: str
    pid: int
    tid: int
    cpu: int
    time_ns: int
    period: int
    raw: bytes | None
    fields: tuple[tuple[str, FieldValue], ...] | None = None  # a tracepoint's decoded fields


class RingRecordLine(NamedTuple):
    """One record of a BPF ring buffer map: the map's name is the event; the kernel adds nothing
    to the program's bytes (no task, CPU or time)."""

    event: str
    raw: bytes
    fields: TypedFields | None = None  # the record decoded as its map's map:NAME.type=TYPE


@dataclass(frozen=True, slots=True)
class LostLine:
    event: str
    cpu: int
    lost: int


def _printable(byte: int) -> bool:
    return 0x20 <= byte < 0x7F


def _space(byte: int) -> bool:
    return byte in b" \t\n\v\f\r"


_STRING_BYTES = bytes(b for b in range(256) if _printable(b) or _space(b))
_SHOWN = bytes(b if _printable(b) else ord(".") for b in range(256))  # a hexdump's character column


def bpf_string(raw: bytes | None) -> str | None:
    """The payload as a string when perf calls it one: NUL-terminated, printable before the NUL."""
    if not raw or raw[-1] != 0:
        return None
    text = raw[: raw.index(0)]
    if text.translate(None, _STRING_BYTES):  # a byte neither printable nor a space
        return None
    return text.decode("ascii")


def hexdump_lines(raw: bytes) -> list[str]:
    """perf script's ``BPF output:`` block, one string per line (trailing blanks kept)."""
    lines = []
    for offset in range(0, len(raw), BYTES_PER_LINE):
        chunk = raw[offset : offset + BYTES_PER_LINE]
        label = "BPF output:" if offset == 0 else ""
        hexes = " " + chunk.hex(" ") + "   " * (BYTES_PER_LINE - len(chunk))
        chars = chunk.translate(_SHOWN).decode("ascii") + " " * (BYTES_PER_LINE - len(chunk))
        lines.append(f"{label:>{_LABEL_WIDTH}} {offset:04x}:{hexes}  {chars}")
    return lines


def field_text(value: FieldValue) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def tracepoint_text(sample: SampleLine, name_width: int) -> str:
    """A tracepoint sample on one line: the header without period, then ``name=value ...``."""
    seconds, nanos = divmod(sample.time_ns, 1_000_000_000)
    if isinstance(sample.fields, TypedFields):  # a bpf-output sample of a typed map
        fields = fields_text(sample.fields)
    else:
        fields = " ".join(f"{name}={field_text(value)}" for name, value in sample.fields or ())
    return (
        f"{sample.comm:>16} {sample.tid:5d} [{sample.cpu:03d}] {seconds:5d}.{nanos // 1000:06d}: "
        f"{sample.event:>{name_width}}: {fields}\n"
    )


def sample_header(sample: SampleLine, name_width: int) -> str:
    seconds, nanos = divmod(sample.time_ns, 1_000_000_000)
    return (
        f"{sample.comm:>16} {sample.tid:5d} [{sample.cpu:03d}] {seconds:5d}.{nanos // 1000:06d}: "
        f"{sample.period:10d} {sample.event:>{name_width}}: "
    )


def sample_text(sample: SampleLine, name_width: int) -> str:
    """The sample as ``perf script`` prints it: a bpf-output sample ends with the empty line that
    follows each, a decoded tracepoint sample is one line."""
    if sample.fields is not None:
        return tracepoint_text(sample, name_width)
    lines = [sample_header(sample, name_width)]
    if sample.raw is not None:
        lines.extend(hexdump_lines(sample.raw))
        text = bpf_string(sample.raw)
        if text is not None:
            lines.append(f"{'BPF string:':>{_LABEL_WIDTH}} \"{text}\"")
    return "\n".join(lines) + "\n\n"


def ring_record_text(record: RingRecordLine, name_width: int) -> str:
    """A ring buffer record: the map and the size, then the payload as a bpf-output sample's; a
    typed one (map:NAME.type=TYPE) is one line of ``name=value`` fields, as a tracepoint's."""
    if record.fields is not None:
        return f"{record.event:>{name_width}}: {fields_text(record.fields)}\n"
    lines = [f"{record.event:>{name_width}}: ring buffer record, {len(record.raw)} bytes", *hexdump_lines(record.raw)]
    text = bpf_string(record.raw)
    if text is not None:
        lines.append(f"{'BPF string:':>{_LABEL_WIDTH}} \"{text}\"")
    return "\n".join(lines) + "\n\n"


def ring_record_json(record: RingRecordLine) -> str:
    """``{"event": ..., "ringbuf": true, "raw_hex": ..., "string": ...}``, as ``json.dumps`` of that
    dict prints it (its string escapes by json's own C encoder); a typed record adds its fields."""
    text = bpf_string(record.raw)
    if record.fields is not None:
        return json.dumps({"event": record.event, "ringbuf": True, "raw_hex": record.raw.hex(), "string": text,
                           **fields_json(record.fields)}) + "\n"
    return (f'{{"event": {_json_string(record.event)}, "ringbuf": true, "raw_hex": "{record.raw.hex()}", '
            f'"string": {"null" if text is None else _json_string(text)}}}\n')


def lost_text(lost: LostLine) -> str:
    return f"LOST {lost.lost} records of {lost.event} on cpu {lost.cpu}\n"


def sample_json(sample: SampleLine) -> str:
    record: dict[str, object] = {
        "event": sample.event,
        "comm": sample.comm,
        "pid": sample.pid,
        "tid": sample.tid,
        "cpu": sample.cpu,
        "time_ns": sample.time_ns,
        "raw_hex": (sample.raw or b"").hex(),
        "string": bpf_string(sample.raw),
    }
    if isinstance(sample.fields, TypedFields):
        record.update(fields_json(sample.fields))
    elif sample.fields is not None:
        record["fields"] = {name: int(v) if isinstance(v, int) else v for name, v in sample.fields}
    return json.dumps(record) + "\n"


def lost_json(lost: LostLine) -> str:
    return json.dumps({"lost": lost.lost, "cpu": lost.cpu, "event": lost.event}) + "\n"


_CACHE_LIMIT = 1 << 14  # payloads remembered by a renderer; all forgotten when it is reached


class TextRenderer:
    """``sample_text`` / ``lost_text`` for batches of lines.

    A bpf-output sample is printed as three pieces, each computed once and reused: the task
    columns (a ``%`` template for the time), and the period, event and payload lines."""

    def __init__(self, name_width: int) -> None:
        self.name_width = name_width
        self._heads: dict[tuple[str, int, int], str] = {}
        self._tails: dict[tuple[int, str, bytes | None], str] = {}
        self._rings: dict[RingRecordLine, str] = {}  # a ring buffer record's whole text

    def _ring(self, record: RingRecordLine) -> str:
        if len(self._rings) >= _CACHE_LIMIT:
            self._rings.clear()
        text = self._rings[record] = ring_record_text(record, self.name_width)
        return text

    def _head(self, comm: str, tid: int, cpu: int) -> str:
        if len(self._heads) >= _CACHE_LIMIT:
            self._heads.clear()
        head = f"{comm:>16} {tid:5d} [{cpu:03d}] ".replace("%", "%%") + "%5d.%06d"
        self._heads[(comm, tid, cpu)] = head
        return head

    def _tail(self, period: int, event: str, raw: bytes | None) -> str:
        """What follows the time: period, event and the payload's lines, up to the empty line."""
        if len(self._tails) >= _CACHE_LIMIT:
            self._tails.clear()
        lines = [] if raw is None else hexdump_lines(raw)
        text = bpf_string(raw)
        if text is not None:
            lines.append(f"{'BPF string:':>{_LABEL_WIDTH}} \"{text}\"")
        tail = f": {period:10d} {event:>{self.name_width}}: " + "".join("\n" + line for line in lines) + "\n\n"
        self._tails[(period, event, raw)] = tail
        return tail

    def render(self, lines: Iterable[SampleLine | LostLine | RingRecordLine]) -> str:
        out: list[str] = []
        append = out.append
        heads, tails, rings = self._heads, self._tails, self._rings
        for line in lines:
            if type(line) is not SampleLine:
                if type(line) is RingRecordLine:
                    append(rings.get(line) or self._ring(line))  # type: ignore[arg-type]
                else:
                    append(lost_text(line))  # type: ignore[arg-type]
                continue
            event, comm, _pid, tid, cpu, time_ns, period, raw, fields = line
            if fields is not None:
                append(tracepoint_text(line, self.name_width))
                continue
            head = heads.get((comm, tid, cpu)) or self._head(comm, tid, cpu)
            tail = tails.get((period, event, raw)) or self._tail(period, event, raw)
            append(head % divmod(time_ns // 1000, 1_000_000))
            append(tail)
        return "".join(out)


class JsonRenderer:
    """``sample_json`` / ``lost_json`` for batches of lines: a sample is its task's part up to
    ``"time_ns": ``, the time, and its payload's part, the first and the last computed once."""

    def __init__(self) -> None:
        self._heads: dict[tuple[str, str, int, int, int], str] = {}
        self._tails: dict[bytes | None, str] = {}
        self._rings: dict[RingRecordLine, str] = {}  # a ring buffer record's whole line

    def _ring(self, record: RingRecordLine) -> str:
        if len(self._rings) >= _CACHE_LIMIT:
            self._rings.clear()
        text = self._rings[record] = ring_record_json(record)
        return text

    def _head(self, event: str, comm: str, pid: int, tid: int, cpu: int) -> str:
        if len(self._heads) >= _CACHE_LIMIT:
            self._heads.clear()
        head = (f'{{"event": {json.dumps(event)}, "comm": {json.dumps(comm)}, "pid": {pid}, "tid": {tid}, '
                f'"cpu": {cpu}, "time_ns": ')
        self._heads[(event, comm, pid, tid, cpu)] = head
        return head

    def _tail(self, raw: bytes | None) -> str:
        if len(self._tails) >= _CACHE_LIMIT:
            self._tails.clear()
        tail = f', "raw_hex": "{(raw or b"").hex()}", "string": {json.dumps(bpf_string(raw))}}}\n'
        self._tails[raw] = tail
        return tail

    def render(self, lines: Iterable[SampleLine | LostLine | RingRecordLine]) -> str:
        out: list[str] = []
        append = out.append
        heads, tails, rings = self._heads, self._tails, self._rings
        for line in lines:
            if type(line) is not SampleLine:
                if type(line) is RingRecordLine:
                    append(rings.get(line) or self._ring(line))  # type: ignore[arg-type]
                else:
                    append(lost_json(line))  # type: ignore[arg-type]
                continue
            event, comm, pid, tid, cpu, time_ns, _period, raw, fields = line
            if fields is not None:
                append(sample_json(line))
                continue
            append(heads.get((event, comm, pid, tid, cpu)) or self._head(event, comm, pid, tid, cpu))
            append(str(time_ns))
            append(tails.get(raw) or self._tail(raw))
        return "".join(out)


def summary_json(summary: Mapping[str, int]) -> str:
    """The last line of ``record --format json``: ``{"summary": {"samples": N, "lost": M, ...}}``."""
    return json.dumps({"summary": dict(summary)}) + "\n"


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off while records are decoded and printed: they are acyclic
    tuples, made by the million, and each collection would walk every one still held (which
    halves the rate); reference counting frees them all the same."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
