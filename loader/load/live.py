"""From an ``ObjectSpec`` to live kernel objects: maps created, programs relocated and loaded.

``load_object(spec, prog_types)`` is the one call (cilium/ebpf's ``NewCollection``). It loads the
object's BTF (completed by ``btf_fixup`` the way libbpf completes it, and rewritten for kernels
that lack newer kinds); creates every map, legacy ``SEC("maps")`` and BTF ``.maps`` alike, with
BTF key/value types where the map type allows, global data maps with their initial contents and
``.rodata`` frozen; patches a copy of each program's instructions and loads it with the program
type the caller decided from the section name, with the BTF's func_info and line_info so that
verifier logs and ``bpftool prog dump jited linum`` show source lines. The result is a
``LiveObject`` that closes every descriptor on ``close()`` or at the end of a ``with`` block; if
anything fails half-way, what was already created is closed before the error propagates.
"""

from __future__ import annotations

import errno as E
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from types import TracebackType

from evspec.loader.abi import bpf as abi
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import ENOTSUPP, Kernel, KernelError
from evspec.loader.object.btf import Btf, BtfError, BtfExt
from evspec.loader.object.btf_fixup import (
    BtfFeatures,
    BtfFixupError,
    FixedBtf,
    ProgramBtfInfo,
    features_from,
    fixup_btf,
    probe_blobs,
    program_btf_info,
)
from evspec.loader.object.compile import possible_cpus  # also the size of a default perf event array
from evspec.loader.object.spec import CORE_HELP, LineInfo, MapSpec, MapType, ObjectSpec, ProgramSpec

from evspec.codes import bpf as bpf_codes
from evspec.codes import kernel as codes

_MAP_SECTIONS = (".maps", "maps")
# What the kernel's BTF log says when it refuses a kind or linkage it does not know: only then
# are the kinds probed and the BTF rewritten for this kernel.
_UNKNOWN_KIND_LOG = ("Invalid kind", "Invalid btf_info", "kind_flag", "Invalid func linkage")
# Failures of BPF_BTF_LOAD that say nothing about the BTF: loading without it would fail the same way.
_NOT_ABOUT_BTF = (codes.PERMISSION, codes.MEMLOCK)


@dataclass(frozen=True, slots=True)
class LinkedProgram:
    """A program ready for BPF_PROG_LOAD: the patched instructions with its subprograms appended."""

    insns: bytes
    line_info: tuple[LineInfo, ...]  # offsets into ``insns`` (subprograms' entries shifted)
    layout: tuple[tuple[str, int], ...]  # (function, first instruction) in load order


@dataclass(frozen=True, slots=True)
class LiveMap:
    spec: MapSpec
    fd: int
    with_btf: bool  # created with the object's BTF key/value type ids

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True, slots=True)
class LiveProgram:
    spec: ProgramSpec
    fd: int
    prog_type: int
    insns: bytes  # what was loaded

    @property
    def name(self) -> str:
        return self.spec.name


