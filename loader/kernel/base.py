"""The base of ``Kernel``: issuing bpf(2) commands through the funnel, closing descriptors.

``KernelBase`` holds the funnel and what every group of operations (``maps``,
``programs``, ``perf``) needs: ``_bpf`` (one bpf command, RLIMIT_MEMLOCK lifted
once when that explains an EPERM, failures made ``KernelError``), ``_bpf_load`` (the same for the
load commands, with the E2BIG fallback of ``attr``) and the buffers that carry arguments.
"""

from __future__ import annotations

import ctypes
import errno as E
import mmap as mmap_mod
from collections.abc import Iterable, Iterator

from evspec.loader.abi import bpf as abi
from evspec.loader.kernel.attr import LoadAttrFallback
from evspec.loader.kernel.errors import KernelError, call_error, lift_memlock
from evspec.loader.kernel.syscalls import LinuxFunnel, SyscallError, UnsupportedArchitecture

from evspec.codes import kernel as codes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evspec.loader.kernel.syscalls import Funnel

_MEMLOCK_CHARGED = {abi.Cmd.MAP_CREATE, abi.Cmd.PROG_LOAD, abi.Cmd.BTF_LOAD}


def address(buf: ctypes.Array | None) -> int:  # type: ignore[type-arg]
    """The address of a ctypes buffer, 0 for none (a NULL pointer field)."""
    return 0 if buf is None else ctypes.addressof(buf)


def in_buffer(data: bytes) -> ctypes.Array:  # type: ignore[type-arg]
    """A copy of ``data`` the kernel can read (at least one byte, so it has an address)."""
    return (ctypes.c_char * max(len(data), 1)).from_buffer_copy(data or b"\0")


def bytes_address(data: bytes) -> int:
    """The address of the contents of ``data`` itself (no copy): for inputs the kernel only reads.
    The caller keeps ``data`` alive for as long as the address is used."""
    found = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value
    assert found is not None
    return found


class KernelBase:
    """The funnel and the calls every kernel operation is made of."""

    def __init__(self, funnel: Funnel | None = None, *, page_size: int = mmap_mod.PAGESIZE) -> None:
        if funnel is None:
            try:
                funnel = LinuxFunnel()
            except UnsupportedArchitecture as exc:
                raise KernelError(codes.UNSUPPORTED_ARCH, str(exc)) from None
        self.funnel = funnel
        self.page_size = page_size
        self._load_attrs = LoadAttrFallback()

    @property
    def left_out(self) -> dict[str, list[str]]:
        """Operation (``BPF_MAP_CREATE``…) -> the optional fields this kernel did not know."""
        return self._load_attrs.left_out

    @property
    def notes(self) -> list[str]:
        """What ``-v`` should say about this kernel: the fields it did not know."""
        return self._load_attrs.notes

    def _error(
        self, exc: SyscallError, what: str, *, perf: bool = False, cmd: abi.Cmd | None = None
    ) -> KernelError:
        return call_error(self.funnel, exc, what, perf=perf, cmd=cmd)

    def _bpf(self, cmd: abi.Cmd, attr: ctypes.Structure, what: str = "", *, size: int | None = None) -> int:
        """Issue ``cmd`` with ``attr`` (its first ``size`` bytes); ``what`` names the object the
        call is about in the error."""
        lifted_memlock = False
        size = ctypes.sizeof(attr) if size is None else size
        while True:
            try:
                return self.funnel.bpf(int(cmd), attr, size, operation=cmd.operation)
            except SyscallError as exc:
                if exc.errno == E.EPERM and cmd in _MEMLOCK_CHARGED and not lifted_memlock:
                    if lift_memlock(self.funnel):
                        lifted_memlock = True
                        continue
                raise self._error(exc, what, cmd=cmd) from None

    def _bpf_load(self, cmd: abi.Cmd, attr: ctypes.Structure, what: str) -> int:
        """MAP_CREATE, PROG_LOAD, BTF_LOAD: ``_bpf`` that leaves out, on E2BIG, the optional fields
        the running kernel does not know (remembered for the next call of the same command)."""
        return self._load_attrs.call(cmd, attr, lambda size: self._bpf(cmd, attr, what, size=size))

    def _bpf_unless_missing(self, cmd: abi.Cmd, attr: ctypes.Structure, what: str = "") -> bool:
        """``_bpf`` for a lookup: False when the kernel says there is nothing (ENOENT)."""
        try:
            self._bpf(cmd, attr, what)
        except KernelError as exc:
            if exc.errno == E.ENOENT:
                return False
            raise
        return True

    def _info(self, fd: int, info: ctypes.Structure, what: str) -> None:
        """Fill ``info`` (``bpf_map_info``, ``bpf_prog_info``) for the object of ``fd``."""
        attr = abi.ObjInfoAttr(bpf_fd=fd, info_len=ctypes.sizeof(info), info=ctypes.addressof(info))
        self._bpf(abi.Cmd.OBJ_GET_INFO_BY_FD, attr, what)

    def _next_ids(self, cmd: abi.Cmd) -> Iterator[int]:
        """The ids ``cmd`` (PROG_GET_NEXT_ID, MAP_GET_NEXT_ID) walks through, in order."""
        attr = abi.GetNextIdAttr(start_id=0)
        while self._bpf_unless_missing(cmd, attr):
            yield attr.next_id
            attr = abi.GetNextIdAttr(start_id=attr.next_id)

    def close(self, fd: int) -> None:
        try:
            self.funnel.close(fd)
        except SyscallError as exc:
            raise self._error(exc, f"fd {fd}") from None

    def close_all(self, fds: Iterable[int]) -> None:
        """Close every descriptor of ``fds``; the first failure is raised after all were tried."""
        first: KernelError | None = None
        for fd in fds:
            try:
                self.close(fd)
            except KernelError as exc:
                first = first or exc
        if first is not None:
            raise first
