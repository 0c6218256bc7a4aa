"""``__kconfig``, ``__ksym`` and kfunc externs, as libbpf 1.x collects, resolves and applies
them; no syscalls (what the running system says comes in as ``ExternSources``).

* ``collect_externs``: every undefined GLOBAL or WEAK NOTYPE symbol must have an extern VAR or
  FUNC of that name in the BTF, listed by the ``.kconfig`` DATASEC (``kconfig``: a variable of a
  type ``kconfig.kconfig_type`` accepts; functions are refused there) or by ``.ksyms`` (``ksym``
  variables, ``kfunc`` functions). Kconfig values are laid out the way libbpf lays out its
  ``.kconfig`` map: sorted by alignment (largest first), then size, then name, each aligned
  (``libbpf_order``, the order of libbpf's extern list).
* ``resolve_externs``: LINUX_KERNEL_VERSION (``kconfig.kernel_version_code``: Ubuntu's and
  Debian's rules, then the release), LINUX_HAS_BPF_COOKIE and LINUX_HAS_SYSCALL_WRAPPER from the
  sources, CONFIG_* from the Kconfig text (read only when one is wanted), typeless
  ksyms from kallsyms (``NAME.llvm.N`` data symbols count as NAME; two addresses are ambiguous),
  typed ksyms and kfuncs from the vmlinux BTF (a VAR or FUNC of that name whose type or
  prototype is compatible, bpf_core_types_are_compat). Weak externs that are not found are 0; a
  weak kfunc whose prototype does not match is unresolved too. Strong ones are errors naming
  them. A typed ksym or kfunc that vmlinux's BTF lacks is looked for in the module BTFs
  (``module_ksyms.find_ksym``: the first module that has it).
* ``apply_externs``: the spec with the ``.kconfig`` map's value filled, ksym ld_imm64s patched
  (BPF_PSEUDO_BTF_ID with the VAR's id and the BTF object fd, 0 for vmlinux, or the address split
  in two halves), kfunc calls patched (BPF_PSEUDO_KFUNC_CALL, imm the FUNC's id, off its module
  BTF's index in the programs' fd_array, ``ExternValues.fd_array``; an unresolved weak one becomes
  libbpf's poisoned helper call 2002000000 + its index in libbpf's extern list (``libbpf_order``),
  which the verifier refuses only if reached: "invalid func unknown#2002000003". That is libbpf
  1.2 and later; libbpf 1.1 leaves a kfunc call of BTF id 0, which the verifier also drops when
  dead), and the BTF rewritten so that the kernel takes it (``extern_btf``).
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence

from evspec.loader import asm
from evspec.loader.abi import bpf as abi
from evspec.loader.btf.core import CoreError, types_compat
from evspec.loader.btf.reader import (
    FUNC_GLOBAL,
    MAX_NESTING,
    VAR_GLOBAL_ALLOCATED,
    VAR_GLOBAL_EXTERN,
    VAR_STATIC,
    Btf,
    BtfError,
    BtfKind,
    RawType,
    type_info,
    write_btf,
)
from evspec.loader.btf.target import TargetBtf, essential_name
from evspec.loader.errors import ObjectError
from evspec.loader.externs import kconfig as kc
from evspec.loader.externs.module_ksyms import (
    KsymError,
    KsymFound,
    ModuleBtf,
    find_ksym,
    kfunc_calls,
    ld_imm64_values,
)
from evspec.loader.object.spec import ExternSpec, ObjectSpec, ProgramSpec, SectionLayout, replace

from evspec.codes import bpf as codes
from evspec.span import Slotted, set_field

KCONFIG_SEC = ".kconfig"
KSYMS_SEC = ".ksyms"
FUNC_EXTERN = 2
POISON_KFUNC_BASE = 2002000000  # libbpf's POISON_CALL_KFUNC_BASE
DUMMY_KSYM = "dummy_ksym"
VIRTUAL = ("LINUX_KERNEL_VERSION", "LINUX_HAS_BPF_COOKIE", "LINUX_HAS_SYSCALL_WRAPPER")
_NATIVE = "<" if sys.byteorder == "little" else ">"


class UndefinedSymbol(Slotted):
    """An undefined GLOBAL or WEAK NOTYPE symbol of the ELF symbol table."""

    name: str
    weak: bool


# -------------------------------------------------------------------------------- collect


def type_text(btf: Btf, type_id: int, depth: int = 0) -> str:
    """A short C-like name of a type for messages: ``int``, ``struct rq``, ``char[64]``. ``BtfError``
    for a type nested deeper than the kernel resolves (a loop of pointers or arrays)."""
    if type_id == 0:
        return "void"
    if depth > MAX_NESTING:
        raise BtfError(f"BTF type {type_id} is nested more than {MAX_NESTING} levels deep")
    t = btf.resolve(type_id)
    if t.kind == BtfKind.ARRAY and t.array is not None:
        return f"{type_text(btf, t.array.type, depth + 1)}[{t.array.nelems}]"
    if t.kind == BtfKind.PTR:
        return f"{type_text(btf, t.type, depth + 1)} *"
    if t.kind == BtfKind.FUNC_PROTO:
        params = ", ".join(type_text(btf, p.type, depth + 1) for p in t.params) or "void"
        return f"{type_text(btf, t.type, depth + 1)} ({params})"
    prefix = {BtfKind.STRUCT: "struct ", BtfKind.UNION: "union ", BtfKind.ENUM: "enum ",
              BtfKind.ENUM64: "enum ", BtfKind.FWD: "struct "}.get(t.kind, "")
    return prefix + (t.name or "(anon)")


def _fail(path: str, message: str, code: str = codes.EXTERN_INVALID) -> ObjectError:
    return ObjectError(code, f"{path}: {message}", perf_message=f"Failed to load {path}: {message}")


def _strip_mods(btf: Btf, type_id: int) -> int:
    return btf.resolve(type_id).id if type_id else 0


def collect_externs(path: str, btf: Btf | None, symbols: Sequence[UndefinedSymbol]) -> tuple[ExternSpec, ...]:
    """The externs of an object, kconfig ones with their offsets in the ``.kconfig`` map."""
    if not symbols:
        return ()
    if btf is None:
        raise _fail(path, f"extern {symbols[0].name!r} needs BTF to say what it is, and the object has "
                    "no .BTF section (compile with -g)")
    sections: dict[int, str] = {}
    by_name: dict[str, int] = {}
    for t in btf.types():
        if t.kind == BtfKind.DATASEC:
            sections.update((i.type, t.name) for i in t.secinfos)
        elif t.kind in (BtfKind.VAR, BtfKind.FUNC) and t.name:
            by_name.setdefault(t.name, t.id)
    out = []
    for sym in symbols:
        tid = by_name.get(sym.name)
        if tid is None:
            raise _fail(path, f"extern {sym.name!r} has no VAR or FUNC in the object's BTF")
        t = btf.type(tid)
        extern = VAR_GLOBAL_EXTERN if t.kind == BtfKind.VAR else FUNC_EXTERN
        if t.linkage != extern:
            raise _fail(path, f"extern {sym.name!r}: its BTF {t.kind.name} is not declared extern")
        sec = sections.get(tid)
        if sec == KCONFIG_SEC:
            if t.kind == BtfKind.FUNC:
                raise _fail(path, f"extern function {sym.name!r} is in {KCONFIG_SEC}; only variables "
                            "can be __kconfig")
            ktype = kc.kconfig_type(btf, t.type)
            text = type_text(btf, t.type)
            if ktype is None:
                raise _fail(path, f"extern {sym.name!r} (__kconfig) has type {text}, which kconfig "
                            "values cannot have (bool, enum libbpf_tristate, char, a 2-, 4- or 8-byte "
                            "integer, or a char array)")
            out.append(ExternSpec(sym.name, "kconfig", sym.weak, tid, _strip_mods(btf, t.type), text,
                                  size=btf.size_of(t.type)))
        elif sec == KSYMS_SEC:
            kind = "kfunc" if t.kind == BtfKind.FUNC else "ksym"
            type_id = _strip_mods(btf, t.type)
            out.append(ExternSpec(sym.name, kind, sym.weak, tid, type_id, type_text(btf, type_id)))
        else:
            where = f"section {sec!r}" if sec else "no DATASEC"
            raise _fail(path, f"extern {sym.name!r} is in {where}; only {KCONFIG_SEC} (__kconfig) "
                        f"and {KSYMS_SEC} (__ksym) externs are supported")
    return _lay_out_kconfig(btf, out)


def libbpf_order(btf: Btf, externs: Iterable[ExternSpec]) -> list[ExternSpec]:
    """The externs in the order of libbpf's ``obj->externs`` once collected (``cmp_externs``, the
    same in libbpf 1.1 to 1.7): the kconfig ones first, by alignment (largest first), then size,
    then name; then the ksyms, typed, typeless and kfuncs alike, by name. Names compare as
    strcmp compares them, byte by byte."""
    def key(e: ExternSpec) -> tuple[int, int, int, bytes]:
        if e.kind == "kconfig":
            return (0, -kc.align_of(btf, e.type_id), e.size, e.name.encode())
        return (1, 0, 0, e.name.encode())

    return sorted(externs, key=key)


def _lay_out_kconfig(btf: Btf, externs: list[ExternSpec]) -> tuple[ExternSpec, ...]:
    offsets: dict[str, int] = {}
    off = 0
    for e in libbpf_order(btf, (e for e in externs if e.kind == "kconfig")):
        align = kc.align_of(btf, e.type_id)
        off = -(-off // align) * align
        offsets[e.name] = off
        off += e.size
    return tuple(replace(e, offset=offsets[e.name]) if e.name in offsets else e for e in externs)


def kconfig_size(externs: Iterable[ExternSpec]) -> int:
    """The value size of the ``.kconfig`` map (0: the object has no kconfig extern)."""
    return max((e.offset + e.size for e in externs if e.kind == "kconfig"), default=0)


# -------------------------------------------------------------------------------- resolve


class ExternSources(Slotted):
    """What externs are resolved against. Kconfig, kallsyms and BTF are read only when needed."""

    release: str  # uname -r
    bpf_cookie: bool
    syscall_wrapper: bool
    kconfig: Callable[[], tuple[Mapping[str, str], str]]  # (values, the file they came from)
    kallsyms: Callable[[], Iterable[tuple[int, str, str]]]  # (address, type letter, name)
    vmlinux: Callable[[], TargetBtf]
    modules: Callable[[], Sequence[ModuleBtf]] = lambda: ()  # the module BTFs, asked for when vmlinux lacks a name
    version: str = ""  # uname -v
    version_signature: str | None = None  # /proc/version_signature (Ubuntu's kernels), None: none


class ExternValues(Slotted):
    """Resolved externs: the ``.kconfig`` map value; per ksym the ld_imm64's (src_reg, imm,
    second imm); per kfunc its calls' (imm: the FUNC's BTF id, off: its module's fd_array index),
    None for an unresolved weak one; the fd_array to load the programs with (module BTF fds)."""

    __slots__ = ("kconfig", "ksyms", "kfuncs", "warnings", "fd_array")
    kconfig: bytes
    ksyms: Mapping[str, tuple[int, int, int]]
    kfuncs: Mapping[str, tuple[int, int] | None]
    warnings: tuple[str, ...]  # values changed to fit, as libbpf warns of them
    fd_array: tuple[int, ...]  # () when no kfunc of a module is called

    def __init__(
        self, kconfig: bytes = b"", ksyms: Mapping[str, tuple[int, int, int]] | None = None,
        kfuncs: Mapping[str, tuple[int, int] | None] | None = None, warnings: tuple[str, ...] = (),
        fd_array: tuple[int, ...] = (),
    ) -> None:
        set_field(self, "kconfig", kconfig)
        set_field(self, "ksyms", {} if ksyms is None else ksyms)
        set_field(self, "kfuncs", {} if kfuncs is None else kfuncs)
        set_field(self, "warnings", warnings)
        set_field(self, "fd_array", fd_array)


def resolve_externs(spec: ObjectSpec, sources: ExternSources) -> ExternValues:
    if not spec.externs:
        return ExternValues()
    assert spec.btf is not None  # collect_externs refuses externs without BTF
    local = Btf(spec.btf)
    warnings: list[str] = []
    kconfig, ksyms = _kconfig_value(spec, local, sources, warnings), _ksyms(spec, local, sources)
    kfuncs, fd_array = _kfuncs(spec, local, sources)
    return ExternValues(kconfig, ksyms, kfuncs, tuple(warnings), fd_array)


def _unresolved(spec: ObjectSpec, ext: ExternSpec, why: str) -> ObjectError:
    return _fail(spec.path, f"extern {ext.name!r} ({ext.kind}, {ext.type_name}) is strong and "
                 f"cannot be resolved: {why}", codes.EXTERN_UNRESOLVED)


def _kconfig_value(spec: ObjectSpec, local: Btf, sources: ExternSources, warnings: list[str]) -> bytes:
    externs = [e for e in spec.externs if e.kind == "kconfig"]
    data = bytearray(kconfig_size(externs))
    config: Mapping[str, str] | None = None
    source = ""
    for ext in externs:
        ktype = kc.kconfig_type(local, ext.type_id)
        assert ktype is not None  # collect_externs checked it
        try:
            if ext.name.startswith("CONFIG_"):
                if config is None:
                    try:
                        config, source = sources.kconfig()
                    except kc.KconfigUnreadable as exc:
                        raise _fail(spec.path, f"extern {ext.name!r} needs the kernel's Kconfig, and "
                                    f"none could be read ({exc})", codes.KCONFIG_UNREADABLE) from None
                value = config.get(ext.name)
                if value is None:
                    if not ext.weak:
                        raise _unresolved(spec, ext, f"{source} does not set it")
                    continue
                raw = kc.encode_config(ext.name, ktype, ext.type_name, value)
                if ktype.kind == "char_array" and len(value[1:-1].encode()) >= ktype.size:
                    warnings.append(f"{spec.path}: extern {ext.name!r} ({ext.type_name}): {source} sets "
                                    f"it to {value}, cut to {ktype.size - 1} bytes and its NUL")
            elif ext.name in VIRTUAL:
                raw = kc.encode_number(ext.name, ktype, ext.type_name, _virtual(spec, ext, sources),
                                       virtual=True)
            elif ext.name.startswith("LINUX_") and ext.weak:
                continue  # an unknown virtual value libbpf leaves 0 when it is weak
            else:
                raise _fail(spec.path, f"extern {ext.name!r} (__kconfig) is neither a CONFIG_ value "
                            f"nor one of {', '.join(VIRTUAL)}", codes.EXTERN_UNRESOLVED)
        except kc.KconfigError as exc:
            raise _fail(spec.path, str(exc), codes.EXTERN_TYPE) from None
        data[ext.offset:ext.offset + len(raw)] = raw
    return bytes(data)


def _virtual(spec: ObjectSpec, ext: ExternSpec, sources: ExternSources) -> int:
    if ext.name == "LINUX_KERNEL_VERSION":
        code = kc.kernel_version_code(sources.release, sources.version, sources.version_signature)
        if not code:
            signature = ("" if sources.version_signature is None else
                         f", nor as the third word of {kc.VERSION_SIGNATURE} "
                         f"({sources.version_signature.strip()!r})")
            raise _fail(spec.path, f"extern {ext.name!r}: no kernel version a.b.c in the release "
                        f"{sources.release!r}, nor after 'Debian ' in the version {sources.version!r}"
                        f"{signature}", codes.EXTERN_UNRESOLVED)
        return code
    return int(sources.bpf_cookie if ext.name == "LINUX_HAS_BPF_COOKIE" else sources.syscall_wrapper)


def _ksyms(spec: ObjectSpec, local: Btf, sources: ExternSources) -> dict[str, tuple[int, int, int]]:
    out: dict[str, tuple[int, int, int]] = {}
    typeless = {e.name: e for e in spec.externs if e.kind == "ksym" and e.type_id == 0}
    if typeless:
        addresses = _kallsyms(spec, typeless, sources)
        for name, ext in typeless.items():
            addr = addresses.get(name)
            if addr is None:
                if not ext.weak:
                    raise _unresolved(spec, ext, "/proc/kallsyms has no such symbol")
                addr = 0
            elif addr == 0:
                raise _fail(spec.path, f"extern {name!r} (ksym): /proc/kallsyms gives its address as "
                            "0; addresses are hidden from users without CAP_SYSLOG (kptr_restrict): "
                            "load as root", codes.EXTERN_UNRESOLVED)
            out[name] = (0, addr & 0xFFFFFFFF, addr >> 32)
    for ext in spec.externs:
        if ext.kind != "ksym" or ext.type_id == 0:
            continue
        # weak and missing: 0, as libbpf leaves it
        out[ext.name] = ld_imm64_values(_kernel_btf_id(spec, local, ext, BtfKind.VAR, sources))
    for ext in spec.externs:  # ld_imm64 of a kfunc: its FUNC id, like a typed ksym
        if ext.kind == "kfunc":
            out[ext.name] = ld_imm64_values(_kernel_btf_id(spec, local, ext, BtfKind.FUNC, sources))
    return out


def _kallsyms(spec: ObjectSpec, wanted: Mapping[str, ExternSpec], sources: ExternSources) -> dict[str, int]:
    found: dict[str, int] = {}
    try:
        entries = sources.kallsyms()
        for addr, letter, name in entries:
            base = kallsyms_base_name(letter, name)
            if base not in wanted:
                continue
            if base in found and found[base] != addr:
                raise _fail(spec.path, f"extern {base!r} (ksym) is ambiguous: /proc/kallsyms has it at "
                            f"{found[base]:#x} and at {addr:#x}", codes.EXTERN_UNRESOLVED)
            found[base] = addr
    except OSError as exc:
        raise _fail(spec.path, f"typeless ksym extern(s) {', '.join(map(repr, wanted))} need "
                    f"/proc/kallsyms, which cannot be read: {exc.strerror or exc}",
                    codes.EXTERN_UNRESOLVED) from None
    return found


def kallsyms_base_name(letter: str, name: str) -> str:
    """The name a kallsyms line offers typeless ksyms: a data symbol's ``NAME.llvm.N`` is NAME."""
    return name.split(".llvm.", 1)[0] if letter == "d" and ".llvm." in name else name


