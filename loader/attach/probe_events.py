"""Creating the perf event of one kprobe or uprobe point, and removing what evspec created.

Two ways, as the kernel offers them:

* **tracefs** ``uprobe_events`` / ``kprobe_events`` (the way perf 4.5-6.5 created the probes of BPF
  programs, and evspec's first choice): a line ``p:GROUP/EVENT PATH:0xOFF`` (``r:`` for a return
  probe; kprobes take ``[MOD:]SYM[+OFF]`` or ``0xADDR``) creates the event; its id in
  ``events/GROUP/EVENT/id`` makes it a PERF_TYPE_TRACEPOINT event; ``-:GROUP/EVENT`` removes it.
  All perf events opened on it share one kernel probe and one program array. The group evspec
  writes is ``evspec_<pid>_<start>_<pidns>`` (the process id, its start time in clock ticks since
  boot from ``/proc/PID/stat``, its pid namespace), so that a later run can tell whether the process
  that created an entry still lives (one in another pid namespace is left alone): ``sweep_stale`` removes the entries of dead owners (a run killed with SIGKILL).
* **the probe PMUs** (``/sys/bus/event_source/devices/uprobe`` and ``.../kprobe``, Linux 4.17+):
  ``perf_event_open`` with ``type`` = the PMU's type, the PMU's ``format/retprobe`` bit in
  ``config`` for a return probe, ``config1`` = a pointer to the NUL-terminated binary path (uprobe)
  or symbol name (kprobe), ``config2`` = the file offset (uprobe), the offset from the symbol, or
  with no symbol the kernel address (kprobe). Each such perf event is a kernel probe of its own
  (running the program attached to it), invisible in tracefs and removed by the kernel when the
  event is closed, so nothing can be left behind. The string buffers must stay alive until the
  events are open: ``ProbeEventMaker`` keeps them until ``close()``.

The files are written through a ``TracefsWriter`` (one ``write(2)`` per line, ``O_APPEND``: opening
the file truncating would delete every probe on the system); tests give a fake one that simulates
what the kernel does on a temporary directory (``probe_fake``).
"""

from __future__ import annotations

import ctypes
import errno as E
import os
import re
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Protocol

from evspec.loader.abi.perf_ids import PerfType
from evspec.loader.attach.attachment import ProbeEvent
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import KernelError

from evspec.codes import kernel as codes
from evspec.span import Slotted, value_field

DEFAULT_SYSFS_PMUS = Path("/sys/bus/event_source/devices")
DEFAULT_TRACEFS = Path("/sys/kernel/tracing")
OWNER_PREFIX = "evspec_"
PROBE_EXISTS_MESSAGE = "Probe point exist. Try 'perf probe -d \"*\"' and set 'force=yes'"
PROBE_CHECK_MESSAGE = "You need to check probing points in BPF file"

_ENTRY = re.compile(r"([pr])(?:\d*):([^/\s]+)/(\S+)\s+(\S+)")
_OWNER = re.compile(re.escape(OWNER_PREFIX) + r"(\d+)_(\d+)(?:_(\d+))?\Z")
_FORMAT = re.compile(r"config(\d?):(\d+)(?:-(\d+))?\Z")


class ProbeKind(str, Enum):
    UPROBE = "uprobe"
    KPROBE = "kprobe"

    @property
    def events_file(self) -> str:
        return f"{self.value}_events"


class ProbeLocation(Slotted):
    """Where one probe point goes, in the kernel's terms."""

    kind: ProbeKind
    retprobe: bool
    path: str | None = None  # uprobe: the absolute path of the binary
    symbol: str | None = None  # kprobe: FUNC or MOD:FUNC
    offset: int = 0  # uprobe: the file offset; kprobe: the offset from ``symbol``
    address: int | None = None  # kprobe without a symbol: the kernel address

    def tracefs_target(self) -> str:
        if self.kind is ProbeKind.UPROBE:
            return f"{self.path}:{self.offset:#x}"
        if self.symbol is None:
            return f"{self.address or 0:#x}"
        return f"{self.symbol}+{self.offset}" if self.offset else self.symbol

    def tracefs_line(self, group: str, event: str) -> str:
        return f"{'r' if self.retprobe else 'p'}:{group}/{event} {self.tracefs_target()}"

    def describe(self) -> str:
        return f"{self.kind.value.replace('probe', 'retprobe') if self.retprobe else self.kind.value} " \
            f"{self.tracefs_target()}"


