"""Records compared with libbpf's (issues #11 and #12): one object and one workload, run once under
a small runner linked against libbpf (tests/data/records/runner.c) and once under
``evspec record -a --format json``, must give the same multiset of records about the workload.

Both attach system-wide: libbpf's tracepoint, raw tracepoint and BTF tracepoint links are, and
``-a`` makes evspec's tracepoint events so too, and opens its bpf-output events on every CPU as
``perf_buffer__new`` does. A record is compared when its owner field names one of the workload's
tasks. The workload (recwork.c) writes its pids to a file; pids in records are replaced by their
role (``W`` the workload, ``L`` whoever launched it, ``C1``, ``C2``... its children), fields that
differ from run to run (times, user stack addresses) are masked, and strings of programs that
leave a ring buffer record's tail unwritten are compared up to their NUL.

The fixtures of tests/data/records/ cover one program kind or output path each. The held-out
objects are Debian's libbpf-tools (bcc 0.26, tests/heldout_tools.py) whose programs libbpf attaches
on this kind of machine (tracepoints; it has no kprobes and no trampolines); their record layouts
are those of bcc 0.26's headers. Every held-out object libbpf attaches must run under evspec, and
for perf's own section names the reference is perf 6.1 instead of libbpf.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bpf_build import build_bpf, build_program, copy_sources, require_tools
from heldout_tools import extract_objects
from record_cli import run_record as _record

DATA = Path(__file__).parent / "data" / "records"
FIXTURES = ("core_task", "raw_sys", "btf_exec", "tp_perf", "clock", "ring_struct")
PERIOD_NS = 1_000_000  # the cpu-clock sampling period of perf_event programs, in both runners

Span = tuple[int, int]  # (offset, size) in a record


@dataclass(frozen=True, slots=True)
class Case:
    """An object, the output map read, the workload, and the layout of the records."""

    name: str  # a fixture's source stem, or a held-out tool
    map: str
    workload: tuple[str, ...]
    owner: int = 0  # offset of the u32 pid of the task the record is about
    pids: tuple[int, ...] = ()  # offsets of other u32 pids
    masked: tuple[Span, ...] = ()  # bytes that differ from run to run
    strings: tuple[Span, ...] = ()  # compared up to their NUL
    perf: bool = False  # a perf event array (evspec reads it through a bpf-output event)
    record_type: str | None = None  # given as map:MAP.type: evspec's decoded 'pid' must be the owner
    variables: tuple[tuple[str, int], ...] = ()  # var:NAME=VALUE, and the runner's -s NAME=VALUE
    on_cpu_clock: str | None = None  # a perf_event program, put on cpu-clock every PERIOD_NS
    least: int = 1  # records about the workload there must be at least


FIXTURE_CASES = (
    # 6 getppid() calls: 5 and the one behind the pid file's parent line
    Case("core_task", "tasks", ("getppid", "5"), pids=(4, 8), record_type="task_record", least=6),
    Case("raw_sys", "syscalls", ("getppid", "3"), record_type="sys_record", least=20),
    Case("btf_exec", "execs", ("exec", "3"), pids=(4,), record_type="exec_record", least=4),
    Case("tp_perf", "samples", ("getppid", "4"), pids=(4,), perf=True, record_type="ret_record", least=5),
    Case("clock", "ticks", ("spin", "150"), record_type="tick_record", variables=(("max_ticks", 25),),
         on_cpu_clock="on_tick", least=25),
    Case("ring_struct", "opens", ("open", "/etc/hostname", "open", "/nonexistent/recwork"),
         record_type="open_record", least=3),
)

# bcc 0.26's struct event of each tool (TOOL.h), as offsets
HELDOUT_CASES = (
    Case("execsnoop", "events", ("exec", "3", "kill"), pids=(4,), perf=True, record_type="event", least=4),
    Case("exitsnoop", "events", ("exec", "3", "kill"), owner=16, pids=(20, 24), masked=((0, 16),), perf=True,
         least=5),
    Case("sigsnoop", "events", ("kill", "exec", "2"), pids=(4,), perf=True, record_type="event", least=4),
    Case("opensnoop", "events", ("open", "/etc/hostname", "open", "/nonexistent/recwork", "exec", "1"),
         owner=8, masked=((0, 8), (24, 16)), perf=True, least=6),
    Case("statsnoop", "events", ("stat", "/etc/hostname", "stat", "/nonexistent/recwork"), owner=8,
         masked=((0, 8),), perf=True, least=4),
    Case("mountsnoop", "events", ("mount",), owner=16, pids=(20,), masked=((0, 8),),
         strings=((48, 8), (56, 4096), (4152, 4096), (8248, 512)), least=2),
    # ports (the listener's and the ephemeral one) differ from run to run; tcpstates reads 16 bytes
    # at an IPv4 address, the socket's hash and ports among them
    Case("tcpstates", "events", ("tcp",), owner=56, masked=((4, 8), (24, 8), (32, 24), (70, 4)), perf=True,
         least=10),
    Case("tcplife", "events", ("tcp",), owner=64, masked=((32, 16), (68, 4)), perf=True, least=2),
)


# ------------------------------------------------------------------------------------ building


@dataclass(frozen=True, slots=True)
class Tools:
    root: Path
    runner: Path
    workload: Path
    pid_file: Path


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory, root_kernel: None) -> Tools:
    require_tools("clang", "cc")
    root = tmp_path_factory.mktemp("records")
    copy_sources(DATA, ("records.h", "recwork.c", *(f"{name}.c" for name in FIXTURES)), root)
    for name in FIXTURES:
        build_bpf(root, f"{name}.c", f"{name}.o")
    build_bpf(root, "tp_perf.c", "tp_perf_style.o", "-DPERF_STYLE")
    build_program(root, "recwork.c", "recwork")
    proc = subprocess.run(["cc", "-O1", "-o", str(root / "runner"), str(DATA / "runner.c"), "-lbpf"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"building the libbpf runner failed (libbpf-dev installed?):\n{proc.stderr}")
    return Tools(root, root / "runner", root / "recwork", root / "pids")


@pytest.fixture(scope="module")
def heldout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return extract_objects(tmp_path_factory.mktemp("heldout"))


# ------------------------------------------------------------------------------- the two runs


@dataclass(frozen=True, slots=True)
class Run:
    records: list[bytes]
    roles: dict[int, str]  # pid -> W, L, C1, C2, ...
    typed: list[dict[str, Any]]  # evspec's decoded fields, with map:MAP.type


def _roles(pid_file: Path) -> dict[int, str]:
    own, parent, *children = (int(line) for line in pid_file.read_text().split())
    return {own: "W", parent: "L", **{pid: f"C{i}" for i, pid in enumerate(children, 1)}}


@dataclass(frozen=True, slots=True)
class RunnerOutput:
    """What the runner printed: the programs it attached, the maps it read, the records."""

    programs: dict[str, str]  # name -> section
    maps: dict[str, str]  # name -> ringbuf or perf
    records: list[tuple[str, bytes]]  # (map, payload)


def runner(tools: Tools, obj: Path, workload: Sequence[str], *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tools.runner), *options, f"-p{PERIOD_NS}", str(obj), str(tools.workload), *workload],
                          capture_output=True, text=True, timeout=60)


def runner_output(proc: subprocess.CompletedProcess[str]) -> RunnerOutput:
    assert proc.returncode == 0, proc.stderr
    *lines, last = proc.stdout.splitlines()
    assert last == "exit 0", proc.stdout[-2000:]
    out = RunnerOutput({}, {}, [])
    for line in lines:
        kind, name, value = line.split(" ")
        assert kind != "lost", line
        if kind == "prog":
            out.programs[name] = value
        elif kind == "map":
            out.maps[name] = value
        else:
            out.records.append((name, bytes.fromhex(value)))
    return out


def libbpf_run(tools: Tools, case: Case, obj: Path) -> Run:
    sets = [f"-s{name}={value}" for name, value in case.variables]
    out = runner_output(runner(tools, obj, case.workload, *sets))
    return Run([raw for name, raw in out.records if name == case.map], _roles(tools.pid_file), [])


def output_event(perf_map: str) -> str:
    """The bpf-output event evspec puts into the perf event array ``perf_map``."""
    return f"{perf_map}_out"


def evspec_record(
    tools: Tools, obj: Path, workload: Sequence[str], monkeypatch: pytest.MonkeyPatch, *,
    perf_maps: Sequence[str] = (), on_cpu_clock: Sequence[str] = (), terms: Sequence[str] = ()
) -> tuple[int, list[dict[str, Any]], str]:
    """``evspec record -a --format json`` of ``obj`` with ``terms``: a bpf-output event in each
    of ``perf_maps``, the ``on_cpu_clock`` programs on a cpu-clock event. The exit status, the
    JSON lines (the summary last) and what it printed on stderr."""
    monkeypatch.chdir(obj.parent)
    events, terms = [], list(terms)
    if on_cpu_clock:
        events.append(f"cpu-clock/period={PERIOD_NS},name=tick/")
        terms += [f"prog:{name}.event=tick" for name in on_cpu_clock]
    for name in perf_maps:
        events.append(f"bpf-output/name={output_event(name)}/")
        terms.append(f"map:{name}.event={output_event(name)}")
    events.append(f"./{obj.name}/{','.join(terms)}/" if terms else f"./{obj.name}")
    argv = ["-a", "--format", "json", *(a for e in events for a in ("-e", e)), "--", str(tools.workload), *workload]
    status, out, err = _record(*argv)
    return status, [json.loads(line) for line in out.splitlines()], err


def evspec_run(tools: Tools, case: Case, obj: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    terms = [f"var:{name}={value}" for name, value in case.variables]
    if case.record_type is not None:
        terms.append(f"map:{case.map}.type={case.record_type}")
    status, lines, err = evspec_record(
        tools, obj, case.workload, monkeypatch, perf_maps=[case.map] if case.perf else [],
        on_cpu_clock=[case.on_cpu_clock] if case.on_cpu_clock else [], terms=terms)
    assert status == 0, err
    *lines, summary = lines
    assert summary["summary"]["lost"] == 0, summary
    name = output_event(case.map) if case.perf else case.map
    mine = [line for line in lines if line.get("event") == name]
    return Run([bytes.fromhex(line["raw_hex"]) for line in mine], _roles(tools.pid_file),
               [line["fields"] for line in mine if "fields" in line])


# -------------------------------------------------------------------------------- comparing


def _u32(raw: bytes, at: int) -> int:
    return int.from_bytes(raw[at:at + 4], "little")


def normalized(case: Case, run: Run) -> Counter[str]:
    """The records about the workload's tasks, as hex with pids as roles, masked bytes as ``*``
    and strings cut at their NUL."""
    workload = {pid for pid, role in run.roles.items() if role != "L"}
    out: Counter[str] = Counter()
    for raw in run.records:
        if _u32(raw, case.owner) not in workload:
            continue
        spans: list[tuple[int, int, str]] = []
        for at in (case.owner, *case.pids):
            pid = _u32(raw, at)
            spans.append((at, 4, run.roles.get(pid, str(pid))))
        spans += [(at, size, "*") for at, size in case.masked]
        spans += [(at, size, raw[at:at + size].split(b"\0", 1)[0].hex()) for at, size in case.strings]
        pieces, pos = [], 0
        for at, size, text in sorted(spans):
            pieces += [raw[pos:at].hex(), f"<{text}>"]
            pos = at + size
        out["".join(pieces) + raw[pos:].hex()] += 1
    return out


def compare(tools: Tools, case: Case, obj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECWORK_PIDS", str(tools.pid_file))
    ref = libbpf_run(tools, case, obj)
    ours = evspec_run(tools, case, obj, monkeypatch)
    expected, found = normalized(case, ref), normalized(case, ours)
    assert found == expected, (f"libbpf only: {expected - found}\nevspec only: {found - expected}")
    assert expected.total() >= case.least, expected
    if case.record_type is not None:  # the typed records decode as the raw bytes say
        owners = {_u32(raw, case.owner) for raw in ours.records}
        assert len(ours.typed) == len(ours.records) and {f["pid"] for f in ours.typed} == owners


@pytest.mark.parametrize("case", FIXTURE_CASES, ids=lambda c: c.name)
def test_fixture_records_equal_libbpf(case: Case, tools: Tools, monkeypatch: pytest.MonkeyPatch) -> None:
    compare(tools, case, tools.root / f"{case.name}.o", monkeypatch)


@pytest.mark.parametrize("case", HELDOUT_CASES, ids=lambda c: c.name)
def test_heldout_records_equal_libbpf(
    case: Case, tools: Tools, heldout: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    compare(tools, case, heldout[case.name], monkeypatch)


def test_every_heldout_object_libbpf_attaches_runs_under_evspec(
    tools: Tools, heldout: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #12: every held-out object whose programs libbpf attaches here (the runner, on a
    workload of one getppid()) runs under evspec record as well, with a bpf-output event in each
    perf event array libbpf read and the perf_event programs on cpu-clock, with no warning. The
    others libbpf cannot load or attach here: kprobes, trampolines, uprobes and USDTs that name no
    binary, a CO-RE relocation this kernel's BTF cannot satisfy, maps the kernel refuses."""
    monkeypatch.setenv("RECWORK_PIDS", str(tools.pid_file))
    attached = {}
    for name, obj in sorted(heldout.items()):
        proc = runner(tools, obj, ("getppid", "1"))
        if proc.returncode == 0:
            attached[name] = runner_output(proc)
    assert {case.name for case in HELDOUT_CASES} <= set(attached), sorted(attached)
    failed = {}
    for name, ref in attached.items():
        status, lines, err = evspec_record(
            tools, heldout[name], ("getppid", "1"), monkeypatch,
            perf_maps=[m for m, kind in ref.maps.items() if kind == "perf"],
            on_cpu_clock=[p for p, section in ref.programs.items() if section == "perf_event"])
        if status != 0 or "warning" in err or "error" in err or not lines or "summary" not in lines[-1]:
            failed[name] = err
    assert failed == {}


