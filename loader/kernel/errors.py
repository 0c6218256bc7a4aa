"""The errors of the kernel layer, and how a failed system call becomes one.

Every failure of ``Kernel`` is a ``KernelError`` with a code from ``evspec.codes.kernel``; a
program the verifier rejects is a ``VerifierError`` that keeps the whole log. ``call_error`` reads
the errno of a ``SyscallError`` in the light of the call and of the process (its capabilities, its
locked-memory limit) to say what went wrong in words.
"""

from __future__ import annotations

import errno as E
import os

from evspec.loader.abi import bpf as abi
from evspec.loader.errors import ObjectError
from evspec.loader.kernel.syscalls import (
    CAP_BPF,
    CAP_PERFMON,
    CAP_SYS_ADMIN,
    CAP_SYS_RESOURCE,
    RLIM_INFINITY,
    SyscallError,
)
from evspec.loader.kernel.verifier import VerifierSummary

from evspec.codes import kernel as codes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evspec.loader.kernel.syscalls import Funnel

ENOTSUPP = 524  # the kernel-internal "not supported" that bpf(2) lets escape for batch ops

# Kernel-side checks print the capability that is missing; these name them.
BPF_CAPS = ((CAP_BPF, "CAP_BPF"), (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"))
PERF_CAPS = ((CAP_PERFMON, "CAP_PERFMON"), (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"))
_ELEM_CMDS = {abi.Cmd.MAP_UPDATE_ELEM, abi.Cmd.MAP_UPDATE_BATCH}


class KernelError(ObjectError):
    """A kernel call failed; ``errno`` and ``operation`` (``BPF_MAP_CREATE``…) say which and how."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        errno: int | None = None,
        operation: str | None = None,
        detail: str | None = None,
        help: tuple[str, ...] = (),
    ) -> None:
        super().__init__(code, message, detail=detail, help=help)
        self.errno = errno
        self.operation = operation


class VerifierError(KernelError):
    """The verifier refused a program: ``log`` is its whole log, ``summary`` the short reading."""

    finding = True

    def __init__(self, program: str, errno: int, log: str, summary: VerifierSummary) -> None:
        name = f"program '{program}'" if program else "program"
        super().__init__(
            codes.VERIFIER,
            f"the verifier rejected {name}: {summary.render()}",
            errno=errno,
            operation="BPF_PROG_LOAD",
            detail=log,
        )
        self.program = program
        self.log = log
        self.summary = summary


def has_capability(caps: int, cap: int) -> bool:
    return bool(caps >> cap & 1)


def _has_any(caps: int, needed: tuple[tuple[int, str], ...]) -> bool:
    return any(has_capability(caps, cap) for cap, _ in needed)


def missing_capabilities(funnel: Funnel) -> list[str]:
    """The capabilities a recording needs that this process lacks: CAP_BPF to load programs and
    create maps, CAP_PERFMON to open events and attach (CAP_SYS_ADMIN stands for either)."""
    caps = funnel.effective_capabilities()
    return [needed[0][1] for needed in (BPF_CAPS, PERF_CAPS) if not _has_any(caps, needed)]


def permission_error(funnel: Funnel, operation: str, err: int, where: str, *, perf: bool) -> KernelError:
    """EPERM/EACCES of ``operation``: a missing capability, a locked-memory limit too low (bpf
    only), or a policy that forbids it although the capabilities are there."""
    needed = PERF_CAPS if perf else BPF_CAPS
    strerror = os.strerror(err)
    if not _has_any(funnel.effective_capabilities(), needed):
        return KernelError(
            codes.PERMISSION,
            f"{operation}{where}: {strerror}: the process lacks {needed[0][1]} "
            f"(or CAP_SYS_ADMIN on kernels before 5.8); evspec needs root for this",
            errno=err,
            operation=operation,
            help=("run evspec as root (sudo)",),
        )
    if not perf:
        soft, _hard = funnel.memlock_limit()
        if soft != RLIM_INFINITY:
            return KernelError(
                codes.MEMLOCK,
                f"{operation}{where}: {strerror}: the locked-memory limit (RLIMIT_MEMLOCK, "
                f"{soft} bytes) is too low for BPF objects on this kernel",
                errno=err,
                operation=operation,
                help=("raise it with `ulimit -l unlimited`, or run evspec as root",),
            )
    return KernelError(
        codes.PERMISSION,
        f"{operation}{where}: {strerror} although the process has the needed capabilities "
        "(kernel lockdown, an LSM policy or perf_event_paranoid may forbid it)",
        errno=err,
        operation=operation,
    )


def call_error(
    funnel: Funnel, exc: SyscallError, what: str, *, perf: bool = False, cmd: abi.Cmd | None = None
) -> KernelError:
    """The coded error for ``exc``, a failed call about ``what`` (a map, a program, an fd…);
    ``cmd`` is the bpf command, ``perf`` whether the call was a perf event one."""
    err = exc.errno or 0
    op = exc.operation
    where = f" for {what}" if what else ""
    # EACCES from BPF_PROG_LOAD is the verifier's verdict, not a missing privilege.
    if err == E.EPERM or (err == E.EACCES and cmd is not abi.Cmd.PROG_LOAD):
        return permission_error(funnel, op, err, where, perf=perf)
    if err == E.E2BIG and cmd in _ELEM_CMDS:
        return KernelError(
            codes.NO_SPACE,
            f"{op}{where}: the map is full or the key is beyond its max_entries (E2BIG)",
            errno=err,
            operation=op,
        )
    if err == E.E2BIG:
        return KernelError(
            codes.ATTR_TOO_BIG,
            f"{op}{where}: the running kernel does not know a field evspec set in its "
            "attribute structure (E2BIG)",
            errno=err,
            operation=op,
            help=("a newer kernel is needed for this feature",),
        )
    code = {
        E.ENOENT: codes.NOT_FOUND,
        E.EINVAL: codes.INVALID_ARGUMENT,
        E.ENOSPC: codes.NO_SPACE,
    }.get(err, codes.SYSCALL_FAILED)
    name = E.errorcode.get(err, str(err))
    return KernelError(code, f"{op}{where}: {os.strerror(err)} ({name})", errno=err, operation=op)


def lift_memlock(funnel: Funnel) -> bool:
    """Lift RLIMIT_MEMLOCK when that can explain an EPERM of bpf(2) and the process may; True if
    it was lifted."""
    caps = funnel.effective_capabilities()
    if not _has_any(caps, BPF_CAPS):
        return False
    soft, _hard = funnel.memlock_limit()
    if soft == RLIM_INFINITY or not has_capability(caps, CAP_SYS_RESOURCE):
        return False
    funnel.set_memlock_limit(RLIM_INFINITY, RLIM_INFINITY)
    return True
