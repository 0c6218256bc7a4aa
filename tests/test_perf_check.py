"""`check --perf VERSION`: that perf's verdict merged into evspec's findings (evspec.dialect.check)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evspec.check import CheckOptions, check_specs
from evspec.diagnostics import Source
from evspec.dialect.check import check_with_perf, perf_json
from evspec.inputs import SpecInput
from evspec.span import Span
from evspec.system.fixtures import corpus_system


def _checked(text: str, cwd: Path, version: str = "6.1"):  # type: ignore[no-untyped-def]
    system = corpus_system()
    specs = check_specs([SpecInput(text, Source("arg", index=0), 0)], CheckOptions(system=system, cwd=cwd))
    [result] = check_with_perf(specs, version, system=system, cwd=cwd, mode="record")
    return result


def test_both_accept_adds_nothing(bpf_fixtures: Path) -> None:
    result = _checked("cpu-clock", bpf_fixtures)
    assert result.diagnostics == () and result.verdict.accepted


def test_perf_61_breaks_index_lists_evspec_accepts(bpf_fixtures: Path) -> None:
    text = "./maps.o/map:arr.value[0]=5/"
    result = _checked(text, bpf_fixtures)
    [diag] = result.diagnostics
    assert (diag.code, diag.is_error, diag.perf_message) == ("EP001", True, "parser error")
    assert diag.span == Span(9, 10)  # perf's caret column 9 (corpus PERF61)
    assert "perf 6.1 rejects this string (evspec accepts it): 'parser error' with its caret at col 10" in diag.message
    assert any(note.startswith("why: ") for note in diag.notes)
    assert perf_json(result.verdict) == {
        "version": "6.1", "verdict": "error", "message": "parser error", "column": 9, "silent": False,
    }


def test_perf_47_reads_index_lists(bpf_fixtures: Path) -> None:
    """4.7's lexer passes the index list on (6.1's breaks it); 4.7 then fails on the object itself:
    it knew probe sections only, not SYS:EVENT tracepoint sections."""
    result = _checked("./maps.o/map:arr.value[0]=5/", bpf_fixtures, "4.7")
    [diag] = result.diagnostics
    assert diag.perf_message == "Invalid config string" and result.verdict.error is not None
    assert result.verdict.error.column == 0


def test_perf_66_has_no_bpf_objects(bpf_fixtures: Path) -> None:
    [diag] = _checked("./maps.o", bpf_fixtures, "6.6").diagnostics
    assert diag.code in ("EP001", "EP002")


def test_evspec_rejects_perf_accepts_is_a_note(bpf_fixtures: Path) -> None:
    result = _checked("cycles u", bpf_fixtures)
    first = next(d for d in result.diagnostics if d.is_error)
    assert first.code.startswith("ES") and first.span == Span(6, 7)
    assert "perf 6.1 accepts this string" in first.notes


def test_both_reject_says_perf_too(bpf_fixtures: Path) -> None:
    result = _checked("nosuchpmu/config=1/", bpf_fixtures)
    first = next(d for d in result.diagnostics if d.is_error)
    assert any(n.startswith("perf 6.1 rejects it too: 'Cannot find PMU `nosuchpmu'") for n in first.notes)


def test_silent_perf_failure(bpf_fixtures: Path) -> None:
    result = _checked("L1-icache-stores", bpf_fixtures)
    assert result.verdict.silent and not result.verdict.accepted
    first = next(d for d in result.diagnostics if d.is_error)
    assert "perf 6.1 rejects it too, without saying why" in first.notes
    assert perf_json(result.verdict)["silent"] is True


@pytest.mark.parametrize("version", ["4.7", "6.1", "6.5", "6.6"])
def test_every_version_predicts(bpf_fixtures: Path, version: str) -> None:
    assert _checked("cpu-clock:u", bpf_fixtures, version).verdict.version == version


# ------------------------------------------------------------------ the command line


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from evspec.cli import main

    status = main(["check", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_versions_match_the_dialect_package() -> None:
    from evspec.cli.app import PERF_VERSIONS
    from evspec.dialect import VERSIONS

    assert PERF_VERSIONS == VERSIONS


def test_cli_json_carries_perf_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    status, out, _ = _cli(capsys, "--perf", "6.1", "--format", "json", "-e", "cycles@", "-e", "cpu-clock")
    doc = json.loads(out)
    assert status == 1
    [diag] = doc["diagnostics"]
    assert diag["code"] == "ES002" and diag["perf"] == {
        "version": "6.1", "verdict": "ok", "message": None, "column": None, "silent": False,
    }
    assert doc["summary"]["perf_accepts"] is True
    assert [v["event"] for v in doc["perf"]] == ["cycles@", "cpu-clock"]


def test_cli_json_perf_rejects(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    _, out, _ = _cli(capsys, "--perf", "6.1", "--format", "json", "-e", "sched:read")
    doc = json.loads(out)
    assert doc["summary"]["perf_accepts"] is False
    assert [d["code"] for d in doc["diagnostics"]] == ["EP001", "WM002"]  # WM002: without a system, not verified
    assert doc["diagnostics"][0]["perf"]["verdict"] == "error"


# strings perf 6.1 rejects whatever the machine (no file, PMU or tracepoint of this one involved)
PERF_STAT_REJECTS = (
    "cycles/foo=1/", "cpu-clock/period=1,foo/", "sched:read", "{cycles,", "cpu-clock:uu", "cycles:ppppp",
)


@pytest.mark.perf
@pytest.mark.parametrize("text", PERF_STAT_REJECTS)
def test_cli_perf_format_prints_what_perf_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, perf_binary: str, text: str
) -> None:
    """`check --mode stat --perf 6.1 --format perf` prints what the installed perf 6.1 prints for
    `perf stat -e TEXT -- true`, run as test_dialect_live.py runs it (a temporary folder, COLUMNS=80,
    LINES=24, stdout not a terminal; a rejection is exit status 129)."""
    import os
    import subprocess

    env = {**os.environ, "COLUMNS": "80", "LINES": "24"}
    perf = subprocess.run([perf_binary, "stat", "-e", text, "--", "true"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert perf.returncode == 129 and "Run 'perf list' for a list of valid events" in perf.stderr, perf.stderr
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("LINES", "24")
    monkeypatch.delenv("EVSPEC_SYSTEM", raising=False)
    status, out, err = _cli(capsys, "--mode", "stat", "--perf", "6.1", "--format", "perf", "-e", text)
    assert status == 1
    assert (err, out) == (perf.stderr, perf.stdout)


def test_cli_perf_format_matches_the_installed_perf(
    bpf_fixtures: Path, perf_binary: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`check --perf 6.1 --format perf` prints byte for byte what perf 6.1 prints (this machine)."""
    import subprocess
    import sys

    monkeypatch.chdir(bpf_fixtures)
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "80", "HOME": str(tmp_path)}
    for text in ("./maps.o/map:arr.value[0]=5/", "cycles/foo=1/", "sched:read", "{cycles,", "cpu-clock:uu"):
        perf = subprocess.run([perf_binary, "record", "-q", "-o", str(tmp_path / "p.data"), "-e", text, "--", "true"],
                              capture_output=True, text=True, env=env)
        ours = subprocess.run([sys.executable, "-m", "evspec", "check", "--system", "live", "--perf", "6.1",
                               "--format", "perf", "-e", text], capture_output=True, text=True, env=env)
        assert (ours.stderr, ours.stdout) == (perf.stderr, perf.stdout), text


