"""Hand-made BTF for the tests: a type at a time, by name, with the ids it gets; ``blob()`` writes
it with the reader's own ``write_btf`` (either byte order), ``btf()`` reads it back.

Each method appends one type record and returns its id (the first is 1; 0 is void)."""

from __future__ import annotations

import struct
from collections.abc import Sequence

from evspec.loader.btf.reader import Btf, BtfKind, RawType, type_info, write_btf
from evspec.loader.btf.target import TargetBtf

Member = tuple[str, int, int] | tuple[str, int, int, int]  # name, type, bit offset[, bitfield size]


class BtfBuilder:
    def __init__(self, order: str = "<") -> None:
        self.order = order
        self.types: list[RawType] = []
        self._strings = bytearray(b"\0")
        self._offsets: dict[str, int] = {"": 0}

    def name(self, text: str) -> int:
        if text not in self._offsets:
            self._offsets[text] = len(self._strings)
            self._strings += text.encode() + b"\0"
        return self._offsets[text]

    def _add(self, name: str, kind: BtfKind, word: int, extra: bytes = b"", vlen: int = 0, flag: bool = False) -> int:
        self.types.append(RawType(self.name(name), type_info(kind, vlen, flag), word, extra))
        return len(self.types)

    def _u32s(self, *values: int) -> bytes:
        return struct.pack(f"{self.order}{len(values)}I", *(v & 0xFFFFFFFF for v in values))

    def int_(self, name: str, size: int, signed: bool = False, bits: int | None = None, offset: int = 0) -> int:
        encoding = 1 if signed else 0
        return self._add(name, BtfKind.INT, size, self._u32s(encoding << 24 | offset << 16 | (bits or size * 8)))

    def float_(self, name: str, size: int) -> int:
        return self._add(name, BtfKind.FLOAT, size)

    def ref(self, kind: BtfKind, to: int, name: str = "") -> int:
        """PTR, TYPEDEF (named), CONST, VOLATILE, RESTRICT, TYPE_TAG."""
        return self._add(name, kind, to)

    def ptr(self, to: int) -> int:
        return self.ref(BtfKind.PTR, to)

    def array(self, elem: int, nelems: int, index: int = 0) -> int:
        return self._add("", BtfKind.ARRAY, 0, self._u32s(elem, index, nelems))

    def struct(self, name: str, size: int, members: Sequence[Member], union: bool = False) -> int:
        bitfields = any(len(m) == 4 for m in members)
        extra = b"".join(
            self._u32s(self.name(m[0]), m[1], (m[3] << 24 | m[2]) if bitfields and len(m) == 4 else m[2])
            for m in members
        )
        kind = BtfKind.UNION if union else BtfKind.STRUCT
        return self._add(name, kind, size, extra, len(members), bitfields)

    def enum(self, name: str, size: int, values: Sequence[tuple[str, int]], signed: bool = False) -> int:
        extra = b"".join(self._u32s(self.name(n), v) for n, v in values)
        return self._add(name, BtfKind.ENUM, size, extra, len(values), signed)

    def enum64(self, name: str, values: Sequence[tuple[str, int]], signed: bool = False) -> int:
        extra = b"".join(self._u32s(self.name(n), v & 0xFFFFFFFF, (v >> 32) & 0xFFFFFFFF) for n, v in values)
        return self._add(name, BtfKind.ENUM64, 8, extra, len(values), signed)

    def fwd(self, name: str, union: bool = False) -> int:
        return self._add(name, BtfKind.FWD, 0, flag=union)

    def func_proto(self, ret: int, params: Sequence[int]) -> int:
        return self._add("", BtfKind.FUNC_PROTO, ret, b"".join(self._u32s(0, p) for p in params), len(params))

    def var(self, name: str, type_id: int, linkage: int = 1) -> int:
        return self._add(name, BtfKind.VAR, type_id, self._u32s(linkage))

    def datasec(self, name: str, size: int, entries: Sequence[tuple[int, int, int]]) -> int:
        """``entries``: (variable id, offset, size)."""
        return self._add(name, BtfKind.DATASEC, size, b"".join(self._u32s(*e) for e in entries), len(entries))

    def blob(self) -> bytes:
        return write_btf(self.types, bytes(self._strings), self.order)

    def btf(self) -> Btf:
        return Btf(self.blob())

    def target(self, name: str = "target") -> TargetBtf:
        return TargetBtf(self.blob(), name, cache=False)
