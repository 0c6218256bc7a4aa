"""``read_object``: a BPF ELF object file -> ``ObjectSpec``. Pure data, no syscalls.

What becomes what:

* programs: every executable section except ``.text``; each GLOBAL (or WEAK) FUNC symbol of the
  section is one program, sized by its ``st_size``. A section with code and no FUNC symbol at all
  (objects of very old tool chains) is one program named after the section.
* subprograms: the FUNC symbols of ``.text`` and LOCAL FUNC symbols of program sections, reached
  by bpf-to-bpf calls.
* maps: ``SEC("maps")`` ``struct bpf_map_def`` records (legacy), ``SEC(".maps")`` BTF-defined
  maps, and one single-entry ARRAY map per global data section (``.data*``, ``.rodata*``,
  ``.bss*``). Data maps are named the way libbpf names them: the object's file name up to its first
  ``.`` (characters other than letters, digits, ``_`` and ``.`` replaced by ``_``), cut so that
  the whole fits the kernel's 15 characters with a suffix of at least 7, followed by the section
  name: ``maps.o`` -> ``maps.data``, ``nanosleep.o`` -> ``nanoslee.rodata``; a section name with a
  second ``.`` (``.rodata.str1.1``) or of 16 characters or more is used alone, cut to 15. Two
  sections cut to the same name are refused (libbpf creates both maps under that one name). A data
  map is mmapable when its DATASEC has a global variable that is not ``__hidden`` (libbpf makes
  hidden ones static); ``SectionLayout.hidden`` lists those for the loader.
  ``map_extra`` is 64 bits: ``__uint(map_extra, N)`` (32) or ``__ulong(map_extra, N)``, an ENUM64
  (an 8-byte ENUM, clang 14's cut version of it, is refused).
  A BTF map's ``__array(values, ..)`` gives a map-in-map its inner map (``OUTER.inner``) and, with
  the ``.rel.maps`` relocations, the ``.values = { [i] = &x }`` initial slots of map-in-maps and
  PROG_ARRAYs; a legacy definition longer than five words keeps its extra fields (iproute2's
  id, pinning, inner_id, inner_idx) in ``legacy_extra`` for the loader to refuse.
* relocations of program code: ``ld_imm64`` of a map symbol -> "map"; of a global data section or
  variable -> "data" with addend = symbol value + the instruction's immediate; of a function
  (callbacks) -> "func"; a ``call`` with src_reg BPF_PSEUDO_CALL -> "call" with the called
  function's name. A pseudo call without a relocation (older LLVM's call of a function of the same
  section) gets a "call" relocation too when it lands on the start of a function (its own: a
  recursive call); one landing inside a function is refused (libbpf would call that function from
  its start). So is any other instruction whose imm only a loader can give: a kfunc call
  (src_reg BPF_PSEUDO_KFUNC_CALL) or an ld_imm64 with a non-zero src_reg without a relocation.
* every byte of an executable section belongs to exactly one FUNC symbol; code outside them (which
  libbpf drops without a word) and overlapping functions are refused.
* relocations of data sections (``.rel.data``, ``.rel.rodata``: pointers in global data initialised
  with an address) are refused: global data holds no addresses, and libbpf skips those sections,
  leaving the bytes as the file has them. Relocations of other sections evspec does not load are
  refused too; those of ``.BTF``, ``.BTF.ext`` and ``.debug_*`` are not needed to load.
* a ``.BTF`` header longer than its 24 known bytes is read when the extra bytes are zero (as the
  kernel does) and refused otherwise.
* externs (undefined GLOBAL/WEAK NOTYPE symbols, ``externs.collect_externs``): ``ObjectSpec.externs``;
  with kconfig ones a ``.kconfig`` map (``OBJ.kconfig``: one read-only, mmapable ARRAY entry, zero
  until ``externs.apply_externs`` fills it) and their ld_imm64s "data" relocations into it at the
  value's offset; ld_imm64s of a __ksym or kfunc -> "ksym", kfunc calls -> "kfunc" (applied to the
  code by ``externs.apply_externs``, which ``load_object`` calls).
"""

from __future__ import annotations

import bisect
import os
import re
import struct
import sys
from functools import cached_property, lru_cache

from evspec.loader import asm
from evspec.loader.abi.bpf import BPF_PSEUDO_CALL, BPF_PSEUDO_KFUNC_CALL, INSN_SIZE
from evspec.loader.btf.reader import (
    VAR_STATIC,
    Btf,
    BtfError,
    BtfExt,
    BtfKind,
    BtfMember,
    BtfType,
    LineRecord,
)
from evspec.loader.errors import ObjectError
from evspec.loader.externs.resolve import KCONFIG_SEC, UndefinedSymbol, collect_externs, kconfig_size
from evspec.loader.object.elf import SHF_ALLOC, BpfElf, Rel, Section, Symbol
from evspec.loader.object.input_file import read_input
from evspec.loader.object.spec import (
    CoreRelocation,
    ExternSpec,
    FunctionProblem,
    LineInfo,
    MapSpec,
    MapType,
    ObjectSpec,
    ProgramSpec,
    Relocation,
    SectionLayout,
    StructOpsSpec,
    replace,
)

from evspec.codes import bpf as codes
from evspec.span import Slotted

BTF_HEADER_LEN = 24  # struct btf_header
R_BPF_64_64 = 1
R_BPF_64_32 = 10
# relocations of data: a pointer's 8 or 4 bytes
_DATA_RELOCATION_SIZES = {2: 8, 3: 4}  # R_BPF_64_ABS64, R_BPF_64_ABS32
# relocation sections of sections that need none to load
_UNNEEDED_RELOCATIONS = (".BTF", ".BTF.ext")
# what the kernel takes an ld_imm64's imm for, by src_reg (include/uapi/linux/bpf.h)
_LD_IMM64_SRC = {
    1: ("BPF_PSEUDO_MAP_FD", "a map file descriptor of the loading process"),
    2: ("BPF_PSEUDO_MAP_VALUE", "a map file descriptor of the loading process"),
    3: ("BPF_PSEUDO_BTF_ID", "a BTF id of the running kernel"),
    4: ("BPF_PSEUDO_FUNC", "the distance to a function of the loaded program"),
    5: ("BPF_PSEUDO_MAP_IDX", "an index into the load's array of map descriptors"),
    6: ("BPF_PSEUDO_MAP_IDX_VALUE", "an index into the load's array of map descriptors"),
}
LEGACY_MAPS_SECTION = "maps"
BTF_MAPS_SECTION = ".maps"
# libbpf 1.8's sections of struct_ops maps ('?': not auto-attached)
STRUCT_OPS_SECTIONS = (".struct_ops", ".struct_ops.link", "?.struct_ops", "?.struct_ops.link")
OBJ_NAME_LEN = 16  # BPF_OBJ_NAME_LEN, NUL included
_U32, _U64 = (1 << 32) - 1, (1 << 64) - 1
LEGACY_DEF_MIN = 16  # type, key_size, value_size, max_entries
_INT_FIELDS = ("type", "key_size", "value_size", "max_entries", "map_flags", "numa_node",
               "pinning", "map_extra")
