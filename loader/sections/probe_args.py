"""Probe fetch arguments (``[NAME=]FETCH[:TYPE]``) turned into places a BPF prologue can read.

A fetched value starts at a ``pt_regs`` register of the probed task (or a constant address) and
follows a chain of memory reads: ``value = base; for off in derefs: value = *(value + off)``; the
last read has the size of the value's type, the others read a pointer. Supported fetches:

* ``%REG`` — a register by its pt_regs name (x86_64: ``%ax %bx %cx %dx %si %di %bp %sp %r8-%r15
  %ip %flags %cs %ss %orig_ax``, 64-bit spellings ``%rax``… too; aarch64: ``%x0-%x30 %lr %sp %pc
  %pstate``);
* ``+OFF(FETCH)`` / ``-OFF(FETCH)`` — a read at FETCH's value plus OFF, nested freely;
* ``$stackN`` (the N-th word above the stack pointer), ``$stack`` (the stack pointer itself),
  ``$argN`` (the N-th integer argument of the calling convention, registers then stack, at the
  function's entry), ``$retval`` (return probes only);
* ``@SYM[+OFF]`` — the memory at a symbol. Uprobes: SYM is looked up in the target's symbol table
  and addressed relative to the probed instruction (``ip + SYM - probe address``), so PIE programs
  and shared libraries work without knowing their load base; not in return probes (``ip`` is then
  the caller's). Kprobes: the address comes from ``/proc/kallsyms``;
* ``NAME``, ``NAME->MEMBER``, ``NAME.MEMBER``, ``NAME[N]`` — a parameter of the probed function,
  located through the target's DWARF (pyelftools, imported only here) at the probe address:
  single-expression locations (``DW_OP_reg*``, ``DW_OP_breg*``, ``DW_OP_fbreg`` with the frame base
  ``DW_OP_call_frame_cfa`` computed from the CFI, or a register), or the location-list entry that
  covers the address; ``DW_OP_entry_value(reg)`` at the function's entry is the register itself.

``:TYPE`` is ``u8``…``u64``, ``s8``…``s64``, ``x8``…``x64`` or a bitfield ``bW@O/S``; without it a
register or stack value is ``u64`` and a named parameter gets its DWARF type's size and sign.
Every failure is an ``ObjectError`` with a code ``EK130``–``EK138`` naming the argument.
"""

from __future__ import annotations

import platform
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evspec.loader.errors import ObjectError
from evspec.loader.sections.names import ProbeArg

from evspec.codes import kernel as codes
from evspec.span import Slotted, replace

if TYPE_CHECKING:
    from elftools.dwarf.die import DIE
    from elftools.dwarf.dwarfinfo import DWARFInfo

MAX_ARGS = 3
POINTER_SIZE = 8

# ----------------------------------------------------------------- registers


class Arch(Slotted):
    """What the prologue needs to know of an architecture's ``struct pt_regs`` and ABI."""

    name: str
    elf_machine: str  # pyelftools' e_machine spelling
    regs: dict[str, int]  # pt_regs register name -> byte offset
    aliases: dict[str, str]  # other spellings -> pt_regs name
    dwarf_regs: tuple[str, ...]  # DWARF register number -> pt_regs name
    arg_regs: tuple[str, ...]  # integer arguments of the calling convention
    ret_reg: str
    sp: str
    ip: str
    stack_args_at: int  # byte offset from sp of the first stack-passed argument at entry
    cfa_at_entry: int  # CFA - sp at the function's first instruction

    def canonical(self, reg: str) -> str | None:
        reg = self.aliases.get(reg, reg)
        return reg if reg in self.regs else None


_X86_64_ORDER = (
    "r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di orig_ax ip cs flags sp ss".split()
)
X86_64 = Arch(
    name="x86_64",
    elf_machine="EM_X86_64",
    regs={name: 8 * i for i, name in enumerate(_X86_64_ORDER)},
    aliases={
        **{f"r{n}": n for n in ("ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip")},
        "rflags": "flags",
        "eflags": "flags",
    },
    dwarf_regs=tuple("ax dx cx bx si di bp sp r8 r9 r10 r11 r12 r13 r14 r15 ip".split()),
    arg_regs=("di", "si", "dx", "cx", "r8", "r9"),
    ret_reg="ax",
    sp="sp",
    ip="ip",
    stack_args_at=8,  # the return address is at 0(%sp)
    cfa_at_entry=8,
)
AARCH64 = Arch(
    name="aarch64",
    elf_machine="EM_AARCH64",
    regs={**{f"x{i}": 8 * i for i in range(31)}, "sp": 248, "pc": 256, "pstate": 264},
    aliases={"lr": "x30", "fp": "x29"},
    dwarf_regs=(*(f"x{i}" for i in range(31)), "sp"),
    arg_regs=tuple(f"x{i}" for i in range(8)),
    ret_reg="x0",
    sp="sp",
    ip="pc",
    stack_args_at=0,
    cfa_at_entry=0,
)
ARCHES = {a.name: a for a in (X86_64, AARCH64)}


