"""The arguments of a ``print fmt`` once parsed, and their evaluation on one record.

Each node mirrors a libtraceevent ``tep_print_arg``: ``num(raw)`` is ``eval_num_arg()`` (unsigned
64-bit arithmetic; ``^`` and anything it does not know evaluate to 0, as there), ``text(raw, put)``
is ``print_str_arg()`` (what ``%s`` prints; ``put`` applies the conversion's width and precision to
each string piece). ``Field`` is a format field with the flags libtraceevent derives from its
declaration.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping

from evspec.span import Slotted, value_field

TYPE_CHECKING = False
if TYPE_CHECKING:  # tracefs_format parses formats with this package: a type is all it lends here
    from evspec.loader.output.tracefs_format import TraceField

MASK = (1 << 64) - 1
LONG_SIZE = 8 if sys.maxsize > 2**32 else 4
_TYPE_SIZES = {"u8": 1, "u16": 2, "u32": 4, "u64": 8, "s8": 1, "s16": 2, "s32": 4, "s64": 8, "char": 1}
_KNOWN_FLAGS = {  # eval_flag(): the names some format files leave unexpanded
    "HI_SOFTIRQ": 0, "TIMER_SOFTIRQ": 1, "NET_TX_SOFTIRQ": 2, "NET_RX_SOFTIRQ": 3, "BLOCK_SOFTIRQ": 4,
    "IRQ_POLL_SOFTIRQ": 5, "TASKLET_SOFTIRQ": 6, "SCHED_SOFTIRQ": 7, "HRTIMER_SOFTIRQ": 8,
    "RCU_SOFTIRQ": 9, "HRTIMER_NORESTART": 0, "HRTIMER_RESTART": 1,
}
Put = Callable[[str], str]


def read_number(raw: bytes, offset: int, size: int) -> int:
    """tep_read_number(): 1, 2, 4 or 8 bytes, unsigned; 0 for another size or past the record."""
    if size not in (1, 2, 4, 8) or offset < 0 or offset + size > len(raw):
        return 0
    return int.from_bytes(raw[offset : offset + size], sys.byteorder)


def signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def c_string(data: bytes) -> str:
    end = data.find(b"\0")
    return (data if end < 0 else data[:end]).decode("latin-1")


def strtoull(word: str) -> int:
    """C's strtoull(word, NULL, 0): the leading number (0x hex, 0 octal, decimal), else 0."""
    word = word.lstrip()
    negative = word.startswith("-")
    word = word.lstrip("+-")
    digits = 0
    if word[:2].lower() == "0x" and word[2:3] and word[2] in "0123456789abcdefABCDEF":
        base, body = 16, word[2:]
    elif word.startswith("0"):
        base, body = 8, word
    else:
        base, body = 10, word
    allowed = "0123456789abcdef"[:base]
    for ch in body.lower():
        if ch not in allowed:
            break
        digits = digits * base + allowed.index(ch)
    return (-digits if negative else digits) & MASK


class Field(Slotted):
    """A format field with libtraceevent's flags (IS_ARRAY, IS_POINTER, IS_SIGNED, IS_STRING,
    IS_LONG, IS_DYNAMIC/IS_RELATIVE) and its element size."""

    name: str
    offset: int
    size: int
    is_array: bool
    is_pointer: bool
    is_signed: bool
    is_string: bool
    is_long: bool
    dynamic: str | None
    element_size: int

    @staticmethod
    def of(f: TraceField) -> Field:
        is_array = f.array_len is not None or f.dynamic is not None or "[" in f.type
        is_long = "long" in f.type
        is_string = is_array and any(t in f.type for t in ("char", "u8", "s8"))
        if not is_array:
            element = f.size
        elif f.dynamic is None and f.array_len:
            element = f.size // f.array_len
        elif f.dynamic is not None:  # type_size() of the word before the brackets
            element = _TYPE_SIZES.get(f.element_type.split()[-1] if f.element_type else "", 0)
        elif is_string:
            element = 1
        else:
            element = LONG_SIZE if is_long else 0
        return Field(f.name, f.offset, f.size, is_array, "*" in f.type, f.signed, is_string, is_long,
                     f.dynamic, element)

    def location(self, raw: bytes) -> tuple[int, int]:
        """(start, length) of a dynamic array's bytes in ``raw``."""
        word = read_number(raw, self.offset, 4)
        start, length = word & 0xFFFF, word >> 16
        if self.dynamic == "rel_loc":
            start += self.offset + self.size
        return start, length


