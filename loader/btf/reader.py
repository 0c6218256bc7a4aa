"""Our own reader of BTF, the BPF Type Format: the ``.BTF`` section (header, type section, string
section) and the ``.BTF.ext`` section (func_info, line_info).

Layouts are the ones of include/uapi/linux/btf.h. The reader is lazy: opening a blob validates the
header and walks the type section once to learn where each type starts (the records have variable
length); a type is decoded only when asked for, and the references it holds are checked then.
Every defect of the input raises ``BtfError``; the object reader turns it into an ``ObjectError``.
"""

from __future__ import annotations

import mmap
import struct
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from enum import IntEnum

from evspec.span import Slotted

BTF_MAGIC = 0xEB9F
_HEADER_LEN = 24  # magic, version, flags, hdr_len, type_off, type_len, str_off, str_len
_EXT_HEADER_LEN = 24  # magic, version, flags, hdr_len, func_info_off/len, line_info_off/len


class BtfError(ValueError):
    """The BTF data is corrupt or refers to something that is not there."""


class BtfKind(IntEnum):
    UNKN = 0  # only type id 0, "void"
    INT = 1
    PTR = 2
    ARRAY = 3
    STRUCT = 4
    UNION = 5
    ENUM = 6
    FWD = 7
    TYPEDEF = 8
    VOLATILE = 9
    CONST = 10
    RESTRICT = 11
    FUNC = 12
    FUNC_PROTO = 13
    VAR = 14
    DATASEC = 15
    FLOAT = 16
    DECL_TAG = 17
    TYPE_TAG = 18
    ENUM64 = 19


# Bytes that follow the 12-byte common record, as (fixed, per vlen item).
_EXTRA: dict[int, tuple[int, int]] = {
    BtfKind.INT: (4, 0),
    BtfKind.PTR: (0, 0),
    BtfKind.ARRAY: (12, 0),
    BtfKind.STRUCT: (0, 12),
    BtfKind.UNION: (0, 12),
    BtfKind.ENUM: (0, 8),
    BtfKind.FWD: (0, 0),
    BtfKind.TYPEDEF: (0, 0),
    BtfKind.VOLATILE: (0, 0),
    BtfKind.CONST: (0, 0),
    BtfKind.RESTRICT: (0, 0),
    BtfKind.FUNC: (0, 0),
    BtfKind.FUNC_PROTO: (0, 8),
    BtfKind.VAR: (4, 0),
    BtfKind.DATASEC: (0, 12),
    BtfKind.FLOAT: (0, 0),
    BtfKind.DECL_TAG: (4, 0),
    BtfKind.TYPE_TAG: (0, 0),
    BtfKind.ENUM64: (0, 12),
}

