"""Attaching kprobe and uprobe programs: ``UprobeAttacher`` and ``KprobeAttacher``.

Plan: the section's probe point is resolved into probe points (a uprobe's function looked up in the
target ELF, one point per function a glob matches; a kprobe glob expanded against
``/proc/kallsyms``), and each point gets a perf event the session opens per CPU/task and sets the
program on. The event is made the way perf 4.5-6.5 made the probes of BPF programs: an entry in
tracefs ``uprobe_events``/``kprobe_events``, under evspec's own group ``evspec_<pid>_<start>_<pidns>`` (see
``probe_events``), opened as a tracepoint. One tracefs event is one kernel probe whose program array
all its perf events share, so the program runs once per hit however many CPUs the session opens
the event on. The probe PMUs are the fallback when tracefs cannot be used: every PMU event is a
kernel probe of its own and runs the program itself, so a session that opens an event on several
CPUs of one task runs the program once per CPU event (the notes say so).

Names: perf-style sections (``exec=PATH;EVENT=FUNC``, ``EVENT=FUNC``) are shown and referred to
(``map:…event=``) as perf named them: ``perf_bpf_probe:EVENT``, ``perf_bpf_probe:EVENT__return``
for ``%return``; every point of a glob is shown under that one name as in perf 6.1, while the
tracefs entries are ``EVENT``, ``EVENT_1``, ``EVENT_2`` ... in address order, like perf-probe's.
``force=yes`` lets a second probe of the same name get the next free ``_N`` name; without it that
is perf's "Probe point exist" error. libbpf-style sections (``uprobe/PATH:FUNC``,
``kretprobe/FUNC``) are called ``uprobe:FUNC``, ``uretprobe:FUNC``, ``kprobe:FUNC``,
``kretprobe:FUNC`` (``+0xOFF`` appended), their tracefs entries ``uprobe_FUNC`` ...

Settings: ``exec=`` and ``module=`` (a kprobe in a module: ``MOD:FUNC``) are honoured, and
``force=`` as above; ``inlines=no`` is what evspec always does (it probes the out-of-line copy of a
function found in the symbol table, never inlined copies), so an explicit ``inlines=yes``, line
probes (``FUNC:LINE``, ``SRC:LINE``) and ``FUNC@SRC`` need DWARF that evspec does not read and are
refused; settings on libbpf-style sections are refused.

Programs whose probe definition fetches arguments are ``deferred``: ``program_fd`` loads them with
the argument prologue of each probe point (``evspec.loader.attach.prologue``), identical prologues sharing
one program, and ``notes`` says how many programs served how many probe points.
"""

from __future__ import annotations

import fnmatch
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from evspec.loader.attach.attachment import AttachOptions, ProbeEvent, ProgramAttach
from evspec.loader.attach.probe_events import (
    DEFAULT_SYSFS_PMUS,
    DEFAULT_TRACEFS,
    PROBE_CHECK_MESSAGE,
    PROBE_EXISTS_MESSAGE,
    Owner,
    ProbeEventMaker,
    ProbeKind,
    ProbeLocation,
    TracefsWriter,
    open_tracefs,
)
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel
from evspec.loader.load.live import LiveObject
from evspec.loader.object.elf_symbols import (
    ElfSymbols,
    check_probe_count,
    read_elf_symbols,
    uprobe_sites,
)
from evspec.loader.object.spec import ObjectSpec, ProgramSpec, ProgType
from evspec.loader.sections.names import (
    EVENT_NAME_TOO_LONG_MESSAGE,
    MAX_EVENT_NAME,
    PERF_BPF_PROBE_GROUP,
    ProbeArg,
    ProbeTarget,
    SectionSpec,
    SectionStyle,
    Setting,
)

from evspec.codes import kernel as codes
from evspec.span import Slotted

if TYPE_CHECKING:
    from evspec.loader.attach.prologue import PrologueCache

PROBE_SETTINGS = ("exec", "module", "inlines", "force")
MAX_SUFFIX = 1023  # _1 ... _1023: the names one definition may take after its first
_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")


class ProbePoint(Slotted):
    """One resolved probe point: its location and what the argument prologue needs to know."""

    location: ProbeLocation
    function: str | None  # the function probed (a glob's match), None for an address
    address: int | None  # uprobe: the virtual address in the binary
    offset: int = 0  # the section's +OFF from the function


class ProbeDetail(Slotted):
    """A probe program's plan: its points, and (deferred programs only) the argument prologue of
    each point's event."""

    points: tuple[ProbePoint, ...]
    prologues: tuple[bytes, ...] = ()  # per event of the ProgramAttach, in order


