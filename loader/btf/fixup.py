"""The object's ``.BTF`` made acceptable to the running kernel, and the ``.BTF.ext`` records a
program is loaded with.

clang leaves part of the BTF to the loader, and BPF_BTF_LOAD refuses it as written:

* every DATASEC has size 0, and the variables of global (non-static) symbols sit at offset 0.
  The sizes come from the ELF sections, the offsets from the symbols (``ObjectSpec.layouts``);
  the kernel also wants a DATASEC's variables sorted by offset and inside the section.
* a DATASEC may only list VARs, and a VAR's linkage must be static or global (not extern): the
  externs' BTF is rewritten first (``externs/resolve.py``, as libbpf does); what is still extern
  here is refused with ``BtfFixupError``.

Kernels that predate a BTF kind refuse every blob that holds one. Given the ``BtfFeatures`` a
probe found missing, ``fixup_btf`` rewrites those kinds the way libbpf documents, keeping every
type id in place (map key/value type ids and func_info stay valid):

======================  ==========================================================  ======
kind                     replaced by                                                 kernel
======================  ==========================================================  ======
FUNC, FUNC_PROTO         TYPEDEF, ENUM with one enumerator per parameter             5.0
VAR, DATASEC             1-byte INT named like the variable, STRUCT (``.`` -> ``_``)  5.2
global FUNC              static FUNC                                                 5.6
FLOAT                    anonymous STRUCT of the same size                           5.13
DECL_TAG                 anonymous 1-byte INT                                        5.16
TYPE_TAG                 CONST                                                       5.17
ENUM64, signed ENUM      UNION of 1-byte INT members, unsigned ENUM                  6.0
======================  ==========================================================  ======
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from evspec.loader.abi.bpf import INSN_SIZE
from evspec.loader.btf.reader import (
    FUNC_GLOBAL,
    FUNC_STATIC,
    VAR_GLOBAL_ALLOCATED,
    VAR_GLOBAL_EXTERN,
    VAR_STATIC,
    Btf,
    BtfError,
    BtfExt,
    BtfKind,
    RawType,
    type_info,
    write_btf,
)
from evspec.loader.object.spec import ProgramSpec, SectionLayout

from evspec.span import Slotted

K = BtfKind


class BtfFixupError(BtfError):
    """The object's BTF cannot be made acceptable to the kernel."""


class BtfFeatures(Slotted):
    """Which BTF kinds (and FUNC linkages) the running kernel accepts."""

    func: bool = True  # FUNC and FUNC_PROTO
    datasec: bool = True  # VAR and DATASEC
    global_func: bool = True  # FUNC with global linkage
    float: bool = True
    decl_tag: bool = True
    type_tag: bool = True
    enum64: bool = True  # ENUM64 and signed ENUM (kind_flag)

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(name for name in self.__slots__ if not getattr(self, name))


ALL_FEATURES = BtfFeatures()


class FixedBtf(Slotted):
    data: bytes  # the blob to pass to BPF_BTF_LOAD
    used: frozenset[str]  # the BtfFeatures fields whose kinds the blob holds
    replaced: tuple[str, ...] = ()  # one line per kind that was rewritten for an older kernel


class _Strings:
    """The string section, with strings appended (once each) as the fix-up needs them."""

    def __init__(self, section: bytes) -> None:
        self.data = bytearray(section)
        self._added: dict[str, int] = {}

    def add(self, text: str) -> int:
        offset = self._added.get(text)
        if offset is None:
            offset = len(self.data)
            self.data += text.encode() + b"\0"
            self._added[text] = offset
        return offset


def _features_used(types: Sequence[RawType]) -> frozenset[str]:
    used: set[str] = set()
    for t in types:
        kind = t.kind
        if kind in (K.FUNC, K.FUNC_PROTO):
            used.add("func")
            if kind == K.FUNC and t.vlen == FUNC_GLOBAL:
                used.add("global_func")
        elif kind in (K.VAR, K.DATASEC):
            used.add("datasec")
        elif kind == K.FLOAT:
            used.add("float")
        elif kind == K.DECL_TAG:
            used.add("decl_tag")
        elif kind == K.TYPE_TAG:
            used.add("type_tag")
        elif kind == K.ENUM64 or (kind == K.ENUM and t.kind_flag):
            used.add("enum64")
    return frozenset(used)


def fixup_btf(
    raw: bytes, layouts: Sequence[SectionLayout], features: BtfFeatures = ALL_FEATURES
) -> FixedBtf:
    """The object's ``.BTF`` with its DATASECs completed and, where ``features`` says the kernel
    lacks a kind, that kind replaced. Raises ``BtfFixupError`` (or ``BtfError`` for corrupt BTF)."""
    btf = Btf(raw)
    order = btf.byte_order
    types = [btf.raw_type(tid) for tid in range(1, len(btf))]
    used = _features_used(types)
    strings = _Strings(btf.string_section())
    by_name = {layout.name: layout for layout in layouts}
    for index, t in enumerate(types):
        if t.kind == K.DATASEC:
            types[index] = _complete_datasec(btf, index + 1, t, by_name, order)
    replaced: list[str] = []
    if features.missing:
        replaced = _sanitise(btf, types, strings, features, order)
    return FixedBtf(write_btf(types, bytes(strings.data), order), used, tuple(replaced))