_HOST_ORDER = "<" if sys.byteorder == "little" else ">"
# _EXTRA in 32-bit words, the 3-word common record included, by kind number (None: unknown kind).
_WORDS_FIXED: tuple[int | None, ...] = tuple(
    3 + _EXTRA[k][0] // 4 if k in _EXTRA and k != BtfKind.UNKN else None for k in range(32))
_WORDS_PER_ITEM: tuple[int, ...] = tuple(_EXTRA[k][1] // 4 if k in _EXTRA else 0 for k in range(32))

# Kinds whose third word is a size; all others (but FWD) use it as a type reference.
_SIZED = frozenset({BtfKind.INT, BtfKind.STRUCT, BtfKind.UNION, BtfKind.ENUM, BtfKind.FLOAT,
                    BtfKind.DATASEC, BtfKind.ENUM64})
_REFERRING = frozenset({BtfKind.PTR, BtfKind.TYPEDEF, BtfKind.VOLATILE, BtfKind.CONST,
                        BtfKind.RESTRICT, BtfKind.FUNC, BtfKind.FUNC_PROTO, BtfKind.VAR,
                        BtfKind.DECL_TAG, BtfKind.TYPE_TAG})
# Qualifiers and aliases that resolve() looks through.
_TRANSPARENT = frozenset({BtfKind.TYPEDEF, BtfKind.VOLATILE, BtfKind.CONST, BtfKind.RESTRICT,
                          BtfKind.TYPE_TAG})

INT_SIGNED = 1
INT_CHAR = 2
INT_BOOL = 4
VAR_STATIC, VAR_GLOBAL_ALLOCATED, VAR_GLOBAL_EXTERN = 0, 1, 2
FUNC_STATIC, FUNC_GLOBAL = 0, 1  # a FUNC's linkage, kept in its vlen
POINTER_SIZE = 8  # BPF is a 64-bit target
# How deep types may nest (members in structs, elements in arrays): the kernel's and libbpf's
# MAX_RESOLVE_DEPTH, past which they refuse BTF; deeper in a blob, a type contains itself.
MAX_NESTING = 32


class BtfMember(Slotted):
    """A member of a STRUCT or UNION."""

    name: str
    type: int
    bit_offset: int
    bitfield_size: int = 0  # non-zero only for bitfields of a kind_flag struct


class BtfParam(Slotted):
    name: str
    type: int


class BtfEnumerator(Slotted):
    name: str
    value: int


class BtfArray(Slotted):
    type: int  # element type
    index_type: int
    nelems: int


class BtfVarSecinfo(Slotted):
    """One variable of a DATASEC: its VAR type id, offset and size inside the section."""

    type: int
    offset: int
    size: int


class BtfType(Slotted):
    id: int
    kind: BtfKind
    name: str
    vlen: int
    kind_flag: bool
    size: int = 0  # INT STRUCT UNION ENUM ENUM64 FLOAT DATASEC
    type: int = 0  # referenced type id: PTR TYPEDEF qualifiers FUNC FUNC_PROTO(return) VAR DECL_TAG
    int_encoding: int = 0  # INT: INT_SIGNED | INT_CHAR | INT_BOOL
    int_offset: int = 0
    int_bits: int = 0
    array: BtfArray | None = None
    members: tuple[BtfMember, ...] = ()
    params: tuple[BtfParam, ...] = ()
    enumerators: tuple[BtfEnumerator, ...] = ()
    secinfos: tuple[BtfVarSecinfo, ...] = ()
    linkage: int = 0  # VAR: VAR_*; FUNC: static/global/extern (from vlen)
    component_idx: int = -1  # DECL_TAG: member/parameter index, -1 for the whole declaration


VOID = BtfType(id=0, kind=BtfKind.UNKN, name="void", vlen=0, kind_flag=False)


def _byte_order(data: bytes, what: str) -> str:
    if len(data) < 2:
        raise BtfError(f"{what} is too short for its magic number ({len(data)} bytes)")
    if data[0] == 0x9F and data[1] == 0xEB:
        return "<"
    if data[0] == 0xEB and data[1] == 0x9F:
        return ">"
    raise BtfError(f"{what} has a bad magic number 0x{data[0]:02x}{data[1]:02x} (expected 0xeb9f)")


def _area(total: int, offset: int, length: int, what: str) -> None:
    if offset + length > total:
        raise BtfError(f"{what} ({offset}..{offset + length}) extends past the end of the data "
                       f"({total} bytes)")


def _header(data: bytes, what: str, min_len: int, areas: tuple[str, str]) -> tuple[str, int, tuple[int, ...]]:
    """Check the header shared by ``.BTF`` and ``.BTF.ext`` (magic, version, flags, hdr_len, then
    the offset and length of two ``areas`` of the body); its byte order, its length and the areas'
    offsets and lengths."""
    order = _byte_order(data, what)
    if len(data) < min_len:
        raise BtfError(f"{what} is truncated: {len(data)} bytes, the header alone needs {min_len}")
    _magic, version, _flags, hdr_len, *offsets = struct.unpack_from(order + "HBBIIIII", data, 0)
    if version != 1:
        raise BtfError(f"unsupported {what} version {version} (expected 1)")
    if hdr_len < min_len or hdr_len > len(data):
        raise BtfError(f"bad {what} header length {hdr_len}")
    body = len(data) - hdr_len
    _area(body, offsets[0], offsets[1], f"the {what} {areas[0]}")
    _area(body, offsets[2], offsets[3], f"the {what} {areas[1]}")
    return order, hdr_len, tuple(offsets)


class Btf:
    """A parsed ``.BTF`` blob. Type ids start at 1; id 0 is ``void``.

    A split BTF (a kernel module's, ``/sys/kernel/btf/MOD``) is parsed on top of its ``base``
    (vmlinux's): its own types take the ids after the base's last one (the first is
    ``len(base)``), and its string offsets continue after the base's strings (an offset below
    the base's string section is the base's string). Types and strings are then looked up across
    both; the methods that speak of the blob's records (``starts``, ``name_offsets``,
    ``raw_type``, ``string_section``) mean its own.
    """

    __slots__ = ("_data", "_order", "_types_at", "_str_at", "_str_len", "_offsets", "_cache",
                 "_names", "_common", "_strings", "_type_end", "_name_offs", "_ids_by_name_off",
                 "_base", "_shift", "_str_base", "_count")

    def __init__(self, data: bytes | mmap.mmap, starts: Sequence[int] | None = None, base: Btf | None = None) -> None:
        """``data``: the blob, or a read-only mapping of it (the kernel's, not copied). ``starts``:
        where each type record starts, as ``starts`` of a ``Btf`` of the same data gave them (a
        stored index, see ``name_index``); checked against the data, not trusted. ``base``: the BTF
        this one is split from. (The string section is checked to end with a NUL, so every string
        ends before it: ``find`` below cannot miss.)"""
        self._data = data if isinstance(data, (bytes, mmap.mmap)) else bytes(data)
        self._order, hdr_len, (type_off, type_len, str_off, str_len) = _header(
            self._data, "BTF", _HEADER_LEN, ("type section", "string section"))
        if type_off % 4:
            raise BtfError(f"the BTF type section is not 4-byte aligned (offset {type_off})")
        if base is not None and base.byte_order != self._order:
            raise BtfError("the split BTF and its base have different byte orders")
        if base is None and (str_len == 0 or self._data[hdr_len + str_off] != 0):
            raise BtfError("the BTF string section does not start with an empty string (a split BTF, "
                           "a kernel module's, is read on top of its base BTF)")
        if str_len and self._data[hdr_len + str_off + str_len - 1] != 0:
            raise BtfError("the BTF string section does not end with a NUL byte")
        self._base = base
        self._shift = 0 if base is None else len(base) - 1  # own record i is type id i + _shift
        self._str_base = 0 if base is None else base._str_base + base._str_len
        self._types_at = hdr_len + type_off
        self._type_end = self._types_at + type_len
        self._str_at = hdr_len + str_off
        self._str_len = str_len
        self._common = struct.Struct(self._order + "III")
        self._name_offs: bytes | None = None  # every own type's name offset, 4 bytes each
        self._ids_by_name_off: dict[int, list[int]] | None = None  # the same, inverted (built on demand)
        self._offsets = self._index(type_len) if starts is None else self._given_index(starts, type_len)
        self._count = self._shift + len(self._offsets)  # every id, void's and the base's included
        self._cache: dict[int, BtfType] = {}
        self._names: dict[str, list[int]] | None = None
        self._strings: dict[int, str] = {}
        if base is not None:
            self._check_split_names()

    def _check_split_names(self) -> None:
        """Refuse a split BTF whose type names lie beyond its base's and its own strings: it was
        split from another base (names are checked here, other strings and references when a
        type is decoded)."""
        names = self.name_offsets()
        end = self._str_base + self._str_len
        if len(names) > 1 and max(names) >= end:
            index = next(i for i, off in enumerate(names) if off >= end)
            raise BtfError(
                f"split BTF type {index + self._shift} is named at string offset {names[index]}, past the "
                f"{self._str_base} bytes of its base's strings and its own {self._str_len}: the blob does "
                "not fit this base (it was split from another one)")

    @property
    def base(self) -> Btf | None:
        """The BTF this one is split from, or None."""
        return self._base

    @property
    def first_id(self) -> int:
        """The id of the blob's first own type: 1, or ``len(base)`` for a split BTF."""
        return self._shift + 1

    @property
    def strings_start(self) -> int:
        """The string offset of the blob's own string section (0, or past the base's strings)."""
        return self._str_base

    def _at(self, index: int) -> int:
        """Where own record ``index`` (type id ``index + _shift``) starts in the blob."""
        return self._types_at + 4 * self._offsets[index]

    def _own(self, type_id: int) -> int:
        """The own record index of ``type_id``; ``BtfError`` when it is no type of this blob."""
        index = type_id - self._shift
        if not 0 < index < len(self._offsets):
            first = self._shift + 1
            raise BtfError(f"BTF type id {type_id} is out of range ({first}..{first + len(self._offsets) - 2})")
        return index

    def _index(self, type_len: int) -> tuple[int, ...]:
        """Where each type record starts, in 32-bit words from the start of the type section
        (index 0 is a placeholder for void)."""
        fast = self._index_fast(type_len)
        return fast if fast is not None else self._index_checked(type_len)

    def _index_fast(self, type_len: int) -> tuple[int, ...] | None:
        """The index of a well-formed blob in the host's byte order, read as 32-bit words (a
        kernel's 126k types in ~45 ms instead of ~175 ms); None when it is not well-formed."""
        if self._order != _HOST_ORDER or type_len % 4:
            return None
        words = memoryview(self._data)[self._types_at:self._type_end].cast("I")
        fixed, per_item = _WORDS_FIXED, _WORDS_PER_ITEM
        starts: list[int] = [0]
        append = starts.append
        steps: dict[int, int] = {}  # record length by info word: most types share a few
        i, n = 0, len(words)
        try:
            while i < n:
                append(i)
                info = words[i + 1]
                step = steps.get(info)
                if step is None:
                    kind = (info >> 24) & 0x1F
                    words_fixed = fixed[kind]
                    if words_fixed is None:  # an unknown kind, which _index_checked names
                        return None
                    step = steps[info] = words_fixed + per_item[kind] * (info & 0xFFFF)
                i += step
        except IndexError:  # a record's info word past the type section: truncated
            return None
        if i != n:
            return None
        self._name_offs = array("I", [0, *[words[w] for w in starts[1:]]]).tobytes()
        return tuple(starts)

    def _index_checked(self, type_len: int) -> tuple[int, ...]:
        offsets = [0]
        pos, end = self._types_at, self._types_at + type_len
        unpack = self._common.unpack_from
        while pos < end:
            if pos + 12 > end:
                raise BtfError(f"BTF type {len(offsets) + self._shift} is truncated at byte "
                               f"{pos - self._types_at} of the type section")
            _name_off, info, _size = unpack(self._data, pos)
            kind = (info >> 24) & 0x1F
            extra = _EXTRA.get(kind)
            if extra is None or kind == BtfKind.UNKN:
                raise BtfError(f"BTF type {len(offsets) + self._shift} has unknown kind {kind}")
            offsets.append((pos - self._types_at) // 4)
            pos += 12 + extra[0] + extra[1] * (info & 0xFFFF)
        if pos != end:
            raise BtfError(f"the last BTF type (id {len(offsets) - 1 + self._shift}) runs past the type section")
        return tuple(offsets)

    def _given_index(self, starts: Sequence[int], type_len: int) -> Sequence[int]:
        """``starts`` if it fits this blob: void's placeholder, the first record at 0, increasing
        ends (the last record ending where the type section does); ``BtfError`` otherwise."""
        words = type_len // 4
        if type_len % 4 or not starts or starts[0] != 0 or (len(starts) > 1 and starts[1] != 0):
            raise BtfError("the given index of the BTF type records does not fit the type section")
        if len(starts) > 1:
            last = starts[-1]
            if last >= words:
                raise BtfError("the given index of the BTF type records runs past the type section")
            info = self._common.unpack_from(self._data, self._types_at + 4 * last)[1]
            kind = (info >> 24) & 0x1F
            fixed = _WORDS_FIXED[kind]
            if fixed is None or last + fixed + _WORDS_PER_ITEM[kind] * (info & 0xFFFF) != words:
                raise BtfError("the given index of the BTF type records does not end with the type section")
        elif words:
            raise BtfError("the given index of the BTF type records holds no type")
        return starts

    @property
    def starts(self) -> Sequence[int]:
        """Where each type record starts, in 32-bit words from the start of the type section
        (index 0 stands for void), for ``Btf(data, starts=...)``."""
        return self._offsets

    def name_offsets(self) -> Sequence[int]:
        """Every own type's name offset (0 for anonymous types), entry i for type id ``i +
        first_id - 1`` (entry 0 stands for void); by id for a BTF that is not split."""
        if self._name_offs is None:
            unpack = self._common.unpack_from
            names = [unpack(self._data, self._at(i))[0] for i in range(1, len(self._offsets))]
            self._name_offs = array("I", [0, *names]).tobytes()
        return memoryview(self._name_offs).cast("I")

    def name_offset(self, type_id: int) -> int:
        """The name offset of type ``type_id`` (no decoding)."""
        if type_id < self.first_id and self._base is not None:
            return self._base.name_offset(type_id)
        pos = self._at(self._own(type_id))
        return self._common.unpack_from(self._data, pos)[0]  # type: ignore[no-any-return]

    def _outside(self, offset: int) -> BtfError:
        if self._base is None:
            return BtfError(f"BTF string offset {offset} is outside the string section ({self._str_len} bytes)")
        return BtfError(f"BTF string offset {offset} is outside the strings of the split BTF and its base "
                        f"({self._str_base} bytes in the base, {self._str_len} of its own)")

    def raw_string(self, offset: int) -> bytes:
        """The bytes of the string at ``offset``, undecoded."""
        if offset < self._str_base:
            assert self._base is not None
            return self._base.raw_string(offset)
        local = offset - self._str_base
        if local >= self._str_len:
            raise self._outside(offset)
        start = self._str_at + local
        return self._data[start:self._data.find(b"\0", start, self._str_at + self._str_len)]

    # -- strings -----------------------------------------------------------------------------

    def string(self, offset: int) -> str:
        cached = self._strings.get(offset)
        if cached is not None:
            return cached
        if offset < self._str_base:
            assert self._base is not None
            return self._base.string(offset)
        local = offset - self._str_base
        if local >= self._str_len:
            raise self._outside(offset)
        start = self._str_at + local
        end = self._data.find(b"\0", start, self._str_at + self._str_len)
        try:
            text = self._data[start:end].decode()
        except UnicodeDecodeError as exc:
            raise BtfError(f"BTF string at offset {offset} is not valid UTF-8") from exc
        self._strings[offset] = text
        return text

    # -- types -------------------------------------------------------------------------------

    def __len__(self) -> int:
        """The number of type ids, void (and a split BTF's base) included: valid ids are 0 .. len-1."""
        return self._count

    def _ref(self, type_id: int, referrer: int) -> int:
        if type_id >= self._count:
            raise BtfError(f"BTF type {referrer} refers to type {type_id}, but the last type id "
                           f"is {self._count - 1}")
        return type_id

    def type(self, type_id: int) -> BtfType:
        cached = self._cache.get(type_id)
        if cached is not None:
            return cached
        if type_id == 0:
            return VOID
        if 0 < type_id <= self._shift:
            assert self._base is not None
            return self._base.type(type_id)
        cached = self._decode(type_id)
        self._cache[type_id] = cached
        return cached

    def types(self) -> Iterator[BtfType]:
        """Every type but void, by id (a split BTF's base's first)."""
        for type_id in range(1, len(self)):
            yield self.type(type_id)

    def _decode(self, tid: int) -> BtfType:
        o, d = self._order, self._data
        pos = self._at(self._own(tid))
        name_off, info, word = self._common.unpack_from(d, pos)
        kind = BtfKind((info >> 24) & 0x1F)
        vlen = info & 0xFFFF
        flag = bool(info >> 31)
        name = self.string(name_off)
        pos += 12
        base = {"id": tid, "kind": kind, "name": name, "vlen": vlen, "kind_flag": flag}
        if kind in _SIZED:
            base["size"] = word
        elif kind in _REFERRING:
            base["type"] = self._ref(word, tid)
        if kind == BtfKind.INT:
            (enc,) = struct.unpack_from(o + "I", d, pos)
            bits = enc & 0xFF
            if bits > 128 or bits > word * 8:
                raise BtfError(f"BTF INT {tid} has {bits} bits in {word} bytes")
            return BtfType(**base, int_encoding=(enc >> 24) & 0xF, int_offset=(enc >> 16) & 0xFF,
                           int_bits=bits)
        if kind == BtfKind.ARRAY:
            elem, index, nelems = struct.unpack_from(o + "III", d, pos)
            return BtfType(**base, array=BtfArray(self._ref(elem, tid), self._ref(index, tid), nelems))
        if kind in (BtfKind.STRUCT, BtfKind.UNION):
            members = []
            for name_off_m, mtype, moff in struct.iter_unpack(o + "III", d[pos:pos + 12 * vlen]):
                bit_off, bf = (moff & 0xFFFFFF, moff >> 24) if flag else (moff, 0)
                members.append(BtfMember(self.string(name_off_m), self._ref(mtype, tid), bit_off, bf))
            return BtfType(**base, members=tuple(members))
        if kind == BtfKind.ENUM:
            fmt = o + ("Ii" if flag else "II")  # kind_flag marks a signed enum
            values = tuple(BtfEnumerator(self.string(n), v)
                           for n, v in struct.iter_unpack(fmt, d[pos:pos + 8 * vlen]))
            return BtfType(**base, enumerators=values)
        if kind == BtfKind.ENUM64:
            values = tuple(BtfEnumerator(self.string(n), _enum64(lo, hi, flag))
                           for n, lo, hi in struct.iter_unpack(o + "III", d[pos:pos + 12 * vlen]))
            return BtfType(**base, enumerators=values)
        if kind == BtfKind.FUNC_PROTO:
            params = tuple(BtfParam(self.string(n), self._ref(t, tid))
                           for n, t in struct.iter_unpack(o + "II", d[pos:pos + 8 * vlen]))
            return BtfType(**base, params=params)
        if kind == BtfKind.VAR:
            (linkage,) = struct.unpack_from(o + "I", d, pos)
            return BtfType(**base, linkage=linkage)
        if kind == BtfKind.DATASEC:
            infos = tuple(BtfVarSecinfo(self._ref(t, tid), off, size)
                          for t, off, size in struct.iter_unpack(o + "III", d[pos:pos + 12 * vlen]))
            return BtfType(**base, secinfos=infos)
        if kind == BtfKind.DECL_TAG:
            (component,) = struct.unpack_from(o + "i", d, pos)
            return BtfType(**base, component_idx=component)
        if kind == BtfKind.FUNC:
            return BtfType(**base, linkage=vlen)
        return BtfType(**base)

    # -- raw records -------------------------------------------------------------------------

    @property
    def byte_order(self) -> str:
        """``"<"`` or ``">"``: the byte order of the blob (a struct format prefix)."""
        return self._order

    def raw_type(self, type_id: int) -> RawType:
        """Own type ``type_id`` as stored, for code that rewrites BTF (ids first_id .. len-1)."""
        index = self._own(type_id)
        pos = self._at(index)
        end = self._at(index + 1) if index + 1 < len(self._offsets) else self._type_end
        name_off, info, word = self._common.unpack_from(self._data, pos)
        return RawType(name_off, info, word, self._data[pos + 12:end])

    def string_section(self) -> bytes:
        """The blob's own string section (a split BTF's offsets into it start at ``strings_start``)."""
        return self._data[self._str_at:self._str_at + self._str_len]

    # -- lookups -----------------------------------------------------------------------------

    def find(self, name: str, kind: BtfKind | None = None) -> BtfType | None:
        """The first type with this name (and kind, if given): a split BTF's base's first."""
        if self._base is not None:
            found = self._base.find(name, kind)
            if found is not None:
                return found
        if self._names is None:
            names: dict[str, list[int]] = {}
            unpack = self._common.unpack_from
            for i in range(1, len(self._offsets)):
                name_off = unpack(self._data, self._at(i))[0]
                if name_off:
                    names.setdefault(self.string(name_off), []).append(i + self._shift)
            self._names = names
        for tid in self._names.get(name, ()):
            t = self.type(tid)
            if kind is None or t.kind == kind:
                return t
        return None

    def ids_named_at(self, name_offsets: Iterable[int]) -> list[int]:
        """The ids of the own types whose name is the string at one of ``name_offsets``, in id
        order; searched in a table of the types' name offsets, so that no type is decoded."""
        self.name_offsets()
        assert self._name_offs is not None
        table = self._name_offs
        wanted = set(name_offsets)
        wanted.discard(0)
        if len(wanted) > 16:  # many offsets (a common tail, 'file'): every type by name, built once
            if self._ids_by_name_off is None:
                by_off: dict[int, list[int]] = {}
                for i, off in enumerate(memoryview(table).cast("I")):
                    by_off.setdefault(off, []).append(i + self._shift)
                self._ids_by_name_off = by_off
            return sorted(tid for off in wanted for tid in self._ids_by_name_off.get(off, ()))
        found: set[int] = set()
        for name_off in wanted:
            needle = struct.pack("=I", name_off)
            pos = table.find(needle)
            while pos >= 0:
                if pos % 4 == 0:
                    found.add(pos // 4 + self._shift)
                pos = table.find(needle, pos + 1)
        return sorted(found)

    def resolve(self, type_id: int) -> BtfType:
        """The type behind typedefs and qualifiers (const, volatile, restrict, type tags)."""
        t = self.type(type_id)
        for _ in range(self._count):
            if t.kind not in _TRANSPARENT:
                return t
            t = self.type(t.type)
        raise BtfError(f"loop in the BTF type chain starting at type {type_id}")

    def size_of(self, type_id: int) -> int:
        """The size in bytes of a type, as the compiler laid it out."""
        multiplier = 1
        tid = type_id
        for _ in range(self._count + 1):
            t = self.type(tid)
            if t.kind in _SIZED:
                return multiplier * t.size
            if t.kind == BtfKind.PTR:
                return multiplier * POINTER_SIZE
            if t.kind == BtfKind.ARRAY:
                assert t.array is not None
                multiplier *= t.array.nelems
                tid = t.array.type
            elif t.kind in _TRANSPARENT or t.kind == BtfKind.VAR:
                tid = t.type
            else:
                what = "void" if tid == 0 else f"type {tid} ({t.kind.name} {t.name!r})"
                raise BtfError(f"BTF type {type_id} has no size: it is or contains {what}")
        raise BtfError(f"loop in the BTF type chain starting at type {type_id}")


# -- raw records and the writer ------------------------------------------------------------------


def type_info(kind: int, vlen: int = 0, kind_flag: bool = False) -> int:
    """The ``info`` word of a type record: kind_flag (bit 31), kind (bits 24-28), vlen (bits 0-15)."""
    return (int(kind_flag) << 31) | ((kind & 0x1F) << 24) | (vlen & 0xFFFF)


class RawType(Slotted):
    """One type record as stored: the common 12 bytes and the kind-specific bytes after them."""

    name_off: int
    info: int
    word: int  # size_or_type: a size for sized kinds, a type id for referring ones
    extra: bytes = b""

    @property
    def kind(self) -> int:
        return (self.info >> 24) & 0x1F

    @property
    def vlen(self) -> int:
        return self.info & 0xFFFF

    @property
    def kind_flag(self) -> bool:
        return bool(self.info >> 31)

    def encode(self, order: str) -> bytes:
        expected = _EXTRA.get(self.kind)
        if expected is None or self.kind == BtfKind.UNKN:
            raise BtfError(f"cannot write a BTF type of unknown kind {self.kind}")
        fixed, per_item = expected
        if len(self.extra) != fixed + per_item * self.vlen:
            raise BtfError(f"a {BtfKind(self.kind).name} record with vlen {self.vlen} needs "
                           f"{fixed + per_item * self.vlen} bytes after its header, not {len(self.extra)}")
        return struct.pack(order + "III", self.name_off, self.info, self.word) + self.extra


def write_btf(types: Sequence[RawType], strings: bytes, order: str = "<") -> bytes:
    """A ``.BTF`` blob: header, the types (ids 1, 2, ...), then the string section.

    The layout is the one clang and the kernel write: a 24-byte header, the type section at
    offset 0 of the body and the strings right after it.
    """
    if not strings or strings[0] != 0 or strings[-1] != 0:
        raise BtfError("a BTF string section must start with an empty string and end with a NUL")
    body = b"".join(t.encode(order) for t in types)
    header = struct.pack(order + "HBBIIIII", BTF_MAGIC, 1, 0, _HEADER_LEN, 0, len(body), len(body),
                         len(strings))
    return header + body + strings


def _enum64(lo: int, hi: int, signed: bool) -> int:
    value = (hi << 32) | lo
    if signed and value >= 1 << 63:
        value -= 1 << 64
    return value


# -- .BTF.ext ------------------------------------------------------------------------------------


class FuncInfo(Slotted):
    insn_off: int  # byte offset of the function inside its ELF section
    type_id: int  # its BTF FUNC type


class LineRecord(Slotted):
    insn_off: int  # byte offset inside the ELF section
    file: str
    source_line: str
    line: int
    column: int
    file_name_off: int = 0  # the raw string offsets, for passing the record on to the kernel
    line_off: int = 0


#: enum bpf_core_relo_kind (include/uapi/linux/bpf.h), by number
CORE_RELO_KINDS: dict[int, str] = {
    0: "field_byte_offset", 1: "field_byte_size", 2: "field_exists", 3: "field_signed",
    4: "field_lshift_u64", 5: "field_rshift_u64", 6: "type_id_local", 7: "type_id_target",
    8: "type_exists", 9: "type_size", 10: "enumval_exists", 11: "enumval_value", 12: "type_matches",
}


class CoreRelo(Slotted):
    """One ``struct bpf_core_relo``: the instruction (byte offset in its ELF section), the local
    type, the access string (``0:1:2``) and the kind (CORE_RELO_KINDS; unknown numbers kept)."""

    insn_off: int
    type_id: int
    access: str
    kind: int
    access_off: int = 0  # the access string's offset in the .BTF strings, for passing the record on

    @property
    def kind_name(self) -> str:
        return CORE_RELO_KINDS.get(self.kind, f"kind {self.kind}")


class BtfExt:
    """A parsed ``.BTF.ext`` blob: per ELF section, its func_info, line_info and (when the header
    has room for it) core_relo records.

    Section names and strings live in the ``.BTF`` string section, hence the ``btf`` argument.
    Records are decoded per section, on request.
    """

    __slots__ = ("_data", "_order", "_btf", "_func", "_line", "_core")

    def __init__(self, data: bytes, btf: Btf) -> None:
        self._data = bytes(data)
        self._btf = btf
        self._order, hdr_len, (f_off, f_len, l_off, l_len) = _header(
            self._data, "BTF.ext", _EXT_HEADER_LEN, ("func_info area", "line_info area"))
        self._func = self._sections(hdr_len + f_off, f_len, 8, "func_info")
        self._line = self._sections(hdr_len + l_off, l_len, 16, "line_info")
        self._core: dict[str, tuple[int, int, int]] = {}
        if hdr_len >= _EXT_HEADER_LEN + 8:  # core_relo_off, core_relo_len
            c_off, c_len = struct.unpack_from(self._order + "II", self._data, _EXT_HEADER_LEN)
            _area(len(self._data) - hdr_len, c_off, c_len, "the BTF.ext core_relo area")
            self._core = self._sections(hdr_len + c_off, c_len, 16, "core_relo")

    def _sections(self, start: int, length: int, min_rec: int, what: str) -> dict[str, tuple[int, int, int]]:
        """Section name -> (offset of the first record, record count, record size)."""
        if length == 0:
            return {}
        if length < 4:
            raise BtfError(f"the BTF.ext {what} area is too short ({length} bytes)")
        o = self._order
        (rec_size,) = struct.unpack_from(o + "I", self._data, start)
        if rec_size < min_rec or rec_size % 4:
            raise BtfError(f"bad BTF.ext {what} record size {rec_size}")
        out: dict[str, tuple[int, int, int]] = {}
        pos, end = start + 4, start + length
        while pos < end:
            if pos + 8 > end:
                raise BtfError(f"truncated BTF.ext {what} section header")
            name_off, count = struct.unpack_from(o + "II", self._data, pos)
            pos += 8
            if count == 0 or pos + count * rec_size > end:
                raise BtfError(f"BTF.ext {what}: bad record count {count}")
            name = self._btf.string(name_off)
            if name in out:
                raise BtfError(f"BTF.ext {what}: section {name!r} is listed twice")
            out[name] = (pos, count, rec_size)
            pos += count * rec_size
        return out

    def func_info(self, section: str) -> tuple[FuncInfo, ...]:
        where = self._func.get(section)
        if where is None:
            return ()
        pos, count, size = where
        unpack = struct.Struct(self._order + "II").unpack_from
        out = []
        for i in range(count):
            off, tid = unpack(self._data, pos + i * size)
            if self._btf.type(tid).kind != BtfKind.FUNC:
                raise BtfError(f"BTF.ext func_info of {section!r} names type {tid}, which is no FUNC")
            out.append(FuncInfo(off, tid))
        return tuple(out)

    def line_info(self, section: str) -> tuple[LineRecord, ...]:
        where = self._line.get(section)
        if where is None:
            return ()
        pos, count, size = where
        unpack = struct.Struct(self._order + "IIII").unpack_from
        string = self._btf.string
        out = []
        for i in range(count):
            off, file_off, line_off, line_col = unpack(self._data, pos + i * size)
            out.append(LineRecord(off, string(file_off), string(line_off), line_col >> 10,
                                  line_col & 0x3FF, file_off, line_off))
        return tuple(out)

    def core_relos(self, section: str) -> tuple[CoreRelo, ...]:
        """The CO-RE relocation records of ``section``, in file order."""
        where = self._core.get(section)
        if where is None:
            return ()
        pos, count, size = where
        unpack = struct.Struct(self._order + "IIII").unpack_from
        out = []
        for i in range(count):
            off, tid, access_off, kind = unpack(self._data, pos + i * size)
            if not 0 < tid < len(self._btf):
                raise BtfError(f"BTF.ext core_relo of {section!r} names type {tid}, which does not exist")
            out.append(CoreRelo(off, tid, self._btf.string(access_off), kind, access_off))
        return tuple(out)

    @property
    def sections(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self._func, *self._line, *self._core]))


# where a bare type name of a term (map:NAME.type=event) is looked up, in order: event is struct event
RECORD_TYPE_KINDS = (BtfKind.STRUCT, BtfKind.UNION, BtfKind.TYPEDEF)


def find_record_type(btf: Btf, name: str) -> BtfType | None:
    """The struct, union or typedef called ``name``, in that order of preference."""
    for kind in RECORD_TYPE_KINDS:
        found = btf.find(name, kind)
        if found is not None:
            return found
    return None


def struct_names(btf: Btf) -> list[str]:
    return sorted({t.name for t in btf.types() if t.kind == BtfKind.STRUCT and t.name})