def _in_program(spec: ObjectSpec, prog: ProgramSpec, exc: ObjectError) -> ObjectError:
    """``exc`` with the object, program and section it is about in front of its message."""
    return ObjectError(
        exc.code,
        f"{spec.path}: program '{prog.name}' (section '{prog.section}'): {exc.message}",
        perf_message=exc.perf_message or PROBE_CHECK_MESSAGE,
        detail=exc.detail,
        help=exc.help,
    )


def _setting_error(message: str, setting: Setting | None = None) -> ObjectError:
    where = f" (at {setting.span.start}-{setting.span.end} of the section name)" if setting is not None else ""
    return ObjectError(codes.PROBE_SETTING, message + where, perf_message="Invalid config string")


class ProbeAttacher(ABC):
    """What uprobes and kprobes share: settings, event names, the tracefs/PMU choice, prologues.
    A subclass says which kind of probe it makes and how a section's probe point becomes probe
    points (``_points``)."""

    kind: ProbeKind

    def __init__(
        self,
        kernel: Kernel,
        options: AttachOptions,
        *,
        pmus: Path = DEFAULT_SYSFS_PMUS,
        tracefs_root: Path = DEFAULT_TRACEFS,
        tracefs_writer: TracefsWriter | None = None,
        mount: Callable[[Path], None] | None = None,
        proc: Path = Path("/proc"),
    ) -> None:
        self.kernel = kernel
        self.options = options
        self._notes: list[str] = []
        self.warnings: list[str] = []
        self.tracefs_root = tracefs_root
        tracefs = open_tracefs(tracefs_root, writer=tracefs_writer, mount=mount, notes=self._notes)
        owner = Owner.of(os.getpid(), proc) or Owner(os.getpid(), 0)
        self.maker = ProbeEventMaker(self.kind, pmus=pmus, tracefs=tracefs, owner=owner)
        self._taken: set[str] = set()  # tracefs event names used in this session
        self._prologues: PrologueCache | None = None
        self._pmu_noted = False

    # ------------------------------------------------------------------ plan

    @property
    def notes(self) -> list[str]:
        out = list(self._notes)
        if self._prologues is not None:
            programs, points = self._prologues.stats()
            out.append(
                f"{programs} program{'s' if programs != 1 else ''} served {points} probe "
                f"point{'s' if points != 1 else ''} (argument prologues)"
            )
        return out

    def plan(self, spec: ObjectSpec, prog: ProgramSpec, section: SectionSpec) -> ProgramAttach:
        target = section.target
        assert isinstance(target, ProbeTarget)
        try:
            if not self.maker.available:
                raise self.maker.missing_message(self.tracefs_root)
            self._check_settings(section, target)
            points = self._points(section, target)
            events = self._events(section, target, points, prog.name)
            prologues = self._prologue_bytes(target.args, points)
        except ObjectError as exc:
            raise _in_program(spec, prog, exc) from None
        return ProgramAttach(
            prog.name,
            int(section.program_type),
            events,
            deferred=bool(target.args),
            kind=section.attach,
            detail=ProbeDetail(points, prologues),
        )

    def _check_settings(self, section: SectionSpec, target: ProbeTarget) -> None:
        for setting in section.settings:
            if section.style is SectionStyle.LIBBPF:
                raise _setting_error(
                    f"setting '{setting.key}={setting.value}' does not apply to the libbpf-style section "
                    f"'{section.name}': exec=, module=, inlines= and force= go with perf's EVENT=PROBE "
                    f"sections",
                    setting,
                )
            if setting.key not in PROBE_SETTINGS:
                raise _setting_error(f"setting '{setting.key}=' does not apply to a {self.kind.value}", setting)
            if setting.key == "inlines" and section.inlines:
                raise _setting_error(
                    f"setting '{setting.key}={setting.value}' is not supported: probing inlined copies of "
                    f"'{target.point.function}' needs their DWARF inline information, which evspec does "
                    f"not read (it probes the out-of-line function, as inlines=no does)",
                    setting,
                )
        point = target.point
        if point.line is not None or point.file is not None:
            what = f"'{point.function}@{point.file}'" if point.function and point.file else "a source line"
            raise _setting_error(
                f"probe point {what} in '{section.name}' needs DWARF line information, which evspec does "
                f"not read: probe a function (FUNC, FUNC+OFF, FUNC%return) or an address (0xADDR)"
            )

    @abstractmethod
    def _points(self, section: SectionSpec, target: ProbeTarget) -> tuple[ProbePoint, ...]:
        """The probe points of the section's probe point (one per function a glob matches)."""

    def _events(
        self, section: SectionSpec, target: ProbeTarget, points: tuple[ProbePoint, ...], program: str
    ) -> tuple[ProbeEvent, ...]:
        perf_style = section.style is SectionStyle.PERF
        use_tracefs = self.maker.tracefs is not None
        if not use_tracefs and not self._pmu_noted:
            self._pmu_noted = True
            self._notes.append(
                f"{self.kind.events_file} cannot be used: probes are made with the {self.kind.value} PMU, "
                "one kernel probe per perf event, opened once per task (cpu -1) so that the program runs "
                "once per hit; the probe events themselves are not sampled"
            )
        events: list[ProbeEvent] = []
        first = ""
        for i, point in enumerate(points):
            if perf_style:
                # every point of one definition is shown as perf 6.1 shows it: GROUP:EVENT
                assert target.event_name is not None
                if i == 0:
                    first = self._claim(target.event_name, allow_suffix=section.force)
                event = first if i == 0 else self._claim(first, allow_suffix=True)
                name = f"{target.group or PERF_BPF_PROBE_GROUP}:{first}"
            else:
                name = self._libbpf_name(point)
                event = self._claim(_tracefs_name(name), allow_suffix=True)
            if use_tracefs:
                events.append(self.maker.via_tracefs(point.location, event, name))
                how = f"tracefs {self.maker.owner.group}/{event}"
            else:
                events.append(self.maker.via_pmu(point.location, name))
                how = f"{self.kind.value} PMU"
            self._notes.append(f"{name}: {point.location.describe()} ({how}) for program '{program}'")
        return tuple(events)

    def _libbpf_name(self, point: ProbePoint) -> str:
        loc = point.location
        kind = loc.kind.value.replace("probe", "retprobe") if loc.retprobe else loc.kind.value
        if point.function is None:
            return f"{kind}:{point.address if point.address is not None else loc.address or 0:#x}"
        return f"{kind}:{point.function}+{point.offset:#x}" if point.offset else f"{kind}:{point.function}"

    def _claim(self, base: str, *, allow_suffix: bool) -> str:
        """An event name not used yet in this session: ``base``, else (``allow_suffix``) the next
        free ``base_N``, else perf's "Probe point exist" error."""
        name = base
        if name in self._taken:
            if not allow_suffix:
                raise ObjectError(
                    codes.PROBE_EXISTS,
                    f"{self.kind.value} event '{base}' is created twice",
                    perf_message=PROBE_EXISTS_MESSAGE,
                    help=("add 'force=yes;' to the section to create it again under a new name "
                          f"({base}_1)",),
                )
            name = _suffixed(base, self._taken)
        self._taken.add(name)
        return name

    # -------------------------------------------------------------- prologues

    def _prologue_bytes(self, args: tuple[ProbeArg, ...], points: tuple[ProbePoint, ...]) -> tuple[bytes, ...]:
        """The argument prologue of each point, behind the recording's own-task filter."""
        if not args:
            return ()
        from evspec.loader.attach.prologue import build_prologue
        from evspec.loader.load.self_filter import prelude_for

        front = prelude_for(ProgType.KPROBE, self.options.skip_tgid)
        return tuple(
            front + build_prologue(
                args,
                binary=point.location.path,
                function=point.function,
                address=point.address,
                user=self.kind is ProbeKind.UPROBE,
                retprobe=point.location.retprobe,
            )
            for point in points
        )

    def program_fd(self, live: LiveObject, attach: ProgramAttach, event: ProbeEvent) -> int | None:
        if not attach.deferred:
            return None
        detail = attach.detail
        assert isinstance(detail, ProbeDetail)
        if self._prologues is None:
            from evspec.loader.attach.prologue import PrologueCache

            self._prologues = PrologueCache(self.kernel)
        index = next((i for i, e in enumerate(attach.events) if e is event), None)
        if index is None:
            index = attach.events.index(event)
        return self._prologues.program_fd(live, attach.program, attach.prog_type, detail.prologues[index])

    def attach_hooks(self, live: LiveObject, attach: ProgramAttach) -> None:
        """Nothing: probe programs are attached through their perf events only."""
        return None

    def close(self) -> None:
        """Close the prologue programs, remove the tracefs entries; the first failure last."""
        first: Exception | None = None
        if self._prologues is not None:
            try:
                self._prologues.close()
            except (ObjectError, OSError) as exc:
                first = exc
        try:
            self.maker.close()
        except ObjectError as exc:
            first = first or exc
        self._taken.clear()
        if first is not None:
            raise first


