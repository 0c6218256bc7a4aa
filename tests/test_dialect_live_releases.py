"""Differential test: --perf 6.12, 7.2 and 7.3 against the installed binaries (scripts/oracles.sh).

Every corpus string and every generated string, in record and stat mode (tests/perf_oracle.py says
how perf is run): the verdict of each, the stderr of each rejection and the characters echoed to
stdout must be predicted, against this machine as it is. The committed answers the offline test
uses must still be what the binaries answer here, when this machine is the one they were recorded
on (tests/data/dialect/machine.json; machines of this kind differ in their PMUs). About 16,500 perf
runs, two at a time; test_machine_without_pmu.py reruns a sample of them on a machine with one
PMU fewer.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import oracle
from perf_oracle import (
    ENV,
    RELEASES,
    RUN_PERF_LIST,
    STOP_OPTION,
    differences,
    direct,
    jobs,
    read_answers,
    run_all,
    strings,
)

MACHINE = Path(__file__).resolve().parent / "data" / "dialect" / "machine.json"


@pytest.fixture(scope="module")
def live_system(root_kernel):
    from evspec.system import load_system

    return load_system("live")


def _recorded_here(live_system) -> bool:
    """Whether this machine is the one the committed answers were recorded on."""
    from evspec.system import snapshot

    here = snapshot(live_system)
    there = json.loads(MACHINE.read_text())
    return all(here.get(key) == there.get(key) for key in ("pmus", "cpus", "tracefs"))


@pytest.mark.parametrize("release", RELEASES)
def test_predictions_equal_the_binary_s_answers(release, live_system):
    perf = oracle(f"perf-{release}")
    answers = run_all(perf, jobs(strings()))
    diffs = differences(release, answers, live_system)
    assert not diffs, f"{len(diffs)}+ differences:\n" + "\n\n".join(diffs)
    if _recorded_here(live_system):
        _, committed = read_answers(release)
        stale = [a.text for a, c in zip(answers, committed, strict=True) if (a.mode, a.text, a.rejected) != (
            c.mode, c.text, c.rejected)]
        assert not stale, f"the committed answers of perf {release} are stale (tests/perf_answers.py): {stale[:10]}"


@pytest.mark.parametrize("release", RELEASES)
def test_a_sample_follows_the_machine(release, live_system):
    """Every tenth string, both modes: what test_machine_without_pmu.py reruns without a PMU."""
    perf = oracle(f"perf-{release}")
    answers = run_all(perf, jobs(strings()[::10]))
    diffs = differences(release, answers, live_system)
    assert not diffs, f"{len(diffs)}+ differences:\n" + "\n\n".join(diffs)


# rejections without tracepoint globs (stat would open every tracepoint they name) and an acceptance
SAMPLE = ("foo", "cpu-clock/foo=1/", "cycles:uu", "msr/tsc/:u", "uprobe/foo/", "nosuch:bar", "cpu-clock/cpu=99/",
          "{cpu-clock", "cpu-clock", "mem:0/8:rr", "99999999999999999999:1")  # fmt: skip


@pytest.mark.parametrize("release", RELEASES)
def test_the_stop_option_changes_nothing_perf_stat_prints_about_the_events(release):
    """The answers run ``perf stat -e S --evspec-stop -- true``: perf has parsed the events (and
    said everything about them) before it reaches the unknown option."""
    command, extra = direct(oracle(f"perf-{release}"))
    env = {**os.environ, **ENV, **extra}
    with tempfile.TemporaryDirectory() as cwd:
        for text in SAMPLE:
            plain = subprocess.run([*command, "stat", "-e", text, "--", "true"], cwd=cwd, env=env, capture_output=True)
            stopped = subprocess.run([*command, "stat", "-e", text, STOP_OPTION, "--", "true"], cwd=cwd, env=env,
                                     capture_output=True)
            rejected = RUN_PERF_LIST.encode() in plain.stderr
            assert rejected == (RUN_PERF_LIST.encode() in stopped.stderr), text
            if rejected:
                assert (plain.returncode, plain.stderr) == (stopped.returncode, stopped.stderr), text
            else:
                assert stopped.stderr.startswith(f"  Error: unknown option `{STOP_OPTION[2:]}'".encode()), text
