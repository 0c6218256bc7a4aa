"""LINUX_HAS_SYSCALL_WRAPPER decided as libbpf 1.8 decides it (loader/load/syscall_wrapper.py):
a kprobe on ``__<arch>_sys_bpf`` made through the kprobe PMU, else through tracefs
``kprobe_events``; no way to make one is 0. Offline with stand-in paths and a fake kernel; live,
the value evspec gives on this machine against what bpftool 7.8's libbpf 1.8 probes here
(``bpftool feature probe kernel`` does not list it, so its own probe's answer is read from the
reference: a kprobe PMU or kprobe_events to make the kprobe with)."""

from __future__ import annotations

import errno as E
import os
from pathlib import Path

from evspec.loader.externs.resolve import wrapper_function
from evspec.loader.kernel import Kernel
from evspec.loader.kernel.fake import FakeKernel
from evspec.loader.load.syscall_wrapper import has_syscall_wrapper


def test_the_function_is_the_arch_prefixed_bpf_syscall() -> None:
    assert (wrapper_function("x86_64"), wrapper_function("aarch64"), wrapper_function("sparc64")) == (
        "__x64_sys_bpf", "__arm64_sys_bpf", None)


def test_without_kprobe_pmu_or_kprobe_events_it_is_0(tmp_path: Path) -> None:
    def no_kernel() -> Kernel:
        raise AssertionError("no perf event is opened without a kprobe PMU")

    assert not has_syscall_wrapper("x86_64", no_kernel, pmu_type=tmp_path / "none", tracefs_dirs=(tmp_path,))


def test_a_kprobe_events_line_made_and_removed_is_1(tmp_path: Path) -> None:
    events = tmp_path / "kprobe_events"
    events.write_text("")
    assert has_syscall_wrapper("x86_64", Kernel, pmu_type=tmp_path / "none", tracefs_dirs=(tmp_path,))
    event = f"evspec_{os.getpid()}_wrapper_probe"
    assert events.read_text() == f"p:kprobes/{event} __x64_sys_bpf\n-:kprobes/{event}\n"


def test_the_kprobe_pmu_decides_when_there_is_one(tmp_path: Path) -> None:
    (tmp_path / "type").write_text("6\n")
    fake = FakeKernel()
    assert has_syscall_wrapper("x86_64", lambda: Kernel(fake), pmu_type=tmp_path / "type", tracefs_dirs=())
    [call] = fake.calls_of("perf_event_open")
    assert call.args["type"] == 6 and call.args["pid"] == os.getpid()
    assert fake.open_fds == {}
    refused = FakeKernel()
    refused.script("perf_event_open", errno=E.ENOENT)
    assert not has_syscall_wrapper("x86_64", lambda: Kernel(refused), pmu_type=tmp_path / "type", tracefs_dirs=())


def test_this_machine_gives_what_libbpf_probes(root_kernel: None) -> None:
    pmu = Path("/sys/bus/event_source/devices/kprobe/type").exists()
    events = any(Path(d, "kprobe_events").exists() for d in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"))
    ours = has_syscall_wrapper(os.uname().machine, Kernel)
    if not pmu and not events:  # this kernel: no kprobes; libbpf's probe fails, the wrapper is 0
        assert ours is False
    else:
        assert ours is True
