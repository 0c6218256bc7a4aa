"""``record --dump-maps``: which maps are dumped, their entries decoded with the object's BTF, and
their text and JSON forms (the kernel side reads the bytes: RecordSession.read_maps).

Dumped by default: the hash, array, per-CPU and LRU maps of ``.maps``/``maps``; never the output
maps (perf event arrays, ring buffers, prog arrays); the global data maps only when named. Values
decode by their BTF type: integers (signed or not), bools, enums by name, structs and unions as
``{a=1, b=2}``, arrays, char arrays as strings; per-CPU values as a list by CPU; a map without
BTF key/value types in hex bytes.

A log2 histogram prints, in text mode, as the bcc / libbpf-tools ``print_log2_hist`` does. The
rule: an ARRAY map whose name contains ``hist``, of at most 64 entries, whose value is a 4- or
8-byte integer; entry i counts the values from 2**i to 2**(i+1) - 1 (entry 0: 0 and 1, as
libbpf-tools' ``log2l`` buckets them). One bar per non-empty slot.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence

from evspec.loader.btf.reader import (
    INT_BOOL,
    INT_CHAR,
    INT_SIGNED,
    MAX_NESTING,
    Btf,
    BtfError,
    BtfKind,
    BtfType,
)
from evspec.loader.errors import ObjectError
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec

from evspec.codes import bpf as codes
from evspec.span import Slotted

Decoded = int | bool | str | float | list["Decoded"] | dict[str, "Decoded"]


class Text(str):
    """A char array's contents (quoted in text; an enumerator or hex bytes are plain ``str``)."""

    __slots__ = ()


_DUMPED_TYPES = frozenset({MapType.HASH, MapType.ARRAY, MapType.PERCPU_HASH, MapType.PERCPU_ARRAY,
                           MapType.LRU_HASH, MapType.LRU_PERCPU_HASH})
_PER_CPU = frozenset({MapType.PERCPU_HASH, MapType.PERCPU_ARRAY, MapType.LRU_PERCPU_HASH})
_MAP_SECTIONS = (".maps", "maps")
HIST_MAX_SLOTS = 64
STARS = 40


class MapDump(Slotted):
    """One map's final contents, decoded; ``histogram`` when it is a log2 histogram."""

    name: str
    entries: tuple[tuple[Decoded, Decoded], ...]
    histogram: bool = False


def is_per_cpu(m: MapSpec) -> bool:
    return m.type in _PER_CPU


def per_cpu_stride(m: MapSpec) -> int:
    """The bytes of one CPU's value in a per-CPU lookup (the kernel rounds them up to 8)."""
    return (m.value_size + 7) // 8 * 8


def dumpable(m: MapSpec) -> bool:
    return m.type in _DUMPED_TYPES


def dumped_maps(spec: ObjectSpec, names: Sequence[str] | None) -> list[MapSpec]:
    """The maps of ``spec`` ``--dump-maps[=NAMES]`` prints: every dumpable map of ``.maps`` without
    names; with names, those of them (a global data map by its map or section name)."""
    if names is None:
        return [m for m in spec.maps if dumpable(m) and m.section in _MAP_SECTIONS]
    return [m for m in spec.maps if dumpable(m) and (m.name in names or
                                                      (m.section not in _MAP_SECTIONS and m.section in names))]


def unknown_names(specs: Sequence[ObjectSpec], names: Sequence[str]) -> list[str]:
    """The names of ``--dump-maps=NAMES`` that name no dumpable map of the objects."""
    known = {n for spec in specs for m in dumped_maps(spec, names) for n in (m.name, m.section)}
    return [n for n in names if n not in known]


def is_histogram(m: MapSpec, btf: Btf | None) -> bool:
    if m.type != MapType.ARRAY or "hist" not in m.name.lower() or m.max_entries > HIST_MAX_SLOTS:
        return False
    if m.value_size not in (4, 8):
        return False
    return btf is None or m.value_type_id is None or btf.resolve(m.value_type_id).kind == BtfKind.INT


