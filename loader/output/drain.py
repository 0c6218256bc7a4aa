"""The drain of a recording: every ring's new bytes copied out as fast as the kernel writes them.

``run_rounds`` is the reading loop: a round whenever a ring reaches its wakeup mark (at once
again while rings are filling), until the workload exits, a stop is asked for or, with -p, every
traced task is gone; then the events are disabled and the rings emptied. In capture mode (-o) a
round writes the rings straight into the file (``Capture.drain``). In live mode a round copies
them into the spool (``SpoolDrain``) and ``DrainProcess`` runs the loop in a process of its own:
the renderer follows in this process, and however long it takes, the drain never waits for it
(nor for this process's GIL).
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import time
import traceback
from collections.abc import Callable, Iterable, Sequence

from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.output.bpf_ringbuf import BpfRingReader
from evspec.loader.output.perf_ring import PerfRing
from evspec.loader.output.spool import BPF, END, ERROR, PERF, ROUND, Spool

from evspec.codes import kernel as codes
from evspec.span import Record, set_field

POLL_MS = 200  # how long an idle drain sleeps between looks at the stop conditions
BUSY_SHARE = 16  # a ring more than 1/BUSY_SHARE full after a round: read again at once
HELD_WAIT = 0.005
READER_NICE = -10  # the rings' reader runs ahead of the workload, the renderer and the machine's load


def favour_reader() -> int | None:
    """Raise the calling thread's scheduling priority to nice ``READER_NICE`` when allowed
    (root, CAP_SYS_NICE): a reader kept waiting for a CPU is what still loses records on a busy
    machine. The nice value it had, to give back; None when it had as much or may not."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    if before <= READER_NICE:
        return None
    try:
        os.setpriority(os.PRIO_PROCESS, 0, READER_NICE)
    except PermissionError:
        return None
    return before


def run_rounds(
    round_: Callable[[], bool],
    ring_fds: Sequence[int],
    *,
    workload_fd: int | None = None,
    stop_fds: Sequence[int] = (),
    until_hangup: bool = False,
    disable: Callable[[], None],
) -> None:
    """Call ``round_`` whenever a ring fd is readable (or every ``POLL_MS``; at once again while
    it returns true) until ``workload_fd`` (a pidfd) or one of ``stop_fds`` becomes readable or,
    with ``until_hangup``, every ring fd has hung up (the traced tasks are gone); then
    ``disable`` the events and call ``round_`` until it returns false."""
    poller = select.poll()
    for fd in ring_fds:
        poller.register(fd, select.POLLIN)
    watched = [fd for fd in (workload_fd, *stop_fds) if fd is not None]
    for fd in watched:
        poller.register(fd, select.POLLIN)
    stop = False
    busy = False
    while not stop:
        # while the rings keep filling, go round again at once instead of waiting for a wakeup
        ready = dict(poller.poll(0 if busy else POLL_MS))
        busy = bool(round_())
        stop = any(fd in ready for fd in watched)
        if until_hangup and ring_fds:
            stop = stop or all(ready.get(fd, 0) & select.POLLHUP for fd in ring_fds)
    disable()
    while round_():  # the rest
        pass


class SpoolDrain:
    """A round of live reading: the new bytes of every perf ring (frames ``PERF``, numbered as in
    ``perf_rings``) and the committed records of every BPF ring buffer (frames ``BPF``, stamped
    with ``clock()`` just after they were taken) copied into ``spool``, the space given back,
    then a ``ROUND`` frame. A ring whose bytes the spool has no room for (its memory full, its
    file not writable) is left as it is, its kernel counting what it drops meanwhile: ``held``
    counts such rounds, and the round waits ``HELD_WAIT`` seconds for the renderer to free
    memory rather than go round again at once."""

    def __init__(self, spool: Spool, perf_rings: Sequence[PerfRing], bpf_rings: Sequence[BpfRingReader] = (),
                 clock: Callable[[], int] | None = None) -> None:
        if bpf_rings and clock is None:
            raise ValueError("ring buffer records need a clock for their time")
        self.spool = spool
        self.perf_rings = tuple(perf_rings)
        self.bpf_rings = tuple(bpf_rings)
        self.clock = clock
        self.held = 0
        self._last = False  # whether the last round took anything

    def round(self) -> bool:
        """One round; true when a ring was more than 1/16 full: come back at once."""
        busy = took = False
        spool = self.spool
        for source, ring in enumerate(self.perf_rings):
            span = ring.peek()
            if span is None:
                continue
            if not spool.put(PERF, source, 0, span.parts):
                self.held += 1
                busy = True
                continue
            ring.release(span)
            took = True
            busy = busy or span.size * BUSY_SHARE > ring.data_size
        for source, reader in enumerate(self.bpf_rings):
            records, position = reader.committed()
            if not len(records):
                continue
            if not spool.put(BPF, source, self.clock(), (records,)):  # type: ignore[misc]
                self.held += 1
                busy = True
                continue
            reader.release(position)
            took = True
            busy = busy or len(records) * BUSY_SHARE > reader.mapping.data_size
        if took or self._last:  # the round after one that took something ends it for the renderer
            spool.put(ROUND, 0, 0)
            spool.wake()
        self._last = took
        if busy and not took and self.held:
            time.sleep(HELD_WAIT)
        return busy


