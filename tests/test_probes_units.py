"""kprobe and uprobe attachment without a kernel: a fake tracefs, fake PMU folders, the fake
kernel layer. The tracefs lines, event names, PMU attributes, cleanup and stale sweep."""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from evspec.loader.abi.perf_ids import PerfType
from evspec.loader.attach.attachment import AttachOptions, ProgramAttach
from evspec.loader.attach.probe_events import (
    Owner,
    ProbeKind,
    ProbeLocation,
    ProbePmu,
    Tracefs,
    format_mask,
    process_start,
    sweep_dead_runs,
    sweep_stale,
)
from evspec.loader.attach.probe_fake import FakeTracefs
from evspec.loader.attach.probes import KprobeAttacher, ProbeDetail, UprobeAttacher, kernel_functions
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.kernel.fake import FakeKernel
from evspec.loader.object.spec import ObjectSpec, ProgramSpec
from evspec.loader.sections.names import parse_section

from evspec.codes import kernel as codes
from evspec.compiler.recording import recording_plan

TARGET_C = Path(__file__).parent / "data" / "probes" / "target.c"
IN_CI = os.environ.get("CI") == "true"
ME = Owner.of(os.getpid())
assert ME is not None
GROUP = ME.group


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("cc")
    if cc is None:
        if IN_CI:
            raise RuntimeError("cc is required in CI (building the probed program)")
        pytest.skip("cc not installed")
    out = tmp_path_factory.mktemp("probes") / "target"
    subprocess.run([cc, "-O2", "-g", "-o", str(out), str(TARGET_C)], check=True)
    return out


def _offset(binary: Path, name: str) -> int:
    from evspec.loader.object.elf_symbols import read_elf_symbols, uprobe_sites

    return uprobe_sites(read_elf_symbols(binary), name)[0].file_offset


def _pmus(root: Path, *kinds: str, retprobe: str = "config:0") -> Path:
    """A fake /sys/bus/event_source/devices with the named probe PMUs (types 8, 9)."""
    for i, kind in enumerate(kinds):
        (root / kind / "format").mkdir(parents=True)
        (root / kind / "type").write_text(f"{8 + i}\n")
        (root / kind / "format" / "retprobe").write_text(retprobe + "\n")
    root.mkdir(parents=True, exist_ok=True)
    return root


def _attacher(cls: type, tmp: Path, fake: FakeTracefs | None, *pmus: str, **kw: object) -> UprobeAttacher:
    return cls(
        Kernel(FakeKernel()),
        AttachOptions(lambda s, e: None),
        pmus=_pmus(tmp / "pmus", *pmus),
        tracefs_root=fake.root if fake is not None else tmp / "no-tracefs",
        tracefs_writer=fake,
        mount=_no_mount,
        **kw,
    )


def _no_mount(path: Path) -> None:
    raise OSError("mount: permission denied (test)")


def _plan(attacher: UprobeAttacher, section: str, name: str = "prog") -> ProgramAttach:
    spec = ObjectSpec("t.o", "GPL", None, (), (ProgramSpec(name, section, bytes(8)),))
    return attacher.plan(spec, spec.programs[0], parse_section(section))


# ------------------------------------------------------------------------- the pieces


@pytest.mark.parametrize(("text", "mask"), [("config:0", 1), ("config:5", 32), ("config:32-63", 0xFFFFFFFF << 32)])
def test_format_mask(text: str, mask: int) -> None:
    assert format_mask(text) == mask


@pytest.mark.parametrize("text", ["config1:0", "config:x", "retprobe"])
def test_format_mask_refuses_other_fields(text: str) -> None:
    with pytest.raises(ValueError):
        format_mask(text)


def test_pmu_read_from_sysfs(tmp_path: Path) -> None:
    pmus = _pmus(tmp_path, "uprobe", "kprobe", retprobe="config:3")
    assert ProbePmu.read(pmus, ProbeKind.UPROBE) == ProbePmu("uprobe", 8, 8)
    assert ProbePmu.read(pmus, ProbeKind.KPROBE) == ProbePmu("kprobe", 9, 8)
    assert ProbePmu.read(tmp_path / "none", ProbeKind.KPROBE) is None


@pytest.mark.parametrize(("location", "line"), [
    (ProbeLocation(ProbeKind.UPROBE, False, path="/bin/x", offset=0x1139), "p:g/e /bin/x:0x1139"),
    (ProbeLocation(ProbeKind.UPROBE, True, path="/bin/x", offset=0), "r:g/e /bin/x:0x0"),
    (ProbeLocation(ProbeKind.KPROBE, False, symbol="do_sys_openat2"), "p:g/e do_sys_openat2"),
    (ProbeLocation(ProbeKind.KPROBE, False, symbol="ext4:ext4_sync_file", offset=16), "p:g/e ext4:ext4_sync_file+16"),
    (ProbeLocation(ProbeKind.KPROBE, True, symbol="vfs_read"), "r:g/e vfs_read"),
    (ProbeLocation(ProbeKind.KPROBE, False, address=0xFFFFFFFF81000000), "p:g/e 0xffffffff81000000"),
])
def test_tracefs_lines(location: ProbeLocation, line: str) -> None:
    assert location.tracefs_line("g", "e") == line


