"""The drain of a live recording: a round copies every ring's new bytes into the spool and frees
them, a ring the spool has no room for is left as it is; the reading loop's stop conditions; the
plan and the descriptors a drain process is handed."""

from __future__ import annotations

import ctypes
import os
import struct
import threading

import pytest
from evspec.loader.abi.perf import MmapPage
from evspec.loader.kernel import RingMapping
from evspec.loader.output import drain as drain_module
from evspec.loader.output.bpf_ringbuf import BpfRingReader
from evspec.loader.output.drain import DrainPlan, SpoolDrain, run_rounds
from evspec.loader.output.perf_ring import PerfRing
from evspec.loader.output.spool import BPF, MIN_MEMORY, PERF, ROUND, Frame, Spool
from evspec.loader.session import SAMPLE_TYPE
from perf_records import full_sample
from test_bpf_ringbuf import FakeRing

PAGE = 4096


class Ring:
    """A perf ring's mapping laid out as the kernel's, filled at data_head."""

    def __init__(self, size: int = 1 << 16) -> None:
        self.size = size
        self.buf = ctypes.create_string_buffer(PAGE + size)
        self.page = MmapPage.from_address(ctypes.addressof(self.buf))
        self.page.data_offset, self.page.data_size = PAGE, size
        self.reader = PerfRing(RingMapping(-1, ctypes.addressof(self.buf), PAGE + size, PAGE), int(SAMPLE_TYPE))

    def put(self, record: bytes) -> None:
        head = self.page.data_head
        for i, byte in enumerate(record):
            self.buf[PAGE + (head + i) % self.size] = byte
        self.page.data_head = head + len(record)

    @property
    def pending(self) -> int:
        return self.page.data_head - self.page.data_tail


def frames(spool: Spool) -> list[Frame]:
    out = []
    while (frame := spool.get()) is not None:
        out.append(frame)
    return out


def test_a_round_copies_each_ring_into_the_spool_and_frees_it() -> None:
    rings, bpf = [Ring(), Ring()], FakeRing()
    with Spool(MIN_MEMORY) as spool:
        drain = SpoolDrain(spool, [r.reader for r in rings], [BpfRingReader("rb", bpf.mapping)], clock=lambda: 99)
        assert drain.round() is False and frames(spool) == []  # nothing: no frame, not even a ROUND
        first = full_sample(5, 5, 10, 1, b"a")
        rings[1].put(first)
        bpf.write(b"hello")
        record = struct.pack("=II", 5, 0) + b"hello\0\0\0"  # as the ring holds it: header, padding
        assert drain.round() is False  # far below 1/16 of a ring: no need to come back at once
        assert frames(spool) == [Frame(PERF, 1, 0, first), Frame(BPF, 0, 99, record), Frame(ROUND, 0, 0, b"")]
        assert rings[1].pending == 0 and bpf.consumed == bpf.pos
        assert drain.round() is False and frames(spool) == [Frame(ROUND, 0, 0, b"")]  # ends the last round's
        assert drain.round() is False and frames(spool) == []
        many = full_sample(5, 5, 11, 0, b"b" * 60) * 60  # 6 KiB of 64: more than a sixteenth
        rings[0].put(many)
        assert drain.round() is True and frames(spool)[0] == Frame(PERF, 0, 0, many)


def test_a_ring_the_spool_cannot_take_is_left_to_the_kernel() -> None:
    """Memory full and the spool's file on a full disk: the ring keeps its bytes (the kernel
    counts what it cannot write then); once the renderer frees memory, they go."""
    ring = Ring(1 << 17)
    with Spool(MIN_MEMORY) as spool:
        full = spool.fd
        spool.fd = os.open("/dev/full", os.O_WRONLY)
        try:
            drain = SpoolDrain(spool, [ring.reader])
            big = full_sample(5, 5, 1, 0, bytes(4000)) * 20  # 80 KB: more than the memory
            ring.put(big)
            assert drain.round() is True and drain.held == 1 and ring.pending == len(big)
            assert frames(spool) == [] and spool.stats().errno == 28
            os.close(spool.fd)
            spool.fd = full
            assert drain.round() is True and ring.pending == 0  # (more than 1/16 of the ring: come back)
            assert [f.kind for f in frames(spool)] == [PERF, ROUND]
        finally:
            if spool.fd != full:
                os.close(spool.fd)
                spool.fd = full


def test_rounds_go_on_until_a_stop_then_disable_and_empty_the_rings() -> None:
    stop_r, stop_w = os.pipe()
    calls: list[str] = []
    left = [3]

    def round_() -> bool:
        calls.append("round")
        if calls.count("disable"):
            left[0] -= 1
            return left[0] > 0  # the rings still hold records
        if calls.count("round") == 4:
            os.write(stop_w, b"!")
        return True  # busy: again at once

    run_rounds(round_, [], stop_fds=[stop_r], disable=lambda: calls.append("disable"))
    assert calls == ["round"] * 5 + ["disable"] + ["round"] * 3  # the stop is seen before the fifth
    os.close(stop_r)
    os.close(stop_w)


def test_rounds_stop_when_the_workload_exits() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    pidfd = os.pidfd_open(pid)
    try:
        done = threading.Event()
        run_rounds(lambda: False, [], workload_fd=pidfd, disable=done.set)
        assert done.is_set()
    finally:
        os.waitpid(pid, 0)
        os.close(pidfd)


def test_a_plan_and_hundreds_of_descriptors_reach_the_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    """More descriptors than one message carries (SCM_RIGHTS takes 253 at most) arrive in order."""
    import socket

    plan = DrainPlan([(1024, int(SAMPLE_TYPE))] * 2, [("rb", 4096)], 300, True, True, False, (17, 1))
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pipes = [os.pipe() for _ in range(160)]
    sent = [fd for pair in pipes for fd in pair]  # 320 descriptors
    process = drain_module.DrainProcess.__new__(drain_module.DrainProcess)
    process._socket = ours
    try:
        process.hand_over(plan, sent)
        got, fds = drain_module._receive(theirs)  # type: ignore[misc]
        assert got == plan and len(fds) == len(sent)
        assert [os.fstat(a).st_ino for a in fds] == [os.fstat(b).st_ino for b in sent]
        for fd in fds:
            os.close(fd)
        ours.close()
        assert drain_module._receive(theirs) is None  # closed before a plan: nothing to drain
    finally:
        theirs.close()
        for fd in sent:
            os.close(fd)
