"""Tracepoint record layouts from tracefs (``events/SYS/EVENT/format``) and the decoding of a
sample's raw data with them.

A format file lists the record's fields, one line each::

    field:char prev_comm[16];	offset:8;	size:16;	signed:0;
    field:__data_loc char[] filename;	offset:8;	size:4;	signed:0;
    field:const char * filename;	offset:24;	size:8;	signed:0;

The first block holds the ``common_*`` fields every record starts with; the event's own fields
follow. Numbers are decoded by ``size`` and ``signed`` (the declared type can be wider or
narrower: syscall arguments are 8-byte ``int`` fields); ``char`` arrays are NUL-terminated strings;
other arrays are lists of numbers; ``__data_loc`` (and the newer ``__rel_loc``) fields hold a 32-bit
word, ``length << 16 | offset``, pointing at the bytes of a variable-length array, the offset
counted from the record's start (``__rel_loc``: from the end of the field).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from evspec.loader.errors import ObjectError

from evspec.codes import kernel as codes
from evspec.span import Slotted

TRACEFS = Path("/sys/kernel/tracing")


class Address(int):
    """A pointer field's value: an int that prints in hex (JSON writes it as a plain number)."""

    __slots__ = ()

    def __str__(self) -> str:
        return f"{int(self):#x}"


FieldValue = int | str | tuple[int, ...]

_FIELD_LINE = re.compile(
    r"^\s*field:(?P<decl>[^;]+);\s*offset:(?P<offset>\d+);\s*size:(?P<size>\d+);"
    r"(?:\s*signed:(?P<signed>[01]);)?"
)
_DECL = re.compile(r"^(?P<type>.*?)\s*\b(?P<name>[A-Za-z_]\w*)\s*(?:\[(?P<len>[^\]]*)\])?\s*$")
_ELEMENT_SIZES = {
    "char": 1, "u8": 1, "s8": 1, "__u8": 1, "__s8": 1, "uint8_t": 1, "int8_t": 1, "bool": 1,
    "short": 2, "u16": 2, "s16": 2, "__u16": 2, "__s16": 2, "uint16_t": 2, "int16_t": 2,
    "int": 4, "unsigned": 4, "u32": 4, "s32": 4, "__u32": 4, "__s32": 4, "uint32_t": 4, "int32_t": 4,
    "long long": 8, "u64": 8, "s64": 8, "__u64": 8, "__s64": 8, "uint64_t": 8, "int64_t": 8,
    "long": 8 if sys.maxsize > 2**32 else 4,
}
_SIGNED_ELEMENTS = frozenset({"s8", "__s8", "int8_t", "signed char", "short", "s16", "__s16", "int16_t",
                              "int", "s32", "__s32", "int32_t", "long", "long long", "s64", "__s64",
                              "int64_t"})


