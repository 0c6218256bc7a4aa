"""uprobes on the running kernel (root), through `evspec record` as a user runs it: a program
built -O2 -g (PIE, and non-PIE), probed perf-style and libbpf-style, on a glob, on return, with a
fetched argument, in the C library; globs matching nothing and names too long for tracefs refused;
nothing left in tracefs after a normal exit, an error, SIGINT, SIGTERM, and (by the next run)
SIGKILL; the missing kprobe support reported with its exit status."""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from evspec.loader.attach.probe_events import Owner
from evspec.loader.object.elf_symbols import read_elf_symbols, uprobe_sites

from evspec.cli.record import add_record_parser, record_main
from evspec.compiler.recording import recording_plan

DATA = Path(__file__).parent / "data" / "probes"
UPROBE_EVENTS = Path("/sys/kernel/tracing/uprobe_events")
# pt_regs offsets of the first argument and the return value
REGS = {"x86_64": (112, 80), "aarch64": (0, 0)}
N = 4


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root_kernel: None) -> Path:
    for tool in ("cc", "clang"):
        if shutil.which(tool) is None:
            if os.environ.get("CI") == "true":
                raise RuntimeError(f"{tool} is required in CI")
            pytest.skip(f"{tool} not installed")
    for src in DATA.iterdir():
        shutil.copy(src, tmp_path)
    subprocess.run(["cc", "-O2", "-g", "-o", "target", "target.c"], cwd=tmp_path, check=True)
    ldd = subprocess.run(["ldd", str(tmp_path / "target")], capture_output=True, text=True, check=True).stdout
    libc = os.path.realpath(re.search(r"libc\.so\.6 => (\S+)", ldd).group(1))  # type: ignore[union-attr]
    arg0, rc = REGS[platform.machine()]
    (tmp_path / "target.h").write_text(
        f'#define TARGET "{tmp_path / "target"}"\n#define LIBC "{libc}"\n'
        f"#define ARG0_OFFSET {arg0}\n#define RC_OFFSET {rc}\n"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def record(*argv: str) -> tuple[int, str, str]:
    """``evspec record ARGV`` in this process; checks that no descriptor (event, program, map)
    is left open and that no uprobe entry of this process is left in tracefs."""
    parser = argparse.ArgumentParser()
    add_record_parser(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(["record", *argv])
    out, err = io.StringIO(), io.StringIO()
    before = _fds()
    status = record_main(args, stdout=out, stderr=err)
    assert _fds() == before, "descriptors left open"
    assert _entries_of(os.getpid()) == [], "uprobe entries left in tracefs"
    return status, out.getvalue(), err.getvalue()


def _entries_of(pid: int) -> list[str]:
    return [line for line in UPROBE_EVENTS.read_text().splitlines() if f":evspec_{pid}_" in line]


def hits(out: str) -> list[tuple[int, int]]:
    """(tag, value) of each record the probe programs emitted, in order."""
    found = []
    for record in map(json.loads, out.splitlines()):
        if "raw_hex" not in record:  # the summary line
            continue
        raw = bytes.fromhex(record["raw_hex"])
        found.append((int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:16], "little", signed=True)))
    return found


def test_uprobe_fires_once_per_call(workdir: Path) -> None:
    status, out, err = record("-v", "--format", "json", "-e", "./entry.c", "--", "./target", str(N))
    assert status == 0, err
    assert hits(out) == [(1, i) for i in range(1, N + 1)]
    group = Owner.of(os.getpid()).group  # type: ignore[union-attr]
    assert re.search(rf"perf_bpf_probe:probe: uprobe {workdir}/target:0x[0-9a-f]+ \(tracefs {group}/probe\)", err)


def test_glob_makes_one_probe_per_function(workdir: Path) -> None:
    status, out, err = record("-v", "--format", "json", "-e", "./glob.c", "--", "./target", str(N))
    assert status == 0, err
    assert sorted(hits(out)) == sorted([(2, i) for i in range(1, N + 1)] + [(2, 1000 + i) for i in range(1, N + 1)])
    assert err.count("perf_bpf_probe:probe: uprobe") == 2  # probed_add and probed_mul


