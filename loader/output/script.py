"""What ``evspec record`` prints for each record: perf-script style text, or JSON lines.

The text layout is perf 6.1's ``perf script`` for a sample without ip/symbol fields::

             taskset 17765 [000]  1074.053516:          0         __bpf_stdout__:
          BPF output: 0000: 68 65 6c 6c 6f 31 00 00  hello1..
                      0008: 00 00 00 00              ....
          BPF string: "hello1"

(comm ``%16s``, tid ``%5d``, cpu ``[%03d]``, time ``%5d.%06d:``, period ``%10d``, event name right
aligned to the longest name of the session, eight payload bytes per line), then an empty line.
The header line ends in a blank after the colon, and a short last hexdump line is padded with
blanks to full width, as perf prints them. perf's ctype is Latin-1: bytes 0xA0-0xFF are printable
(in the character column and in a ``BPF string:``); perf writes them as they are, evspec as the
Latin-1 characters they are (in UTF-8).

A tracepoint sample whose fields were decoded (``SampleLine.fields``, from the event's tracefs
format: ``loader.tracefs_format.TracepointDecoders``) is one line, as perf script prints
tracepoints (no period column, no empty line after it), the record printed by its format's
``print fmt`` as perf 6.1's libtraceevent prints it (``loader.output.print_fmt``)::

             cat 28373 [000]   647.201677: syscalls:sys_enter_openat: dfd: 0xffffff9c, filename: 0x7f6ba092c0b1, flags: 0x00080000, mode: 0x00000000

Fields decoded without a format's printer (``name=value`` pairs) print as ``name=value``:
strings as they are, numbers in decimal with their sign, pointers in hex, other arrays as
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
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from itertools import chain, groupby, repeat
from operator import itemgetter
from typing import NamedTuple

from evspec.loader.output.perf_ring import cut_column
from evspec.loader.output.tracefs_format import FieldValue, TraceFields
from evspec.loader.output.typed import TypedFields, fields_json, fields_text

from evspec.span import Slotted

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


class LostLine(Slotted):
    event: str
    cpu: int
    lost: int


class SampleRun(Slotted, frozen=False):
    """Samples of one event, as columns: what live mode decodes a run of a ring's samples into
    (``loader.output.samples``) and the renderers print in bulk. ``fields`` holds each sample's
    decoded fields (a tracepoint's, a typed map's) or is None; ``comms`` is filled in before
    rendering by whoever knows the tasks' names."""

    __slots__ = ("event", "pids", "tids", "cpus", "times", "periods", "raws", "fields", "comms")
    event: str
    pids: list[int]
    tids: list[int]
    cpus: list[int]
    times: list[int]
    periods: list[int]
    raws: list[bytes | None]
    fields: list[object] | None
    comms: list[str] | None

    def __init__(self, event: str, pids: list[int], tids: list[int], cpus: list[int], times: list[int],
                 periods: list[int], raws: list[bytes | None], fields: list[object] | None = None,
                 comms: list[str] | None = None) -> None:
        self.event, self.pids, self.tids, self.cpus, self.times = event, pids, tids, cpus, times
        self.periods, self.raws, self.fields, self.comms = periods, raws, fields, comms

    def __len__(self) -> int:
        return len(self.times)

    def slice(self, start: int, stop: int) -> SampleRun:
        """Samples ``start`` to ``stop`` as a run of their own."""
        return SampleRun(self.event, self.pids[start:stop], self.tids[start:stop], self.cpus[start:stop],
                         self.times[start:stop], self.periods[start:stop], self.raws[start:stop],
                         None if self.fields is None else self.fields[start:stop],
                         None if self.comms is None else self.comms[start:stop])

    def names(self) -> list[str]:
        """``comms``, which must be filled in."""
        if self.comms is None:
            raise ValueError(f"the samples of {self.event} have no task names yet")
        return self.comms

    def lines(self) -> list[SampleLine]:
        """The samples one by one (``comms`` filled in)."""
        fields = self.fields if self.fields is not None else repeat(None)
        return list(map(SampleLine, repeat(self.event), self.names(), self.pids, self.tids, self.cpus, self.times,
                        self.periods, self.raws, fields))