class TraceField(Slotted):
    name: str
    type: str  # as declared, without the name and the array bounds ("char", "__data_loc char[]")
    offset: int
    size: int
    signed: bool
    array_len: int | None = None  # fixed arrays: the element count; None: a scalar or dynamic
    dynamic: str | None = None  # "data_loc" or "rel_loc"
    common: bool = False  # one of the common_* header fields

    @property
    def is_string(self) -> bool:
        is_array = self.array_len is not None or self.dynamic is not None
        return is_array and self.element_type.removeprefix("const ") == "char"

    @property
    def is_pointer(self) -> bool:
        return "*" in self.type and self.dynamic is None

    @property
    def element_type(self) -> str:
        base = self.type.removeprefix("__data_loc ").removeprefix("__rel_loc ")
        return base.removesuffix("[]").strip()

    @property
    def element_size(self) -> int:
        """The size of one element of an array field (1 when the element type is unknown)."""
        if self.array_len:
            return max(1, self.size // self.array_len)
        return _element_size(self.element_type)

    @property
    def element_signed(self) -> bool:
        """Fixed arrays: the format's ``signed`` is the element's; dynamic ones: from the type name."""
        if self.dynamic is None:
            return self.signed
        return self.element_type.removeprefix("const ") in _SIGNED_ELEMENTS


def _element_size(type_: str) -> int:
    base = type_.removeprefix("const ")
    return _ELEMENT_SIZES.get(base.removeprefix("unsigned ").removeprefix("signed ") if " " in base else base,
                              _ELEMENT_SIZES.get(base, 1))


class TraceFormat(Slotted):
    system: str
    event: str
    id: int | None
    fields: tuple[TraceField, ...]
    print_fmt: str | None = None  # what follows "print fmt:" (how perf script prints a record)

    @property
    def name(self) -> str:
        return f"{self.system}:{self.event}"

    @property
    def own_fields(self) -> tuple[TraceField, ...]:
        return tuple(f for f in self.fields if not f.common)

    def decode(self, raw: bytes, *, common: bool = False) -> dict[str, FieldValue]:
        """The fields of one record (the event's own ones, in order; ``common`` adds the header's).
        Fields the record is too short for are left out."""
        out: dict[str, FieldValue] = {}
        for f in self.fields:
            if f.common and not common:
                continue
            value = _decode_field(f, raw)
            if value is not None:
                out[f.name] = value
        return out


def _number(raw: bytes, offset: int, size: int, signed: bool) -> int:
    return int.from_bytes(raw[offset : offset + size], sys.byteorder, signed=signed)


def _array(f: TraceField, data: bytes) -> FieldValue:
    if f.is_string:
        end = data.find(b"\0")
        return (data if end < 0 else data[:end]).decode("utf-8", "replace")
    size = f.element_size
    if size not in (1, 2, 4, 8) or len(data) % size:
        size = 1
    signed = f.element_signed
    return tuple(_number(data, i, size, signed) for i in range(0, len(data) - size + 1, size))


def _decode_field(f: TraceField, raw: bytes) -> FieldValue | None:
    if f.offset + f.size > len(raw):
        return None
    if f.dynamic is not None:
        word = _number(raw, f.offset, 4, False)
        start, length = word & 0xFFFF, word >> 16
        if f.dynamic == "rel_loc":
            start += f.offset + f.size
        if start + length > len(raw):
            return None
        return _array(f, raw[start : start + length])
    if f.array_len is not None:
        return _array(f, raw[f.offset : f.offset + f.size])
    if f.size not in (1, 2, 4, 8):
        return tuple(raw[f.offset : f.offset + f.size])
    if f.is_pointer:
        return Address(_number(raw, f.offset, f.size, False))
    return _number(raw, f.offset, f.size, f.signed)


def _field(line: str, common: bool, where: str) -> TraceField:
    m = _FIELD_LINE.match(line)
    decl = _DECL.match(m.group("decl")) if m else None
    if m is None or decl is None:
        raise ObjectError(codes.TRACEPOINT_FORMAT, f"{where}: cannot read the field line {line.strip()!r}")
    type_ = decl.group("type").strip()
    size = int(m.group("size"))
    dynamic = None
    if type_.startswith("__data_loc "):
        dynamic = "data_loc"
    elif type_.startswith("__rel_loc "):
        dynamic = "rel_loc"
    array_len = None
    bound = decl.group("len")
    if bound is not None and dynamic is None:
        if bound.strip().isdigit():
            array_len = int(bound)
        else:  # a bound the kernel did not expand (a macro) or none: derive it from the size
            array_len = size // _element_size(type_)
    if dynamic is not None and not type_.endswith("]"):
        type_ += "[]"
    name = decl.group("name")
    return TraceField(
        name=name,
        type=type_,
        offset=int(m.group("offset")),
        size=size,
        signed=m.group("signed") == "1",
        array_len=array_len,
        dynamic=dynamic,
        common=common and name.startswith("common_"),
    )


def parse_format(text: str, system: str = "", event: str = "") -> TraceFormat:
    """A tracefs ``format`` file. Raises ``ObjectError`` (EK161) when a field line is malformed."""
    where = f"tracepoint {system}:{event} format" if system else "tracepoint format"
    fields: list[TraceField] = []
    event_id: int | None = None
    name = event
    in_fields = False
    common = True
    print_fmt = None
    for line in text.splitlines():
        if line.startswith("name:"):
            name = name or line.split(":", 1)[1].strip()
        elif line.startswith("ID:"):
            event_id = int(line.split(":", 1)[1])
        elif line.startswith("format:"):
            in_fields = True
        elif line.startswith("print fmt:"):  # to the end: its strings may hold newlines
            print_fmt = text[text.index("print fmt:") + len("print fmt:"):].strip()
            break
        elif in_fields and not line.strip():
            common = not fields  # the blank line after the common block
        elif in_fields:
            fields.append(_field(line, common, where))
    if not in_fields:
        raise ObjectError(codes.TRACEPOINT_FORMAT, f"{where}: no 'format:' section")
    return TraceFormat(system, name, event_id, tuple(fields), print_fmt)


def read_format(system: str, event: str, tracefs: Path = TRACEFS) -> TraceFormat:
    path = tracefs / "events" / system / event / "format"
    try:
        text = path.read_text()
    except OSError as exc:
        raise ObjectError(
            codes.TRACEPOINT_FORMAT, f"cannot read {path}: {exc.strerror or exc}",
            help=("mount tracefs (mount -t tracefs nodev /sys/kernel/tracing) and run as root",),
        ) from None
    return parse_format(text, system, event)


class TraceFields:
    """A tracepoint record's own fields, ``((name, value), ...)`` (``pairs``: what iterating and
    indexing give), and ``text``: the record as perf script prints it (its format's ``print fmt``).
    Each is made when first asked for: text output needs no pairs, JSON output no text."""

    __slots__ = ("_printer", "_raw", "_pairs", "_text")

    def __init__(self, printer: TracepointPrinter, raw: bytes) -> None:
        self._printer, self._raw = printer, raw
        self._pairs: tuple[tuple[str, FieldValue], ...] | None = None
        self._text: str | None = None

    @property
    def pairs(self) -> tuple[tuple[str, FieldValue], ...]:
        if self._pairs is None:
            self._pairs = tuple(self._printer.format.decode(self._raw).items())
        return self._pairs

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self._printer.printer.render(self._raw)
        return self._text

    def __iter__(self) -> Iterator[tuple[str, FieldValue]]:
        return iter(self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: slice) -> tuple[tuple[str, FieldValue], ...]:
        return self.pairs[index]

    def __eq__(self, other: object) -> bool:
        """Equal to the same pairs, a tuple of them included."""
        return self.pairs == (other.pairs if isinstance(other, TraceFields) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TraceFields({self.pairs!r})"


Resolver = Callable[[int], "tuple[str, int] | None"]


class TracepointPrinter:
    """A format with its compiled ``print fmt`` (``printfmt.PrintFormat``): ``fields(raw)``.
    ``resolve`` names kernel addresses, ``printk`` maps the kernel's printk strings by address."""

    def __init__(self, fmt: TraceFormat, resolve: Resolver | None = None, printk: Mapping[int, str] | None = None) -> None:
        from evspec.loader.output.printfmt import PrintFormat

        self.format = fmt
        self.printer = PrintFormat.compile(fmt.print_fmt, fmt.fields, resolve, printk)

    def fields(self, raw: bytes) -> TraceFields:
        return TraceFields(self, raw)


class TracepointDecoders:
    """The formats of the tracepoints a session samples, each read from tracefs once, on first use.

    ``fields(event, raw)`` is what a sample printer calls: the decoded own fields with the line
    perf script prints, or None when the event is no tracepoint or its format cannot be had (the
    reason goes to ``notes``).
    """

    def __init__(self, tracefs: Path = TRACEFS, resolve: Resolver | None = None) -> None:
        self.tracefs = tracefs
        self.notes: list[str] = []
        self.resolve = resolve
        self._formats: dict[str, TraceFormat | None] = {}
        self._printers: dict[str, TracepointPrinter | None] = {}
        self._printk: dict[int, str] | None = None

    @property
    def printk(self) -> dict[int, str]:
        """tracefs ``printk_formats``, read on first use (empty when it cannot be read)."""
        if self._printk is None:
            from evspec.loader.output.saved.perfdata import parse_printk_formats

            try:
                self._printk = parse_printk_formats((self.tracefs / "printk_formats").read_text())
            except OSError:
                self._printk = {}
        return self._printk

    def format(self, event: str) -> TraceFormat | None:
        """``event`` is ``SYS:EVENT`` (``SYS/EVENT`` works too)."""
        event = event.replace("/", ":")
        if event not in self._formats:
            system, sep, name = event.partition(":")
            found = None
            if sep and system and name and "*" not in event:
                try:
                    found = read_format(system, name, self.tracefs)
                except ObjectError as exc:
                    self.notes.append(f"{event}: samples printed undecoded: {exc.message}")
            self._formats[event] = found
        return self._formats[event]

    def fields(self, event: str, raw: bytes | None) -> TraceFields | None:
        if event not in self._printers:
            fmt = self.format(event)
            self._printers[event] = None if fmt is None else TracepointPrinter(fmt, self.resolve, self.printk)
        printer = self._printers[event]
        if printer is None or raw is None:
            return None
        return printer.fields(raw)
