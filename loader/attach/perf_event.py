"""``perf_event`` programs: they run when a sampling event overflows. Which event is said by the
BPF event's ``prog:NAME.event=EVENT`` terms, so the session sets the program on every instance of
that event once all events are open (PERF_EVENT_IOC_SET_BPF); here they are only planned."""

from __future__ import annotations

from evspec.loader.attach.attachment import AttachOptions, ProbeEvent, ProgramAttach
from evspec.loader.kernel import Kernel
from evspec.loader.load.live import LiveObject
from evspec.loader.object.spec import ObjectSpec, ProgramSpec
from evspec.loader.sections.names import SectionSpec


class PerfEventProgramAttacher:
    def __init__(self, kernel: Kernel, options: AttachOptions) -> None:
        self.notes: list[str] = []
        self.warnings: list[str] = []

    def plan(self, spec: ObjectSpec, prog: ProgramSpec, section: SectionSpec) -> ProgramAttach:
        return ProgramAttach(prog.name, int(section.program_type), (), kind=section.attach)

    def program_fd(self, live: LiveObject, attach: ProgramAttach, event: ProbeEvent) -> int | None:
        return None

    def attach_hooks(self, live: LiveObject, attach: ProgramAttach) -> None:
        """Nothing: the session puts the program on the events its terms name."""

    def close(self) -> None:
        """Nothing: closing the events detaches the programs."""
