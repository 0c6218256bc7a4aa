"""The CO-RE resolver: what one ``.BTF.ext`` core_relo record asks of the target BTF.

A record names a local type of the object's BTF, an access string (``0:1:2``: an index into the
root pointer, then member or array indices) and a kind. The local access is parsed into a chain
of accessors; the target's candidates are its types with the same essential name (flavours
``___x`` stripped on both sides) and a compatible kind; each candidate is matched member by member
by name (through anonymous members; typedefs and modifiers skipped); the kind's value is computed
on both sides. The rules are libbpf's (relo_core.c), so that an object loads here as it does
there; so is where candidates are looked for: in vmlinux's BTF, and only when it has none (of a
compatible kind), in every module BTF (``TargetBtf.modules``), all modules' candidates together,
with their split ids. No system call: ``resolve`` answers a ``CoreResult``, or raises ``CoreError`` where libbpf
would fail the load.
"""

from __future__ import annotations

from enum import IntEnum

from evspec.loader.btf.reader import INT_SIGNED, Btf, BtfError, BtfKind, BtfType
from evspec.loader.btf.target import TargetBtf, essential_name

from evspec.span import Slotted

MAX_ACCESS_LEN = 64  # BPF_CORE_SPEC_MAX_LEN
_MAX_DEPTH = 32  # nesting libbpf follows when comparing types


class CoreKind(IntEnum):
    """``enum bpf_core_relo_kind``."""

    FIELD_BYTE_OFFSET = 0
    FIELD_BYTE_SIZE = 1
    FIELD_EXISTS = 2
    FIELD_SIGNED = 3
    FIELD_LSHIFT_U64 = 4
    FIELD_RSHIFT_U64 = 5
    TYPE_ID_LOCAL = 6
    TYPE_ID_TARGET = 7
    TYPE_EXISTS = 8
    TYPE_SIZE = 9
    ENUMVAL_EXISTS = 10
    ENUMVAL_VALUE = 11
    TYPE_MATCHES = 12


_FIELD_KINDS = frozenset(range(0, 6))
_TYPE_KINDS = frozenset({6, 7, 8, 9, 12})
_ENUMVAL_KINDS = frozenset({10, 11})
_COMPOSITE = (BtfKind.STRUCT, BtfKind.UNION)
_ENUMS = (BtfKind.ENUM, BtfKind.ENUM64)
_U64 = (1 << 64) - 1


class CoreError(ValueError):
    """A relocation that cannot be applied at all (libbpf fails the load on it)."""


class Accessor(Slotted):
    """One meaningful step of an access: a named member of ``type_id`` (a struct or union) or,
    with no name, index ``index`` of an array whose element type is ``type_id``."""

    type_id: int
    index: int
    name: str | None


class AccessSpec(Slotted):
    """An access resolved in one BTF: root type, accessors, the raw indices, the bit offset."""

    btf: Btf
    root: int
    accessors: tuple[Accessor, ...] = ()
    raw: tuple[int, ...] = ()
    bit_offset: int = 0

    def path(self) -> str:
        """The access as C, after the root type: ``.pid``, ``[1].a[3]``."""
        out = []
        for i, acc in enumerate(self.accessors):
            if acc.name is not None:
                out.append(f".{acc.name}")
            elif i > 0 or acc.index > 0:
                out.append(f"[{acc.index}]")
        return "".join(out)


class CoreResult(Slotted):
    """What the instruction held (``orig``, from the local BTF) and must hold (``new``).

    ``validate``: the instruction must hold ``orig`` now; ``orig_size``/``new_size``: the field's
    size behind a load's offset, when it is one; ``bad_size_change``: that size changed in a way a
    load of another width cannot follow; ``poison``: why the relocation has no target value.
    """

    kind: int
    orig: int
    new: int
    validate: bool = True
    poison: str | None = None
    orig_size: int = 0
    new_size: int = 0
    bad_size_change: bool = False
    target: str = ""  # the matched target type and access, for messages


def type_title(btf: Btf, type_id: int) -> str:
    t = btf.type(type_id)
    return f"{t.kind.name.lower()} {t.name or '(anon)'}"


def _kind_compat(a: BtfType, b: BtfType) -> bool:
    return a.kind == b.kind or (a.kind in _ENUMS and b.kind in _ENUMS)


def _size(btf: Btf, type_id: int) -> int:
    try:
        return btf.size_of(type_id)
    except BtfError as exc:
        raise CoreError(str(exc)) from None


