"""Perf event operations of ``Kernel``: opening events, their ioctls, their lost-sample counts and
the mapping of their ring buffers."""

from __future__ import annotations

import ctypes
import errno as E
import mmap as mmap_mod
import struct
from collections.abc import Callable

from evspec.loader.kernel.base import KernelBase
from evspec.loader.kernel.errors import KernelError, permission_error
from evspec.loader.kernel.syscalls import SyscallError

from evspec.codes import kernel as codes
from evspec.span import Slotted

# The perf ABI (loader.abi.perf: its enums and structures cost a cold start 3 ms) is imported by the
# operations that use it: ``evspec verify`` uses none.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from evspec.loader.abi.perf import Ioctl, PerfEventAttr

# read(2) of an event opened with read_format PERF_FORMAT_LOST alone: {u64 value; u64 lost;}.
_VALUE_AND_LOST = struct.Struct("=QQ")


class RingMapping(Slotted):
    """A perf ring buffer mapped into this process: one control page, then ``data_size`` bytes."""

    fd: int
    address: int
    length: int
    page_size: int

    @property
    def data_size(self) -> int:
        return self.length - self.page_size


class BpfRingMapping(Slotted):
    """A ``BPF_MAP_TYPE_RINGBUF`` map mapped as the kernel lays it out: the consumer page
    (writable: ``consumer_pos``), then the producer page (``producer_pos``) followed by the
    ``data_size`` data bytes mapped twice in a row, so that a record never wraps in the mapping."""

    fd: int
    consumer: int  # address of the consumer page
    producer: int  # address of the producer page; the data starts one page later
    data_size: int
    page_size: int

    @property
    def data(self) -> int:
        return self.producer + self.page_size


