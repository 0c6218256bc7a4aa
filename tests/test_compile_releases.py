"""``evspec compile --perf VERSION`` against what each perf release opens: the ``perf_event_attr``
blocks ``perf stat -vv -e STRING -- true`` prints, for perf 6.1 (/usr/bin/perf), 6.12, 7.2 and
7.3 (the oracles), on this machine and on two machines made of it by showing perf a fake PMU
(tests/fake_sysfs.py): one with an Intel core PMU (plus uncore and intel_pt PMUs), one with the
hybrid ``cpu_core`` + ``cpu_atom``. A string that release refuses must be refused by evspec too.

What the releases printed is kept under tests/data/compile_releases/MACHINE/ with the snapshot of
the machine they ran on, so that the comparison also runs where the oracles are missing;
``EVSPEC_BLESS=1`` re-records it (the live test). perf 6.1 on this machine as it is is
tests/test_perf_stat_diff.py's; perf 6.1 on the hybrid machine is not run: it probes the kernel
for each cache event as it parses it (and refuses them where the kernel has no such PMU) and
adds the core PMUs in the order of the sysfs directory listing, so a fake PMU cannot show what it
does on a real hybrid machine; its own hybrid tests are the parse-events table's
(tests/test_parse_events_table.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import oracle
from corpus_files import read_corpus
from test_perf_stat_diff import _BPF_PATH, _tool_for, compare, parse_perf_attrs

from evspec.compiler.releases import PERF_PMU_TYPE_TOOL, RELEASES, Release, release
from evspec.system import SnapshotSystem

DATA = Path(__file__).resolve().parent / "data" / "compile_releases"
BLESS = os.environ.get("EVSPEC_BLESS") == "1"
MACHINES = ("live", "intel", "hybrid")

#: this machine: today's syntax and PMU events, next to the corpus strings
LIVE_CASES = (
    "cpu-clock/cpu=0/", "cpu-clock/cpu=0-1/", "cpu-clock:R", "{cpu-clock,task-clock}:X", "'cpu-clock'",
    "'cpu-clock':u", "duration_time/name=x/", "mem:0x1000/name=x/", "mem:0:rw/name=bp/k", "mem:0/4:w/period=5/:u",
    "cpu-clock/name=1x/", "tool/duration_time/", "software/cpu-clock/", "CPU-CLOCK", "Page-Faults:k", "num_cpus",
    "cpu/cycles/", "cycles", "instructions:u", "L1-dcache-load-misses", "l1d-LOADS", "r1a", "r0x1a:k",
    "cpu/config=10,config1,config2=3/u", "default_core/config=1/", "{cycles,instructions}:u", "{cpu-clock:S,task-clock}:u",
    "{cpu-clock,task-clock}:W", "cpu-clock:p", "{cpu-clock:pp}:p", "duration_time,user_time", "cpu-clock,duration_time",
    "cpu-clock/config3=3/", "cpu-clock:W", "L1-dcache-load-load", "mem:0/name=x/", "9p:9p_client_req",
    "cpu-clock/cpu=software/", "L1-dcache-misses-load", "L1-dcache-load-store", "*/tsc/", "m?r/tsc/", "ms/tsc/",
    "cpu-clock:b", "{cpu-clock,task-clock}:b", "duration_time:u", "DURATION_TIME",
)
#: the Intel machine: sysfs events against legacy names, PMU terms, uncore wildcards
INTEL_CASES = (
    "cycles", "cpu-cycles", "instructions:u", "cpu/cycles,name=l1d/", "cpu/L1-dcache-load-miss/", "cpu/instructions/k",
    "cpu/event=0x3c,umask=1/", "cpu/cpu-cycles/", "r1a", "r0x1a:u", "L1-dcache-load-misses", "LLC-loads:k",
    "{cycles,instructions}:S", "{cpu-cycles,branch-misses}:u", "uncore_imc_0/cas_count_read/", "imc/cas_count_read/",
    "cas_count_read", "mem-loads", "cpu/mem-loads,ldlat=5/", "cpu/ld_lat.any,ldlat=3/", "intel_pt//u",
    "cpu/legacy-hardware-config=1/", "cpu/legacy-cache-config=0x10002/", "default_core/cycles/", "cpu/r1a/",
    "{cpu-clock,cycles}", "cpu/config=10,config1,config2=3,period=1000/u", "topdown-retiring", "cycles-ct",
    "bus-cycles", "ref-cycles:k", "cpu/event=0xc0,name=insn/", "CYCLES",
)
#: the hybrid machine: one evsel per core PMU, PMU order, groups split per PMU
HYBRID_CASES = (
    "cycles", "instructions:u", "cpu_core/cycles/", "cpu_atom/instructions/u", "{cycles,instructions}", "r1a",
    "L1-dcache-loads", "cpu_core/LLC-loads/", "default_core/config=1/", "{cpu_core/cpu-cycles/,cpu_core/instructions/}",
    "cpu_core/r1a/", "cpu-clock,cycles", "{faults:k,branches}:u,cycles:k", "{cpu-clock,cpu_core/cpu-cycles/}",
    "cpu_core/cpu-cycles/", "{cycles:u,instructions:kp}:p", "cpu_atom/acr_mask=3,event=0x3c/", "cpu_core/config=10,config1,config2=3/u",
    "{cycles,instructions:X}", "cpu/cycles/",
)


def perf_path(version: str) -> str:
    if version == "6.1":
        path = "/usr/bin/perf"
        if not os.access(path, os.X_OK):
            if os.environ.get("CI") == "true":
                raise RuntimeError("perf 6.1 (/usr/bin/perf) is required in CI")
            pytest.skip("perf 6.1 not installed")
        return path
    return oracle(f"perf-{version}")


def cases(machine: str) -> list[str]:
    """The strings tried on a machine: on this one, every corpus string of evspec's language that
    perf stat takes (no BPF object: no release since 6.6 has them), then LIVE_CASES."""
    if machine == "live":
        from evspec.parser import analyze

        corpus = [row.string for row in read_corpus() if not _BPF_PATH.search(row.string) and analyze(row.string).ok
                  and _tool_for(row.string) == "stat"]
        return list(dict.fromkeys([*corpus, *LIVE_CASES]))
    return list(INTEL_CASES if machine == "intel" else HYBRID_CASES)


def evspec_attrs(string: str, system: SnapshotSystem, perf: Release) -> list[dict[str, int]] | None:
    """The attrs of ``evspec compile --perf VERSION --mode stat``, or None when evspec refuses the
    string for that release (its own rules, the release's, or the machine's)."""
    from evspec.compiler import compile_events
    from evspec.compiler.gate import release_findings, release_takes
    from evspec.diagnostics import EvspecError
    from evspec.parser import analyze

    result = analyze(string)
    if any(d.is_error and not release_takes(d, perf) for d in result.diagnostics) or \
            release_findings([result.events], perf, system, "stat"):
        return None
    try:
        plan = compile_events([result.events], system, "stat", perf)
    except EvspecError:
        return None
    return [dict(e.attr) for e in plan.events]


def _without_tool_events(attrs: list[dict[str, int]], perf: Release) -> list[dict[str, int]]:
    """perf 6.12 opens no tool event (it prints the attr of the first one only): compare the others."""
    if perf.tool_events_opened:
        return attrs
    return [a for a in attrs if not (a.get("type") == 1 and a.get("config") == 9) and a.get("type") != PERF_PMU_TYPE_TOOL]


#: where evspec differs from perf on purpose (docs/differences-from-perf.md): string -> why
DELIBERATE = {
    "*:sched_switch": "a system glob collects the event from every matching system that has it "
                      "(perf stops at the first one, in readdir order, that lacks it)",
}


def check(string: str, perf: Release, system: SnapshotSystem, answer: dict[str, Any]) -> str | None:
    """What is wrong with evspec's answer for ``string`` next to perf's (None: they agree)."""
    ours = evspec_attrs(string, system, perf)
    if not answer["accepted"]:
        if ours is None or string in DELIBERATE:
            return None
        return f"perf {perf.version} refuses {string!r}, evspec compiles it"
    if ours is None:
        return f"perf {perf.version} opens {string!r}, evspec refuses it"
    theirs = _without_tool_events(answer["attrs"], perf)
    # perf's -vv printer (perf_event_attr__fprintf) has no line for config3 and config4
    ours = [{k: v for k, v in a.items() if k not in ("config3", "config4")} for a in _without_tool_events(ours, perf)]
    if not theirs:
        return None
    if not perf.regroup:
        # perf 6.1 adds a wildcard's PMUs (imc/... on uncore_imc_0 and _1) in the order of the
        # sysfs directory listing, which no system description holds: compare them by type
        def key(a: dict[str, int]) -> tuple[int, int]:
            return a.get("type", 0), a.get("config", 0)

        tried = {key(a) for a in theirs}
        theirs = sorted(theirs, key=key)
        ours = sorted((a for a in ours if answer["complete"] or key(a) in tried), key=key)
    try:
        compare(string, "stat", theirs, answer["complete"], ours)
    except AssertionError as exc:
        return f"perf {perf.version}: {exc}"
    return None


def run_perf(perf: str, string: str, folder: Path | None) -> dict[str, Any]:
    argv = [perf, "stat", "-vv", "-e", string, "--", "true"]
    if folder is None:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    else:
        from fake_sysfs import run

        proc = run(folder, argv)
    output = proc.stdout + proc.stderr
    rejected = proc.returncode == 129 and "Run 'perf list' for a list of valid events" in output
    attrs, complete = parse_perf_attrs(output)
    return {"accepted": not rejected, "complete": complete, "attrs": [] if rejected else attrs}


def _runs(machine: str, version: str) -> bool:
    """Which release runs on which machine (see the module docstring)."""
    return not (version == "6.1" and machine in ("live", "hybrid"))


def _golden(machine: str, version: str) -> Path:
    return DATA / machine / f"perf-{version}.json"


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in data.items())
    path.write_text("{\n" + lines + "\n}\n")


@pytest.mark.perf
@pytest.mark.parametrize("machine", MACHINES)
def test_against_live_perf(machine: str, root_kernel: None, tmp_path: Path) -> None:
    """Every release on this machine (perf 6.1 only on the fake ones); EVSPEC_BLESS=1 re-records."""
    from fake_sysfs import devices
    from fake_sysfs import machine as fake_machine

    from evspec.system import LiveSystem, snapshot

    data = snapshot(LiveSystem()) if machine == "live" else fake_machine(machine)
    data["cwd"] = "/"
    system = SnapshotSystem(data)
    folder = None if machine == "live" else devices(data, tmp_path / "devices")
    failures = []
    for version in RELEASES:
        if not _runs(machine, version):
            continue
        perf = perf_path(version)
        answers = {}
        for string in cases(machine):
            answer = answers[string] = run_perf(perf, string, folder)
            problem = check(string, release(version), system, answer)
            if problem:
                failures.append(f"{machine}: {problem}")
        if BLESS:
            _write(_golden(machine, version), answers)
    if BLESS:
        _write(DATA / machine / "system.json", data)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("machine", MACHINES)
def test_against_recorded_perf_output(machine: str) -> None:
    """The same comparison against what the releases printed when the files were recorded."""
    system_file = DATA / machine / "system.json"
    assert system_file.exists(), "no recorded perf output: run with EVSPEC_BLESS=1 where the oracles are installed"
    system = SnapshotSystem(json.loads(system_file.read_text()))
    failures = []
    compared = 0
    for version in RELEASES:
        path = _golden(machine, version)
        if not _runs(machine, version):
            assert not path.exists()
            continue
        answers = json.loads(path.read_text())
        assert set(cases(machine)) <= set(answers), f"{path.name}: strings without an answer: re-bless"
        for string in cases(machine):
            compared += 1
            problem = check(string, release(version), system, answers[string])
            if problem:
                failures.append(f"{machine}: {problem}")
    assert not failures, "\n".join(failures)
    assert compared >= (2 if machine == "hybrid" else 3) * len(cases(machine))