def _element(btf: Btf, type_id: int) -> BtfType:
    """The type behind ``type_id``'s modifiers and array dimensions."""
    t = btf.resolve(type_id)
    while t.kind == BtfKind.ARRAY:
        assert t.array is not None
        t = btf.resolve(t.array.type)
    return t


def _is_flex(btf: Btf, last: Accessor | None, nelems: int) -> bool:
    """A zero-length array that is the last member of the struct the previous accessor named."""
    if last is None or last.name is None or nelems > 0:
        return False
    return last.index == btf.type(last.type_id).vlen - 1


def parse_access(btf: Btf, type_id: int, access: str, kind: int) -> AccessSpec:
    """The local side of a relocation; ``CoreError`` if the access string does not fit the type."""
    what = f"access string {access!r} of {type_title(btf, type_id)}"
    parts = access.split(":")
    if not access or not all(p.isdigit() and p.isascii() for p in parts):
        raise CoreError(f"malformed {what}")
    if len(parts) > MAX_ACCESS_LEN:
        raise CoreError(f"{what} is longer than {MAX_ACCESS_LEN} steps")
    raw = tuple(int(p) for p in parts)
    if kind in _TYPE_KINDS:
        if raw != (0,):
            raise CoreError(f"{what}: a type relocation's access string is '0'")
        return AccessSpec(btf, type_id)
    t = btf.resolve(type_id)
    if kind in _ENUMVAL_KINDS:
        if t.kind not in _ENUMS or len(raw) > 1 or raw[0] >= t.vlen:
            raise CoreError(f"{what} names no enumerator")
        acc = Accessor(t.id, raw[0], t.enumerators[raw[0]].name)
        return AccessSpec(btf, type_id, (acc,), raw)
    accessors = [Accessor(t.id, raw[0], None)]
    bit = raw[0] * _size(btf, t.id) * 8
    cur = t.id
    for i, index in enumerate(raw[1:], 1):
        t = btf.resolve(cur)
        if t.kind in _COMPOSITE:
            if index >= t.vlen:
                raise CoreError(f"{what}: step {i} is member {index}, but {type_title(btf, t.id)} has {t.vlen}")
            m = t.members[index]
            bit += m.bit_offset
            if m.name:
                accessors.append(Accessor(t.id, index, m.name))
            cur = m.type
        elif t.kind == BtfKind.ARRAY:
            assert t.array is not None
            elem = btf.resolve(t.array.type)
            if not _is_flex(btf, accessors[-1], t.array.nelems) and index >= t.array.nelems:
                raise CoreError(f"{what}: step {i} is element {index} of an array of {t.array.nelems}")
            accessors.append(Accessor(elem.id, index, None))
            bit += index * _size(btf, elem.id) * 8
            cur = elem.id
        else:
            raise CoreError(f"{what}: step {i} goes into {type_title(btf, t.id)}, which has no members")
    return AccessSpec(btf, type_id, tuple(accessors), raw, bit)


# -- compatibility -------------------------------------------------------------------------------


def fields_compat(lbtf: Btf, lid: int, tbtf: Btf, tid: int) -> bool:
    """Whether a target member may stand for a local one (bpf_core_fields_are_compat)."""
    for _ in range(_MAX_DEPTH):
        lt, tt = lbtf.resolve(lid), tbtf.resolve(tid)
        if lt.kind in _COMPOSITE and tt.kind in _COMPOSITE:
            return True
        if not _kind_compat(lt, tt):
            return False
        if lt.kind in (BtfKind.PTR, BtfKind.FLOAT):
            return True
        if lt.kind in (BtfKind.FWD, *_ENUMS):
            ln, tn = essential_name(lt.name), essential_name(tt.name)
            return not ln or not tn or ln == tn
        if lt.kind == BtfKind.INT:
            return lt.int_offset == 0 and tt.int_offset == 0
        if lt.kind != BtfKind.ARRAY:
            return False
        assert lt.array is not None and tt.array is not None
        lid, tid = lt.array.type, tt.array.type
    raise CoreError(f"type nesting deeper than {_MAX_DEPTH} comparing {type_title(lbtf, lid)}")