def _kernel_btf_id(spec: ObjectSpec, local: Btf, ext: ExternSpec, kind: BtfKind,
                   sources: ExternSources) -> KsymFound | None:
    """Where the VAR of a typed ksym or the FUNC of a kfunc is (vmlinux's BTF, else the first
    module BTF that has it); None for a weak one that is missing (or, for a kfunc, has another
    prototype)."""
    name = essential_name(ext.name) if kind == BtfKind.FUNC else ext.name
    target = sources.vmlinux()
    what = "variable" if kind == BtfKind.VAR else "function"
    try:
        found = find_ksym(target, sources.modules, name, kind)
    except BtfError as exc:
        raise _fail(spec.path, f"extern {ext.name!r} ({ext.kind}) is not in vmlinux's BTF, and the module "
                    f"BTFs cannot be read: {exc}", codes.EXTERN_UNRESOLVED) from None
    if found is None:
        if ext.weak:
            return None
        raise _unresolved(spec, ext, f"the kernel's BTF ({target.name}) has no {what} {name!r}, nor has any "
                          "module's")
    tid, tbtf = found.type_id, found.target.btf
    target_type = tbtf.resolve(tbtf.type(tid).type).id
    try:
        compatible = types_compat(local, ext.type_id, tbtf, target_type)
    except CoreError:
        compatible = False
    if compatible:
        return found
    if kind == BtfKind.FUNC and ext.weak:
        return None
    owner = "the kernel's" if found.module is None else f"module {found.module.name}'s"
    raise _fail(spec.path, f"extern {ext.name!r} ({ext.kind}) is declared as {ext.type_name}, but "
                f"{owner} {what} [{tid}] is {type_text(tbtf, target_type)}", codes.EXTERN_TYPE)


