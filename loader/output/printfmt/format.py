"""A compiled ``print fmt``: the format string cut into literal text and conversions, each with
its argument (libtraceevent's ``parse_args()``), and printed for one record as
``print_event_cache()`` prints it.

Conversions: ``%d %i %u %x %X %o`` with the flags ``# 0 -``, width, precision, ``*`` and a length
(``hh h l ll L z``: the value is cut to that C type, ``int`` by default, before printf sees it),
``%s`` (``args.Node.text``), ``%p`` and its letters (``pointers``); ``%%``. Any other conversion
letter (``%c``, and the flags ``+`` and space, which libtraceevent takes for letters) prints as
``>c<`` and takes no argument. A format libtraceevent cannot parse, or whose conversions want
more arguments than it has, prints as perf prints a FAILED event: ``[FAILED TO PARSE]`` and
`` name=value`` for each of the event's own fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evspec.loader.output.printfmt.args import LONG_SIZE, Field, Node, field_text, signed
from evspec.loader.output.printfmt.parse import FormatError, parse_print_fmt
from evspec.loader.output.printfmt.pointers import pointer_extent, pointer_text
from evspec.loader.output.printfmt.symbols import Resolver

from evspec.span import Slotted

TYPE_CHECKING = False
if TYPE_CHECKING:  # tracefs_format compiles its formats with this package: a type is all it lends here
    from evspec.loader.output.tracefs_format import TraceField

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}
_BITS = {-2: 8, -1: 16, 0: 32, 1: 8 * LONG_SIZE, 2: 64}


class Conversion(Slotted):
    """One ``%`` conversion: flags, width and precision as written (``*`` for an argument),
    libtraceevent's length count (-2 hh, -1 h, 0, 1 l, 2 ll), the letter (``p`` with its
    letters), and the argument that gives the ``*``."""

    flags: str
    width: str
    precision: str | None
    length: int
    letter: str
    star: Node | None = None


Piece = str | tuple[Conversion, Node]


def _c_printf(spec: str, value: str | int, star: int | None) -> str:
    """C's printf of one conversion, a ``*`` in it replaced by ``star``."""
    if star is not None:
        spec = spec.replace("*", str(star), 1)
    try:
        return spec % value
    except (ValueError, TypeError):  # a width or precision C would take and Python not
        return ""


def string_text(c: Conversion, text: str, star: int | None) -> str:
    """print_str_to_seq(): ``text`` through the conversion's flags, width and precision (C ignores
    ``0`` and ``#`` for strings)."""
    flags = c.flags.replace("0", "").replace("#", "")
    precision = f".{c.precision}" if c.precision is not None else ""
    return _c_printf(f"%{flags}{c.width}{precision}s", text, star)


def number_text(c: Conversion, value: int, star: int | None) -> str:
    """print_arg_number(): the value cut to its C type, then printf."""
    bits = _BITS[c.length]
    value &= (1 << bits) - 1
    letter = "d" if c.letter in "di" else c.letter
    if letter == "d":
        value = signed(value, bits)
    precision = f".{c.precision}" if c.precision is not None else ""
    flags = c.flags.replace("0", "") if c.precision is not None else c.flags  # C: a precision drops 0
    if "#" not in flags or value == 0 or letter not in "xXo":  # C writes no 0x before a zero
        return _c_printf(f"%{flags.replace('#', '')}{c.width}{precision}{letter}", value, star)
    digits = _c_printf(f"%{precision}{letter}", value, star if c.precision == "*" else None)
    prefix = "" if letter == "o" and digits.startswith("0") else "0" if letter == "o" else f"0{letter}"
    width = star if c.width == "*" and star is not None else int(c.width or 0)
    if "-" in c.flags:
        return (prefix + digits).ljust(width)
    if "0" in c.flags and c.precision is None:
        return prefix + digits.rjust(width - len(prefix), "0")
    return (prefix + digits).rjust(width)