def types_compat(lbtf: Btf, lid: int, tbtf: Btf, tid: int, level: int = _MAX_DEPTH) -> bool:
    """Whether a target type is a candidate for a type relocation (bpf_core_types_are_compat)."""
    if not _kind_compat(lbtf.type(lid), tbtf.type(tid)):
        return False
    for _ in range(_MAX_DEPTH):
        lt, tt = lbtf.resolve(lid), tbtf.resolve(tid)
        if not _kind_compat(lt, tt):
            return False
        if lt.kind in (BtfKind.UNKN, BtfKind.FWD, *_COMPOSITE, *_ENUMS):
            return True
        if lt.kind == BtfKind.INT:
            return lt.int_offset == 0 and tt.int_offset == 0
        if lt.kind == BtfKind.PTR:
            lid, tid = lt.type, tt.type
        elif lt.kind == BtfKind.ARRAY:
            assert lt.array is not None and tt.array is not None
            lid, tid = lt.array.type, tt.array.type
        elif lt.kind == BtfKind.FUNC_PROTO:
            if lt.vlen != tt.vlen:
                return False
            for lp, tp in zip(lt.params, tt.params, strict=True):
                if level <= 0:
                    raise CoreError("function prototypes nested too deep")
                if not types_compat(lbtf, lbtf.resolve(lp.type).id, tbtf, tbtf.resolve(tp.type).id, level - 1):
                    return False
            lid, tid = lbtf.resolve(lt.type).id, tbtf.resolve(tt.type).id
        else:
            return False
    raise CoreError(f"type nesting deeper than {_MAX_DEPTH} comparing {type_title(lbtf, lid)}")


def _names_match(local: str, target: str) -> bool:
    if not target:
        return not local
    return essential_name(local) == essential_name(target)


def types_match(lbtf: Btf, lid: int, tbtf: Btf, tid: int, behind_ptr: bool = False,
                level: int = _MAX_DEPTH) -> bool:
    """The stricter relation of ``bpf_core_type_matches`` (libbpf's __bpf_core_types_match)."""
    if level <= 0:
        raise CoreError("types nested too deep to match")
    for _ in range(_MAX_DEPTH):
        lt, tt = lbtf.resolve(lid), tbtf.resolve(tid)
        if not _names_match(lt.name, tt.name):
            return False
        lk, tk = lt.kind, tt.kind
        if lk == BtfKind.UNKN:
            return tk == lk
        if lk == BtfKind.FWD:
            if tk == lk:
                return lt.kind_flag == tt.kind_flag
            return behind_ptr and ((tk == BtfKind.STRUCT and not lt.kind_flag)
                                   or (tk == BtfKind.UNION and lt.kind_flag))
        if lk in _ENUMS:
            return tk in _ENUMS and _enums_match(lt, tt)
        if lk in _COMPOSITE:
            if behind_ptr:
                return tk == lk or (tk == BtfKind.FWD and (lk == BtfKind.UNION) == tt.kind_flag)
            return tk == lk and _composites_match(lbtf, lt, tbtf, tt, level)
        if tk != lk:
            return False
        if lk == BtfKind.INT:
            return lt.size == tt.size and (lt.int_encoding & INT_SIGNED) == (tt.int_encoding & INT_SIGNED)
        if lk == BtfKind.PTR:
            behind_ptr = True
            lid, tid = lt.type, tt.type
        elif lk == BtfKind.ARRAY:
            assert lt.array is not None and tt.array is not None
            if lt.array.nelems != tt.array.nelems:
                return False
            lid, tid = lt.array.type, tt.array.type
        elif lk == BtfKind.FUNC_PROTO:
            if lt.vlen != tt.vlen:
                return False
            for lp, tp in zip(lt.params, tt.params, strict=True):
                if not types_match(lbtf, lp.type, tbtf, tp.type, behind_ptr, level - 1):
                    return False
            lid, tid = lt.type, tt.type
        else:
            return False
    raise CoreError(f"type nesting deeper than {_MAX_DEPTH} matching {type_title(lbtf, lid)}")


def _enums_match(lt: BtfType, tt: BtfType) -> bool:
    if lt.size != tt.size or lt.vlen > tt.vlen:
        return False
    return all(any(_names_match(le.name, te.name) for te in tt.enumerators) for le in lt.enumerators)


def _composites_match(lbtf: Btf, lt: BtfType, tbtf: Btf, tt: BtfType, level: int) -> bool:
    if lt.vlen > tt.vlen:
        return False
    return all(any(_names_match(lm.name, tm.name) and types_match(lbtf, lm.type, tbtf, tm.type, False, level - 1)
                   for tm in tt.members) for lm in lt.members)