class LiveObject:
    """The maps and programs of one loaded object; owns their descriptors."""

    def __init__(self, kernel: Kernel, spec: ObjectSpec) -> None:
        self.kernel = kernel
        self.spec = spec
        self.maps: dict[str, LiveMap] = {}
        self.programs: dict[str, LiveProgram] = {}
        self.btf_fd: int | None = None
        self.btf_error: KernelError | None = None  # why the object's BTF was not used
        self.btf: FixedBtf | None = None  # what was loaded as btf_fd
        self.btf_ext: BtfExt | None = None  # the object's .BTF.ext, when programs use it
        self.program_notes: list[str] = []  # programs loaded without their func/line info, and why
        self._closed = False

    def map(self, name: str) -> LiveMap:
        try:
            return self.maps[name]
        except KeyError:
            raise KeyError(f"object {self.spec.path!r} has no map {name!r}") from None

    def program(self, name: str) -> LiveProgram:
        try:
            return self.programs[name]
        except KeyError:
            raise KeyError(f"object {self.spec.path!r} has no program {name!r}") from None

    @property
    def notes(self) -> list[str]:
        """What ``record -v`` says about this object's BTF."""
        path = self.spec.path
        if self.btf_error is not None:
            notes = [f"{path}: loaded without BTF: {self.btf_error.message}"]
        elif self.btf is None:
            notes = [] if self.spec.btf is None else [f"{path}: BTF not loaded (not asked for)"]
        else:
            typed = sum(m.with_btf for m in self.maps.values())
            notes = [f"{path}: BTF loaded ({typed} of {len(self.maps)} maps with key/value types)"]
            if self.btf.replaced:
                notes.append(f"{path}: BTF rewritten for this kernel: {', '.join(self.btf.replaced)}")
        return notes + self.program_notes

    @property
    def fds(self) -> tuple[int, ...]:
        """Every descriptor this object holds, in closing order."""
        fds = [p.fd for p in self.programs.values()] + [m.fd for m in self.maps.values()]
        if self.btf_fd is not None:
            fds.append(self.btf_fd)
        return tuple(fds)

    def close(self) -> None:
        """Close every descriptor; the first failure is raised after all were tried."""
        if self._closed:
            return
        self._closed = True
        fds = self.fds
        self.programs.clear()
        self.maps.clear()
        self.btf_fd = None
        self.kernel.close_all(fds)

    def __enter__(self) -> LiveObject:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# ----------------------------------------------------------------- relocation


def _insn(buf: bytearray, index: int) -> abi.BpfInsn:
    return abi.BpfInsn.from_buffer_copy(buf, index * abi.INSN_SIZE)


def _put(buf: bytearray, index: int, insn: abi.BpfInsn) -> None:
    buf[index * abi.INSN_SIZE : (index + 1) * abi.INSN_SIZE] = bytes(insn)


def _relocation_error(prog: ProgramSpec, index: int, message: str) -> KernelError:
    return KernelError(codes.RELOCATION, f"program '{prog.name}', instruction {index}: {message}")


def _patch_ld_imm64(
    buf: bytearray, part: ProgramSpec, base: int, index: int, src_reg: int, fd: int, offset: int
) -> None:
    at = base + index
    if index < 0 or index + 1 >= part.insn_count:
        raise _relocation_error(part, index, "a ld_imm64 relocation points past the program's end")
    first, second = _insn(buf, at), _insn(buf, at + 1)
    if first.code != abi.OP_LD_IMM64 or second.code != 0:
        raise _relocation_error(
            part,
            index,
            f"expected a ld_imm64 instruction (opcode 0x18) to relocate, found opcode {first.code:#04x}",
        )
    first.src_reg = src_reg
    first.imm = fd
    second.imm = offset
    _put(buf, at, first)
    _put(buf, at + 1, second)


def _patch_call(buf: bytearray, part: ProgramSpec, base: int, index: int, target: int) -> None:
    at = base + index
    if not 0 <= index < part.insn_count:
        raise _relocation_error(part, index, "a call relocation points past the program's end")
    insn = _insn(buf, at)
    if insn.code != abi.OP_CALL or insn.src_reg != abi.BPF_PSEUDO_CALL:
        raise _relocation_error(
            part, index, f"expected a bpf-to-bpf call (opcode 0x85, src_reg 1), found opcode {insn.code:#04x}"
        )
    insn.imm = target - (at + 1)
    _put(buf, at, insn)


def _function(spec: ObjectSpec, name: str) -> ProgramSpec | None:
    for fn in spec.subprograms + spec.programs:
        if fn.name == name:
            return fn
    return None


def _data_map(spec: ObjectSpec, target: str) -> MapSpec | None:
    for m in spec.maps:
        if m.name == target:
            return m
    for m in spec.maps:
        if m.section == target and m.section not in _MAP_SECTIONS:
            return m
    return None