def field_text(f: Field, raw: bytes) -> str:
    """tep_print_field(): one field's value in the ``[FAILED TO PARSE]`` fallback."""
    if f.is_array:
        start, length = (f.offset, f.size) if f.dynamic is None else f.location(raw)
        data = raw[start : start + length]
        text = data.split(b"\0", 1)[0]
        if f.is_string and all(0x20 <= b < 0x7F or b in b" \t\n\v\f\r" for b in text):
            return text.decode("latin-1")
        return "ARRAY[" + ", ".join(f"{b:02x}" for b in data) + "]"
    value = read_number(raw, f.offset, f.size)
    if f.is_pointer:
        return f"0x{value:x}"
    if f.is_signed:
        if f.size == 4:
            return f"0x{value:x}" if f.is_long else str(signed(value, 32))
        if f.size == 2:
            return f"{signed(value, 16):2d}"
        if f.size == 1:
            return str(signed(value, 8))
        return str(signed(value, 64))
    return f"0x{value:x}" if f.is_long else str(value)


# ---------------------------------------------------------------------------------------- nodes


class Node(Slotted):
    """An argument; ``tep_type`` is libtraceevent's enum tep_print_arg_type (some messages print it)."""

    tep_type = 0  # TEP_PRINT_NULL: the empty left side of a unary operator

    def num(self, raw: bytes) -> int:
        return 0

    def text(self, raw: bytes, put: Put) -> str:
        return ""


NULL = Node()


class Atom(Node):
    """A number, a string literal, or words (a type name, an enumerator)."""

    word: str
    tep_type = 1

    def num(self, raw: bytes) -> int:
        return strtoull(self.word)

    def text(self, raw: bytes, put: Put) -> str:
        return put(self.word)


class FieldRef(Node):
    """``REC->name``; ``printk``: the kernel's printk formats by address, which a pointer field
    printed with ``%s`` may point at."""

    field: Field
    printk: Mapping[int, str] = value_field(default_factory=dict, compare=False, repr=False)
    tep_type = 2

    def num(self, raw: bytes) -> int:
        return read_number(raw, self.field.offset, self.field.size)

    def text(self, raw: bytes, put: Put) -> str:
        f = self.field
        if not f.is_array and f.size == LONG_SIZE:  # taken for a pointer: a printk string, or hex
            address = read_number(raw, f.offset, f.size)
            found = self.printk.get(address)
            return found if found is not None else f"{address:x}"
        size = f.size or max(0, len(raw) - f.offset)  # zero-sized: the rest of the record
        return put(c_string(raw[f.offset : f.offset + size]))


def eval_type(value: int, type_: str, pointer: bool = False) -> int:
    """eval_type_str(): the few casts libtraceevent narrows (it never sign-extends)."""
    if pointer:
        return eval_type(value, type_[:-2], False) if type_.endswith("*") else value
    if type_.endswith("*") or type_.startswith("struct"):
        return value
    widths = {"u8": 0xFF, "s8": 0xFF, "u16": 0xFFFF, "s16": 0xFFFF, "u32": MASK >> 32, "s32": MASK >> 32}
    if type_ in widths:
        return value & widths[type_]
    base = type_.removeprefix("unsigned ")
    return value & {"char": 0xFF, "short": 0xFFFF, "int": MASK >> 32}.get(base, MASK)


class Cast(Node):
    type: str
    item: Node
    tep_type = 7

    def num(self, raw: bytes) -> int:
        return eval_type(self.item.num(raw), self.type)


def arith(op: str, left: int, right: int) -> int:
    """eval_num_arg()'s operators, on unsigned 64-bit values."""
    first, second = op[0], op[1:2]
    if first == "!":
        return int(not right) if not second else int(left != right)
    if first == "~":
        return ~right
    if first == "|":
        return int(bool(left or right)) if second else left | right
    if first == "&":
        return int(bool(left and right)) if second else left & right
    if first in "<>":
        if second == first:
            return left << (right & 63) if first == "<" else left >> (right & 63)
        if first == "<":
            return int(left <= right) if second == "=" else int(left < right)
        return int(left >= right) if second == "=" else int(left > right)
    if op == "==":
        return int(left == right)
    if first == "-":
        return left - right
    if first == "+":
        return left + right
    if first == "*":
        return left * right
    if first in "/%":
        if not right:
            return 0
        return left // right if first == "/" else left % right
    return 0  # libtraceevent warns of an unknown op ('^' among them) and takes 0


class Op(Node):
    """An operator: unary (``left`` is NULL), binary, ``?`` (``right`` is the ``:`` node) or ``[``."""

    op: str
    left: Node
    right: Node
    tep_type = 11

    def num(self, raw: bytes) -> int:
        if self.op == "[":
            return self._index(raw)
        if self.op == "?":
            branch = self.right
            if not isinstance(branch, Op):
                return 0
            return (branch.left if self.left.num(raw) else branch.right).num(raw)
        return arith(self.op, self.left.num(raw), self.right.num(raw)) & MASK

    def _index(self, raw: bytes) -> int:
        at = self.right.num(raw)
        base, cast = self.left, None
        while isinstance(base, Cast):
            cast = cast or base
            base = base.item
        if isinstance(base, DynamicArray):  # the data's offset, not made relative even for __rel_loc
            offset = (read_number(raw, base.field.offset, base.field.size) & 0xFFFF) + at
            size = base.field.element_size or LONG_SIZE
        elif isinstance(base, FieldRef):
            size = base.field.element_size
            offset = base.field.offset + at * size
        else:
            return 0  # libtraceevent: "all bets off", and '[' is no operator it evaluates
        value = read_number(raw, offset, size)
        return eval_type(value, cast.type, True) if cast is not None else value

    def text(self, raw: bytes, put: Put) -> str:
        if self.op != "?" or not isinstance(self.right, Op):  # the only operator %s prints
            return ""
        return (self.right.left if self.left.num(raw) else self.right.right).text(raw, put)