def decode_map(spec: ObjectSpec, m: MapSpec, entries: Sequence[tuple[bytes, bytes]], cpus: int) -> MapDump:
    """``entries`` (key bytes, value bytes: for a per-CPU map ``cpus`` strides) decoded, by key;
    ``ObjectError`` when the object's BTF cannot decode them (the reader decodes only the types
    it needs, and the kernel may have refused the BTF)."""
    try:
        return _decode_map(spec, m, entries, cpus)
    except BtfError as exc:
        raise ObjectError(codes.CORRUPT_BTF, f"{spec.path}: map {m.name!r}: its entries cannot be decoded "
                          f"with the object's BTF: {exc}") from None


def _decode_map(spec: ObjectSpec, m: MapSpec, entries: Sequence[tuple[bytes, bytes]], cpus: int) -> MapDump:
    btf = Btf(spec.btf) if spec.btf else None
    typed = btf is not None and m.value_type_id is not None
    symbols = next((dict(layout.symbols) for layout in spec.layouts if layout.name == m.section), {})
    out: list[tuple[bytes, Decoded, Decoded]] = []
    for key, value in entries:
        k = _decode(btf, m.key_type_id, key) if typed and m.key_type_id is not None else _key_fallback(key, typed)
        if is_per_cpu(m):
            stride = per_cpu_stride(m)
            v: Decoded = [_value(btf, m, value[i * stride:i * stride + m.value_size], typed, symbols) for i in range(cpus)]
        else:
            v = _value(btf, m, value, typed, symbols)
        out.append((key, k, v))
    out.sort(key=lambda e: (len(e[0]), int.from_bytes(e[0], "little")))
    return MapDump(m.name, tuple((k, v) for _, k, v in out), is_histogram(m, btf))


def _key_fallback(key: bytes, typed: bool) -> Decoded:
    """A global data map's key (typed value, no key type) is its index; otherwise hex."""
    return int.from_bytes(key, "little") if typed and len(key) == 4 else _hex(key)


def _value(btf: Btf | None, m: MapSpec, raw: bytes, typed: bool, symbols: dict[str, int]) -> Decoded:
    if not typed or btf is None or m.value_type_id is None:
        return _hex(raw)
    t = btf.resolve(m.value_type_id)
    if t.kind == BtfKind.DATASEC:  # its offsets are the ELF symbols' (clang leaves them 0)
        out: dict[str, Decoded] = {}
        for info in t.secinfos:
            var = btf.type(info.type)
            at = symbols.get(var.name, info.offset)
            out[var.name] = _decode(btf, var.type, raw[at:at + info.size])
        return out
    return decode_type(btf, t, raw)


def _hex(raw: bytes) -> str:
    return " ".join(f"{b:02x}" for b in raw)


def _decode(btf: Btf | None, type_id: int | None, raw: bytes) -> Decoded:
    assert btf is not None and type_id is not None
    return decode_type(btf, btf.resolve(type_id), raw)


