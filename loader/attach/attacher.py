"""How each program of a loaded object is attached, and the attaching itself.

A program is attached through zero or more perf events (``ProbeEvent``: a name as perf shows the
evsel and the perf_event_attr fields to open it with); the recording session opens them per CPU
or task and sets the program on them with PERF_EVENT_IOC_SET_BPF. Programs that attach some other
way (network hooks, raw tracepoints, trampolines) do it in ``attach_hooks``.

``Attacher`` dispatches on the section's attach kind. Tracepoint programs (perf's ``SYS:EVENT``
sections and libbpf's ``tracepoint/SYS/EVENT``) are handled here: one PERF_TYPE_TRACEPOINT event
named ``SYS:EVENT`` like perf's evsels; ``!SYS:EVENT`` programs, libbpf's ``SEC("?...")`` ones and
those of a libbpf section with no target (``SEC("kprobe")``, ``SEC("usdt")``, which libbpf attaches
only by hand) are loaded and not attached (the last with a note for ``-v``). Other
kinds are handled by the class named in ``KIND_ATTACHERS`` (imported only when an object has such a
program); a kind with no entry is refused with an ObjectError naming what is missing.
"""

from __future__ import annotations

import errno
import importlib
import os
import pwd
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from evspec.loader.abi.perf import PerfType
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.kernel.errors import missing_capabilities
from evspec.loader.load.live import LiveObject
from evspec.loader.object.section import AttachKind, SectionSpec, TracepointTarget, parse_section
from evspec.loader.object.spec import ObjectSpec, ProgramSpec, ProgType

from evspec.codes import kernel as codes
from evspec.diagnostics import EvspecError

if TYPE_CHECKING:
    from evspec.system.model import TracefsUnavailable

CODE_ATTACH_UNSUPPORTED = codes.ATTACH_UNSUPPORTED
CODE_BAD_SECTION = codes.BAD_SECTION
CODE_NO_TRACEPOINT = codes.NO_TRACEPOINT

TracepointIds = Callable[[str, str], int | None]


@dataclass(frozen=True, slots=True)
class ProbeEvent:
    """A perf event that carries a program: the evsel name perf would show, and its attr fields.

    ``one_per_task``: every perf event opened with these values is a kernel probe of its own that
    runs the program on each hit, whatever CPU it is on (a probe PMU event), so the event must be
    opened once per task with cpu=-1 (system-wide: on one CPU only), not once per CPU, or the
    program runs once per CPU event for each hit. ``tracefs``: where the format of a tracepoint
    event shown under another name is (a probe perf named ``perf_bpf_probe:EVENT``, made in
    evspec's own group).
    """

    name: str
    values: Mapping[str, int] = field(hash=False)
    one_per_task: bool = False
    tracefs: str | None = None  # SYSTEM:EVENT of its tracefs entry, when that is not ``name``


@dataclass(frozen=True, slots=True)
class ProgramAttach:
    """One program: its BPF program type and the events it goes on (none: load only).

    ``deferred`` programs are not loaded by ``load_object``: their kind attacher loads them itself
    (e.g. with an argument prologue in front) when ``program_fd`` is asked for them. ``detail`` is
    the kind attacher's own plan for the program (opaque here).
    """

    program: str
    prog_type: int
    events: tuple[ProbeEvent, ...] = ()
    deferred: bool = False
    kind: AttachKind = AttachKind.NONE
    detail: object = field(default=None, compare=False)
    expected_attach_type: int = 0  # what BPF_PROG_LOAD needs for some types (tp_btf: BPF_TRACE_RAW_TP)
    attach_btf_id: int = 0  # the kernel BTF type a tp_btf program is loaded for


@dataclass(frozen=True, slots=True)
class AttachOptions:
    """What the command line says about attaching: tracepoint ids of the machine, ``--dev``;
    ``skip_tgid``: the recording's own process (or processes), in which the programs a kind
    attacher loads itself must do nothing (``load.self_filter``)."""

    tracepoint_id: TracepointIds
    dev: str | None = None
    skip_tgid: int | tuple[int, ...] | None = None


class KindAttacher(Protocol):
    """Attaches the programs of one attach kind; one instance per recording session. ``notes``
    are lines for ``record -v`` (e.g. how many programs served how many probe points);
    ``warnings`` are printed always (what was left undone: a stale entry that could not go)."""

    notes: list[str]
    warnings: list[str]

    def plan(self, spec: ObjectSpec, prog: ProgramSpec, section: SectionSpec) -> ProgramAttach: ...

    def program_fd(self, live: LiveObject, attach: ProgramAttach, event: ProbeEvent) -> int | None:
        """The program fd to set on ``event``; None: the program as ``load_object`` loaded it."""
        ...

    def attach_hooks(self, live: LiveObject, attach: ProgramAttach) -> None: ...

    def close(self) -> None:
        """Remove everything this attacher created; raise the first failure after trying all."""
        ...


