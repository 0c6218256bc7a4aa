"""From an ``ObjectSpec`` to live kernel objects: maps created, programs relocated and loaded.

``load_object(spec, prog_types)`` is the one call (cilium/ebpf's ``NewCollection``). It loads the
object's BTF (completed by ``btf.fixup`` the way libbpf completes it, and rewritten for kernels
that lack newer kinds); creates every map, legacy ``SEC("maps")`` and BTF ``.maps`` alike, with
BTF key/value types where the map type allows, global data maps with their initial contents and
``.rodata`` frozen; patches a copy of each program's instructions and loads it with the program
type the caller decided from the section name, with the BTF's func_info and line_info so that
verifier logs and ``bpftool prog dump jited linum`` show source lines.

Where libbpf 1.x gives a declaration a meaning, it gets the same one here: maps pinned by name
(reused when the pinned map matches), ``map_extra``, ``numa_node``, map-in-map inner templates and
``.values`` initialisers (map-in-maps when created, PROG_ARRAYs after the programs load), ring
buffer sizes rounded up, ``BPF_F_MMAPABLE`` global data, ``__hidden`` functions static in the
BTF; what libbpf refuses is refused (``check_libbpf_rules``). Every fallback (BTF, func/line info
or map key/value types dropped) is a warning (``LiveObject.warnings``), and a program with global
functions is never loaded without its func info. The result is a
``LiveObject`` that closes every descriptor on ``close()`` or at the end of a ``with`` block; if
anything fails half-way, what was already created is closed before the error propagates.
"""

from __future__ import annotations

import errno as E
import os
import re
import struct
from collections.abc import Callable, Collection, Mapping
from types import TracebackType

from evspec.loader import asm
from evspec.loader.abi import bpf as abi
from evspec.loader.btf.core_patch import (
    CORE_HELP,
    POISON_HELPER,
    load_target,
    relocate_object,
    unloadable_reason,
)
from evspec.loader.btf.fixup import (
    BtfFeatures,
    BtfFixupError,
    FixedBtf,
    ProgramBtfInfo,
    features_from,
    fixup_btf,
    probe_blobs,
    program_btf_info,
)
from evspec.loader.btf.reader import Btf, BtfError, BtfExt, BtfKind, type_info, write_btf
from evspec.loader.btf.target import TargetBtf
from evspec.loader.errors import ObjectError
from evspec.loader.externs.module_ksyms import ModuleBtf
from evspec.loader.externs.resolve import (
    POISON_KFUNC_BASE,
    apply_externs,
    libbpf_order,
    resolve_externs,
    running_system,
)
from evspec.loader.kernel import ENOTSUPP, Kernel, KernelError, MapDescription, VerifierError
from evspec.loader.kernel.btf_objects import open_module_btfs
from evspec.loader.kernel.verifier import VerifierSummary
from evspec.loader.lint.libbpf_rules import check_libbpf_rules
from evspec.loader.load.self_filter import prelude_for
from evspec.loader.load.syscall_wrapper import has_syscall_wrapper
from evspec.loader.object.link import LinkedProgram, link_program
from evspec.loader.object.map_attrs import MapAttributes, map_attributes, on_bpffs, ringbuf_size
from evspec.loader.object.spec import (
    MAP_IN_MAP_TYPES,
    RING_BUFFER_TYPES,
    MapSpec,
    MapType,
    ObjectSpec,
    ProgramSpec,
    ProgType,
    replace,
)
from evspec.loader.sections.libbpf import attach_btf_obj_fd, section_prog_flags

from evspec.codes import bpf as bpf_codes
from evspec.codes import kernel as codes
from evspec.cpus import possible_cpus
from evspec.span import Slotted

_MAP_SECTIONS = (".maps", "maps")
DEFAULT_PIN_ROOT = "/sys/fs/bpf"  # libbpf's pin_root_path: maps pinned by name go to DIR/NAME
# What the kernel's BTF log says when it refuses a kind or linkage it does not know: only then
# are the kinds probed and the BTF rewritten for this kernel.
_UNKNOWN_KIND_LOG = ("Invalid kind", "Invalid btf_info", "kind_flag", "Invalid func linkage")
# Failures of BPF_BTF_LOAD that say nothing about the BTF: loading without it would fail the same way.
_NOT_ABOUT_BTF = (codes.PERMISSION, codes.MEMLOCK)


