"""How each program of a loaded object is attached, and the attaching itself.

A program is attached through zero or more perf events (``ProbeEvent``: a name as perf shows the
evsel and the perf_event_attr fields to open it with); the recording session opens them per CPU
or task and sets the program on them with PERF_EVENT_IOC_SET_BPF. ``Attacher`` owns whatever the
attaching creates besides those events and removes it on ``close``.

Tracepoint programs (perf's ``SYS:EVENT`` sections and libbpf's ``tracepoint/SYS/EVENT``) get one
PERF_TYPE_TRACEPOINT event named ``SYS:EVENT`` like perf's evsels; ``!SYS:EVENT`` programs are
loaded and not attached. kprobe and uprobe sections are refused for now with an ObjectError naming
what is missing.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.live import LiveObject
from evspec.loader.perf_abi import PerfType
from evspec.loader.section import AttachKind, TracepointTarget, parse_section
from evspec.loader.spec import ObjectSpec, ProgType

from evspec.diagnostics import EvspecError

CODE_ATTACH_UNSUPPORTED = "EK103"
CODE_BAD_SECTION = "EK104"
CODE_NO_TRACEPOINT = "EK105"

TracepointIds = Callable[[str, str], int | None]


@dataclass(frozen=True, slots=True)
class ProbeEvent:
    """A perf event that carries a program: the evsel name perf would show, and its attr fields."""

    name: str
    values: Mapping[str, int] = field(hash=False)


@dataclass(frozen=True, slots=True)
class ProgramAttach:
    """One program: its BPF program type and the events it goes on (none: load only).

    ``deferred`` programs are not loaded by ``load_object``: the attacher loads them itself (e.g.
    with an argument prologue in front) when ``Attacher.program_fd`` is asked for them.
    """

    program: str
    prog_type: int
    events: tuple[ProbeEvent, ...] = ()
    deferred: bool = False


def plan_attachments(spec: ObjectSpec, tracepoint_id: TracepointIds) -> tuple[ProgramAttach, ...]:
    """Decide each program's type and tracepoint; raises ObjectError for what cannot be attached."""
    out: list[ProgramAttach] = []
    for prog in spec.programs:
        try:
            section = parse_section(prog.section)
        except EvspecError as exc:
            first = exc.diagnostics[0].message if exc.diagnostics else "malformed"
            raise ObjectError(
                CODE_BAD_SECTION,
                f"{spec.path}: program '{prog.name}': section '{prog.section}': {first}",
                perf_message="Invalid config string",
            ) from None
        if section.attach is AttachKind.NONE:
            out.append(ProgramAttach(prog.name, int(section.program_type)))
            continue
        if section.attach is AttachKind.TRACEPOINT and isinstance(section.target, TracepointTarget):
            target = section.target
            tp_id = tracepoint_id(target.system, target.event)
            if tp_id is None:
                raise ObjectError(
                    CODE_NO_TRACEPOINT,
                    f"{spec.path}: program '{prog.name}': tracepoint '{target.name}' does not exist",
                    help=(f"see the tracepoints with `ls /sys/kernel/tracing/events/{target.system}`",),
                )
            event = ProbeEvent(target.name, {"type": int(PerfType.TRACEPOINT), "config": tp_id})
            out.append(ProgramAttach(prog.name, int(ProgType.TRACEPOINT), (event,)))
            continue
        missing = {
            AttachKind.KPROBE: "creating kprobe events (tracefs kprobe_events or the kprobe PMU)",
            AttachKind.UPROBE: "creating uprobe events (tracefs uprobe_events or the uprobe PMU)",
        }.get(section.attach, f"attaching {section.attach.value} programs")
        raise ObjectError(
            CODE_ATTACH_UNSUPPORTED,
            f"{spec.path}: program '{prog.name}' (section '{prog.section}'): "
            f"{section.attach.value} programs are not supported yet in this version of evspec "
            f"record: {missing} is not implemented",
            help=("use a tracepoint section (SYS:EVENT or tracepoint/SYS/EVENT) for now",),
        )
    return tuple(out)


def program_types(attachments: Sequence[ProgramAttach]) -> dict[str, int]:
    """What ``load_object`` needs: program name → BPF program type (deferred ones excluded)."""
    return {a.program: a.prog_type for a in attachments if not a.deferred}


class Attacher:
    """Plans attachments and owns what attaching creates besides the perf events themselves.

    The session calls ``plan`` per object before loading it, ``program_fd`` for every event of an
    attachment once the object is loaded, ``attach_hooks`` after all events are set up, and
    ``close`` after the events are closed (so that kernel objects the events used can go).
    """

    def __init__(self, kernel: Kernel, tracepoint_id: TracepointIds) -> None:
        self.kernel = kernel
        self.tracepoint_id = tracepoint_id

    def plan(self, spec: ObjectSpec) -> tuple[ProgramAttach, ...]:
        return plan_attachments(spec, self.tracepoint_id)

    def program_fd(self, live: LiveObject, attach: ProgramAttach, event: ProbeEvent) -> int:
        """The program fd to set on ``event``."""
        return live.program(attach.program).fd

    def attach_hooks(self, live: LiveObject, attachments: Sequence[ProgramAttach]) -> None:
        """Attachments that are not perf events (none yet)."""

    def close(self) -> None:
        """Remove what ``plan``/``program_fd``/``attach_hooks`` created (nothing yet)."""


def attach_program(kernel: Kernel, event_fds: Sequence[int], prog_fd: int) -> None:
    """Set ``prog_fd`` on every instance of a tracepoint event (PERF_EVENT_IOC_SET_BPF).

    The kernel keeps a tracepoint's programs in one array shared by all its perf events, so every
    instance after the first answers EEXIST: the program is attached already (perf ignores it too).
    """
    for fd in event_fds:
        try:
            kernel.set_bpf(fd, prog_fd)
        except KernelError as exc:
            if exc.errno != errno.EEXIST:
                raise