_HEXDUMP = re.compile(r"^\s*(?:BPF output:)?\s+([0-9a-f]{4}): ((?:[0-9a-f]{2} ){1,8})")


def perf_script_payloads(text: str) -> list[bytes]:
    """The payloads of the bpf-output samples ``perf script`` prints, from their hex dumps."""
    out: list[bytearray] = []
    for line in text.splitlines():
        m = _HEXDUMP.match(line)
        if m is None:
            continue
        if m.group(1) == "0000":
            out.append(bytearray())
        out[-1] += bytes.fromhex(m.group(2))
    return [bytes(raw) for raw in out]


def test_perf_style_section_records_equal_perf_61(
    tools: Tools, perf_binary: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #11, perf's side: tp_perf.c with perf's section name (syscalls:sys_exit_getppid),
    recorded system-wide by perf 6.1 and by evspec with the same event strings (perf 6.1 wants the
    bpf-output event without inherit, even with -a), gives the same records about the workload."""
    case = next(c for c in FIXTURE_CASES if c.name == "tp_perf")
    strings = ("-e", "bpf-output/no-inherit,name=samples_out/", "-e", "./tp_perf_style.o/map:samples.event=samples_out/")
    workload = (str(tools.workload), *case.workload)
    monkeypatch.setenv("RECWORK_PIDS", str(tools.pid_file))
    monkeypatch.chdir(tools.root)
    rec = subprocess.run([perf_binary, "record", "-q", "-a", "-o", "perf.data", *strings, "--", *workload],
                         capture_output=True, text=True, timeout=60)
    assert rec.returncode == 0, rec.stderr
    script = subprocess.run([perf_binary, "script", "-i", "perf.data"], capture_output=True, timeout=60,
                            encoding="utf-8", errors="replace")  # perf script prints bytes that need not be UTF-8
    assert script.returncode == 0, script.stderr
    ref = Run(perf_script_payloads(script.stdout), _roles(tools.pid_file), [])
    status, out, err = _record("-a", "--format", "json", *strings, "--", *workload)
    assert status == 0, err
    lines = [json.loads(line) for line in out.splitlines()][:-1]
    ours = Run([bytes.fromhex(line["raw_hex"]) for line in lines if line.get("event") == "samples_out"],
               _roles(tools.pid_file), [])
    expected, found = normalized(case, ref), normalized(case, ours)
    assert found == expected, (f"perf only: {expected - found}\nevspec only: {found - expected}")
    assert expected.total() >= case.least, expected


def test_a_perf_event_array_the_program_sends_to_gets_an_event_of_its_own(
    tools: Tools, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a map:samples.event= term record creates bpf-output event 'samples' for the array
    (-v says so) and no longer warns that nothing reads it; the records, built on the stack, have
    no type the object says: record says once that map:samples.type= would type them."""
    monkeypatch.chdir(tools.root)
    status, out, err = _record("--format", "json", "-v", "-e", "./tp_perf.o", "--", "true")
    assert status == 0, err
    path = tools.root / "tp_perf.o"
    assert "gets no event" not in err
    assert (f"evspec record: {path}: map 'samples' (perf event array) gets the bpf-output event 'samples' "
            "(no-inherit, at every CPU's key) that record creates: program on_getppid_exit sends to it and no "
            "term gives it an event; its records are printed as bytes") in err
    assert err.count(f"evspec record: note: {path}: map 'samples': its records are printed as bytes: no record "
                     "type is known (no program sends a map's value or a buffer typed by a map, the only records "
                     "whose type the object says); map:samples.type=TYPE would print them as fields\n") == 1
    assert json.loads(out.splitlines()[-1])["summary"]["samples"] == 0
