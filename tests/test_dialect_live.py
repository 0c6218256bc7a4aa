"""Differential test: predict(..., "6.1") against the installed perf on generated strings.

perf runs as ``perf stat -e S -- true`` or ``perf record -q -o F -e S -- true`` in a temporary
folder, stdout not a terminal, COLUMNS/LINES fixed. A rejection is perf's exit status 129 with
its "Run 'perf list'" line; for a rejected string the whole stderr must equal the prediction.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evspec.dialect import predict

# pieces perf's lexer treats in many different ways on this machine (msr: tsc, smi; power: energy-psys)
WORDS = (
    "cycles", "cpu-clock", "task-clock", "faults", "cs", "dummy", "duration_time", "bpf-output",
    "branches", "L1-dcache", "l1d", "LLC", "iTLB", "node", "load", "misses", "read", "stores", "prefetch",
    "r1a", "r0x1a", "reed", "rZ", "mem", "mem:", "0x1000", "1", "8", "18446744073709551616",
    "sched", "sched_switch", "sched_wakeup", "nosuch", "software", "msr", "power", "uprobe", "breakpoint",
    "tsc", "TSC", "smi", "energy", "psys", "energy-psys", "cpu", "foo", "x1", "cycles-ct", "tx-capacity-read",
    "config", "config1", "name", "period", "freq", "time", "call-graph", "branch_type", "no-inherit",
    "percore", "metric-id", "event", "retprobe", "@cfg", "[all]", "map:arr.value", "'q,w:e'",
    "u", "k", "p", "pp", "ppp", "pppp", "uu", "G", "H", "S", "D", "W", "e", "b", "x", "rw", "w",
)  # fmt: skip
PUNCT = (",", ",", "/", "/", ":", ":", "=", "-", "{", "}", " ", ";", "@", "[", "]", "...", "*", "?", "\t")


def soup() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(WORDS + PUNCT), min_size=1, max_size=8).map("".join)


@st.composite
def structured(draw: st.DrawFn) -> str:
    """A list of events that are mostly well-formed, with perf's separators and a few slips."""
    events = []
    for _ in range(draw(st.integers(1, 3))):
        head = draw(st.sampled_from(
            ["cycles", "cpu-clock", "L1-dcache-load-misses", "iTLB-stores", "r1a", "1:1", "mem:0x1000/8:w",
             "sched:sched_switch", "sched:sched_s*", "sched:read", "nosuch:foo", "msr/tsc/", "msr/event=0x100/",
             "power/event=0x100/", "software/config=1/", "tsc", "energy-psys", "uprobe/bogus/", "cpu//", "foo"]
        ))  # fmt: skip
        if draw(st.booleans()):
            terms = draw(st.lists(st.sampled_from(
                ["period=1", "name=x", "foo=1", "time=2", "call-graph", "config=abc", "r0x1a", "@cfg",
                 "branch_type=any", "branch_type=bad", "no-inherit", "aux-sample-size=4294967296", "event"]
            ), max_size=3))  # fmt: skip
            head += "/" + ",".join(terms) + "/"
        head += draw(st.sampled_from(["", ":u", ":pppp", "u", ":k:u", ":", ":uu", ":x"]))
        events.append(head)
    text = ",".join(events)
    if draw(st.booleans()):
        text = draw(st.sampled_from(["{", "g{", "tsc{"])) + text + draw(st.sampled_from(["}", "}:u", "", "}:W"]))
    return text


def run_perf(perf: str, mode: str, text: str, cwd: str) -> tuple[bool, str]:
    env = {**os.environ, "COLUMNS": "80", "LINES": "24"}
    with tempfile.TemporaryDirectory(prefix="evspec-perfdata-") as out:
        if mode == "stat":
            argv = [perf, "stat", "-e", text, "--", "true"]
        else:
            argv = [perf, "record", "-q", "-o", os.path.join(out, "perf.data"), "-e", text, "--", "true"]
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=60)
    stderr = proc.stderr.decode(errors="surrogateescape")
    return proc.returncode == 129 and "Run 'perf list' for a list of valid events" in stderr, stderr


@pytest.fixture(scope="module")
def live_system(perf_binary, root_kernel):
    from evspec.system import load_system

    system = load_system("live")
    assert system is not None
    return system


# CI runs a modest number of examples; EVSPEC_DIALECT_EXAMPLES=2000 measures agreement on a larger batch
EXAMPLES = int(os.environ.get("EVSPEC_DIALECT_EXAMPLES", "60"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(soup(), structured()), mode=st.sampled_from(["stat", "record"]))
def test_predict_agrees_with_installed_perf(text, mode, perf_binary, live_system):
    with tempfile.TemporaryDirectory(prefix="evspec-dialect-") as cwd:
        rejected, stderr = run_perf(perf_binary, mode, text, cwd)
        v = predict(text, "6.1", system=live_system, cwd=Path(cwd), mode=mode)
    assert v.accepted == (not rejected), stderr
    if rejected:
        assert_same_stderr(v.stderr, stderr, v.quirk)


def assert_same_stderr(predicted: str, actual: str, quirk: str | None) -> None:
    """Equal, except where perf prints an unterminated buffer (the prediction says so in its quirk)."""
    if predicted == actual:
        return
    assert quirk is not None and "unterminated" in quirk, (predicted, actual)
    want, got = predicted.splitlines(), actual.splitlines()
    assert len(want) == len(got), (predicted, actual)
    for a, b in zip(want, got, strict=True):
        if a != b:
            assert a.startswith("event syntax error: '") and b.startswith(a[:-1]) and b.endswith("'"), (a, b)


@pytest.mark.parametrize("mode", ["stat", "record"])
@pytest.mark.parametrize(
    "text",
    [
        "./maps.o",
        "./maps.o/map:arr.value[ 9]=1/",
        "./maps.o/no-inherit/",
        "./badtp.o",
        "./grp.o",
        "./legacy_maps.o",
        "./noprog.o",
        "./kp.o",
        "./up1.o,./up1.o",
        "./a.c",
        "./maps.o/var:x=1/",  # evspec's own object terms (COMPAT 1.14): perf refuses each
        "./maps.o/prog:p.event=cpu-clock/",
        "./maps.o/map:arr.type=x/",
    ],
)
def test_bpf_objects_agree_with_installed_perf(text, mode, perf_binary, live_system, bpf_fixtures):
    """perf loads these for real (probes included; it removes them at exit): its whole stderr,
    the messages of its probe and compile helpers included, must be predicted."""
    rejected, stderr = run_perf(perf_binary, mode, text, str(bpf_fixtures))
    v = predict(text, "6.1", system=live_system, cwd=bpf_fixtures, mode=mode)
    assert v.accepted == (not rejected), stderr
    if rejected:
        assert_same_stderr(v.stderr, stderr, v.quirk)
