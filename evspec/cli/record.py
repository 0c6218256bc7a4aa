"""``evspec record``: check the event strings, load and attach, run the command, print its samples.

``add_record_parser(subparsers)`` adds the sub-command; ``record_main(args)`` runs it and returns
the exit status: the command's, or perf's status for an apply-time map error, 1 for findings (in
the event strings, or a program the kernel refuses: ``ObjectError.finding``), 2 for usage or
set-up errors, 128 + the signal's number when SIGINT or SIGTERM stops set-up (what set-up made is
undone, maps this run pinned included).
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from evspec.cli.app import add_clang_opt

TYPE_CHECKING = False  # typing itself costs a start 2-3 ms
if TYPE_CHECKING:
    from typing import TextIO

    from evspec.loader.output.saved.capture import Capture
    from evspec.loader.session import RecordSession

EXIT_FINDINGS = 1
EXIT_SETUP = 2
_SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def add_record_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "record",
        help="load BPF objects and events, run a command, print what they record",
        description="perf record's BPF workflow: -e ./prog.o/map:...=.../ -- CMD",
    )
    p.add_argument("-e", "--event", dest="events", action="append", default=[], metavar="SPEC",
                   help="an event string (repeatable)")
    p.add_argument("-i", "--no-inherit", action="store_true", help="child tasks do not inherit events")
    p.add_argument("-a", "--all-cpus", action="store_true", help="system-wide on every CPU")
    p.add_argument("-C", "--cpu", metavar="CPUS", help="system-wide on these CPUs (0,2-3)")
    p.add_argument("-p", "--pid", type=int, help="record an existing process (its threads)")
    p.add_argument("--dev", metavar="IFACE", help="network interface for xdp/tc programs whose section names none")
    p.add_argument("--pin-root", metavar="DIR",
                   help="where maps declared with LIBBPF_PIN_BY_NAME are pinned and found again, a bpffs "
                        "folder (default: /sys/fs/bpf, as libbpf)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="capture: write the records to FILE in perf.data format instead of printing them")
    p.add_argument("-m", "--mmap-pages", type=_pages, default=None, metavar="PAGES",
                   help="ring buffer data pages per CPU and event, a power of two (default: 4 MiB a ring, "
                        "less where the rings of an event would take more than 64 MiB, at least perf's 128)")
    p.add_argument("--max-memory", type=_size, default=None, metavar="SIZE",
                   help="live output: the memory that records waiting to be printed may take (K, M, G: "
                        "binary units; default 64M); past it they wait in a temporary file in $TMPDIR")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--dump-maps", nargs="?", const="", default=None, metavar="NAME,...",
                   help="after the command, print the final contents of the objects' hash, array and "
                        "per-CPU maps (or of the maps named, global data maps included), in place of the "
                        "histograms and tables; a *hist* array of counts prints as a log2 histogram")
    p.add_argument("--interval", type=_seconds, default=None, metavar="SECONDS",
                   help="print the objects' histograms and tables every SECONDS, then clear them (as the "
                        "tools' -i); without it they print once, at exit")
    p.add_argument("--top", type=_rows, default=20, metavar="ROWS",
                   help="the rows of a table printed, by its first counter (default 20; 0: all)")
    p.add_argument("-v", "--verbose", action="store_true")
    add_clang_opt(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD [ARGS]")
    p.set_defaults(func=record_main)
    return p


def _pages(text: str) -> int:
    try:
        pages = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of pages") from None
    if pages <= 0 or pages & (pages - 1):
        raise argparse.ArgumentTypeError(f"{pages} pages: the ring size must be a power of two")
    return pages


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"{text}: the interval must be a positive number of seconds")
    return seconds


def _rows(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of rows (0: all)")
    return int(text)


def _size(text: str) -> int:
    from evspec.loader.output.live.spool import MIN_MEMORY

    number, unit = text.rstrip("BKMGbkmg"), text[len(text.rstrip("BKMGbkmg")):].upper()
    if not number.isdigit() or unit not in _SIZE_UNITS:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (a number of bytes, or with K, M or G)")
    size = int(number) * _SIZE_UNITS[unit]
    if size < MIN_MEMORY:
        raise argparse.ArgumentTypeError(f"{text}: at least {MIN_MEMORY >> 10}K")
    return size


class _Stops:
    """The stop signals of a run: the wake-up pipe they write to (``fd``), and how many came."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.count = 0

    def stop_rendering(self) -> bool:
        """The first stop ends the recording (the workload is stopped), the second the printing."""
        return self.count >= 2


