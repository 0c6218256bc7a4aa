"""Typed output maps (COMPAT 1.14): ``map:NAME.type=TYPE`` decodes every record of a ring buffer
map, or every sample of the bpf-output events stored in a perf event array, as the BTF type TYPE
of the object (with ``map_dump``'s decoder: enums by name, char arrays as strings, nested structs).

A record's decoded fields are a ``TypedFields``: the ``(name, value)`` pairs of the type's members,
with the record's size and the type's, and the bytes past the type (``rest``). A record shorter
than the type (a variable tail) has the members that fit, a char array cut where the record ends
(with every NUL-separated string in it, separated by spaces: an argv as execsnoop sends it).
A bpf-output sample's padding (the kernel rounds its raw data up to 8 bytes with its u32 size) is
not part of the record (``decode_sample``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from evspec.loader.btf.reader import Btf, BtfKind, BtfType, find_record_type
from evspec.loader.object.map_dump import Decoded, Text, decode_type, value_text


class TypedFields(tuple):  # type: ignore[type-arg]
    """The decoded members of one record: ``((name, value), ...)``, plus ``size`` (the record's
    bytes), ``type_size`` and ``rest`` (the bytes past the type)."""

    size: int
    type_size: int
    rest: bytes

    def __new__(cls, items: Iterable[tuple[str, Decoded]], size: int, type_size: int, rest: bytes) -> TypedFields:
        self = super().__new__(cls, tuple(items))
        self.size, self.type_size, self.rest = size, type_size, rest
        return self

    @property
    def short(self) -> bool:
        return self.size < self.type_size


_TRIAL_BYTES = 1 << 16  # how much of a record of zeros a new decoder decodes, to find corrupt BTF first


class RecordDecoder:
    """The decoder of one typed map's records. ``BtfError`` when it is made, not at the first
    record, for a type its BTF cannot decode (a corrupt object or capture file)."""

    def __init__(self, btf: Btf, t: BtfType) -> None:
        self.btf = btf
        self.type_id = t.id  # of TYPE itself (a typedef stays one): what a capture file names
        self.name = t.name
        self.type = btf.resolve(t.id)
        self.size = btf.size_of(t.id)
        self.decode(bytes(min(self.size, _TRIAL_BYTES)))

    @classmethod
    def named(cls, btf_data: bytes | None, name: str) -> RecordDecoder:
        """The decoder of ``name`` in the object's BTF (the term was checked: it is there)."""
        if not btf_data:
            raise ValueError(f"no BTF to find the type '{name}' in")
        btf = Btf(btf_data)
        found = find_record_type(btf, name)
        if found is None:
            raise ValueError(f"no struct, union or typedef named '{name}' in the object's BTF")
        return cls(btf, found)

    @classmethod
    def of_id(cls, btf_data: bytes | None, type_id: int) -> RecordDecoder:
        """The decoder of type ``type_id`` of the object's BTF (chosen by ``output_types``)."""
        if not btf_data:
            raise ValueError(f"no BTF to find type {type_id} in")
        btf = Btf(btf_data)
        return cls(btf, btf.type(type_id))

    def decode_sample(self, raw: bytes) -> TypedFields:
        """A bpf-output sample's raw data decoded. The kernel pads it so that the data and its u32
        size end on an 8-byte boundary (a 16-byte record comes as 20 bytes): zero bytes past the
        type that this padding alone accounts for are not part of the record."""
        size = self.size
        if len(raw) > size and len(raw) == ((size + 4 + 7) & ~7) - 4 and not any(raw[size:]):
            raw = raw[:size]
        return self.decode(raw)

    def decode(self, raw: bytes) -> TypedFields:
        btf, t, size = self.btf, self.type, self.size
        rest = raw[size:]
        if t.kind not in (BtfKind.STRUCT, BtfKind.UNION):
            value = decode_type(btf, t, raw[:size]) if len(raw) >= size else None
            return TypedFields([] if value is None else [(self.name, value)], len(raw), size, rest)
        if len(raw) >= size:
            value = decode_type(btf, t, raw[:size])
            assert isinstance(value, dict)
            return TypedFields(value.items(), len(raw), size, rest)
        items: list[tuple[str, Decoded]] = []
        for i, m in enumerate(t.members):  # a short record: the members that fit
            start = m.bit_offset // 8
            end = (m.bit_offset + m.bitfield_size + 7) // 8 if m.bitfield_size else start + btf.size_of(m.type)
            member = btf.resolve(m.type)
            if end > len(raw) and not (member.kind == BtfKind.ARRAY and start < len(raw)):
                continue
            if m.bitfield_size:
                whole = int.from_bytes(raw[:end], "little")
                items.append((m.name or f"#{i}", (whole >> m.bit_offset) & ((1 << m.bitfield_size) - 1)))
                continue
            piece = raw[start:end]
            if member.kind == BtfKind.ARRAY and len(piece) < end - start:
                piece += b"\0" * (end - start - len(piece))  # a cut array: decoded up to the record's end
                value = decode_type(btf, member, piece)
                if isinstance(value, Text):  # a variable tail of strings (execsnoop's args): all of them
                    value = Text(raw[start:].rstrip(b"\0").replace(b"\0", b" ").decode(errors="backslashreplace"))
                elem = btf.size_of(member.array.type) if member.array is not None else 1
                items.append((m.name or f"#{i}", value[: (len(raw) - start) // max(elem, 1)]
                              if isinstance(value, list) else value))
                continue
            items.append((m.name or f"#{i}", decode_type(btf, member, piece)))
        return TypedFields(items, len(raw), size, rest)


class TypedDecoders:
    """The typed bpf-output events of a session, by name; ``fields`` as TracepointDecoders'."""

    def __init__(self) -> None:
        self._by_event: dict[str, RecordDecoder] = {}

    def add(self, event: str, record_type: RecordDecoder) -> None:
        self._by_event[event] = record_type

    def __contains__(self, event: object) -> bool:
        return event in self._by_event

    def fields(self, event: str, raw: bytes | None) -> TypedFields | None:
        decoder = self._by_event.get(event)
        return None if decoder is None or raw is None else decoder.decode_sample(raw)


# -- text and JSON ------------------------------------------------------------------------------


def fields_text(fields: TypedFields) -> str:
    """``name=value ...``, then ``(short record: N of M bytes)`` or ``rest=HEX`` when the record's
    size is not the type's."""
    out = " ".join(f"{name}={value_text(v, quote_text=False)}" for name, v in fields)
    if fields.short:
        out += f" (short record: {fields.size} of {fields.type_size} bytes)"
    elif fields.rest:
        out += f" rest={fields.rest.hex(' ')}"
    return out


def fields_json(fields: TypedFields) -> dict[str, object]:
    """The keys a typed record adds to its JSON line: ``fields``, ``size``, and ``short`` or
    ``rest_hex`` when the size is not the type's."""
    out: dict[str, object] = {"fields": {name: _plain(v) for name, v in fields}, "size": fields.size}
    if fields.short:
        out["short"] = True
    elif fields.rest:
        out["rest_hex"] = fields.rest.hex()
    return out


def _plain(value: Decoded) -> object:
    if isinstance(value, Text):
        return str(value)
    return json.loads(json.dumps(value))
