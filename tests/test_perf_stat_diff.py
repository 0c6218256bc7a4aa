"""Differential test: the perf_event_attr plans of ``evspec compile --perf 6.1`` against what
perf 6.1 opens.

For every corpus string perf 6.1 accepts (PERF61 ``ok``, no BPF object) and evspec accepts too,
plus a handful of strings outside the corpus, perf is run as ``perf stat -vv -e STR -- true`` (or
``perf record -vv`` when the string has terms perf stat does not take) and the ``perf_event_attr:``
blocks it prints are compared with the plan. What perf printed is kept under
``tests/golden/perf_stat/`` (with a snapshot of the machine it ran on), so the comparison also runs
where perf is missing; ``EVSPEC_BLESS=1`` re-records it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evspec.compiler import attr as A

GOLDEN = Path(__file__).resolve().parent / "golden" / "perf_stat"
SYSTEM_SNAPSHOT = GOLDEN / "system.json"
BLESS = os.environ.get("EVSPEC_BLESS") == "1"

#: strings outside the corpus: (string, tool)
EXTRA_CASES: tuple[tuple[str, str], ...] = (
    ("cpu-clock", "record"),
    ("cpu-clock,task-clock", "record"),
    ("{cpu-clock,task-clock}:S", "record"),
    ("cpu-clock:S", "record"),
    ("cpu-clock/freq=100/", "record"),
    ("cpu-clock/no-inherit,overwrite/", "record"),
    ("cpu-clock/call-graph=fp,time=0,period=77/u,sched:sched_switch", "record"),
    ("cpu-clock/call-graph=fp,max-stack=7/", "record"),
    ("cpu-clock/call-graph=dwarf/", "record"),
    ("cpu-clock/call-graph=dwarf,stack-size=1001/", "record"),
    ("sched:sched_switch/call-graph=fp,no-inherit/", "record"),
    ("mem:0x1000/2:r", "record"),
    ("{cpu-clock:k,faults}:u", "stat"),
    ("{cpu-clock:k,faults}:u", "record"),
    ("msr/event=0x4/u", "stat"),
    ("power/event=0x5,config=0x10/", "stat"),
    ("uprobe/retprobe,ref_ctr_offset=7/", "stat"),
    ("L1-icache-prefetch-misses:k", "stat"),
    ("{cycles:G,cache-misses:H}:uG", "record"),
    ("duration_time", "stat"),
    ("cpu-clock/config=1,config=2/,r1a:uk", "stat"),
    ("raw_syscalls:*", "stat"),
    ("TSC:u,Energy-Psys", "stat"),
    ("cpu-clock:u,{task-clock:S,faults}", "record"),
    # the breakpoint PMU's config1/config2 are bp_addr/bp_len; branch_type privilege bits
    ("breakpoint/config=1,config1=0x1000,config2=8/", "stat"),
    ("cpu-clock/branch_type=k/", "record"),
    ("cpu-clock/branch_type=u/", "record"),
    ("cpu-clock/branch_type=any_call/", "record"),
    # glob expansion in tracefs directory order, as perf walks it
    ("sched:sched_wak*", "stat"),
    ("irq:softirq_*", "stat"),
    ("syscalls:sys_enter_*", "stat"),
)

#: record fields that come from the event string (the rest is perf record's own set-up)
RECORD_FIELDS = frozenset(
    {
        "type", "config", "config1", "config2", "config3", "sample_period", "sample_freq", "freq",
        "sample_type", "read_format", "disabled", "inherit", "pinned", "exclusive", "exclude_user",
        "exclude_kernel", "exclude_hv", "exclude_idle", "exclude_host", "exclude_guest",
        "enable_on_exec", "precise_ip", "bp_type", "bp_addr", "bp_len", "write_backward",
        "aux_output", "sample_max_stack", "sample_stack_user", "sample_regs_user",
        "branch_sample_type", "exclude_callchain_user", "mmap", "comm", "task", "mmap2",
        "comm_exec", "sample_id_all", "ksymbol", "bpf_event",
    }
)

_OPEN = re.compile(r"sys_perf_event_open: pid -?\d+\s+cpu (-?\d+)")
_BPF_PATH = re.compile(r"\.(o|obj|c)($|[/,}:])")


# --------------------------------------------------------------------------------------------
# reading perf -vv output


def parse_perf_attrs(output: str) -> tuple[list[dict[str, int]], bool]:
    """The attr of each evsel perf opened, as it first tried it (one dict per evsel, in order),
    and whether every open succeeded in the end.

    After a failed open perf may retry the same evsel with features switched off (``switching
    off ...``, ``trying to fall back``, or silently with the same event); those blocks are dropped.
    Blocks after ``mmap size`` belong to perf record's side-band event. Newer perfs probe the
    kernel (the hybrid extended type) with attrs they print too, without a size, sometimes in the
    middle of an evsel's block (whose last lines then follow the probe's): the probes are dropped
    and the evsel's lines put together. An evsel opened on each CPU (perf 7.2's ``:b`` where BPF
    counters are not used) prints its block before each open: the repeats are one evsel."""
    attrs: list[dict[str, int]] = []
    texts: list[dict[str, str]] = []
    cpus: list[set[int]] = []  # the CPUs each evsel was opened on (-1: any)
    block: dict[str, str] | None = None
    failed = gave_up = probing = resumed = False
    between: list[str] = []
    for line in output.splitlines():
        if line.startswith("mmap size"):
            break
        if line.startswith("perf_event_attr:"):
            block = {}
            continue
        if block is not None:
            if line.startswith("----"):
                if "size" not in block:  # a feature probe: no evsel's
                    block, probing = None, True
                    continue
                values = _attr_values(block)
                if not (failed and attrs and _is_retry(between, attrs[-1], values)):
                    if failed:
                        gave_up = True
                    attrs.append(values)
                    texts.append(block)
                    cpus.append(set())
                block, failed, probing, between = None, False, False, []
                continue
            if not line.startswith("  "):  # another message perf printed meanwhile (Using CPUID ...)
                continue
            key, _, value = line.strip().rpartition("  ")
            block[key.strip()] = value.strip()
            continue
        if line.startswith("  ") and probing and texts:  # the rest of the block the probe cut
            key, _, value = line.strip().rpartition("  ")
            texts[-1][key.strip()] = value.strip()
            attrs[-1] = _attr_values(texts[-1])
            resumed = True
            continue
        if probing:
            if resumed and line.startswith("----"):
                probing = resumed = False
            continue  # the probe's own open
        opened = _OPEN.match(line)
        if opened and cpus and not failed:
            cpu = int(opened.group(1))
            earlier = next((j for j in range(len(attrs) - 1) if attrs[j] == attrs[-1] and cpus[j]
                            and -1 not in cpus[j] and cpu not in cpus[j]), None) if cpu >= 0 and not cpus[-1] else None
            if earlier is not None:  # the same evsel, on its next CPU
                attrs.pop(), texts.pop(), cpus.pop()
                cpus[earlier].add(cpu)
            else:
                cpus[-1].add(cpu)
        if line.startswith("sys_perf_event_open failed"):
            failed = True
        elif line.startswith("sys_perf_event_open:") and "=" in line.rsplit("flags", 1)[-1]:
            failed = False
        else:
            between.append(line)
    return attrs, not (failed or gave_up)


def _is_retry(between: list[str], previous: dict[str, int], current: dict[str, int]) -> bool:
    text = "\n".join(between)
    if "switching off" in text or "trying to fall back" in text:
        return True
    if "not supported by the kernel" in text or "failed to read counter" in text:
        return False
    identity = ("type", "config", "config1", "config2", "bp_addr", "bp_len", "bp_type")
    return all(previous.get(k, 0) == current.get(k, 0) for k in identity)


def _attr_values(block: dict[str, str]) -> dict[str, int]:
    """Numbers from perf's lines; newer perfs name a value after it ('0x3c (cpu-cycles)')."""
    out: dict[str, int] = {}
    for key, full in block.items():
        text = full.split(" (", 1)[0].strip()
        if key == "sample_type":
            out[key] = A.parse_flag_names(text, A.SAMPLE_TYPE_BITS)
        elif key == "read_format":
            out[key] = A.parse_flag_names(text, A.READ_FORMAT_BITS)
        elif key == "branch_sample_type":
            out[key] = A.parse_flag_names(text, A.BRANCH_SAMPLE_BITS)
        else:
            out[key] = int(text, 0)
    breakpoint_type = out.get("type", 0) == A.PERF_TYPE_BREAKPOINT
    renames = {
        "{ sample_period, sample_freq }": "sample_freq" if out.get("freq") else "sample_period",
        "{ bp_addr, config1 }": "bp_addr" if breakpoint_type else "config1",
        "{ bp_len, config2 }": "bp_len" if breakpoint_type else "config2",
        "{ wakeup_events, wakeup_watermark }": "wakeup_events",
    }
    return {renames.get(k, k): v for k, v in out.items()}