# ------------------------------------------------------------------------- DATASEC


def _complete_datasec(
    btf: Btf, tid: int, t: RawType, layouts: dict[str, SectionLayout], order: str
) -> RawType:
    name = btf.string(t.name_off)
    layout = layouts.get(name)
    if layout is None:
        raise BtfFixupError(
            f"BTF DATASEC {tid} describes section {name!r}, which the object does not have "
            "(extern variables in .kconfig or .ksyms are not supported)"
        )
    symbols = dict(layout.symbols)
    infos = []
    for var_id, offset, size in struct.iter_unpack(order + "III", t.extra):
        var = btf.type(var_id)
        if var.kind != K.VAR:
            raise BtfFixupError(
                f"BTF DATASEC {name!r} lists type {var_id}, a {var.kind.name}; the kernel accepts "
                "only VARs there (extern functions are not supported)"
            )
        if var.linkage not in (VAR_STATIC, VAR_GLOBAL_ALLOCATED):
            what = "extern" if var.linkage == VAR_GLOBAL_EXTERN else f"linkage {var.linkage}"
            raise BtfFixupError(f"BTF variable {var.name!r} in {name!r} is {what}; the kernel refuses it")
        at = symbols.get(var.name)
        if at is None and var.linkage != VAR_STATIC:
            raise BtfFixupError(f"BTF variable {var.name!r} has no symbol in section {name!r}")
        offset = offset if at is None else at
        if offset + size > layout.size:
            raise BtfFixupError(
                f"BTF variable {var.name!r} ({size} bytes at offset {offset}) lies past the end of "
                f"section {name!r} ({layout.size} bytes)"
            )
        infos.append((offset, var_id, size))
    infos.sort()
    for (off_a, id_a, size_a), (off_b, id_b, _) in zip(infos, infos[1:], strict=False):
        if off_a + size_a > off_b:
            raise BtfFixupError(
                f"BTF variables {btf.type(id_a).name!r} and {btf.type(id_b).name!r} of section "
                f"{name!r} overlap"
            )
    extra = b"".join(struct.pack(order + "III", var_id, off, size) for off, var_id, size in infos)
    return RawType(t.name_off, t.info, layout.size, extra)


# ------------------------------------------------------------------ older kernels


def _one_byte_int(order: str, name_off: int = 0) -> RawType:
    return RawType(name_off, type_info(K.INT), 1, struct.pack(order + "I", 8))


def _sanitise(
    btf: Btf, types: list[RawType], strings: _Strings, features: BtfFeatures, order: str
) -> list[str]:
    """Rewrite in place the kinds ``features`` lacks; the extra types a rewrite needs are appended."""
    counts: dict[str, int] = {}
    byte_int: int | None = None  # an appended 1-byte INT, for ENUM64 members

    def note(what: str) -> None:
        counts[what] = counts.get(what, 0) + 1

    for index in range(len(types)):
        t = types[index]
        kind = t.kind
        if kind == K.FUNC_PROTO and not features.func:
            types[index] = RawType(0, type_info(K.ENUM, t.vlen), 4, t.extra)
            note("FUNC_PROTO -> ENUM")
        elif kind == K.FUNC and not features.func:
            types[index] = RawType(t.name_off, type_info(K.TYPEDEF), t.word)
            note("FUNC -> TYPEDEF")
        elif kind == K.FUNC and t.vlen == FUNC_GLOBAL and not features.global_func:
            types[index] = RawType(t.name_off, type_info(K.FUNC, FUNC_STATIC), t.word)
            note("global FUNC -> static FUNC")
        elif kind == K.VAR and not features.datasec:
            types[index] = _one_byte_int(order, t.name_off)
            note("VAR -> INT")
        elif kind == K.DATASEC and not features.datasec:
            members = b"".join(
                struct.pack(order + "III", btf.raw_type(var_id).name_off, btf.raw_type(var_id).word,
                            offset * 8)
                for var_id, offset, _size in struct.iter_unpack(order + "III", t.extra)
            )
            name = strings.add(btf.string(t.name_off).replace(".", "_"))
            types[index] = RawType(name, type_info(K.STRUCT, t.vlen), t.word, members)
            note("DATASEC -> STRUCT")
        elif kind == K.FLOAT and not features.float:
            types[index] = RawType(0, type_info(K.STRUCT), t.word)
            note("FLOAT -> STRUCT")
        elif kind == K.DECL_TAG and not features.decl_tag:
            types[index] = _one_byte_int(order)
            note("DECL_TAG -> INT")
        elif kind == K.TYPE_TAG and not features.type_tag:
            types[index] = RawType(0, type_info(K.CONST), t.word)
            note("TYPE_TAG -> CONST")
        elif kind == K.ENUM and t.kind_flag and not features.enum64:
            types[index] = RawType(t.name_off, type_info(K.ENUM, t.vlen), t.word, t.extra)
            note("signed ENUM -> ENUM")
        elif kind == K.ENUM64 and not features.enum64:
            if byte_int is None:
                types.append(_one_byte_int(order))
                byte_int = len(types)
            members = b"".join(
                struct.pack(order + "III", name_off, byte_int, 0)
                for name_off, _lo, _hi in struct.iter_unpack(order + "III", t.extra)
            )
            types[index] = RawType(t.name_off, type_info(K.UNION, t.vlen), t.word, members)
            note("ENUM64 -> UNION")
    return [f"{what} ({n})" for what, n in counts.items()]


