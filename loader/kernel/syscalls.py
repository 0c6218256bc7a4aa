"""The one funnel through which evspec talks to the kernel.

Every ``bpf(2)``, ``perf_event_open(2)``, ``ioctl(2)``, ``mmap(2)``, ``munmap(2)`` and ``close(2)``
that evspec makes goes through a ``Funnel``, and so does the ``read(2)`` of a perf event's counts
where the funnel has ``read`` (``LinuxFunnel`` has; a fake without it stands for a kernel whose
events cannot be read). ``LinuxFunnel`` issues the real system calls through libc's ``syscall()``
(ctypes, ``use_errno``); tests swap in ``kernel.fake.FakeKernel``.
A failing call raises ``SyscallError`` carrying the errno and the name of the operation; the typed
layer (``loader.kernel``) turns that into a coded ``KernelError``.
"""

from __future__ import annotations

import ctypes
import errno as errno_mod
import os
import resource

from evspec.span import Slotted

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from typing import Protocol

# Flags this module applies on its own so that no caller can forget them.
PERF_FLAG_FD_CLOEXEC = 1 << 3

# Linux capability numbers (include/uapi/linux/capability.h).
CAP_SYS_ADMIN = 21
CAP_SYS_RESOURCE = 24
CAP_PERFMON = 38
CAP_BPF = 39

RLIM_INFINITY = resource.RLIM_INFINITY


class SyscallNumbers(Slotted):
    bpf: int
    perf_event_open: int
    ioctl: int
    mmap: int
    munmap: int
    close: int


# arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h (arm64).
SYSCALL_NUMBERS: dict[str, SyscallNumbers] = {
    "x86_64": SyscallNumbers(bpf=321, perf_event_open=298, ioctl=16, mmap=9, munmap=11, close=3),
    "aarch64": SyscallNumbers(bpf=280, perf_event_open=241, ioctl=29, mmap=222, munmap=215, close=57),
}


class UnsupportedArchitecture(RuntimeError):
    def __init__(self, machine: str) -> None:
        super().__init__(
            f"evspec's kernel layer knows the system call numbers of {', '.join(SYSCALL_NUMBERS)} "
            f"only, not of {machine!r}"
        )
        self.machine = machine


def syscall_numbers(machine: str | None = None) -> SyscallNumbers:
    machine = machine or os.uname().machine  # what platform.machine() says, without importing it
    aliases = {"amd64": "x86_64", "arm64": "aarch64"}
    machine = aliases.get(machine, machine)
    try:
        return SYSCALL_NUMBERS[machine]
    except KeyError:
        raise UnsupportedArchitecture(machine) from None


class SyscallError(OSError):
    """A system call failed; ``operation`` names what was asked (``BPF_MAP_CREATE``, ``ioctl``…)."""

    def __init__(self, err: int, operation: str) -> None:
        super().__init__(err, f"{operation}: {os.strerror(err)}")
        self.operation = operation


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def syscall(libc: ctypes.CDLL, nr: int, *args: int, operation: str) -> int:
    """Issue system call ``nr`` with integer (or address) arguments; raise ``SyscallError``."""
    c_args = [ctypes.c_long(a) for a in args]
    while True:
        ctypes.set_errno(0)
        ret = int(libc.syscall(ctypes.c_long(nr), *c_args))
        if ret != -1:
            return ret
        err = ctypes.get_errno()
        if err == errno_mod.EINTR:
            continue
        raise SyscallError(err, operation)


if TYPE_CHECKING:  # a protocol for the type checker only: nothing checks a funnel at run time
    class Funnel(Protocol):
        """The kernel operations evspec needs, at the level of the raw system calls."""

        def bpf(self, cmd: int, attr: ctypes.Structure, size: int, *, operation: str) -> int: ...

        def perf_event_open(
            self, attr: ctypes.Structure, pid: int, cpu: int, group_fd: int, flags: int
        ) -> int: ...

        def ioctl(self, fd: int, request: int, arg: int, *, operation: str) -> int: ...

        def mmap(self, length: int, prot: int, flags: int, fd: int, offset: int) -> int: ...

        def munmap(self, address: int, length: int) -> None: ...

        def close(self, fd: int) -> None: ...

        def effective_capabilities(self) -> int: ...

        def memlock_limit(self) -> tuple[int, int]: ...

        def set_memlock_limit(self, soft: int, hard: int) -> None: ...


class LinuxFunnel:
    """The real kernel, through libc's ``syscall()``."""

    def __init__(self, machine: str | None = None) -> None:
        self.numbers = syscall_numbers(machine)
        self._libc = _libc()

    def bpf(self, cmd: int, attr: ctypes.Structure, size: int, *, operation: str) -> int:
        return syscall(self._libc, self.numbers.bpf, cmd, ctypes.addressof(attr), size, operation=operation)

    def perf_event_open(self, attr: ctypes.Structure, pid: int, cpu: int, group_fd: int, flags: int) -> int:
        return syscall(
            self._libc,
            self.numbers.perf_event_open,
            ctypes.addressof(attr),
            pid,
            cpu,
            group_fd,
            flags | PERF_FLAG_FD_CLOEXEC,
            operation="perf_event_open",
        )

    def ioctl(self, fd: int, request: int, arg: int, *, operation: str) -> int:
        return syscall(self._libc, self.numbers.ioctl, fd, request, arg, operation=operation)

    def mmap(self, length: int, prot: int, flags: int, fd: int, offset: int) -> int:
        return syscall(self._libc, self.numbers.mmap, 0, length, prot, flags, fd, offset, operation="mmap")

    def munmap(self, address: int, length: int) -> None:
        syscall(self._libc, self.numbers.munmap, address, length, operation="munmap")

    def close(self, fd: int) -> None:
        # close(2) must not be retried on EINTR: the descriptor is gone either way.
        ctypes.set_errno(0)
        if int(self._libc.syscall(ctypes.c_long(self.numbers.close), ctypes.c_long(fd))) == -1:
            err = ctypes.get_errno()
            if err != errno_mod.EINTR:
                raise SyscallError(err, "close")

    def read(self, fd: int, size: int) -> bytes:
        try:
            return os.read(fd, size)
        except OSError as exc:
            raise SyscallError(exc.errno or errno_mod.EIO, "read") from None

    def effective_capabilities(self) -> int:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
        return 0

    def memlock_limit(self) -> tuple[int, int]:
        return resource.getrlimit(resource.RLIMIT_MEMLOCK)

    def set_memlock_limit(self, soft: int, hard: int) -> None:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (soft, hard))
