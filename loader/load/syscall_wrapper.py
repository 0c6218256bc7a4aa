"""LINUX_HAS_SYSCALL_WRAPPER decided as libbpf 1.8 decides it (its FEAT_SYSCALL_WRAPPER probe):
the kernel has syscall wrappers when a kprobe on ``__<arch>_sys_bpf`` can be made, through the
kprobe PMU (``/sys/bus/event_source/devices/kprobe/type``: a perf event of that type on the
function, for this process) when the kernel has one, else as a tracefs ``kprobe_events`` line,
removed again. A kernel that can make no kprobe gets 0, whatever its kallsyms lists: the program
libbpf loads then reads the registers of ``__se_sys_*`` functions, and so must evspec's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from evspec.loader.externs.resolve import wrapper_function

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from evspec.loader.kernel import Kernel

KPROBE_PMU_TYPE = Path("/sys/bus/event_source/devices/kprobe/type")
TRACEFS_DIRS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
def _pmu_type(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _pmu_kprobe(kernel: Kernel, pmu: int, function: str) -> bool:
    import ctypes

    from evspec.loader.abi.perf import PerfEventAttr
    from evspec.loader.kernel import KernelError

    name = ctypes.create_string_buffer(function.encode())
    attr = PerfEventAttr(type=pmu, config1=ctypes.addressof(name), config2=0)
    try:
        fd = kernel.perf_event_open(attr, pid=os.getpid(), cpu=-1)
    except KernelError:
        return False
    kernel.close(fd)
    return True


def _legacy_kprobe(tracefs_dirs: tuple[Path, ...], function: str) -> bool:
    events = next((d / "kprobe_events" for d in tracefs_dirs if (d / "kprobe_events").exists()), None)
    if events is None:
        return False
    event = f"evspec_{os.getpid()}_wrapper_probe"
    try:
        with events.open("a") as f:
            f.write(f"p:kprobes/{event} {function}\n")
    except OSError:
        return False
    try:
        with events.open("a") as f:
            f.write(f"-:kprobes/{event}\n")
    except OSError:
        pass  # made, which is the answer; a stale entry names this process
    return True


def has_syscall_wrapper(machine: str, kernel: Callable[[], Kernel], *, pmu_type: Path = KPROBE_PMU_TYPE,
                        tracefs_dirs: tuple[Path, ...] = TRACEFS_DIRS) -> bool:
    """libbpf 1.8's answer on this system (``kernel`` is called only when the kprobe PMU exists)."""
    function = wrapper_function(machine)
    if function is None:
        return False
    pmu = _pmu_type(pmu_type)
    if pmu is not None:
        return _pmu_kprobe(kernel(), pmu, function)
    return _legacy_kprobe(tracefs_dirs, function)
