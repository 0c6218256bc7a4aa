"""A recording session: event plan → live objects → opened events → attached programs → ring
buffers read while the workload runs → everything closed.

``RecordSession.prepare`` does all the setup (and undoes what it did if a step fails),
``start`` enables the events that are not enabled by the workload's exec, ``run`` reads the rings
in this process until the workload exits or a stop is requested (capture mode), ``run_live``
hands them to the drain process and prints behind it (``loader.output.drain``, ``.follow``),
``close`` releases every descriptor and mapping. ``Workload`` is the forked command, held before
``exec`` until the events are ready.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import struct
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from evspec.loader.abi.perf import PerfEventAttr
from evspec.loader.abi.perf_bits import AttrFlag, SampleType
from evspec.loader.abi.perf_ids import PERF_ATTR_SIZE_VER7, PerfType, SwConfig
from evspec.loader.attach.attacher import Attacher, attach_program, program_types
from evspec.loader.attach.attachment import AttachOptions, ProbeEvent, ProgramAttach
from evspec.loader.btf.reader import BtfError
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError, RingMapping
from evspec.loader.lint.terms.bpf_stdout import (
    STDOUT_MAP,
    StdoutPlan,
    name_clashes,
    plan_outputs,
    typing_text,
)
from evspec.loader.lint.terms.maps import MapUpdate, plan_map_updates, record_types
from evspec.loader.lint.terms.output_types import RecordType
from evspec.loader.load.apply import EventInstances, apply_updates
from evspec.loader.load.live import LiveObject, load_object, possible_cpus
from evspec.loader.object.spec import MapType, ObjectSpec, ProgType
from evspec.loader.output.bpf_ringbuf import BpfRingReader
from evspec.loader.output.live.drain import DrainPlan, DrainProcess, favour_reader, run_rounds
from evspec.loader.output.live.follow import BpfSource, FollowCounts, Follower, Line
from evspec.loader.output.live.samples import RingDecoder
from evspec.loader.output.live.spool import BPF, PERF, Frame, Spool, SpoolStats
from evspec.loader.output.perf_ring import LostCount, PerfRing
from evspec.loader.output.printfmt import kernel_symbols
from evspec.loader.output.saved.perfdata import FileAttr
from evspec.loader.output.saved.ringbuf_capture import RING_ID_BASE, ring_event_attr
from evspec.loader.output.saved.typed_capture import TypedOutput, btf_file_id, is_bpf_output, output_file_attr
from evspec.loader.output.script import LostLine, RingRecordLine, SampleLine, SampleRun
from evspec.loader.output.tracefs_format import TracepointDecoders
from evspec.loader.output.typed import RecordDecoder, TypedDecoders

from evspec.ast import BpfEvent, Event, EventList
from evspec.codes.kernel import NO_EVENT_FOR_MAP as NO_EVENT_FOR_PROGRAM
from evspec.codes.kernel import OBJECT, PAST_THE_RECORD, UNSAMPLED_EVENT, WORKLOAD
from evspec.cpus import format_cpu_list, parse_cpu_list
from evspec.diagnostics import EvspecError, Source
from evspec.references import program_event_name
from evspec.span import Slotted, value_field
from evspec.system.model import System

if TYPE_CHECKING:
    from typing import Protocol

    from evspec.loader.object.map_dump import MapDump

    class CompiledRecording(Protocol):
        """What ``prepare`` reads of the front end's compiled recording
        (``evspec.compiler.recording.RecordingPlan``; the loader imports no compiler)."""

        @property
        def plan(self) -> _CompiledPlan: ...
        @property
        def stdout_events(self) -> Sequence[object]: ...
        def output_events(self, names: Sequence[str]) -> Sequence[object]: ...

    class _CompiledPlan(Protocol):
        @property
        def events(self) -> Sequence[object]: ...
        @property
        def bpf(self) -> Sequence[_BpfReference]: ...

    class _BpfReference(Protocol):
        @property
        def spec_index(self) -> int: ...
        @property
        def event(self) -> BpfEvent: ...

CODE_WORKLOAD = WORKLOAD
CODE_OBJECT = OBJECT

# IDENTIFIER first in every sample and at the end of every other record (sample_id_all): what maps
# a record to its event in a capture file, for perf as for us. IP only because perf script refuses
# a software event without it (it wants to print a symbol).
SAMPLE_TYPE = (
    SampleType.IDENTIFIER
    | SampleType.IP
    | SampleType.TID
    | SampleType.TIME
    | SampleType.CPU
    | SampleType.PERIOD
    | SampleType.RAW
)
TRACKING_SAMPLE_TYPE = SampleType.IDENTIFIER | SampleType.IP | SampleType.TID | SampleType.TIME | SampleType.CPU
_TRACKING_BITS = ("mmap", "comm", "task", "mmap2", "comm_exec", "ksymbol", "bpf_event", "mmap_data")
_ATTR_UNIONS = {"sample_freq": "sample_period", "bp_addr": "config1", "bp_len": "config2"}
_OWN_EVENT_HELP = ("give each typed map a bpf-output event of its own "
                   "(bpf-output/no-inherit,name=NAME/ and map:MAP.event=NAME)",)
RING_BYTES = 4 << 20  # a ring's data when -m does not say (bench/loss_bench.py --pages measures)
EVENT_RING_BYTES = 64 << 20  # at most across the CPUs of one event: more CPUs, smaller rings
MIN_RING_BYTES = 512 << 10  # but never less than perf record's default (-m 128)
TRACKING_PAGES = 64  # the tracking event's rings: task records are few
DEFAULT_MAX_MEMORY = 64 << 20  # live mode: the spool's memory, beyond which it goes to a file


class RecordOptions(Slotted):
    """``-i``, ``-a``, ``-C``, ``-p``, the ring size and ``--dev``."""

    no_inherit: bool = False
    system_wide: bool = False
    cpus: tuple[int, ...] | None = None
    pid: int | None = None
    ring_pages: int | None = None  # -m: data pages a ring (None: default_ring_pages)
    dev: str | None = None  # network interface for xdp/tc programs that name none
    pin_root: str | None = None  # where LIBBPF_PIN_BY_NAME maps are pinned (None: /sys/fs/bpf)
    wakeup_fraction: int = 4  # the reader is woken when 1/N of a ring is full (0: every sample)
    max_memory: int = DEFAULT_MAX_MEMORY  # live mode: ring bytes waiting to be rendered kept in memory
    drain_process: bool = False  # live mode: a process of its own reads the rings (run_live)
    clang_opts: tuple[str, ...] = ()  # --clang-opt: for clang when a BPF source is compiled

    @property
    def events_inherit(self) -> bool:
        """Whether the events will follow a workload's new children (``Target.inherits`` of the
        target these options make): not with -i, -a, -C or -p."""
        return not (self.no_inherit or self.system_wide or self.cpus is not None or self.pid is not None)


def default_ring_pages(cpus: int, page_size: int) -> int:
    """The data pages of each ring when -m does not say: RING_BYTES, less when the rings of an
    event on ``cpus`` CPUs would take more than EVENT_RING_BYTES, never less than MIN_RING_BYTES;
    a power of two."""
    size = max(MIN_RING_BYTES, min(RING_BYTES, EVENT_RING_BYTES // max(cpus, 1)))
    pages = max(size // page_size, 1)
    return 1 << (pages.bit_length() - 1)


def online_cpus(path: str = "/sys/devices/system/cpu/online") -> tuple[int, ...]:
    return parse_cpu_list(Path(path).read_text())


def task_threads(pid: int) -> tuple[int, ...]:
    try:
        return tuple(sorted(int(t) for t in os.listdir(f"/proc/{pid}/task")))
    except OSError as exc:
        raise ObjectError(CODE_WORKLOAD, f"process {pid} does not exist ({exc.strerror})") from None


def perf_attr(values: dict[str, int]) -> PerfEventAttr:
    """A ctypes ``perf_event_attr`` from the compiler's field names (flags by name)."""
    attr = PerfEventAttr()
    flags = 0
    for name, value in values.items():
        flag = AttrFlag.__members__.get(name.upper())
        if flag is not None:
            flags |= int(flag) if value else 0
        elif name == "precise_ip":
            flags |= value << 15
        else:
            setattr(attr, _ATTR_UNIONS.get(name, name), value)
    attr.flags = flags
    attr.size = PERF_ATTR_SIZE_VER7
    return attr