def cut(fmt: str, args: Sequence[Node]) -> list[Piece]:
    """parse_args(): ``fmt`` cut into literal text and conversions with their arguments;
    ``FormatError`` when a conversion finds no argument left."""
    pieces: list[Piece] = []
    pending = list(args)
    literal: list[str] = []
    i = 0
    while i < len(fmt):
        ch = fmt[i]
        if ch == "\\" and i + 1 < len(fmt):
            literal.append(_ESCAPES.get(fmt[i + 1], fmt[i + 1]))
            i += 2
        elif ch != "%":
            literal.append(ch)
            i += 1
        elif fmt[i + 1 : i + 2] == "%":
            literal.append("%")
            i += 2
        else:
            if literal:
                pieces.append("".join(literal))
                literal = []
            i, piece = _conversion(fmt, i, pending)
            if piece:
                pieces.append(piece)
    if literal:
        pieces.append("".join(literal))
    return pieces


def _take(pending: list[Node]) -> Node:
    if not pending:
        raise FormatError("a conversion without an argument")
    return pending.pop(0)


def _conversion(fmt: str, at: int, pending: list[Node]) -> tuple[int, Piece]:
    """parse_arg_format() from the ``%`` at ``at``: (where the next piece starts, this piece)."""
    length = 0
    star: Node | None = None
    i = at + 1
    while i < len(fmt):
        ch = fmt[i]
        if ch == "h":
            length -= 1
        elif ch == "l":
            length += 1
        elif ch == "L":
            length = 2
        elif ch == "*":
            if star is not None:
                raise FormatError("a second '*' in one conversion")
            star = _take(pending)
        elif ch == "p":
            end = i + 1 + pointer_extent(fmt, i + 1)
            return end, (Conversion("", "", None, length, fmt[i:end], star), _take(pending))
        elif ch in "duixXos":
            if ch != "s" and not -2 <= length <= 2:
                raise FormatError(f"bad count ({length})")
            body = fmt[at + 1 : i]
            flags = body[: len(body) - len(body.lstrip("#0-"))]
            rest = "".join(c for c in body[len(flags):] if c not in "hlLzZ")
            width, dot, precision = rest.partition(".")
            return i + 1, (Conversion(flags, width, precision if dot else None, 0 if ch == "s" else length, ch, star),
                           _take(pending))
        elif ch not in "#.zZ-0123456789":
            return i + 1, f">{ch}<"
        i += 1
    return i, ""


class PrintFormat:
    """A compiled ``print fmt``; ``render(raw)`` is what perf script prints after ``EVENT: ``."""

    def __init__(self, pieces: Sequence[Piece], fallback: Sequence[Field] | None = None,
                 resolve: Resolver | None = None) -> None:
        self.pieces = tuple(pieces)
        self.fallback = tuple(fallback) if fallback is not None else None
        self.resolve = resolve  # kernel symbols for %pS, %ps, %pF, %pf

    @property
    def failed(self) -> bool:
        """Whether libtraceevent would have failed the event (perf prints its fallback)."""
        return self.fallback is not None

    @staticmethod
    def compile(print_fmt: str | None, fields: Sequence[TraceField], resolve: Resolver | None = None,
                printk: Mapping[int, str] | None = None) -> PrintFormat:
        """The printer of a format file's ``print fmt:`` text (what follows the colon) for an event
        of these ``fields``. ``resolve`` names kernel addresses (perf script resolves them with the
        machine's symbols); ``printk``: the kernel's printk formats by address (tracefs
        ``printk_formats``, or a capture's copy)."""
        own = [Field.of(f) for f in fields if not f.common]
        try:
            if print_fmt is None:
                raise FormatError("the format file has no print fmt")
            common = {f.name: Field.of(f) for f in fields if f.common}
            by_name = {f.name: f for f in own}
            fmt, args = parse_print_fmt(print_fmt, {**by_name, **common}, by_name, printk or {})
            return PrintFormat(cut(fmt, args), resolve=resolve)
        except FormatError:
            return PrintFormat((), own)

    def render(self, raw: bytes) -> str:
        if self.fallback is not None:
            return "[FAILED TO PARSE]" + "".join(f" {f.name}={field_text(f, raw)}" for f in self.fallback)
        out: list[str] = []
        for piece in self.pieces:
            if isinstance(piece, str):
                out.append(piece)
                continue
            c, node = piece
            star = signed(c.star.num(raw), 32) if c.star is not None else None
            if c.letter == "s":
                out.append(node.text(raw, lambda text, c=c, star=star: string_text(c, text, star)))  # type: ignore[misc]
            elif c.letter.startswith("p"):
                out.append(pointer_text(c.letter[1:], node, raw, star if star is not None else 1, self.resolve))
            else:
                out.append(number_text(c, node.num(raw), star))
        return "".join(out)