# ---------------------------------------------------------------------------------------------
# the probe PMUs


class ProbePmu(Slotted):
    """A dynamic PMU (``uprobe``/``kprobe``): its perf type and the config bits of ``retprobe``."""

    name: str
    type: int
    retprobe_config: int  # the mask to OR into attr.config for a return probe

    @staticmethod
    def read(devices: Path, kind: ProbeKind) -> ProbePmu | None:
        base = devices / kind.value
        try:
            pmu_type = int((base / "type").read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            retprobe = format_mask((base / "format" / "retprobe").read_text().strip())
        except (OSError, ValueError):
            retprobe = 1  # the bit every kernel with these PMUs has used (config:0)
        return ProbePmu(kind.value, pmu_type, retprobe)


def format_mask(text: str) -> int:
    """``config:0`` → 0x1, ``config:32-63`` → the bits 32..63 (a PMU ``format/`` file)."""
    m = _FORMAT.match(text)
    if m is None or m.group(1):
        raise ValueError(f"not a config bit field: {text!r}")
    lo = int(m.group(2))
    hi = int(m.group(3) or lo)
    return ((1 << (hi - lo + 1)) - 1) << lo


# ---------------------------------------------------------------------------------------------
# tracefs


class TracefsWriter(Protocol):
    """The one operation on tracefs that the kernel interprets: appending a definition line."""

    def append(self, path: Path, line: str) -> None:
        """Write ``line`` + newline in one write(2); raises OSError with the kernel's errno."""
        ...


class KernelTracefsWriter:
    def append(self, path: Path, line: str) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)


class TracefsEntry(Slotted):
    """One line of ``uprobe_events``/``kprobe_events``."""

    kind: ProbeKind
    retprobe: bool
    group: str
    event: str
    target: str


class Tracefs(Slotted):
    """A mounted tracefs (or a test directory standing in for one)."""

    root: Path
    writer: TracefsWriter = value_field(default_factory=KernelTracefsWriter)

    def supports(self, kind: ProbeKind) -> bool:
        return (self.root / kind.events_file).exists()

    def entries(self, kind: ProbeKind) -> tuple[TracefsEntry, ...]:
        try:
            text = (self.root / kind.events_file).read_text()
        except FileNotFoundError:
            return ()
        out: list[TracefsEntry] = []
        for line in text.splitlines():
            m = _ENTRY.match(line.strip())
            if m is not None:
                out.append(TracefsEntry(kind, m.group(1) == "r", m.group(2), m.group(3), m.group(4)))
        return tuple(out)

    def add(self, location: ProbeLocation, group: str, event: str) -> None:
        self.writer.append(self.root / location.kind.events_file, location.tracefs_line(group, event))

    def remove(self, kind: ProbeKind, group: str, event: str) -> None:
        self.writer.append(self.root / kind.events_file, f"-:{group}/{event}")

    def event_id(self, group: str, event: str) -> int:
        return int((self.root / "events" / group / event / "id").read_text().strip())


