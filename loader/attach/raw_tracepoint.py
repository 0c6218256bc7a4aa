"""Raw tracepoint programs (``raw_tp/NAME``, ``raw_tracepoint/NAME``): attached with
BPF_RAW_TRACEPOINT_OPEN to the tracepoint NAME (a tracepoint's event name, without its system);
the program runs for every hit, system-wide, with the tracepoint's raw arguments as its context.
No perf event carries it: closing the descriptor the kernel returned detaches it."""

from __future__ import annotations

import errno

from evspec.loader.attach.attacher import AttachOptions, ProbeEvent, ProgramAttach
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.load.live import LiveObject
from evspec.loader.object.section import RawTracepointTarget, SectionSpec
from evspec.loader.object.spec import ObjectSpec, ProgramSpec

from evspec.codes import kernel as codes


class RawTracepointAttacher:
    def __init__(self, kernel: Kernel, options: AttachOptions) -> None:
        self.kernel = kernel
        self.options = options
        self.notes: list[str] = []
        self.warnings: list[str] = []
        self._fds: list[tuple[str, int]] = []

    def plan(self, spec: ObjectSpec, prog: ProgramSpec, section: SectionSpec) -> ProgramAttach:
        target = section.target
        assert isinstance(target, RawTracepointTarget)
        return ProgramAttach(prog.name, int(section.program_type), (), kind=section.attach, detail=target.event)

    def program_fd(self, live: LiveObject, attach: ProgramAttach, event: ProbeEvent) -> int | None:
        return None

    def attach_hooks(self, live: LiveObject, attach: ProgramAttach) -> None:
        name = str(attach.detail)
        try:
            fd = self.kernel.raw_tracepoint_open(name, live.program(attach.program).fd)
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