def decode_type(btf: Btf, t: BtfType, raw: bytes, depth: int = 0) -> Decoded:
    """``raw`` decoded as ``t`` (resolved): the decoder of --dump-maps and of typed output maps.
    ``depth``: how many structs and arrays hold ``t``; ``BtfError`` past ``MAX_NESTING``."""
    if depth > MAX_NESTING:
        raise BtfError(f"BTF type {t.id} ({t.kind.name} {t.name or '(anon)'}) is nested more than "
                       f"{MAX_NESTING} levels deep in the decoded type: a struct or array that holds itself")
    if t.kind == BtfKind.INT:
        value = int.from_bytes(raw[:t.size], "little", signed=bool(t.int_encoding & INT_SIGNED))
        return bool(value) if t.int_encoding & INT_BOOL else value
    if t.kind in (BtfKind.ENUM, BtfKind.ENUM64):
        value = int.from_bytes(raw[:t.size], "little", signed=t.kind_flag)
        return next((e.name for e in t.enumerators if e.value == value), value)
    if t.kind == BtfKind.PTR:
        return hex(int.from_bytes(raw[:8], "little"))
    if t.kind == BtfKind.FLOAT:
        if t.size not in (4, 8) or len(raw) < t.size:
            return _hex(raw)
        number: float = struct.unpack("<d" if t.size == 8 else "<f", raw[:t.size])[0]
        return number
    if t.kind == BtfKind.ARRAY and t.array is not None:
        element = btf.resolve(t.array.type)
        size = btf.size_of(t.array.type)
        if element.kind == BtfKind.INT and element.size == 1 and (element.int_encoding & INT_CHAR or element.name == "char"):
            return Text(raw[:t.array.nelems].split(b"\0", 1)[0].decode(errors="backslashreplace"))
        if t.array.nelems * max(size, 1) > len(raw):  # the bytes hold the whole array, unless the BTF lies
            raise BtfError(f"BTF array type {t.id} has {t.array.nelems} elements of {size} bytes, more "
                           f"than the {len(raw)} bytes that hold it")
        return [decode_type(btf, element, raw[i * size:(i + 1) * size], depth + 1) for i in range(t.array.nelems)]
    if t.kind in (BtfKind.STRUCT, BtfKind.UNION):
        return {m.name or f"#{i}": _member(btf, m.type, m.bit_offset, m.bitfield_size, raw, depth + 1)
                for i, m in enumerate(t.members)}
    return _hex(raw)


def _member(btf: Btf, type_id: int, bit_offset: int, bits: int, raw: bytes, depth: int) -> Decoded:
    if bits:
        whole = int.from_bytes(raw, "little")
        return (whole >> bit_offset) & ((1 << bits) - 1)
    start = bit_offset // 8
    return decode_type(btf, btf.resolve(type_id), raw[start:start + btf.size_of(type_id)], depth)


# -- text and JSON ------------------------------------------------------------------------------


def render_text(dump: MapDump) -> str:
    if dump.histogram:
        return render_log2_hist(dump)
    return "".join(f"{dump.name}[{value_text(k)}] = {value_text(v)}\n" for k, v in dump.entries)


def render_json(dump: MapDump) -> str:
    return "".join(json.dumps({"map": dump.name, "key": k, "value": v}) + "\n" for k, v in dump.entries)


def value_text(value: Decoded, *, quote_text: bool = True) -> str:
    """A decoded value in text: nested structs ``{a=1, b=2}``, arrays ``[1, 2]``, char arrays
    quoted (``quote_text``, as map dumps show them) or as they are (as tracepoint fields are)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={value_text(v, quote_text=quote_text)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(value_text(v, quote_text=quote_text) for v in value) + "]"
    if quote_text and isinstance(value, Text):
        return json.dumps(str(value))
    return str(value)


def render_log2_hist(dump: MapDump) -> str:
    """``print_log2_hist``'s layout: a header, then ``low -> high : count |stars|`` per slot."""
    counts = [(int(k), int(v)) for k, v in dump.entries if isinstance(k, int) and isinstance(v, int) and v]
    lines = [f"{dump.name}:"]
    if not counts:
        return f"{dump.name}: empty\n"
    top = max(v for _, v in counts)
    wide = max(i for i, _ in counts) > 32
    width = STARS // 2 if wide else STARS
    lines.append(f"{' ' * 15}{'value':<29} : count     distribution" if wide
                 else f"{' ' * 5}{'value':<19} : count     distribution")
    for slot, count in counts:
        low, high = (1 << (slot + 1)) >> 1, (1 << (slot + 1)) - 1
        if low == high:
            low -= 1
        stars = "*" * min(width, width * count // top)
        cells = f"{low:>20} -> {high:<20}" if wide else f"{low:>10} -> {high:<10}"
        lines.append(f"{cells} : {count:<8} |{stars:<{width}}|")
    return "\n".join(lines) + "\n"
