"""perf's clock read from user space, for the samples the reader writes itself (``-o``).

The kernel stamps samples with ``local_clock()``, which no ``clock_gettime()`` clock returns (here
it runs ~1 ms ahead of CLOCK_MONOTONIC). ``PerfClock.calibrate`` measures its offset from
CLOCK_MONOTONIC_RAW once: a dummy event on the reader's thread records a PERF_RECORD_COMM when
the thread renames itself (to the name it has), with the perf time in its sample_id trailer.
Both clocks count the same counter and neither is slewed by NTP (the offset moved by less than a
microsecond in 10 s on the test machine). The offset is the COMM's time minus CLOCK_MONOTONIC_RAW
read just after the rename, in the narrowest of a few tries: it errs towards earlier times by at
most that width (about a microsecond), so a time read after records were taken is never ahead of
the samples the kernel writes afterwards.
"""

from __future__ import annotations

import ctypes
import os
import struct
import time

from evspec.loader.abi.perf import PerfEventAttr, RecordType
from evspec.loader.abi.perf_bits import AttrFlag, SampleType
from evspec.loader.abi.perf_ids import PerfType, SwConfig
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.output.perf_ring import PerfRing, walk_records

from evspec.codes import kernel as codes
from evspec.span import Slotted

_TRIES = 5
_PR_SET_NAME, _PR_GET_NAME = 15, 16
_TIME = struct.Struct("<Q")


class PerfClock(Slotted):
    """``now()``: perf's clock, as CLOCK_MONOTONIC_RAW plus the calibrated ``offset`` (ns);
    ``error``: the width of the calibration (ns), by which ``now()`` may run behind."""

    offset: int
    error: int

    def now(self) -> int:
        return time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW) + self.offset

    @staticmethod
    def calibrate(kernel: Kernel, tries: int = _TRIES) -> PerfClock:
        attr = PerfEventAttr(type=PerfType.SOFTWARE, config=SwConfig.DUMMY, sample_type=SampleType.TIME)
        attr.size = ctypes.sizeof(PerfEventAttr)
        attr.flags = AttrFlag.COMM | AttrFlag.SAMPLE_ID_ALL
        fd = kernel.perf_event_open(attr, pid=0, cpu=-1)
        try:
            mapping = kernel.mmap_ring(fd, 1)
            try:
                return _measure(PerfRing(mapping, int(SampleType.TIME)), tries)
            finally:
                kernel.munmap(mapping)
        finally:
            kernel.close(fd)


def _measure(ring: PerfRing, tries: int) -> PerfClock:
    libc = ctypes.CDLL(None, use_errno=True)
    name = ctypes.create_string_buffer(16)
    _prctl(libc, _PR_GET_NAME, name)
    best: PerfClock | None = None
    for _ in range(tries):
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        _prctl(libc, _PR_SET_NAME, name)
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        stamp = _comm_time(ring.take())
        if best is None or after - before < best.error:
            best = PerfClock(stamp - after, after - before)
    assert best is not None
    return best


def _prctl(libc: ctypes.CDLL, option: int, name: ctypes.Array) -> None:  # type: ignore[type-arg]
    if libc.prctl(option, name, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise KernelError(codes.SYSCALL_FAILED, f"prctl({option}) of the reader's thread name failed: "
                                                f"{os.strerror(err)}", errno=err, operation="prctl")


def _comm_time(chunk: bytes) -> int:
    """The time in the trailer of the last PERF_RECORD_COMM of ``chunk``."""
    stamps = [_TIME.unpack_from(chunk, pos + size - _TIME.size)[0]
              for rtype, _misc, pos, size in walk_records(chunk) if rtype == RecordType.COMM]
    if not stamps:
        raise KernelError(codes.RING_BUFFER, "calibrating perf's clock: renaming the reader's thread recorded no "
                                             "PERF_RECORD_COMM")
    return int(stamps[-1])