def _kfuncs(spec: ObjectSpec, local: Btf, sources: ExternSources
            ) -> tuple[dict[str, tuple[int, int] | None], tuple[int, ...]]:
    found = {e.name: _kernel_btf_id(spec, local, e, BtfKind.FUNC, sources)
             for e in spec.externs if e.kind == "kfunc"}
    try:
        return kfunc_calls(found)
    except KsymError as exc:
        raise _fail(spec.path, str(exc), codes.EXTERN_UNRESOLVED) from None


# ---------------------------------------------------------------------------------- apply


def apply_externs(spec: ObjectSpec, values: ExternValues) -> ObjectSpec:
    """The spec with its externs' values in place (see the module docstring)."""
    if not spec.externs or spec.externs_applied:
        return spec
    assert spec.btf is not None
    index = {e.name: i for i, e in enumerate(libbpf_order(Btf(spec.btf), spec.externs))}
    maps = tuple(replace(m, initial_value=values.kconfig) if m.section == KCONFIG_SEC else m
                 for m in spec.maps)
    btf, layouts = extern_btf(spec.btf, spec.externs)
    return replace(
        spec, maps=maps, btf=btf, layouts=spec.layouts + layouts, externs_applied=True,
        programs=tuple(_patch(p, values, index) for p in spec.programs),
        subprograms=tuple(_patch(p, values, index) for p in spec.subprograms))