KindFactory = Callable[[Kernel, AttachOptions], KindAttacher]

# attach kind → its KindAttacher's factory, or "module:Class" imported on first use; constructed
# as factory(kernel, options) once per session
KIND_ATTACHERS: dict[AttachKind, str | KindFactory] = {
    AttachKind.UPROBE: "evspec.loader.attach.probes:UprobeAttacher",
    AttachKind.KPROBE: "evspec.loader.attach.probes:KprobeAttacher",
    AttachKind.RAW_TRACEPOINT: "evspec.loader.attach.raw_tracepoint:RawTracepointAttacher",
    AttachKind.BTF_TRACEPOINT: "evspec.loader.attach.raw_tracepoint:RawTracepointAttacher",
    AttachKind.TRAMPOLINE: "evspec.loader.attach.raw_tracepoint:TrampolineAttacher",
    AttachKind.PERF_EVENT: "evspec.loader.attach.perf_event:PerfEventProgramAttacher",
    AttachKind.XDP: "evspec.loader.attach.net:NetAttacher",
    AttachKind.TC: "evspec.loader.attach.net:NetAttacher",
}


def _section(spec: ObjectSpec, prog: ProgramSpec) -> SectionSpec:
    try:
        return parse_section(prog.section)
    except EvspecError as exc:
        first = exc.diagnostics[0].message if exc.diagnostics else "malformed"
        raise ObjectError(
            CODE_BAD_SECTION,
            f"{spec.path}: program '{prog.name}': section '{prog.section}': {first}",
            perf_message="Invalid config string",
        ) from None


def _plan_tracepoint(kernel: Kernel, spec: ObjectSpec, prog: ProgramSpec, section: SectionSpec,
                     tracepoint_id: TracepointIds) -> ProgramAttach:
    from evspec.system.model import TracefsUnavailable

    target = section.target
    assert isinstance(target, TracepointTarget)
    try:
        tp_id = tracepoint_id(target.system, target.event)
    except TracefsUnavailable as exc:
        raise tracefs_refusal(kernel, f"{spec.path}: program '{prog.name}': cannot look up tracepoint "
                                      f"'{target.name}'", exc) from None
    if tp_id is None:
        raise ObjectError(
            CODE_NO_TRACEPOINT,
            f"{spec.path}: program '{prog.name}': tracepoint '{target.name}' does not exist",
            help=(f"see the tracepoints with `ls /sys/kernel/tracing/events/{target.system}`",),
        )
    event = ProbeEvent(target.name, {"type": int(PerfType.TRACEPOINT), "config": tp_id})
    return ProgramAttach(prog.name, int(ProgType.TRACEPOINT), (event,), kind=AttachKind.TRACEPOINT)


def tracefs_refusal(kernel: Kernel, what: str, exc: TracefsUnavailable) -> KernelError:
    """The error of a tracepoint lookup (``what``) that found no readable tracefs: for a process
    without root's powers, the privileges it lacks (tracefs is root's, mode 0700 on Debian; loading
    and attaching need CAP_BPF and CAP_PERFMON); for root, why there is none (not mounted, and
    mounting failed)."""
    missing = missing_capabilities(kernel.funnel)
    if os.geteuid() == 0 and not missing:
        return KernelError(CODE_NO_TRACEPOINT, f"{what}: {exc.reason}", help=exc.help)
    lacks = f"; it also lacks {' and '.join(missing)}, which loading and attaching programs need" if missing else ""
    return KernelError(
        codes.PERMISSION,
        f"{what}: tracefs cannot be read by this user ({tracefs_access()}){lacks}: evspec record needs root",
        help=("run evspec record as root (sudo)",),
    )


def tracefs_access(root: str = "/sys/kernel/tracing") -> str:
    """Why this user cannot read the tracefs at ``root``: its mode and owner, or that it is missing."""
    try:
        st = os.stat(root)
    except OSError as exc:
        return f"{root}: {os.strerror(exc.errno or 0)}"
    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = f"uid {st.st_uid}"
    return f"{root} is mode {stat.S_IMODE(st.st_mode):04o}, owned by {owner}; this process runs as uid {os.geteuid()}"