def test_parse_perf_attrs_joins_the_opens_of_an_evsel_on_each_cpu() -> None:
    def block(config: int, cpu: int) -> list[str]:
        return ["-" * 60, "perf_event_attr:", "  type                             1", "  size                             144",
                f"  config                           {config:#x}", "-" * 60,
                f"sys_perf_event_open: pid 7  cpu {cpu}  group_fd -1  flags 0x8 = {3 + cpu}"]

    # perf 7.3 stat -vv -e 'cpu-clock:b,cpu-clock:b,task-clock:b' on two CPUs
    output = "\n".join(block(0, 0) + block(0, 1) + block(0, 0) + block(0, 1) + block(1, 0) + block(1, 1))
    attrs, complete = parse_perf_attrs(output)
    assert [a["config"] for a in attrs] == [0, 0, 1] and complete
    # a group is opened CPU by CPU: -e '{cpu-clock,task-clock,cpu-clock}:b'
    output = "\n".join(block(0, 0) + block(1, 0) + block(0, 0) + block(0, 1) + block(1, 1) + block(0, 1))
    assert [a["config"] for a in parse_perf_attrs(output)[0]] == [0, 1, 0]


def test_parse_perf_attrs_drops_retries_and_side_band() -> None:
    output = "\n".join(
        [
            "------------------------------------------------------------",
            "perf_event_attr:",
            "  type                             8",
            "  size                             128",
            "  config                           0x1",
            "  { sample_period, sample_freq }   4000",
            "  sample_type                      IP|TID|TIME|PERIOD",
            "  freq                             1",
            "------------------------------------------------------------",
            "sys_perf_event_open: pid 1  cpu -1  group_fd -1  flags 0x8",
            "sys_perf_event_open failed, error -22",
            "switching off exclude_guest, exclude_host",
            "------------------------------------------------------------",
            "perf_event_attr:",
            "  type                             8",
            "  size                             128",
            "------------------------------------------------------------",
            "sys_perf_event_open: pid 1  cpu -1  group_fd -1  flags 0 = 4",
            "------------------------------------------------------------",
            "perf_event_attr:",
            "  type                             5",
            "  size                             128",
            "Using CPUID GenuineIntel-6-8D-1",
            "  { bp_addr, config1 }             0x1000",
            "  { bp_len, config2 }              0x8",
            "------------------------------------------------------------",
            "sys_perf_event_open: pid 1  cpu -1  group_fd -1  flags 0 = 5",
            "------------------------------------------------------------",
            "perf_event_attr:",  # a feature probe: no size
            "  type                             0",
            "  config                           0xa00000000",
            "  exclude_kernel                   1",
            "------------------------------------------------------------",
            "sys_perf_event_open: pid 0  cpu -1  group_fd -1  flags 0 = 6",
            "mmap size 528384B",
            "perf_event_attr:",
            "  type                             1",
            "------------------------------------------------------------",
        ]
    )
    assert parse_perf_attrs(output) == (
        [
            {"type": 8, "size": 128, "config": 1, "sample_freq": 4000, "sample_type": 0x107, "freq": 1},
            {"type": 5, "size": 128, "bp_addr": 0x1000, "bp_len": 8},
        ],
        True,
    )