def _patch(prog: ProgramSpec, values: ExternValues, index: Mapping[str, int]) -> ProgramSpec:
    mine = [r for r in prog.relocations if r.kind in ("ksym", "kfunc")]
    if not mine:
        return prog
    buf = bytearray(prog.insns)
    for rel in mine:
        at = rel.insn_index
        insn = asm.decode(buf, at)
        if rel.kind == "ksym":
            src_reg, imm, imm2 = values.ksyms[rel.target]
            asm.put(buf, at, insn._replace(src=src_reg, imm=asm.s32(imm)))
            asm.put(buf, at + 1, asm.decode(buf, at + 1)._replace(imm=asm.s32(imm2)))
            continue
        call = values.kfuncs[rel.target]
        if call is None:  # libbpf's poison (1.2 on; 1.1 leaves a kfunc call of id 0)
            insn = insn._replace(src=0, dst=0, off=0, imm=POISON_KFUNC_BASE + index[rel.target])
        else:
            insn = insn._replace(src=abi.BPF_PSEUDO_KFUNC_CALL, imm=call[0], off=call[1])
        asm.put(buf, at, insn)
    rest = tuple(r for r in prog.relocations if r.kind not in ("ksym", "kfunc"))
    return replace(prog, insns=bytes(buf), relocations=rest)


