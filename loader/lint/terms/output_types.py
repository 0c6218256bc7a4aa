"""The BTF type of an output map's records, when the object itself says what it is.

The programs' output helper calls (``output_calls``) pass a pointer to the record. Its type is
known when it points at the start of a map's value (what ``bpf_map_lookup_elem`` returned: the
map's BTF value type), or at a stack buffer the same function also passes to
``bpf_map_update_elem``/``bpf_map_lookup_elem`` as a map's value or key, and sends with exactly
that type's size. A map's records get a type when at least one call says which, every call that
says one says the same, and no call sends more bytes than the type has; otherwise none, with the
reason. Nothing else (a struct's name, its size alone) is taken as evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

from evspec.loader.btf.reader import Btf, BtfError, BtfKind
from evspec.loader.lint.terms.output_calls import RINGBUF_OUTPUT, MapValue, OutputCall, Stack
from evspec.loader.object.spec import MapType, ObjectSpec

from evspec.span import Slotted

_RECORD_KINDS = (BtfKind.STRUCT, BtfKind.UNION)


class RecordType(Slotted):
    """``type_id`` in the object's BTF, ``name`` as C spells it (``struct event``), ``size``, and
    ``source``: what it was chosen from, for ``record -v`` and ``check``."""

    type_id: int
    name: str
    size: int
    source: str


class Untyped(Slotted):
    """Why no type could be chosen."""

    reason: str


def _c_name(btf: Btf, type_id: int) -> str:
    t = btf.type(type_id)
    word = {BtfKind.STRUCT: "struct ", BtfKind.UNION: "union "}.get(t.kind, "")
    return f"{word}{t.name}" if t.name else f"{word}(anonymous)"


def _map_type(spec: ObjectSpec, btf: Btf, map_name: str, role: str) -> int | None:
    m = spec.map(map_name)
    if m is None:
        return None
    tid = m.value_type_id if role == "value" else m.key_type_id
    if not tid:
        return None
    resolved = btf.resolve(tid)  # past typedefs and modifiers
    return resolved.id if resolved.kind in _RECORD_KINDS else None


def _call_type(spec: ObjectSpec, btf: Btf, call: OutputCall) -> tuple[int, str] | None:
    """The type ``call``'s data has, and what says so."""
    data = call.data
    where = f"{call.helper_name} in {call.function} (insn {call.insn})"
    if isinstance(data, MapValue) and data.offset == 0:
        tid = _map_type(spec, btf, data.name, "value")
        if tid is not None:
            return tid, f"the value type of map '{data.name}', which {where} sends from"
    if isinstance(data, Stack) and call.size is not None:
        for map_name, role in call.stored_as:
            tid = _map_type(spec, btf, map_name, role)
            if tid is not None and btf.size_of(tid) == call.size:
                return tid, (f"the {role} type of map '{map_name}': {where} sends the {call.size}-byte stack "
                             f"buffer that is also that map's {role}")
    return None


def record_type(spec: ObjectSpec, map_name: str, calls: Sequence[OutputCall]) -> RecordType | Untyped:
    """The type of the records the calls of ``calls`` that name ``map_name`` send."""
    m = spec.map(map_name)
    ring = m is not None and m.type == MapType.RINGBUF
    mine = [c for c in calls if (c.map_name == map_name or map_name in c.candidates)
            and (c.helper == RINGBUF_OUTPUT) == ring]  # the verifier refuses the other kind
    if not mine:
        return Untyped("no bpf_ringbuf_output call sends to it: a record reserved with bpf_ringbuf_reserve "
                       "has no type the object says" if ring else "no program sends to it")
    if not spec.btf:
        return Untyped("the object has no BTF")
    try:
        btf = Btf(spec.btf)
        typed = [(c, _call_type(spec, btf, c)) for c in mine]
    except BtfError as exc:
        return Untyped(f"its BTF cannot be read: {exc}")
    chosen = {t[0] for _, t in typed if t is not None}
    if not chosen:
        return Untyped("no program sends a map's value or a buffer typed by a map, the only records whose "
                       "type the object says")
    if len(chosen) > 1:
        names = ", ".join(sorted(_c_name(btf, tid) for tid in chosen))
        return Untyped(f"the programs send records of different types ({names})")
    tid = chosen.pop()
    size = btf.size_of(tid)
    for c, t in typed:
        if c.map_name is None:
            return Untyped(f"{c.helper_name} in {c.function} (insn {c.insn}) sends to a map the analysis "
                           "cannot tell")
        if t is None and c.size is None:
            return Untyped(f"{c.helper_name} in {c.function} (insn {c.insn}) sends records of unknown type "
                           "and size")
        if c.size is not None and c.size > size:
            return Untyped(f"{c.helper_name} in {c.function} (insn {c.insn}) sends {c.size} bytes, more than "
                           f"{_c_name(btf, tid)} ({size} bytes)")
    source = next(t[1] for _, t in typed if t is not None)
    return RecordType(tid, _c_name(btf, tid), size, source)