_PIN_VALUES = (0, 1)  # LIBBPF_PIN_NONE, LIBBPF_PIN_BY_NAME
_MAP_IN_MAP = (MapType.ARRAY_OF_MAPS, MapType.HASH_OF_MAPS)
# iproute2's struct bpf_elf_map after type, key/value size, max_elem and flags
_STV_INTERNAL, _STV_HIDDEN = 1, 2
_LEGACY_EXTRA = ("id", "pinning", "inner_id", "inner_idx")
_NATIVE = "<" if sys.byteorder == "little" else ">"


def _regs_with_src(wanted: range) -> bytes:
    """A character class (without its brackets) of the register bytes whose src_reg is in ``wanted``,
    written as ranges: a class of 240 single bytes costs the regex compiler a millisecond."""
    runs: list[list[int]] = []
    for b in range(256):
        if asm.src_reg(b) in wanted:
            if runs and runs[-1][1] == b - 1:
                runs[-1][1] = b
            else:
                runs.append([b, b])
    return b"".join(re.escape(bytes([lo])) + (b"-" + re.escape(bytes([hi])) if hi > lo else b"") for lo, hi in runs)


# Instructions whose imm only a loader can give: pseudo and kfunc calls, ld_imm64 with a src_reg.
# A lookahead, so that a match at an odd byte cannot hide one at the next instruction.
_LOADER_IMM_RE = re.compile(b"(?=" + re.escape(bytes([asm.OP_CALL])) + b"[" + _regs_with_src(range(1, 3)) + b"]|"
                            + re.escape(bytes([asm.OP_LD_IMM64])) + b"[" + _regs_with_src(range(1, 16)) + b"])",
                            re.DOTALL)

# What unpacking, slicing and decoding corrupt bytes raise. The exceptions only a bug raises
# (AttributeError, TypeError, KeyError, AssertionError, RecursionError ...) are let through, for
# the CLI to report as internal errors: where corrupt input could lead to one, it is checked first.
_PARSE_ERRORS: tuple[type[BaseException], ...] = (
    struct.error, ValueError, IndexError, UnicodeDecodeError, OverflowError, EOFError,
)


def read_object(path: str | os.PathLike[str]) -> ObjectSpec:
    """Read a BPF object file (a regular file of at most ``MAX_INPUT_BYTES``). Raises
    ``ObjectError`` when it cannot; any other exception is a bug."""
    name = os.fspath(path)
    return read_object_bytes(read_input(name, "BPF object"), name)


@lru_cache(maxsize=16)
def read_object_bytes(data: bytes, path: str = "<memory>") -> ObjectSpec:
    """Read a BPF object held in memory; ``path`` names it in messages and data map names.

    The same bytes under the same name are read once per process (``evspec record`` checks an
    object, then loads it; ObjectSpec is immutable, so the two share one)."""
    try:
        return _Reader(path, data).read()
    except ObjectError:
        raise
    except BtfError as exc:
        raise ObjectError(codes.CORRUPT_BTF, f"{path}: corrupt BTF: {exc}") from None
    except _PARSE_ERRORS as exc:
        raise ObjectError(codes.CORRUPT_ELF, f"{path}: corrupt ELF file ({type(exc).__name__}: {exc})",
                          perf_message=f"Failed to load {path}: Something wrong in libelf") from None


def data_map_name(object_path: str, section: str) -> str:
    """The name libbpf gives the map of a global data section (see the module docstring)."""
    if len(section) >= OBJ_NAME_LEN or "." in section[1:]:
        name = section[:OBJ_NAME_LEN - 1]
    else:
        base = os.path.basename(object_path).split(".", 1)[0]
        prefix = max(0, OBJ_NAME_LEN - 1 - max(7, len(section)))
        name = base[:prefix] + section
    return "".join(c if c.isascii() and (c.isalnum() or c in "_.") else "_" for c in name)


def _is_data_section(s: Section) -> bool:
    if s.type not in ("SHT_PROGBITS", "SHT_NOBITS") or s.executable or s.size == 0:
        return False
    return any(s.name == p or s.name.startswith(p + ".") for p in (".data", ".rodata", ".bss"))


class _Function(Slotted):
    """A function found in an executable section, before it becomes a ProgramSpec."""

    name: str
    section: Section
    offset: int
    size: int
    is_program: bool
    is_global: bool = False
    hidden: bool = False

    @property
    def end(self) -> int:
        return self.offset + self.size


class _Targets(Slotted):
    """What relocations may point at."""

    maps: dict[tuple[str, int], MapSpec]  # (section, symbol offset) -> map
    data: dict[str, MapSpec]  # data section -> its map
    functions: dict[int, _Functions]  # section index -> its functions
    externs: dict[str, ExternSpec]  # __kconfig, __ksym and kfunc externs by name
    kconfig: MapSpec | None  # the .kconfig map, when the object has kconfig externs