def _printable(byte: int) -> bool:
    """perf's isprint(): its ctype table (the kernel's) is Latin-1, where 0xA0-0xFF print too."""
    return 0x20 <= byte < 0x7F or byte >= 0xA0


_PRINTABLE = bytes(b for b in range(256) if _printable(b))
_SHOWN = bytes(b if _printable(b) else ord(".") for b in range(256))  # a hexdump's character column


def bpf_string(raw: bytes | None) -> str | None:
    """The payload as a string when perf 6.1's bpf-output printer calls it one: printable bytes,
    then a NUL, then nothing but NULs (no blanks other than the space: a tab is not printable)."""
    if not raw:
        return None
    text, nul, rest = raw.partition(b"\0")
    if not nul or rest.strip(b"\0") or text.translate(None, _PRINTABLE):
        return None
    return text.decode("latin-1")


@lru_cache(maxsize=1024)
def _dump_template(size: int) -> str:
    """The ``%`` template of the hexdump of ``size`` bytes: each line's label and offset, a
    ``%s`` for its hex bytes, the padding of a short last line, a ``%s`` for its characters."""
    lines = []
    for offset in range(0, size, BYTES_PER_LINE):
        short = BYTES_PER_LINE - min(BYTES_PER_LINE, size - offset)
        label = "BPF output:" if offset == 0 else ""
        lines.append(f"{label:>{_LABEL_WIDTH}} {offset:04x}: %s{'   ' * short}  %s{' ' * short}")
    return "\n".join(lines)


def hexdump_text(raw: bytes) -> str:
    """perf script's ``BPF output:`` block, its lines joined by newlines (trailing blanks kept):
    the whole payload in hex and as characters at once, cut into the lines of a template."""
    size = len(raw)
    if not size:
        return ""
    hexes = raw.hex(" ")
    chars = raw.translate(_SHOWN).decode("latin-1")
    cuts = range(0, size, BYTES_PER_LINE)
    return _dump_template(size) % tuple(
        chain.from_iterable((hexes[3 * i : 3 * i + 3 * BYTES_PER_LINE - 1], chars[i : i + BYTES_PER_LINE])
                            for i in cuts))


def hexdump_lines(raw: bytes) -> list[str]:
    """``hexdump_text``, one string per line."""
    return hexdump_text(raw).split("\n") if raw else []


def field_text(value: FieldValue) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def tracepoint_text(sample: SampleLine, name_width: int) -> str:
    """A tracepoint sample on one line: the header without period, then ``name=value ...``."""
    seconds, nanos = divmod(sample.time_ns, 1_000_000_000)
    if isinstance(sample.fields, TypedFields):  # a bpf-output sample of a typed map
        fields = fields_text(sample.fields)
    elif isinstance(sample.fields, TraceFields):  # as its format's print fmt says
        fields = sample.fields.text
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
    out = f"{record.event:>{name_width}}: ring buffer record, {len(record.raw)} bytes"
    if record.raw:
        out += "\n" + hexdump_text(record.raw)
    text = bpf_string(record.raw)
    if text is not None:
        out += f"\n{'BPF string:':>{_LABEL_WIDTH}} \"{text}\""
    return out + "\n\n"


def ring_record_json(record: RingRecordLine) -> str:
    """``{"event": ..., "ringbuf": true, "raw_hex": ..., "string": ...}``, as ``json.dumps`` of that
    dict prints it (its string escapes by json's own C encoder); a typed record adds its fields."""
    text = bpf_string(record.raw)
    if record.fields is not None:
        return json.dumps({"event": record.event, "ringbuf": True, "raw_hex": record.raw.hex(), "string": text,
                           **fields_json(record.fields)}) + "\n"
    return (f'{{"event": {_json_string(record.event)}, "ringbuf": true, "raw_hex": "{record.raw.hex()}", '
            f'"string": {"null" if text is None else _json_string(text)}}}\n')