class DynamicArray(Node):
    """``__get_dynamic_array(field)``: as a number, where its data is in the record."""

    field: Field
    tep_type = 10

    def num(self, raw: bytes) -> int:
        return read_number(raw, self.field.offset, self.field.size) & 0xFFFF


class DynamicArrayLength(Node):
    field: Field
    tep_type = 14

    def num(self, raw: bytes) -> int:
        return read_number(raw, self.field.offset, self.field.size) >> 16


class String(Node):
    """``__get_str(name)``: the string a ``__data_loc``/``__rel_loc`` word points at."""

    field: Field | None
    tep_type = 8

    def text(self, raw: bytes, put: Put) -> str:
        if self.field is None:
            return ""
        start = read_number(raw, self.field.offset, 4) & 0xFFFF
        if self.field.dynamic == "rel_loc":
            start += self.field.offset + self.field.size
        return put(c_string(raw[start:]))


class Bitmask(Node):
    field: Field | None
    tep_type = 13

    def text(self, raw: bytes, put: Put) -> str:
        if self.field is None:
            return ""
        start, length = self.field.location(raw)
        return put(bitmask_text(raw[start : start + length]))


def bitmask_text(data: bytes) -> str:
    """print_bitmask_to_seq(): the bytes as one hex number, most significant 32-bit word first,
    the words joined by commas."""
    hexed = "".join(f"{b:02x}" for b in reversed(data))
    head = len(hexed) % 8 or 8
    parts = [hexed[:head]] + [hexed[i : i + 8] for i in range(head, len(hexed), 8)]
    return ",".join(p for p in parts if p)


def flag_value(word: str) -> int:
    """eval_flag(): a number, a known softirq or hrtimer name, else -1."""
    if word[:1].isdigit():
        return strtoull(word)
    return _KNOWN_FLAGS.get(word, -1)


class Flags(Node):
    value: Node
    delim: str | None
    flags: tuple[tuple[int, str], ...]
    tep_type = 3

    def text(self, raw: bytes, put: Put) -> str:
        value = self.value.num(raw)
        out: list[str] = []
        for flag, name in self.flags:
            if not value and flag < 0:
                out.append(put(name))
                break
            if flag > 0 and (value & flag) == flag:
                if out and self.delim:
                    out.append(self.delim)
                out.append(put(name))
                value &= ~flag
        if value:
            if out and self.delim:
                out.append(self.delim)
            out.append(f"0x{value:x}")
        return "".join(out)


class Symbols(Node):
    value: Node
    symbols: tuple[tuple[int, str], ...]
    tep_type = 4

    def text(self, raw: bytes, put: Put) -> str:
        value = self.value.num(raw)
        as_long_long = signed(value, 64)  # compared as C's long long, as eval_flag()'s -1 is
        for symbol, name in self.symbols:
            if as_long_long == symbol:
                return put(name)
        return f"0x{value:x}"


def array_start(node: Node, raw: bytes) -> int | None:
    """Where the bytes of a ``__print_hex``/``__print_array`` argument start."""
    if isinstance(node, DynamicArray):
        return read_number(raw, node.field.offset, node.field.size) & 0xFFFF
    if isinstance(node, FieldRef):
        return node.field.offset
    return None


class Hex(Node):
    data: Node
    length: Node
    spaced: bool  # __print_hex (bytes apart) or __print_hex_str

    @property
    def tep_type(self) -> int:  # type: ignore[override]
        return 5 if self.spaced else 15

    def text(self, raw: bytes, put: Put) -> str:
        start = array_start(self.data, raw)
        if start is None:
            return ""
        data = raw[start : start + max(0, signed(self.length.num(raw), 32))]
        return (" " if self.spaced else "").join(f"{b:02x}" for b in data)


class IntArray(Node):
    data: Node
    count: Node
    element_size: Node
    tep_type = 6

    def text(self, raw: bytes, put: Put) -> str:
        start = array_start(self.data, raw)
        if start is None:
            return ""
        size = signed(self.element_size.num(raw), 32)
        out = []
        for _ in range(max(0, signed(self.count.num(raw), 32))):
            if size in (1, 2, 4, 8):
                out.append(str(read_number(raw, start, size)))
            else:
                out.append(f"BAD SIZE:{size} 0x{read_number(raw, start, 1):x}")
                size = 1
            start += size
        return " ".join(out)