def arch_named(name: str | None = None) -> Arch:
    """The architecture called ``name`` (default: this machine's)."""
    name = name or platform.machine()
    name = {"amd64": "x86_64", "arm64": "aarch64"}.get(name, name)
    try:
        return ARCHES[name]
    except KeyError:
        raise ObjectError(
            codes.PROBE_ARG_REGISTER,
            f"argument prologues are not supported on {name} (supported: {', '.join(ARCHES)})",
        ) from None


# ----------------------------------------------------------------- fetch places


class ValueType(Slotted):
    """The integer a fetched value becomes: ``size`` bytes read, sign-extended when ``signed``;
    a bitfield keeps ``bits`` bits from bit ``shift`` of the value read."""

    size: int = 8
    signed: bool = False
    shift: int = 0
    bits: int | None = None

    def text(self) -> str:
        if self.bits is not None:
            return f"b{self.bits}@{self.shift}/{self.size * 8}"
        return f"{'s' if self.signed else 'u'}{self.size * 8}"


U64 = ValueType()


class FetchPlace(Slotted):
    """Where one value is read: the base (a pt_regs offset, or the constant ``address`` when
    ``reg_offset`` is None), then a read at ``value + off`` for each of ``derefs``."""

    name: str  # the argument as written, for messages
    reg_offset: int | None
    address: int = 0
    derefs: tuple[int, ...] = ()
    type: ValueType = U64

    def describe(self) -> str:
        base = f"regs+{self.reg_offset}" if self.reg_offset is not None else f"{self.address:#x}"
        for off in self.derefs:
            base = f"*({base}{off:+d})"
        return f"{base}:{self.type.text()}"


# ----------------------------------------------------------------- fetch syntax


class Register(Slotted):
    name: str


class Special(Slotted):
    name: str  # without the '$'


class SymbolRef(Slotted):
    name: str
    offset: int


class Deref(Slotted):
    offset: int
    inner: Fetch


class Variable(Slotted):
    name: str
    accessors: tuple[tuple[str, str], ...]  # ("->", member) / (".", member) / ("[]", index)


Fetch = Register | Special | SymbolRef | Deref | Variable

_NUM = r"0[xX][0-9a-fA-F]+|[0-9]+"
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_DEREF = re.compile(rf"([+-])({_NUM})\(")
_SYMBOL = re.compile(rf"@({_IDENT})(?:([+-])({_NUM}))?$")
_ACCESSOR = re.compile(rf"->({_IDENT})|\.({_IDENT})|\[({_NUM})\]")
_TYPE_INT = re.compile(r"([usx])(8|16|32|64)$")
_TYPE_BITFIELD = re.compile(r"b([0-9]+)@([0-9]+)/(8|16|32|64)$")


def _syntax(arg: str, why: str) -> ObjectError:
    return ObjectError(codes.PROBE_ARG_SYNTAX, f"probe argument '{arg}': {why}")


def parse_fetch(text: str) -> Fetch:
    """Parse the FETCH part of a probe argument (as section.ProbeArg keeps it)."""
    fetch, rest = _parse(text, text)
    if rest:
        raise _syntax(text, f"unexpected '{rest}' after the fetch expression")
    return fetch


def _parse(text: str, whole: str) -> tuple[Fetch, str]:
    if m := _DEREF.match(text):
        offset = int(m.group(2), 0) * (-1 if m.group(1) == "-" else 1)
        inner, rest = _parse(text[m.end() :], whole)
        if not rest.startswith(")"):
            raise _syntax(whole, "a dereference +OFF(...) lacks its ')'")
        return Deref(offset, inner), rest[1:]
    head = re.match(r"[^()]*", text)
    assert head is not None
    token, rest = head.group(0), text[head.end() :]
    if m := re.fullmatch(rf"%({_IDENT})", token):
        return Register(m.group(1)), rest
    if m := re.fullmatch(rf"\$({_IDENT})", token):
        return Special(m.group(1)), rest
    if token.startswith("@"):
        if not (m := _SYMBOL.match(token)):
            raise _syntax(whole, "expected @SYMBOL or @SYMBOL+OFFSET")
        offset = int(m.group(3), 0) * (-1 if m.group(2) == "-" else 1) if m.group(3) else 0
        return SymbolRef(m.group(1), offset), rest
    if m := re.match(_IDENT, token):
        accessors: list[tuple[str, str]] = []
        pos = m.end()
        while pos < len(token):
            a = _ACCESSOR.match(token, pos)
            if a is None:
                raise _syntax(whole, f"cannot read '{token[pos:]}' (expected ->MEMBER, .MEMBER or [N])")
            if a.group(1):
                accessors.append(("->", a.group(1)))
            elif a.group(2):
                accessors.append((".", a.group(2)))
            else:
                accessors.append(("[]", a.group(3)))
            pos = a.end()
        return Variable(m.group(0), tuple(accessors)), rest
    raise _syntax(whole, "expected %REG, $stackN, $argN, $retval, @SYMBOL, +OFF(...) or a parameter name")


