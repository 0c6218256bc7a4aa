"""Loading every program and map of a BPF object into this kernel's verifier, attaching nothing,
and closing everything again: ``verify_object`` -> ``ObjectResult``.

Like ``bpftool prog loadall``, but one verdict per program: the object's BTF and maps are created
once, then each program is linked and loaded on its own, so that one the verifier refuses does not
hide the others. A section name of libbpf 1.8's table is loaded as libbpf loads it (program type,
expected attach type, BPF_F_SLEEPABLE / BPF_F_XDP_HAS_FRAGS, the attach_btf_id of an ``fentry/``,
``lsm/``, ``iter/`` or ``tp_btf/`` target in the running kernel's BTF, or in a module's when
vmlinux's lacks it: then with that module's BTF as attach_btf_obj_fd; ``usdt`` as a uprobe_multi
program where libbpf's probe finds such links), whatever else its target
says, since only attaching reads it; the other names of evspec's language (perf's ``SYS:EVENT`` and
``EVENT=PROBE``) get the program type ``record`` gives them. No probe, tracepoint
event or link is created. Maps pinned by name are pinned under a private bpffs directory that is
removed again (``pins``). A prog-array slot whose program did not load stays empty, an error of
its map. Imports are made where they are needed: ``evspec verify`` of a plain object stays light.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from evspec.loader.verify.results import MapResult, ObjectResult, ProgramResult

from evspec.span import Slotted

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from evspec.loader.btf.target import TargetBtf
    from evspec.loader.externs.module_ksyms import ModuleBtf
    from evspec.loader.kernel import Kernel
    from evspec.loader.object.spec import ObjectSpec, ProgramSpec

ENOTSUPP = 524  # the kernel's own errno (struct_ops, ...), which userspace has no name for


def _map_type_name(t: int) -> str:
    from evspec.loader.object.spec import MapType

    try:
        return MapType(t).name.lower()
    except ValueError:
        return str(t)


class ProgramLoad(Slotted):
    """What BPF_PROG_LOAD gets for a program besides its instructions."""

    prog_type: int
    expected_attach_type: int = 0
    attach_btf_id: int = 0
    prog_flags: int = 0


class KernelBtf:
    """The running kernel's BTF, read once when a program's attach_btf_id needs it (the kernel
    takes ids of its own BTF, whatever ``--btf`` gives CO-RE), and its module BTFs, opened through
    ``kernel`` (default: this system's) the first time a target is not in vmlinux's; their
    descriptors stay open until ``close`` (the programs are loaded with them)."""

    def __init__(self, kernel: Kernel | None = None) -> None:
        self._btf: TargetBtf | None = None
        self._kernel = kernel
        self._modules: tuple[ModuleBtf, ...] | None = None
        self._uprobe_multi: bool | None = None

    def uprobe_multi(self) -> bool:
        """Whether the kernel has uprobe_multi links as libbpf 1.8 probes them (once)."""
        if self._uprobe_multi is None:
            from evspec.loader.kernel import Kernel
            from evspec.loader.verify.features import uprobe_multi_links

            self._kernel = self._kernel or Kernel()
            self._uprobe_multi = uprobe_multi_links(self._kernel)
        return self._uprobe_multi

    def get(self) -> TargetBtf:
        if self._btf is None:
            from evspec.loader.btf.core_patch import load_target

            self._btf = load_target(None)
        return self._btf

    def modules(self) -> tuple[ModuleBtf, ...]:
        if self._modules is None:
            from evspec.loader.btf.reader import BtfError
            from evspec.loader.errors import ObjectError
            from evspec.loader.kernel import Kernel, KernelError
            from evspec.loader.kernel.btf_objects import open_module_btfs

            from evspec.codes import kernel as codes

            self._kernel = self._kernel or Kernel()
            try:
                self._modules = open_module_btfs(self._kernel, self.get())
            except (KernelError, BtfError) as exc:
                raise ObjectError(codes.ATTACH_UNSUPPORTED, "the target is not in vmlinux's BTF, and the module "
                                  f"BTFs cannot be read: {getattr(exc, 'message', exc)}") from None
        return self._modules

    def close(self) -> None:
        modules, self._modules = self._modules or (), None
        if modules and self._kernel is not None:
            self._kernel.close_all(m.fd for m in modules)


def program_load(section: str, kernel_btf: KernelBtf) -> ProgramLoad:
    """How a program of ``section`` is loaded: as libbpf 1.8 loads it for a name of its table,
    else with the program type ``record`` gives the section. ``EvspecError`` (a section evspec
    cannot read) or ``ObjectError`` (one libbpf cannot load from its name, a target the kernel
    lacks). A target only a module's BTF has is a ``ModuleTypeId`` (``attach_target_name`` says
    ``MODULE:TARGET``), its descriptor held by ``kernel_btf``."""
    from evspec.loader.sections.libbpf import load_params

    params = load_params(section)
    if params is None:  # settings in front of a libbpf name (dev=eth0;xdp), or evspec's own names
        from evspec.loader.sections.names import parse_section  # 3 ms of imports, needed only here

        parsed = parse_section(section)
        main = parsed.main_span.text(section)
        params = load_params(main) if main != section else None
        if params is None:
            return ProgramLoad(int(parsed.program_type))
    btf_id = params.attach_btf_id(kernel_btf.get(), kernel_btf.modules) if params.btf_name else 0
    attach_type = params.attach_type_on(kernel_btf.uprobe_multi()) if params.usdt else params.expected_attach_type
    return ProgramLoad(params.prog_type, attach_type, btf_id, params.prog_flags)


def _functions_of(spec: ObjectSpec, prog: ProgramSpec) -> list[ProgramSpec]:
    """``prog`` and every function it reaches through calls (as ``link_program`` appends them)."""
    by_name = {fn.name: fn for fn in (*spec.programs, *spec.subprograms)}
    seen = {prog.name}
    out, todo = [prog], [prog]
    while todo:
        fn = todo.pop()
        for reloc in fn.relocations:
            if reloc.kind in ("call", "func"):
                target = by_name.get(reloc.target)
                if target is not None and target.name not in seen:
                    seen.add(target.name)
                    out.append(target)
                    todo.append(target)
    return out


def _count_core(functions: Sequence[ProgramSpec], result: ProgramResult) -> None:
    for fn in functions:
        for r in fn.core_relocations:
            if not r.applied:
                continue
            result.relocations += 1
            if r.poison is not None:
                result.poisoned.append({"function": fn.name, "insn": r.insn, "message": r.poison})


@contextmanager
def _pin_root(spec: ObjectSpec) -> Iterator[str]:
    """Where maps pinned by name go: a fresh directory on bpffs (a private mount when none is
    mounted at /sys/fs/bpf), removed with whatever was pinned in it (``pins``)."""
    if not any(m.pinning for m in spec.maps):
        yield "/sys/fs/bpf/evspec-verify-unused"
        return
    from evspec.loader.load.live import on_bpffs
    from evspec.loader.verify.pins import pin_root

    with pin_root(on_bpffs("/sys/fs/bpf")) as root:
        yield root


# ------------------------------------------------------------------------------------------ verify


def verify_object(spec: ObjectSpec, kernel: Kernel, target: TargetBtf | None,
                  kernel_btf: KernelBtf | None = None) -> ObjectResult:
    """Load ``spec``'s maps and programs (``spec`` read, not yet relocated) and close them again;
    CO-RE relocations against ``target`` (None: the running kernel's BTF, ``kernel_btf``, which
    the caller closes; one made here is closed before this returns)."""
    if kernel_btf is not None:
        return _verify_object(spec, kernel, target, kernel_btf)
    own = KernelBtf(kernel)
    try:
        return _verify_object(spec, kernel, target, own)
    finally:
        own.close()


def _verify_object(spec: ObjectSpec, kernel: Kernel, target: TargetBtf | None, kernel_btf: KernelBtf) -> ObjectResult:
    from evspec.loader.btf.core_patch import relocate_object
    from evspec.loader.errors import ObjectError
    from evspec.loader.lint.libbpf_differences import libbpf_differences
    from evspec.loader.sections.libbpf import ModuleTypeId, attach_target, attach_target_name

    from evspec.diagnostics import EvspecError

    result = ObjectResult(spec.path, notes=libbpf_differences(spec))
    result.maps = [MapResult(spec.path, m.name, _map_type_name(m.type)) for m in spec.maps]
    result.programs = [ProgramResult(spec.path, p.name, p.section) for p in spec.programs]
    if any(not r.applied for _, r in spec.core_relocations()):
        try:
            spec, _ = relocate_object(spec, target or kernel_btf.get())
        except ObjectError as exc:
            result.error = exc.message
            for p in result.programs:
                p.error = f"not loaded: {exc.message}"
            for m in result.maps:
                m.error = "not created: the object's CO-RE relocations cannot be applied"
            return result
    loads: dict[str, ProgramLoad] = {}
    by_name = {p.name: p for p in result.programs}
    struct_ops = _struct_ops_members(spec, result)
    for prog in spec.programs:
        _count_core(_functions_of(spec, prog), by_name[prog.name])
        if prog.name in struct_ops:
            by_name[prog.name].error = struct_ops[prog.name]
            continue
        try:
            load = loads[prog.name] = program_load(prog.section, kernel_btf)
            if isinstance(load.attach_btf_id, ModuleTypeId):
                by_name[prog.name].attach_target = attach_target_name(load.attach_btf_id,
                                                                      attach_target(prog.section) or "")
        except EvspecError as exc:
            by_name[prog.name].error = (f"section '{prog.section}': {exc.diagnostics[0].message} (nor is it a "
                                        "section name of libbpf 1.8, which refuses it: 'missing BPF prog type')")
            by_name[prog.name].errno = "EINVAL"
        except ObjectError as exc:
            _failed(by_name[prog.name], exc)
            by_name[prog.name].error = f"section '{prog.section}': {exc.message}"
    loadable = _without_programs(spec, {p.name for p in spec.programs if p.name not in loads})
    with _pin_root(spec) as pin_root:
        _load_programs(loadable, loads, kernel, result, pin_root)
    _unfilled_prog_arrays(spec, result)
    return result


def _struct_ops_members(spec: ObjectSpec, result: ObjectResult) -> dict[str, str]:
    """The object's struct_ops maps as map results (not created: evspec does not create struct_ops
    maps, nor register them), and program -> why it is not loaded, for the programs they name
    (libbpf loads each for its map, with the kernel's struct as attach BTF type)."""
    why: dict[str, str] = {}
    for m in spec.struct_ops:
        result.maps.append(MapResult(spec.path, m.name, "struct_ops", error=(
            f"a struct_ops map of struct {m.type_name} (SEC(\"{m.section}\")), which libbpf 1.8 "
            "creates and registers; evspec does not create struct_ops maps")))
        for member, program in m.members:
            why.setdefault(program, f"member '{member}' of struct_ops map '{m.name}' (struct {m.type_name}): "
                           "libbpf 1.8 loads it for that map, which evspec does not create; the object's other "
                           "programs are not concerned")
    return why


def _without_programs(spec: ObjectSpec, names: set[str]) -> ObjectSpec:
    """``spec`` without the programs ``names`` (verify cannot load them) nor the prog-array
    slots that name them."""
    from evspec.loader.object.spec import MapType, replace

    if not names:
        return spec
    maps = tuple(replace(m, initial_slots=tuple(s for s in m.initial_slots if s[1] not in names))
                 if m.type == MapType.PROG_ARRAY else m for m in spec.maps)
    return replace(spec, programs=tuple(p for p in spec.programs if p.name not in names), maps=maps)


def _unfilled_prog_arrays(spec: ObjectSpec, result: ObjectResult) -> None:
    """A prog-array slot that names a program that did not load is an error of the map (which is
    created, its other slots filled): libbpf loads no such object, failing at that program or,
    for one it skipped, when it fills the slot (init_prog_array_slots: EBADF)."""
    from evspec.loader.object.spec import MapType

    loaded = {p.name for p in result.programs if p.loaded}
    maps = {m.name: m for m in result.maps}
    for m in spec.maps:
        missing = [(slot, name) for slot, name in m.initial_slots if name not in loaded]
        if m.type != MapType.PROG_ARRAY or not missing or m.name not in maps:
            continue
        said = ", ".join(f"[{slot}] (program '{name}' did not load)" for slot, name in missing)
        why = f"slot {said} not filled: libbpf fails the whole object's load then"
        out = maps[m.name]
        out.error = why if out.error is None else f"{out.error}; {why}"


def _load_programs(spec: ObjectSpec, loads: dict[str, ProgramLoad], kernel: Kernel, result: ObjectResult,
                   pin_root: str) -> None:
    """Maps and BTF once (every program deferred), then each program on its own; where the object
    cannot be loaded that way (libbpf's rules about deferred programs), one load per program."""
    from evspec.loader.errors import ObjectError
    from evspec.loader.load.live import LiveProgram, load_linked, load_object
    from evspec.loader.object.link import link_program

    names = [p.name for p in spec.programs]
    types = {name: load.prog_type for name, load in loads.items()}
    try:
        live = load_object(spec, types, kernel=kernel, deferred=names, pin_root=pin_root)
    except ObjectError as exc:
        if any(m.initial_slots for m in spec.maps) and names:
            _load_one_by_one(spec, loads, kernel, result, pin_root)
        else:
            _maps_failed(spec, kernel, result, pin_root, exc)
        return
    maps = {m.name: m for m in result.maps}
    progs = {p.name: p for p in result.programs}
    with live:
        for name in live.maps:
            maps[name].created = True
        fds = {name: m.fd for name, m in live.maps.items()}
        for prog in live.spec.programs:  # relocated: CO-RE applied, externs resolved
            out, load = progs[prog.name], loads[prog.name]
            try:
                linked = link_program(prog, live.spec, fds)
                out.insns = len(linked.insns) // 8
                fd = load_linked(live, prog, linked, load.prog_type, load.expected_attach_type,
                                 attach_btf_id=load.attach_btf_id, prog_flags=load.prog_flags)
            except ObjectError as exc:
                _failed(out, exc)
                continue
            live.programs[prog.name] = LiveProgram(prog, fd, load.prog_type, linked.insns)  # closed with live
            out.loaded = True
            out.xlated = _xlated(kernel, fd)


def _xlated(kernel: Kernel, fd: int) -> int | None:
    from evspec.loader.kernel import KernelError

    try:
        return kernel.program_info(fd).xlated_len // 8
    except KernelError:
        return None


def _load_one_by_one(spec: ObjectSpec, loads: dict[str, ProgramLoad], kernel: Kernel, result: ObjectResult,
                     pin_root: str) -> None:
    from evspec.loader.errors import ObjectError
    from evspec.loader.load.live import load_object
    from evspec.loader.object.spec import MapType, replace

    progs = {p.name: p for p in result.programs}
    created: set[str] = set()
    first_map_error: ObjectError | None = None
    for prog in spec.programs:
        # alone, the program can fill no prog-array slot that names another one
        maps = tuple(replace(m, initial_slots=tuple(s for s in m.initial_slots if s[1] == prog.name))
                     if m.type == MapType.PROG_ARRAY else m for m in spec.maps)
        one = replace(spec, programs=(prog,), maps=maps)
        load = loads[prog.name]
        try:  # the program's flags are the section's (load_linked), as ``program_load`` has them
            with load_object(one, {prog.name: load.prog_type}, kernel=kernel, pin_root=pin_root,
                             expected_attach_types={prog.name: load.expected_attach_type},
                             attach_btf_ids={prog.name: load.attach_btf_id}) as live:
                created.update(live.maps)
                progs[prog.name].loaded = True
                loaded = live.program(prog.name)
                progs[prog.name].insns = len(loaded.insns) // 8
                progs[prog.name].xlated = _xlated(kernel, loaded.fd)
        except ObjectError as exc:
            _failed(progs[prog.name], exc)
            if first_map_error is None and getattr(exc, "operation", None) == "BPF_MAP_CREATE":
                first_map_error = exc
    for m in result.maps:
        m.created = m.name in created
        if not m.created and first_map_error is not None:
            m.error = first_map_error.message


def _maps_failed(spec: ObjectSpec, kernel: Kernel, result: ObjectResult, pin_root: str, exc: Exception) -> None:
    """The object's maps (or BTF) could not be created: which map failed, each tried on its own;
    no program can load without them."""
    from evspec.loader.errors import ObjectError
    from evspec.loader.load.live import load_object
    from evspec.loader.object.spec import replace

    why = getattr(exc, "message", str(exc))
    for m in result.maps:
        alone = replace(spec, programs=(), subprograms=(), maps=tuple(x for x in spec.maps if x.name == m.name))
        try:
            with load_object(alone, {}, kernel=kernel, pin_root=pin_root):
                m.created = True
        except ObjectError as one:
            m.error = one.message
    for p in result.programs:
        if p.error is None:
            _failed(p, exc)
            p.error = f"not loaded: the object's maps could not be created: {why}"


def _failed(out: ProgramResult, exc: Exception) -> None:
    import errno

    from evspec.loader.kernel import VerifierError

    if isinstance(exc, VerifierError):
        out.verifier = exc.summary.render()
    else:
        out.error = getattr(exc, "message", str(exc))
    number = getattr(exc, "errno", None)
    if number:
        out.errno = errno.errorcode.get(number, "ENOTSUPP" if number == ENOTSUPP else str(number))