def link_program(prog: ProgramSpec, spec: ObjectSpec, map_fds: Mapping[str, int]) -> LinkedProgram:
    """Patch a copy of ``prog``'s instructions for loading; no system call is made.

    * ``map``: the ld_imm64 gets ``src_reg = BPF_PSEUDO_MAP_FD`` and the map's fd;
    * ``data``: ``src_reg = BPF_PSEUDO_MAP_VALUE``, the data map's fd, and ``addend`` (the offset
      into the data section) in the second half;
    * ``call``: the called function (from ``spec.subprograms``, else ``spec.programs``) is appended
      once, its own relocations applied, and the call's ``imm`` set to the relative distance to its
      first instruction (plus ``addend`` bytes);
    * ``func`` (a callback's address): the function is appended the same way and the ld_imm64 gets
      ``src_reg = BPF_PSEUDO_FUNC`` and the same relative distance.
    """
    buf = bytearray(prog.insns)
    parts: list[tuple[int, ProgramSpec]] = [(0, prog)]
    starts: dict[str, int] = {prog.name: 0}
    done = 0
    while done < len(parts):
        base, part = parts[done]
        done += 1
        for rel in part.relocations:
            if rel.kind in ("call", "func"):
                if rel.target not in starts:
                    callee = _function(spec, rel.target)
                    if callee is None:
                        raise _relocation_error(
                            part, rel.insn_index, f"calls '{rel.target}', which the object lacks"
                        )
                    starts[rel.target] = len(buf) // abi.INSN_SIZE
                    parts.append((starts[rel.target], callee))
                    buf += callee.insns
                target = starts[rel.target] + rel.addend // abi.INSN_SIZE
                if rel.kind == "call":
                    _patch_call(buf, part, base, rel.insn_index, target)
                else:
                    at = base + rel.insn_index
                    _patch_ld_imm64(
                        buf, part, base, rel.insn_index, abi.BPF_PSEUDO_FUNC, target - (at + 1), 0
                    )
            elif rel.kind in ("map", "data"):
                fd = map_fds.get(rel.target)
                if fd is None and rel.kind == "data":
                    data = _data_map(spec, rel.target)
                    fd = map_fds.get(data.name) if data is not None else None
                if fd is None:
                    what = "map" if rel.kind == "map" else "data section"
                    raise _relocation_error(
                        part, rel.insn_index, f"refers to {what} '{rel.target}', which the object lacks"
                    )
                if rel.kind == "map":
                    _patch_ld_imm64(buf, part, base, rel.insn_index, abi.BPF_PSEUDO_MAP_FD, fd, 0)
                else:
                    _patch_ld_imm64(buf, part, base, rel.insn_index, abi.BPF_PSEUDO_MAP_VALUE, fd, rel.addend)
            else:
                raise _relocation_error(part, rel.insn_index, f"unknown relocation kind {rel.kind!r}")
    line_info = tuple(
        replace(entry, insn_offset=entry.insn_offset + base)
        for base, part in parts
        for entry in part.line_info
    )
    layout = tuple((part.name, base) for base, part in parts)
    return LinkedProgram(bytes(buf), line_info, layout)


# ----------------------------------------------------------------------- maps




def _is_global_data(m: MapSpec) -> bool:
    return m.section not in _MAP_SECTIONS


def _create_map(kernel: Kernel, m: MapSpec, btf_fd: int | None, cpus: int) -> LiveMap:
    max_entries = m.max_entries
    if m.type == MapType.PERF_EVENT_ARRAY and max_entries == 0:
        max_entries = cpus
    flags = m.flags | (abi.MapFlag.RDONLY_PROG if m.readonly else 0)
    args = dict(flags=flags, name=m.name)
    typed = m.value_type_id is not None and (m.key_type_id is not None or _is_global_data(m))
    if btf_fd is not None and typed and not m.legacy:
        try:
            fd = kernel.create_map(
                m.type,
                m.key_size,
                m.value_size,
                max_entries,
                btf_fd=btf_fd,
                btf_key_type_id=m.key_type_id or 0,
                btf_value_type_id=m.value_type_id or 0,
                **args,  # type: ignore[arg-type]
            )
            return LiveMap(m, fd, "btf_fd" not in kernel.left_out.get("BPF_MAP_CREATE", ()))
        except KernelError as exc:
            # Maps that hold fds, stack traces or no keys refuse BTF types (ENOTSUPP): as libbpf
            # does, such a map is created again without them.
            if exc.errno not in (E.EINVAL, E.EOPNOTSUPP, ENOTSUPP):
                raise
    fd = kernel.create_map(m.type, m.key_size, m.value_size, max_entries, **args)  # type: ignore[arg-type]
    return LiveMap(m, fd, False)