def open_tracefs(
    root: Path = DEFAULT_TRACEFS,
    *,
    writer: TracefsWriter | None = None,
    mount: Callable[[Path], None] | None = None,
    notes: list[str] | None = None,
) -> Tracefs | None:
    """The tracefs at ``root``, mounted first when it is not (as root, with ``mount``; by default
    the real mount for the default root); None when there is none. What was done goes to ``notes``."""
    tracefs = Tracefs(root, writer or KernelTracefsWriter())
    if _readable_dir(root / "events"):
        return tracefs
    if mount is None and root == DEFAULT_TRACEFS and os.geteuid() == 0:
        from evspec.system.live import mount_tracefs

        mount = mount_tracefs
    if mount is None or not root.is_dir():
        return None
    try:
        mount(root)
    except OSError as exc:
        if notes is not None:
            notes.append(f"could not mount tracefs at {root}: {exc}")
        return None
    if notes is not None:
        notes.append(f"mounted tracefs at {root}")
    return tracefs if _readable_dir(root / "events") else None


def _readable_dir(path: Path) -> bool:
    """Whether ``path`` is a folder this process may list (not one under root's mode-0700 tracefs)."""
    try:
        return path.is_dir() and os.access(path, os.R_OK | os.X_OK)
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# owners of tracefs entries


class Owner(Slotted):
    """The process that created a tracefs entry: its pid, start time (clock ticks since boot) and
    pid namespace (the inode of ``/proc/PID/ns/pid``; None in groups that do not name one).

    tracefs is one for the whole machine, while pids are per pid namespace: an evspec in a
    container may own entries whose pid means nothing (or another process) here, so entries of
    another pid namespace are never taken for stale."""

    pid: int
    start: int
    pidns: int | None = None

    @property
    def group(self) -> str:
        ns = f"_{self.pidns}" if self.pidns is not None else ""
        return f"{OWNER_PREFIX}{self.pid}_{self.start}{ns}"

    @staticmethod
    def parse(group: str) -> Owner | None:
        m = _OWNER.match(group)
        if m is None:
            return None
        return Owner(int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None)

    @staticmethod
    def of(pid: int, proc: Path = Path("/proc")) -> Owner | None:
        start = process_start(pid, proc)
        return None if start is None else Owner(pid, start, pid_namespace(str(pid), proc))

    def alive(self, proc: Path = Path("/proc")) -> bool:
        """Whether this very process may still run: it does (a reused pid has another start
        time), or it is in another pid namespace, where this one cannot look."""
        if self.pidns is not None and pid_namespace("self", proc) != self.pidns:
            return True
        return process_start(self.pid, proc) == self.start


def pid_namespace(pid: str, proc: Path = Path("/proc")) -> int | None:
    """The inode of ``/proc/PID/ns/pid`` (``self``: this process's); None when it cannot be read."""
    try:
        return (proc / pid / "ns" / "pid").stat().st_ino
    except OSError:
        return None


def errno_text(err: int | None) -> str:
    """``No such file or directory (ENOENT)``: what a refused tracefs write says in messages."""
    err = err or 0
    return f"{os.strerror(err)} ({E.errorcode.get(err, str(err))})"