class DrainPlan(Record):
    """What a drain process does with the descriptors it is handed, in their order: the perf
    rings' events (``perf``: data pages and sample_type of each), the BPF ring buffer maps'
    (``bpf``: name and data size of each), ``events`` more perf events to disable at the end, then
    the workload's pidfd (``workload``) and a stop signal's pipe (``stop``) if there are;
    ``until_hangup``: stop when every ring hangs up (-p); ``clock``: perf's clock (offset, error)
    for the ring buffer records."""

    __slots__ = ("perf", "bpf", "events", "workload", "stop", "until_hangup", "clock")
    perf: tuple[tuple[int, int], ...]
    bpf: tuple[tuple[str, int], ...]
    events: int
    workload: bool
    stop: bool
    until_hangup: bool
    clock: tuple[int, int] | None

    def __init__(self, perf: Iterable[Sequence[int]], bpf: Iterable[Sequence[object]], events: int, workload: bool,
                 stop: bool, until_hangup: bool, clock: Sequence[int] | None) -> None:
        set_field(self, "perf", tuple((int(pages), int(sample_type)) for pages, sample_type in perf))
        set_field(self, "bpf", tuple((str(name), int(size)) for name, size in bpf))  # type: ignore[call-overload]
        set_field(self, "events", events)
        set_field(self, "workload", workload)
        set_field(self, "stop", stop)
        set_field(self, "until_hangup", until_hangup)
        set_field(self, "clock", (int(clock[0]), int(clock[1])) if clock is not None else None)

    def to_json(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}


_FDS_A_MESSAGE = 250  # below the kernel's SCM_MAX_FD (253)