class Target(Slotted):
    """Where events are opened: CPUs (-1: any) × tasks (-1: all); ``on_exec``: the workload's exec
    enables them."""

    cpus: tuple[int, ...]
    pids: tuple[int, ...]
    on_exec: bool

    def inherits(self, options: RecordOptions) -> bool:
        """Whether events follow new children: not with -i, not system-wide (pid -1), and not per
        task on any CPU (-p), whose rings the kernel refuses to map for inherited events."""
        return not options.no_inherit and -1 not in self.pids and -1 not in self.cpus

    @staticmethod
    def of(options: RecordOptions, workload_pid: int | None) -> Target:
        if options.pid is not None:
            return Target((-1,), task_threads(options.pid), False)
        if options.system_wide or options.cpus is not None:
            return Target(options.cpus or online_cpus(), (-1,), False)
        if workload_pid is None:
            raise ObjectError(CODE_WORKLOAD, "nothing to record: give a command, -p PID, -a or -C")
        return Target(online_cpus(), (workload_pid,), True)


def _events_before(lists: Sequence[EventList], spec_index: int, event: BpfEvent) -> list[tuple[Event, str]]:
    """The events of a command before ``event`` (of string ``spec_index``), each with its string's
    text: what a ``prog:NAME.event=`` term of ``event`` may name."""
    out: list[tuple[Event, str]] = []
    for events in lists[:spec_index + 1]:
        for earlier in events.events():
            if earlier is event:
                return out
            out.append((earlier, events.source))
    return out


class OpenedEvent(Slotted, frozen=False):
    """One evsel: ``fds[t][c]`` for thread ``t`` and CPU slot ``c``; rings when it samples."""

    name: str
    attr: PerfEventAttr
    sampling: bool
    tracking: bool = False
    cpus: tuple[int, ...] | None = None  # the CPU slots of each row; None: the target's
    tracefs: str | None = None  # a tracepoint event's SYSTEM:EVENT in tracefs (its format's)
    fds: list[list[int]] = value_field(default_factory=list)
    ids: list[int] = value_field(default_factory=list)  # PERF_EVENT_IOC_ID of each fd, in all_fds() order
    rings: list[tuple[int, PerfRing]] = value_field(default_factory=list)  # (cpu, ring)

    def all_fds(self) -> list[int]:
        return [fd for row in self.fds for fd in row]

    def instances(self) -> EventInstances:
        return EventInstances(
            self.name,
            self.attr.type,
            self.attr.config,
            bool(self.attr.flags & AttrFlag.INHERIT),
            len(self.fds),
            tuple(self.fds[0]) if self.fds else (),
        )


class ProbeSharing(Slotted):
    """Probe programs with argument prologues: how many programs served how many probe points
    (points with equal prologues share one program)."""

    programs: int
    points: int


class LoadedObject(Slotted):
    path: str
    live: LiveObject
    attachments: tuple[ProgramAttach, ...]
    updates: tuple[MapUpdate, ...]
    spec_index: int
    programs_on_events: tuple[tuple[str, str], ...] = ()  # prog:NAME.event=EVENT terms: (NAME, EVENT)


def read_bpf_object(path: str, is_source: bool, cwd: Path, clang_opts: Sequence[str] = ()) -> ObjectSpec:
    """The object ``path`` names (a source is compiled, with ``clang_opts``); messages name
    ``path`` as the user wrote it, not the compile cache's object."""
    from evspec.loader.object.clang import compile_source
    from evspec.loader.object.reader import read_object

    from evspec.span import replace

    full = cwd / path
    if not is_source:
        return read_object(full)
    return replace(read_object(compile_source(full, extra_flags=clang_opts)), path=path)


class Workload:
    """``argv`` forked and held before ``exec`` until ``start()``; its exec enables the events."""

    def __init__(self, argv: Sequence[str]) -> None:
        if not argv:
            raise ObjectError(CODE_WORKLOAD, "no command to run")
        self.argv = list(argv)
        go_r, self._go = os.pipe()
        self._err, err_w = os.pipe2(os.O_CLOEXEC)
        self.pid = os.fork()
        if self.pid == 0:  # the child: wait for the go, then exec (or report why it cannot)
            try:
                os.close(self._go)
                os.close(self._err)
                signal.signal(signal.SIGPIPE, signal.SIG_DFL)
                if os.read(go_r, 1) == b"g":
                    os.close(go_r)
                    os.execvp(self.argv[0], self.argv)
            except OSError as exc:
                os.write(err_w, struct.pack("=i", exc.errno or 0))
            finally:
                os._exit(127)
        os.close(go_r)
        os.close(err_w)
        self.pidfd = os.pidfd_open(self.pid)
        self.status: int | None = None

    def start(self) -> None:
        """Let the child exec; raises ObjectError if the command cannot be run."""
        os.write(self._go, b"g")
        os.close(self._go)
        self._go = -1
        data = os.read(self._err, 4)
        os.close(self._err)
        self._err = -1
        if data:
            (err,) = struct.unpack("=i", data)
            self.wait()
            raise ObjectError(CODE_WORKLOAD, f"cannot run '{self.argv[0]}': {os.strerror(err)}")

    def signal(self, signo: int) -> None:
        if self.status is None:
            try:
                os.kill(self.pid, signo)
            except ProcessLookupError:
                pass

    def exited(self) -> bool:
        return self.status is not None or bool(select.select([self.pidfd], [], [], 0)[0])

    def wait(self) -> int:
        """Reap the child; its exit status (128 + signal number when a signal ended it)."""
        if self.status is None:
            _, raw = os.waitpid(self.pid, 0)
            code = os.waitstatus_to_exitcode(raw)
            self.status = code if code >= 0 else 128 - code
        return self.status

    def close(self) -> None:
        """Kill a child that never ran and release the descriptors."""
        if self._go >= 0:
            os.close(self._go)  # the child reads EOF and exits
            self._go = -1
        if self._err >= 0:
            os.close(self._err)
            self._err = -1
        if self.status is None:
            self.wait()
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1