def process_start(pid: int, proc: Path = Path("/proc")) -> int | None:
    """Field 22 (starttime) of ``/proc/PID/stat``: with the pid, what tells a process from a later
    one that got its pid (the owners of tracefs entries here, of network-hook ledgers in
    ``attach.net``); None if there is no such process, or it has exited and waits to be reaped (a
    zombie, state Z or X: what a killed run is under a container init that reaps late or never)."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces and ')'
    rest = stat[stat.rindex(")") + 2 :].split()
    if rest[0] in ("Z", "X"):
        return None
    return int(rest[19])


def sweep_stale(
    tracefs: Tracefs, kinds: tuple[ProbeKind, ...] = tuple(ProbeKind), proc: Path = Path("/proc")
) -> tuple[list[str], list[str]]:
    """Remove the entries (of ``kinds``) that evspec processes which are gone left behind.

    Returns (removed ``GROUP/EVENT`` names, notes about entries that could not be removed)."""
    removed: list[str] = []
    problems: list[str] = []
    for kind in kinds:
        for entry in tracefs.entries(kind):
            owner = Owner.parse(entry.group)
            if owner is None or owner.alive(proc):
                continue
            try:
                tracefs.remove(kind, entry.group, entry.event)
            except OSError as exc:
                if exc.errno == E.ENOENT:
                    continue  # another evspec starting at the same time swept it first
                problems.append(
                    f"could not remove the stale {kind.value} event {entry.group}/{entry.event} of "
                    f"process {owner.pid}: {errno_text(exc.errno)}"
                )
            else:
                removed.append(f"{entry.group}/{entry.event}")
    return removed, problems


def sweep_dead_runs(
    root: Path = DEFAULT_TRACEFS, *, writer: TracefsWriter | None = None, proc: Path = Path("/proc")
) -> tuple[list[str], list[str]]:
    """What every recording does first, whatever it attaches: remove the probe entries (of every
    kind) that evspec runs which are gone left in the tracefs at ``root``. A tracefs that is not
    mounted, or whose probe files this user may not write, is left alone (nothing is mounted for
    this: entries exist only where a run could write them).

    Returns (notes for ``-v``, warnings about entries that could not be removed)."""
    tracefs = Tracefs(root, writer or KernelTracefsWriter())
    notes: list[str] = []
    warnings: list[str] = []
    for kind in ProbeKind:
        if not os.access(root / kind.events_file, os.R_OK | os.W_OK):
            continue
        try:
            removed, problems = sweep_stale(tracefs, (kind,), proc)
        except OSError as exc:
            warnings.append(f"could not look for the {kind.value} events of evspec runs that are gone in "
                            f"{root / kind.events_file}: {errno_text(exc.errno)}")
            continue
        if removed:
            notes.append(f"removed {len(removed)} stale {kind.value} event(s) of evspec runs that are gone: "
                         f"{', '.join(removed)}")
        warnings.extend(problems)
    return notes, warnings


# ---------------------------------------------------------------------------------------------
# making the events


class _Created(Slotted):
    kind: ProbeKind
    group: str
    event: str


class ProbeEventMaker:
    """Makes the perf events of probe points for one recording session and owns what it made:
    PMU string buffers, tracefs entries (removed by ``close()``)."""

    def __init__(
        self,
        kind: ProbeKind,
        *,
        pmus: Path = DEFAULT_SYSFS_PMUS,
        tracefs: Tracefs | None,
        owner: Owner,
    ) -> None:
        self.kind = kind
        self.pmu = ProbePmu.read(pmus, kind)
        self.tracefs = tracefs if tracefs is not None and tracefs.supports(kind) else None
        self.owner = owner
        self.pmus = pmus
        self._buffers: list[ctypes.Array[ctypes.c_char]] = []
        self._created: list[_Created] = []

    @property
    def available(self) -> bool:
        return self.pmu is not None or self.tracefs is not None

    def missing_message(self, tracefs_root: Path) -> ObjectError:
        """The error for a kernel that can create neither kind of event."""
        config = "CONFIG_KPROBE_EVENTS" if self.kind is ProbeKind.KPROBE else "CONFIG_UPROBE_EVENTS"
        return ObjectError(
            codes.NO_KPROBES if self.kind is ProbeKind.KPROBE else codes.NO_UPROBES,
            f"this kernel has no {self.kind.value} support: neither {self.pmus / self.kind.value} nor "
            f"{tracefs_root / self.kind.events_file} exists ({config})",
            perf_message=PROBE_CHECK_MESSAGE,
            help=(f"a kernel built with {config}=y has both (Linux 4.17+ for the PMU)",),
        )

    @property
    def created(self) -> tuple[str, ...]:
        """``GROUP/EVENT`` of every tracefs entry made and not yet removed."""
        return tuple(f"{c.group}/{c.event}" for c in self._created)

    def via_pmu(self, location: ProbeLocation, name: str) -> ProbeEvent:
        """The event ``name`` of ``location`` on the probe PMU (which must exist)."""
        assert self.pmu is not None and location.kind is self.kind
        values = {"type": self.pmu.type, "config": self.pmu.retprobe_config if location.retprobe else 0}
        text = location.path if location.kind is ProbeKind.UPROBE else location.symbol
        if text is None:  # a kprobe at a kernel address
            values["config1"] = 0
            values["config2"] = location.address or 0
        else:
            buf = ctypes.create_string_buffer(text.encode())
            self._buffers.append(buf)
            values["config1"] = ctypes.addressof(buf)
            values["config2"] = location.offset
        return ProbeEvent(name, values, one_per_task=True)

    def via_tracefs(self, location: ProbeLocation, event: str, name: str) -> ProbeEvent:
        """Create the tracefs entry ``OWNER_GROUP/event`` (the tracefs must support the kind);
        returns the tracepoint event carrying it, called ``name``."""
        assert self.tracefs is not None and location.kind is self.kind
        group = self.owner.group
        if location.path is not None and any(c.isspace() for c in location.path):
            raise ObjectError(
                codes.PROBE_CREATE,
                f"tracefs {self.kind.events_file} cannot take the path '{location.path}': it has blanks",
                help=("probe a path without blanks (a symbolic link to the binary will do)",),
            )
        try:
            self.tracefs.add(location, group, event)
        except OSError as exc:
            raise self._create_error(location, group, event, exc) from None
        self._created.append(_Created(self.kind, group, event))
        try:
            tp_id = self.tracefs.event_id(group, event)
        except (OSError, ValueError) as exc:
            raise ObjectError(
                codes.PROBE_CREATE,
                f"{self.kind.value} event {group}/{event} was created but its id cannot be read: {exc}",
            ) from None
        return ProbeEvent(name, {"type": int(PerfType.TRACEPOINT), "config": tp_id}, tracefs=f"{group}:{event}")

    def _create_error(self, location: ProbeLocation, group: str, name: str, exc: OSError) -> ObjectError:
        err = exc.errno or 0
        line = location.tracefs_line(group, name)
        assert self.tracefs is not None
        where = self.tracefs.root / self.kind.events_file
        why = {
            E.ENOENT: "the kernel cannot find the probe target",
            E.EINVAL: "the kernel refused the definition",
            E.EEXIST: "an event of that name exists",
            E.EACCES: "permission denied (evspec needs root)",
            E.EPERM: "not permitted (evspec needs root; kernel lockdown may forbid probes)",
        }.get(err, "the kernel refused it")
        return ObjectError(
            codes.PROBE_EXISTS if err == E.EEXIST else codes.PROBE_CREATE,
            f"cannot create {self.kind.value} event '{line}' in {where}: {why} ({E.errorcode.get(err, str(err))})",
            perf_message=PROBE_EXISTS_MESSAGE if err == E.EEXIST else PROBE_CHECK_MESSAGE,
            help=("see the kernel's reason in " + str(self.tracefs.root / "error_log"),)
            if (self.tracefs.root / "error_log").exists()
            else (),
        )

    def close(self) -> None:
        """Remove every tracefs entry made (newest first) and drop the PMU buffers; the first
        failure (a KernelError: the kernel refused the write) is raised after all were tried."""
        first: KernelError | None = None
        while self._created:
            entry = self._created.pop()
            assert self.tracefs is not None
            try:
                self.tracefs.remove(entry.kind, entry.group, entry.event)
            except OSError as exc:
                if exc.errno != E.ENOENT:  # someone removed it already, or tracefs is gone
                    first = first or KernelError(
                        codes.PROBE_REMOVE,
                        f"cannot remove {entry.kind.value} event {entry.group}/{entry.event}: "
                        f"{errno_text(exc.errno)}",
                        errno=exc.errno,
                        operation=f"write {entry.kind.events_file}",
                        help=(f"remove it by hand: echo '-:{entry.group}/{entry.event}' >> "
                              f"{self.tracefs.root / entry.kind.events_file}",),
                    )
        self._buffers.clear()
        if first is not None:
            raise first