# -- matching a candidate ------------------------------------------------------------------------


def _match_member(local: Btf, lacc: Accessor, target: Btf, tid: int,
                  depth: int) -> tuple[tuple[int, ...], int, Accessor, int] | None:
    """The target member named like ``lacc``'s, searched through anonymous members: the raw
    indices to it, its bit offset, its accessor and its type."""
    t = target.resolve(tid)
    if t.kind not in _COMPOSITE:
        return None
    if depth > MAX_ACCESS_LEN:
        raise CoreError(f"{type_title(target, t.id)} nests anonymous members deeper than {MAX_ACCESS_LEN}")
    lm = local.type(lacc.type_id).members[lacc.index]
    for i, m in enumerate(t.members):
        if not m.name:
            inner = _match_member(local, lacc, target, m.type, depth + 1)
            if inner is not None:
                raw, bit, acc, mtype = inner
                return (i, *raw), m.bit_offset + bit, acc, mtype
        elif m.name == lm.name:
            if not fields_compat(local, lm.type, target, m.type):
                return None
            return (i,), m.bit_offset, Accessor(t.id, i, m.name), m.type
    return None


def match_field(local: AccessSpec, target: Btf, cand: int) -> AccessSpec | None:
    """The local field access followed in candidate ``cand`` (bpf_core_spec_match), or None."""
    accessors: list[Accessor] = []
    raw: list[int] = []
    bit = 0
    tid = cand
    for i, lacc in enumerate(local.accessors):
        t = target.resolve(tid)
        tid = t.id
        if lacc.name is not None:
            found = _match_member(local.btf, lacc, target, tid, 0)
            if found is None:
                return None
            steps, delta, acc, tid = found
            raw.extend(steps)
            accessors.append(acc)
            bit += delta
        else:
            if i > 0:
                if t.kind != BtfKind.ARRAY:
                    return None
                assert t.array is not None
                last = accessors[-1] if accessors else None
                if not _is_flex(target, last, t.array.nelems) and lacc.index >= t.array.nelems:
                    return None
                tid = target.resolve(t.array.type).id
            raw.append(lacc.index)
            accessors.append(Accessor(tid, lacc.index, None))
            bit += lacc.index * _size(target, tid) * 8
        if len(raw) > MAX_ACCESS_LEN:
            raise CoreError(f"the access in {type_title(target, cand)} is longer than {MAX_ACCESS_LEN} steps")
    return AccessSpec(target, cand, tuple(accessors), tuple(raw), bit)


def match_enumval(local: AccessSpec, target: Btf, cand: int) -> AccessSpec | None:
    t = target.resolve(cand)
    if t.kind not in _ENUMS:
        return None
    name = essential_name(local.accessors[0].name or "")
    for i, e in enumerate(t.enumerators):
        if essential_name(e.name) == name:
            return AccessSpec(target, cand, (Accessor(t.id, i, e.name),), (i,))
    return None


def match(local: AccessSpec, kind: int, target: Btf, cand: int) -> AccessSpec | None:
    if kind in _TYPE_KINDS:
        ok = (types_match(local.btf, local.root, target, cand) if kind == CoreKind.TYPE_MATCHES
              else types_compat(local.btf, local.root, target, cand))
        return AccessSpec(target, cand) if ok else None
    if kind in _ENUMVAL_KINDS:
        return match_enumval(local, target, cand)
    return match_field(local, target, cand)


# -- values --------------------------------------------------------------------------------------


class _Value(Slotted):
    value: int
    size: int = 0  # the field's size under a load (byte offsets of non-bitfields)
    type_id: int = 0  # its type
    validate: bool = True