def test_map_event_finds_events_of_earlier_options(bpf_fixtures: Path) -> None:
    system = corpus_system()
    texts = ["bpf-output/no-inherit,name=evt/", "./maps.o/map:channel.event=evt/", "./maps.o/map:arr.event=evt/"]
    specs = check_specs([SpecInput(t, Source("arg", index=i), 0) for i, t in enumerate(texts)],
                        CheckOptions(system=system, cwd=bpf_fixtures))
    results = check_with_perf(specs, "6.1", system=system, cwd=bpf_fixtures, mode="record")
    assert [r.verdict.accepted for r in results] == [True, True, False]
    assert results[0].verdict.evsels == ("evt",)
    assert results[2].verdict.error is not None
    assert results[2].verdict.error.message == "Can't use this config term with this map type"
    # a file line is a command of its own: nothing earlier
    alone = check_specs([SpecInput(texts[1], Source("file", path="f", line=2), 1)],
                        CheckOptions(system=system, cwd=bpf_fixtures))
    [lone] = check_with_perf(alone, "6.1", system=system, cwd=bpf_fixtures, mode="record")
    assert lone.verdict.error is not None and lone.verdict.error.message == "Event not found for map setting"


def test_map_event_differential(bpf_fixtures: Path, perf_binary: str, monkeypatch: pytest.MonkeyPatch,
                                tmp_path: Path) -> None:
    import subprocess
    import sys

    monkeypatch.chdir(bpf_fixtures)
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "80", "HOME": str(tmp_path)}
    for first in ("bpf-output/no-inherit,name=evt/", "bpf-output/no-inherit/", "cpu-clock/name=evt/"):
        for second in ("./maps.o/map:channel.event=evt/", "./maps.o/map:arr.event=evt/"):
            argv = ["-e", first, "-e", second]
            perf = subprocess.run([perf_binary, "record", "-q", "-o", str(tmp_path / "p.data"), *argv, "--", "true"],
                                  capture_output=True, text=True, env=env)
            ours = subprocess.run([sys.executable, "-m", "evspec", "check", "--system", "live", "--perf", "6.1",
                                   "--format", "perf", *argv], capture_output=True, text=True, env=env)
            perf_err = perf.stderr if "event syntax error" in perf.stderr else ""
            assert ours.stderr == perf_err, (first, second)


def test_every_cache_combination_against_the_installed_perf(perf_binary: str, tmp_path: Path) -> None:
    """Every legacy cache name (type-op-result) is accepted or silently refused exactly as perf 6.1
    does (its evsel__hw_cache_stat table: e.g. L1-dcache has stores, L1-icache has not)."""
    import subprocess

    from evspec.compiler.attr import CACHE_OPS, CACHE_RESULTS, CACHE_TYPES
    from evspec.dialect import predict

    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "80", "HOME": str(tmp_path)}
    for kind in CACHE_TYPES:
        for op in CACHE_OPS:
            for result in CACHE_RESULTS:
                text = f"{kind[0]}-{op[1]}-{result[1]}"
                perf = subprocess.run([perf_binary, "stat", "-e", text, "--", "true"], capture_output=True,
                                      text=True, env=env)
                assert predict(text, "6.1", mode="stat").accepted == (perf.returncode == 0), text
