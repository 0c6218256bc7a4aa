"""Raw tracepoint programs (``raw_tp/NAME``, ``raw_tracepoint/NAME``): attached with
BPF_RAW_TRACEPOINT_OPEN to the tracepoint NAME (a tracepoint's event name, without its system);
the program runs for every hit, system-wide, with the tracepoint's raw arguments as its context.
No perf event carries it: closing the descriptor the kernel returned detaches it.

``tp_btf/NAME`` programs are the same, typed by the kernel's BTF: loaded as BPF_PROG_TYPE_TRACING
with the expected attach type BPF_TRACE_RAW_TP and the id of the kernel's ``btf_trace_NAME``
typedef, then attached with no name (the kernel knows the tracepoint from that id).

A target vmlinux's BTF lacks is looked for in the modules' BTF, as libbpf 1.1 does: the module
BTFs are opened the first time one is needed, and the program (and the trampoline probe) is
loaded with the id in that module's BTF and its descriptor as attach_btf_obj_fd. The attacher
holds the descriptors until it is closed, after the objects loaded with them.

Trampoline programs (``fentry/FUNC``, ``fexit/``, ``fmod_ret/``, their sleepable ``.s`` forms,
``lsm/HOOK``, ``lsm.s/``) are attached the same way, with no name: loaded for the kernel BTF id of
the function (``bpf_lsm_HOOK`` for an LSM hook) as libbpf loads them, they run through a BPF
trampoline on that function. Before anything of the object is loaded, ``plan`` asks the kernel
whether it can: a minimal program of the same kind is loaded for the same target and attached,
then closed; what the kernel says when it cannot is the refusal's reason."""

from __future__ import annotations

import errno
import os

from evspec.loader import asm
from evspec.loader.abi import bpf as abi
from evspec.loader.attach.attachment import AttachOptions, ProbeEvent, ProgramAttach
from evspec.loader.btf.reader import BtfError
from evspec.loader.btf.target import TargetBtf
from evspec.loader.errors import ObjectError
from evspec.loader.externs.module_ksyms import ModuleBtf
from evspec.loader.kernel import Kernel, KernelError, VerifierError
from evspec.loader.kernel.btf_objects import open_module_btfs
from evspec.loader.load.live import LiveObject
from evspec.loader.object.spec import ObjectSpec, ProgramSpec
from evspec.loader.sections.libbpf import (
    LoadParams,
    ModuleTypeId,
    attach_btf_obj_fd,
    attach_target_name,
    load_params,
)
from evspec.loader.sections.names import AttachKind, BtfTarget, RawTracepointTarget, SectionSpec

from evspec.codes import kernel as codes
from evspec.span import Slotted

TRAMPOLINES = "BPF trampolines (fentry/fexit/fmod_ret/lsm)"
# what a kernel without trampolines answers: EPERM (refused before the verifier runs), ENOTSUPP
# (524, the kernel's own), EOPNOTSUPP
_NO_TRAMPOLINE_ERRNOS = (errno.EPERM, 524, errno.EOPNOTSUPP)


