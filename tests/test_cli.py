"""The command line: exit codes, inputs, formats, and what `check` must not import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evspec.cli import main
from evspec.cli.app import EXIT_CLEAN, EXIT_FINDINGS, EXIT_INTERNAL, EXIT_USAGE


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_clean_strings_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", "-e", "cycles:u", "-e", "{cpu-clock,task-clock}:S")
    assert (code, out, err) == (EXIT_CLEAN, "", "")


def test_findings_exit_1_and_every_bad_event_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check", "-e", "cycles:uu,cpu-clock/foo=1/,cycles")
    assert code == EXIT_FINDINGS
    assert "bad modifier" in err and "unknown term 'foo'" in err
    assert "2 errors" in err


def test_no_input_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check")
    assert code == EXIT_USAGE and "no event strings" in err


def test_unknown_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", "--bogus"])
    assert exc.value.code == EXIT_USAGE


def test_missing_file_is_an_io_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "check", str(tmp_path / "nope.events"))
    assert code == EXIT_USAGE and "cannot read" in err


def test_internal_error_is_reported_as_a_bug_not_a_finding(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kw: object) -> None:
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr("evspec.check.iter_checked", boom)
    code, _, err = run(capsys, "check", "-e", "cycles")
    assert code == EXIT_INTERNAL
    assert "internal error" in err and "bug in evspec" in err


def test_json_names_file_and_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "x.events"
    f.write_text("# comment\ncycles\n\ncpu-clock:x\n")
    code, out, _ = run(capsys, "check", "--format", "json", str(f))
    doc = json.loads(out)
    assert code == EXIT_FINDINGS
    (d,) = doc["diagnostics"]
    assert d["source"] == {"kind": "file", "path": str(f), "line": 4}
    assert d["event"] == "cpu-clock:x" and d["span"] == {"start": 10, "end": 11}
    assert d["severity"] == "error" and isinstance(d["code"], str)
    assert doc["summary"] == {"errors": 1, "warnings": 0}


def test_json_arg_sources_count_from_zero(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "check", "--format", "json", "-e", "cycles", "-e", "{}")
    (d,) = json.loads(out)["diagnostics"]
    assert d["source"] == {"kind": "arg", "index": 1}


def test_event_reference_to_an_earlier_argument(capsys: pytest.CaptureFixture[str]) -> None:
    # map:...event=evt is resolved against events of earlier -e strings of the same command.
    code, _, err = run(capsys, "check", "-e", "bpf-output/no-inherit,name=evt/", "-e", "./x.o/map:c.event=evt/")
    assert code == EXIT_CLEAN, err
    code, _, err = run(capsys, "check", "-e", "./x.o/map:c.event=evt/", "-e", "bpf-output/no-inherit,name=evt/")
    assert code == EXIT_FINDINGS and "evt" in err


def test_file_lines_are_separate_commands(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "x.events"
    f.write_text("bpf-output/no-inherit,name=evt/\n./x.o/map:c.event=evt/\n")
    code, _, err = run(capsys, "check", str(f))
    assert code == EXIT_FINDINGS and "evt" in err


@pytest.mark.parametrize("fmt", ["perf", "sarif", "github"])
def test_every_format_reports_the_finding(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    code, out, err = run(capsys, "check", "--format", fmt, "-e", "cpu-clock:uu")
    assert code == EXIT_FINDINGS
    assert ("u" in (out + err)) and (out + err).strip()
    if fmt == "sarif":
        assert json.loads(out)["version"] == "2.1.0"
    if fmt == "github":
        assert out.startswith("::error ")
    if fmt == "perf":
        assert err.startswith("event syntax error: 'cpu-clock:uu'")


CORPUS_SYSTEM = Path(__file__).parent / "data" / "corpus" / "system.json"


def test_fail_on_error_ignores_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    # the corpus machine has no hardware PMU: `cycles` there is warning WM001 and no error
    argv = ("check", "--system", str(CORPUS_SYSTEM), "-e", "cycles")
    code, _, err = run(capsys, *argv)
    assert code == EXIT_FINDINGS
    assert "warning[WM001]" in err and "0 errors, 1 warning" in err
    code, _, err = run(capsys, *argv[:1], "--fail-on", "error", *argv[1:])
    assert code == EXIT_CLEAN
    assert "warning[WM001]" in err  # still reported, only not failing


def test_color_only_when_asked(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, err = run(capsys, "check", "--color", "always", "-e", "cpu-clock:uu")
    assert "\x1b[" in err
    _, _, err = run(capsys, "check", "-e", "cpu-clock:uu")  # stderr is not a terminal here
    assert "\x1b[" not in err
    monkeypatch.setenv("NO_COLOR", "1")
    _, _, err = run(capsys, "check", "--color", "auto", "-e", "cpu-clock:uu")
    assert "\x1b[" not in err
    _, _, err = run(capsys, "check", "--color", "always", "-e", "cpu-clock:uu")  # as the README says
    assert "\x1b[" in err


def test_fmt_keeps_trailing_comments(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "a.events"
    f.write_text("{cpu-clock , task-clock}:S  # the group\n# whole line\ncycles:u # user\ncycles\u2028\n")
    code, out, err = run(capsys, "fmt", str(f))
    assert out.splitlines()[:3] == ["{cpu-clock,task-clock}:S  # the group", "# whole line", "cycles:u # user"]
    assert code == 1 and f"{f}:4:7" in err  # U+2028 is a character of line 4, not a line break
    code, _, err = run(capsys, "check", str(f))
    assert code == 1 and f"{f}:4:7" in err and f"{f}:1" not in err and f"{f}:3" not in err


def test_parse_prints_the_ast(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "parse", "--format", "json", "-e", "cycles:u")
    (result,) = json.loads(out)["results"]
    (event,) = result["ast"]["items"]
    assert code == EXIT_CLEAN
    assert event["node"] == "SymbolEvent" and event["modifiers"]["letters"] == "u"
    assert event["span"] == {"start": 0, "end": 8}
    code, out, _ = run(capsys, "parse", "-e", "sched:sched_switch")
    assert "TracepointEvent" in out and "system='sched'" in out


def test_fmt_prints_canonical_strings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "fmt", "-e", "{ cpu-clock , task-clock }:u", "-e", "r1a/period=1/:u")
    assert code == EXIT_CLEAN
    assert out.splitlines() == ["{cpu-clock,task-clock}:u", "r1a/period=1/u"]


def test_fmt_check_and_write(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "a.events"
    f.write_text("# keep me\n{ cycles , instructions }\ncycles\n")
    code, out, _ = run(capsys, "fmt", "--check", str(f))
    assert code == EXIT_FINDINGS
    assert out == f"{f}:2: not canonical: '{{ cycles , instructions }}' -> '{{cycles,instructions}}'\n"
    code, _, _ = run(capsys, "fmt", "--write", str(f))
    assert code == EXIT_CLEAN
    assert f.read_text() == "# keep me\n{cycles,instructions}\ncycles\n"
    assert run(capsys, "fmt", "--check", str(f))[0] == EXIT_CLEAN


def test_fmt_reports_strings_it_cannot_parse(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "fmt", "-e", "cycles:uu")
    assert code == EXIT_FINDINGS and out == "" and "bad modifier" in err


def test_explain(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain")
    assert code == EXIT_CLEAN
    codes = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert len(codes) > 20
    code, out, _ = run(capsys, "explain", codes[0])
    assert code == EXIT_CLEAN and codes[0] in out
    code, _, err = run(capsys, "explain", "ZZ999")
    assert code == EXIT_USAGE and "ZZ999" in err


def test_explain_covers_every_code_the_checks_emit(capsys: pytest.CaptureFixture[str]) -> None:
    from evspec.codes import catalogue

    _, out, _ = run(capsys, "check", "--format", "json", "-e", "cycles:uu,{},x{a}y,cpu-clock/foo/")
    emitted = {d["code"] for d in json.loads(out)["diagnostics"]}
    assert emitted and emitted <= set(catalogue())


def test_compile_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "compile", "--system", "none", "--format", "json",
                       "-e", "{cpu-clock,task-clock}:u", "-e", "mem:0x1000/8:w")
    assert code == EXIT_CLEAN
    events = json.loads(out)["events"]
    assert [(e["name"], e["spec_index"], e["group"]) for e in events] == [
        ("cpu-clock", 0, {"index": 0, "leader": True, "position": 0, "members": 2}),
        ("task-clock", 0, {"index": 0, "leader": False, "position": 1, "members": 2}),
        ("mem:0x1000", 1, None),  # perf names breakpoints without length and type
    ]
    assert events[0]["attr"]["type"] == 1 and events[0]["attr"]["exclude_kernel"] == 1
    assert events[2]["attr"]["bp_addr"] == 0x1000 and events[2]["attr"]["bp_len"] == 8


def test_compile_for_an_older_release(capsys: pytest.CaptureFixture[str]) -> None:
    def attrs(*argv: str) -> tuple[int, list[dict[str, int]], str]:
        code, out, err = run(capsys, "compile", "--system", "none", "--format", "json", "--mode", "stat", *argv)
        return code, [e["attr"] for e in json.loads(out)["events"]] if code == EXIT_CLEAN else [], err

    code, got, _ = attrs("-e", "cpu-clock:u")
    assert code == EXIT_CLEAN and got[0]["size"] == 144 and "exclude_guest" not in got[0]
    code, got, _ = attrs("--perf", "6.1", "-e", "cpu-clock:u")
    assert code == EXIT_CLEAN and got[0]["size"] == 128 and got[0]["exclude_guest"] == 1
    # what today's rules refuse and perf 6.12 still takes: a cache name with a repeated operation
    code, _, err = attrs("-e", "L1-dcache-load-load")
    assert code == EXIT_FINDINGS and "ES027" in err
    code, got, _ = attrs("--perf", "6.12", "-e", "L1-dcache-load-load")
    assert code == EXIT_CLEAN and (got[0]["type"], got[0].get("config", 0)) == (3, 0)
    # what perf 6.1 does not know is refused, with the reason
    code, _, err = attrs("--perf", "6.1", "-e", "cpu-clock/config3=1/")
    assert code == EXIT_FINDINGS and "EM019" in err and "perf 6.1 refuses" in err
    code, _, err = attrs("--perf", "6.12", "-e", "cpu-clock:X")
    assert code == EXIT_FINDINGS and "perf 6.12 has no modifier 'X'" in err


def test_snapshot_then_check_against_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from evspec.system import snapshot
    from evspec.system.fixtures import corpus_system

    snap = tmp_path / "machine.json"
    snap.write_text(json.dumps(snapshot(corpus_system())))
    code, _, err = run(capsys, "check", "--system", str(snap), "--mode", "stat", "-e", "sched:sched_switch,msr/tsc/")
    assert code == EXIT_CLEAN, err
    code, _, err = run(capsys, "check", "--system", str(snap), "-e", "sched:sched_switch,msr/tsc/")
    assert code == EXIT_FINDINGS and "error[EM032]" in err, err  # perf record cannot sample msr
    code, _, err = run(capsys, "check", "--system", str(snap), "-e", "cpu_core/config=1/")
    assert code == EXIT_FINDINGS and "cpu_core" in err


def _import_log(*argv: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "evspec", *argv],
                          cwd="/", env=env, capture_output=True, text=True, check=False)
    return proc.stderr


@pytest.mark.parametrize("argv", [("check", "-e", "cycles:u"), ("parse", "-e", "cycles:u"),
                                  ("fmt", "-e", "cycles:u")])
def test_event_string_path_imports_nothing_heavy(argv: tuple[str, ...]) -> None:
    log = _import_log(*argv)
    modules = {line.split("|")[-1].strip() for line in log.splitlines() if line.startswith("import time:")}
    assert "evspec.parser" in modules, "the import log did not cover evspec"
    heavy = sorted(m for m in modules if m.split(".")[0] in ("elftools", "pyroute2")
                   or m.startswith("evspec.loader"))
    assert heavy == []


def test_the_installed_command_freezes_what_it_made(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """console_main (the console script, python -m evspec) returns main's status and leaves the
    objects of the run frozen, so that the interpreter's exit skips collecting them."""
    import gc

    from evspec.cli import console_main

    monkeypatch.setattr("sys.argv", ["evspec", "check", "-e", "cycles:u"])
    gc.unfreeze()
    try:
        assert console_main() == 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert capsys.readouterr().out == ""  # a clean check prints nothing