class LiveMap(Slotted):
    spec: MapSpec
    fd: int
    with_btf: bool  # created with the object's BTF key/value type ids
    pinned: str | None = None  # the bpffs path of a map pinned by name
    reused: bool = False  # the map already pinned there, not a new one

    @property
    def name(self) -> str:
        return self.spec.name


class LiveProgram(Slotted):
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
        self.map_notes: list[str] = []  # what was adjusted the way libbpf adjusts it (ring sizes)
        # what was dropped (BTF, func/line info, map key/value types) and why: said even without -v
        self.warnings: list[str] = []
        self.pinned_here: list[str] = []  # pins this load made (removed again if it fails)
        self.func_info_lost: str | None = None  # why programs have no func info, when they should
        self.fd_array: tuple[int, ...] = ()  # module BTF fds the programs' kfunc calls index
        self.module_btf_fds: tuple[int, ...] = ()  # module BTFs opened for externs, open until close
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
        return notes + self.program_notes + self.map_notes

    @property
    def fds(self) -> tuple[int, ...]:
        """Every descriptor this object holds, in closing order."""
        fds = [p.fd for p in self.programs.values()] + [m.fd for m in self.maps.values()]
        if self.btf_fd is not None:
            fds.append(self.btf_fd)
        return (*fds, *self.module_btf_fds)

    def close(self) -> None:
        """Close every descriptor; the first failure is raised after all were tried."""
        if self._closed:
            return
        self._closed = True
        fds = self.fds
        self.programs.clear()
        self.maps.clear()
        self.btf_fd = None
        self.module_btf_fds = ()
        self.kernel.close_all(fds)

    def __enter__(self) -> LiveObject:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# ----------------------------------------------------------------------- maps




def _is_global_data(m: MapSpec) -> bool:
    return m.section not in _MAP_SECTIONS


# Map types libbpf creates without BTF key/value types (the kernel refuses them or ignores them).
_NO_BTF_TYPES = frozenset({
    MapType.PERF_EVENT_ARRAY, MapType.CGROUP_ARRAY, MapType.STACK_TRACE, MapType.ARRAY_OF_MAPS,
    MapType.HASH_OF_MAPS, MapType.DEVMAP, MapType.DEVMAP_HASH, MapType.CPUMAP, MapType.XSKMAP,
    MapType.SOCKMAP, MapType.SOCKHASH, MapType.QUEUE, MapType.STACK,
})
_KEYLESS = frozenset({MapType.BLOOM_FILTER})  # no key: the value type alone is passed
def _numa_nodes() -> str:
    try:
        with open("/sys/devices/system/node/online") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def _create_map(
    kernel: Kernel,
    m: MapSpec,
    btf_fd: int | None,
    cpus: int,
    *,
    inner_map_fd: int = 0,
    warnings: list[str] | None = None,
    path: str = "",
) -> LiveMap:
    """Create one map as libbpf would: BTF key/value types where the map type takes them (a
    bloom filter's value type alone); if the kernel refuses them, the map is created again without
    them and ``warnings`` says so."""
    attrs = map_attributes(m, cpus, kernel.page_size)
    args = dict(flags=attrs.flags, name=m.name, numa_node=m.numa_node, map_extra=m.map_extra,
                inner_map_fd=inner_map_fd)
    typed = m.value_type_id is not None and (
        m.key_type_id is not None or _is_global_data(m) or m.type in _KEYLESS
    )

    def create(**btf: int) -> int:
        try:
            return kernel.create_map(m.type, m.key_size, m.value_size, attrs.max_entries, **args, **btf)  # type: ignore[arg-type]
        except KernelError as exc:
            # with BTF types, an EINVAL may be about them: the retry without them decides
            if exc.errno == E.EINVAL and attrs.flags & abi.MapFlag.NUMA_NODE and not btf:
                raise KernelError(
                    codes.NUMA_NODE,
                    f"map '{m.name}': numa_node {m.numa_node} (with BPF_F_NUMA_NODE) refused by the "
                    f"kernel: online NUMA nodes here: {_numa_nodes()}",
                    errno=exc.errno, operation=exc.operation,
                ) from None
            raise

    if btf_fd is not None and typed and not m.legacy and m.type not in _NO_BTF_TYPES:
        try:
            fd = create(btf_fd=btf_fd, btf_key_type_id=m.key_type_id or 0, btf_value_type_id=m.value_type_id or 0)
            return LiveMap(m, fd, "btf_fd" not in kernel.left_out.get("BPF_MAP_CREATE", ()))
        except KernelError as exc:
            # libbpf creates the map again without BTF types, and says so
            if exc.errno not in (E.EINVAL, E.EOPNOTSUPP, ENOTSUPP) or exc.code == codes.NUMA_NODE:
                raise
            refused = exc
        fd = create()
        if warnings is not None:
            warnings.append(f"{path}: map '{m.name}' created without its BTF key/value types: the "
                            f"kernel refused them ({refused.message})")
        return LiveMap(m, fd, False)
    return LiveMap(m, create(), False)