class PerfOperations(KernelBase):
    PERF_FORMAT_LOST = 1 << 4  # abi.perf_bits.ReadFormat.LOST, for callers that hold only the Kernel

    def perf_event_open(
        self, attr: PerfEventAttr, *, pid: int = -1, cpu: int = -1, group_fd: int = -1, flags: int = 0
    ) -> int:
        """Open a perf event; the descriptor is close-on-exec."""
        if attr.size == 0:
            attr.size = ctypes.sizeof(attr)
        what = f" on cpu {cpu}" if cpu >= 0 else ""
        try:
            return self.funnel.perf_event_open(attr, pid, cpu, group_fd, flags)
        except SyscallError as exc:
            if exc.errno == E.E2BIG:
                from evspec.loader.abi.perf import PerfEventAttr

                known = attr.size  # the kernel wrote the size it knows
                beyond = [
                    name
                    for name, *_ in attr._fields_
                    if getattr(PerfEventAttr, name).offset >= known and getattr(attr, name)
                ]
                raise KernelError(
                    codes.ATTR_TOO_BIG,
                    f"perf_event_open{what}: this kernel knows perf_event_attr up to {known} bytes; "
                    f"the event sets {', '.join(beyond) or 'fields'} beyond that (E2BIG)",
                    errno=exc.errno,
                    operation="perf_event_open",
                    help=("a newer kernel is needed for this event",),
                ) from None
            if exc.errno in (E.EPERM, E.EACCES):
                raise permission_error(self.funnel, "perf_event_open", exc.errno, what, perf=True) from None
            if exc.errno == E.ENOENT:
                raise KernelError(
                    codes.NOT_FOUND,
                    f"perf_event_open{what}: the kernel has no event of type {attr.type} config "
                    f"{attr.config:#x} (ENOENT)",
                    errno=exc.errno,
                    operation="perf_event_open",
                ) from None
            raise self._error(exc, f"the event of type {attr.type} config {attr.config:#x}{what}", perf=True) from None

    def _ioctl(self, fd: int, request: Ioctl, arg: int = 0) -> int:
        try:
            return self.funnel.ioctl(fd, int(request), arg, operation=f"PERF_EVENT_IOC_{request.name}")
        except SyscallError as exc:
            raise self._error(exc, f"perf event fd {fd}", perf=True) from None

    def enable(self, fd: int) -> None:
        from evspec.loader.abi.perf import Ioctl

        self._ioctl(fd, Ioctl.ENABLE)

    def disable(self, fd: int) -> None:
        from evspec.loader.abi.perf import Ioctl

        self._ioctl(fd, Ioctl.DISABLE)

    def set_bpf(self, fd: int, prog_fd: int) -> None:
        """Attach a program to a tracepoint/kprobe/uprobe perf event (PERF_EVENT_IOC_SET_BPF)."""
        from evspec.loader.abi.perf import Ioctl

        self._ioctl(fd, Ioctl.SET_BPF, prog_fd)

    def set_filter(self, fd: int, expression: str) -> None:
        """An ftrace filter on a tracepoint perf event (PERF_EVENT_IOC_SET_FILTER): only records
        for which ``expression`` holds are kept (``common_pid != 42``)."""
        from evspec.loader.abi.perf import Ioctl

        text = ctypes.create_string_buffer(expression.encode())
        self._ioctl(fd, Ioctl.SET_FILTER, ctypes.addressof(text))

    def event_id(self, fd: int) -> int:
        """The kernel's id of a perf event (PERF_EVENT_IOC_ID), as PERF_SAMPLE_IDENTIFIER carries it."""
        from evspec.loader.abi.perf import Ioctl

        value = ctypes.c_uint64()
        self._ioctl(fd, Ioctl.ID, ctypes.addressof(value))
        return value.value

    def lost_count_readable(self) -> bool:
        """Whether this kernel counts an event's lost samples for ``read_lost`` (PERF_FORMAT_LOST,
        Linux 6.0; asks it once per call: a disabled dummy event is opened, read and closed)."""
        if self._reader() is None:
            return False
        from evspec.loader.abi.perf import PerfEventAttr
        from evspec.loader.abi.perf_bits import AttrFlag, ReadFormat
        from evspec.loader.abi.perf_ids import PerfType, SwConfig

        attr = PerfEventAttr(type=PerfType.SOFTWARE, config=SwConfig.DUMMY, read_format=ReadFormat.LOST)
        attr.size = ctypes.sizeof(PerfEventAttr)
        attr.flags = AttrFlag.DISABLED
        try:
            fd = self.perf_event_open(attr, pid=0, cpu=-1)
        except KernelError:
            return False
        try:
            self.read_lost(fd)
            return True
        except KernelError:
            return False
        finally:
            self.close(fd)

    def read_lost(self, fd: int) -> int:
        """The samples perf event ``fd`` (opened with read_format PERF_FORMAT_LOST alone) dropped
        because its ring had no room, including those no PERF_RECORD_LOST reported."""
        reader = self._reader()
        if reader is None:
            raise KernelError(codes.SYSCALL_FAILED, f"read of perf event fd {fd}: this funnel cannot read")
        try:
            data = reader(fd, _VALUE_AND_LOST.size)
        except OSError as exc:  # SyscallError, or a fake's OSError
            raise self._error(SyscallError(exc.errno or 0, "read"), f"perf event fd {fd}", perf=True) from None
        if len(data) != _VALUE_AND_LOST.size:
            raise KernelError(
                codes.SYSCALL_FAILED,
                f"read of perf event fd {fd}: {len(data)} bytes, not the {_VALUE_AND_LOST.size} of "
                "value and lost count",
            )
        return int(_VALUE_AND_LOST.unpack(data)[1])

    def _reader(self) -> Callable[[int, int], bytes] | None:
        """The funnel's read(2), None when it has none (see ``syscalls``)."""
        return getattr(self.funnel, "read", None)

    def mmap_ring(self, fd: int, data_pages: int) -> RingMapping:
        """Map the ring buffer of a perf event: one control page plus ``data_pages`` (a power of 2)."""
        if data_pages <= 0 or data_pages & (data_pages - 1):
            raise KernelError(
                codes.RING_BUFFER, f"ring buffer pages must be a power of two, not {data_pages}"
            )
        length = (data_pages + 1) * self.page_size
        try:
            address = self.funnel.mmap(
                length, mmap_mod.PROT_READ | mmap_mod.PROT_WRITE, mmap_mod.MAP_SHARED, fd, 0
            )
        except SyscallError as exc:
            raise self._error(exc, f"the ring buffer of perf event fd {fd}", perf=True) from None
        return RingMapping(fd=fd, address=address, length=length, page_size=self.page_size)

    def mmap_bpf_ringbuf(self, fd: int, data_size: int) -> BpfRingMapping:
        """Map the BPF ring buffer map ``fd`` of ``data_size`` bytes (its max_entries)."""
        page = self.page_size
        if data_size <= 0 or data_size & (data_size - 1) or data_size % page:
            raise KernelError(codes.RING_BUFFER, f"BPF ring buffer size {data_size} is not a power-of-two "
                                                 f"multiple of the page size ({page})")
        try:
            consumer = self.funnel.mmap(page, mmap_mod.PROT_READ | mmap_mod.PROT_WRITE, mmap_mod.MAP_SHARED, fd, 0)
        except SyscallError as exc:
            raise self._error(exc, f"the consumer page of BPF ring buffer map fd {fd}") from None
        try:
            producer = self.funnel.mmap(page + 2 * data_size, mmap_mod.PROT_READ, mmap_mod.MAP_SHARED, fd, page)
        except SyscallError as exc:
            self.funnel.munmap(consumer, page)
            raise self._error(exc, f"the data pages of BPF ring buffer map fd {fd}") from None
        return BpfRingMapping(fd, consumer, producer, data_size, page)

    def munmap_bpf_ringbuf(self, ring: BpfRingMapping) -> None:
        first: SyscallError | None = None
        for address, length in ((ring.producer, ring.page_size + 2 * ring.data_size), (ring.consumer, ring.page_size)):
            try:
                self.funnel.munmap(address, length)
            except SyscallError as exc:
                first = first or exc
        if first is not None:
            raise self._error(first, f"the mapping of BPF ring buffer map fd {ring.fd}") from None

    def munmap(self, ring: RingMapping) -> None:
        try:
            self.funnel.munmap(ring.address, ring.length)
        except SyscallError as exc:
            raise self._error(exc, f"the ring buffer of perf event fd {ring.fd}") from None