@contextmanager
def _stop_signals(forward: list[int]) -> Iterator[_Stops]:
    """SIGINT/SIGTERM: forward to the workload (pids in ``forward``) and wake the reader."""
    r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    stops = _Stops(r)

    def handler(signo: int, _frame: object) -> None:
        for pid in forward:
            try:
                os.kill(pid, signo)
            except ProcessLookupError:
                pass
        stops.count += 1

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    try:
        yield stops
    finally:
        signal.set_wakeup_fd(old_fd)
        for s, h in old.items():
            signal.signal(s, h)
        os.close(r)
        os.close(w)


def _writer(out: TextIO) -> Callable[[bytes | bytearray | memoryview], None]:
    """How rendered UTF-8 goes to ``out``: straight to its descriptor when it has one and is
    UTF-8, with os.write (a BufferedWriter loses the rest of a large write that a signal
    interrupts: Python 3.11 on a full pipe), else as text."""
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    if fd >= 0 and (getattr(out, "encoding", "") or "").lower().replace("-", "") == "utf8":
        def write(data: bytes | bytearray | memoryview) -> None:
            out.flush()
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
    else:
        def write(data: bytes | bytearray | memoryview) -> None:
            out.write(str(data, "utf-8"))
            out.flush()
    return write


def _locked(write: Callable[[bytes | bytearray | memoryview], None]) -> Callable[[bytes | bytearray | memoryview], None]:
    """``write`` one call at a time: the interval's histograms are written from their thread."""
    lock = threading.Lock()

    def locked(data: bytes | bytearray | memoryview) -> None:
        with lock:
            write(data)
    return locked


def _stop_signal(stop_fd: int) -> int | None:
    """The stop signal that arrived during setup (the wake-up pipe holds its number), or None."""
    if not select.select([stop_fd], [], [], 0)[0]:
        return None
    return os.read(stop_fd, 64)[0]


def _check(args: argparse.Namespace, system: object, out: TextIO, *, inherit: bool) -> list[object] | None:
    """The checked event lists, or None after printing the errors. Warnings are printed too, but
    for two that say nothing about this run: an inheriting event in a map when the events will
    not inherit, and a poisoned CO-RE relocation (libbpf too substitutes those without a word;
    the verifier refuses the program if one is reached), which -v shows."""
    from evspec.check import CheckOptions, check_specs
    from evspec.codes.bpf import CORE_UNRESOLVED
    from evspec.codes.bpfconfig import INHERIT_EVENT_IN_MAP, OUTPUT_EVENT_CREATED
    from evspec.diagnostics import Source
    from evspec.inputs import SpecInput
    from evspec.render.text import render_text

    inputs = [SpecInput(text, Source("arg", index=i), command=0) for i, text in enumerate(args.events)]
    checked = check_specs(inputs, CheckOptions(system=system, mode="record",  # type: ignore[arg-type]
                                               clang_opts=args.clang_opts))
    # OUTPUT_EVENT_CREATED: the session's -v note says it, with the names of the whole command
    quiet = {*(() if inherit else (INHERIT_EVENT_IN_MAP,)), *(() if args.verbose else (CORE_UNRESOLVED,)),
             OUTPUT_EVENT_CREATED}
    diags = [d for c in checked for d in c.diagnostics if d.is_error or d.code not in quiet]
    if diags:
        out.write(render_text(diags))
    return None if any(d.is_error for d in diags) else [c.events for c in checked]