def probe_blobs() -> dict[str, bytes]:
    """One minimal BTF blob per feature; the kernel loads a blob only if it knows the feature."""
    order = "<" if struct.pack("=H", 1) == b"\x01\x00" else ">"
    strings = b"\0int\0x\0f\0.data\0tag\0e\0v\0"
    s_int, s_x, s_f, s_data, s_tag, s_e, s_v = 1, 5, 7, 9, 15, 19, 21
    int_t = RawType(s_int, type_info(K.INT), 4, struct.pack(order + "I", (1 << 24) | 32))

    def blob(*types: RawType) -> bytes:
        return write_btf(types, strings, order)

    proto = RawType(0, type_info(K.FUNC_PROTO, 1), 1, struct.pack(order + "II", s_x, 1))
    var = RawType(s_x, type_info(K.VAR), 1, struct.pack(order + "I", VAR_GLOBAL_ALLOCATED))
    return {
        "func": blob(int_t, proto, RawType(s_f, type_info(K.FUNC, FUNC_STATIC), 2)),
        "global_func": blob(int_t, proto, RawType(s_f, type_info(K.FUNC, FUNC_GLOBAL), 2)),
        "datasec": blob(int_t, var, RawType(s_data, type_info(K.DATASEC, 1), 4,
                                             struct.pack(order + "III", 2, 0, 4))),
        "float": blob(RawType(s_f, type_info(K.FLOAT), 4)),
        "decl_tag": blob(int_t, RawType(s_f, type_info(K.STRUCT, 1), 4, struct.pack(order + "III", s_x, 1, 0)),
                         RawType(s_tag, type_info(K.DECL_TAG), 2, struct.pack(order + "i", -1))),
        "type_tag": blob(int_t, RawType(s_tag, type_info(K.TYPE_TAG), 1), RawType(0, type_info(K.PTR), 2)),
        "enum64": blob(RawType(s_e, type_info(K.ENUM64, 1), 8, struct.pack(order + "III", s_v, 1, 1))),
    }


def features_from(accepted: Iterable[str], probed: Iterable[str]) -> BtfFeatures:
    """``BtfFeatures`` with every probed feature that was not accepted switched off."""
    accepted = set(accepted)
    return BtfFeatures(**{name: False for name in probed if name not in accepted})


# ----------------------------------------------------------- .BTF.ext for PROG_LOAD


class ProgramBtfInfo(Slotted):
    """The func_info and line_info records of one linked program, as BPF_PROG_LOAD takes them."""

    func_info: tuple[tuple[int, int], ...]  # (first instruction, FUNC type id) per function
    line_info: tuple[tuple[int, int, int, int], ...]  # (instruction, file, line text, line << 10 | col)

    def shifted(self, count: int) -> ProgramBtfInfo:
        """The records after ``count`` instructions were put in front of the program (a prologue):
        they belong to the main function, which keeps its func_info at 0 and gets a line record
        there (the kernel wants one at each function's first instruction)."""
        if count == 0:
            return self
        funcs = tuple((0 if off == 0 else off + count, tid) for off, tid in self.func_info)
        lines = tuple((off + count, name, text, col) for off, name, text, col in self.line_info)
        if lines:
            _, name, text, col = lines[0]
            lines = ((0, name, text, col), *lines)
        return ProgramBtfInfo(funcs, lines)


def program_btf_info(ext: BtfExt, parts: Sequence[tuple[int, ProgramSpec]]) -> ProgramBtfInfo | None:
    """The records for a program made of ``parts`` (first instruction, function), main first.

    None when a function has no func_info record: the kernel wants one per function or none.
    Offsets become instruction indices into the linked program; string offsets stay as they
    are, since the fix-up only appends to the string section.
    """
    funcs: list[tuple[int, int]] = []
    lines: list[tuple[int, int, int, int]] = []
    for base, fn in sorted(parts, key=lambda part: part[0]):
        record = next((f for f in ext.func_info(fn.section) if f.insn_off == fn.offset), None)
        if record is None:
            return None
        funcs.append((base, record.type_id))
        end = fn.offset + len(fn.insns)
        for r in sorted(ext.line_info(fn.section), key=lambda r: r.insn_off):
            if fn.offset <= r.insn_off < end:
                insn = base + (r.insn_off - fn.offset) // INSN_SIZE
                lines.append((insn, r.file_name_off, r.line_off, (r.line << 10) | r.column))
    return ProgramBtfInfo(tuple(funcs), tuple(lines))
