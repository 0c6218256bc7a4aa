"""Kernel features libbpf 1.8 probes before it loads a program, probed the same way here.

``uprobe_multi_links``: libbpf loads a ``SEC("usdt")`` program with the expected attach type
BPF_TRACE_UPROBE_MULTI when the kernel has uprobe_multi links whose pid filter works. Its probe:
a kprobe program of that attach type loads; a uprobe_multi link on the path ``/`` fails with
EBADF (the kernel knows the link and opened the path); the same link with pid -1 fails with EINVAL
(the pid is checked before the path: kernels with the early, thread-only pid filter say EBADF).
"""

from __future__ import annotations

import errno as E

from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.object.spec import ProgType
from evspec.loader.sections.libbpf import BpfAttachType

_EXIT_0 = bytes((0xB7, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0))  # r0 = 0; exit


def _link_errno(kernel: Kernel, prog_fd: int, pid: int) -> int:
    """The errno of a uprobe_multi link of ``prog_fd`` on ``/`` (0: the link was made)."""
    try:
        fd = kernel.link_uprobe_multi(prog_fd, "/", (0,), pid=pid)
    except KernelError as exc:
        return exc.errno or 0
    kernel.close(fd)
    return 0


def uprobe_multi_links(kernel: Kernel) -> bool:
    """Whether libbpf 1.8 finds uprobe_multi links on this kernel (its FEAT_UPROBE_MULTI_LINK)."""
    try:
        prog_fd = kernel.load_program(ProgType.KPROBE, _EXIT_0, "GPL",
                                      expected_attach_type=BpfAttachType.TRACE_UPROBE_MULTI)
    except KernelError:
        return False
    try:
        return _link_errno(kernel, prog_fd, 0) == E.EBADF and _link_errno(kernel, prog_fd, -1) == E.EINVAL
    finally:
        kernel.close(prog_fd)