def record_main(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    from evspec.compiler.recording import recording_plan
    from evspec.diagnostics import EvspecError
    from evspec.loader.errors import ObjectError
    from evspec.loader.load.apply import APPLY_PREFIX, ApplyError
    from evspec.loader.output.aggregate.hook import aggregate_printer, every_interval
    from evspec.loader.output.script import (
        JsonRenderer,
        LostLine,
        TextRenderer,
        lost_samples_json,
        lost_samples_text,
        paused_gc,
        summary_json,
    )
    from evspec.loader.session import (
        DEFAULT_MAX_MEMORY,
        RecordOptions,
        RecordSession,
        Workload,
    )
    from evspec.render.text import render_text
    from evspec.system import load_system, parse_cpu_list

    out = stdout or sys.stdout
    err = stderr or sys.stderr
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not args.events:
        err.write("evspec record: error: no event given (-e SPEC)\n")
        return EXIT_SETUP
    if not command and args.pid is None and not args.all_cpus and args.cpu is None:
        err.write("evspec record: error: give a command after --, or -p PID, -a or -C CPUS\n")
        return EXIT_SETUP
    if args.output and args.max_memory is not None:
        err.write("evspec record: error: --max-memory bounds the records waiting to be printed; with -o "
                  "they are written to the file as they are read\n")
        return EXIT_SETUP
    forward: list[int] = []
    with _stop_signals(forward) as stops:
        stop_fd = stops.fd
        options = RecordOptions(
            no_inherit=args.no_inherit,
            system_wide=args.all_cpus,
            cpus=parse_cpu_list(args.cpu) if args.cpu else None,
            pid=args.pid,
            dev=args.dev,
            pin_root=args.pin_root,
            ring_pages=args.mmap_pages,
            max_memory=args.max_memory or DEFAULT_MAX_MEMORY,
            drain_process=not args.output,
            clang_opts=tuple(args.clang_opts),
        )
        system = load_system("live")
        lists = _check(args, system, err, inherit=options.events_inherit)
        if lists is None:
            return EXIT_FINDINGS
        workload: Workload | None = None
        session = RecordSession(options=options)
        capture: Capture | None = None
        fmt_json = args.format == "json"
        status = 0
        started = False
        try:
            if command:
                workload = Workload(command)
                forward.append(workload.pid)
            compiled = recording_plan(lists, system)  # type: ignore[arg-type]
            try:
                session.prepare(lists, compiled, system, Path.cwd(), workload)  # type: ignore[arg-type]
            finally:
                for warning in session.warnings:
                    err.write(f"evspec record: warning: {warning}\n")
            if args.output:
                capture = _open_capture(args, session)
            dump_names = _dump_names(args.dump_maps)
            _check_dump_names(session, dump_names)
            # --dump-maps prints the raw entries instead of the histograms and tables
            aggregates = aggregate_printer(session, compiled if args.dump_maps is None else None, args.top or None)
            if args.interval is not None and not aggregates:
                why = ("--dump-maps prints the maps once, at exit" if args.dump_maps is not None
                       else "the objects' programs count into no map or .bss global")
                err.write(f"evspec record: warning: --interval prints nothing: {why}\n")
            # the notes come last before the start: a caller that waits for them misses no record
            for notice in session.notices:
                err.write(f"evspec record: note: {notice}\n")
            if args.verbose:
                for note in session.all_notes():
                    err.write(f"evspec record: {note}\n")
            stopped = _stop_signal(stop_fd)
            if stopped is not None:  # nothing ran: undone as a failed set-up is (below)
                status = 128 + stopped
            else:
                started = True
                session.start()
                if workload is not None:
                    workload.start()
                write = _locked(_writer(out))
                with paused_gc(), every_interval(aggregates, args.interval, write, fmt_json):
                    if capture is not None:
                        session.run(capture.drain, workload, stop_fd)
                    else:
                        renderer = JsonRenderer() if fmt_json else TextRenderer(session.name_width)
                        session.run_live(renderer.pieces, write, workload, stop_fd,
                                         stops.stop_rendering)
                if capture is not None:
                    capture.add_lost_counts(session.lost_counts)
                else:
                    render_lost = lost_samples_json if fmt_json else lost_samples_text
                    out.write("".join(render_lost(LostLine(c.event, c.cpu, c.lost))
                                      for c in session.lost_counts if c.lost))
                if workload is not None:
                    status = workload.wait()
                if aggregates:
                    write((aggregates.json(reset=False, at="exit") if fmt_json
                           else aggregates.text(reset=False)).encode())
                if args.dump_maps is not None:
                    _print_maps(session, dump_names, fmt_json, out)
        except ApplyError as exc:
            err.write(f"{APPLY_PREFIX}{exc.perf_message}\n")
            if args.verbose:
                err.write(f"evspec record: {exc.message}\n")
            status = exc.exit_status
        except EvspecError as exc:  # a finding about the event strings that only loading could make
            err.write(render_text(exc.diagnostics))
            status = EXIT_FINDINGS
        except ObjectError as exc:
            err.write(f"evspec record: error: {exc.message}\n")
            for line in exc.help:
                err.write(f"  help: {line}\n")
            if args.verbose and exc.detail:
                err.write(exc.detail + "\n")
            status = EXIT_FINDINGS if exc.finding else EXIT_SETUP
        finally:
            try:
                if capture is not None:
                    capture.finish()
            finally:
                if not started:
                    for warning in session.unpin_created():
                        err.write(f"evspec record: warning: {warning}\n")
                session.close()
                if workload is not None:
                    workload.close()
    if args.verbose:
        for note in session.closing_notes:
            err.write(f"evspec record: {note}\n")
    if capture is not None and capture.failure is not None:
        return _capture_failed(capture, session, err)
    if capture is not None:
        try:
            counts = capture.counts  # read back from the file: the reader did not count
        except ObjectError as exc:
            err.write(f"evspec record: error: {exc.message}\n")
            return status or EXIT_SETUP
        lost = counts.lost if session.lost_counted is None else session.lost_counted
        err.write(
            f"[ evspec record: wrote {capture.bytes_written} bytes to {capture.path} "
            f"({counts.samples} samples, {lost} lost{_reported(lost, counts.lost)}) ]\n"
        )
    elif not started:  # nothing was recorded: no summary, as perf prints none when set-up fails
        return status
    else:
        _spool_report(session, err, verbose=args.verbose)
        if session.unprinted:
            err.write(f"evspec record: printing stopped: {session.unprinted} records were not printed\n")
        unprinted = f", {session.unprinted} not printed" if session.unprinted else ""
        err.write(f"[ evspec record: {session.samples} samples, {session.lost} lost"
                  f"{_reported(session.lost, session.lost_reported)}{unprinted} ]\n")
        if fmt_json:
            out.write(summary_json(session.summary()))
            out.flush()
    return status


def _spool_report(session: RecordSession, err: TextIO, *, verbose: bool) -> None:
    """What the records waiting to be printed took (-v), and a spool file that could not be
    written (always: the rings kept the records meanwhile, and what they could not hold is lost)."""
    stats = session.spool_stats
    if stats is None:
        return
    if stats.errno:
        err.write(f"evspec record: warning: the spool file {stats.path} could not be written "
                  f"({os.strerror(stats.errno)}): records waited in the rings while --max-memory was full, "
                  "and the losses count what did not fit there\n")
    if verbose:
        spilled = (f"; {stats.spilled} bytes went to {stats.path} (at most {stats.file_peak} at once), "
                   "removed" if stats.spilled else "")
        err.write(f"evspec record: records waiting to be printed took at most {stats.memory_peak} bytes of "
                  f"memory{spilled}\n")


def _capture_failed(capture: Capture, session: RecordSession, err: TextIO) -> int:
    """A write to the capture file failed (a full file system): say so, what was not written and
    what the file holds, then the summary; exit 2."""
    from evspec.loader.errors import ObjectError

    assert capture.failure is not None
    lost = session.lost
    err.write(f"evspec record: error: {capture.failure.message}; {capture.unwritten} samples were not written\n")
    if capture.removed:
        err.write(f"evspec record: {capture.path} is removed: not even its header and an empty data section "
                  "fit in what was left\n")
        err.write(f"[ evspec record: nothing written to {capture.path} ({capture.unwritten} samples not "
                  f"written, {lost} lost) ]\n")
        return EXIT_SETUP
    try:
        samples = capture.counts.samples
    except ObjectError as exc:  # what was kept cannot be read back
        err.write(f"evspec record: error: {exc.message}\n")
        return EXIT_SETUP
    err.write(f"evspec record: {capture.path} holds the {samples} samples read before, and is complete: "
              "perf script and evspec script read it\n")
    err.write(f"[ evspec record: wrote {capture.bytes_written} bytes to {capture.path} ({samples} samples, "
              f"{lost} lost, {capture.unwritten} not written) ]\n")
    return EXIT_SETUP


def _dump_names(option: str | None) -> list[str] | None:
    """The map names of ``--dump-maps=NAME,...``; None for every map (or no option)."""
    names = [n for n in (option or "").split(",") if n]
    return names or None


def _check_dump_names(session: RecordSession, names: list[str] | None) -> None:
    from evspec.codes.kernel import OBJECT
    from evspec.loader.errors import ObjectError
    from evspec.loader.object.map_dump import dumped_maps, unknown_names

    specs = [obj.live.spec for obj in session.objects]
    unknown = unknown_names(specs, names) if names else []
    if unknown:
        known = ", ".join(m.name for spec in specs for m in dumped_maps(spec, None)) or "none"
        raise ObjectError(OBJECT, f"--dump-maps: no hash, array or per-CPU map named {', '.join(unknown)}",
                          help=(f"maps dumped by default: {known}",))


def _print_maps(session: RecordSession, names: list[str] | None, fmt_json: bool, out: TextIO) -> None:
    from evspec.loader.object.map_dump import render_json, render_text

    render = render_json if fmt_json else render_text
    for dump in session.read_maps(names):
        out.write(render(dump))
    out.flush()


def _reported(lost: int, reported: int) -> str:
    """Where the events' own loss counts exceed what PERF_RECORD_LOST records said."""
    return "" if lost == reported else f", {reported} reported by PERF_RECORD_LOST"


def _open_capture(args: argparse.Namespace, session: RecordSession) -> Capture:
    """The perf.data file of ``-o``, with COMM records for the tasks that exist already."""
    from evspec import __version__
    from evspec.loader.output.perf_clock import PerfClock
    from evspec.loader.output.saved.capture import Capture, existing_tasks
    from evspec.loader.output.saved.perfdata import HostInfo

    host = HostInfo.current(["evspec", *sys.argv[1:]], f"evspec {__version__}")
    rings = session.ring_events()
    # ring buffer records become samples stamped with perf's clock, calibrated before the events run
    clock = PerfClock.calibrate(session.kernel).now if rings else None
    capture = Capture(args.output, session.file_attrs(), [ring for _, _, ring in session.rings()], host,
                      bpf_rings=rings, clock=clock, btfs=session.file_btfs(),
                      tracepoints=session.tracepoint_formats())
    tracking = session.events[0]
    if args.pid is not None:
        capture.add_tasks(existing_tasks([args.pid]), tracking.ids[0])
    elif args.all_cpus or args.cpu is not None:
        capture.add_tasks(existing_tasks(None), tracking.ids[0])
    return capture