def _pin_mismatch(found: MapDescription, m: MapSpec, attrs: MapAttributes) -> list[str]:
    """What differs between a pinned map and the declaration (libbpf's map_is_reuse_compat)."""
    flags = found.flags
    if m.type in (MapType.DEVMAP, MapType.DEVMAP_HASH):
        flags &= ~abi.MapFlag.RDONLY_PROG  # the kernel reports it for every DEVMAP
    out = []
    for what, have, want in (("type", found.type, m.type), ("key_size", found.key_size, m.key_size),
                             ("value_size", found.value_size, m.value_size),
                             ("max_entries", found.max_entries, attrs.max_entries),
                             ("map_flags", flags, attrs.flags), ("map_extra", found.map_extra, m.map_extra)):
        if have != want:
            out.append(f"{what} {have:#x} pinned, {want:#x} declared" if what == "map_flags"
                       else f"{what} {have} pinned, {want} declared")
    return out


def _pinned_or_created(
    kernel: Kernel, m: MapSpec, live: LiveObject, path: str, make: Callable[[], LiveMap], cpus: int
) -> LiveMap:
    """A pinned map: the one pinned at ``path`` (PIN_ROOT/NAME for a map pinned by name, the
    path of a ``map:NAME.pin=`` setter) when it matches the declaration, else a new one, pinned
    there."""
    pin_root = os.path.dirname(path)
    attrs = map_attributes(m, cpus, kernel.page_size)
    for _attempt in range(2):
        fd = kernel.pinned(path, what=f"map '{m.name}' pinned at {path}")
        if fd is not None:
            try:
                mismatch = _pin_mismatch(kernel.map_info(fd), m, attrs)
            except BaseException:
                kernel.close(fd)
                raise
            if mismatch:
                kernel.close(fd)
                raise KernelError(
                    codes.PINNED_MAP,
                    f"{live.spec.path}: map '{m.name}' (pinned): the map pinned at "
                    f"{path} cannot be reused: {'; '.join(mismatch)}",
                )
            live.map_notes.append(f"{live.spec.path}: map '{m.name}': reused the map pinned at {path}")
            return LiveMap(m, fd, False, pinned=path, reused=True)
        made = make()
        try:
            kernel.pin(made.fd, path, what=f"map '{m.name}' (pinned) at {path}")
        except KernelError as exc:
            kernel.close(made.fd)
            if exc.errno == E.EEXIST:
                continue  # pinned by someone else meanwhile: reuse theirs, as libbpf does
            help = () if on_bpffs(pin_root) else (
                f"{pin_root} is not on a BPF filesystem: mount one there (mount -t bpf bpf {pin_root}), or "
                "declare the map without pinning",)
            raise KernelError(codes.PINNED_MAP, f"{live.spec.path}: map '{m.name}': cannot pin it at "
                              f"{path}: {exc.message}", errno=exc.errno, operation=exc.operation,
                              help=help) from None
        live.pinned_here.append(path)
        return replace(made, pinned=path)
    raise KernelError(codes.PINNED_MAP, f"{live.spec.path}: map '{m.name}': {path} appeared and vanished "
                      "while it was being pinned")