# ------------------------------------------------------------------------------------ BTF


def extern_btf(raw: bytes, externs: Sequence[ExternSpec]) -> tuple[bytes, tuple[SectionLayout, ...]]:
    """The object's BTF as libbpf hands it to the kernel once externs are collected: ``.kconfig``
    variables allocated at their map offsets; ``.ksyms`` entries made 4-byte allocated ``int``
    variables at 4-byte steps, kfunc FUNCs global with their unnamed parameters named
    ``dummy_ksym`` and their DATASEC entries pointing at a ``dummy_ksym`` variable (static here,
    so that the DATASEC completion takes the offsets as given). Type ids stay where they were;
    the dummy variable (and an ``int``, if the BTF has none) are appended. Also the layouts the
    DATASEC completion (``btf.fixup``) needs for the two sections."""
    btf = Btf(raw)
    order = btf.byte_order
    types = [btf.raw_type(tid) for tid in range(1, len(btf))]
    strings = bytearray(btf.string_section())
    by_name = {e.name: e for e in externs}

    def add_string(text: str) -> int:
        at = len(strings)
        strings.extend(text.encode() + b"\0")
        return at

    def add_type(t: RawType) -> int:
        types.append(t)
        return len(types)

    layouts = []
    for tid in range(1, len(btf)):
        t = btf.type(tid)
        if t.kind != BtfKind.DATASEC or t.name not in (KCONFIG_SEC, KSYMS_SEC):
            continue
        infos: list[tuple[int, int, int]] = []
        symbols: list[tuple[str, int]] = []
        if t.name == KCONFIG_SEC:
            for info in t.secinfos:
                var = btf.type(info.type)
                ext = by_name[var.name]
                _set_var(types, var.id, VAR_GLOBAL_ALLOCATED, None, order)
                infos.append((info.type, ext.offset, info.size))
                symbols.append((var.name, ext.offset))
            size = kconfig_size(externs)
        else:
            int_id = next((i for i in range(1, len(btf)) if btf.type(i).kind == BtfKind.INT
                           and btf.type(i).int_bits == 32), 0)
            if not int_id:
                int_id = add_type(RawType(add_string("int"), type_info(BtfKind.INT), 4,
                                          struct.pack(order + "I", (1 << 24) | 32)))
            dummy = 0
            for i, info in enumerate(t.secinfos):
                entry = btf.type(info.type)
                if entry.kind == BtfKind.FUNC:
                    if not dummy:
                        dummy_name = add_string(DUMMY_KSYM)
                        dummy = add_type(RawType(dummy_name, type_info(BtfKind.VAR), int_id,
                                                 struct.pack(order + "I", VAR_STATIC)))
                    _name_params(types, btf, entry.type, dummy_name, order)
                    types[entry.id - 1] = replace(types[entry.id - 1],
                                                  info=type_info(BtfKind.FUNC, FUNC_GLOBAL, False))
                    infos.append((dummy, 4 * i, 4))
                else:
                    _set_var(types, entry.id, VAR_GLOBAL_ALLOCATED, int_id, order)
                    infos.append((entry.id, 4 * i, 4))
                    symbols.append((entry.name, 4 * i))
            size = 4 * len(t.secinfos)
        extra = b"".join(struct.pack(order + "III", *info) for info in infos)
        types[tid - 1] = RawType(types[tid - 1].name_off, types[tid - 1].info, size, extra)
        layouts.append(SectionLayout(t.name, size, tuple(symbols)))
    return write_btf(types, bytes(strings), order), tuple(layouts)


