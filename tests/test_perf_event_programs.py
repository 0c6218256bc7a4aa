"""perf_event programs and prog:NAME.event=EVENT terms (COMPAT 1.14): checked offline against the
object, and run for real on the ticks of a cpu-clock event of the workload."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bpf_build import build_bpf, build_program, copy_sources, require_tools
from corpus_files import CORPUS, DATA
from record_cli import run_record as _record

from evspec.check import CheckOptions, check_specs
from evspec.diagnostics import Source
from evspec.inputs import SpecInput
from evspec.system import read_snapshot


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, bpf_fixtures: Path) -> Path:
    require_tools("clang", "cc")
    out = tmp_path_factory.mktemp("perf_event")
    shutil.copy(bpf_fixtures / "maps.o", out / "maps.o")  # a tracepoint program, for the wrong-kind case
    copy_sources(DATA / "perf_event", ("sampler.c", "spin.c"), out)
    build_program(out, "spin.c", "spin")
    build_bpf(out, "sampler.c", "sampler.o")
    return out


def _check(built: Path, *strings: str) -> list[tuple[str, int, int, str]]:
    inputs = [SpecInput(s, Source("arg", index=i), command=0) for i, s in enumerate(strings)]
    checked = check_specs(inputs, CheckOptions(system=read_snapshot(CORPUS / "system.json"), cwd=built))
    return [(d.code, d.span.start, d.span.end, d.message) for c in checked for d in c.diagnostics if d.is_error]


def test_a_program_term_puts_the_program_on_an_earlier_event(built: Path) -> None:
    assert _check(built, "cpu-clock/freq=99,name=tick/", "./sampler.o/prog:on_tick.event=tick/") == []
    assert _check(built, "cpu-clock,./sampler.o/prog:on_tick.event=cpu-clock/") == []


@pytest.mark.parametrize(("strings", "expected"), [
    (("./sampler.o",), ("EB108", 0, 11, "section 'perf_event': perf_event program 'on_tick' goes on no event")),
    (("cpu-clock", "./sampler.o/prog:on_tik.event=cpu-clock/"),
     ("EB135", 17, 23, "the object has no program 'on_tik'")),
    (("cpu-clock", "./maps.o/prog:on_enter.event=cpu-clock/"),
     ("EB136", 14, 22, "program 'on_enter' is in section 'raw_syscalls:sys_enter', not a perf_event program")),
    (("sched:sched_switch", "./sampler.o/prog:on_tick.event=sched:sched_switch/"),
     ("EB137", 31, 49, "event 'sched:sched_switch' is a tracepoint event: a perf_event program goes on a sampling event")),
    (("./sampler.o/prog:on_tick.event=cpu-clock/",), ("ES047", 31, 40, "no earlier event named 'cpu-clock'")),
])
def test_bad_program_terms(built: Path, strings: tuple[str, ...], expected: tuple[str, int, int, str]) -> None:
    found = _check(built, *strings)
    assert expected in found, found  # (a program named by no term is reported on the object too)


def test_the_program_runs_on_the_ticks_of_the_workload(built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """cpu-clock at 1 kHz over 300 ms of spinning: the program ran on its overflows, in the
    workload (it sends the pid), every CPU instance carrying it."""
    monkeypatch.chdir(built)
    status, out, err = _record("-v", "--format", "json", "-e", "cpu-clock/freq=1000,name=tick/",
                               "-e", "./sampler.o/prog:on_tick.event=tick/", "--", "./spin", "300")
    assert status == 0, err
    records = [json.loads(line) for line in out.splitlines()][:-1]
    pids = {int.from_bytes(bytes.fromhex(r["raw_hex"]), "little") for r in records}
    assert len(records) >= 100, err  # ~300 ticks
    assert len(pids) == 1 and all(r["event"] == "__bpf_stdout__" for r in records)
    assert pids == {records[0]["pid"]}  # the program ran in the task the sample names
    assert "evspec record: perf_event program 'on_tick' set on 2 instance(s) of tick\n" in err


def test_a_cpu_term_keeps_the_event_to_its_cpus(built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """cpu=0 (perf 6.13+): the event is opened on CPU 0 only, so the program runs there only."""
    monkeypatch.chdir(built)
    status, out, err = _record("-v", "--format", "json", "-e", "cpu-clock/freq=1000,name=tick,cpu=0/",
                               "-e", "./sampler.o/prog:on_tick.event=tick/", "--", "taskset", "-c", "0", "./spin", "200")
    assert status == 0, err
    records = [json.loads(line) for line in out.splitlines()][:-1]
    assert records and {r["cpu"] for r in records} == {0}, err
    assert "evspec record: perf_event program 'on_tick' set on 1 instance(s) of tick\n" in err


def test_a_cpu_term_outside_the_recording_is_refused(built: Path, root_kernel: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(built)
    status, out, err = _record("-C", "0", "-e", "cpu-clock/cpu=1,name=tick/", "-e", "./sampler.o/prog:on_tick.event=tick/",
                               "--", "true")
    assert (status, out) == (2, ""), err
    assert ("event 'tick' (-e #1) is limited by its cpu= term to CPUs 1, none of which this recording covers "
            "(CPUs 0)") in err


def test_the_program_goes_on_an_event_named_by_its_bare_name(built: Path, root_kernel: None,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """COMPAT 1.14's example: prog:on_tick.event=cpu-clock finds the earlier cpu-clock/freq=N/."""
    monkeypatch.chdir(built)
    status, out, err = _record("-v", "--format", "json", "-e", "cpu-clock/freq=1000/",
                               "-e", "./sampler.o/prog:on_tick.event=cpu-clock/", "--", "./spin", "200")
    assert status == 0, err
    records = [json.loads(line) for line in out.splitlines()][:-1]
    assert len(records) >= 50 and all(r["event"] == "__bpf_stdout__" for r in records), err
    assert "perf_event program 'on_tick' set on 2 instance(s) of cpu-clock/freq=1000/\n" in err
