"""Split BTF for the tests: a BTF blob as clang writes it, re-based onto a base BTF the way pahole
writes a kernel module's ``/sys/kernel/btf/MOD`` on top of vmlinux's.

Each named type of the module that the base has alike (same kind, name and layout, and alike
every type it refers to) is dropped and referred to by its base id; so is a forward declaration
of a struct or union that the base defines. The other types keep their order and take the ids
after the base's last one. A name that is a string of the base is given the base's offset;
the others go into the split's own string section (which starts with its empty string) at
offsets past the base's strings.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping

from evspec.loader.btf.reader import Btf, BtfKind, BtfType, RawType, write_btf
from evspec.loader.object.elf import BpfElf

_REFERRING = {BtfKind.PTR, BtfKind.TYPEDEF, BtfKind.VOLATILE, BtfKind.CONST, BtfKind.RESTRICT, BtfKind.FUNC,
              BtfKind.FUNC_PROTO, BtfKind.VAR, BtfKind.DECL_TAG, BtfKind.TYPE_TAG}


def btf_section(obj: bytes, name: str = "object") -> bytes:
    """The ``.BTF`` section of a BPF ELF object."""
    elf = BpfElf(name, obj)
    section = elf.section(".BTF")
    assert section is not None, f"{name} has no .BTF section"
    return elf.contents(section)


def _alike(m: Btf, mid: int, b: Btf, bid: int, assumed: set[tuple[int, int]]) -> bool:
    """Whether module type ``mid`` and base type ``bid`` are the same type (pairs met again on a
    cycle are assumed alike: the answer is the conjunction of every check)."""
    if mid == 0 or bid == 0:
        return mid == bid
    if (mid, bid) in assumed:
        return True
    assumed.add((mid, bid))
    x, y = m.type(mid), b.type(bid)

    def fields(t: BtfType) -> tuple[object, ...]:
        return (t.kind, t.name, t.vlen, t.kind_flag, t.size, t.int_encoding, t.int_offset, t.int_bits,
                t.linkage, t.component_idx, t.enumerators,
                None if t.array is None else t.array.nelems,
                tuple((p.name, p.bit_offset, p.bitfield_size) for p in t.members),
                tuple(p.name for p in t.params), tuple((i.offset, i.size) for i in t.secinfos))

    if fields(x) != fields(y):
        return False
    pairs = [(x.type, y.type)] if x.kind in _REFERRING else []
    if x.array is not None and y.array is not None:
        pairs += [(x.array.type, y.array.type), (x.array.index_type, y.array.index_type)]
    pairs += [(p.type, q.type) for p, q in zip(x.members, y.members, strict=True)]
    pairs += [(p.type, q.type) for p, q in zip(x.params, y.params, strict=True)]
    pairs += [(p.type, q.type) for p, q in zip(x.secinfos, y.secinfos, strict=True)]
    return all(_alike(m, p, b, q, assumed) for p, q in pairs)


def _in_base(m: Btf, b: Btf) -> dict[int, int]:
    """Module type id -> the base type it stands for."""
    out = {}
    for tid in range(1, len(m)):
        t = m.type(tid)
        if not t.name:
            continue
        if t.kind == BtfKind.FWD:
            found = b.find(t.name, BtfKind.UNION if t.kind_flag else BtfKind.STRUCT)
        else:
            found = b.find(t.name, t.kind)
            if found is not None and not _alike(m, tid, b, found.id, set()):
                found = None
        if found is not None:
            out[tid] = found.id
    return out


def _rebased(raw: RawType, ids: Mapping[int, int], name: Callable[[int], int]) -> RawType:
    kind, extra = raw.kind, raw.extra
    word = ids[raw.word] if kind in _REFERRING else raw.word

    def items(fmt: str, fix: Callable[..., tuple[int, ...]]) -> bytes:
        return b"".join(struct.pack(fmt, *fix(*item)) for item in struct.iter_unpack(fmt, extra))

    if kind == BtfKind.ARRAY:
        elem, index, nelems = struct.unpack("<III", extra)
        extra = struct.pack("<III", ids[elem], ids[index], nelems)
    elif kind in (BtfKind.STRUCT, BtfKind.UNION):
        extra = items("<III", lambda n, t, off: (name(n), ids[t], off))
    elif kind == BtfKind.ENUM:
        extra = items("<II", lambda n, v: (name(n), v))
    elif kind == BtfKind.ENUM64:
        extra = items("<III", lambda n, lo, hi: (name(n), lo, hi))
    elif kind == BtfKind.FUNC_PROTO:
        extra = items("<II", lambda n, t: (name(n), ids[t]))
    elif kind == BtfKind.DATASEC:
        extra = items("<III", lambda t, off, size: (ids[t], off, size))
    return RawType(name(raw.name_off), raw.info, word, extra)


def split_btf(module: bytes, base: bytes) -> bytes:
    """``module`` (a whole little-endian BTF blob) as split BTF on top of ``base``."""
    m, b = Btf(module), Btf(base)
    in_base = _in_base(m, b)
    kept = [tid for tid in range(1, len(m)) if tid not in in_base]
    ids = {0: 0, **in_base, **{tid: len(b) + i for i, tid in enumerate(kept)}}
    base_strings = b.string_section()
    base_at: dict[bytes, int] = {}
    at = 0
    for text in base_strings.split(b"\0")[:-1]:
        base_at.setdefault(text, at)
        at += len(text) + 1
    own = bytearray(b"\0")
    own_at: dict[bytes, int] = {b"": 0}

    def name(offset: int) -> int:
        text = m.raw_string(offset)
        if text in base_at:
            return base_at[text]
        if text not in own_at:
            own_at[text] = len(own)
            own.extend(text + b"\0")
        return len(base_strings) + own_at[text]

    return write_btf([_rebased(m.raw_type(tid), ids, name) for tid in kept], bytes(own))