# --------------------------------------------------------------------------------------------
# cases and golden files


def _golden_path(string: str, tool: str) -> Path:
    digest = hashlib.sha1(f"{tool}\0{string}".encode()).hexdigest()[:10]
    slug = re.sub(r"[^A-Za-z0-9]+", "_", string).strip("_")[:40] or "blank"
    return GOLDEN / f"{tool}-{slug}-{digest}.json"


def _golden_text(string: str, tool: str, complete: bool, attrs: list[dict[str, int]]) -> str:
    """One attr per line: readable diffs, small files for 700-tracepoint globs."""
    head = json.dumps({"string": string, "tool": tool, "complete": complete}, ensure_ascii=False)[:-1]
    lines = ",\n".join(" " + json.dumps(a) for a in attrs)
    return f'{head}, "attrs": [\n{lines}\n]}}\n'


def _tool_for(string: str) -> str:
    from evspec.compiler.resolve import mode_diagnostics
    from evspec.parser import parse

    events = parse(string)
    return "record" if any(mode_diagnostics(e, "stat") for e in events.events()) else "stat"


def corpus_cases(corpus: list[Any]) -> list[tuple[str, str]]:
    from evspec.parser import analyze

    out = []
    for row in corpus:
        if not row.perf61.startswith("ok") or _BPF_PATH.search(row.string) or row.full != "ok":
            continue
        if "record exit" in row.perf61:  # parsed, then rejected by perf record's own set-up
            continue
        if any(d.is_error for d in analyze(row.string).diagnostics):
            continue
        out.append((row.string, _tool_for(row.string)))
    return out