def parse_type(arg: str, text: str) -> ValueType:
    """A ``:TYPE`` suffix as a ValueType (EK137 for strings and unknown types)."""
    if m := _TYPE_INT.match(text):
        return ValueType(int(m.group(2)) // 8, m.group(1) == "s")
    if m := _TYPE_BITFIELD.match(text):
        bits, shift, container = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if bits == 0 or bits + shift > container:
            raise ObjectError(
                codes.PROBE_ARG_TYPE,
                f"probe argument '{arg}': bitfield {text} does not fit its {container}-bit container",
            )
        return ValueType(container // 8, False, shift, bits)
    if text in ("string", "ustring", "symbol", "symstr"):
        why = "a string or symbol name cannot be passed to the program in a register"
    else:
        why = "unknown type"
    raise ObjectError(
        codes.PROBE_ARG_TYPE,
        f"probe argument '{arg}': type '{text}': {why}",
        help=("use u8, u16, u32, u64, s8 … s64, x8 … x64 or a bitfield bW@O/S",),
    )


# ----------------------------------------------------------------- resolution


class ProbeSite(Slotted):
    """What resolving an argument depends on: where the probe is and how it reads memory."""

    arch: Arch
    binary: str | None  # the uprobe target; None for kprobes
    function: str | None
    address: int | None  # the probed instruction's ELF virtual address (uprobes) or kernel address
    retprobe: bool
    kallsyms: str


def resolve_args(
    args: Sequence[ProbeArg],
    *,
    binary: str | None,
    function: str | None,
    address: int | None,
    retprobe: bool = False,
    arch: str | None = None,
    kallsyms: str = "/proc/kallsyms",
) -> tuple[FetchPlace, ...]:
    """Where each argument of a probe definition is read (at most three: EK132)."""
    if len(args) > MAX_ARGS:
        extra = ", ".join(f"'{_label(a)}'" for a in args[MAX_ARGS:])
        raise ObjectError(
            codes.PROBE_ARG_TOO_MANY,
            f"a probe can fetch at most {MAX_ARGS} arguments into R3-R5; {len(args)} given "
            f"({extra} cannot be passed)",
            help=("read further values in the program with bpf_probe_read_user/kernel",),
        )
    site = ProbeSite(arch_named(arch), binary, function, address, retprobe, kallsyms)
    dwarf = _DwarfCache(site)
    try:
        return tuple(_resolve(arg, site, dwarf) for arg in args)
    finally:
        dwarf.close()


def _label(arg: ProbeArg) -> str:
    return f"{arg.name}={arg.fetch}" if arg.name else arg.fetch


def _resolve(arg: ProbeArg, site: ProbeSite, dwarf: _DwarfCache) -> FetchPlace:
    label = _label(arg)
    fetch = parse_fetch(arg.fetch)
    if isinstance(fetch, Variable):
        place = dwarf.place(label, fetch)
    else:
        place = _place(label, fetch, site)
    if arg.type is not None:
        place = replace(place, type=parse_type(label, arg.type))
    return place


def _register(label: str, name: str, site: ProbeSite) -> int:
    reg = site.arch.canonical(name)
    if reg is None:
        known = " ".join(f"%{r}" for r in site.arch.regs)
        raise ObjectError(
            codes.PROBE_ARG_REGISTER,
            f"probe argument '{label}': {site.arch.name} has no register '%{name}'",
            help=(f"registers: {known}",),
        )
    return site.arch.regs[reg]


def _place(label: str, fetch: Fetch, site: ProbeSite) -> FetchPlace:
    arch = site.arch
    if isinstance(fetch, Register):
        return FetchPlace(label, _register(label, fetch.name, site))
    if isinstance(fetch, Deref):
        inner = _place(label, fetch.inner, site)
        return replace(inner, derefs=(*inner.derefs, fetch.offset), type=U64)
    if isinstance(fetch, SymbolRef):
        return _symbol_place(label, fetch, site)
    if isinstance(fetch, Special):
        name = fetch.name
        sp = arch.regs[arch.sp]
        if name == "stack":
            return FetchPlace(label, sp)
        if m := re.fullmatch(r"stack([0-9]+)", name):
            return FetchPlace(label, sp, derefs=(POINTER_SIZE * int(m.group(1)),))
        if m := re.fullmatch(r"arg([0-9]+)", name):
            n = int(m.group(1))
            if n == 0:
                raise _syntax(label, "arguments are counted from $arg1")
            if n <= len(arch.arg_regs):
                return FetchPlace(label, arch.regs[arch.arg_regs[n - 1]])
            slot = arch.stack_args_at + POINTER_SIZE * (n - 1 - len(arch.arg_regs))
            return FetchPlace(label, sp, derefs=(slot,))
        if name == "retval":
            if not site.retprobe:
                raise _syntax(label, "$retval is only available in return probes (FUNC%return)")
            return FetchPlace(label, arch.regs[arch.ret_reg])
        if name in ("params", "vars", "comm"):
            why = f"${name} cannot be fetched into a register by a prologue"
        else:
            why = f"unknown special variable ${name}"
        raise _syntax(label, why)
    raise _syntax(label, "a parameter name needs the target's DWARF")  # Variables go to _DwarfCache


def _symbol_place(label: str, ref: SymbolRef, site: ProbeSite) -> FetchPlace:
    if site.binary is None:
        address = _kallsyms_address(label, ref.name, site.kallsyms)
        return FetchPlace(label, None, address, (ref.offset,))
    if site.retprobe:
        raise ObjectError(
            codes.PROBE_ARG_SYMBOL,
            f"probe argument '{label}': @{ref.name} cannot be fetched in a return probe (its "
            f"address is found from the probed instruction's, and a return probe runs in the caller)",
        )
    if site.address is None:
        raise ObjectError(
            codes.PROBE_ARG_SYMBOL, f"probe argument '{label}': the probe address is not known"
        )
    value = _elf_symbol(label, site.binary, ref.name)
    ip = site.arch.regs[site.arch.ip]
    return FetchPlace(label, ip, derefs=(value + ref.offset - site.address,))


def _elf_symbol(label: str, binary: str, name: str) -> int:
    from evspec.loader.object.elf_symbols import read_elf_symbols

    try:
        address = read_elf_symbols(binary).address_of(name)
    except ObjectError as exc:
        raise ObjectError(codes.PROBE_ARG_SYMBOL, f"probe argument '{label}': {exc.message}") from None
    if address is None:
        raise ObjectError(
            codes.PROBE_ARG_SYMBOL,
            f"probe argument '{label}': {binary} defines no data or function symbol '{name}'",
            help=(f"list its symbols with `nm -D {binary}` or `nm {binary}`",),
        )
    return address


def _kallsyms_address(label: str, name: str, path: str) -> int:
    try:
        with open(path) as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 3 and fields[2] == name:
                    address = int(fields[0], 16)
                    if address == 0:
                        raise ObjectError(
                            codes.PROBE_ARG_SYMBOL,
                            f"probe argument '{label}': {path} hides the address of '{name}'",
                            help=("run as root, or set /proc/sys/kernel/kptr_restrict to 0",),
                        )
                    return address
    except OSError as exc:
        raise ObjectError(codes.PROBE_ARG_SYMBOL, f"probe argument '{label}': {exc}") from None
    raise ObjectError(
        codes.PROBE_ARG_SYMBOL, f"probe argument '{label}': the kernel has no symbol '{name}'"
    )


# ----------------------------------------------------------------- DWARF

_DW_OP_REG0, _DW_OP_BREG0 = 0x50, 0x70
_SIGNED_ENCODINGS = {"DW_ATE_signed", "DW_ATE_signed_char"}
_TRANSPARENT_TYPES = {
    "DW_TAG_typedef",
    "DW_TAG_const_type",
    "DW_TAG_volatile_type",
    "DW_TAG_restrict_type",
    "DW_TAG_atomic_type",
}


def _no_dwarf(label: str, why: str) -> ObjectError:
    return ObjectError(
        codes.PROBE_ARG_NO_DWARF,
        f"probe argument '{label}': {why}",
        help=("build the target with -g, or fetch the value by register (%di, $arg1, ...)",),
    )


def _location_error(label: str, why: str) -> ObjectError:
    return ObjectError(codes.PROBE_ARG_LOCATION, f"probe argument '{label}': {why}")


class _Function(Slotted):
    die: Any  # DIE of the out-of-line instance (DW_TAG_subprogram)
    low_pc: int
    cu: Any


class _DwarfCache:
    """Opens the target's DWARF on the first named argument and finds the probed function once;
    ``close()`` closes the file."""

    def __init__(self, site: ProbeSite) -> None:
        self.site = site
        self._file: Any = None
        self._info: DWARFInfo | None = None
        self._function: _Function | None = None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _dwarf(self, label: str) -> DWARFInfo:
        if self._info is not None:
            return self._info
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile

        site = self.site
        if site.binary is None:
            raise _no_dwarf(label, "named parameters of kernel functions need vmlinux DWARF, which "
                            "evspec does not read")
        try:
            self._file = open(site.binary, "rb")
            elf = ELFFile(self._file)
            machine = elf["e_machine"]
            if machine != site.arch.elf_machine:
                raise _location_error(label, f"{site.binary} is built for {machine}, not {site.arch.name}")
            if not elf.has_dwarf_info() or elf.get_section_by_name(".debug_info") is None:
                raise _no_dwarf(label, f"{site.binary} has no DWARF debug information (.debug_info)")
            self._info = elf.get_dwarf_info()
        except (OSError, ELFError) as exc:
            self.close()
            raise _no_dwarf(label, f"cannot read the DWARF of {site.binary}: {exc}") from None
        return self._info

    def place(self, label: str, var: Variable) -> FetchPlace:
        info = self._dwarf(label)
        fn = self._find_function(label, info)
        address = self.site.address if self.site.address is not None else fn.low_pc
        param = _parameter(label, fn, var.name)
        place = self._location(label, info, fn, param, address)
        type_die = _type_of(param)
        place, type_die = _apply_accessors(label, place, type_die, var.accessors)
        return replace(place, type=_value_type(label, type_die))

    def _find_function(self, label: str, info: DWARFInfo) -> _Function:
        if self._function is not None:
            return self._function
        site = self.site
        if site.function is None:
            raise _no_dwarf(label, "the probe names no function whose parameters could be looked up")
        found: list[_Function] = []
        cus: Sequence[Any]
        aranges = info.get_aranges() if site.address is not None else None
        cu_offset = aranges.cu_offset_at_addr(site.address) if aranges is not None else None
        if cu_offset is not None:
            cus = [info.get_CU_at(cu_offset)]
        else:
            cus = list(info.iter_CUs())
        for cu in cus:
            for die in cu.iter_DIEs():
                if die.tag != "DW_TAG_subprogram" or "DW_AT_low_pc" not in die.attributes:
                    continue
                if _name(die) != site.function:
                    continue
                low = int(die.attributes["DW_AT_low_pc"].value)
                high = _high_pc(die, low)
                if site.address is None or low <= site.address < high:
                    found.append(_Function(die, low, cu))
        if not found:
            where = f" around {site.address:#x}" if site.address is not None else ""
            raise _no_dwarf(
                label, f"{site.binary}'s DWARF has no out-of-line function '{site.function}'{where}"
            )
        self._function = found[0]
        return found[0]

    def _location(self, label: str, info: DWARFInfo, fn: _Function, param: DIE, address: int) -> FetchPlace:
        from elftools.dwarf.locationlists import LocationEntry, LocationExpr, LocationParser

        attr = param.attributes.get("DW_AT_location")
        if attr is None:
            raise _optimised_out(label, self.site, address)
        version = fn.cu["version"]
        parsed = LocationParser(info.location_lists()).parse_from_attribute(attr, version, param)
        if isinstance(parsed, LocationExpr):
            expr = parsed.loc_expr
        else:
            expr = None
            base = _cu_base(fn.cu)
            for entry in parsed:
                if isinstance(entry, LocationEntry):
                    begin = entry.begin_offset if entry.is_absolute else base + entry.begin_offset
                    end = entry.end_offset if entry.is_absolute else base + entry.end_offset
                    if begin <= address < end:
                        expr = entry.loc_expr
                        break
                else:  # BaseAddressEntry
                    base = entry.base_address
            if expr is None:
                raise _optimised_out(label, self.site, address)
        return self._expression(label, info, fn, expr, address)

    def _expression(self, label: str, info: DWARFInfo, fn: _Function, expr: list[int], address: int) -> FetchPlace:
        from elftools.dwarf.dwarf_expr import DWARFExprParser

        ops = DWARFExprParser(info.structs).parse_expr(expr)
        arch = self.site.arch
        if len(ops) == 2 and ops[1].op_name == "DW_OP_stack_value" and ops[0].op_name in (
            "DW_OP_entry_value",
            "DW_OP_GNU_entry_value",
        ):
            inner = ops[0].args[0]
            if address == fn.low_pc and len(inner) == 1 and _DW_OP_REG0 <= inner[0].op < _DW_OP_REG0 + 32:
                return FetchPlace(label, self._dwarf_reg(label, inner[0].op - _DW_OP_REG0))
            raise _optimised_out(label, self.site, address)
        if len(ops) != 1:
            names = " ".join(op.op_name for op in ops)
            raise _location_error(label, f"its location '{names}' is not a register or a memory slot")
        op = ops[0]
        code = op.op
        if _DW_OP_REG0 <= code < _DW_OP_REG0 + 32 or op.op_name == "DW_OP_regx":
            number = code - _DW_OP_REG0 if op.op_name != "DW_OP_regx" else op.args[0]
            return FetchPlace(label, self._dwarf_reg(label, number))
        if _DW_OP_BREG0 <= code < _DW_OP_BREG0 + 32 or op.op_name == "DW_OP_bregx":
            if op.op_name == "DW_OP_bregx":
                number, offset = op.args
            else:
                number, offset = code - _DW_OP_BREG0, op.args[0]
            return FetchPlace(label, self._dwarf_reg(label, number), derefs=(offset,))
        if op.op_name == "DW_OP_fbreg":
            reg, frame = self._frame_base(label, info, fn, address)
            offset = frame + op.args[0]
            if address == fn.low_pc and not (reg == arch.regs[arch.sp] and offset >= 0):
                raise self._not_stored_yet(label, info, fn)
            return FetchPlace(label, reg, derefs=(offset,))
        raise _location_error(label, f"its location '{op.op_name}' cannot be read by a prologue")

    def _not_stored_yet(self, label: str, info: DWARFInfo, fn: _Function) -> ObjectError:
        body = _body_address(info, fn)
        where = f"{self.site.function}+{body - fn.low_pc:#x} ({body:#x})" if body is not None else "its body"
        return ObjectError(
            codes.PROBE_ARG_OPTIMISED_OUT,
            f"probe argument '{label}': '{self.site.function}' keeps it in its stack frame, where it "
            f"is stored only after the function's prologue, so it is not there yet at the entry "
            f"address {fn.low_pc:#x} (the target was built without optimisation)",
            help=(f"probe after the prologue, at {where}, or fetch it by register ($argN)",),
        )

    def _dwarf_reg(self, label: str, number: int) -> int:
        names = self.site.arch.dwarf_regs
        if number >= len(names):
            raise _location_error(label, f"it lives in DWARF register {number}, which is not in pt_regs")
        return self.site.arch.regs[names[number]]

    def _frame_base(self, label: str, info: DWARFInfo, fn: _Function, address: int) -> tuple[int, int]:
        """The frame base at ``address`` as (pt_regs offset of a register, constant to add)."""
        from elftools.dwarf.dwarf_expr import DWARFExprParser

        attr = fn.die.attributes.get("DW_AT_frame_base")
        if attr is None:
            raise _location_error(label, "its function has no DW_AT_frame_base")
        ops = DWARFExprParser(info.structs).parse_expr(attr.value)
        if len(ops) == 1 and ops[0].op_name == "DW_OP_call_frame_cfa":
            return self._cfa(label, info, fn, address)
        if len(ops) == 1 and _DW_OP_REG0 <= ops[0].op < _DW_OP_REG0 + 32:
            return self._dwarf_reg(label, ops[0].op - _DW_OP_REG0), 0
        if len(ops) == 1 and _DW_OP_BREG0 <= ops[0].op < _DW_OP_BREG0 + 32:
            raise _location_error(label, "its frame base is stored in memory, which is not supported")
        names = " ".join(op.op_name for op in ops)
        raise _location_error(label, f"its function's frame base '{names}' is not supported")

    def _cfa(self, label: str, info: DWARFInfo, fn: _Function, address: int) -> tuple[int, int]:
        """The canonical frame address at ``address`` from .eh_frame or .debug_frame."""
        arch = self.site.arch
        entries: list[Any] = []
        if info.has_EH_CFI():
            entries += info.EH_CFI_entries()
        if info.has_CFI():
            entries += info.CFI_entries()
        for entry in entries:
            header = getattr(entry, "header", None)
            if header is None or "initial_location" not in header:
                continue
            start = header["initial_location"]
            if not start <= address < start + header["address_range"]:
                continue
            rule = None
            for row in entry.get_decoded().table:
                if row["pc"] <= address:
                    rule = row.get("cfa")
            if rule is None or rule.expr is not None or rule.reg is None:
                break
            return self._dwarf_reg(label, rule.reg), int(rule.offset)
        if address == fn.low_pc:
            return arch.regs[arch.sp], arch.cfa_at_entry
        raise _location_error(label, f"no call frame information covers {address:#x} (frame base DW_OP_call_frame_cfa)")


def body_address(binary: str, function: str) -> int | None:
    """The first address of ``function``'s body in ``binary`` (after its prologue), from the line
    table: the first row with a different line than the entry's, as perf chooses for code built
    without optimisation. None when the function has no DWARF or no second line."""
    site = ProbeSite(arch_named(), binary, function, None, False, "")
    dwarf = _DwarfCache(site)
    try:
        info = dwarf._dwarf(function)
        return _body_address(info, dwarf._find_function(function, info))
    except ObjectError:
        return None
    finally:
        dwarf.close()


def _body_address(info: DWARFInfo, fn: _Function) -> int | None:
    program = info.line_program_for_CU(fn.cu)
    if program is None:
        return None
    high = _high_pc(fn.die, fn.low_pc)
    rows = sorted(
        (entry.state.address, entry.state.line)
        for entry in program.get_entries()
        if entry.state is not None
        and not entry.state.end_sequence
        and fn.low_pc <= entry.state.address < high
    )
    if not rows:
        return None
    first_line = rows[0][1]
    return next((address for address, line in rows if line != first_line), None)


def _optimised_out(label: str, site: ProbeSite, address: int) -> ObjectError:
    return ObjectError(
        codes.PROBE_ARG_OPTIMISED_OUT,
        f"probe argument '{label}': '{site.function}' has no location for it at {address:#x} "
        "(optimised out there)",
        help=("probe at another address, or fetch it by register ($argN at the function's entry)",),
    )


def _name(die: DIE) -> str | None:
    for attr in ("DW_AT_name", "DW_AT_abstract_origin", "DW_AT_specification"):
        if attr not in die.attributes:
            continue
        if attr == "DW_AT_name":
            return str(die.attributes[attr].value.decode("utf-8", "replace"))
        return _name(die.get_DIE_from_attribute(attr))
    return None


def _high_pc(die: DIE, low: int) -> int:
    attr = die.attributes.get("DW_AT_high_pc")
    if attr is None:
        return low + 1
    value = int(attr.value)
    return value if attr.form == "DW_FORM_addr" else low + value


def _cu_base(cu: Any) -> int:
    top = cu.get_top_DIE()
    low = top.attributes.get("DW_AT_low_pc")
    return int(low.value) if low is not None else 0


def _parameter(label: str, fn: _Function, name: str) -> DIE:
    params = [child for child in fn.die.iter_children() if child.tag == "DW_TAG_formal_parameter"]
    for param in params:
        if _name(param) == name:
            return param
    have = ", ".join(n for p in params if (n := _name(p))) or "none"
    raise ObjectError(
        codes.PROBE_ARG_NOT_FOUND,
        f"probe argument '{label}': '{_name(fn.die)}' has no parameter '{name}' (its parameters: {have})",
    )


def _type_of(die: DIE) -> DIE | None:
    while "DW_AT_type" not in die.attributes and "DW_AT_abstract_origin" in die.attributes:
        die = die.get_DIE_from_attribute("DW_AT_abstract_origin")
    if "DW_AT_type" not in die.attributes:
        return None
    return _strip(die.get_DIE_from_attribute("DW_AT_type"))


def _strip(die: DIE | None) -> DIE | None:
    while die is not None and die.tag in _TRANSPARENT_TYPES:
        die = die.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in die.attributes else None
    return die


def _type_name(die: DIE | None) -> str:
    if die is None:
        return "void"
    name = _name(die)
    kind = die.tag.removeprefix("DW_TAG_").removesuffix("_type")
    return f"{kind} {name}" if name else kind


def _byte_size(die: DIE | None) -> int | None:
    if die is None:
        return None
    if die.tag == "DW_TAG_pointer_type":
        return int(die.attributes["DW_AT_byte_size"].value) if "DW_AT_byte_size" in die.attributes else POINTER_SIZE
    if "DW_AT_byte_size" in die.attributes:
        return int(die.attributes["DW_AT_byte_size"].value)
    if die.tag == "DW_TAG_array_type":
        count = 1
        for sub in die.iter_children():
            if sub.tag == "DW_TAG_subrange_type":
                if "DW_AT_count" in sub.attributes:
                    count *= int(sub.attributes["DW_AT_count"].value)
                elif "DW_AT_upper_bound" in sub.attributes:
                    count *= int(sub.attributes["DW_AT_upper_bound"].value) + 1
        element = _byte_size(_strip(die.get_DIE_from_attribute("DW_AT_type")))
        return None if element is None else element * count
    return None


def _apply_accessors(
    label: str, place: FetchPlace, type_die: DIE | None, accessors: tuple[tuple[str, str], ...]
) -> tuple[FetchPlace, DIE | None]:
    for kind, what in accessors:
        if kind == "->":
            if type_die is None or type_die.tag != "DW_TAG_pointer_type":
                raise _not_found(label, f"'->{what}' needs a pointer, but the value is {_type_name(type_die)}")
            target = _strip(type_die.get_DIE_from_attribute("DW_AT_type")) if "DW_AT_type" in type_die.attributes else None
            offset, type_die = _member(label, target, what)
            place = replace(place, derefs=(*place.derefs, offset))
        elif kind == ".":
            if type_die is not None and type_die.tag == "DW_TAG_pointer_type":
                raise _not_found(label, f"'.{what}' needs a structure, but the value is a pointer (use ->{what})")
            offset, type_die = _member(label, type_die, what)
            if not place.derefs:
                raise _location_error(label, f"'.{what}': the structure is held in registers, not in memory")
            place = replace(place, derefs=(*place.derefs[:-1], place.derefs[-1] + offset))
        else:
            index = int(what, 0)
            if type_die is not None and type_die.tag == "DW_TAG_pointer_type":
                element = _strip(type_die.get_DIE_from_attribute("DW_AT_type")) if "DW_AT_type" in type_die.attributes else None
                size = _byte_size(element)
                if size is None:
                    raise _location_error(label, f"'[{what}]': the pointed-to type has no size")
                place = replace(place, derefs=(*place.derefs, index * size))
            elif type_die is not None and type_die.tag == "DW_TAG_array_type" and place.derefs:
                element = _strip(type_die.get_DIE_from_attribute("DW_AT_type"))
                size = _byte_size(element)
                if size is None:
                    raise _location_error(label, f"'[{what}]': the element type has no size")
                place = replace(place, derefs=(*place.derefs[:-1], place.derefs[-1] + index * size))
            else:
                raise _not_found(label, f"'[{what}]' needs a pointer or an array, not {_type_name(type_die)}")
            type_die = element
    return place, type_die


def _not_found(label: str, why: str) -> ObjectError:
    return ObjectError(codes.PROBE_ARG_NOT_FOUND, f"probe argument '{label}': {why}")


def _member(label: str, struct: DIE | None, name: str) -> tuple[int, DIE | None]:
    if struct is None or struct.tag not in ("DW_TAG_structure_type", "DW_TAG_union_type"):
        raise _not_found(label, f"member '{name}' needs a structure, but the value is {_type_name(struct)}")
    members = [m for m in struct.iter_children() if m.tag == "DW_TAG_member"]
    for m in members:
        if _name(m) == name:
            if "DW_AT_bit_size" in m.attributes:
                raise _location_error(label, f"member '{name}' is a bitfield: fetch its container with :bW@O/S")
            loc = m.attributes.get("DW_AT_data_member_location")
            offset = int(loc.value) if loc is not None and isinstance(loc.value, int) else 0
            return offset, _type_of(m)
    have = ", ".join(n for m in members if (n := _name(m))) or "none"
    raise _not_found(label, f"{_type_name(struct)} has no member '{name}' (its members: {have})")


def _value_type(label: str, die: DIE | None) -> ValueType:
    if die is None:
        raise _location_error(label, "its type is unknown (void)")
    if die.tag in ("DW_TAG_pointer_type", "DW_TAG_reference_type", "DW_TAG_rvalue_reference_type"):
        return ValueType(POINTER_SIZE, False)
    if die.tag in ("DW_TAG_base_type", "DW_TAG_enumeration_type"):
        size = _byte_size(die)
        if size not in (1, 2, 4, 8):
            raise _location_error(label, f"its type {_type_name(die)} is {size} bytes, not 1, 2, 4 or 8")
        attr = die.attributes.get("DW_AT_encoding")
        encoding = _encoding_name(int(attr.value)) if attr is not None else ""
        if encoding in ("DW_ATE_float", "DW_ATE_complex_float"):
            raise _location_error(label, f"its type {_type_name(die)} is a floating-point value")
        signed = encoding in _SIGNED_ENCODINGS
        if die.tag == "DW_TAG_enumeration_type":
            under = _type_of(die)
            signed = under is not None and _value_type(label, under).signed
        return ValueType(size, signed)
    raise _location_error(
        label,
        f"its type {_type_name(die)} is not an integer or a pointer (fetch a member with -> or .)",
    )


def _encoding_name(value: int) -> str:
    from elftools.dwarf.enums import ENUM_DW_ATE

    for name, number in ENUM_DW_ATE.items():
        if number == value:
            return str(name)
    return ""