def _tracefs_name(name: str) -> str:
    """The tracefs event name of a libbpf-style probe called ``name`` (``uprobe:FUNC+0x4``):
    ``uprobe_FUNC_0x4``, cut so that a ``_N`` suffix still fits (equal cuts get ``_1``, ``_2`` ...)."""
    return _NOT_IDENT.sub("_", name)[: MAX_EVENT_NAME - len(f"_{MAX_SUFFIX}")]


def _suffixed(base: str, taken: set[str]) -> str:
    """perf-probe's next free name: ``BASE_1``, ``BASE_2`` ..."""
    for i in range(1, MAX_SUFFIX + 1):
        name = f"{base}_{i}"
        if len(name) > MAX_EVENT_NAME:
            raise ObjectError(
                codes.PROBE_NAME_TOO_LONG,
                f"event '{base}' needs a further name '{name}' (for another match of its glob, or "
                f"force=yes), which is {len(name)} characters long; a probe event name has at most "
                f"{MAX_EVENT_NAME}",
                perf_message=EVENT_NAME_TOO_LONG_MESSAGE,
                help=(f"shorten the event name to {MAX_EVENT_NAME - len(name) + len(base)} characters or fewer",),
            )
        if name not in taken:
            return name
    raise ObjectError(
        codes.PROBE_TOO_MANY, f"no free event name for '{base}' (tried {base}_1 ... {base}_{MAX_SUFFIX})"
    )