def test_uretprobe_delivers_return_values(workdir: Path) -> None:
    status, out, err = record("--format", "json", "-e", "./ret.c", "--", "./target", str(N))
    assert status == 0, err
    assert hits(out) == [(3, 100 + i) for i in range(1, N + 1)]


def test_shared_library_probe(workdir: Path) -> None:
    status, out, err = record("--format", "json", "-e", "./libc.c", "--", "./target", str(N))
    assert status == 0, err
    assert hits(out) == [(6, 0)] * N


def test_argument_prologue_shared_by_a_glob(workdir: Path) -> None:
    status, out, err = record("-v", "--format", "json", "-e", "./args.c", "--", "./target", str(N))
    assert status == 0, err
    assert sorted(hits(out)) == sorted([(7, i) for i in range(1, N + 1)] + [(7, 1000 + i) for i in range(1, N + 1)])
    assert "evspec record: 1 program served 2 probe points (argument prologues)\n" in err


def test_libbpf_style_uprobes_through_the_command_line(workdir: Path) -> None:
    """uprobe/PATH:FUNC and uretprobe/PATH:FUNC are evspec's language (Decision 10): checked
    without a finding and attached."""
    status, out, err = record("-v", "--format", "json", "-e", "./libbpf.c", "--", "./target", str(N))
    assert status == 0, err
    assert sorted(hits(out)) == LIBBPF_HITS
    assert "warning" not in err and "error" not in err
    group = Owner.of(os.getpid()).group  # type: ignore[union-attr]
    (site,) = uprobe_sites(read_elf_symbols(workdir / "target"), "probed_mul")
    where = f"{workdir}/target:{site.file_offset:#x}"
    assert (f"evspec record: uprobe:probed_mul: uprobe {where} (tracefs {group}/uprobe_probed_mul) "
            f"for program 'on_mul'\n") in err
    assert (f"evspec record: uretprobe:probed_mul: uretprobe {where} (tracefs {group}/uretprobe_probed_mul) "
            f"for program 'on_mul_return'\n") in err


def test_non_pie_target(workdir: Path) -> None:
    """A position-dependent executable: its functions' link-time addresses (0x40....) are not
    the file offsets the kernel wants; the probes go at the file offsets and fire."""
    subprocess.run(["cc", "-O2", "-g", "-fno-PIE", "-no-pie", "-o", "target", "target.c"], check=True)
    symbols = read_elf_symbols(workdir / "target")
    assert not symbols.shared
    status, out, err = record("-v", "--format", "json", "-e", "./glob.c", "--", "./target", str(N))
    assert status == 0, err
    assert sorted(hits(out)) == sorted([(2, i) for i in range(1, N + 1)] + [(2, 1000 + i) for i in range(1, N + 1)])
    for site in uprobe_sites(symbols, "probed_*"):
        assert site.address != site.file_offset
        assert f": uprobe {workdir}/target:{site.file_offset:#x} (tracefs " in err
    status, out, err = record("--format", "json", "-e", "./ret.c", "--", "./target", str(N))
    assert status == 0, err
    assert hits(out) == [(3, 100 + i) for i in range(1, N + 1)]


def test_a_glob_matching_nothing(workdir: Path) -> None:
    status, out, err = record("-e", "./nomatch.c", "--", "./target", str(N))
    assert (status, out) == (1, ""), err
    assert (f"error[EB146]: section 'exec={workdir}/target;probe=nothing_*': no function matches "
            f"'nothing_*' in '{workdir}/target'\n") in err
    assert f"= note: program on_nothing: SEC(\"exec={workdir}/target;probe=nothing_*\")" in err


def test_an_event_name_too_long_for_tracefs(workdir: Path) -> None:
    """perf 6.1 fails on it with "Argument list too long"; evspec names the event and the limit."""
    event = "e" * 64
    (workdir / "long.c").write_text(
        f'#include "probes.h"\nSEC("exec=" TARGET ";{event}=probed_add")\n'
        "int on_long(void *ctx) { return emit(ctx, 8, 0); }\n"
    )
    status, out, err = record("-e", "./long.c", "--", "./target", str(N))
    assert (status, out) == (1, ""), err
    assert (f"error[EB101]: section 'exec={workdir}/target;{event}=probed_add': event name '{event}' is 64 "
            "characters long; a probe event name has at most 63\n") in err
    assert f"= note: program on_long: SEC(\"exec={workdir}/target;{event}=probed_add\")\n" in err
    assert "= help: shorten the event name to 63 characters or fewer" in err