def _field_value(kind: int, spec: AccessSpec | None, little_endian: bool) -> _Value | None:
    """A field relocation's value in one BTF; None: poison (the field is not there)."""
    if kind == CoreKind.FIELD_EXISTS:
        return _Value(int(spec is not None))
    if spec is None:
        return None
    btf = spec.btf
    acc = spec.accessors[-1]
    if acc.name is None:
        if kind == CoreKind.FIELD_BYTE_OFFSET:
            elem = _element(btf, acc.type_id)
            return _Value(spec.bit_offset // 8, _size(btf, elem.id), acc.type_id)
        if kind == CoreKind.FIELD_BYTE_SIZE:
            return _Value(_size(btf, acc.type_id))
        raise CoreError(f"a {CoreKind(kind).name.lower()} relocation cannot apply to an array element")
    m = btf.type(acc.type_id).members[acc.index]
    mt = btf.resolve(m.type)
    bit_off, bit_sz = spec.bit_offset, m.bitfield_size
    bitfield = bit_sz > 0
    if bitfield:
        byte_sz = mt.size
        if byte_sz <= 0:
            raise CoreError(f"bitfield .{m.name} has a type of no size ({type_title(btf, mt.id)})")
        byte_off = bit_off // 8 // byte_sz * byte_sz
        while bit_off + bit_sz - byte_off * 8 > byte_sz * 8:
            if byte_sz >= 8:
                raise CoreError(f"bitfield .{m.name} cannot be read with one 64-bit load")
            byte_sz *= 2
            byte_off = bit_off // 8 // byte_sz * byte_sz
    else:
        byte_sz = _size(btf, mt.id)
        byte_off = bit_off // 8
        bit_sz = byte_sz * 8
    if kind == CoreKind.FIELD_BYTE_OFFSET:
        if bitfield:
            return _Value(byte_off, validate=False)
        return _Value(byte_off, _size(btf, _element(btf, mt.id).id), mt.id)
    if kind == CoreKind.FIELD_BYTE_SIZE:
        return _Value(byte_sz, validate=not bitfield)
    if kind == CoreKind.FIELD_SIGNED:
        signed = (mt.kind in _ENUMS and mt.kind_flag) or (mt.kind == BtfKind.INT and bool(mt.int_encoding & INT_SIGNED))
        return _Value(int(signed))
    if kind == CoreKind.FIELD_LSHIFT_U64:
        shift = (64 - (bit_off + bit_sz - byte_off * 8) if little_endian
                 else (8 - byte_sz) * 8 + (bit_off - byte_off * 8))
        return _Value(shift, validate=not bitfield)
    return _Value(64 - bit_sz)  # FIELD_RSHIFT_U64


def _type_value(kind: int, spec: AccessSpec | None) -> _Value:
    if spec is None:
        return _Value(0)
    if kind == CoreKind.TYPE_ID_TARGET:
        return _Value(spec.root, validate=False)
    if kind == CoreKind.TYPE_SIZE:
        return _Value(_size(spec.btf, spec.root))
    return _Value(1)  # TYPE_EXISTS, TYPE_MATCHES


def _enum_value(kind: int, spec: AccessSpec | None) -> _Value | None:
    if kind == CoreKind.ENUMVAL_EXISTS:
        return _Value(int(spec is not None))
    if spec is None:
        return None
    t = spec.btf.type(spec.accessors[0].type_id)
    value = t.enumerators[spec.accessors[0].index].value
    if t.kind == BtfKind.ENUM:  # a 32-bit enumerator is read as s32, widened to 64 bits
        value = value - (1 << 32) if value >= 1 << 31 else value
    return _Value(value & _U64)


def _value(kind: int, spec: AccessSpec | None, little_endian: bool) -> _Value | None:
    if kind in _FIELD_KINDS:
        return _field_value(kind, spec, little_endian)
    if kind in _TYPE_KINDS:
        return _type_value(kind, spec)
    return _enum_value(kind, spec)


def _size_change_is_safe(local: Btf, orig: _Value, target: Btf, new: _Value) -> bool:
    """A load of another width reads the same value only for pointers and unsigned integers."""
    lt, tt = local.type(orig.type_id), target.type(new.type_id)
    if lt.kind == BtfKind.PTR and tt.kind == BtfKind.PTR:
        return True
    return (lt.kind == tt.kind == BtfKind.INT and lt.int_encoding != INT_SIGNED
            and tt.int_encoding != INT_SIGNED)


def compute(kind: int, local: AccessSpec, target: AccessSpec | None, poison: str, owner: str = "") -> CoreResult:
    """The relocation's result for one candidate (``target``, in the BTF ``owner`` names for
    messages: ``TargetBtf.owner``) or for none; ``poison`` says why the value is missing when the
    kind needs one."""
    little = local.btf.byte_order == "<"
    orig = _value(kind, local, little)
    assert orig is not None  # the local side always has the field
    new = _value(kind, target, little)
    described = ("" if target is None
                 else f"{owner}{type_title(target.btf, target.root)} [{target.root}]{target.path()}")
    if new is None:
        return CoreResult(kind, orig.value, 0, orig.validate, poison=poison, target=described)
    bad_size = (kind == CoreKind.FIELD_BYTE_OFFSET and target is not None and orig.size != new.size
                and not _size_change_is_safe(local.btf, orig, target.btf, new))
    return CoreResult(kind, orig.value, new.value, orig.validate, None, orig.size, new.size, bad_size,
                      described)


# -- resolving -----------------------------------------------------------------------------------


Candidate = tuple[TargetBtf, int]  # a target type: the BTF it is in (vmlinux, a module) and its id there


class CoreResolver:
    """Resolves the relocations of one object against one target BTF (and its modules').

    As in libbpf, the candidates of a local type are looked up once, and those that fail to
    match one of its relocations are dropped for its later ones (as long as one matches).
    """

    def __init__(self, local: Btf, target: TargetBtf) -> None:
        self.local = local
        self.target = target
        self._candidates: dict[int, list[Candidate]] = {}

    def candidates(self, type_id: int) -> list[Candidate]:
        found = self._candidates.get(type_id)
        if found is None:
            lt = self.local.type(type_id)
            essential = essential_name(lt.name)
            found = self._kind_compatible(self.target, essential, lt)
            if not found:  # libbpf's rule: the modules only when vmlinux has no candidate at all
                for module in self.target.modules():
                    found.extend(self._kind_compatible(module, essential, lt))
            self._candidates[type_id] = found
        return found

    @staticmethod
    def _kind_compatible(target: TargetBtf, essential: str, lt: BtfType) -> list[Candidate]:
        tbtf = target.btf
        return [(target, c) for c in target.named(essential) if _kind_compat(tbtf.type(c), lt)]

    def resolve(self, type_id: int, access: str, kind: int) -> CoreResult:
        if kind not in CoreKind._value2member_map_:
            raise CoreError(f"unknown CO-RE relocation kind {kind}")
        try:
            return self._resolve(type_id, access, kind)
        except BtfError as exc:
            raise CoreError(f"corrupt BTF: {exc}") from None

    def _resolve(self, type_id: int, access: str, kind: int) -> CoreResult:
        local = parse_access(self.local, type_id, access, kind)
        if kind == CoreKind.TYPE_ID_LOCAL:
            return CoreResult(kind, type_id, type_id, validate=False)
        root = self.local.type(type_id)
        title = type_title(self.local, type_id)
        if not root.name:
            raise CoreError(f"{CoreKind(kind).name.lower()} of {title}: CO-RE cannot relocate an anonymous type")
        cands = self.candidates(type_id)
        matched: list[tuple[Candidate, AccessSpec, CoreResult]] = []
        for cand in cands:
            target, cid = cand
            spec = match(local, kind, target.btf, cid)
            if spec is None:
                continue
            result = compute(kind, local, spec, "", target.owner)
            if matched:
                first_spec, first = matched[0][1], matched[0][2]
                if spec.bit_offset != first_spec.bit_offset or result.new != first.new:
                    where = self.target.name if target is self.target else "the module BTFs"
                    raise CoreError(
                        f"{CoreKind(kind).name.lower()} of {title}{local.path()} is ambiguous in "
                        f"{where}: {first.target} gives {first.new}, {result.target} gives "
                        f"{result.new}")
            matched.append((cand, spec, result))
        if matched:
            self._candidates[type_id] = [c for c, _, _ in matched]
            return matched[0][2]
        return compute(kind, local, None, self._why_missing(local, kind, title, cands))

    def _why_missing(self, local: AccessSpec, kind: int, title: str, cands: list[Candidate]) -> str:
        where = self.target.name
        if not cands:
            name = essential_name(self.local.type(local.root).name)
            modules = self.target.modules()
            if not modules:
                return f"{where} has no type named {name!r}"
            names = ", ".join(m.name.removeprefix("module ") for m in modules[:4])
            more = f", ... ({len(modules)} in all)" if len(modules) > 4 else ""
            return f"{where} has no type named {name!r}, nor has any of its module BTFs ({names}{more})"
        in_vmlinux = cands[0][0] is self.target
        tried = ", ".join(f"{t.owner}{type_title(t.btf, c)} [{c}]" for t, c in cands)
        among = f"{where}'s {tried}" if in_vmlinux else tried
        if kind in _ENUMVAL_KINDS:
            return f"enumerator {local.accessors[0].name} of {title} is in none of {among}"
        return f"field {title}{local.path()} (access {':'.join(map(str, local.raw))}) is in none of {among}"