class RawTracepointAttacher:
    def __init__(self, kernel: Kernel, options: AttachOptions) -> None:
        self.kernel = kernel
        self.options = options
        self.notes: list[str] = []
        self.warnings: list[str] = []
        self._fds: list[tuple[str, int]] = []
        self._kernel_btf: TargetBtf | None = None
        self._modules: tuple[ModuleBtf, ...] | None = None

    def _running_kernel_btf(self, spec: ObjectSpec, prog: ProgramSpec, kind: str) -> TargetBtf:
        if self._kernel_btf is None:
            try:
                self._kernel_btf = TargetBtf.running_kernel()
            except BtfError as exc:
                raise ObjectError(codes.ATTACH_UNSUPPORTED, f"{spec.path}: program '{prog.name}': a {kind} program "
                                  f"needs the kernel's BTF: {exc}") from None
        return self._kernel_btf

    def _attach_btf_id(self, spec: ObjectSpec, prog: ProgramSpec, params: LoadParams, kind: str) -> int:
        """The program's attach_btf_id: vmlinux's, else a module's (a ``ModuleTypeId``);
        ``ObjectError`` without the program's name in front when no BTF has the target."""
        vmlinux = self._running_kernel_btf(spec, prog, kind)

        def modules() -> tuple[ModuleBtf, ...]:
            if self._modules is None:
                try:
                    self._modules = open_module_btfs(self.kernel, vmlinux)
                except (KernelError, BtfError) as exc:
                    raise ObjectError(codes.ATTACH_UNSUPPORTED, f"{spec.path}: program '{prog.name}': "
                                      f"'{params.target}' is not in vmlinux's BTF, and the module BTFs cannot be "
                                      f"read: {getattr(exc, 'message', exc)}") from None
            return self._modules

        return params.attach_btf_id(vmlinux, modules)

    def plan(self, spec: ObjectSpec, prog: ProgramSpec, section: SectionSpec) -> ProgramAttach:
        target = section.target
        assert isinstance(target, RawTracepointTarget)
        if section.attach is not AttachKind.BTF_TRACEPOINT:
            return ProgramAttach(prog.name, int(section.program_type), (), kind=section.attach, detail=target.event)
        return ProgramAttach(prog.name, int(section.program_type), (), kind=section.attach, detail=target.event,
                             expected_attach_type=abi.BPF_TRACE_RAW_TP,
                             attach_btf_id=self._btf_trace_id(spec, prog, target.event))

    def _btf_trace_id(self, spec: ObjectSpec, prog: ProgramSpec, event: str) -> int:
        """The kernel BTF's ``btf_trace_EVENT`` typedef, which a tp_btf program is loaded for."""
        try:
            params = load_params(f"tp_btf/{event}")
            assert params is not None and params.lookup is not None
            return self._attach_btf_id(spec, prog, params, "tp_btf")
        except ObjectError as exc:
            if exc.code != codes.BAD_SECTION:
                raise
            raise ObjectError(codes.NO_TRACEPOINT, f"{spec.path}: program '{prog.name}': {exc.message}",
                              help=("a tp_btf program is named by the raw tracepoint (tp_btf/sched_switch)",)) from None

    def program_fd(self, live: LiveObject, attach: ProgramAttach, event: ProbeEvent) -> int | None:
        return None

    def attach_hooks(self, live: LiveObject, attach: ProgramAttach) -> None:
        name = str(attach.detail)
        try:  # a tp_btf program names no tracepoint: the kernel knows it from its attach_btf_id
            fd = self.kernel.raw_tracepoint_open(None if attach.attach_btf_id else name, live.program(attach.program).fd)
        except KernelError as exc:
            raise ObjectError(
                codes.NO_TRACEPOINT if exc.errno == errno.ENOENT else codes.ATTACH_UNSUPPORTED,
                f"{live.spec.path}: program '{attach.program}': cannot attach to raw tracepoint "
                f"'{name}': {exc.message}",
                help=("a raw tracepoint is named by its event alone (raw_tp/sched_switch), as in "
                      "/sys/kernel/tracing/events/*/NAME",),
            ) from None
        self._fds.append((name, fd))
        self.notes.append(f"program '{attach.program}' attached to raw tracepoint "
                          f"{attach_target_name(attach.attach_btf_id, name)}")

    def close(self) -> None:
        """The attachments, then the module BTFs (the programs loaded with them hold their own)."""
        first: KernelError | None = None
        while self._fds:
            _, fd = self._fds.pop()
            try:
                self.kernel.close(fd)
            except KernelError as exc:
                first = first or exc
        modules, self._modules = self._modules or (), None
        try:
            self.kernel.close_all(m.fd for m in modules)
        except KernelError as exc:
            first = first or exc
        if first is not None:
            raise first


class _Probe(Slotted):
    """The kernel's answer for one kind of trampoline program on one target (None: it can)."""

    refusal: str | None