def _has_kprobes() -> bool:
    return Path("/sys/bus/event_source/devices/kprobe").exists() or Path("/sys/kernel/tracing/kprobe_events").exists()


def _kprobe_hits(found: list[tuple[int, int]]) -> set[int]:
    """The kprobe fixtures' tags seen (20: do_sys_openat2 entered, 21: vfs_read returned)."""
    return {tag for tag, _ in found if tag in (20, 21)}


def test_kprobes_through_the_command_line(workdir: Path) -> None:
    """With kprobes, both styles attach and fire for the workload; without them (this project's
    machines) the check stage refuses either style with EB144 (exit 1), before anything is loaded."""
    workload = ["cat", "/etc/hostname"]  # opens and reads a file
    if _has_kprobes():
        status, out, err = record("--format", "json", "-e", "./kprobe.c", "--", *workload)
        assert status == 0, err
        assert _kprobe_hits(hits(out)) == {20, 21}
        status, out, err = record("--format", "json", "-e", "./kretprobe.c", "--", *workload)
        assert status == 0, err
        assert _kprobe_hits(hits(out)) == {21}
        return
    status, out, err = record("-e", "./kprobe.c", "--", *workload)
    assert (status, out) == (1, ""), err
    assert "error[EB144]: section 'func=do_sys_openat2': a kprobe, but this system has no kprobe_events\n" in err
    assert "= help: the kernel needs CONFIG_KPROBE_EVENTS=y (tracefs kprobe_events)\n" in err
    assert "= perf: You need to check probing points in BPF file" in err
    status, out, err = record("-e", "./kretprobe.c", "--", *workload)
    assert (status, out) == (1, ""), err
    assert "error[EB144]: section 'kretprobe/vfs_read': a kprobe, but this system has no kprobe_events\n" in err
    assert "= perf:" not in err  # perf refuses the section for its name, not for kprobes: check --perf says so


def _session(workdir: Path, source: str, argv: list[str], options: object = None):  # type: ignore[no-untyped-def]
    from evspec.loader.session import RecordSession, Workload

    from evspec.parser import parse
    from evspec.system import load_system

    workload = Workload(argv)
    session = RecordSession(options=options)  # type: ignore[arg-type]
    try:
        lists, system = [parse(source)], load_system("live")
        session.prepare(lists, recording_plan(lists, system), system, workdir, workload)
    except BaseException:
        session.close()
        workload.close()
        raise
    return session, workload


def _run(session, workload) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    lines: list[str] = []
    session.start()
    workload.start()
    session.run(lambda: session.drain(lambda rec: lines.append(json.dumps({"raw_hex": rec.raw.hex()}))), workload)
    assert workload.wait() == 0
    return hits("\n".join(lines))


def _program_ids() -> set[int]:
    ids = set()
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            text = Path(f"/proc/self/fdinfo/{fd}").read_text()
        except OSError:
            continue
        m = re.search(r"^prog_id:\s+(\d+)", text, re.M)
        if m:
            ids.add(int(m.group(1)))
    return ids


def test_prologue_programs_in_the_kernel(workdir: Path) -> None:
    """Two probe points with identical fetch code: the kernel holds one program for both."""
    before = _program_ids()
    session, workload = _session(workdir, "./args.c", ["./target", str(N)])
    try:
        assert len(_program_ids() - before) == 1
        assert len(_run(session, workload)) == 2 * N
    finally:
        session.close()
        workload.close()
    assert _program_ids() == before


LIBBPF_HITS = sorted([(4, 1000 + i) for i in range(1, N + 1)] + [(5, 3 * (1000 + i)) for i in range(1, N + 1)])