# bpf_string's rule as one match: printable bytes, then NULs to the end
_STRING = re.compile(rb"([\x20-\x7e\xa0-\xff]*)\x00+")
_Block = Callable[[str, list[bytes]], Iterator[tuple[str, ...]]]
_SAMPLED = 16  # the first records of a run, whose repeats say whether to look for repeats in all


def _ring_bulk(records: list[RingRecordLine], one: Callable[[RingRecordLine], str], block: _Block) -> str:
    """Ring buffer records printed in bulk: for each run of one map's untyped records,
    ``block(event, raws)`` gives the pieces of each record's text, made by mapped C functions
    over all of them and joined in C (no Python step per record); a run whose payloads repeat
    (its first ones do) is printed for each distinct payload once. Typed records go through
    ``one`` each."""
    out: list[str] = []
    for event, group in groupby(records, itemgetter(0)):
        run = list(group)
        if list(map(itemgetter(2), run)).count(None) != len(run):
            out.extend(map(one, run))
            continue
        raws = list(map(itemgetter(1), run))
        unique = list(dict.fromkeys(raws)) if len(set(raws[:_SAMPLED])) * 2 <= len(raws[:_SAMPLED]) else raws
        if 2 * len(unique) <= len(raws):
            texts = dict(zip(unique, map("".join, block(event, unique)), strict=True))
            out.extend(map(texts.__getitem__, raws))
        else:
            out.extend(chain.from_iterable(block(event, raws)))
    return "".join(out)


def _strings(raws: list[bytes], before: str, none: str, after: str, quote: Callable[[str], str]) -> Iterable[str]:
    """What follows each record's bytes: ``before + quote(string) + after`` where it has a
    string, ``none + after`` where not (one regular expression mapped over all of them)."""
    matches = list(map(_STRING.fullmatch, raws))
    if not any(matches):
        return repeat(none + after, len(raws))
    return [none + after if m is None else before + quote(m.group(1).decode("latin-1")) + after for m in matches]


def _json_block(event: str, raws: list[bytes]) -> Iterator[tuple[str, ...]]:
    head = f'{{"event": {_json_string(event)}, "ringbuf": true, "raw_hex": "'
    ends = _strings(raws, '", "string": ', '", "string": null', "}\n", _json_string)
    return zip(repeat(head, len(raws)), map(bytes.hex, raws), ends, strict=True)


def ring_records_json(records: list[RingRecordLine]) -> str:
    """``ring_record_json`` of every record, made in bulk (``_ring_bulk``)."""
    return _ring_bulk(records, ring_record_json, _json_block)


def _dump_pieces(sized: list[bytes], joint: str) -> list[Iterable[str]]:
    """The pieces of the text of each payload of ``sized`` (all of one size), ``joint`` first:
    ``joint``, the hexdump's lines (each cut from every payload's hex and characters at once),
    the ``BPF string:`` line where there is one, and the empty line; zipped, one tuple each."""
    count, size = len(sized), len(sized[0]) if sized else 0
    pieces: list[Iterable[str]] = []
    if size:
        hexes = list(map(bytes.hex, sized, repeat(" ")))
        chars = list(map(bytes.decode, map(bytes.translate, sized, repeat(_SHOWN)), repeat("latin-1")))
        for i in range(0, size, BYTES_PER_LINE):
            short = BYTES_PER_LINE - min(BYTES_PER_LINE, size - i)
            label = "BPF output:" if i == 0 else ""
            pieces.append(repeat(f"{joint}\n{label:>{_LABEL_WIDTH}} {i:04x}: ", count))
            pieces.append(map(str.__getitem__, hexes, repeat(slice(3 * i, 3 * i + 3 * BYTES_PER_LINE - 1))))
            pieces.append(repeat("   " * short + "  ", count))
            pieces.append(map(str.__getitem__, chars, repeat(slice(i, i + BYTES_PER_LINE))))
            joint = " " * short
    pieces.append(_strings(sized, f"{joint}\n{'BPF string:':>{_LABEL_WIDTH}} \"", joint, "\n\n",
                           lambda text: text + '"'))
    return pieces