def run_perf(perf: str, string: str, tool: str, tmp: Path) -> tuple[bool, str]:
    """(whether perf's parser rejected the string, what perf printed)."""
    if tool == "stat":
        argv = [perf, "stat", "-vv", "-e", string, "--", "true"]
    else:
        argv = [perf, "record", "-vv", "-o", str(tmp / "perf.data"), "-e", string, "--", "true"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp)
    output = proc.stdout + proc.stderr
    return proc.returncode == 129 and "Run 'perf list' for a list of valid events" in output, output


def live_errors(string: str, tool: str, system: Any) -> list[str]:
    """What `evspec check --system live` finds wrong with the string here, with perf 6.1's
    PMUs and terms (empty: accepted)."""
    from evspec.compiler import check_semantics
    from evspec.compiler.releases import PERF_61
    from evspec.parser import analyze

    result = analyze(string)
    diags = list(result.diagnostics) + check_semantics(result.events, system, tool, PERF_61)
    return [f"{d.code} {d.message}" for d in diags if d.is_error]


def plan_attrs(string: str, tool: str, system: Any) -> list[dict[str, int]]:
    """The attrs of `evspec compile --perf 6.1`."""
    from evspec.compiler import compile_events
    from evspec.compiler.releases import PERF_61
    from evspec.parser import parse

    plan = compile_events([parse(string)], system, tool, PERF_61)  # type: ignore[arg-type]
    return [dict(e.attr) for e in plan.events]


def compare(
    string: str, tool: str, perf_attrs: list[dict[str, int]], complete: bool, ours: list[dict[str, int]]
) -> None:
    """``complete``: perf opened every evsel (else it stopped at a failure: compare what it tried)."""
    if complete:
        assert len(perf_attrs) == len(ours), f"{string!r}: perf opened {len(perf_attrs)} evsels, plan has {len(ours)}"
    else:
        assert 0 < len(perf_attrs) <= len(ours), f"{string!r}: perf tried {len(perf_attrs)} evsels, plan has {len(ours)}"
        ours = ours[: len(perf_attrs)]
    # tracepoint globs too: evspec expands them in tracefs directory order, as perf does
    for i, (theirs, mine) in enumerate(zip(perf_attrs, ours, strict=True)):
        fields = set(theirs) | set(mine)
        if tool == "record":
            fields &= RECORD_FIELDS
        diff = {f: (theirs.get(f, 0), mine.get(f, 0)) for f in sorted(fields) if theirs.get(f, 0) != mine.get(f, 0)}
        assert not diff, f"{tool} {string!r} evsel {i}: (perf, evspec) differ: {diff}"


# --------------------------------------------------------------------------------------------
# tests


@pytest.fixture(scope="module")
def cases(corpus: list[Any]) -> list[tuple[str, str]]:
    return corpus_cases(corpus) + list(EXTRA_CASES)