def _fill_global_data(kernel: Kernel, live: LiveMap) -> None:
    m = live.spec
    value = m.initial_value or b""
    if value.strip(b"\0"):
        if len(value) != m.value_size:
            raise KernelError(
                codes.BAD_SIZE,
                f"data section '{m.name}' holds {len(value)} bytes but its map value is {m.value_size}",
            )
        kernel.update_elem(live.fd, bytes(4), value, what=f"data section '{m.name}'")
    if m.readonly:
        kernel.freeze(live.fd, what=f"data section '{m.name}'")


def _load_btf(kernel: Kernel, spec: ObjectSpec, live: LiveObject) -> None:
    """Load the object's BTF, completed for the kernel; if the kernel refuses it, probe which
    kinds it lacks and load it again with those rewritten. Failing that, ``live.btf_error`` says
    why and the object is loaded without BTF."""
    if spec.btf is None:
        return
    try:
        fixed = fixup_btf(spec.btf, spec.layouts)
    except BtfFixupError as exc:
        live.btf_error = KernelError(codes.BTF_FIXUP, f"the object's BTF cannot be prepared: {exc}")
        return
    except BtfError:  # not BTF we can read: the kernel's log will say what is wrong with it
        fixed = FixedBtf(spec.btf, frozenset())
    try:
        live.btf_fd, live.btf = kernel.load_btf(fixed.data), fixed
    except KernelError as exc:
        if exc.code in _NOT_ABOUT_BTF:
            raise
        live.btf_error = exc
        if not any(text in (exc.detail or "") for text in _UNKNOWN_KIND_LOG):
            return
        features = probe_btf_features(kernel, fixed.used)
        if not features.missing:
            return  # the kernel knows every kind: the refusal has another reason, kept in btf_error
        sanitised = fixup_btf(spec.btf, spec.layouts, features)
        try:
            live.btf_fd, live.btf, live.btf_error = kernel.load_btf(sanitised.data), sanitised, None
        except KernelError as again:
            if again.code in _NOT_ABOUT_BTF:
                raise
            live.btf_error = again
            return
    if spec.btf_ext is not None:
        try:
            live.btf_ext = BtfExt(spec.btf_ext, Btf(spec.btf))
        except BtfError as exc:
            live.program_notes.append(f"{spec.path}: programs loaded without func/line info: {exc}")


def probe_btf_features(kernel: Kernel, wanted: Collection[str]) -> BtfFeatures:
    """Which of the ``wanted`` BTF features (``BtfFeatures`` field names) the kernel accepts: one
    BPF_BTF_LOAD of a minimal blob each."""
    blobs = probe_blobs()
    accepted = []
    for name in wanted:
        try:
            fd = kernel.load_btf(blobs[name])
        except KernelError as exc:
            if exc.code in _NOT_ABOUT_BTF:
                raise
            continue
        kernel.close(fd)
        accepted.append(name)
    return features_from(accepted, wanted)


def _program_btf(live: LiveObject, prog: ProgramSpec, linked: LinkedProgram) -> ProgramBtfInfo | None:
    """The func_info and line_info of a linked program, when the object's BTF is loaded."""
    spec = live.spec
    if live.btf_fd is None or live.btf_ext is None:
        return None
    parts = []
    for name, base in linked.layout:
        fn = prog if base == 0 else _function(spec, name)
        if fn is None:
            return None
        parts.append((base, fn))
    try:
        return program_btf_info(live.btf_ext, parts)
    except BtfError:
        return None