def test_libbpf_style_uprobes(workdir: Path) -> None:
    """libbpf's uprobe/PATH:FUNC and uretprobe/... (the session API: `evspec check`, which record
    runs first, reports libbpf-style sections as sections perf cannot load)."""
    session, workload = _session(workdir, "./libbpf.c", ["./target", str(N)])
    try:
        assert sorted(line.split()[0].split("/")[1] for line in _entries_of(os.getpid())) == [
            "uprobe_probed_mul", "uretprobe_probed_mul"]
        got = _run(session, workload)
    finally:
        session.close()
        workload.close()
    assert sorted(got) == LIBBPF_HITS
    assert _entries_of(os.getpid()) == []


def test_uprobe_pmu_when_tracefs_cannot_be_used(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback: the uprobe PMU. A PMU event runs the program itself, so the events are opened
    once, system-wide on CPU 0, with the workload on CPU 0 (the output event then has that one
    slot); nothing appears in tracefs."""
    from evspec.loader.attach import attacher as attach
    from evspec.loader.attach.probes import UprobeAttacher
    from evspec.loader.sections.names import AttachKind
    from evspec.loader.session import RecordOptions

    monkeypatch.setitem(attach.KIND_ATTACHERS, AttachKind.UPROBE, lambda kernel, options: UprobeAttacher(
        kernel, options, tracefs_root=workdir / "no-tracefs"))
    before = UPROBE_EVENTS.read_text()
    session, workload = _session(
        workdir,
        "bpf-output/no-inherit,name=out/,./pmu.c/map:out.event=out/",
        ["taskset", "-c", "0", "./target", str(N)],
        RecordOptions(cpus=(0,)),
    )
    try:
        assert UPROBE_EVENTS.read_text() == before
        assert [e.attr.type for e in session.events if "probed_mul" in e.name] == [
            int(Path("/sys/bus/event_source/devices/uprobe/type").read_text())] * 2
        got = _run(session, workload)
    finally:
        session.close()
        workload.close()
    assert sorted(got) == LIBBPF_HITS


def test_uprobe_pmu_events_follow_the_task_on_every_cpu(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The PMU fallback for a workload on every CPU: each probe event is opened once for the task
    (cpu -1), so every hit runs the program once, not once per CPU event."""
    from evspec.loader.attach import attacher as attach
    from evspec.loader.attach.probes import UprobeAttacher
    from evspec.loader.sections.names import AttachKind

    monkeypatch.setitem(attach.KIND_ATTACHERS, AttachKind.UPROBE, lambda kernel, options: UprobeAttacher(
        kernel, options, tracefs_root=workdir / "no-tracefs"))
    session, workload = _session(workdir, "./libbpf.c", ["./target", str(N)])  # __bpf_stdout__: a slot per CPU
    try:
        probes = [e for e in session.events if "probed_mul" in e.name]
        assert probes and all(len(e.all_fds()) == 1 and e.cpus == (-1,) and not e.rings for e in probes)
        got = _run(session, workload)
    finally:
        session.close()
        workload.close()
    assert sorted(got) == LIBBPF_HITS


def test_kprobe_sessions_without_the_check_stage(workdir: Path) -> None:
    """The session (no check stage in front): with kprobes both programs fire for the workload;
    without, the attacher names what the kernel lacks."""
    from evspec.loader.errors import ObjectError

    if _has_kprobes():
        session, workload = _session(workdir, "./kprobe.c", ["cat", "/etc/hostname"])
        try:
            got = _run(session, workload)
        finally:
            session.close()
            workload.close()
        assert _kprobe_hits(got) == {20, 21}
        return
    with pytest.raises(ObjectError) as exc:
        _session(workdir, "./kprobe.c", ["true"])
    assert exc.value.message.endswith(
        "this kernel has no kprobe support: neither /sys/bus/event_source/devices/kprobe nor "
        "/sys/kernel/tracing/kprobe_events exists (CONFIG_KPROBE_EVENTS)")


def test_entries_removed_after_an_error(workdir: Path) -> None:
    status, out, err = record("-e", "./entry.c", "--", "./no-such-command")
    assert (status, out) == (2, "")
    assert "cannot run './no-such-command'" in err


SLOW_WORKLOAD = ("./target", str(N), "done")  # writes 'done' after its calls, then waits for a signal


def _when_done(workdir: Path, action, timeout: float = 30) -> threading.Thread:  # type: ignore[no-untyped-def]
    """Run ``action`` in a thread once the slow workload's target has run."""
    marker = workdir / "done"

    def wait() -> None:
        deadline = time.monotonic() + timeout
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # the records of the last hits reach the rings
        action()

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread


def test_entries_removed_after_sigint(workdir: Path) -> None:
    thread = _when_done(workdir, lambda: os.kill(os.getpid(), signal.SIGINT))
    status, out, err = record("--format", "json", "-e", "./entry.c", "--", *SLOW_WORKLOAD)
    thread.join()
    assert status == 128 + signal.SIGINT, err
    assert hits(out) == [(1, i) for i in range(1, N + 1)]


def _recorder(workdir: Path, *argv: str) -> subprocess.Popen[str]:
    """``python -m evspec record`` in its own session (process group), cwd outside the repo."""
    return subprocess.Popen(
        [sys.executable, "-m", "evspec", "record", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=workdir, start_new_session=True,
    )


def _wait_for_entries(pid: int, timeout: float = 30) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _entries_of(pid)
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"the recorder {pid} created no uprobe entry")


def test_entries_removed_after_sigterm(workdir: Path) -> None:
    proc = _recorder(workdir, "--format", "json", "-e", "./entry.c", "--", *SLOW_WORKLOAD)
    try:
        _when_done(workdir, lambda: proc.send_signal(signal.SIGTERM)).join()
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert hits(out) == [(1, i) for i in range(1, N + 1)]
    assert _entries_of(proc.pid) == []


def _killed_recorder(workdir: Path, source: str, entries: int) -> tuple[int, list[str], str]:
    """A recorder of ``source`` SIGKILLed once it made ``entries`` tracefs entries: its pid, the
    entries (nobody removed them) and their group."""
    proc = _recorder(workdir, "-e", source, "--", "sleep", "30")
    try:
        stale = _wait_for_entries(proc.pid)
        while len(stale) < entries:
            stale = _entries_of(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert _entries_of(proc.pid) == stale
    return proc.pid, stale, re.search(r":(evspec_\d+_\d+_\d+)/", stale[0]).group(1)  # type: ignore[union-attr]


def test_stale_entries_of_a_killed_run_are_removed_by_the_next(workdir: Path) -> None:
    pid, stale, group = _killed_recorder(workdir, "./glob.c", 2)
    assert len(stale) == 2
    status, _, err = record("-v", "-e", "./entry.c", "--", "./target", "1")
    assert status == 0, err
    assert (f"evspec record: removed 2 stale uprobe event(s) of evspec runs that are gone: "
            f"{group}/probe, {group}/probe_1\n") in err
    assert _entries_of(pid) == []


def test_stale_entries_are_removed_by_a_next_run_that_makes_no_probe(workdir: Path) -> None:
    """The next run sweeps whatever it attaches: here a plain tracepoint event, no probe at all."""
    pid, _, group = _killed_recorder(workdir, "./entry.c", 1)
    status, _, err = record("-v", "-e", "syscalls:sys_enter_getppid", "--", "true")
    assert status == 0, err
    assert f"evspec record: removed 1 stale uprobe event(s) of evspec runs that are gone: {group}/probe\n" in err
    assert _entries_of(pid) == []


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def test_stale_entries_of_a_zombie_owner_are_removed_by_the_next(workdir: Path) -> None:
    """A killed run that nobody reaps (the normal case under a container init that reaps late or
    never) still has /proc/PID/stat, state Z: it is gone all the same, and its entries are stale."""
    proc = _recorder(workdir, "-e", "./entry.c", "--", "sleep", "30")
    try:
        stale = _wait_for_entries(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while _state(proc.pid) != "Z":  # killed, not reaped: this test is its parent and waits not
            assert time.monotonic() < deadline, "the killed recorder did not become a zombie"
            time.sleep(0.02)
        assert _entries_of(proc.pid) == stale
        group = re.search(r":(evspec_\d+_\d+_\d+)/", stale[0]).group(1)  # type: ignore[union-attr]
        status, _, err = record("-v", "-e", "./entry.c", "--", "./target", "1")
        assert status == 0, err
        assert f"evspec record: removed 1 stale uprobe event(s) of evspec runs that are gone: {group}/probe\n" in err
        assert _state(proc.pid) == "Z" and _entries_of(proc.pid) == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=20)


def _perf_payloads(script: str) -> Counter[str]:
    """The BPF output payloads (hex) of ``perf script`` text."""
    out: Counter[str] = Counter()
    data: bytes | None = None
    for line in script.splitlines():
        m = re.match(r"\s*(?:BPF output:)?\s*[0-9a-f]{4}:((?: [0-9a-f]{2})+)", line)
        if m:
            data = (data or b"") + bytes.fromhex(m.group(1).replace(" ", ""))
        elif data is not None:
            out[data.hex()] += 1
            data = None
    if data is not None:
        out[data.hex()] += 1
    return out


def test_differential_against_perf(workdir: Path, perf_binary: str) -> None:
    """perf 6.1 records the same payloads from the same object (a glob over two functions)."""
    from evspec.loader.object.clang import compile_source

    shutil.copy(compile_source(workdir / "glob.c"), workdir / "glob.o")
    rec = subprocess.run([perf_binary, "record", "-q", "-o", "perf.data", "-e", "./glob.o", "--", "./target", str(N)],
                         capture_output=True, text=True)
    assert rec.returncode == 0, rec.stderr
    script = subprocess.run([perf_binary, "script", "-i", "perf.data"], capture_output=True, text=True,
                            errors="replace", check=True)
    expected = _perf_payloads(script.stdout)
    status, out, err = record("--format", "json", "-e", "./glob.o", "--", "./target", str(N))
    assert status == 0, err
    samples = [r for r in map(json.loads, out.splitlines()) if "raw_hex" in r]
    assert Counter(r["raw_hex"] for r in samples) == expected
    assert sum(expected.values()) == 2 * N


def test_a_capture_of_a_uprobe_object_reads_back(workdir: Path, perf_binary: str) -> None:
    """The capture's tracing data holds the probe's format from evspec's own tracefs group, where
    the event is (its name is perf's perf_bpf_probe:probe)."""
    status, out, err = record("-o", "up.data", "-e", "./entry.c", "--", "./target", str(N))
    assert (status, out) == (0, ""), err
    done = subprocess.run([sys.executable, "-m", "evspec", "script", "-i", "up.data"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    perf = subprocess.run([perf_binary, "script", "-i", "up.data"], capture_output=True, text=True, errors="replace")
    assert perf.returncode == 0, perf.stderr
    ours = _perf_payloads(done.stdout)
    assert ours == _perf_payloads(perf.stdout) and sum(ours.values()) == N


def test_a_probe_programs_filter_prints_its_probes_samples_as_perf_does(workdir: Path, perf_binary: str) -> None:
    """A program's return value decides whether its probe's own sample is kept (1: kept, 0: not),
    and a kept one is the probe's tracepoint record, printed by its format as perf prints it: never
    as BPF output."""
    address = f"{uprobe_sites(read_elf_symbols(str(workdir / 'target')), 'probed_add')[0].address:x}"
    status, out, err = record("-e", "./filtered.c", "--", "./target", str(N))
    assert status == 0, err
    assert "BPF output" not in out
    probe = re.compile(r"^\s+target\s+\d+ \[\d{3}\]\s+\d+\.\d{6}: perf_bpf_probe:probe: \(([0-9a-f]+)\)$", re.M)
    kept = probe.findall(out)
    assert len(kept) == N // 2 and len(set(kept)) == 1 and kept[0].endswith(address[-3:])  # the odd calls
    status, _, err = record("-o", "filtered.data", "-e", "./filtered.c", "--", "./target", str(N))
    assert status == 0, err
    perf = subprocess.run([perf_binary, "script", "-i", "filtered.data"], capture_output=True, text=True)
    assert perf.returncode == 0, perf.stderr
    ours = subprocess.run([sys.executable, "-m", "evspec", "script", "-i", "filtered.data"], capture_output=True,
                          text=True)
    assert ours.returncode == 0, ours.stderr
    assert len(probe.findall(perf.stdout)) == N // 2 and ours.stdout.splitlines() == perf.stdout.splitlines()