def dump_texts(raws: Iterable[bytes], joint: str) -> dict[bytes, str]:
    """``joint``, then each payload's hexdump, ``BPF string:`` and empty line, as ``sample_text``
    prints them after a header ending in ``joint``: made in bulk, per payload size."""
    out: dict[bytes, str] = {}
    for _size, same in groupby(sorted(raws, key=len), len):
        sized = list(same)
        out.update(zip(sized, map("".join, zip(*_dump_pieces(sized, joint), strict=True)), strict=True))
    return out


def _text_block(name_width: int) -> _Block:
    def block(event: str, raws: list[bytes]) -> Iterator[tuple[str, ...]]:
        out: Iterator[tuple[str, ...]] | None = None
        for size, same in groupby(raws, len):  # the hexdump's lines depend on the size
            pieces = _dump_pieces(list(same), f"{event:>{name_width}}: ring buffer record, {size} bytes")
            runs = zip(*pieces, strict=True)
            out = runs if out is None else chain(out, runs)
        return out if out is not None else iter(())
    return block


def ring_records_text(records: list[RingRecordLine], name_width: int) -> str:
    """``ring_record_text`` of every record, made in bulk (``_ring_bulk``): per size, the hexdump's
    lines cut from each record's hex and characters at once."""
    return _ring_bulk(records, lambda line: ring_record_text(line, name_width), _text_block(name_width))


def lost_text(lost: LostLine) -> str:
    return f"LOST {lost.lost} records of {lost.event} on cpu {lost.cpu}\n"


def lost_samples_text(line: LostLine) -> str:
    """An event instance's exact loss count (PERF_FORMAT_LOST, or a file's
    PERF_RECORD_LOST_SAMPLES), after the records; cpu -1: the instance followed a task."""
    return f"LOST_SAMPLES {line.lost} of {line.event} on cpu {line.cpu}\n"


def lost_samples_json(line: LostLine) -> str:
    return json.dumps({"lost_samples": line.lost, "cpu": line.cpu, "event": line.event}) + "\n"


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
Buffer = bytes | bytearray | memoryview
_CHUNK = 2048  # samples of a run printed at a time: the text stays in the CPU's caches


def _time_digits(times: list[int]) -> tuple[bytes, int, int] | None:
    """The times as perf script prints them (``%5d.%06d`` of seconds and microseconds) can be
    made from the decimal digits of the nanoseconds when all have as many digits, ten or more
    (a second or more): those digits joined, their count, and the blanks before each printed
    time; None otherwise."""
    digits = len(str(max(times)))
    if digits < 10 or len(str(min(times))) != digits:
        return None
    return "".join(map(str, times)).encode("ascii"), digits, max(0, 5 - (digits - 9))


def _fill_times(buffer: bytearray | memoryview, at: int, stride: int, digits: bytes, count: int, blanks: int) -> None:
    """Write the times into ``buffer`` at ``at`` + ``blanks`` of every ``stride`` bytes: of each
    group of ``count`` digits of ``digits`` (nanoseconds), all but the last three, a point
    before the last six of those."""
    seconds = count - 9
    for k in range(count - 3):
        buffer[at + blanks + k + (k >= seconds) :: stride] = digits[k::count]


def _time_template(count: int, blanks: int) -> bytes:
    """What ``_fill_times`` writes into, for times of ``count`` digits of nanoseconds."""
    return b" " * blanks + b"0" * (count - 9) + b"." + b"0" * 6