@pytest.mark.perf
def test_against_live_perf(cases: list[tuple[str, str]], perf_binary: str, tmp_path: Path) -> None:
    """Run perf here; with EVSPEC_BLESS=1 also re-record the golden files."""
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("perf record/stat of tracepoints needs root, which CI has")
        pytest.skip("perf record/stat of tracepoints needs root here")
    from evspec.system import LiveSystem, write_snapshot

    system = LiveSystem()
    failures = []
    written = set()
    for string, tool in cases:
        rejected, output = run_perf(perf_binary, string, tool, tmp_path)
        errors = live_errors(string, tool, system)
        if errors or rejected:
            # a string naming what this machine lacks (a PMU, an alias, a tracepoint): both refuse it
            if not (errors and rejected):
                failures.append(f"{tool} {string!r}: perf {'rejects' if rejected else 'accepts'} it here, "
                                f"evspec {errors or 'accepts it'}")
            written.add(_golden_path(string, tool).name)  # a re-bless here keeps what another machine recorded
            continue
        perf_attrs, complete = parse_perf_attrs(output)
        if BLESS:
            path = _golden_path(string, tool)
            GOLDEN.mkdir(parents=True, exist_ok=True)
            path.write_text(_golden_text(string, tool, complete, perf_attrs))
            written.add(path.name)
        try:
            compare(string, tool, perf_attrs, complete, plan_attrs(string, tool, system))
        except AssertionError as exc:
            failures.append(str(exc))
    if BLESS:
        write_snapshot(system, SYSTEM_SNAPSHOT)
        for stale in GOLDEN.glob("*-*.json"):
            if stale.name not in written:
                stale.unlink()
    assert not failures, "\n".join(failures)


def test_against_golden_perf_output(cases: list[tuple[str, str]]) -> None:
    """The same comparison against what perf printed when the golden files were recorded."""
    from evspec.system import read_snapshot

    if not SYSTEM_SNAPSHOT.exists():
        pytest.fail("no golden perf output: run with EVSPEC_BLESS=1 where perf 6.1 is installed")
    system = read_snapshot(SYSTEM_SNAPSHOT)
    failures = []
    for string, tool in cases:
        path = _golden_path(string, tool)
        assert path.exists(), f"no golden file for {tool} {string!r}: re-bless with EVSPEC_BLESS=1"
        golden = json.loads(path.read_text())
        assert (golden["string"], golden["tool"]) == (string, tool)
        try:
            compare(string, tool, golden["attrs"], golden["complete"], plan_attrs(string, tool, system))
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)


def test_golden_covers_every_case(cases: list[tuple[str, str]]) -> None:
    expected = {_golden_path(s, t).name for s, t in cases}
    present = {p.name for p in GOLDEN.glob("*-*.json")}
    assert expected <= present
    assert len(cases) >= 150


# --------------------------------------------------------------------------------------------
# BPF-object strings: the evsels of their programs and the automatic __bpf_stdout__


BPF_CASES = (
    "./stdout1.o",
    "./stdout1.o,./stdout2.o",
    "./tpbang.o",
    "./maps.o/no-inherit/",
    "cpu-clock,./nanosleep.o",
    "./up1.o",
    "./up2.o",
)


@pytest.mark.perf
@pytest.mark.parametrize("string", BPF_CASES)
def test_bpf_objects_against_live_perf(
    string: str, perf_binary: str, root_kernel: None, bpf_fixtures: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`evspec compile` of a BPF-object string shows the evsels `perf record -vv` opens for it
    (perf loads the object and creates its probes for real, and removes them at exit); a probe's
    tracepoint id is left out, evspec knows it only once record creates the probe."""
    from evspec.cli import main

    proc = subprocess.run([perf_binary, "record", "-vv", "-o", "/dev/null", "-e", string, "--", "true"],
                          capture_output=True, text=True, timeout=120, cwd=bpf_fixtures)
    perf_attrs, complete = parse_perf_attrs(proc.stdout + proc.stderr)
    assert complete and perf_attrs, proc.stderr[-2000:]
    monkeypatch.chdir(bpf_fixtures)
    assert main(["compile", "--perf", "6.1", "--system", "live", "--format", "json", "-e", string]) == 0
    planned = json.loads(capsys.readouterr().out)["events"]
    ours = [{k: v for k, v in e["attr"].items()} for e in planned]
    created = [i for i, e in enumerate(planned) if e.get("created_by_record")]
    for i in created:
        perf_attrs[i].pop("config", None)
    assert created or "up" not in string
    compare(string, "record", perf_attrs, complete, ours)