class _Reader:
    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.elf = BpfElf(path, data)
        self._lines: dict[str, tuple[list[LineRecord], list[int]]] = {}
        self.problems: dict[tuple[int, int], FunctionProblem] = {}  # (section index, offset) -> why

    # -- errors ------------------------------------------------------------------------------

    def fail(self, code: str, message: str, perf_reason: str | None = "BPF object format invalid",
             help: tuple[str, ...] = ()) -> ObjectError:
        perf = f"Failed to load {self.path}: {perf_reason}" if perf_reason else None
        return ObjectError(code, f"{self.path}: {message}", perf_message=perf, help=help)

    def bad_relocation(self, where: str, message: str) -> ObjectError:
        return self.fail(codes.BAD_RELOCATION, f"bad relocation {where}: {message}", "Relocation failed")

    # -- BTF ---------------------------------------------------------------------------------

    @cached_property
    def btf_bytes(self) -> bytes | None:
        s = self.elf.section(".BTF")
        return None if s is None else self.elf.contents(s)

    @cached_property
    def btf_ext_bytes(self) -> bytes | None:
        s = self.elf.section(".BTF.ext")
        return None if s is None else self.elf.contents(s)

    @cached_property
    def btf(self) -> Btf | None:
        if self.btf_bytes is None:
            return None
        return Btf(self.btf_bytes)

    def check_btf_header(self) -> None:
        """A header longer than the 24 bytes of ``struct btf_header`` is read as the kernel reads
        it: the bytes past them must be zero, as fields nobody set. (Checked even when no map
        needs the BTF; BTF that cannot be read fails where it is needed, as before.)"""
        data = self.btf_bytes
        try:
            btf = self.btf
        except BtfError:
            return
        if data is None or btf is None:
            return
        (hdr_len,) = struct.unpack_from(btf.byte_order + "I", data, 4)  # checked by Btf()
        extra = data[BTF_HEADER_LEN:hdr_len]
        if not extra.strip(b"\0"):
            return
        first = BTF_HEADER_LEN + next(i for i, b in enumerate(extra) if b)
        raise self.fail(codes.UNSUPPORTED, f"the .BTF header is {hdr_len} bytes, and its bytes "
                        f"{BTF_HEADER_LEN}..{hdr_len} after the {BTF_HEADER_LEN} of struct btf_header "
                        f"hold fields evspec does not know (byte {first} is {data[first]:#04x}); the "
                        "kernel refuses such BTF (\"Unsupported btf_header\") and libbpf then loads the "
                        "object without BTF: not supported", None)

    @cached_property
    def btf_ext(self) -> BtfExt | None:
        if self.btf_ext_bytes is None or self.btf is None:
            return None
        try:
            return BtfExt(self.btf_ext_bytes, self.btf)
        except BtfError as exc:
            raise self.fail(codes.CORRUPT_BTF_EXT, f"corrupt BTF.ext: {exc}", None) from None

    # -- the whole object --------------------------------------------------------------------

    @cached_property
    def externs(self) -> tuple[ExternSpec, ...]:
        undefined = [UndefinedSymbol(s.name, s.bind == "STB_WEAK") for s in self.elf.symbols
                     if s.section_index is None and s.type == "STT_NOTYPE" and s.name
                     and s.bind in ("STB_GLOBAL", "STB_WEAK")]
        return collect_externs(self.path, self.btf, undefined)

    def kconfig_map(self) -> list[MapSpec]:
        """libbpf's ``.kconfig`` map: one read-only, mmapable ARRAY entry holding the values of
        the kconfig externs (filled when they are resolved, zero until then)."""
        size = kconfig_size(self.externs)
        if not size:
            return []
        if size > _U32:
            raise self.fail(codes.BAD_MAP, f"the kconfig externs need a {size}-byte value of the "
                            f"{KCONFIG_SEC} map; a map value's size is 32 bits")
        assert self.btf is not None  # externs need it
        datasec = self.btf.find(KCONFIG_SEC, BtfKind.DATASEC)
        return [MapSpec(name=data_map_name(self.path, KCONFIG_SEC), type=int(MapType.ARRAY), key_size=4,
                        value_size=size, max_entries=1, section=KCONFIG_SEC,
                        value_type_id=None if datasec is None else datasec.id,
                        initial_value=bytes(size), readonly=True, mmapable=True)]

    def read(self) -> ObjectSpec:
        self.check_btf_header()
        maps = [*self.legacy_maps(), *self.btf_maps(), *self.data_maps(), *self.kconfig_map()]
        seen: dict[str, MapSpec] = {}
        for m in maps:
            first = seen.setdefault(m.name, m)
            if first is not m:
                raise self.same_name(first, m)
        functions = self.functions()
        relocations = self.relocations(functions, maps)
        programs, subprograms = [], []
        for f in functions:
            spec = ProgramSpec(
                name=f.name, section=f.section.name,
                insns=self.elf.contents(f.section)[f.offset:f.end], offset=f.offset,
                relocations=tuple(relocations.get((f.section.index, f.offset), ())),
                line_info=self.line_info(f), core_relocations=self.core_relocations(f),
                global_function=f.is_global, hidden=f.hidden,
                problem=self.problems.get((f.section.index, f.offset)))
            (programs if f.is_program else subprograms).append(spec)
        return ObjectSpec(
            path=self.path, license=self.license(), kernel_version=self.kernel_version(),
            maps=tuple(maps), programs=tuple(programs), subprograms=tuple(subprograms),
            btf=self.btf_bytes, btf_ext=self.btf_ext_bytes, layouts=self.layouts(),
            externs=self.externs, struct_ops=self.struct_ops_maps(functions))

    def struct_ops_maps(self, functions: list[_Function]) -> tuple[StructOpsSpec, ...]:
        """The struct_ops maps: each variable of a ``.struct_ops*`` section (its BTF DATASEC),
        with the program each relocation of the section puts in a member (libbpf's
        collect_st_ops_relos: the function at the symbol's address)."""
        out = []
        starts = {(f.section.index, f.offset): f.name for f in functions}
        for sec in self.elf.sections:
            if sec.name not in STRUCT_OPS_SECTIONS:
                continue
            btf = self.btf
            datasec = btf.find(sec.name, BtfKind.DATASEC) if btf is not None else None
            if btf is None or datasec is None:
                raise self.fail(codes.BAD_MAP, f"section {sec.name!r} holds struct_ops maps, which need "
                                "the object's BTF to say their types (compile with -g)")
            variables = []
            for info in datasec.secinfos:
                var = btf.type(info.type)
                variables.append((info.offset, info.size, var.name, btf.resolve(var.type)))
            members: dict[str, list[tuple[str, str]]] = {name: [] for _, _, name, _ in variables}
            rel_sec = next((r for r, target in self.elf.relocation_sections() if target.index == sec.index), None)
            data = self.elf.contents(sec)
            for rel in self.elf.relocations(rel_sec) if rel_sec is not None else ():
                where = f"at offset {rel.offset} of section {sec.name!r}"
                holder = next((v for v in variables if v[0] <= rel.offset < v[0] + v[1]), None)
                symbols = self.elf.symbols
                if holder is None or not 0 < rel.symbol < len(symbols) or rel.offset + 8 > len(data):
                    raise self.bad_relocation(where, "it is in no struct_ops variable, or names no symbol")
                offset, _size, name, struct_type = holder
                member = next((m.name for m in struct_type.members if m.bit_offset == (rel.offset - offset) * 8),
                              None)
                sym = symbols[rel.symbol]
                (addend,) = struct.unpack_from(_NATIVE + "Q", data, rel.offset)
                program = starts.get((sym.section_index or 0, sym.value + addend))
                if member is None or program is None:
                    raise self.bad_relocation(where, f"struct_ops map {name!r}: no member of struct "
                                              f"{struct_type.name!r} starts there, or {sym.name!r} is no function")
                members[name].append((member, program))
            out.extend(StructOpsSpec(name, sec.name, struct_type.name, tuple(members[name]))
                       for _, _, name, struct_type in variables)
        return tuple(out)

    def same_name(self, first: MapSpec, second: MapSpec) -> ObjectError:
        if first.initial_value is None or second.initial_value is None:
            return self.fail(codes.BAD_MAP, f"two maps are named {first.name!r}")
        return self.fail(
            codes.BAD_MAP,
            f"data sections {first.section!r} and {second.section!r} both make a map named "
            f"{first.name!r} (a section's name, cut to {OBJ_NAME_LEN - 1} characters as libbpf cuts "
            "it); libbpf creates both maps under that one kernel name and tells them apart by "
            "section name in its own lookups only, while evspec names a map by its kernel name "
            "(map: terms, --dump-maps, pins): not supported",
            help=(f"rename the sections so that their first {OBJ_NAME_LEN - 1} characters differ",))

    def layouts(self) -> tuple[SectionLayout, ...]:
        """Sizes and object symbols of the allocated data sections, which the BTF fix-up needs."""
        if self.btf_bytes is None:
            return ()
        out = []
        for s in self.elf.sections:
            if s.executable or not s.flags & SHF_ALLOC or s.type not in ("SHT_PROGBITS", "SHT_NOBITS"):
                continue
            symbols = tuple((sym.name, sym.value) for sym in self.elf.symbols_in(s)
                            if sym.name and sym.type in ("STT_OBJECT", "STT_NOTYPE"))
            out.append(SectionLayout(s.name, s.size, symbols, self.hidden_variables(s)))
        return tuple(out)

    def hidden_variables(self, s: Section) -> tuple[str, ...]:
        """The ``__hidden`` (STV_HIDDEN or STV_INTERNAL) global variables of a data section:
        libbpf makes their BTF VARs static."""
        return tuple(sym.name for sym in self.elf.symbols_in(s)
                     if sym.name and sym.type == "STT_OBJECT" and sym.bind in ("STB_GLOBAL", "STB_WEAK")
                     and self.is_hidden(sym))

    def license(self) -> str:
        s = self.elf.section("license")
        if s is None:
            return ""
        raw = self.elf.contents(s).split(b"\0", 1)[0]
        try:
            return raw.decode("ascii")
        except UnicodeDecodeError:
            raise self.fail(codes.BAD_LICENSE_OR_VERSION,
                            f"the license section is not ASCII text: {raw[:40]!r}") from None

    def kernel_version(self) -> int | None:
        s = self.elf.section("version")
        if s is None:
            return None
        if s.size != 4:
            raise self.fail(codes.BAD_LICENSE_OR_VERSION, f"the version section has {s.size} bytes; "
                            "it must hold one 32-bit LINUX_VERSION_CODE",
                            "'version' section incorrect or lost")
        return int(struct.unpack(_NATIVE + "I", self.elf.contents(s))[0])

    # -- maps --------------------------------------------------------------------------------

    def legacy_maps(self) -> list[MapSpec]:
        sec = self.elf.section(LEGACY_MAPS_SECTION)
        if sec is None or sec.size == 0:
            return []
        syms = sorted((s for s in self.elf.symbols_in(sec)
                       if s.type in ("STT_OBJECT", "STT_NOTYPE") and s.name),
                      key=lambda s: s.value)
        if not syms:
            raise self.fail(codes.BAD_MAP, f"section {sec.name!r} has data but no map symbol")
        data = self.elf.contents(sec)
        even = sec.size // len(syms) if sec.size % len(syms) == 0 else 0
        out = []
        for sym in syms:
            size = sym.size or even
            if size < LEGACY_DEF_MIN:
                raise self.fail(codes.BAD_MAP, f"legacy map {sym.name!r}: its struct bpf_map_def is "
                                f"{size} bytes, shorter than type, key_size, value_size and "
                                f"max_entries ({LEGACY_DEF_MIN} bytes)")
            if sym.value + size > sec.size:
                raise self.fail(codes.BAD_MAP, f"legacy map {sym.name!r} ({size} bytes at offset "
                                f"{sym.value}) extends past the end of section {sec.name!r}")
            fields = struct.unpack_from(f"{_NATIVE}{size // 4}I", data, sym.value)
            map_type, key_size, value_size, max_entries = fields[:4]
            flags = fields[4] if len(fields) > 4 else 0
            extra = tuple((_LEGACY_EXTRA[i] if i < len(_LEGACY_EXTRA) else f"word {i + 5}", v)
                          for i, v in enumerate(fields[5:]) if v)
            out.append(MapSpec(sym.name, map_type, key_size, value_size, max_entries, flags,
                               legacy=True, section=sec.name, symbol_offset=sym.value,
                               legacy_extra=extra))
        return out

    def btf_maps(self) -> list[MapSpec]:
        sec = self.elf.section(BTF_MAPS_SECTION)
        if sec is None:
            return []
        btf = self.btf
        if btf is None:
            raise self.fail(codes.BAD_MAP, "the .maps section needs BTF to describe its maps, and "
                            "the object has no .BTF section (compile with -g)")
        datasec = btf.find(BTF_MAPS_SECTION, BtfKind.DATASEC)
        if datasec is None:
            raise self.fail(codes.BAD_MAP, "the BTF has no DATASEC for the .maps section")
        symbols = {s.name: s for s in self.elf.symbols_in(sec) if s.type == "STT_OBJECT"}
        out = []
        sizes: dict[str, int] = {}
        for info in datasec.secinfos:
            var = btf.type(info.type)
            if var.kind != BtfKind.VAR:
                raise self.fail(codes.BAD_MAP, f"the .maps DATASEC lists type {var.id}, a "
                                f"{var.kind.name}, where a VAR is expected")
            sym = symbols.get(var.name)
            if sym is None:
                raise self.fail(codes.BAD_MAP, f"map {var.name!r} is in the BTF but has no symbol in "
                                "the .maps section")
            try:
                out.append(self.btf_map(btf, var, sym))
            except BtfError as exc:
                raise self.fail(codes.CORRUPT_BTF, f"corrupt BTF: the definition of map {var.name!r}: "
                                f"{exc}", None) from None
            sizes[var.name] = info.size
        return self.map_slots(sec, sorted(out, key=lambda m: m.symbol_offset), sizes)

    def btf_map(self, btf: Btf, var: BtfType, sym: Symbol) -> MapSpec:
        return replace(self.btf_map_def(btf, var.name, btf.resolve(var.type)), symbol_offset=sym.value)

    def btf_map_def(self, btf: Btf, name: str, definition: BtfType, inner: bool = False) -> MapSpec:
        """One BTF map definition (``inner``: the ``__array(values, struct ..)`` of a map-in-map,
        named ``OUTER.inner`` as libbpf names it)."""
        if definition.kind != BtfKind.STRUCT:
            what = "void" if definition.id == 0 else f"a {definition.kind.name}"
            raise self.fail(codes.BAD_MAP, f"map {name!r}: its definition is {what}, not a struct "
                            "(declare BTF maps as struct { __uint(type, ...); ... } NAME SEC(\".maps\"))")
        ints: dict[str, int] = {}
        key_id = value_id = None
        key_size = value_size = None
        values: BtfMember | None = None
        for i, m in enumerate(definition.members):
            if m.name == "map_extra":
                ints[m.name] = self.long_field(btf, name, m.name, m.type)
            elif m.name in _INT_FIELDS:
                ints[m.name] = self.int_field(btf, name, m.name, m.type)
            elif m.name in ("key", "value"):
                ptr = btf.resolve(m.type)
                if ptr.kind != BtfKind.PTR:
                    raise self.fail(codes.BAD_MAP, f"map {name!r}: field {m.name!r} must be a pointer "
                                    f"to the {m.name} type (__type({m.name}, T)), it is a {ptr.kind.name}")
                size = btf.size_of(ptr.type)
                if m.name == "key":
                    key_id, key_size = ptr.type, size
                else:
                    value_id, value_size = ptr.type, size
            elif m.name == "values":
                # map-in-map / prog-array initialisers: the values are 4-byte fds or ids
                if i != len(definition.members) - 1:
                    raise self.fail(codes.BAD_MAP, f"map {name!r}: member 'values' must be the last one")
                values, value_size = m, 4
            else:
                raise self.fail(codes.BAD_MAP, f"map {name!r}: unknown field {m.name!r}")
        for field, from_type in (("key_size", key_size), ("value_size", value_size)):
            if field in ints and from_type is not None and ints[field] != from_type:
                raise self.fail(codes.BAD_MAP, f"map {name!r}: {field} {ints[field]} conflicts with "
                                f"the size of its {field[:-5]} type ({from_type})")
        pinning = ints.get("pinning", 0)
        if pinning and inner:
            raise self.fail(codes.BAD_MAP, f"map {name!r}: an inner map definition cannot be pinned")
        if pinning not in _PIN_VALUES:
            raise self.fail(codes.BAD_MAP, f"map {name!r}: invalid pinning value {pinning} (libbpf "
                            "knows LIBBPF_PIN_NONE 0 and LIBBPF_PIN_BY_NAME 1)")
        map_type = ints.get("type", 0)
        inner_spec = None
        if values is not None:
            inner_spec = self.values_member(btf, name, map_type, values, inner)
        return MapSpec(
            name=name, type=map_type,
            key_size=ints.get("key_size", key_size or 0),
            value_size=ints.get("value_size", value_size or 0),
            max_entries=ints.get("max_entries", 0), flags=ints.get("map_flags", 0),
            pinning=pinning, legacy=False, section=BTF_MAPS_SECTION,
            key_type_id=key_id, value_type_id=value_id, numa_node=ints.get("numa_node", 0),
            map_extra=ints.get("map_extra", 0), inner=inner_spec)

    def values_member(self, btf: Btf, name: str, map_type: int, m: BtfMember, inner: bool
                      ) -> MapSpec | None:
        """The ``values`` member: ``__array(values, T)``, a zero-sized array of pointers; T is a
        function prototype for a PROG_ARRAY, the inner map's definition for a map-in-map."""
        where = f"map {name!r}: member 'values'"
        if inner:
            raise self.fail(codes.UNSUPPORTED, f"{where}: an inner map cannot itself hold maps "
                            "(multi-level map-in-map is not supported, by libbpf either)")
        is_prog_array = map_type == MapType.PROG_ARRAY
        if not is_prog_array and map_type not in _MAP_IN_MAP:
            raise self.fail(codes.BAD_MAP, f"{where} is only for a PROG_ARRAY, ARRAY_OF_MAPS or "
                            f"HASH_OF_MAPS, not map type {map_type}")
        array = btf.resolve(m.type)
        if array.kind != BtfKind.ARRAY or array.array is None or array.array.nelems:
            raise self.fail(codes.BAD_MAP, f"{where} must be a zero-sized array (__array(values, T))")
        ptr = btf.resolve(array.array.type)
        if ptr.kind != BtfKind.PTR:
            raise self.fail(codes.BAD_MAP, f"{where}: its elements must be pointers, not {ptr.kind.name}")
        target = btf.resolve(ptr.type)
        if is_prog_array:
            if target.kind != BtfKind.FUNC_PROTO:
                raise self.fail(codes.BAD_MAP, f"{where}: a PROG_ARRAY's values are functions "
                                f"(__array(values, int (void *))), not {target.kind.name}")
            return None
        if target.kind != BtfKind.STRUCT:
            raise self.fail(codes.BAD_MAP, f"{where}: a map-in-map's values are inner map "
                            f"definitions (__array(values, struct {{ ... }})), not {target.kind.name}")
        return self.btf_map_def(btf, f"{name}.inner", target, inner=True)

    def map_slots(self, sec: Section, maps: list[MapSpec], sizes: dict[str, int]) -> list[MapSpec]:
        """The ``.values = { [i] = &x }`` initialisers of ``.maps``: its relocations, each one the
        slot of a map's ``values`` array that holds a program (PROG_ARRAY) or a map (map-in-map)."""
        rel_sec = next((r for r, t in self.elf.relocation_sections() if t.index == sec.index), None)
        if rel_sec is None:
            return maps
        btf = self.btf
        assert btf is not None  # btf_maps() checked it
        slots: dict[str, dict[int, str]] = {}
        symbols = self.elf.symbols
        for rel in self.elf.relocations(rel_sec):
            where = f"at offset {rel.offset} of section {sec.name!r}"
            owner = next((m for m in maps if m.symbol_offset <= rel.offset
                          and rel.offset + 8 <= m.symbol_offset + sizes[m.name]), None)
            if owner is None:
                raise self.bad_relocation(where, "no map definition holds it")
            if not 0 < rel.symbol < len(symbols):
                raise self.bad_relocation(where, f"symbol index {rel.symbol} is out of range")
            sym = symbols[rel.symbol]
            var = btf.find(owner.name, BtfKind.VAR)
            definition = btf.resolve(var.type) if var is not None else None
            last = definition.members[-1] if definition is not None and definition.members else None
            if last is None or last.name != "values":
                raise self.bad_relocation(where, f"map {owner.name!r} has no 'values' member to initialise")
            moff = rel.offset - owner.symbol_offset - last.bit_offset // 8
            if moff < 0 or moff % 8:
                raise self.bad_relocation(where, f"it is not at a slot of map {owner.name!r}'s values")
            slot = moff // 8
            home = None if sym.section_index is None else self.elf.section_at(sym.section_index)
            if owner.type == MapType.PROG_ARRAY:
                if (home is None or not home.executable or home.name == ".text"
                        or sym.type != "STT_FUNC" or sym.bind == "STB_LOCAL"):
                    raise self.bad_relocation(where, f"prog-array {owner.name!r} slot [{slot}]: "
                                              f"{sym.name!r} is not an entry-point program")
            elif home is None or home.index != sec.index or not any(m.name == sym.name for m in maps):
                raise self.bad_relocation(where, f"map-in-map {owner.name!r} slot [{slot}]: "
                                          f"{sym.name!r} is not a BTF-defined map")
            elif owner.type == MapType.HASH_OF_MAPS and owner.key_size != 4:
                raise self.fail(codes.BAD_MAP, f"map {owner.name!r}: a HASH_OF_MAPS with initial "
                                f"values needs 4-byte keys (the slot numbers), not {owner.key_size}")
            slots.setdefault(owner.name, {})[slot] = sym.name
        return [replace(m, initial_slots=tuple(sorted(slots[m.name].items())))
                if m.name in slots else m for m in maps]

    def int_field(self, btf: Btf, map_name: str, field: str, type_id: int) -> int:
        """A ``__uint(field, N)`` member: ``int (*field)[N]``, a pointer to an array of N."""
        ptr = btf.resolve(type_id)
        array = btf.resolve(ptr.type) if ptr.kind == BtfKind.PTR else None
        if array is None or array.kind != BtfKind.ARRAY or array.array is None:
            raise self.fail(codes.BAD_MAP, f"map {map_name!r}: field {field!r} must be declared with "
                            f"__uint() (a pointer to an array), it is a {ptr.kind.name}")
        return array.array.nelems

    def long_field(self, btf: Btf, map_name: str, field: str, type_id: int) -> int:
        """A 64-bit field: ``__uint(field, N)``, or ``__ulong(field, N)``, an enum of one
        enumerator N (libbpf 1.4 and later; 1.1 reads __uint only)."""
        t = btf.resolve(type_id)
        if t.kind not in (BtfKind.ENUM, BtfKind.ENUM64):
            return self.int_field(btf, map_name, field, type_id)
        if len(t.enumerators) != 1:
            raise self.fail(codes.BAD_MAP, f"map {map_name!r}: field {field!r} is an enum of "
                            f"{len(t.enumerators)} enumerators; __ulong({field}, N) makes one")
        value = t.enumerators[0].value
        if t.kind == BtfKind.ENUM and t.size > 4:
            raise self.fail(codes.BAD_MAP, f"map {map_name!r}: field {field!r} is an {t.size}-byte "
                            f"enum (__ulong) whose BTF ENUM record holds 32 bits of its value only "
                            f"({value & _U32:#x}); the compiler cut the value (clang before 15 does; "
                            "later ones write an ENUM64), so the map would get the wrong one",
                            help=("build with clang 15 or later, or use __uint() for a value below "
                                  "2**32",))
        return value & _U64

    def data_maps(self) -> list[MapSpec]:
        out = []
        for s in self.elf.sections:
            if not _is_data_section(s):
                continue
            datasec = self.btf.find(s.name, BtfKind.DATASEC) if self.btf is not None else None
            try:
                mmapable = datasec is not None and self.has_global_var(datasec, s)
            except BtfError as exc:
                raise self.fail(codes.CORRUPT_BTF, f"corrupt BTF: the DATASEC of section {s.name!r}: "
                                f"{exc}", None) from None
            out.append(MapSpec(
                name=data_map_name(self.path, s.name), type=int(MapType.ARRAY), key_size=4,
                value_size=s.size, max_entries=1, section=s.name,
                value_type_id=None if datasec is None else datasec.id,
                initial_value=self.elf.contents(s), readonly=s.name.startswith(".rodata"),
                mmapable=mmapable))
        return out

    def has_global_var(self, datasec: BtfType, section: Section) -> bool:
        """libbpf makes a data section's map BPF_F_MMAPABLE when its DATASEC lists a non-static
        variable, ``__hidden`` ones counting as static."""
        assert self.btf is not None
        hidden = set(self.hidden_variables(section))
        for i in datasec.secinfos:
            var = self.btf.type(i.type)
            if var.kind == BtfKind.VAR and var.linkage != VAR_STATIC and var.name not in hidden:
                return True
        return False

    # -- functions ---------------------------------------------------------------------------

    @cached_property
    def visibility(self) -> dict[int, int]:
        """Symbol index -> ELF visibility (``st_other & 3``; 1 internal, 2 hidden), non-default only."""
        tab = self.elf.symtab
        if tab is None:
            return {}
        raw = self.elf.contents(tab)
        return {i: raw[i * 24 + 5] & 3 for i in range(len(raw) // 24) if raw[i * 24 + 5] & 3}

    def functions(self) -> list[_Function]:
        out: list[_Function] = []
        for sec in self.elf.sections:
            if not sec.executable or sec.size == 0:
                continue
            funcs = sorted((s for s in self.elf.symbols_in(sec) if s.type == "STT_FUNC"),
                           key=lambda s: s.value)
            text = sec.name == ".text"
            if not funcs and not text:
                if sec.size % INSN_SIZE:
                    raise self.fail(codes.BAD_PROGRAM, f"section {sec.name!r} is {sec.size} bytes, "
                                    "not a whole number of instructions")
                out.append(_Function(sec.name, sec, 0, sec.size, True, True))
                continue
            for sym in funcs:
                if sym.value % INSN_SIZE or sym.size % INSN_SIZE or sym.size == 0:
                    raise self.fail(codes.BAD_PROGRAM, f"function {sym.name!r} in section "
                                    f"{sec.name!r} is not a whole number of instructions (offset "
                                    f"{sym.value}, size {sym.size})")
                if sym.value + sym.size > sec.size:
                    raise self.fail(codes.BAD_PROGRAM, f"function {sym.name!r} ({sym.size} bytes at "
                                    f"offset {sym.value}) extends past the end of section {sec.name!r}")
                is_global = sym.bind in ("STB_GLOBAL", "STB_WEAK")
                hidden = is_global and self.is_hidden(sym)
                out.append(_Function(sym.name, sec, sym.value, sym.size, not text and is_global,
                                     is_global, hidden))
            self.check_coverage(sec, funcs)
        return out

    def is_hidden(self, sym: Symbol) -> bool:
        return self.visibility.get(sym.index, 0) in (_STV_INTERNAL, _STV_HIDDEN)

    def check_coverage(self, sec: Section, funcs: list[Symbol]) -> None:
        """Every byte of an executable section in exactly one function (``funcs``: its FUNC
        symbols by offset). libbpf loads each FUNC symbol's bytes and drops code outside them
        without a word; two functions over the same bytes would share them."""
        end, last = 0, None
        for sym in funcs:
            if sym.value < end:
                assert last is not None
                raise self.fail(codes.BAD_PROGRAM, f"section {sec.name!r}: functions {last.name!r} "
                                f"(offset {last.value}, {last.size} bytes) and {sym.name!r} (offset "
                                f"{sym.value}, {sym.size} bytes) overlap: not supported")
            if sym.value > end:
                raise self.uncovered(sec, end, sym.value)
            end, last = sym.value + sym.size, sym
        if end < sec.size:
            raise self.uncovered(sec, end, sec.size)

    def uncovered(self, sec: Section, start: int, end: int) -> ObjectError:
        return self.fail(codes.BAD_PROGRAM, f"section {sec.name!r}: bytes {start}..{end} "
                         f"({(end - start) / INSN_SIZE:g} instruction(s)) are code of no function (no "
                         "FUNC symbol covers them); libbpf drops such code without a word: not supported")

    def line_info(self, f: _Function) -> tuple[LineInfo, ...]:
        records, offsets = self.section_lines(f.section.name)
        lo = bisect.bisect_left(offsets, f.offset)
        hi = bisect.bisect_left(offsets, f.end)
        return tuple(LineInfo((r.insn_off - f.offset) // INSN_SIZE, r.file, r.line, r.column,
                              r.source_line) for r in records[lo:hi])

    def core_relocations(self, f: _Function) -> tuple[CoreRelocation, ...]:
        ext = self.btf_ext
        if ext is None:
            return ()
        try:
            records = ext.core_relos(f.section.name)
        except BtfError as exc:
            raise self.fail(codes.CORRUPT_BTF_EXT, f"corrupt BTF.ext: {exc}", None) from None
        out = []
        for r in records:
            if not f.offset <= r.insn_off < f.end:
                continue
            if r.insn_off % INSN_SIZE:
                raise self.fail(codes.CORRUPT_BTF_EXT, f"corrupt BTF.ext: a CO-RE relocation of section "
                                f"{f.section.name!r} is at byte {r.insn_off}, inside an instruction", None)
            assert self.btf is not None  # a .BTF.ext is read only with its .BTF
            t = self.btf.type(r.type_id)
            type_name = f"{t.kind.name.lower()} {t.name or '(anon)'}"
            out.append(CoreRelocation((r.insn_off - f.offset) // INSN_SIZE, r.kind_name, type_name, r.access,
                                      r.type_id, r.kind))
        return tuple(out)

    def section_lines(self, section: str) -> tuple[list[LineRecord], list[int]]:
        """The line records of a section sorted by offset, and their offsets (decoded once)."""
        cached = self._lines.get(section)
        if cached is None:
            ext = self.btf_ext
            try:
                records = sorted(ext.line_info(section), key=lambda r: r.insn_off) if ext else []
            except BtfError as exc:
                raise self.fail(codes.CORRUPT_BTF_EXT, f"corrupt BTF.ext: {exc}", None) from None
            cached = (records, [r.insn_off for r in records])
            self._lines[section] = cached
        return cached

    # -- relocations -------------------------------------------------------------------------

    def relocations(self, functions: list[_Function], maps: list[MapSpec]
                    ) -> dict[tuple[int, int], list[Relocation]]:
        """Relocations keyed by (section index, function offset)."""
        grouped: dict[int, list[_Function]] = {}
        for f in functions:
            grouped.setdefault(f.section.index, []).append(f)
        by_section = {i: _Functions(fs[0].section, fs) for i, fs in grouped.items()}
        targets = _Targets(
            maps={(m.section, m.symbol_offset): m for m in maps if m.initial_value is None},
            data={m.section: m for m in maps if m.initial_value is not None},
            functions=by_section, externs={e.name: e for e in self.externs},
            kconfig=next((m for m in maps if m.section == KCONFIG_SEC), None))
        out: dict[tuple[int, int], list[Relocation]] = {}
        relocated: set[tuple[int, int]] = set()
        for rel_sec, target in self.elf.relocation_sections():
            if not target.executable:
                self.unapplied_relocations(rel_sec, target)
                continue
            funcs = by_section.get(target.index) or _Functions(target, [])
            code = self.elf.contents(target)
            for rel in self.elf.relocations(rel_sec):
                f, r = self.relocation(rel, funcs, code, targets)
                out.setdefault((target.index, f.offset), []).append(r)
                relocated.add((target.index, rel.offset))
        for funcs in by_section.values():
            self.unrelocated_instructions(funcs, relocated, out)
        for relocs in out.values():
            relocs.sort(key=lambda r: r.insn_index)
        return out

    def relocation(self, rel: Rel, funcs: _Functions, code: bytes, targets: _Targets
                   ) -> tuple[_Function, Relocation]:
        sec = funcs.section
        where = f"at offset {rel.offset} of section {sec.name!r}"
        if rel.offset % INSN_SIZE or rel.offset + INSN_SIZE > sec.size:
            raise self.bad_relocation(where, "not at an instruction of the section")
        symbols = self.elf.symbols
        if not 0 < rel.symbol < len(symbols):
            raise self.bad_relocation(where, f"symbol index {rel.symbol} is out of range")
        if rel.type not in (R_BPF_64_64, R_BPF_64_32):
            raise self.bad_relocation(where, f"relocation type {rel.type} is not used in BPF code")
        f = funcs.containing(rel.offset)
        if f is None:
            raise self.bad_relocation(where, "it lies outside every function")
        sym = symbols[rel.symbol]
        opcode, _dst, src_reg, _off, imm = asm.decode(code, rel.offset // INSN_SIZE)
        insn_index = (rel.offset - f.offset) // INSN_SIZE
        if sym.section_index is None:
            return f, self.extern_relocation(targets, sym, opcode, insn_index, rel.offset, f, where)
        home = self.elf.section_at(sym.section_index)
        sym_name = sym.name or home.name
        if opcode == asm.OP_LD_IMM64:
            if rel.offset + 2 * INSN_SIZE > f.end:
                raise self.bad_relocation(where, "ld_imm64 is cut off at the end of its function")
            target_off = sym.value + imm
            m = targets.maps.get((home.name, target_off))
            if m is not None:
                return f, Relocation(insn_index, "map", sym_name, m.name)
            if home.name in (LEGACY_MAPS_SECTION, BTF_MAPS_SECTION):
                raise self.bad_relocation(where, f"{sym_name!r} points at offset {target_off} of "
                                          f"section {home.name!r}, where no map starts")
            d = targets.data.get(home.name)
            if d is not None:
                if not 0 <= target_off <= home.size:
                    raise self.bad_relocation(where, f"offset {target_off} is outside data section "
                                              f"{home.name!r} ({home.size} bytes)")
                return f, Relocation(insn_index, "data", sym_name, d.name, target_off)
            if home.executable:
                callee = self.callee(targets, home, target_off, where)
                return f, Relocation(insn_index, "func", sym_name, callee.name)
            raise self.bad_relocation(where, f"{sym_name!r} in section {home.name!r} is neither a "
                                      "map, global data nor a function")
        if opcode == asm.OP_CALL:
            if src_reg != BPF_PSEUDO_CALL:
                raise self.bad_relocation(where, f"a call with src_reg {src_reg} is relocated; only "
                                          "bpf-to-bpf calls (src_reg 1) are")
            if not home.executable:
                raise self.bad_relocation(where, f"call target {sym_name!r} is in section "
                                          f"{home.name!r}, which holds no code")
            callee = self.callee(targets, home, sym.value + (imm + 1) * INSN_SIZE, where)
            return f, Relocation(insn_index, "call", sym_name, callee.name)
        raise self.bad_relocation(where, f"instruction opcode 0x{opcode:02x} is neither ld_imm64 nor "
                                  "call")

    def extern_relocation(self, targets: _Targets, sym: Symbol, opcode: int, insn_index: int,
                          offset: int, f: _Function, where: str) -> Relocation:
        """A relocation against an undefined symbol: an extern's ld_imm64 (kconfig: "data" into
        the .kconfig map at the value's offset; ksym and kfunc: "ksym") or kfunc call ("kfunc")."""
        ext = targets.externs.get(sym.name)
        if ext is None:
            raise self.fail(codes.EXTERN_INVALID, f"{where}: symbol {sym.name!r} is not defined in "
                            "the object, and it is no extern (an undefined GLOBAL or WEAK NOTYPE "
                            "symbol of the .kconfig or .ksyms section)", "Relocation failed")
        if opcode == asm.OP_LD_IMM64:
            if offset + 2 * INSN_SIZE > f.end:
                raise self.bad_relocation(where, "ld_imm64 is cut off at the end of its function")
            if ext.kind == "kconfig":
                assert targets.kconfig is not None  # made for every object with kconfig externs
                return Relocation(insn_index, "data", ext.name, targets.kconfig.name, ext.offset)
            return Relocation(insn_index, "ksym", ext.name, ext.name)
        if opcode == asm.OP_CALL:
            if ext.kind != "kfunc":
                raise self.bad_relocation(where, f"a call of extern {ext.name!r}, which is a "
                                          f"{ext.kind} variable, not a function")
            return Relocation(insn_index, "kfunc", ext.name, ext.name)
        raise self.bad_relocation(where, f"instruction opcode 0x{opcode:02x} relocated against extern "
                                  f"{ext.name!r} is neither ld_imm64 nor call")

    def callee(self, targets: _Targets, sec: Section, offset: int, where: str) -> _Function:
        funcs = targets.functions.get(sec.index)
        f = None if funcs is None else funcs.starting(offset)
        if f is None:
            raise self.bad_relocation(where, f"no function starts at offset {offset} of section "
                                      f"{sec.name!r}")
        return f

    def unrelocated_instructions(self, funcs: _Functions, relocated: set[tuple[int, int]],
                                 out: dict[tuple[int, int], list[Relocation]]) -> None:
        """The instructions without a relocation whose imm only a loader can give. A pseudo call
        landing on the start of a function of the same section (older LLVM's call of a static
        function) gets a "call" relocation; any other is the function's problem (``problems``:
        the programs that call it are refused, libbpf fails those alone)."""
        sec = funcs.section
        for f in funcs.items:
            try:
                self.function_imms(funcs, f, relocated, out)
            except ObjectError as exc:
                self.problems[(sec.index, f.offset)] = FunctionProblem(exc.code, exc.message, exc.help)

    def function_imms(self, funcs: _Functions, f: _Function, relocated: set[tuple[int, int]],
                      out: dict[tuple[int, int], list[Relocation]]) -> None:
        """``unrelocated_instructions`` of one function: ObjectError at the first it cannot take."""
        sec = funcs.section
        code = self.elf.contents(sec)
        for match in _LOADER_IMM_RE.finditer(code, f.offset, f.end):
            pos = match.start()
            if (pos - f.offset) % INSN_SIZE or (sec.index, pos) in relocated:
                continue
            opcode, _dst, src_reg, _off, imm = asm.decode(code, pos // INSN_SIZE)
            where = (f"section {sec.name!r}, function {f.name!r}, instruction "
                     f"{(pos - f.offset) // INSN_SIZE} (offset {pos})")
            if opcode == asm.OP_LD_IMM64:
                if pos + 2 * INSN_SIZE > f.end:
                    continue  # the second half of an ld_imm64 of the function's last slots
                name, meaning = _LD_IMM64_SRC.get(src_reg, (f"src_reg {src_reg}", "something unknown"))
                raise self.fail(codes.UNSUPPORTED, f"{where}: an ld_imm64 with src_reg {src_reg} "
                                f"({name}) and no relocation: the kernel would take its imm {imm} "
                                f"as {meaning}, which only the loader can know; libbpf passes it "
                                "on unchanged: not supported", "Relocation failed")
            if src_reg == BPF_PSEUDO_KFUNC_CALL:
                raise self.fail(codes.UNSUPPORTED, f"{where}: a kfunc call (src_reg "
                                f"BPF_PSEUDO_KFUNC_CALL) without a relocation: the kernel would "
                                f"take its imm {imm} as the BTF id of a function of whichever "
                                "kernel runs it; libbpf passes it on unchanged: not supported",
                                "Relocation failed",
                                help=("declare the kfunc (extern ... __ksym) and call it by name, "
                                      "so that the loader finds it in the running kernel",))
            target = pos + (imm + 1) * INSN_SIZE
            callee = funcs.starting(target)  # its own start: a recursive call
            if callee is None:
                inside = funcs.containing(target)
                if inside is None:
                    what = f"offset {target}, where no function of the section is"
                else:
                    what = (f"offset {target}, inside function {inside.name!r} (which starts at "
                            f"offset {inside.offset}); libbpf would call {inside.name!r} from its "
                            "start instead")
                raise self.bad_relocation(f"at offset {pos} of section {sec.name!r}",
                                          f"function {f.name!r} has a bpf-to-bpf call without a "
                                          f"relocation that jumps to {what}")
            out.setdefault((sec.index, f.offset), []).append(
                Relocation((pos - f.offset) // INSN_SIZE, "call", sec.name, callee.name))

    def unapplied_relocations(self, rel_sec: Section, target: Section) -> None:
        """Relocations of a section that holds no code: those of ``.BTF``, ``.BTF.ext`` and
        ``.debug_*`` are not needed to load, those of ``.maps`` are its ``.values`` initialisers
        (``map_slots``), those of ``.struct_ops*`` the programs of struct_ops maps
        (``struct_ops_maps``); any other is refused, naming the first one."""
        if target.name in (*_UNNEEDED_RELOCATIONS, BTF_MAPS_SECTION, *STRUCT_OPS_SECTIONS) or (
                target.name.startswith(".debug_")):  # struct_ops: read by ``struct_ops_maps``
            return
        rels = self.elf.relocations(rel_sec)
        if not rels:
            return
        first = rels[0]
        more = f" (and {len(rels) - 1} more relocation(s) in {rel_sec.name!r})" if len(rels) > 1 else ""
        symbols = self.elf.symbols
        if not 0 < first.symbol < len(symbols):
            raise self.bad_relocation(f"at offset {first.offset} of section {target.name!r}",
                                      f"symbol index {first.symbol} is out of range")
        sym = symbols[first.symbol]
        size = _DATA_RELOCATION_SIZES.get(first.type, 0)
        data = self.elf.contents(target)
        if not _is_data_section(target) or size == 0 or first.offset + size > len(data):
            raise self.fail(codes.UNSUPPORTED, f"section {rel_sec.name!r} relocates section "
                            f"{target.name!r} (relocation type {first.type} against {sym.name!r} at "
                            f"offset {first.offset}){more}; evspec applies relocations to code and "
                            "to .maps only (those of BTF and DWARF are not needed): not supported",
                            "Relocation failed")
        (in_file,) = struct.unpack_from(_NATIVE + ("Q" if size == 8 else "I"), data, first.offset)
        holder = next((v for v in self.elf.symbols_in(target) if v.name and v.type == "STT_OBJECT"
                       and v.value <= first.offset < v.value + max(v.size, 1)), None)
        where = f"offset {first.offset} of data section {target.name!r}"
        if holder is not None:
            inside = first.offset - holder.value
            where += f" (variable {holder.name!r}" + (f", its byte {inside})" if inside else ")")
        raise self.fail(
            codes.UNSUPPORTED,
            f"section {rel_sec.name!r}: the {size}-byte pointer at {where} is initialised with the "
            f"address of {self.pointee(sym, in_file)}{more}; global data cannot hold addresses (the "
            f"kernel gives a program none to put there), and libbpf skips {rel_sec.name!r}, leaving "
            f"the bytes as the file holds them ({in_file:#x}): not supported", "Relocation failed",
            help=("keep an index or an offset in global data instead of a pointer, and take the "
                  "address in the program's code",))

    def pointee(self, sym: Symbol, addend: int) -> str:
        """What a data relocation's symbol is, for messages."""
        if sym.section_index is None:
            return f"{sym.name!r} (undefined here)"
        home = self.elf.section_at(sym.section_index)
        if sym.type == "STT_SECTION" or not sym.name:
            return f"offset {sym.value + addend} of section {home.name!r}"
        if home.name in (LEGACY_MAPS_SECTION, BTF_MAPS_SECTION):
            what = "map"
        elif home.executable:
            what = "function"
        else:
            what = "variable"
        plus = f" + {addend}" if addend else ""
        return f"{what} {sym.name!r} (section {home.name!r}){plus}"


class _Functions:
    """The functions of one executable section, sorted by offset."""

    __slots__ = ("section", "items", "_starts")

    def __init__(self, section: Section, items: list[_Function]) -> None:
        self.section = section
        self.items = sorted(items, key=lambda f: f.offset)
        self._starts = [f.offset for f in self.items]

    def containing(self, offset: int) -> _Function | None:
        i = bisect.bisect_right(self._starts, offset) - 1
        if i >= 0 and offset < self.items[i].end:
            return self.items[i]
        return None

    def starting(self, offset: int) -> _Function | None:
        f = self.containing(offset)
        return f if f is not None and f.offset == offset else None