def _fake_proc(root: Path, processes: dict[int, int], zombies: tuple[int, ...] = ()) -> Path:
    for pid, start in processes.items():
        (root / str(pid)).mkdir(parents=True)
        fields = ["Z" if pid in zombies else "S"] + ["0"] * 18 + [str(start), "0"]
        (root / str(pid) / "stat").write_text(f"{pid} (a (b) c) {' '.join(fields)}\n")
    root.mkdir(parents=True, exist_ok=True)
    return root


def test_owner_group_round_trip_and_liveness(tmp_path: Path) -> None:
    proc = _fake_proc(tmp_path, {41: 1000})
    assert process_start(41, proc) == 1000 and process_start(42, proc) is None
    owner = Owner(41, 1000)
    assert owner.group == "evspec_41_1000" and Owner.parse(owner.group) == owner
    assert Owner.parse("perf_bpf_probe") is None and Owner.parse("evspec_41") is None
    assert owner.alive(proc)
    assert not Owner(41, 999).alive(proc)  # the pid was reused by another process
    assert not Owner(42, 1000).alive(proc)
    assert Owner.of(os.getpid()) == ME and ME.alive()


def test_a_zombie_owner_is_gone(tmp_path: Path) -> None:
    """Killed and not reaped: /proc/PID/stat is still there, in state Z; the owner is dead."""
    proc = _fake_proc(tmp_path, {41: 1000, 43: 1000}, zombies=(43,))
    assert process_start(41, proc) == 1000 and process_start(43, proc) is None
    assert Owner(41, 1000).alive(proc) and not Owner(43, 1000).alive(proc)


def test_entries_of_another_pid_namespace_are_never_stale(tmp_path: Path) -> None:
    """pids are per pid namespace, tracefs is one per machine: an owner of another pid namespace
    (an evspec in a container) is alive as far as this run can tell, whatever its pid is here."""
    proc = _fake_proc(tmp_path / "proc", {50: 7})
    (proc / "self" / "ns").mkdir(parents=True)
    (proc / "self" / "ns" / "pid").touch()
    ours = (proc / "self" / "ns" / "pid").stat().st_ino
    assert Owner.parse(f"evspec_50_7_{ours}") == Owner(50, 7, ours)
    assert Owner(50, 7, ours).group == f"evspec_50_7_{ours}"
    assert Owner(50, 7, ours).alive(proc) and not Owner(51, 7, ours).alive(proc)
    assert Owner(51, 7, ours + 1).alive(proc)  # gone here, but it is not ours to judge
    fake = FakeTracefs.create(tmp_path / "tracefs")
    uprobe = ProbeLocation(ProbeKind.UPROBE, False, path=str(TARGET_C), offset=0x10)
    fake.tracefs.add(uprobe, f"evspec_51_7_{ours + 1}", "theirs")
    fake.tracefs.add(uprobe, f"evspec_51_7_{ours}", "gone")
    assert sweep_stale(fake.tracefs, (ProbeKind.UPROBE,), proc) == ([f"evspec_51_7_{ours}/gone"], [])
    assert [e.event for e in fake.tracefs.entries(ProbeKind.UPROBE)] == ["theirs"]