def _create_object_map(
    kernel: Kernel, m: MapSpec, live: LiveObject, cpus: int, pin_root: str, pin_path: str | None = None,
) -> LiveMap:
    """Create (or reuse, when pinned) one map of the object, with its inner map template and
    its map-in-map initial values; ``pin_path``: where a ``map:NAME.pin=`` setter pins it."""
    path = live.spec.path

    def make() -> LiveMap:
        inner_fd = 0
        if m.inner is not None:
            inner_fd = _create_map(kernel, m.inner, live.btf_fd, cpus, warnings=live.warnings, path=path).fd
        try:
            made = _create_map(kernel, m, live.btf_fd, cpus, inner_map_fd=inner_fd,
                               warnings=live.warnings, path=path)
        finally:
            if inner_fd:
                kernel.close(inner_fd)  # the template is not needed once the outer map exists
        try:
            _fill_map_slots(kernel, made, live)
        except BaseException:
            kernel.close(made.fd)
            raise
        return made

    if m.type in RING_BUFFER_TYPES:
        size = ringbuf_size(m.max_entries, kernel.page_size)
        if size != m.max_entries:
            live.map_notes.append(f"{path}: ring buffer '{m.name}': max_entries {m.max_entries} rounded up "
                                  f"to {size}, a power-of-two multiple of the page size (as libbpf does)")
    if pin_path is not None:
        return _pinned_or_created(kernel, m, live, pin_path, make, cpus)
    if m.pinning == abi.LIBBPF_PIN_BY_NAME:
        return _pinned_or_created(kernel, m, live, os.path.join(pin_root, m.name), make, cpus)
    return make()


def _fill_map_slots(kernel: Kernel, made: LiveMap, live: LiveObject) -> None:
    """A map-in-map's ``.values = { [i] = &map }``, filled as soon as it is created (libbpf's
    order: the maps it holds must be declared before it)."""
    m = made.spec
    if m.type not in MAP_IN_MAP_TYPES:
        return
    for slot, name in m.initial_slots:  # libbpf_rules: each is created already
        target = live.maps[name]
        kernel.update_elem(made.fd, struct.pack("=I", slot), struct.pack("=I", target.fd),
                           what=f"map '{m.name}' slot [{slot}] (map '{name}')")


def _fill_prog_arrays(kernel: Kernel, live: LiveObject) -> None:
    """Each PROG_ARRAY's ``.values = { [i] = &prog }``, once the programs are loaded."""
    for lm in live.maps.values():
        m = lm.spec
        if m.type != MapType.PROG_ARRAY:
            continue
        for slot, name in m.initial_slots:
            prog = live.programs.get(name)
            if prog is None:  # left out (prog:NAME.autoload=0, an alternative not chosen): libbpf skips it
                live.map_notes.append(f"{live.spec.path}: map '{m.name}' slot [{slot}] left empty: program "
                                      f"'{name}' is not loaded")
                continue
            kernel.update_elem(lm.fd, struct.pack("=I", slot), struct.pack("=I", prog.fd),
                               what=f"map '{m.name}' slot [{slot}] (program '{name}')")


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
    _load_btf_blob(kernel, spec, live)
    if live.btf_fd is None:
        assert live.btf_error is not None
        reason = live.btf_error.message
        live.warnings.append(f"{spec.path}: loaded without BTF (maps without key/value types, programs "
                             f"without func/line info): {reason}")
        live.func_info_lost = f"the object's BTF was not loaded: {reason}"
        return
    if spec.btf_ext is not None:
        try:
            live.btf_ext = BtfExt(spec.btf_ext, Btf(spec.btf))
        except BtfError as exc:
            live.program_notes.append(f"{spec.path}: programs loaded without func/line info: {exc}")
            live.warnings.append(f"{spec.path}: programs loaded without func/line info: its .BTF.ext "
                                 f"cannot be read: {exc}")
            live.func_info_lost = f"the object's .BTF.ext cannot be read: {exc}"


