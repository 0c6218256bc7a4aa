"""``evspec record``'s exit status where set-up does not get to run the command: a program the
verifier refuses is a finding about the user's input (1, as ``verify``), and a SIGTERM during
set-up undoes everything set-up made (probe entries, events, programs, maps pinned by this run)
and exits 128 + SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from bpf_build import build_bpf, copy_sources, libc_path, require_tools
from evspec.loader.session import RecordSession
from record_cli import run_record

DATA = Path(__file__).parent / "data" / "record_exits"
UPROBE_EVENTS = Path("/sys/kernel/tracing/uprobe_events")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root_kernel: None) -> Path:
    require_tools("clang")
    copy_sources(DATA, ("rejected.c", "pinned_probe.c"), tmp_path)
    build_bpf(tmp_path, "rejected.c", "rejected.o")
    build_bpf(tmp_path, "pinned_probe.c", "pinned_probe.o", f'-DLIBC="{libc_path()}"')
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def pin_root(tmp_path: Path, root_kernel: None) -> Iterator[Path]:
    """A private bpffs for the maps pinned by name."""
    root = tmp_path / "bpffs"
    root.mkdir()
    subprocess.run(["mount", "-t", "bpf", "bpf", str(root)], check=True)
    before = set(os.listdir(root))  # the kernel's own iterators
    try:
        yield root
    finally:
        for name in set(os.listdir(root)) - before:
            os.unlink(root / name)
        subprocess.run(["umount", str(root)], check=True)


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _our_entries() -> list[str]:
    return [line for line in UPROBE_EVENTS.read_text().splitlines() if f":evspec_{os.getpid()}_" in line]


def test_a_program_the_verifier_refuses_is_a_finding(workdir: Path) -> None:
    before = _fds()
    status, out, err = run_record("-e", "./rejected.o", "--", "true")
    assert _fds() == before
    assert (status, out) == (1, ""), err
    assert "evspec record: error: the verifier rejected program 'overflow': " in err


def test_a_program_reading_past_its_tracepoint_record_is_a_finding(workdir: Path) -> None:
    """The verifier lets it through; the kernel refuses it when it is set on the event (EACCES,
    which is no missing privilege)."""
    build_bpf(workdir, "rejected.c", "past.o", "-DPAST_THE_RECORD")
    status, out, err = run_record("-e", "./past.o", "--", "true")
    assert (status, out) == (1, ""), err
    assert (f"evspec record: error: {workdir}/past.o: program 'past_the_record' reads past the record of tracepoint "
            "syscalls:sys_enter_getppid: the kernel refused to set it on the event (PERF_EVENT_IOC_SET_BPF: "
            "EACCES)") in err
    assert "help: see the fields and their offsets in /sys/kernel/tracing/events/syscalls/sys_enter_getppid/format" in err


def test_sigterm_during_set_up_undoes_it_and_exits_143(workdir: Path, pin_root: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The signal comes once the probe entry, the pin, the events and the attachments exist."""
    apply = RecordSession._apply

    def interrupted(session: RecordSession) -> None:
        assert _our_entries() and (pin_root / "es_calls").exists()
        os.kill(os.getpid(), signal.SIGTERM)
        apply(session)

    monkeypatch.setattr(RecordSession, "_apply", interrupted)
    before = _fds()
    status, out, err = run_record("--pin-root", str(pin_root), "-e", "./pinned_probe.o", "--",
                                  "sh", "-c", "echo ran > ran")
    assert _fds() == before, "descriptors left open"
    assert (status, out) == (128 + signal.SIGTERM, ""), err
    assert not (workdir / "ran").exists()  # the command never ran
    assert _our_entries() == [] and not (pin_root / "es_calls").exists()
    assert "Traceback" not in err


def test_a_run_that_ran_keeps_its_pins(workdir: Path, pin_root: Path) -> None:
    """Pins stay after a recording that ran (libbpf's maps pinned by name outlive the loader)."""
    status, _, err = run_record("--pin-root", str(pin_root), "-e", "./pinned_probe.o", "--", "true")
    assert status == 0, err
    assert (pin_root / "es_calls").exists() and _our_entries() == []