def _unsupported(spec: ObjectSpec, prog: ProgramSpec, section: SectionSpec) -> ObjectError:
    missing = f"attaching {section.attach.value} programs"
    return ObjectError(
        CODE_ATTACH_UNSUPPORTED,
        f"{spec.path}: program '{prog.name}' (section '{prog.section}'): "
        f"{section.attach.value} programs are not supported yet in this version of evspec "
        f"record: {missing} is not implemented",
        help=("use a tracepoint section (SYS:EVENT or tracepoint/SYS/EVENT) for now",),
    )


class Attacher:
    """Plans attachments and owns what attaching creates besides the perf events themselves.

    The session calls ``plan`` per object before loading it, ``program_fd`` for every event of an
    attachment once the object is loaded, ``attach_hooks`` after all events are set up, and
    ``close`` after the events are closed (so that kernel objects the events used can go).
    """

    def __init__(self, kernel: Kernel, options: AttachOptions | TracepointIds) -> None:
        self.kernel = kernel
        self.options = options if isinstance(options, AttachOptions) else AttachOptions(options)
        self._by_kind: dict[AttachKind, KindAttacher] = {}
        self._notes: list[str] = []

    def _kind(self, kind: AttachKind) -> KindAttacher | None:
        if kind not in self._by_kind:
            where = KIND_ATTACHERS.get(kind)
            if where is None:
                return None
            if isinstance(where, str):
                module, _, cls = where.partition(":")
                where = getattr(importlib.import_module(module), cls)
            self._by_kind[kind] = where(self.kernel, self.options)
        return self._by_kind[kind]

    def plan(self, spec: ObjectSpec) -> tuple[ProgramAttach, ...]:
        """Each program's type and attachment; raises ObjectError for what cannot be attached."""
        out: list[ProgramAttach] = []
        for prog in spec.programs:
            section = _section(spec, prog)
            if section.attach is AttachKind.NONE:
                out.append(ProgramAttach(prog.name, int(section.program_type)))
                if section.note is not None:
                    self._notes.append(f"{spec.path}: program '{prog.name}' (section '{prog.section}'): {section.note}")
            elif section.attach is AttachKind.TRACEPOINT and isinstance(section.target, TracepointTarget):
                out.append(_plan_tracepoint(self.kernel, spec, prog, section, self.options.tracepoint_id))
            elif (handler := self._kind(section.attach)) is not None:
                out.append(handler.plan(spec, prog, section))
            else:
                raise _unsupported(spec, prog, section)
        return tuple(out)

    def program_fd(self, live: LiveObject, attach: ProgramAttach, event: ProbeEvent) -> int:
        """The program fd to set on ``event``."""
        handler = self._by_kind.get(attach.kind)
        fd = handler.program_fd(live, attach, event) if handler is not None else None
        return live.program(attach.program).fd if fd is None else fd

    def attach_hooks(self, live: LiveObject, attachments: Sequence[ProgramAttach]) -> None:
        """Attachments that are not perf events."""
        for attach in attachments:
            handler = self._by_kind.get(attach.kind)
            if handler is not None:
                handler.attach_hooks(live, attach)

    @property
    def notes(self) -> list[str]:
        return self._notes + [line for handler in self._by_kind.values() for line in handler.notes]

    @property
    def warnings(self) -> list[str]:
        return [line for handler in self._by_kind.values() for line in handler.warnings]

    def close(self) -> None:
        """Every kind attacher removes what it created; the first failure is raised last."""
        first: BaseException | None = None
        for handler in self._by_kind.values():
            try:
                handler.close()
            except (KernelError, ObjectError, OSError) as exc:
                first = first or exc
        if first is not None:
            raise first


def plan_attachments(spec: ObjectSpec, tracepoint_id: TracepointIds) -> tuple[ProgramAttach, ...]:
    """``Attacher(Kernel(), tracepoint_id).plan(spec)``."""
    return Attacher(Kernel(), AttachOptions(tracepoint_id)).plan(spec)


def program_types(attachments: Sequence[ProgramAttach]) -> dict[str, int]:
    """What ``load_object`` needs: program name → BPF program type (deferred ones excluded)."""
    return {a.program: a.prog_type for a in attachments if not a.deferred}


def attach_program(kernel: Kernel, event_fds: Sequence[int], prog_fd: int) -> None:
    """Set ``prog_fd`` on every instance of a perf event (PERF_EVENT_IOC_SET_BPF).

    The kernel keeps a tracepoint's programs in one array shared by all its perf events, so every
    instance after the first answers EEXIST: the program is attached already (perf ignores it too).
    """
    for fd in event_fds:
        try:
            kernel.set_bpf(fd, prog_fd)
        except KernelError as exc:
            if exc.errno != errno.EEXIST:
                raise