def _hidden_static(fixed: FixedBtf, spec: ObjectSpec) -> FixedBtf:
    """The BTF with the FUNC of each ``__hidden`` global subprogram and the VAR of each
    ``__hidden`` global variable made static, as libbpf does (STV_HIDDEN functions are verified
    with their caller's context, like static ones)."""
    names = {f.name for f in spec.subprograms if f.hidden and f.section == ".text"}
    variables = {name for layout in spec.layouts for name in layout.hidden}
    if not names and not variables:
        return fixed
    btf = Btf(fixed.data)
    types = [btf.raw_type(tid) for tid in range(1, len(btf))]
    static_var = struct.pack(btf.byte_order + "I", abi.BTF_VAR_STATIC)
    for i, t in enumerate(types):
        if t.kind == BtfKind.FUNC and t.vlen == abi.BTF_FUNC_GLOBAL and btf.string(t.name_off) in names:
            types[i] = replace(t, info=type_info(BtfKind.FUNC, abi.BTF_FUNC_STATIC, t.kind_flag))
        elif (t.kind == BtfKind.VAR and t.extra != static_var and btf.string(t.name_off) in variables):
            types[i] = replace(t, extra=static_var)
    return replace(fixed, data=write_btf(types, btf.string_section(), btf.byte_order))


def _load_btf_blob(kernel: Kernel, spec: ObjectSpec, live: LiveObject) -> None:
    assert spec.btf is not None
    try:
        fixed = _hidden_static(fixup_btf(spec.btf, spec.layouts), spec)
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
        sanitised = _hidden_static(fixup_btf(spec.btf, spec.layouts, features), spec)
        try:
            live.btf_fd, live.btf, live.btf_error = kernel.load_btf(sanitised.data), sanitised, None
        except KernelError as again:
            if again.code in _NOT_ABOUT_BTF:
                raise
            live.btf_error = again


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
        fn = prog if base == 0 else spec.function(name)
        if fn is None:
            return None
        parts.append((base, fn))
    try:
        return program_btf_info(live.btf_ext, parts)
    except BtfError as exc:  # libbpf warns too, and loads without it only when the main program has none
        live.warnings.append(f"{spec.path}: program '{prog.name}' loaded without its BTF func/line info: "
                             f"its .BTF.ext records cannot be used: {exc}")
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
    attach_btf_id: int = 0,
    prog_flags: int | None = None,
) -> int:
    """Load a linked program of ``live`` with its BTF func/line info (when the object's BTF is
    loaded), ``prologue`` instructions having been put in front of ``linked.insns``; ``prog_flags``
    (None: what libbpf gives the section, BPF_F_SLEEPABLE for ``uprobe.s/``, ``lsm.s/``, ...).
    ``attach_btf_id``: a type of vmlinux's BTF, or a module's (a ``ModuleTypeId``, loaded with its
    module BTF's fd as attach_btf_obj_fd; the caller holds that fd open).

    A program the kernel refuses with its func/line info is refused (libbpf 1.8 gives func/line
    info whenever the object's BTF is loaded, and never loads a program again without it). Without
    the object's BTF (the kernel refused it: a warning, as libbpf's) a program that calls global
    functions is not loaded (the verifier would check them as static ones): that is a
    ``FUNC_INFO_NEEDED`` error with the reason.
    """
    kernel, spec = live.kernel, live.spec
    flags = section_prog_flags(prog.section) if prog_flags is None else prog_flags
    info = _program_btf(live, prog, linked)
    if info is not None:
        info = info.shifted(prologue)

    def load(with_btf: ProgramBtfInfo | None) -> int:
        try:
            return _load(with_btf)
        except VerifierError as exc:
            raise _poison_explained(exc, spec, linked, prologue) from None

    def _load(with_btf: ProgramBtfInfo | None) -> int:
        return kernel.load_program(
            prog_type,
            linked.insns,
            spec.license,
            name=prog.name,
            kern_version=spec.kernel_version or 0,
            expected_attach_type=expected_attach_type,
            attach_btf_id=attach_btf_id,
            attach_btf_obj_fd=attach_btf_obj_fd(attach_btf_id),
            prog_flags=flags,
            log_level=log_level,
            line_info=linked.line_info,
            btf_fd=live.btf_fd if with_btf is not None else None,
            func_info=with_btf.func_info if with_btf is not None else (),
            line_records=with_btf.line_info if with_btf is not None else (),
            fd_array=live.fd_array,
        )

    globals_ = _global_functions(spec, linked)
    if info is None:
        if globals_ and spec.btf_ext is not None and live.func_info_lost is not None:
            raise _func_info_needed(prog, globals_, live.func_info_lost)
        return load(None)
    return load(info)  # libbpf 1.8 never retries a program without its func/line info


