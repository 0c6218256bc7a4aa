"""Tracepoints as a normal user where tracefs is mode 0700 (Debian): check says that this user
cannot read it and how to fix that (perf's remount), instead of 'mount it'; system snapshot
refuses to write a snapshot that would say the machine has no tracepoints, unless told, and then
records that they are unknown."""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from normal_user import public_temp_dir, run_as_normal_user

from evspec.system import read_snapshot
from evspec.system.live import FileReader, LiveSystem
from evspec.system.model import TracefsUnavailable

TRACING = Path("/sys/kernel/tracing")


class _Denied(FileReader):
    """A tree whose tracefs this user may not read: what a 0700 mount looks like to a normal user."""

    def readable_dir(self, path: Path) -> bool:
        return "tracing" not in str(path) and super().readable_dir(path)

    def denied_dir(self, path: Path) -> str | None:
        return "mode 0700, owner root" if str(path).endswith("sys/kernel/tracing") else None


def test_a_tracefs_this_user_cannot_read_is_named(tmp_path: Path) -> None:
    (tmp_path / "sys/kernel/tracing/events/sched/sched_switch").mkdir(parents=True)
    system = LiveSystem(tmp_path, reader=_Denied(), is_root=False)
    with pytest.raises(TracefsUnavailable) as info:
        system.tracepoint_id("sched", "sched_switch")
    exc = info.value
    assert exc.denied == "/sys/kernel/tracing"
    assert exc.reason.startswith("tracefs at /sys/kernel/tracing cannot be read by this user (mode 0700, owner root)")
    assert exc.help[0].startswith("as root, let every user read it: 'mount -o remount,mode=755 /sys/kernel/tracing'")
    assert not any("mount -t tracefs" in line for line in exc.help)
    plain = LiveSystem(tmp_path / "nothing", is_root=False)  # not there at all: nothing is denied
    with pytest.raises(TracefsUnavailable) as info:
        plain.tracepoint_id("sched", "sched_switch")
    assert info.value.denied is None and "mount it" in info.value.help[0]


@pytest.fixture
def public_dir() -> Iterator[Path]:
    d = public_temp_dir("evspec-tracefs-")
    d.chmod(0o777)  # nobody writes its snapshot here
    try:
        yield d
    finally:
        shutil.rmtree(d)


def _tracefs_mode_0700() -> None:
    if os.geteuid() != 0:
        from conftest import IN_CI

        if IN_CI:
            raise RuntimeError("the tracefs permission tests run as root in CI (they drop to nobody)")
        pytest.skip("needs root to run a command as nobody")
    LiveSystem().tracepoint_systems()  # mounts tracefs when it is not
    mode = stat.S_IMODE(TRACING.stat().st_mode)
    if mode & 0o005:
        pytest.skip(f"tracefs here is mode {mode:04o}: other users may read it")


def test_check_as_a_normal_user_names_the_permission(public_dir: Path) -> None:
    _tracefs_mode_0700()
    proc = run_as_normal_user(["check", "--system", "live", "--format", "json", "-e", "sched:sched_switch,cpu-clock"],
                      public_dir)
    assert proc.returncode == 1, proc.stderr
    [diag] = json.loads(proc.stdout)["diagnostics"]
    assert diag["code"] == "EM011" and "cannot be read by this user (mode 0700" in diag["message"]
    assert diag["perf_message"] == "can't access trace events"
    assert diag["perf_help"] == ("Error:\tNo permissions to read /sys/kernel/tracing/events/sched/sched_switch\n"
                                 "Hint:\tTry 'sudo mount -o remount,mode=755 /sys/kernel/tracing/'")


def test_snapshot_as_a_normal_user_refuses_unless_told(public_dir: Path) -> None:
    _tracefs_mode_0700()
    out = public_dir / "machine.json"
    proc = run_as_normal_user(["system", "snapshot", "-o", str(out)], public_dir)
    assert proc.returncode == 2 and not out.exists()
    assert proc.stderr.startswith("evspec system snapshot: error: tracefs at /sys/kernel/tracing cannot be read by "
                                  "this user"), proc.stderr
    assert "--without-tracefs" in proc.stderr
    proc = run_as_normal_user(["system", "snapshot", "--without-tracefs", "-o", str(out)], public_dir)
    assert proc.returncode == 0 and "warning: tracefs at /sys/kernel/tracing cannot be read" in proc.stderr
    data = json.loads(out.read_text())
    assert data["features"]["uprobe_events"] is None and data["features"]["kprobe_events"] is None
    assert data["tracefs"]["reason"].startswith("the snapshot holds no tracepoints: when it was written, tracefs at")
    with pytest.raises(TracefsUnavailable, match="the snapshot holds no tracepoints"):
        read_snapshot(out).tracepoint_systems()