class DrainProcess:
    """A drain in a process of its own. It is forked before the recording's programs are loaded,
    so that their prelude leaves it out as it leaves evspec out (``pid`` goes in it: a program
    sees every task, the drain's polls and writes too), and handed the rings once they exist
    (``hand_over``: their descriptors over a socket, what to do with them in a ``DrainPlan``). It
    ends the recording when the workload exits, a stop signal comes, every traced task is gone
    (-p), or this process closes the socket (``stop``) or dies; it then disables the events,
    empties the rings and puts ``END`` into the spool (``ERROR`` and the message when something
    fails). It ignores SIGINT and SIGTERM, which this process handles."""

    def __init__(self, spool: Spool, kernel: Kernel) -> None:
        self.spool = spool
        self.kernel = kernel
        self.pid = -1
        self.pidfd = -1
        self._socket: socket.socket | None = None
        self.status: int | None = None

    def start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            ours.close()
            self._child(theirs)
        theirs.close()
        self._socket = ours
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)

    def hand_over(self, plan: DrainPlan, fds: Sequence[int]) -> None:
        """Start the drain on ``fds`` as ``plan`` says."""
        assert self._socket is not None
        message = json.dumps({**plan.to_json(), "fds": len(fds)}).encode()
        try:
            for at in range(0, max(len(fds), 1), _FDS_A_MESSAGE):
                socket.send_fds(self._socket, [message if at == 0 else b"+"], list(fds[at : at + _FDS_A_MESSAGE]))
        except OSError as exc:
            raise KernelError(codes.RING_BUFFER, f"the drain process {self.pid} is gone before it could read "
                                                 f"the rings: {exc.strerror or exc}") from None

    # ------------------------------------------------------------ the child

    def _child(self, sock: socket.socket) -> None:
        code = 0
        try:
            gc.disable()  # nothing of the parent's may be finalized here: its descriptors are closed
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            _close_all_but({sock.fileno(), *self.spool.fds})
            received = _receive(sock)
            if received is not None:
                self._drain(sock, *received)
                self._last_word(END, b"")
        except BaseException as exc:  # said to the renderer, which raises it
            code = 1
            message = getattr(exc, "message", None) or "".join(traceback.format_exception_only(exc)).strip()
            self._last_word(ERROR, message.encode(errors="replace"))
        finally:
            self.spool.wake()
            os._exit(code)

    def _last_word(self, kind: int, payload: bytes) -> None:
        """Put END or ERROR into the spool, waiting while it has no room (the renderer frees
        memory) as long as the parent lives."""
        parent = os.getppid()
        while not self.spool.put(kind, 0, 0, [payload]) and os.getppid() == parent:
            self.spool.wake()
            time.sleep(HELD_WAIT)

    def _drain(self, sock: socket.socket, plan: DrainPlan, fds: list[int]) -> None:
        kernel = self.kernel
        perf_fds, fds = fds[: len(plan.perf)], fds[len(plan.perf) :]
        bpf_fds, fds = fds[: len(plan.bpf)], fds[len(plan.bpf) :]
        event_fds, fds = fds[: plan.events], fds[plan.events :]
        workload_fd = fds.pop(0) if plan.workload else None
        stop_fds = [sock.fileno(), *fds[:1]] if plan.stop else [sock.fileno()]
        rings = [PerfRing(kernel.mmap_ring(fd, pages), sample_type)
                 for fd, (pages, sample_type) in zip(perf_fds, plan.perf, strict=True)]
        readers = [BpfRingReader(name, kernel.mmap_bpf_ringbuf(fd, size))
                   for fd, (name, size) in zip(bpf_fds, plan.bpf, strict=True)]
        clock = None
        if plan.clock is not None:
            from evspec.loader.output.perf_clock import PerfClock

            clock = PerfClock(*plan.clock).now

        def disable() -> None:
            for fd in [*perf_fds, *event_fds]:
                kernel.disable(fd)

        favour_reader()
        run_rounds(SpoolDrain(self.spool, rings, readers, clock).round, [*perf_fds, *bpf_fds],
                   workload_fd=workload_fd, stop_fds=stop_fds, until_hangup=plan.until_hangup, disable=disable)

    # ------------------------------------------------------------ this side

    def stop(self) -> None:
        """Ask the drain to end the recording (as a stop signal would), or not to start one."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def exited(self) -> bool:
        return self.status is not None or (self.pidfd >= 0 and bool(select.select([self.pidfd], [], [], 0)[0]))

    def wait(self) -> int:
        if self.status is None and self.pid > 0:
            _, raw = os.waitpid(self.pid, 0)
            self.status = os.waitstatus_to_exitcode(raw)
        return self.status or 0

    def close(self) -> None:
        """Stop the drain and reap it: one that was handed nothing ends at once, one that was is
        given a second to put the rings' last records into the spool, and killed after that."""
        self.stop()
        if self.status is None and self.pid > 0:
            if not select.select([self.pidfd], [], [], 1.0)[0]:
                os.kill(self.pid, signal.SIGKILL)
            self.wait()
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1


def _receive(sock: socket.socket) -> tuple[DrainPlan, list[int]] | None:
    """The plan and the descriptors ``hand_over`` sent; None when the socket was closed first."""
    message, fds, flags, _ = socket.recv_fds(sock, 1 << 16, _FDS_A_MESSAGE)
    if not message:
        return None
    if flags & socket.MSG_CTRUNC:
        raise OSError("the drain process was handed more descriptors than it could take")
    fields = json.loads(message)
    count = fields.pop("fds")
    while len(fds) < count:
        more, got, flags, _ = socket.recv_fds(sock, 16, _FDS_A_MESSAGE)
        if not more or flags & socket.MSG_CTRUNC:
            raise OSError(f"the drain process was handed {len(fds)} of {count} descriptors")
        fds.extend(got)
    return DrainPlan(**fields), fds


def _close_all_but(keep: set[int]) -> None:
    """Close every descriptor a fork inherited but standard input, output, error and ``keep``:
    the drain must hold none of the parent's pipes open (a workload waiting for its go pipe's end
    would wait for ever)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:  # the directory's own descriptor, closed already
                pass