# ----------------------------------------------------------------------- load


def load_linked(
    live: LiveObject,
    prog: ProgramSpec,
    linked: LinkedProgram,
    prog_type: int,
    expected_attach_type: int = 0,
    *,
    log_level: int = 0,
    prologue: int = 0,
) -> int:
    """Load a linked program of ``live`` with its BTF func/line info (when the object's BTF is
    loaded), ``prologue`` instructions having been put in front of ``linked.insns``.

    If the kernel refuses the program with EINVAL while func/line info was given, the program is
    loaded again without it (the reason goes to ``live.program_notes``); if that fails too, the
    error with the more telling log is raised.
    """
    kernel, spec = live.kernel, live.spec
    info = _program_btf(live, prog, linked)
    if info is not None:
        info = info.shifted(prologue)

    def load(with_btf: ProgramBtfInfo | None) -> int:
        return kernel.load_program(
            prog_type,
            linked.insns,
            spec.license,
            name=prog.name,
            kern_version=spec.kernel_version or 0,
            expected_attach_type=expected_attach_type,
            log_level=log_level,
            line_info=linked.line_info,
            btf_fd=live.btf_fd if with_btf is not None else None,
            func_info=with_btf.func_info if with_btf is not None else (),
            line_records=with_btf.line_info if with_btf is not None else (),
        )

    if info is None:
        return load(None)
    try:
        return load(info)
    except KernelError as first:
        if first.errno != E.EINVAL:
            raise
        try:
            fd = load(None)
        except KernelError as second:
            about_btf = any(word in (first.detail or "") for word in ("func_info", "line_info"))
            raise (second if about_btf else first) from None
        live.program_notes.append(
            f"{spec.path}: program '{prog.name}' loaded without func/line info: {first.message}"
        )
        return fd


def load_object(
    spec: ObjectSpec,
    prog_types: Mapping[str, int],
    *,
    kernel: Kernel | None = None,
    expected_attach_types: Mapping[str, int] | None = None,
    log_level: int = 0,
    use_btf: bool = True,
    cpus: int | None = None,
    deferred: Collection[str] = (),
) -> LiveObject:
    """Create the maps and load the programs of ``spec``.

    ``prog_types`` maps every program name to its BPF program type (decided by the caller from the
    section name); programs named in ``deferred`` are linked and loaded later by their caller.
    ``cpus`` sizes perf event arrays declared with ``max_entries`` 0 (default: the possible CPUs
    of this machine).
    """
    missing = [p.name for p in spec.programs if p.name not in prog_types and p.name not in deferred]
    if missing:
        raise KernelError(
            codes.PROGRAM_TYPE,
            f"{spec.path}: no program type given for program(s) {', '.join(repr(n) for n in missing)}",
        )
    reason = spec.unloadable_reason()
    if reason is not None:
        raise ObjectError(bpf_codes.UNSUPPORTED, reason, help=CORE_HELP)
    kernel = kernel or Kernel()
    attach = expected_attach_types or {}
    live = LiveObject(kernel, spec)
    try:
        if use_btf:
            _load_btf(kernel, spec, live)
        n_cpus = cpus if cpus is not None else possible_cpus()
        for m in spec.maps:
            lm = _create_map(kernel, m, live.btf_fd, n_cpus)
            live.maps[m.name] = lm
            if _is_global_data(m):
                _fill_global_data(kernel, lm)
        fds = {name: lm.fd for name, lm in live.maps.items()}
        for prog in spec.programs:
            if prog.name in deferred:
                continue
            linked = link_program(prog, spec, fds)
            fd = load_linked(
                live, prog, linked, prog_types[prog.name], attach.get(prog.name, 0), log_level=log_level
            )
            live.programs[prog.name] = LiveProgram(prog, fd, prog_types[prog.name], linked.insns)
    except BaseException:
        try:
            live.close()
        except KernelError:
            pass  # the original failure is the one worth reporting
        raise
    return live