def time_texts(times: list[int]) -> list[bytes]:
    """Each time as perf script prints it, ``%5d.%06d`` of its seconds and microseconds: made
    from the digits of all of them at once where they allow (``_time_digits``)."""
    made = _time_digits(times) if times else None
    if made is None:
        return [b"%5d.%06d" % divmod(t // 1000, 1_000_000) for t in times]
    digits, count, blanks = made
    template = _time_template(count, blanks)
    buffer = bytearray(template) * len(times)
    _fill_times(buffer, 0, len(template), digits, count, blanks)
    return cut_column(buffer, 0, len(template), len(template), len(times))


def _constant(*columns: list[object]) -> bool:
    return all(column.count(column[0]) == len(column) for column in columns)


class TextRenderer:
    """``sample_text`` / ``lost_text`` for batches of lines and runs.

    A bpf-output sample is printed as three pieces, each computed once and reused: the task
    columns, the time, and the period, event and payload lines. A ``SampleRun`` is printed in
    bulk: its times made from their digits at once (``time_texts``), and where task and payload
    do not change from sample to sample, one sample's text repeated with the times written into
    it (a strided copy per digit); ring buffer records in bulk (``ring_records_text``)."""

    def __init__(self, name_width: int) -> None:
        self.name_width = name_width
        self._heads: dict[tuple[str, int, int], str] = {}
        self._tails: dict[tuple[int, str, bytes | None], str] = {}
        self._prefixes: dict[tuple[str, int, int], bytes] = {}
        self._suffixes: dict[tuple[int, str, bytes], bytes] = {}
        self._template = b""
        self._repeated = bytearray()

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

    def render(self, lines: Iterable[SampleLine | LostLine | RingRecordLine | SampleRun]) -> str:
        return b"".join(map(bytes, self.pieces(lines))).decode()

    def pieces(self, lines: Iterable[SampleLine | LostLine | RingRecordLine | SampleRun]) -> Iterator[Buffer]:
        """``render`` in UTF-8, a piece at a time; a piece may be a buffer that the next one
        reuses: write it (or copy it) before asking for the next."""
        for kind, group in groupby(lines, type):
            if kind is RingRecordLine:
                yield ring_records_text(list(group), self.name_width).encode()  # type: ignore[arg-type]
            elif kind is SampleRun:
                for run in group:
                    yield from self._run(run)  # type: ignore[arg-type]
            else:
                out: list[str] = []
                self._samples(group, out)  # type: ignore[arg-type]
                yield "".join(out).encode()

    def _samples(self, lines: Iterable[SampleLine | LostLine], out: list[str]) -> None:
        append = out.append
        heads, tails = self._heads, self._tails
        for line in lines:
            if type(line) is not SampleLine:
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

    def _run(self, run: SampleRun) -> Iterator[Buffer]:
        if run.fields is not None or None in run.raws or not len(run):
            pieces: list[str] = []
            self._samples(run.lines(), pieces)
            yield "".join(pieces).encode()
            return
        for at in range(0, len(run), _CHUNK):
            yield self._chunk(run.slice(at, at + _CHUNK) if len(run) > _CHUNK else run)

    def _chunk(self, run: SampleRun) -> Buffer:
        comms, tids, cpus, periods, raws = run.names(), run.tids, run.cpus, run.periods, run.raws
        count = len(run)
        event = run.event
        if len(self._prefixes) >= _CACHE_LIMIT:
            self._prefixes.clear()
        if len(self._suffixes) >= _CACHE_LIMIT:
            self._suffixes.clear()
        prefixes, suffixes = self._prefixes, self._suffixes
        tasks = [(comms[0], tids[0], cpus[0])] if _constant(comms, tids, cpus) else list(zip(comms, tids, cpus, strict=True))
        for task in dict.fromkeys(tasks).keys() - prefixes.keys():
            comm, tid, cpu = task
            prefixes[task] = f"{comm:>16} {tid:5d} [{cpu:03d}] ".encode()
        keys = [(periods[0], event, raws[0])] if _constant(periods, raws) else list(zip(periods, repeat(event), raws))
        missing = dict.fromkeys(keys).keys() - suffixes.keys()
        for period, same in groupby(sorted(missing, key=itemgetter(0)), itemgetter(0)):
            texts = dump_texts([raw for _, _, raw in same], f": {period:10d} {event:>{self.name_width}}: ")  # type: ignore[misc]
            suffixes.update(((period, event, raw), text.encode()) for raw, text in texts.items())
        made = _time_digits(run.times)
        if made is not None and len(tasks) == 1 and len(keys) == 1:
            digits, width, blanks = made
            prefix = prefixes[tasks[0]]
            template = prefix + _time_template(width, blanks) + suffixes[keys[0]]
            buffer = self._buffer(template, count)
            _fill_times(buffer, len(prefix), len(template), digits, width, blanks)
            return buffer
        heads = repeat(prefixes[tasks[0]], count) if len(tasks) == 1 else map(prefixes.__getitem__, tasks)
        tails = repeat(suffixes[keys[0]], count) if len(keys) == 1 else map(suffixes.__getitem__, keys)
        return b"".join(chain.from_iterable(zip(heads, time_texts(run.times), tails, strict=False)))

    def _buffer(self, template: bytes, count: int) -> memoryview:
        """``template`` ``count`` times: in the buffer of the last chunk when it held that
        template already (only the times differ), else in a new one."""
        if self._template != template or len(self._repeated) < count * len(template):
            self._template = template
            # (bytearray(template * count) costs ten times as much)
            self._repeated = bytearray(template) * max(count, _CHUNK)
        return memoryview(self._repeated)[: count * len(template)]


class JsonRenderer:
    """``sample_json`` / ``lost_json`` for batches of lines and runs: a sample is its task's part
    up to ``"time_ns": ``, the time, and its payload's part, the first and the last computed
    once; a ``SampleRun``'s samples joined in bulk; ring buffer records in bulk
    (``ring_records_json``)."""

    def __init__(self) -> None:
        self._heads: dict[tuple[str, str, int, int, int], str] = {}
        self._tails: dict[bytes | None, str] = {}

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

    def render(self, lines: Iterable[SampleLine | LostLine | RingRecordLine | SampleRun]) -> str:
        out: list[str] = []
        for kind, group in groupby(lines, type):
            if kind is RingRecordLine:
                out.append(ring_records_json(list(group)))  # type: ignore[arg-type]
            elif kind is SampleRun:
                out.extend(map(self._run, group))  # type: ignore[arg-type]
            else:
                self._samples(group, out)  # type: ignore[arg-type]
        return "".join(out)

    def pieces(self, lines: Iterable[SampleLine | LostLine | RingRecordLine | SampleRun]) -> Iterator[Buffer]:
        """``render`` in UTF-8, a piece at a time."""
        yield self.render(lines).encode()

    def _samples(self, lines: Iterable[SampleLine | LostLine], out: list[str]) -> None:
        append = out.append
        heads, tails = self._heads, self._tails
        for line in lines:
            if type(line) is not SampleLine:
                append(lost_json(line))  # type: ignore[arg-type]
                continue
            event, comm, pid, tid, cpu, time_ns, _period, raw, fields = line
            if fields is not None:
                append(sample_json(line))
                continue
            append(heads.get((event, comm, pid, tid, cpu)) or self._head(event, comm, pid, tid, cpu))
            append(str(time_ns))
            append(tails.get(raw) or self._tail(raw))

    def _run(self, run: SampleRun) -> str:
        if run.fields is not None or None in run.raws or not len(run):
            out: list[str] = []
            self._samples(run.lines(), out)
            return "".join(out)
        event, heads, tails = run.event, self._heads, self._tails
        if len(heads) >= _CACHE_LIMIT:
            heads.clear()
        if len(tails) >= _CACHE_LIMIT:
            tails.clear()
        tasks = list(zip(repeat(event), run.names(), run.pids, run.tids, run.cpus))
        for task in dict.fromkeys(tasks).keys() - heads.keys():
            self._head(*task)
        raws: list[bytes] = run.raws  # type: ignore[assignment]
        missing = list(dict.fromkeys(raws).keys() - tails.keys())
        ends = _strings(missing, '", "string": ', '", "string": null', "}\n", _json_string)
        tails.update(zip(missing, map("".join, zip(repeat(', "raw_hex": "'), map(bytes.hex, missing), ends)),
                         strict=True))
        return "".join(chain.from_iterable(zip(map(heads.__getitem__, tasks), map(str, run.times),
                                               map(tails.__getitem__, raws), strict=True)))


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