_UNKNOWN_FUNC = re.compile(r"invalid func unknown#(\d+)")


def _poison_explained(exc: VerifierError, spec: ObjectSpec, linked: LinkedProgram, prologue: int) -> VerifierError:
    """``exc`` with its summary saying what a poisoned call the verifier reached stands for: the CO-RE
    relocation this kernel cannot satisfy (``core_patch``), or the weak kfunc it lacks (``externs``);
    ``exc`` itself for any other refusal."""
    summary = exc.summary
    found = _UNKNOWN_FUNC.search(summary.message)
    if found is None or summary.insn_index is None:
        return exc
    number, at = int(found.group(1)), summary.insn_index - prologue
    why = None
    if number == POISON_HELPER:
        function, local = next(((name, at - base) for name, base in reversed(linked.layout) if base <= at), ("", at))
        fn = spec.function(function)
        poison = next((r.poison for r in fn.core_relocations if r.insn == local and r.poison), None) if fn else None
        if poison is not None:
            why = (f"the poisoned instruction of a CO-RE relocation this kernel cannot satisfy: {poison} "
                   f"(function '{function}', instruction {local})")
    elif spec.externs and spec.btf is not None and 0 <= number - POISON_KFUNC_BASE < len(spec.externs):
        ext = libbpf_order(Btf(spec.btf), spec.externs)[number - POISON_KFUNC_BASE]
        if ext.kind == "kfunc":
            why = (f"the poisoned call of the weak kfunc '{ext.name}', which this kernel does not have: "
                   f"guard it with bpf_ksym_exists({ext.name})")
    if why is None:
        return exc
    explained = VerifierSummary(f"{summary.message} ({why})", summary.insn_index, summary.insn_text, summary.source)
    return VerifierError(exc.program, exc.errno or 0, exc.log, explained)


def _global_functions(spec: ObjectSpec, linked: LinkedProgram) -> list[str]:
    """The global (not ``__hidden``) functions a linked program calls: the verifier checks them
    on their own only when func info says they are global."""
    out = []
    for name, base in linked.layout:
        fn = spec.function(name) if base else None
        if fn is not None and fn.global_function and not fn.hidden:
            out.append(name)
    return out


