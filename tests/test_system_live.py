"""LiveSystem over fake sysfs/tracefs trees: lazy reading, mounting, tracefs fallbacks."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from evspec.system import TracefsUnavailable, snapshot
from evspec.system.live import FileReader, LiveSystem


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def fake_root(tmp_path: Path, *, tracefs: str | None = "sys/kernel/tracing") -> Path:
    root = tmp_path / "root"
    devices = "sys/bus/event_source/devices"
    write(root, f"{devices}/software/type", "1\n")
    write(root, f"{devices}/msr/type", "10\n")
    write(root, f"{devices}/msr/format/event", "config:0-63\n")
    write(root, f"{devices}/msr/events/tsc", "event=0x00\n")
    write(root, f"{devices}/msr/events/smi", "event=0x04\n")
    write(root, f"{devices}/power/type", "9\n")
    write(root, f"{devices}/power/cpumask", "0\n")
    write(root, f"{devices}/power/format/event", "config:0-7\n")
    write(root, f"{devices}/power/events/energy-psys", "event=0x05\n")
    write(root, f"{devices}/power/events/energy-psys.unit", "Joules\n")
    write(root, f"{devices}/power/events/energy-psys.scale", "2.3283064365386962890625e-10\n")
    write(root, f"{devices}/power/events/energy-psys.per-pkg", "1\n")
    write(root, f"{devices}/cpu_core/type", "4\n")
    write(root, f"{devices}/cpu_core/cpus", "0-3\n")
    write(root, "sys/devices/system/cpu/possible", "0-3\n")
    write(root, "sys/kernel/btf/vmlinux", "")
    write(root, "proc/sys/kernel/osrelease", "6.1.0-test\n")
    (root / "sys/kernel/tracing").mkdir(parents=True, exist_ok=True)
    if tracefs is not None:
        fill_tracefs(root / tracefs)
    return root


def fill_tracefs(tracing: Path) -> None:
    for sys_name, events in {"sched": {"sched_switch": 372, "sched_wakeup": 374}, "raw_syscalls": {"sys_enter": 443}}.items():
        for ev, tp_id in events.items():
            write(tracing, f"events/{sys_name}/{ev}/id", f"{tp_id}\n")
        write(tracing, f"events/{sys_name}/enable", "0\n")
        write(tracing, f"events/{sys_name}/filter", "none\n")
    write(tracing, "events/enable", "0\n")
    write(tracing, "events/header_page", "x\n")
    write(tracing, "uprobe_events", "")


class CountingReader(FileReader):
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.listed: list[str] = []

    def listdir(self, path: Path) -> list[str]:
        self.calls["listdir"] += 1
        self.listed.append(os.fspath(path))
        return super().listdir(path)

    def read(self, path: Path) -> str | None:
        self.calls["read"] += 1
        return super().read(path)


def test_reads_pmus_formats_aliases_and_side_files(tmp_path: Path) -> None:
    s = LiveSystem(fake_root(tmp_path), is_root=False)
    assert s.pmu_names() == ("cpu_core", "msr", "power", "software")
    power = s.pmu("power")
    assert power is not None and power.type == 9 and power.cpumask == "0"
    alias = power.alias("ENERGY-PSYS")
    assert alias is not None
    assert (alias.definition, alias.unit, alias.scale, alias.per_pkg, alias.snapshot) == (
        "event=0x05", "Joules", "2.3283064365386962890625e-10", True, False
    )
    assert set(power.aliases) == {"energy-psys"}  # side files are no aliases
    assert s.pmu("nosuch") is None
    core = s.pmu("cpu_core")
    assert core.is_hybrid and core.cpus == "0-3"
    assert s.possible_cpus() == (0, 1, 2, 3)
    f = s.features()
    assert (f.kernel_release, f.btf_vmlinux, f.uprobe_events, f.kprobe_events) == ("6.1.0-test", True, True, False)


def test_checking_cycles_like_lookups_read_nothing(tmp_path: Path) -> None:
    reader = CountingReader()
    s = LiveSystem(fake_root(tmp_path), reader=reader, is_root=False)
    s.pmu("msr")
    assert not any("tracing" in p for p in reader.listed)
    assert reader.calls["listdir"] == 2  # msr/format and msr/events, not the devices folder


def test_exact_tracepoint_reads_one_id_and_lists_nothing(tmp_path: Path) -> None:
    reader = CountingReader()
    s = LiveSystem(fake_root(tmp_path), reader=reader, is_root=False)
    assert s.tracepoint_id("sched", "sched_switch") == 372
    assert s.match_tracepoints("sched", "sched_wakeup").found == (("sched", "sched_wakeup", 374),)
    assert reader.calls["listdir"] == 0
    assert reader.calls["read"] == 2
    assert s.tracepoint_id("sched", "sched_switch") == 372
    assert reader.calls["read"] == 2  # cached


def test_globs_list_only_what_they_need(tmp_path: Path) -> None:
    reader = CountingReader()
    s = LiveSystem(fake_root(tmp_path), reader=reader, is_root=False)
    assert [f[1] for f in s.match_tracepoints("sched", "*").found] == ["sched_switch", "sched_wakeup"]
    assert reader.listed == [os.fspath(tmp_path / "root/sys/kernel/tracing/events/sched")]
    # directory order (perf's glob order), the files enable/header_page skipped
    events = tmp_path / "root/sys/kernel/tracing/events"
    assert s.tracepoint_systems() == tuple(n for n in os.listdir(events) if n in ("raw_syscalls", "sched"))
    assert sorted(s.tracepoint_systems()) == ["raw_syscalls", "sched"]
    assert [f[0] for f in s.match_tracepoints("*", "sys_enter").found] == ["raw_syscalls"]


def test_mounts_tracefs_as_root_and_notes_it(tmp_path: Path) -> None:
    root = fake_root(tmp_path, tracefs=None)
    mounted: list[Path] = []

    def mount(target: Path) -> None:
        mounted.append(target)
        fill_tracefs(target)

    s = LiveSystem(root, mount=mount, is_root=True)
    assert s.pmu("msr") is not None and not mounted  # PMU lookups never mount
    assert s.tracepoint_id("sched", "sched_switch") == 372
    assert mounted == [root / "sys/kernel/tracing"]
    assert s.notes == ["mounted tracefs at /sys/kernel/tracing"]


def test_mount_failure_is_noted_and_reported(tmp_path: Path) -> None:
    def mount(target: Path) -> None:
        raise OSError("permission denied")

    s = LiveSystem(fake_root(tmp_path, tracefs=None), mount=mount, is_root=True)
    with pytest.raises(TracefsUnavailable) as exc:
        s.tracepoint_id("sched", "sched_switch")
    assert "tracefs not available" in exc.value.reason and exc.value.help
    assert s.notes == ["could not mount tracefs at /sys/kernel/tracing: permission denied"]


def test_not_root_falls_back_to_debugfs_tracing(tmp_path: Path) -> None:
    def mount(target: Path) -> None:
        raise AssertionError("must not mount when not root")

    root = fake_root(tmp_path, tracefs="sys/kernel/debug/tracing")
    s = LiveSystem(root, mount=mount, is_root=False)
    assert s.tracepoint_id("raw_syscalls", "sys_enter") == 443
    assert s.features().uprobe_events


def test_no_tracefs_at_all(tmp_path: Path) -> None:
    s = LiveSystem(fake_root(tmp_path, tracefs=None), is_root=False)
    with pytest.raises(TracefsUnavailable):
        s.match_tracepoints("sched", "*")
    assert snapshot(s)["tracefs"]["available"] is False
    assert s.features().uprobe_events is False


def test_snapshot_of_fake_root(tmp_path: Path) -> None:
    data = snapshot(LiveSystem(fake_root(tmp_path), is_root=False))
    assert data["pmus"]["msr"] == {
        "type": 10,
        "format": {"event": "config:0-63"},
        "events": {
            "smi": {"definition": "event=0x04", "unit": None, "scale": None, "per_pkg": False, "snapshot": False},
            "tsc": {"definition": "event=0x00", "unit": None, "scale": None, "per_pkg": False, "snapshot": False},
        },
        "cpus": None,
        "cpumask": None,
    }
    assert data["tracefs"]["events"] == {"raw_syscalls": {"sys_enter": 443}, "sched": {"sched_switch": 372, "sched_wakeup": 374}}
    assert data["cpus"] == "0-3"