class RecordSession:
    """The live state of one ``evspec record``; a context manager that closes everything."""

    def __init__(self, kernel: Kernel | None = None, options: RecordOptions | None = None) -> None:
        self.kernel = kernel or Kernel()
        self.options = options or RecordOptions()
        self.objects: list[LoadedObject] = []
        self.events: list[OpenedEvent] = []
        self.notes: list[str] = []
        self.notices: list[str] = []  # what record says of the recording even without -v, not a warning
        self._warnings: list[str] = []  # what record says of the plan even without -v
        self.closing_notes: list[str] = []  # the attachers' notes about detaching, after close()
        self.decoders = TracepointDecoders(resolve=kernel_symbols())
        self.samples = 0  # records rendered (live mode)
        self.lost_reported = 0  # the sum of the PERF_RECORD_LOST counts read (live mode)
        self.unprinted = 0  # records left when printing was stopped early
        self.discarded = 0  # ring buffer records their programs discarded (live mode)
        self.spool_stats: SpoolStats | None = None  # what the spool held (live mode)
        self._ring_pages: int | None = None
        self._drain: DrainProcess | None = None  # live mode's drain process, forked by prepare()
        self._spool: Spool | None = None
        self._reader: Follower | None = None  # drain()'s
        self._handler: Callable[[SampleLine | LostLine | RingRecordLine], None] = lambda _: None
        self.lost_counted: int | None = None  # the events' own counts (PERF_FORMAT_LOST), after run()
        self.lost_counts: tuple[LostCount, ...] = ()  # the same per event instance
        self.probe_sharing: ProbeSharing | None = None
        self._lost_readable = False
        self._closed = False
        self._attacher: Attacher | None = None
        self._carriers: list[tuple[LoadedObject, ProgramAttach, ProbeEvent, OpenedEvent]] = []
        self.bpf_rings: list[BpfRingReader] = []  # every BPF_MAP_TYPE_RINGBUF map of the objects
        self._typed_rings: dict[int, RecordDecoder] = {}  # id(reader) -> its map's map:NAME.type
        self._ring_btf: dict[int, int] = {}  # id(reader) of a typed ring -> its object's index
        self.typed_events = TypedDecoders()  # bpf-output event name -> its map's map:NAME.type
        self._typed_outputs: dict[str, TypedOutput] = {}  # the same, with the map and its object
        self._record_types: list[dict[str, str]] = []  # per object: map name -> TYPE
        self._outputs = StdoutPlan((), False)  # the automatic output events and the records' types

    @property
    def lost(self) -> int:
        """Samples lost: the events' own counts when the kernel keeps them (exact), else the sum
        of the PERF_RECORD_LOST records (which miss drops after the last record that fitted)."""
        return self.lost_reported if self.lost_counted is None else self.lost_counted

    def summary(self) -> dict[str, int]:
        """Samples and losses (both counts of losses where they differ), and the probe programs'
        sharing, for ``record``'s last words."""
        out = {"samples": self.samples, "lost": self.lost}
        if self.discarded:
            out["ringbuf_discarded"] = self.discarded
        if self.unprinted:
            out["not_printed"] = self.unprinted
        if self.lost_counted is not None and self.lost_counted != self.lost_reported:
            out["lost_reported"] = self.lost_reported
        if self.probe_sharing is not None:
            out["probe_programs"] = self.probe_sharing.programs
            out["probe_points"] = self.probe_sharing.points
        return out

    @property
    def warnings(self) -> list[str]:
        """What ``record`` says even without ``-v``: what each object was loaded without (BTF,
        func/line info, map key/value types: the loader's fallbacks), perf event arrays nothing
        reads, and what was left undone (a stale tracefs entry or network hook of a dead run that
        could not be removed)."""
        out = [*self._warnings, *(w for obj in self.objects for w in obj.live.warnings)]
        return out + (self._attacher.warnings if self._attacher is not None else [])

    def all_notes(self) -> list[str]:
        """What ``record -v`` says: the system's and attachers' notes from setup, each object's
        (BTF, func/line info), the kernel's (fields it lacks) and the tracepoint decoders'."""
        notes = list(self.notes)
        for obj in self.objects:
            notes.extend(obj.live.notes)
        notes.extend(self.kernel.notes)
        notes.extend(self.decoders.notes)
        return notes

    # ------------------------------------------------------------------ setup

    def prepare(
        self, lists: Sequence[EventList], compiled: CompiledRecording, system: System | None, cwd: Path,
        workload: Workload | None,
    ) -> None:
        """Load, open, attach and apply what ``compiled`` (the events of ``lists``, compiled by
        ``evspec.compiler.recording``) plans; on failure everything made so far is closed."""
        try:
            self._sweep_dead_runs()
            plan = compiled.plan
            tp_ids = system.tracepoint_id if system is not None else _no_tracepoints
            own = self._start_drain()
            self._attacher = Attacher(self.kernel, AttachOptions(tp_ids, dev=self.options.dev, skip_tgid=own))
            specs: list[tuple[ObjectSpec, list[MapUpdate]]] = []
            pin_paths: list[dict[str, str]] = []
            for ref in plan.bpf:
                spec = _with_var_terms(ref.event, read_bpf_object(ref.event.path, ref.event.is_source, cwd,
                                                                   self.options.clang_opts),
                                       lists[ref.spec_index], ref.spec_index)
                spec, pins, chosen = _with_settings(ref.event, spec, lists[ref.spec_index], ref.spec_index)
                spec = self._choose_alternatives(spec, chosen)
                pin_paths.append(pins)
                specs.append((spec, _map_updates(ref.event, spec, lists[ref.spec_index], ref.spec_index)))
            stdout = self._outputs = plan_outputs(specs)
            clashes = name_clashes(stdout, {ev.name: f"'{ev.name}' of -e #{ev.spec_index + 1}"  # type: ignore[attr-defined]
                                            for ev in reversed(plan.events)})
            if clashes:
                raise ObjectError(CODE_OBJECT, clashes[0])
            for ref, (spec, _), updates, pinned in zip(plan.bpf, specs, stdout.updates, pin_paths, strict=True):
                attachments = self._attacher.plan(spec)
                deferred = {a.program for a in attachments if a.deferred}
                pins = {} if self.options.pin_root is None else {"pin_root": self.options.pin_root}
                live = load_object(spec, program_types(attachments), kernel=self.kernel, deferred=deferred,
                                   expected_attach_types={a.program: a.expected_attach_type for a in attachments},
                                   attach_btf_ids={a.program: a.attach_btf_id for a in attachments},
                                   skip_tgid=own, pin_paths=pinned, **pins)
                earlier = _events_before(lists, ref.spec_index, ref.event)
                on_events = tuple((t.prog_name, program_event_name(t.value.text, earlier) or t.value.text)
                                  for t in ref.event.prog_terms if t.value is not None and t.option == "event")
                self.objects.append(LoadedObject(spec.path, live, attachments, updates, ref.spec_index, on_events))
                self._record_types.append(record_types(ref.event, spec))
            if system is not None and hasattr(system, "notes"):
                self.notes.extend(system.notes)
            auto = [*(compiled.stdout_events if stdout.create_event else ()),
                    *compiled.output_events([o.event for o in stdout.outputs])]
            self.notes.extend(o.describe() for o in stdout.outputs)
            target = Target.of(self.options, workload.pid if workload else None)
            self._lost_readable = self.kernel.lost_count_readable()
            _refuse_unsampled(plan.events, self._fed_to_programs())
            self._open_all(plan.events, auto, target)
            self._attach()
            self._attach_perf_event_programs()
            self.notes.extend(self._attacher.notes)
            self._apply()
            self._map_rings()
            self._map_bpf_rings()
            self._type_records()
        except BaseException:
            self._warnings.extend(self.unpin_created())
            self.close()
            raise

    def _choose_alternatives(self, spec: ObjectSpec, fixed: frozenset[str]) -> ObjectSpec:
        """The object with one program of each group of alternatives, the first this kernel can
        attach (``lint.alternatives``); which, for ``-v``."""
        from evspec.loader.attach.can_attach import AttachCheck
        from evspec.loader.lint.alternatives import choose

        assert self._attacher is not None
        with AttachCheck(self.kernel, self._attacher.options, spec) as can_attach:
            chosen = choose(spec, can_attach, fixed)
        self.notes.extend(chosen.notes)
        return chosen.spec

    def _start_drain(self) -> tuple[int, ...]:
        """Fork the drain process of ``run_live`` if the options want one (before any program is
        loaded: their prelude must leave it out too); the tgids the programs skip."""
        if self.options.drain_process and self._drain is None:
            self._spool = Spool(self.options.max_memory)
            self._drain = DrainProcess(self._spool, self.kernel)
            self._drain.start()
        return self._own_pids()

    def _own_pids(self) -> tuple[int, ...]:
        """evspec's processes: this one, and the drain's."""
        return (os.getpid(), *((self._drain.pid,) if self._drain is not None else ()))

    def unpin_created(self) -> list[str]:
        """Remove the pins of the maps this session pinned (not of those it found pinned and
        reused): what a set-up that failed or was stopped before anything ran undoes, as libbpf
        unpins what a failed load pinned. Returns a warning for each pin that stays."""
        problems = []
        for obj in self.objects:
            for path in obj.live.pinned_here:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    problems.append(f"could not remove the pin {path} this run made: {exc.strerror}")
            obj.live.pinned_here.clear()
        return problems

    def _sweep_dead_runs(self) -> None:
        """The probe entries of evspec runs killed before they could remove them, removed by the
        next run whatever it attaches."""
        from evspec.loader.attach.probe_events import sweep_dead_runs

        notes, warnings = sweep_dead_runs()
        self.notes.extend(notes)
        self._warnings.extend(warnings)

    def _event(self, name: str, values: dict[str, int], *, sampling: bool, target: Target,
               own_period: bool = False) -> OpenedEvent:
        """``own_period``: the period or frequency stays as the event string set it (a plain
        tracepoint sampled as perf record samples it; an event carrying a perf_event program,
        which runs when it overflows). Every event has the samples' sample_type, counters too: a
        capture file's events must agree on where a record's id is (perf script refuses others)."""
        values = dict(values)
        for bit in _TRACKING_BITS:
            values.pop(bit, None)
        if not own_period:
            values.pop("freq", None)
            values.pop("sample_freq", None)
            values["sample_period"] = 1 if sampling else 0
        values["read_format"] = self.kernel.PERF_FORMAT_LOST if sampling and self._lost_readable else 0
        values["sample_type"] = int(SAMPLE_TYPE)
        values.update(self._wakeup(sampling))
        values["sample_id_all"] = 1
        values["disabled"] = 1
        values["enable_on_exec"] = int(target.on_exec)
        if not target.inherits(self.options):
            values["inherit"] = 0
        return OpenedEvent(name, perf_attr(values), sampling)

    @property
    def ring_pages(self) -> int:
        """The data pages of each ring of a sampling event (-m, or ``default_ring_pages``)."""
        if self._ring_pages is None:
            self._ring_pages = self.options.ring_pages or default_ring_pages(len(online_cpus()),
                                                                             self.kernel.page_size)
        return self._ring_pages

    def _pages(self, ev: OpenedEvent) -> int:
        return min(self.ring_pages, TRACKING_PAGES) if ev.tracking else self.ring_pages

    def _wakeup(self, sampling: bool, pages: int | None = None) -> dict[str, int]:
        """The drain is woken when 1/``wakeup_fraction`` of a ring is full: 1/4 by measurement
        (1/2 lost more on a busy machine, 1/8 no less, with twice the wakeups)."""
        fraction = self.options.wakeup_fraction
        if not sampling:
            return {"wakeup_events": 0}
        if fraction <= 0:
            return {"wakeup_events": 1}
        data_bytes = (pages or self.ring_pages) * self.kernel.page_size
        return {"watermark": 1, "wakeup_events": max(data_bytes // fraction, 1)}  # wakeup_watermark

    def _tracking_event(self, target: Target) -> OpenedEvent:
        values = {
            "type": int(PerfType.SOFTWARE),
            "config": int(SwConfig.DUMMY),
            "sample_type": int(TRACKING_SAMPLE_TYPE),
            "comm": 1,
            "comm_exec": 1,
            "task": 1,
            "sample_id_all": 1,
            **self._wakeup(True, min(self.ring_pages, TRACKING_PAGES)),
            "disabled": 1,
            "enable_on_exec": int(target.on_exec),
            "inherit": int(target.inherits(self.options)),
        }
        return OpenedEvent("dummy:tracking", perf_attr(values), True, tracking=True)

    def _open_all(self, planned: Sequence[object], auto: Sequence[object], target: Target) -> None:
        by_spec: dict[int, list[OpenedEvent]] = {}
        carriers = {event for obj in self.objects for _, event in obj.programs_on_events}
        plain: set[int] = set()  # id() of the plain tracepoints sampled for printing
        fed = self._fed_to_programs()
        for ev in planned:
            sampled = _sampled(ev, fed)
            opened = self._event(ev.name, ev.attr.to_json(), sampling=sampled, target=target,  # type: ignore[attr-defined]
                                 own_period=ev.name in carriers or (sampled and not _is_output(ev)))  # type: ignore[attr-defined]
            opened.tracefs = ev.tracepoint  # type: ignore[attr-defined]
            opened.cpus = _event_cpus(ev, target)
            if sampled and ev.tracepoint is not None:  # type: ignore[attr-defined]
                plain.add(id(opened))
            by_spec.setdefault(ev.spec_index, []).append(opened)  # type: ignore[attr-defined]
        for obj in self.objects:
            for a in obj.attachments:
                for probe in a.events:
                    # a probe PMU event is a kernel probe of its own: one per task (cpu -1), or one
                    # CPU system-wide; the kernel maps no ring of an inherited cpu -1 event
                    cpus = ((-1,) if -1 not in target.pids else target.cpus[:1]) if probe.one_per_task else None
                    sampling = cpus != (-1,)
                    opened = self._event(probe.name, {"inherit": 1, **probe.values}, sampling=sampling, target=target)
                    opened.cpus = cpus
                    if probe.values.get("type") == PerfType.TRACEPOINT:
                        opened.tracefs = probe.tracefs or probe.name
                    by_spec.setdefault(obj.spec_index, []).append(opened)
                    self._carriers.append((obj, a, probe, opened))
        ordered = [ev for index in sorted(by_spec) for ev in by_spec[index]]
        for ev in auto:
            ordered.append(self._event(ev.name, ev.attr.to_json(), sampling=True, target=target))  # type: ignore[attr-defined]
        ordered.insert(0, self._tracking_event(target))
        # system-wide, evspec's own records are left out at the source
        own = " && ".join(f"common_pid != {pid}" for pid in self._own_pids())
        for opened in ordered:
            self.events.append(opened)
            for pid in target.pids:
                row: list[int] = []
                opened.fds.append(row)
                for cpu in opened.cpus or target.cpus:
                    fd = self.kernel.perf_event_open(opened.attr, pid=pid, cpu=cpu)
                    row.append(fd)
                    opened.ids.append(self.kernel.event_id(fd))
                    if pid == -1 and id(opened) in plain:
                        self.kernel.set_filter(fd, own)
        self._target = target

    def _fed_to_programs(self) -> set[str]:
        """The events the objects' terms give to their programs (map:NAME.event=, prog:NAME.event=):
        they are opened as those terms want them, and not sampled for printing."""
        fed = {u.event for obj in self.objects for u in obj.updates if u.event is not None}
        return fed | {event for obj in self.objects for _, event in obj.programs_on_events}

    def _by_name(self) -> dict[str, OpenedEvent]:
        named: dict[str, OpenedEvent] = {}
        for ev in self.events:
            if not ev.tracking:
                named.setdefault(ev.name, ev)
        return named

    def _attach(self) -> None:
        assert self._attacher is not None
        prologue_programs: set[int] = set()
        points = 0
        for obj, a, probe, opened in self._carriers:
            prog_fd = self._attacher.program_fd(obj.live, a, probe)
            try:
                attach_program(self.kernel, opened.all_fds(), prog_fd)
            except KernelError as exc:
                if exc.errno != errno.EACCES or a.prog_type != ProgType.TRACEPOINT:
                    raise
                raise _past_the_record(obj.path, a.program, probe.name, exc) from None
            if a.deferred:
                prologue_programs.add(prog_fd)
                points += 1
        if points:
            self.probe_sharing = ProbeSharing(len(prologue_programs), points)
        for obj in self.objects:
            self._attacher.attach_hooks(obj.live, obj.attachments)

    def _attach_perf_event_programs(self) -> None:
        """Each prog:NAME.event=EVENT: the program set on every instance (CPU, task) of EVENT."""
        named = self._by_name()
        for obj in self.objects:
            for program, event in obj.programs_on_events:
                opened = named.get(event)
                if opened is None:
                    raise ObjectError(NO_EVENT_FOR_PROGRAM, f"{obj.path}: prog:{program}.event={event}: no event "
                                                            f"named '{event}' was opened")
                attach_program(self.kernel, opened.all_fds(), obj.live.program(program).fd)
                self.notes.append(f"perf_event program '{program}' set on {len(opened.all_fds())} instance(s) of {event}")

    def _apply(self) -> None:
        instances = {name: ev.instances() for name, ev in self._by_name().items()}
        for obj in self.objects:
            sizes = {
                m.name: self.kernel.map_info(m.fd).max_entries
                for m in obj.live.maps.values()
                if m.spec.max_entries == 0
            }
            apply_updates(self.kernel, obj.live, obj.updates, instances, map_sizes=sizes)

    def _map_rings(self) -> None:
        for ev in self.events:
            if not ev.sampling:
                continue
            for row in ev.fds:
                for cpu, fd in zip(ev.cpus or self._target.cpus, row, strict=True):
                    mapping = self.kernel.mmap_ring(fd, self._pages(ev))
                    try:
                        sample_type = TRACKING_SAMPLE_TYPE if ev.tracking else SAMPLE_TYPE
                        ev.rings.append((cpu, PerfRing(mapping, int(sample_type))))
                    except BaseException:
                        self.kernel.munmap(mapping)
                        raise

    def _map_bpf_rings(self) -> None:
        """Every ring buffer map is read, the way ``__bpf_stdout__`` is created: no term needed.
        When the recording follows tasks, a notice says that they hold every task's records."""
        read: list[str] = []
        for obj in self.objects:
            for lm in obj.live.maps.values():
                if lm.spec.type == MapType.RINGBUF:
                    mapping = self.kernel.mmap_bpf_ringbuf(lm.fd, lm.spec.max_entries)
                    self.bpf_rings.append(BpfRingReader(lm.name, mapping))
                    read.append(f"{lm.name} ({obj.path})")
        if read and -1 not in self._target.pids:
            self.notices.append(
                f"ring buffer map{'s' if len(read) > 1 else ''} {', '.join(read)} hold{'' if len(read) > 1 else 's'} "
                "the records of the whole system: a program sees every task that hits its events, not only "
                "the command's, and a ring buffer, unlike a perf event array's per-task bpf-output events, "
                "keeps them all (evspec's own activity is left out); filter in the program (by a pid or comm "
                "set with var:) to keep the command's alone")

    def _type_records(self) -> None:
        """The decoders of the typed output maps (map:NAME.type=TYPE): a ring buffer's reader, or
        the bpf-output events a perf event array holds (its updates' events, __bpf_stdout__'s
        automatic one included)."""
        readers = iter(self.bpf_rings)
        readers_by_map: dict[tuple[int, str], BpfRingReader] = {}
        for index, (obj, types) in enumerate(zip(self.objects, self._record_types, strict=True)):
            rings = [lm for lm in obj.live.maps.values() if lm.spec.type == MapType.RINGBUF]
            spec = obj.live.spec
            for lm, reader in zip(rings, readers, strict=False):  # _map_bpf_rings' order
                readers_by_map[(index, lm.name)] = reader
                if lm.name in types:
                    self._typed_rings[id(reader)] = _record_decoder(obj.path, spec.btf, lm.name, types[lm.name])
                    self._ring_btf[id(reader)] = index
            for u in obj.updates:
                if u.event is not None and u.map_name in types:
                    decoder = _record_decoder(obj.path, spec.btf, u.map_name, types[u.map_name])
                    self._type_event(u.event, TypedOutput(index, u.map_name, decoder))
        inferred = self._type_by_btf(readers_by_map)
        for index, (obj, types) in enumerate(zip(self.objects, self._record_types, strict=True)):
            for u in obj.updates:
                typed = self._typed_outputs.get(u.event) if u.event is not None else None
                if typed is not None and u.map_name not in types and (index, u.map_name) not in inferred:
                    raise ObjectError(CODE_OBJECT, f"event {u.event} carries the records of {self._typed_where(typed)} "
                                                   f"and of map {u.map_name} of {obj.path}, which has no type: its "
                                                   "samples cannot be told apart", help=_OWN_EVENT_HELP)

    def _type_by_btf(self, readers: dict[tuple[int, str], BpfRingReader]) -> set[tuple[int, str]]:
        """The records of the maps no ``map:NAME.type=`` term types: as the type the object says
        they have (``output_types``), for ring buffers and the perf event arrays whose event holds
        their records alone (an automatic one, or a map:NAME.event= event no other map shares;
        not ``__bpf_stdout__``, which keeps perf's printing);
        else a notice, once per map, that a term would type them. The (object, map) typed so."""
        typed: set[tuple[int, str]] = set()
        auto = {(o.object_index, o.map_name) for o in self._outputs.outputs}
        holders: dict[str, set[tuple[int, str]]] = {}  # event -> the maps that hold it
        for index, obj in enumerate(self.objects):
            for u in obj.updates:
                if u.event is not None:
                    holders.setdefault(u.event, set()).add((index, u.map_name))
        for index, records in enumerate(self._outputs.records):
            obj, types = self.objects[index], self._record_types[index]
            for map_name, found in records.items():
                reader = readers.get((index, map_name))
                events = {e for e, maps in holders.items() if (index, map_name) in maps}
                if map_name in types or (reader is None and not events) or map_name == STDOUT_MAP:
                    continue  # __bpf_stdout__: printed as perf prints it (its strings), untyped
                if not isinstance(found, RecordType):
                    self.notices.append(f"{obj.path}: map '{map_name}': {typing_text(map_name, found)}")
                    continue
                shared = sorted(e for e in events if holders[e] != {(index, map_name)} or e in self._typed_outputs)
                if shared:
                    self.notices.append(f"{obj.path}: map '{map_name}': its records are printed as bytes: event "
                                        f"{shared[0]} also holds other maps' records; map:{map_name}.type=TYPE "
                                        "would print them as fields")
                    continue
                typed.add((index, map_name))
                decoder = _decoder_of(obj.path, obj.live.spec.btf, map_name, found)
                if reader is not None:
                    self._typed_rings[id(reader)] = decoder
                    self._ring_btf[id(reader)] = index
                for event in sorted(events):
                    self._type_event(event, TypedOutput(index, map_name, decoder))
                if (index, map_name) not in auto:  # an automatic event's note says it already
                    kind = "ring buffer map" if reader is not None else "map"
                    self.notes.append(f"{obj.path}: {kind} '{map_name}': {typing_text(map_name, found)}")
        return typed

    def _type_event(self, event: str, typed: TypedOutput) -> None:
        """``event``'s samples decoded as ``typed`` says. An event in several typed maps must have
        one type in all (the same type of the same BTF): its samples do not say which map they
        came through."""
        earlier = self._typed_outputs.get(event)
        if earlier is None:
            self._typed_outputs[event] = typed
            self.typed_events.add(event, typed.decoder)
            return
        if (self.objects[earlier.object_index].live.spec.btf == self.objects[typed.object_index].live.spec.btf
                and earlier.decoder.type_id == typed.decoder.type_id):
            return

        raise ObjectError(CODE_OBJECT, f"event {event} carries the records of {self._typed_where(earlier)} and of "
                                       f"{self._typed_where(typed)}: its samples cannot be decoded as both types",
                          help=_OWN_EVENT_HELP)

    def _typed_where(self, t: TypedOutput) -> str:
        return f"map {t.map_name} of {self.objects[t.object_index].path} (map:{t.map_name}.type={t.decoder.name})"

    def file_attrs(self) -> list[FileAttr]:
        """The events as a perf.data file lists them (name, attr, the ids of their fds; a typed
        bpf-output event's attr naming its type), then an event of its own for each ring buffer
        map (``ringbuf_capture``; a typed map's naming its type). The types are in the BTF objects
        of ``file_btfs`` (``typed_capture``)."""
        rings = []
        for reader, ident in self.ring_events():
            decoder = self._typed_rings.get(id(reader))
            attr = ring_event_attr() if decoder is None else ring_event_attr(
                btf_file_id(self._ring_btf[id(reader)]), decoder.type_id)
            rings.append(FileAttr.of(reader.name, attr, (ident,)))
        return [FileAttr.of(ev.name, self._file_attr(ev), ev.ids) for ev in self.events] + rings

    def _file_attr(self, ev: OpenedEvent) -> PerfEventAttr:
        """``ev``'s attr as a capture file holds it: a typed bpf-output event's copy names its type
        (``typed_capture``), the others are as opened."""
        if ev.tracking or not is_bpf_output(ev.attr):
            return ev.attr
        return output_file_attr(ev.name, ev.attr, self._typed_outputs.get(ev.name))

    def tracepoint_formats(self) -> list[tuple[str, str]]:
        """(system, event) of the tracefs format of every tracepoint event, once each: what a
        capture file's tracing data holds (a probe's is in evspec's own group, whatever its name)."""
        found = (ev.tracefs.partition(":") for ev in self.events if ev.tracefs and ev.attr.type == PerfType.TRACEPOINT)
        return list(dict.fromkeys((system, event) for system, _, event in found))

    def ring_events(self) -> list[tuple[BpfRingReader, int]]:
        """Every ring buffer map's reader with the id of its event in a capture file."""
        return [(reader, RING_ID_BASE + i) for i, reader in enumerate(self.bpf_rings)]

    def file_btfs(self) -> dict[int, bytes]:
        """The BTF of each object with a typed map (a ring buffer, or a perf event array's
        bpf-output events), once, by the id ``file_attrs`` gives it (``btf_file_id``), for a
        capture file's HEADER_BPF_BTF."""
        indexes = {*self._ring_btf.values(), *(t.object_index for t in self._typed_outputs.values())}
        return {btf_file_id(index): self.objects[index].live.spec.btf or b"" for index in sorted(indexes)}


    @property
    def name_width(self) -> int:
        names = [ev.name for ev in self.events if not ev.tracking] + [r.name for r in self.bpf_rings]
        return max(map(len, names), default=0)

    def start(self) -> None:
        """Enable what the workload's exec does not enable (-a, -C, -p)."""
        if not self._target.on_exec:
            for ev in self.events:
                for fd in ev.all_fds():
                    self.kernel.enable(fd)

    # ---------------------------------------------------------------- reading

    def rings(self) -> list[tuple[OpenedEvent, int, PerfRing]]:
        """Every ring buffer: (its event, its CPU, the ring), the tracking event's first."""
        return [(ev, cpu, ring) for ev in self.events for cpu, ring in ev.rings]

    def ring_decoders(self) -> list[RingDecoder]:
        """A decoder for each perf ring, in ``rings()`` order: a tracepoint's samples decoded by
        its format, a typed map's bpf-output samples by its type."""
        out = []
        for ev, cpu, _ring in self.rings():
            fields_of = None
            if ev.name in self.typed_events:
                fields_of = partial(self.typed_events.fields, ev.name)
            elif ev.attr.type == PerfType.TRACEPOINT:
                fields_of = partial(self.decoders.fields, ev.tracefs or ev.name)
            out.append(RingDecoder(ev.name, cpu, int(ev.attr.sample_type), fields_of))
        return out

    def bpf_sources(self) -> list[BpfSource]:
        """Each BPF ring buffer map as live mode prints its records, in ``bpf_rings`` order."""
        return [BpfSource(reader.name, self._typed_rings.get(id(reader))) for reader in self.bpf_rings]

    def run(self, drain: Callable[[], object], workload: Workload | None, stop_fd: int | None = None) -> None:
        """Read the rings in this process: ``drain`` is a round (``run_rounds``) until the workload
        exits, ``stop_fd`` becomes readable or, with -p, every traced task is gone; then the
        events' lost counts are read. Capture mode's way (``Capture.drain``)."""
        before = favour_reader()  # this thread only: the workload, forked already, keeps its own
        try:
            self._rounds(drain, workload, (stop_fd,) if stop_fd is not None else ())
        finally:
            if before is not None:
                os.setpriority(os.PRIO_PROCESS, 0, before)
        self.count_lost()

    def _rounds(self, round_: Callable[[], object], workload: Workload | None, stop_fds: Sequence[int]) -> None:
        ring_fds = [ring.ring.fd for _, _, ring in self.rings()]
        run_rounds(round_, [*ring_fds, *(reader.mapping.fd for reader in self.bpf_rings)],  # type: ignore[arg-type]
                   workload_fd=workload.pidfd if workload is not None else None, stop_fds=stop_fds,
                   until_hangup=workload is None and self.options.pid is not None, disable=self._disable)

    def drain(self, handler: Callable[[SampleLine | LostLine | RingRecordLine], None]) -> bool:
        """Read every ring now, in this process, and hand each record to ``handler`` (a read's
        records in time order, task names as the tracking records say): for library use and
        tests, where nothing is printed behind the reading. True when anything was read."""
        if self._reader is None:
            def hand_out(batch: list[Line]) -> tuple[()]:
                for line in batch:
                    for one in (line.lines() if type(line) is SampleRun else (line,)):  # type: ignore[union-attr]
                        self._handler(one)  # type: ignore[arg-type]
                return ()

            self._reader = Follower(self.ring_decoders(), self.bpf_sources(), hand_out, lambda _: None)
        self._handler = handler
        reader = self._reader
        took = False
        for source, (_, _, ring) in enumerate(self.rings()):
            chunk = ring.take()
            if chunk:
                reader.take(Frame(PERF, source, 0, chunk))
                took = True
        for source, bpf in enumerate(self.bpf_rings):
            records, position = bpf.committed()
            if len(records):
                reader.take(Frame(BPF, source, 0, bytes(records)))
                bpf.release(position)
                took = True
        before = reader.counts.samples
        reader.finish()
        self.samples += reader.counts.samples - before
        self.lost_reported = sum(d.lost for d in reader.decoders)
        self.discarded = sum(reader.discarded)
        return took

    def _disable(self) -> None:
        for ev in self.events:
            for fd in ev.all_fds():
                self.kernel.disable(fd)

    def run_live(self, render: Callable[[list[Line]], Iterable[bytes | bytearray | memoryview]],
                 write: Callable[[bytes | bytearray | memoryview], None],
                 workload: Workload | None, stop_fd: int | None = None,
                 stop_rendering: Callable[[], bool] = lambda: False) -> FollowCounts:
        """Record and render (``options.drain_process`` set): the drain process copies the rings
        into the spool (``options.max_memory`` of memory, then a temporary file) until the
        workload exits, ``stop_fd`` becomes readable or, with -p, every traced task is gone; this
        process renders behind it (``render`` a batch, ``write`` its pieces) until all is written
        or ``stop_rendering()`` says stop; then the events' lost counts are read."""
        if self._drain is None or self._spool is None:
            raise ValueError("run_live needs a session prepared with options.drain_process")
        drain, spool = self._drain, self._spool
        clock = None
        if self.bpf_rings:  # their records get a time of perf's clock
            from evspec.loader.output.perf_clock import PerfClock

            clock = PerfClock.calibrate(self.kernel)
        rings = [ring for _, _, ring in self.rings()]
        plan = DrainPlan(
            perf=[(ring.data_size // ring.ring.page_size, ring.sample_type) for ring in rings],
            bpf=[(reader.name, reader.mapping.data_size) for reader in self.bpf_rings],
            events=sum(len(ev.all_fds()) for ev in self.events if not ev.rings),
            workload=workload is not None, stop=stop_fd is not None,
            until_hangup=workload is None and self.options.pid is not None,
            clock=(clock.offset, clock.error) if clock is not None else None)
        fds = [*(ring.ring.fd for ring in rings), *(reader.mapping.fd for reader in self.bpf_rings),
               *(fd for ev in self.events if not ev.rings for fd in ev.all_fds()),
               *((workload.pidfd,) if workload is not None else ()), *((stop_fd,) if stop_fd is not None else ())]
        follower = Follower(self.ring_decoders(), self.bpf_sources(), render, write)
        drain.hand_over(plan, fds)
        try:
            counts = follower.run(spool, drain.exited, (drain.pidfd,), stop_rendering)
        finally:
            drain.close()
            self.spool_stats = spool.stats()
        self.samples += counts.samples
        self.lost_reported += sum(d.lost for d in follower.decoders)
        self.unprinted = counts.unprinted
        self.discarded = sum(follower.discarded)
        self.count_lost()
        return counts

    def count_lost(self) -> None:
        """Read every sampling event instance's own lost count (PERF_FORMAT_LOST) into
        ``lost_counts`` and their sum into ``lost_counted``; left as they were when the kernel
        does not keep them."""
        if not self._lost_readable:
            return
        counts: list[LostCount] = []
        for ev in self.events:
            if not ev.sampling or ev.tracking:
                continue
            fds = ev.all_fds()
            cpus = [cpu for _row in ev.fds for cpu in (ev.cpus or self._target.cpus)]
            for fd, cpu, ident in zip(fds, cpus, ev.ids, strict=True):
                counts.append(LostCount(ev.name, ident, cpu, self.kernel.read_lost(fd)))
        self.lost_counts = tuple(counts)
        self.lost_counted = sum(c.lost for c in counts)

    def read_maps(self, names: Sequence[str] | None) -> list[MapDump]:
        """``--dump-maps``: the final contents of the objects' maps (``dumped_maps`` says which),
        decoded; read before ``close()``."""
        from evspec.loader.object.map_dump import decode_map, dumped_maps, is_per_cpu, per_cpu_stride

        cpus = possible_cpus()
        out: list[MapDump] = []
        for obj in self.objects:
            for m in dumped_maps(obj.live.spec, names):
                fd, what = obj.live.map(m.name).fd, f"map '{m.name}'"
                size = per_cpu_stride(m) * cpus if is_per_cpu(m) else m.value_size
                entries: list[tuple[bytes, bytes]] = []
                key = self.kernel.next_key(fd, None, m.key_size, what=what)
                while key is not None:
                    value = self.kernel.lookup(fd, key, size, what=what)
                    if value is not None:
                        entries.append((key, value))
                    key = self.kernel.next_key(fd, key, m.key_size, what=what)
                out.append(decode_map(obj.live.spec, m, entries, cpus))
        return out

    # --------------------------------------------------------------- teardown

    def close(self) -> None:
        """Unmap every ring, close every event and object; the first failure is raised last."""
        if self._closed:
            return
        self._closed = True
        first: Exception | None = None
        if self._drain is not None:
            self._drain.close()
        if self._spool is not None:
            self._spool.close()
        for ev in self.events:
            for _, ring in ev.rings:
                try:
                    self.kernel.munmap(ring.ring)
                except KernelError as exc:
                    first = first or exc
            ev.rings.clear()
            for fd in ev.all_fds():
                try:
                    self.kernel.close(fd)
                except KernelError as exc:
                    first = first or exc
            ev.fds.clear()
        for reader in self.bpf_rings:
            try:
                self.kernel.munmap_bpf_ringbuf(reader.mapping)
            except KernelError as exc:
                first = first or exc
        if self._attacher is not None:
            said = set(self._attacher.notes)
            try:
                self._attacher.close()
            except (KernelError, ObjectError, OSError) as exc:  # what detaching met; the rest still closes
                first = first or exc
            finally:
                self.closing_notes.extend(n for n in self._attacher.notes if n not in said)
        for obj in self.objects:
            try:
                obj.live.close()
            except KernelError as exc:
                first = first or exc
        if first is not None:
            raise first

    def __enter__(self) -> RecordSession:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _record_decoder(path: str, btf: bytes | None, map_name: str, type_name: str) -> RecordDecoder:
    """The decoder of ``map:MAP_NAME.type=TYPE_NAME`` (the term was checked: the type is there);
    ``ObjectError`` naming the map when the object's BTF cannot decode it."""
    try:
        return RecordDecoder.named(btf, type_name)
    except BtfError as exc:
        raise ObjectError(CODE_OBJECT, f"{path}: map:{map_name}.type={type_name}: the object's BTF cannot "
                                       f"decode the type: {exc}") from None


def _decoder_of(path: str, btf: bytes | None, map_name: str, found: RecordType) -> RecordDecoder:
    """The decoder of the record type the object says ``map_name``'s records have."""
    try:
        return RecordDecoder.of_id(btf, found.type_id)
    except BtfError as exc:
        raise ObjectError(CODE_OBJECT, f"{path}: map '{map_name}': the object's BTF cannot decode its records' "
                                       f"type {found.name}: {exc}") from None


def _past_the_record(path: str, program: str, event: str, exc: KernelError) -> KernelError:
    """PERF_EVENT_IOC_SET_BPF's EACCES for a tracepoint program that had every capability: the
    verifier's highest context offset is past the tracepoint's record (perf_event_set_bpf_prog)."""
    error = KernelError(
        PAST_THE_RECORD,
        f"{path}: program '{program}' reads past the record of tracepoint {event}: the kernel refused to "
        f"set it on the event ({exc.operation}: EACCES); a tracepoint program may read only the fields of "
        "the tracepoint's format",
        errno=exc.errno,
        operation=exc.operation,
        help=(f"see the fields and their offsets in /sys/kernel/tracing/events/{event.replace(':', '/')}/format",),
    )
    error.finding = True
    return error


def _is_output(ev: object) -> bool:
    return ev.attr.get("type") == PerfType.SOFTWARE and ev.attr.get("config") == SwConfig.BPF_OUTPUT  # type: ignore[attr-defined, no-any-return]


def _sampled(ev: object, fed: set[str]) -> bool:
    """Whether a planned event is sampled and its samples printed: a bpf-output event, and a
    tracepoint no term gives to a program (as perf record samples it: every hit)."""
    return _is_output(ev) or (ev.tracepoint is not None and ev.name not in fed)  # type: ignore[attr-defined]


def _event_cpus(ev: object, target: Target) -> tuple[int, ...] | None:
    """The CPUs an event's ``cpu=`` term keeps of the recording's (None: all of them). A term
    that keeps none is an error: the event would never count."""
    wanted = ev.cpus  # type: ignore[attr-defined]
    if wanted is None:
        return None
    if target.cpus == (-1,):
        return tuple(wanted)
    kept = tuple(cpu for cpu in target.cpus if cpu in wanted)
    if not kept:
        raise ObjectError(
            UNSAMPLED_EVENT,
            f"event '{ev.name}' (-e #{ev.spec_index + 1}) is limited by its cpu= term to CPUs "  # type: ignore[attr-defined]
            f"{format_cpu_list(wanted)}, none of which this recording covers (CPUs {format_cpu_list(target.cpus)})",
            help=("name CPUs the recording covers in the cpu= term, or record them with -C",),
        )
    return kept


_KINDS = {PerfType.HARDWARE: "hardware", PerfType.SOFTWARE: "software", PerfType.HW_CACHE: "hardware cache",
          PerfType.RAW: "raw", PerfType.BREAKPOINT: "breakpoint"}


def _refuse_unsampled(planned: Sequence[object], fed: set[str]) -> None:
    """An event that would be neither sampled and printed nor given to a program is refused: a
    counter nothing reads would make "0 samples" of a run that had events."""
    for ev in planned:
        if _sampled(ev, fed) or ev.name in fed:  # type: ignore[attr-defined]
            continue
        if ev.pmu == "tool":  # type: ignore[attr-defined]
            raise ObjectError(
                UNSAMPLED_EVENT,
                f"event '{ev.name}' (-e #{ev.spec_index + 1}) cannot be recorded: it is one of perf's tool "  # type: ignore[attr-defined]
                "events, which perf stat computes in user space (times, CPU counts); the kernel has no "
                "such event to sample or to give a program",
                help=("count it with perf stat",),
            )
        kind = _KINDS.get(ev.attr.get("type"), f"{ev.pmu} PMU" if ev.pmu else "PMU")  # type: ignore[attr-defined]
        raise ObjectError(
            UNSAMPLED_EVENT,
            f"event '{ev.name}' (-e #{ev.spec_index + 1}) cannot be recorded: evspec record prints the "  # type: ignore[attr-defined]
            f"samples of tracepoint and bpf-output events only, and those of a {kind} event are "
            "instruction pointers, which it does not resolve to symbols",
            help=("record it with perf record",
                  "or give it to a program of a BPF object: map:NAME.event=EVENT (an entry of a perf event "
                  "array the program reads with bpf_perf_event_read) or prog:NAME.event=EVENT (a perf_event "
                  "program run on its samples)"),
        )


def _no_tracepoints(system: str, event: str) -> int | None:
    return None


__all__ = ["RecordOptions", "RecordSession", "Workload", "RingMapping", "possible_cpus"]



def _map_updates(event: BpfEvent, spec: ObjectSpec, events: EventList, spec_index: int) -> list[MapUpdate]:
    """The object's map updates; a refused term is reported in its event string (the -e it is)."""
    try:
        return plan_map_updates(event, spec)
    except EvspecError as exc:
        where = Source("arg", index=spec_index)
        raise EvspecError([d.located(events.source, where) for d in exc.diagnostics]) from None


def _with_settings(event: BpfEvent, spec: ObjectSpec, events: EventList,
                   spec_index: int) -> tuple[ObjectSpec, dict[str, str], frozenset[str]]:
    """The object with its map setters and prog:NAME.autoload= terms applied, the pinning paths
    of its pin= setters, and the programs the terms load or leave out; a refused term (or a map
    that still cannot be created) is reported in its event string, before anything is loaded."""
    from evspec.loader.lint.terms.map_setters import apply_map_setters
    from evspec.loader.lint.terms.programs import apply_autoload

    try:
        spec, pins = apply_map_setters(event, spec)
        spec, fixed = apply_autoload(event, spec)
    except EvspecError as exc:
        where = Source("arg", index=spec_index)
        raise EvspecError([d.located(events.source, where) for d in exc.diagnostics]) from None
    return spec, pins, fixed


def _with_var_terms(event: BpfEvent, spec: ObjectSpec, events: EventList, spec_index: int) -> ObjectSpec:
    """The object with the values of its var: terms written in; a refused term is reported in
    its event string."""
    from evspec.loader.lint.terms.variables import apply_var_terms

    try:
        return apply_var_terms(event, spec)
    except EvspecError as exc:
        where = Source("arg", index=spec_index)
        raise EvspecError([d.located(events.source, where) for d in exc.diagnostics]) from None