def _func_info_needed(prog: ProgramSpec, functions: list[str], why: str, detail: str | None = None) -> KernelError:
    return KernelError(
        codes.FUNC_INFO_NEEDED,
        f"program '{prog.name}' cannot be loaded without its BTF func info ({why}): it calls global "
        f"function(s) {', '.join(repr(f) for f in functions)}, which the verifier would then check "
        "as static ones",
        detail=detail,
    )


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
    pin_root: str = DEFAULT_PIN_ROOT,
    target_btf: TargetBtf | None = None,
    attach_btf_ids: Mapping[str, int] | None = None,
    skip_tgid: int | tuple[int, ...] | None = None,
    pin_paths: Mapping[str, str] | None = None,
) -> LiveObject:
    """Create the maps and load the programs of ``spec``.

    ``pin_paths``: map name -> the path its ``map:NAME.pin=`` setter pins it at (libbpf's
    bpf_map__set_pin_path: the map pinned there is reused when it matches, else pinned there).

    ``skip_tgid``: the tracing programs get ``self_filter``'s prelude, so that they do nothing in
    that process, or those processes (a recording's own).

    ``expected_attach_types`` and ``attach_btf_ids`` (a kernel BTF type id: the ``btf_trace_NAME``
    of a tp_btf program; a ``ModuleTypeId`` for a module's type, whose module BTF fd the caller
    holds open until the object is loaded) are given per program name, for the program types that
    need them.

    ``prog_types`` maps every program name to its BPF program type (decided by the caller from the
    section name); programs named in ``deferred`` are linked and loaded later by their caller.
    ``cpus`` sizes perf event arrays declared with ``max_entries`` 0 (default: the possible CPUs
    of this machine). Maps declared with ``__uint(pinning, LIBBPF_PIN_BY_NAME)`` are pinned at
    ``pin_root``/NAME, or the map pinned there is reused (libbpf's rules); PROG_ARRAY initial
    values are filled once the programs are loaded. What libbpf refuses is refused
    (``check_libbpf_rules``).
    """
    missing = [p.name for p in spec.programs if p.name not in prog_types and p.name not in deferred]
    if missing:
        raise KernelError(
            codes.PROGRAM_TYPE,
            f"{spec.path}: no program type given for program(s) {', '.join(repr(n) for n in missing)}",
        )
    if any(not r.applied for _, r in spec.core_relocations()):  # against target_btf, else this kernel's
        spec, _ = relocate_object(spec, load_target(target_btf))  # poisoned ones stay listed in the spec
    reason = unloadable_reason(spec)
    if reason is not None:
        raise ObjectError(bpf_codes.UNSUPPORTED, reason, help=CORE_HELP)
    check_libbpf_rules(spec, deferred)
    kernel = kernel or Kernel()
    extern_warnings: tuple[str, ...] = ()
    fd_array: tuple[int, ...] = ()
    modules = _ModuleBtfs(kernel)
    if spec.externs and not spec.externs_applied:  # __kconfig, __ksym, kfuncs: resolved on this system
        try:
            values = resolve_externs(spec, running_system(
                spec, lambda: _has_bpf_cookie(kernel), modules,
                syscall_wrapper=lambda machine: has_syscall_wrapper(machine, lambda: kernel)))
        except BaseException:
            kernel.close_all(modules.fds)
            raise
        spec, extern_warnings, fd_array = apply_externs(spec, values), values.warnings, values.fd_array
    attach = expected_attach_types or {}
    live = LiveObject(kernel, spec)
    live.warnings.extend(extern_warnings)
    live.fd_array, live.module_btf_fds = fd_array, modules.fds
    try:
        if use_btf:
            _load_btf(kernel, spec, live)
        n_cpus = cpus if cpus is not None else possible_cpus()
        for m in spec.maps:
            lm = _create_object_map(kernel, m, live, n_cpus, pin_root, (pin_paths or {}).get(m.name))
            live.maps[m.name] = lm
            if _is_global_data(m):
                _fill_global_data(kernel, lm)
        fds = {name: lm.fd for name, lm in live.maps.items()}
        for prog in spec.programs:
            if prog.name in deferred:
                continue
            front = prelude_for(prog_types[prog.name], skip_tgid)
            linked = link_program(prog, spec, fds)
            fd = load_linked(
                live, prog, linked.prefixed(front), prog_types[prog.name], attach.get(prog.name, 0),
                log_level=log_level, attach_btf_id=(attach_btf_ids or {}).get(prog.name, 0),
                prologue=len(front) // abi.INSN_SIZE,
            )
            live.programs[prog.name] = LiveProgram(prog, fd, prog_types[prog.name], linked.insns)
        _fill_prog_arrays(kernel, live)
    except BaseException:
        for path in live.pinned_here:  # libbpf unpins what a failed load pinned
            try:
                os.unlink(path)
            except OSError:
                pass
        try:
            live.close()
        except KernelError:
            pass  # the original failure is the one worth reporting
        raise
    return live


class _ModuleBtfs:
    """The kernel's module BTFs, opened the first time an extern is not in vmlinux's BTF; their
    fds stay open until the object is closed (its programs name them when they are loaded)."""

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._opened: tuple[ModuleBtf, ...] | None = None

    def __call__(self) -> tuple[ModuleBtf, ...]:
        if self._opened is None:
            self._opened = open_module_btfs(self._kernel, TargetBtf.running_kernel())
        return self._opened

    @property
    def fds(self) -> tuple[int, ...]:
        return () if self._opened is None else tuple(m.fd for m in self._opened)


def _has_bpf_cookie(kernel: Kernel) -> bool:
    """libbpf's LINUX_HAS_BPF_COOKIE probe: whether a tracepoint program may call
    bpf_get_attach_cookie."""
    insns = asm.encode(asm.OP_CALL, imm=abi.FUNC_GET_ATTACH_COOKIE) + asm.encode(asm.OP_EXIT)
    try:
        fd = kernel.load_program(int(ProgType.TRACEPOINT), insns, "GPL")
    except KernelError:
        return False
    kernel.close(fd)
    return True