def test_sweep_removes_entries_of_gone_owners_only(tmp_path: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs")
    tracefs = fake.tracefs
    proc = _fake_proc(tmp_path / "proc", {50: 7})
    binary = str(TARGET_C)
    uprobe = ProbeLocation(ProbeKind.UPROBE, False, path=binary, offset=0x10)
    tracefs.add(uprobe, "evspec_50_7", "alive")  # its owner runs
    tracefs.add(uprobe, "evspec_50_6", "reused")  # pid 50 now is another process
    tracefs.add(uprobe, "evspec_51_7", "gone")
    tracefs.add(uprobe, "evspec_52_7", "busy")
    tracefs.add(uprobe, "perf_bpf_probe", "perfs")  # not evspec's
    tracefs.add(ProbeLocation(ProbeKind.KPROBE, True, symbol="vfs_read"), "evspec_53_1", "kgone")
    fake.busy.add("evspec_52_7/busy")
    removed, problems = sweep_stale(tracefs, proc=proc)
    assert removed == ["evspec_50_6/reused", "evspec_51_7/gone", "evspec_53_1/kgone"]
    assert problems == ["could not remove the stale uprobe event evspec_52_7/busy of process 52: "
                        "Device or resource busy (EBUSY)"]
    assert [e.group for e in tracefs.entries(ProbeKind.UPROBE)] == ["evspec_50_7", "evspec_52_7", "perf_bpf_probe"]
    assert tracefs.entries(ProbeKind.KPROBE) == ()
    assert not (fake.root / "events" / "evspec_51_7").exists()


def test_two_runs_sweeping_at_once(tmp_path: Path) -> None:
    """Two evspec runs starting together both list a dead run's entries; when the other one
    removes an entry between our listing and our removal, the kernel answers ENOENT: not a
    problem to report, and the sweep goes on."""
    fake = FakeTracefs.create(tmp_path / "tracefs")
    proc = _fake_proc(tmp_path / "proc", {})
    uprobe = ProbeLocation(ProbeKind.UPROBE, False, path=str(TARGET_C), offset=0x10)
    for event in ("a", "b"):
        fake.tracefs.add(uprobe, "evspec_51_7", event)
    fake.fail("-:evspec_51_7/a", errno.ENOENT)  # the other run removed it first
    removed, problems = sweep_stale(fake.tracefs, (ProbeKind.UPROBE,), proc)
    assert (removed, problems) == (["evspec_51_7/b"], [])
    fake.fail("-:evspec_51_7/a", errno.EBUSY)  # anything else is reported
    assert sweep_stale(fake.tracefs, (ProbeKind.UPROBE,), proc) == (
        [], ["could not remove the stale uprobe event evspec_51_7/a of process 51: Device or resource busy (EBUSY)"])


def test_every_run_sweeps_both_kinds_of_a_tracefs_it_may_write(tmp_path: Path) -> None:
    """What a recording does first (``sweep_dead_runs``): uprobe and kprobe entries of dead runs go,
    each kind said once; a tracefs that is not mounted, or not this user's to write, is left alone."""
    fake = FakeTracefs.create(tmp_path / "tracefs")
    proc = _fake_proc(tmp_path / "proc", {50: 7})
    fake.tracefs.add(ProbeLocation(ProbeKind.UPROBE, False, path=str(TARGET_C), offset=0x10), "evspec_51_7", "u")
    fake.tracefs.add(ProbeLocation(ProbeKind.KPROBE, False, symbol="vfs_read"), "evspec_52_7", "k")
    fake.tracefs.add(ProbeLocation(ProbeKind.UPROBE, False, path=str(TARGET_C), offset=0x10), "evspec_50_7", "alive")
    fake.busy.add("evspec_52_7/k")
    notes, warnings = sweep_dead_runs(fake.root, writer=fake, proc=proc)
    assert notes == ["removed 1 stale uprobe event(s) of evspec runs that are gone: evspec_51_7/u"]
    assert warnings == ["could not remove the stale kprobe event evspec_52_7/k of process 52: "
                        "Device or resource busy (EBUSY)"]
    assert [e.event for e in fake.tracefs.entries(ProbeKind.UPROBE)] == ["alive"]
    assert sweep_dead_runs(tmp_path / "not-mounted", writer=fake, proc=proc) == ([], [])
    if os.geteuid() != 0:  # root may write whatever the mode says
        (fake.root / "kprobe_events").chmod(0o444)
        assert sweep_dead_runs(fake.root, writer=fake, proc=proc) == ([], [])


def test_tracefs_entries_parse_the_kernels_listing(tmp_path: Path) -> None:
    fake = FakeTracefs.create(tmp_path)
    fake.tracefs.add(ProbeLocation(ProbeKind.UPROBE, True, path=str(TARGET_C), offset=0x1139), "g", "e__return")
    assert fake.lines(ProbeKind.UPROBE) == [f"r:g/e__return {TARGET_C}:0x0000000000001139"]
    (entry,) = fake.tracefs.entries(ProbeKind.UPROBE)
    assert (entry.retprobe, entry.group, entry.event, entry.target) == (
        True, "g", "e__return", f"{TARGET_C}:0x0000000000001139")


# ------------------------------------------------------------------------- uprobes


def test_perf_style_uprobe_goes_through_tracefs(tmp_path: Path, target: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(UprobeAttacher, tmp_path, fake, "uprobe")
    plan = _plan(attacher, f"exec={target};probe=probed_add")
    line = f"p:{GROUP}/probe {target}:{_offset(target, 'probed_add'):#x}"
    assert fake.writes == [line]
    (event,) = plan.events
    assert event.name == "perf_bpf_probe:probe"
    assert dict(event.values) == {"type": int(PerfType.TRACEPOINT), "config": 2000}
    assert not event.one_per_task  # one tracefs probe, whose program array all its events share
    assert (plan.prog_type, plan.deferred, plan.program) == (2, False, "prog")
    assert isinstance(plan.detail, ProbeDetail) and plan.detail.points[0].function == "probed_add"
    assert attacher.notes == [f"perf_bpf_probe:probe: uprobe {target}:{_offset(target, 'probed_add'):#x} "
                              f"(tracefs {GROUP}/probe) for program 'prog'"]
    attacher.close()
    assert fake.writes[-1] == f"-:{GROUP}/probe"
    assert fake.lines(ProbeKind.UPROBE) == [] and not (fake.root / "events" / GROUP).exists()


def test_uretprobe_and_offset(tmp_path: Path, target: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(UprobeAttacher, tmp_path, fake)
    ret = _plan(attacher, f"exec={target};probe=probed_add%return")
    off = _plan(attacher, f"exec={target};at=probed_mul+2")
    assert fake.writes == [
        f"r:{GROUP}/probe__return {target}:{_offset(target, 'probed_add'):#x}",
        f"p:{GROUP}/at {target}:{_offset(target, 'probed_mul') + 2:#x}",
    ]
    assert [ret.events[0].name, off.events[0].name] == ["perf_bpf_probe:probe__return", "perf_bpf_probe:at"]
    attacher.close()
    assert fake.lines(ProbeKind.UPROBE) == []


def test_glob_makes_one_event_per_function_named_as_perf_61(tmp_path: Path, target: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(UprobeAttacher, tmp_path, fake)
    plan = _plan(attacher, f"exec={target};probe=probed_*")
    assert fake.writes == [
        f"p:{GROUP}/probe {target}:{_offset(target, 'probed_add'):#x}",
        f"p:{GROUP}/probe_1 {target}:{_offset(target, 'probed_mul'):#x}",
    ]
    # perf 6.1 shows every probe point of one definition under the definition's name
    assert [e.name for e in plan.events] == ["perf_bpf_probe:probe", "perf_bpf_probe:probe"]
    assert [e.values["config"] for e in plan.events] == [2000, 2001]
    attacher.close()
    assert fake.lines(ProbeKind.UPROBE) == []


def test_same_event_twice_needs_force(tmp_path: Path, target: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(UprobeAttacher, tmp_path, fake)
    _plan(attacher, f"exec={target};probe=probed_add", "first")
    with pytest.raises(ObjectError) as exc:
        _plan(attacher, f"exec={target};probe=probed_mul", "second")
    assert exc.value.code == codes.PROBE_EXISTS
    assert exc.value.message == (f"t.o: program 'second' (section 'exec={target};probe=probed_mul'): "
                                 "uprobe event 'probe' is created twice")
    assert exc.value.perf_message == "Probe point exist. Try 'perf probe -d \"*\"' and set 'force=yes'"
    forced = _plan(attacher, f"force=yes;exec={target};probe=probed_mul", "third")
    assert forced.events[0].name == "perf_bpf_probe:probe_1"
    assert fake.writes[-1].startswith(f"p:{GROUP}/probe_1 ")
    attacher.close()
    assert fake.lines(ProbeKind.UPROBE) == []


def test_without_uprobe_events_the_pmu_is_used(tmp_path: Path, target: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs", kinds=(ProbeKind.KPROBE,))
    attacher = _attacher(UprobeAttacher, tmp_path, fake, "uprobe")
    entry = _plan(attacher, f"uprobe/{target}:probed_mul")
    ret = _plan(attacher, f"uretprobe/{target}:probed_mul+0x2")
    perf_style = _plan(attacher, f"exec={target};probe=probed_add")
    assert fake.writes == []  # nothing in tracefs
    values = [dict(p.events[0].values) for p in (entry, ret, perf_style)]
    assert [(v["type"], v["config"], v["config2"]) for v in values] == [
        (8, 0, _offset(target, "probed_mul")), (8, 1, _offset(target, "probed_mul") + 2),
        (8, 0, _offset(target, "probed_add"))]
    assert [ctypes.string_at(v["config1"]).decode() for v in values] == [str(target)] * 3
    assert [p.events[0].name for p in (entry, ret, perf_style)] == [
        "uprobe:probed_mul", "uretprobe:probed_mul+0x2", "perf_bpf_probe:probe"]
    # every PMU event is a probe of its own: to be opened once per task, not once per CPU
    assert [p.events[0].one_per_task for p in (entry, ret, perf_style)] == [True] * 3
    assert attacher.notes[0] == ("uprobe_events cannot be used: probes are made with the uprobe PMU, one kernel "
                                 "probe per perf event, opened once per task (cpu -1) so that the program runs "
                                 "once per hit; the probe events themselves are not sampled")
    attacher.close()


def test_libbpf_style_uprobes_in_tracefs(tmp_path: Path, target: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(UprobeAttacher, tmp_path, fake, "uprobe")
    first = _plan(attacher, f"uretprobe/{target}:probed_add")
    again = _plan(attacher, f"uretprobe/{target}:probed_add")
    offset = _plan(attacher, f"uprobe/{target}:probed_add+0x2")
    where = f"{target}:{_offset(target, 'probed_add'):#x}"
    assert fake.writes == [f"r:{GROUP}/uretprobe_probed_add {where}", f"r:{GROUP}/uretprobe_probed_add_1 {where}",
                           f"p:{GROUP}/uprobe_probed_add_0x2 {target}:{_offset(target, 'probed_add') + 2:#x}"]
    assert [p.events[0].name for p in (first, again, offset)] == [
        "uretprobe:probed_add", "uretprobe:probed_add", "uprobe:probed_add+0x2"]
    attacher.close()
    assert fake.lines(ProbeKind.UPROBE) == []


def test_no_uprobe_support_at_all(tmp_path: Path, target: Path) -> None:
    attacher = _attacher(UprobeAttacher, tmp_path, None)
    with pytest.raises(ObjectError) as exc:
        _plan(attacher, f"exec={target};probe=probed_add")
    assert exc.value.code == codes.NO_UPROBES
    assert "this kernel has no uprobe support: neither " in exc.value.message
    assert "(CONFIG_UPROBE_EVENTS)" in exc.value.message


@pytest.mark.parametrize(("section", "message"), [
    ("inlines=yes;exec={t};probe=probed_add",
     "setting 'inlines=yes' is not supported: probing inlined copies of 'probed_add' needs their DWARF inline "
     "information, which evspec does not read (it probes the out-of-line function, as inlines=no does) "
     "(at 0-11 of the section name)"),
    ("exec={t};probe=probed_add:3", "probe point a source line in"),
    ("exec={t};probe=probed_add@target.c", "probe point 'probed_add@target.c' in"),
    ("force=yes;uprobe/{t}:probed_add", "setting 'force=yes' does not apply to the libbpf-style section"),
])
def test_settings_that_cannot_be_honoured(tmp_path: Path, target: Path, section: str, message: str) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(UprobeAttacher, tmp_path, fake, "uprobe")
    with pytest.raises(ObjectError) as exc:
        _plan(attacher, section.format(t=target))
    assert exc.value.code == codes.PROBE_SETTING
    assert message in exc.value.message
    assert fake.writes == []


def test_inlines_no_is_what_evspec_does(tmp_path: Path, target: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(UprobeAttacher, tmp_path, fake)
    assert _plan(attacher, f"inlines=no;exec={target};probe=probed_add").events
    attacher.close()


def test_missing_function_is_reported_with_the_program(tmp_path: Path, target: Path) -> None:
    attacher = _attacher(UprobeAttacher, tmp_path, FakeTracefs.create(tmp_path / "tracefs"))
    with pytest.raises(ObjectError) as exc:
        _plan(attacher, f"exec={target};probe=probed_sub")
    assert exc.value.code == codes.PROBE_FUNCTION
    assert exc.value.message.startswith(f"t.o: program 'prog' (section 'exec={target};probe=probed_sub'): "
                                        f"no function named 'probed_sub' in '{target}'")
    assert exc.value.perf_message == "You need to check probing points in BPF file"


def test_kernel_refusal_names_the_line_and_errno(tmp_path: Path, target: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs")
    fake.fail("p:", errno.EINVAL)
    attacher = _attacher(UprobeAttacher, tmp_path, fake)
    with pytest.raises(ObjectError) as exc:
        _plan(attacher, f"exec={target};probe=probed_add")
    assert exc.value.code == codes.PROBE_CREATE
    assert (f"cannot create uprobe event 'p:{GROUP}/probe {target}:{_offset(target, 'probed_add'):#x}' in "
            f"{fake.root}/uprobe_events: the kernel refused the definition (EINVAL)") in exc.value.message
    attacher.close()
    assert fake.writes[1:] == []  # nothing was created, nothing to remove


def test_close_tries_everything_and_reports_the_first_failure(tmp_path: Path, target: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(UprobeAttacher, tmp_path, fake)
    _plan(attacher, f"exec={target};probe=probed_*")
    fake.busy.add(f"{GROUP}/probe_1")
    with pytest.raises(ObjectError) as exc:
        attacher.close()
    assert exc.value.code == codes.PROBE_REMOVE
    assert isinstance(exc.value, KernelError) and exc.value.errno == errno.EBUSY  # what the session reports
    assert exc.value.message == f"cannot remove uprobe event {GROUP}/probe_1: Device or resource busy (EBUSY)"
    assert exc.value.help == (f"remove it by hand: echo '-:{GROUP}/probe_1' >> {fake.root}/uprobe_events",)
    assert [e.event for e in fake.tracefs.entries(ProbeKind.UPROBE)] == ["probe_1"]  # probe was removed


def test_entry_removed_by_someone_else_is_not_an_error(tmp_path: Path, target: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(UprobeAttacher, tmp_path, fake)
    _plan(attacher, f"exec={target};probe=probed_add")
    fake.tracefs.remove(ProbeKind.UPROBE, GROUP, "probe")
    before = len(fake.writes)
    attacher.close()
    assert fake.writes[before:] == [f"-:{GROUP}/probe"]  # close tried to remove it, took ENOENT as done
    assert fake.tracefs.entries(ProbeKind.UPROBE) == () and fake.lines(ProbeKind.UPROBE) == []
    written = len(fake.writes)
    attacher.close()
    assert len(fake.writes) == written  # the entry is forgotten


def test_tracefs_is_mounted_when_missing(tmp_path: Path) -> None:
    root = tmp_path / "tracing"
    root.mkdir()
    mounted: list[Path] = []

    def mount(path: Path) -> None:
        mounted.append(path)
        FakeTracefs.create(path)

    attacher = UprobeAttacher(Kernel(FakeKernel()), AttachOptions(lambda s, e: None), pmus=tmp_path / "none",
                              tracefs_root=root, mount=mount)
    assert mounted == [root]
    assert attacher.notes == [f"mounted tracefs at {root}"]
    assert attacher.maker.tracefs == Tracefs(root, attacher.maker.tracefs.writer)  # type: ignore[union-attr]


# ------------------------------------------------------------------------- kprobes


def test_no_kprobe_support_is_one_clear_message(tmp_path: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs", kinds=(ProbeKind.UPROBE,))
    attacher = _attacher(KprobeAttacher, tmp_path, fake, "uprobe")
    with pytest.raises(ObjectError) as exc:
        _plan(attacher, "func=do_sys_openat2")
    assert exc.value.code == codes.NO_KPROBES
    assert exc.value.message == (
        f"t.o: program 'prog' (section 'func=do_sys_openat2'): this kernel has no kprobe support: neither "
        f"{tmp_path}/pmus/kprobe nor {fake.root}/kprobe_events exists (CONFIG_KPROBE_EVENTS)")
    assert exc.value.perf_message == "You need to check probing points in BPF file"


@pytest.mark.parametrize(("section", "line", "name"), [
    ("func=do_sys_openat2", "p:{g}/func do_sys_openat2", "perf_bpf_probe:func"),
    ("func=do_sys_openat2+16", "p:{g}/func do_sys_openat2+16", "perf_bpf_probe:func"),
    ("read=vfs_read%return", "r:{g}/read__return vfs_read", "perf_bpf_probe:read__return"),
    ("module=ext4;probe=ext4_sync_file", "p:{g}/probe ext4:ext4_sync_file", "perf_bpf_probe:probe"),
    ("at=0xffffffff81000000", "p:{g}/at 0xffffffff81000000", "perf_bpf_probe:at"),
    ("kretprobe/vfs_read", "r:{g}/kretprobe_vfs_read vfs_read", "kretprobe:vfs_read"),
])
def test_kprobes_through_tracefs(tmp_path: Path, section: str, line: str, name: str) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(KprobeAttacher, tmp_path, fake)
    plan = _plan(attacher, section)
    assert fake.writes == [line.format(g=GROUP)]
    assert [(e.name, dict(e.values)) for e in plan.events] == [(name, {"type": 2, "config": 2000})]
    attacher.close()
    assert fake.lines(ProbeKind.KPROBE) == []


def test_kprobe_on_a_missing_kernel_function(tmp_path: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs", kernel_symbols=frozenset({"vfs_read"}))
    attacher = _attacher(KprobeAttacher, tmp_path, fake)
    with pytest.raises(ObjectError) as exc:
        _plan(attacher, "func=no_such_function")
    assert exc.value.code == codes.PROBE_CREATE
    assert "the kernel cannot find the probe target (ENOENT)" in exc.value.message


@pytest.mark.parametrize(("section", "config", "symbol", "config2", "name"), [
    ("kprobe/do_sys_openat2", 0, "do_sys_openat2", 0, "kprobe:do_sys_openat2"),
    ("kprobe/do_sys_openat2+0x10", 0, "do_sys_openat2", 16, "kprobe:do_sys_openat2+0x10"),
    ("kretprobe/vfs_read", 1, "vfs_read", 0, "kretprobe:vfs_read"),
    ("module=ext4;f=ext4_sync_file", 0, "ext4:ext4_sync_file", 0, "perf_bpf_probe:f"),  # no kprobe_events
    ("a=0xffffffff81000000", 0, None, 0xFFFFFFFF81000000, "perf_bpf_probe:a"),
])
def test_kprobes_through_the_pmu(tmp_path: Path, section: str, config: int, symbol: str | None,
                                 config2: int, name: str) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs", kinds=(ProbeKind.UPROBE,))
    attacher = _attacher(KprobeAttacher, tmp_path, fake, "kprobe")
    (event,) = _plan(attacher, section).events
    values = dict(event.values)
    assert (event.name, values["type"], values["config"], values["config2"]) == (name, 8, config, config2)
    assert (ctypes.string_at(values["config1"]).decode() if values["config1"] else None) == symbol
    assert fake.writes == []
    attacher.close()


KALLSYMS = """\
ffffffff81000000 T _stext
ffffffff81100000 T vfs_read
ffffffff81100100 t vfs_readv
ffffffff81100200 D vfs_read_data
ffffffff81100300 T vfs_read
ffffffffc0000000 t ext4_sync_file\t[ext4]
ffffffffc0000100 t ext4_sync_fs\t[ext4]
ffffffff81200000 T ext4_sync_other
"""


def test_kprobe_glob_expands_against_kallsyms(tmp_path: Path) -> None:
    kallsyms = tmp_path / "kallsyms"
    kallsyms.write_text(KALLSYMS)
    assert kernel_functions(kallsyms, "vfs_read*", None) == ("vfs_read", "vfs_readv")
    assert kernel_functions(kallsyms, "ext4_sync_*", "ext4") == ("ext4_sync_file", "ext4_sync_fs")
    assert kernel_functions(kallsyms, "ext4_sync_*", None) == ("ext4_sync_other",)
    with pytest.raises(ObjectError, match="no function of module xfs matches 'x\\*'") as exc:
        kernel_functions(kallsyms, "x*", "xfs")
    assert exc.value.code == codes.PROBE_FUNCTION
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(KprobeAttacher, tmp_path, fake, kallsyms=kallsyms)
    plan = _plan(attacher, "module=ext4;probe=ext4_sync_*")
    assert fake.writes == [f"p:{GROUP}/probe ext4:ext4_sync_file", f"p:{GROUP}/probe_1 ext4:ext4_sync_fs"]
    assert [e.name for e in plan.events] == ["perf_bpf_probe:probe"] * 2
    attacher.close()
    assert fake.lines(ProbeKind.KPROBE) == []


# ------------------------------------------------------------------------- a whole session


@pytest.mark.parametrize("way", ["tracefs", "pmu"])
def test_session_opens_and_attaches_kprobes_on_the_fake_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    """A recording session on the fake kernel with a perf-style kprobe and a libbpf-style
    kretprobe, made through (fake) tracefs entries or through the kprobe PMU: every event carries
    its program; closing the session removes the entries and closes every descriptor."""
    if shutil.which("clang") is None:
        if IN_CI:
            raise RuntimeError("clang is required in CI")
        pytest.skip("clang not installed")
    from evspec.loader.attach import attacher as attach
    from evspec.loader.sections.names import AttachKind
    from evspec.loader.session import RecordOptions, RecordSession

    from evspec.parser import parse

    shutil.copy(TARGET_C.parent / "kprobe.c", tmp_path / "kprobe.c")
    shutil.copy(TARGET_C.parent / "probes.h", tmp_path / "probes.h")
    (tmp_path / "target.h").write_text("/* kprobe.c probes the kernel: no target */\n")
    fake = FakeTracefs.create(tmp_path / "tracefs", kinds=(ProbeKind.KPROBE,) if way == "tracefs" else ())
    pmus = _pmus(tmp_path / "pmus", *(("kprobe",) if way == "pmu" else ()))
    monkeypatch.setitem(attach.KIND_ATTACHERS, AttachKind.KPROBE, lambda kernel, options: KprobeAttacher(
        kernel, options, pmus=pmus, tracefs_root=fake.root, tracefs_writer=fake, mount=_no_mount))
    funnel = FakeKernel()
    symbols: list[bytes] = []
    funnel.script("perf_event_open", times=None, match=lambda a: bool(
        a["type"] == 8 and symbols.append(ctypes.string_at(a["config1"]))))
    session = RecordSession(Kernel(funnel), RecordOptions(cpus=(0, 1)))
    try:
        lists = [parse("./kprobe.c")]
        session.prepare(lists, recording_plan(lists, None), None, tmp_path, None)
        if way == "tracefs":
            assert fake.writes == [f"p:{GROUP}/func do_sys_openat2", f"r:{GROUP}/kretprobe_vfs_read vfs_read"]
            keys = [(2, 2000), (2, 2001)]
        else:
            # a PMU event is a probe of its own: system-wide it is opened on one CPU only
            assert fake.writes == [] and symbols == [b"do_sys_openat2", b"vfs_read"]
            keys = [(8, 0), (8, 1)]
        opened: dict[tuple[int, int], set[int]] = {}
        for c in funnel.calls_of("perf_event_open"):
            opened.setdefault((c.args["type"], c.args["config"]), set()).add(c.result)
        live = session.objects[0].live
        set_bpf: dict[int, set[int]] = {}
        for c in funnel.calls_of("PERF_EVENT_IOC_SET_BPF"):
            set_bpf.setdefault(c.args["arg"], set()).add(c.args["fd"])
        assert set_bpf == {live.program("on_open").fd: opened[keys[0]],
                           live.program("on_read_return").fd: opened[keys[1]]}
        assert [len(fds) for fds in set_bpf.values()] == ([2, 2] if way == "tracefs" else [1, 1])  # per CPU / once
        assert [e.name for e in session.events if e.name.endswith(("func", "vfs_read"))] == [
            "perf_bpf_probe:func", "kretprobe:vfs_read"]
    finally:
        session.close()
    assert fake.lines(ProbeKind.KPROBE) == [] if way == "tracefs" else fake.writes == []
    assert funnel.open_fds == {}


def test_tracefs_cannot_take_a_path_with_blanks(tmp_path: Path, target: Path) -> None:
    spaced = tmp_path / "my target"
    shutil.copy(target, spaced)
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(UprobeAttacher, tmp_path, fake)
    with pytest.raises(ObjectError, match="uprobe_events cannot take the path '.*/my target': it has blanks") as exc:
        _plan(attacher, f"exec={spaced};probe=probed_add")
    assert exc.value.code == codes.PROBE_CREATE and fake.writes == []


def test_probing_an_ifunc_says_what_is_probed(tmp_path: Path, target: Path) -> None:
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(UprobeAttacher, tmp_path, fake)
    _plan(attacher, f"exec={target};probe=chosen")
    assert attacher.notes[0] == (f"'chosen' in {target} is an IFUNC: the probe is on its resolver, which runs "
                                 "when the function is bound, not on every call")
    attacher.close()


# ------------------------------------------------------------------------- names and limits


def test_a_kprobe_glob_over_too_many_functions_is_refused(tmp_path: Path) -> None:
    kallsyms = tmp_path / "kallsyms"
    kallsyms.write_text("".join(f"ffffffff8110{i:04x} T fn_{i}\n" for i in range(129)))
    assert len(kernel_functions(kallsyms, "fn_1*", None)) == 40  # fn_1, fn_10-19, fn_100-128
    with pytest.raises(ObjectError) as exc:
        kernel_functions(kallsyms, "fn_*", None)
    assert exc.value.code == codes.PROBE_TOO_MANY
    assert exc.value.message == ("'fn_*' matches 129 kernel functions; perf-probe makes at most 128 probe "
                                 "points from one definition")


def test_glob_suffixes_that_do_not_fit_tracefs_are_named(tmp_path: Path, target: Path) -> None:
    """A 62-character event fits, its second match's name EVENT_1 does not: refused before
    anything of the definition is left in tracefs, naming the name, the program and the section."""
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(UprobeAttacher, tmp_path, fake, "uprobe")
    fits = "e" * 61
    plan = _plan(attacher, f"exec={target};{fits}=probed_*")
    assert [w.split()[0] for w in fake.writes] == [f"p:{GROUP}/{fits}", f"p:{GROUP}/{fits}_1"]
    long = "e" * 62
    with pytest.raises(ObjectError) as exc:
        _plan(attacher, f"exec={target};{long}=probed_*", name="two")
    assert exc.value.code == codes.PROBE_NAME_TOO_LONG
    assert exc.value.perf_message == "Argument list too long"
    assert exc.value.message.startswith(f"t.o: program 'two' (section 'exec={target};{long}=probed_*'): event "
                                        f"'{long}' needs a further name '{long}_1' (for another match")
    assert exc.value.help == ("shorten the event name to 61 characters or fewer",)
    assert len(plan.events) == 2
    attacher.close()  # the first match's entry of the refused definition goes too
    assert fake.lines(ProbeKind.UPROBE) == []


def test_long_libbpf_names_are_cut_the_same_way_every_time(tmp_path: Path, target: Path) -> None:
    """libbpf-style sections name no event: the tracefs name comes from the function and is cut
    to leave room for a _N suffix; names that are equal after the cut get _1, _2 in order."""
    fake = FakeTracefs.create(tmp_path / "tracefs")
    attacher = _attacher(UprobeAttacher, tmp_path, fake, "uprobe")
    for offset in ("0x1", "0x2"):
        _plan(attacher, f"uprobe/{target}:probed_add+{offset}")
    created = [w.split()[0].split("/")[1] for w in fake.writes]
    assert created == ["uprobe_probed_add_0x1", "uprobe_probed_add_0x2"]
    from evspec.loader.attach.probes import _tracefs_name

    name = "uprobe:" + "f" * 80
    cut = _tracefs_name(name)
    assert cut == "uprobe_" + "f" * 51 and len(cut) + len("_1023") == 63
    assert _tracefs_name(name) == cut
    attacher.close()


def test_a_probe_attacher_must_say_how_points_are_found() -> None:
    from evspec.loader.attach.probes import ProbeAttacher

    class NoPoints(ProbeAttacher):
        kind = ProbeKind.UPROBE

    with pytest.raises(TypeError, match="_points"):
        NoPoints(Kernel(FakeKernel()), AttachOptions(lambda s, e: None))  # type: ignore[abstract]