class UprobeAttacher(ProbeAttacher):
    """uprobes and uretprobes on functions (or addresses) of executables and shared libraries."""

    kind = ProbeKind.UPROBE

    def __init__(self, kernel: Kernel, options: AttachOptions, **kw: object) -> None:
        super().__init__(kernel, options, **kw)  # type: ignore[arg-type]
        self._symbols: dict[str, ElfSymbols] = {}

    def _elf(self, path: str) -> ElfSymbols:
        if path not in self._symbols:
            self._symbols[path] = read_elf_symbols(path)
        return self._symbols[path]

    def _check_settings(self, section: SectionSpec, target: ProbeTarget) -> None:
        super()._check_settings(section, target)
        if target.module is not None:
            raise _setting_error(f"module= names a kernel module and does not apply to the uprobe '{section.name}'")

    def _points(self, section: SectionSpec, target: ProbeTarget) -> tuple[ProbePoint, ...]:
        assert target.binary is not None
        path = os.path.abspath(target.binary)
        symbols = self._elf(path)
        point = target.point
        sites = uprobe_sites(symbols, point.function, offset=point.offset or 0, address=point.address)
        out: list[ProbePoint] = []
        for site in sites:
            if site.ifunc:
                self._notes.append(
                    f"'{site.function}' in {path} is an IFUNC: the probe is on its resolver, which runs "
                    "when the function is bound, not on every call"
                )
            location = ProbeLocation(ProbeKind.UPROBE, point.retprobe, path=path, offset=site.file_offset)
            out.append(ProbePoint(location, site.function, site.address, point.offset or 0))
        return tuple(out)


class KprobeAttacher(ProbeAttacher):
    """kprobes and kretprobes on kernel functions (``module=``: in a module), or addresses."""

    kind = ProbeKind.KPROBE

    def __init__(self, kernel: Kernel, options: AttachOptions, *, kallsyms: Path = Path("/proc/kallsyms"),
                 **kw: object) -> None:
        super().__init__(kernel, options, **kw)  # type: ignore[arg-type]
        self.kallsyms = kallsyms

    def _points(self, section: SectionSpec, target: ProbeTarget) -> tuple[ProbePoint, ...]:
        point = target.point
        if point.function is None:
            location = ProbeLocation(ProbeKind.KPROBE, point.retprobe, address=point.address)
            return (ProbePoint(location, None, None),)
        functions = (
            kernel_functions(self.kallsyms, point.function, target.module)
            if point.is_glob
            else (point.function,)
        )
        return tuple(
            ProbePoint(
                ProbeLocation(
                    ProbeKind.KPROBE,
                    point.retprobe,
                    symbol=f"{target.module}:{name}" if target.module else name,
                    offset=point.offset or 0,
                ),
                name,
                None,
                point.offset or 0,
            )
            for name in functions
        )


def kernel_functions(kallsyms: Path, pattern: str, module: str | None) -> tuple[str, ...]:
    """Kernel text symbols matching the glob ``pattern`` (in ``module`` only, when given), from a
    ``/proc/kallsyms``-format file, sorted, each once."""
    try:
        text = kallsyms.read_text()
    except OSError as exc:
        raise ObjectError(
            codes.PROBE_TARGET, f"cannot expand the kprobe glob '{pattern}': {kallsyms}: {exc.strerror or exc}"
        ) from None
    names: set[str] = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] not in ("t", "T"):
            continue
        in_module = parts[3].strip("[]") if len(parts) > 3 else None
        if in_module != module:
            continue
        if fnmatch.fnmatchcase(parts[2], pattern):
            names.add(parts[2])
    if not names:
        where = f"module {module}" if module else "the kernel"
        raise ObjectError(
            codes.PROBE_FUNCTION,
            f"no function of {where} matches '{pattern}' ({kallsyms})",
            perf_message=PROBE_CHECK_MESSAGE,
        )
    check_probe_count(pattern, len(names), "kernel functions")
    return tuple(sorted(names))


