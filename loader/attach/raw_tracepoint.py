"""Raw tracepoint programs (``raw_tp/NAME``, ``raw_tracepoint/NAME``): attached with
BPF_RAW_TRACEPOINT_OPEN to the tracepoint NAME (a tracepoint's event name, without its system);
the program runs for every hit, system-wide, with the tracepoint's raw arguments as its context.
No perf event carries it: closing the descriptor the kernel returned detaches it.

``tp_btf/NAME`` programs are the same, typed by the kernel's BTF: loaded as BPF_PROG_TYPE_TRACING
with the expected attach type BPF_TRACE_RAW_TP and the id of the kernel's ``btf_trace_NAME``
typedef, then attached with no name (the kernel knows the tracepoint from that id)."""

from __future__ import annotations

import errno

from evspec.loader.abi import bpf as abi
from evspec.loader.attach.attacher import AttachOptions, ProbeEvent, ProgramAttach
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.load.live import LiveObject
from evspec.loader.object.btf import BtfError
from evspec.loader.object.section import AttachKind, RawTracepointTarget, SectionSpec
from evspec.loader.object.spec import ObjectSpec, ProgramSpec
from evspec.loader.object.target_btf import TargetBtf, btf_trace_type_id

from evspec.codes import kernel as codes


class RawTracepointAttacher:
    def __init__(self, kernel: Kernel, options: AttachOptions) -> None:
        self.kernel = kernel
        self.options = options
        self.notes: list[str] = []
        self.warnings: list[str] = []
        self._fds: list[tuple[str, int]] = []
        self._kernel_btf: TargetBtf | None = None

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
        if self._kernel_btf is None:
            try:
                self._kernel_btf = TargetBtf.running_kernel()
            except BtfError as exc:
                raise ObjectError(codes.ATTACH_UNSUPPORTED, f"{spec.path}: program '{prog.name}': a tp_btf program "
                                  f"needs the kernel's BTF: {exc}") from None
        found = btf_trace_type_id(self._kernel_btf, event)
        if found is None:
            raise ObjectError(codes.NO_TRACEPOINT, f"{spec.path}: program '{prog.name}': the kernel has no BTF "
                              f"tracepoint '{event}' (no btf_trace_{event} in its BTF)",
                              help=("a tp_btf program is named by the raw tracepoint (tp_btf/sched_switch)",))
        return found

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
        self.notes.append(f"program '{attach.program}' attached to raw tracepoint {name}")

    def close(self) -> None:
        first: KernelError | None = None
        while self._fds:
            _, fd = self._fds.pop()
            try:
                self.kernel.close(fd)
            except KernelError as exc:
                first = first or exc
        if first is not None:
            raise first