def _set_var(types: list[RawType], var_id: int, linkage: int, type_id: int | None, order: str) -> None:
    t = types[var_id - 1]
    types[var_id - 1] = RawType(t.name_off, t.info, t.word if type_id is None else type_id,
                                struct.pack(order + "I", linkage))


def _name_params(types: list[RawType], btf: Btf, proto_id: int, name_off: int, order: str) -> None:
    proto = types[proto_id - 1]
    params = [struct.unpack_from(order + "II", proto.extra, 8 * i) for i in range(len(proto.extra) // 8)]
    named = [(name_off if p_type and not p_name else p_name, p_type) for p_name, p_type in params]
    types[proto_id - 1] = replace(proto, extra=b"".join(struct.pack(order + "II", *p) for p in named))


# ------------------------------------------------------------------------ the running system


def kallsyms_entries(path: str = "/proc/kallsyms") -> Iterable[tuple[int, str, str]]:
    """(address, type letter, name) of each kallsyms line (module names after the name dropped)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3:
                yield int(parts[0], 16), parts[1], parts[2]


def running_system(spec: ObjectSpec, bpf_cookie: Callable[[], bool],
                   modules: Callable[[], Sequence[ModuleBtf]] = lambda: (), *,
                   syscall_wrapper: Callable[[str], bool],
                   uname: Callable[[], os.uname_result] = os.uname,
                   version_signature: str | os.PathLike[str] = kc.VERSION_SIGNATURE) -> ExternSources:
    """The sources of the running kernel. ``bpf_cookie`` probes for bpf_get_attach_cookie (one
    program load); ``syscall_wrapper(machine)`` is libbpf 1.8's probe of LINUX_HAS_SYSCALL_WRAPPER,
    a kprobe on ``__<arch>_sys_bpf`` (``load.syscall_wrapper.has_syscall_wrapper``). Both are
    looked at only when ``spec`` has that extern, and so is ``version_signature`` (for
    LINUX_KERNEL_VERSION). ``modules``: the kernel's module BTFs, opened by the caller (it holds
    their fds), asked for when an extern is not in vmlinux's BTF. ``uname``: release, version and
    machine (``uname -r``, ``-v``, ``-m``)."""
    system = uname()
    release = system.release

    def has_wrapper() -> bool:
        return syscall_wrapper(system.machine)

    names = {e.name for e in spec.externs}
    return ExternSources(
        release=release, bpf_cookie="LINUX_HAS_BPF_COOKIE" in names and bpf_cookie(),
        syscall_wrapper="LINUX_HAS_SYSCALL_WRAPPER" in names and has_wrapper(),
        kconfig=lambda: kc.read_kconfig(release), kallsyms=kallsyms_entries,
        vmlinux=TargetBtf.running_kernel, modules=modules, version=system.version,
        version_signature=(kc.read_version_signature(version_signature)
                           if "LINUX_KERNEL_VERSION" in names else None))


# ------------------------------------------------------------------ without the system itself


class NotRecorded(Exception):  # noqa: N818 - what it says, not an error of the object
    """Raised by the sources of ``offline_sources`` for what the description of a system does not
    hold (a snapshot's module BTFs, a Kconfig it could not read); ``resolve_externs`` lets it
    through, so that the caller can say the extern was not checked, and ``why``."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def has_attach_cookie(vmlinux: TargetBtf) -> bool:
    """LINUX_HAS_BPF_COOKIE told from the kernel's BTF: its ``enum bpf_func_id`` lists
    BPF_FUNC_get_attach_cookie exactly when the kernel has the helper (5.15 added both, for
    tracepoints among the first). libbpf probes instead, loading a tracepoint program that calls
    it (``_has_bpf_cookie`` of the loader); tests hold both answers equal on the test kernel."""
    btf = vmlinux.btf
    for type_id in vmlinux.named("bpf_func_id"):
        t = btf.type(type_id)
        if t.kind in (BtfKind.ENUM, BtfKind.ENUM64) and t.name == "bpf_func_id":
            return any(e.name == "BPF_FUNC_get_attach_cookie" for e in t.enumerators)
    return False


def offline_sources(spec: ObjectSpec, *, release: str, version: str, machine: str, version_signature: str | None,
                    kconfig: Callable[[], tuple[Mapping[str, str], str]],
                    kallsyms_names: Callable[[], Iterable[tuple[str, str]]],
                    vmlinux: Callable[[], TargetBtf], modules: Callable[[], Sequence[ModuleBtf]],
                    kprobes: bool | None = None) -> ExternSources:
    """The sources of a system described rather than asked (``evspec check``), with no syscall:
    LINUX_HAS_BPF_COOKIE from ``vmlinux``'s BTF (``has_attach_cookie``), LINUX_HAS_SYSCALL_WRAPPER
    from ``__<arch>_sys_bpf`` being among ``kallsyms_names`` ((type letter, name) pairs: ``machine``
    is ``uname -m``) on a kernel that makes kprobes (``kprobes``; None: not known), as libbpf 1.8
    probes it with a kprobe on that function. Without addresses each name is at address 1: a typeless ksym resolves
    where the name is listed, and whether two lines of a name differ is the caller's to tell.
    Each source may raise ``NotRecorded``; the two values are decided now, when ``spec`` has them."""
    names = {e.name for e in spec.externs}

    def has_wrapper() -> bool:
        if kprobes is False:
            return False
        wrapper = f"__{SYSCALL_PREFIX.get(machine, '')}_sys_bpf"
        try:
            return any(name == wrapper for _letter, name in kallsyms_names())
        except OSError:  # as running_system: no kallsyms, no wrapper
            return False

    return ExternSources(
        release=release, bpf_cookie="LINUX_HAS_BPF_COOKIE" in names and has_attach_cookie(vmlinux()),
        syscall_wrapper="LINUX_HAS_SYSCALL_WRAPPER" in names and has_wrapper(), kconfig=kconfig,
        kallsyms=lambda: ((1, letter, name) for letter, name in kallsyms_names()), vmlinux=vmlinux,
        modules=modules, version=version, version_signature=version_signature)


# libbpf's arch_specific_syscall_pfx by machine (uname -m)
SYSCALL_PREFIX = {"x86_64": "x64", "i386": "ia32", "i686": "ia32", "s390x": "s390x", "aarch64": "arm64",
                  "riscv64": "riscv", "ppc64le": "powerpc64", "ppc64": "powerpc64", "mips": "mips"}


def wrapper_function(machine: str) -> str | None:
    """``__<arch>_sys_bpf`` for ``machine`` (``uname -m``); None where libbpf knows no prefix."""
    prefix = SYSCALL_PREFIX.get(machine)
    return None if prefix is None else f"__{prefix}_sys_bpf"
