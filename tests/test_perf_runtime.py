"""The run-time findings (WM001, EM030-EM032) against what perf 6.1 and perf 7.2 do on a machine
without a hardware PMU: perf record and perf stat, per task and with -a.

What the two perfs did here is kept in tests/data/perf_runtime/observed.json, with a snapshot of
the machine (system.json), so the comparison with evspec's findings runs everywhere; in CI the
perfs run again and must do what was kept. ``EVSPEC_BLESS=1`` records both files again.
"""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from conftest import oracle
from perf_runtime import EVENTS, MODES, key, observe, observe_all

from evspec.cli import main
from evspec.system import read_snapshot
from evspec.system.live import LiveSystem

DATA = Path(__file__).resolve().parent / "data" / "perf_runtime"
OBSERVED = DATA / "observed.json"
SYSTEM = DATA / "system.json"
BLESS = os.environ.get("EVSPEC_BLESS") == "1"
RUNTIME_CODES = ("WM001", "EM030", "EM031", "EM032")


def _findings(event: str, tool: str) -> list[dict[str, object]]:
    """evspec check's run-time findings about ``event`` for ``tool``, against the kept machine."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        main(["check", "--format", "json", "--system", str(SYSTEM), "--mode", tool, "-e", event])
    found = json.loads(out.getvalue())["diagnostics"]
    assert all(d["code"] in RUNTIME_CODES for d in found), found
    return found


def _countable(event: str, findings: list[dict[str, object]]) -> int:
    """How many events of ``event`` the machine can count or sample (none of the findings is about them)."""
    from evspec.parser import parse

    events = parse(event).events()
    hit = {d["span"]["start"] for d in findings} | {s["start"] for d in findings
                                                   for s in d.get("repeats", {}).get("spans", [])}
    return sum(1 for e in events if not any(e.span.start <= start < e.span.end for start in hit))


def _expected(version: str, tool: str, system_wide: bool, event: str) -> dict[str, object]:
    """What evspec's findings say that perf ``version`` does: its exit status, lines it must say
    about the events, and the events a recording holds (None: no recording)."""
    findings = _findings(event, tool)
    codes = [d["code"] for d in findings]
    errors = [d for d in findings if d["severity"] == "error"]
    said = []
    if tool == "record":
        if version == "6.1":
            if errors:
                first = errors[0]
                line = first["perf_message"] if not (system_wide and first["code"] == "EM032") else \
                    "The sys_perf_event_open() syscall returned with 22 (Invalid argument) for event"
                return {"status": 255, "said": [line], "recorded": None}
            clock = "cpu-clock"
        else:
            if errors:
                if not _countable(event, findings) and "WM001" not in codes:
                    return {"status": 255, "said": ["Failure to open any events for recording."], "recorded": None}
                said = [f"Failure to open event '{d['event'][d['span']['start']:d['span']['end']]}'" for d in errors
                        if d["code"] != "EM032"]
            clock = "cpu-clock" if system_wide else "task-clock"
        if "WM001" in codes:
            said.append("trying to fall back to " + clock)
        return {"status": 0, "said": said, "clock": clock if "WM001" in codes else None}
    if "EM031" in codes:
        return {"status": 255 if version == "6.1" else 1,
                "said": [next(d["perf_message"] for d in findings if d["code"] == "EM031")] if version == "6.1"
                else ["No supported events found."]}
    if "WM001" in codes and version != "6.1" and not _countable(event, findings):
        return {"status": 1, "said": ["No supported events found."]}
    return {"status": 0, "said": ["<not supported>"] if "WM001" in codes else []}


def _agrees(expected: dict[str, object], seen: dict[str, object]) -> bool:
    if seen["status"] != expected["status"]:
        return False
    lines = " | ".join(seen["said"])  # type: ignore[arg-type]
    if not all(line in lines for line in expected["said"]):  # type: ignore[union-attr]
        return False
    clock = expected.get("clock")
    recorded = seen.get("recorded")
    return clock is None or recorded is None or any(name.startswith(clock) for name in recorded)  # type: ignore[union-attr]


def _observed() -> dict[str, dict[str, dict[str, object]]]:
    return json.loads(OBSERVED.read_text())  # type: ignore[no-any-return]


CASES = [(version, tool, system_wide, event) for version in ("6.1", "7.2") for tool, system_wide in MODES
         for event in EVENTS]


@pytest.mark.parametrize(("version", "tool", "system_wide", "event"), CASES,
                         ids=[f"{v}-{key(t, a, e)}" for v, t, a, e in CASES])
def test_evspec_says_what_perf_did(version: str, tool: str, system_wide: bool, event: str) -> None:
    seen = _observed()[version][key(tool, system_wide, event)]
    expected = _expected(version, tool, system_wide, event)
    assert _agrees(expected, seen), f"evspec says {expected}, perf {version} did {seen}"


def test_the_kept_machine_is_of_this_kind() -> None:
    system = read_snapshot(SYSTEM)
    assert not system.core_pmus() and system.pmu("msr") is not None


def test_explain_and_compile_agree_with_check(capsys: pytest.CaptureFixture[str]) -> None:
    """compile shows the run-time warning check shows, and explain describes both modes."""
    assert main(["compile", "--system", str(SYSTEM), "-e", "cycles"]) == 0
    err = capsys.readouterr().err
    assert "warning[WM001]: this system has no hardware PMU: perf record samples a software clock in place of " \
           "'cycles'" in err
    assert main(["compile", "--system", str(SYSTEM), "-e", "instructions:u"]) == 1
    assert "error[EM030]: this system has no hardware PMU: perf record cannot open 'instructions:u'" in \
           capsys.readouterr().err
    assert main(["compile", "--mode", "stat", "--system", str(SYSTEM), "-e", "instructions:u"]) == 0
    assert "'instructions:u' cannot be counted here" in capsys.readouterr().err
    assert main(["explain", "WM001"]) == 0
    page = capsys.readouterr().out
    assert "perf record" in page and "perf stat" in page and "<not supported>" in page and "EM030" in page
    assert "task-clock per task, cpu-clock with -a" in page


# ---- the perfs again, on this machine (in CI)


def _live_perfs() -> dict[str, str]:
    from conftest import IN_CI

    perfs = {}
    if os.access("/usr/bin/perf", os.X_OK):
        perfs["6.1"] = "/usr/bin/perf"
    elif IN_CI:
        raise RuntimeError("perf 6.1 (/usr/bin/perf) is required in CI")
    perfs["7.2"] = oracle("perf-7.2")
    return perfs


def _this_machine_fits() -> None:
    if os.geteuid() != 0:
        from conftest import IN_CI

        if IN_CI:
            raise RuntimeError("the run-time comparison with perf needs root in CI")
        pytest.skip("needs root: perf record -a")
    live = LiveSystem()
    if live.core_pmus():
        pytest.skip("this machine has a hardware PMU: the observations are of a machine without one")


@pytest.mark.parametrize("version", ["6.1", "7.2"])
def test_perf_does_here_what_was_kept(version: str) -> None:
    _this_machine_fits()
    perf = _live_perfs()[version]
    if BLESS:
        observed = {**(_observed() if OBSERVED.exists() else {}), version: observe_all(perf)}
        DATA.mkdir(parents=True, exist_ok=True)
        OBSERVED.write_text(json.dumps(observed, indent=1, sort_keys=True) + "\n")
        snapshot = json.loads(_snapshot_text())
        SYSTEM.write_text(json.dumps({**snapshot, "cwd": "/"}, indent=1) + "\n")
        return
    kept = _observed()[version]
    has_msr = LiveSystem().pmu("msr") is not None
    differ = []
    for tool, system_wide in MODES:
        for event in EVENTS:
            if "msr/" in event and not has_msr:
                continue  # machines of this kind differ in their PMUs
            seen = observe(perf, tool, system_wide, event)
            was = kept[key(tool, system_wide, event)]
            if (seen["status"], seen["said"]) != (was["status"], was["said"]):
                differ.append((key(tool, system_wide, event), was, seen))
    assert not differ, differ


def _snapshot_text() -> str:
    from evspec.system.snapshot import snapshot_text

    return snapshot_text(LiveSystem())