class TrampolineAttacher(RawTracepointAttacher):
    """fentry/fexit/fmod_ret/lsm programs: planned only where the kernel attaches a minimal
    program of the same kind to the same target, then attached with BPF_RAW_TRACEPOINT_OPEN."""

    def __init__(self, kernel: Kernel, options: AttachOptions) -> None:
        super().__init__(kernel, options)
        self._probed: dict[tuple[int, int, int, int, int], _Probe] = {}

    def plan(self, spec: ObjectSpec, prog: ProgramSpec, section: SectionSpec) -> ProgramAttach:
        target = section.target
        assert isinstance(target, BtfTarget)
        params = load_params(section.main_span.text(section.name))
        assert params is not None and params.lookup is not None  # parse_section read a trampoline kind
        where = f"{spec.path}: program '{prog.name}' (section '{prog.section}')"
        try:
            btf_id = self._attach_btf_id(spec, prog, params, target.kind)
        except ObjectError as exc:
            if exc.code != codes.BAD_SECTION:
                raise
            raise ObjectError(exc.code, f"{where}: {exc.message}", help=exc.help) from None
        refusal = self._probe(target.kind, params, btf_id).refusal
        if refusal is not None:
            raise ObjectError(codes.ATTACH_UNSUPPORTED, f"{where}: {refusal}",
                              help=("`evspec verify` tries the program's load all the same (it attaches nothing)",))
        return ProgramAttach(prog.name, params.prog_type, (), kind=section.attach, detail=target.name,
                             expected_attach_type=params.expected_attach_type, attach_btf_id=btf_id)

    def _probe(self, kind: str, params: LoadParams, btf_id: int) -> _Probe:
        module = btf_id.module.btf_id if isinstance(btf_id, ModuleTypeId) else 0
        key = (params.prog_type, params.expected_attach_type, module, btf_id, params.prog_flags)
        if key not in self._probed:
            self._probed[key] = self._ask_kernel(kind, params, btf_id)
        return self._probed[key]

    def _ask_kernel(self, kind: str, params: LoadParams, btf_id: int) -> _Probe:
        """Load ``r0 = 0; exit`` as a ``kind`` program of ``params`` for ``btf_id``, attach it and
        close both."""
        insns = asm.encode(asm.OP_MOV64_IMM) + asm.encode(asm.OP_EXIT)  # r0 = 0; exit
        what = f"a minimal {kind} program for '{attach_target_name(btf_id, params.target or '')}'"
        try:
            fd = self.kernel.load_program(params.prog_type, insns, "GPL", name="evspec_probe",
                                          expected_attach_type=params.expected_attach_type,
                                          prog_flags=params.prog_flags, attach_btf_id=btf_id,
                                          attach_btf_obj_fd=attach_btf_obj_fd(btf_id))
        except VerifierError as exc:
            return _Probe(f"the kernel refuses {what}: {exc.summary.render()}")
        except KernelError as exc:
            return _Probe(_refusal(what, "loading", exc))
        try:
            link = self.kernel.raw_tracepoint_open(None, fd)
        except KernelError as exc:
            return _Probe(_refusal(what, "attaching", exc))
        finally:
            self.kernel.close(fd)
        self.kernel.close(link)
        return _Probe(None)

    def attach_hooks(self, live: LiveObject, attach: ProgramAttach) -> None:
        name = attach_target_name(attach.attach_btf_id, str(attach.detail))
        try:
            fd = self.kernel.raw_tracepoint_open(None, live.program(attach.program).fd)
        except KernelError as exc:
            raise ObjectError(codes.ATTACH_UNSUPPORTED, f"{live.spec.path}: program '{attach.program}': cannot "
                              f"attach it to '{name}' through a BPF trampoline: {exc.message}") from None
        self._fds.append((name, fd))
        self.notes.append(f"program '{attach.program}' attached to {name} through a BPF trampoline")


def _refusal(what: str, stage: str, exc: KernelError) -> str:
    said = f"{errno.errorcode.get(exc.errno or 0, 'ENOTSUPP' if exc.errno == 524 else str(exc.errno))}"
    reason = os.strerror(exc.errno) if exc.errno and exc.errno != 524 else "not supported"
    if exc.errno in _NO_TRAMPOLINE_ERRNOS:
        return (f"{TRAMPOLINES} are not available on this kernel: {stage} {what} failed with {said} "
                f"({reason}){', with no verifier log' if stage == 'loading' else ''}")
    return f"the kernel refuses {what}: {stage} it failed with {said} ({reason})"
