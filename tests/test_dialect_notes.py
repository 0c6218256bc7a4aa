"""COMPAT decision 15 in the default check: a syntax error that today's perf does not see stays
an evspec error, with a note naming the releases that run the string anyway and as what; and
(issue 22) under --perf the "= perf:" line is that release's own words, never evspec's guess."""

from __future__ import annotations

import json

import pytest

from evspec.check import CheckOptions, check_specs
from evspec.cli import main
from evspec.diagnostics import Source
from evspec.dialect.check import CURRENT_RELEASES, accident_notes, check_with_perf
from evspec.inputs import SpecInput


def _first_error(text: str, system=None):  # type: ignore[no-untyped-def]
    specs = check_specs([SpecInput(text, Source("arg", index=0), 0)], CheckOptions(system=system))
    [spec] = accident_notes(specs, system=system, cwd=".", mode="record")
    return next(d for d in spec.diagnostics if d.is_error)


@pytest.mark.parametrize(
    ("text", "ran"),
    [("cpu-clock;", "cpu-clock"), ("{cpu-clock", "cpu-clock"), ("cpu-clock u", "cpu-clock:u"),
     ("cycles#u", "cycles:u"), ("~cycles", "cycles"), ("4294967297:0", "1:0")],
)  # fmt: skip
def test_accidental_acceptances_keep_their_error_and_say_what_perf_runs(text, ran):
    diag = _first_error(text)
    assert diag.code.startswith("ES")
    assert f"perf 6.12, 7.2 and 7.3 run this as {ran!r}" in diag.notes


def test_an_older_perf_message_does_not_contradict_the_note():
    """'= perf: parser error' under 'perf 6.12, 7.2 and 7.3 run this' said both yes and no."""
    diag = _first_error("cycles#u")
    assert diag.perf_message is None
    for text in ("cycles#u", "cpu-clock X"):  # the second, 6.12 refuses: the words it had stay
        plain = check_specs([SpecInput(text, Source("arg", index=0), 0)], CheckOptions())
        before = next(d for d in plain[0].diagnostics if d.is_error).perf_message
        assert (before is not None) == (text == "cycles#u")
    assert _first_error("cpu-clock X").perf_message == before


def test_no_note_where_perf_rejects_too():
    diag = _first_error("cpu-clock,,task-clock")
    assert not any("run this as" in n or "runs this as" in n for n in diag.notes)


def test_releases_that_differ_are_named_apart():
    """6.12 has no 'X' modifier: it refuses what 7.2 and 7.3 run."""
    diag = _first_error("cpu-clock X")
    assert "perf 7.2 and 7.3 run this as 'cpu-clock:X'" in diag.notes
    assert not any("6.12" in n for n in diag.notes)
    assert CURRENT_RELEASES == ("6.12", "7.2", "7.3")


def test_the_cli_prints_the_note_in_text_and_json(capsys):
    assert main(["check", "-e", "cycles#u"]) == 1
    assert "= note: perf 6.12, 7.2 and 7.3 run this as 'cycles:u'" in capsys.readouterr().err
    assert main(["check", "--format", "json", "-e", "cpu-clock;"]) == 1
    [diag] = json.loads(capsys.readouterr().out)["diagnostics"]
    assert "perf 6.12, 7.2 and 7.3 run this as 'cpu-clock'" in diag["notes"]


def test_a_clean_string_gets_no_prediction(monkeypatch):
    import evspec.dialect.check as dialect_check

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("predicted a clean string")

    monkeypatch.setattr(dialect_check, "accident_notes", refuse)
    assert main(["check", "-e", "cycles:u,cpu-clock"]) == 0


def test_under_perf_the_perf_line_is_that_release_s(capsys):
    """Issue 22: '--perf 6.1 -e cycles@' said "perf 6.1 accepts this" and then "= perf: parser error"."""
    specs = check_specs([SpecInput("cycles@", Source("arg", index=0), 0)], CheckOptions())
    [result] = check_with_perf(specs, "6.1", system=None, cwd=".", mode="record")
    [diag] = result.diagnostics
    assert "perf 6.1 accepts this string" in diag.notes and diag.perf_message is None
    assert main(["check", "--perf", "6.1", "-e", "cycles@"]) == 1
    assert "= perf:" not in capsys.readouterr().err
    specs = check_specs([SpecInput("cycles:uu", Source("arg", index=0), 0)], CheckOptions())
    [result] = check_with_perf(specs, "7.2", system=None, cwd=".", mode="record")
    assert result.diagnostics[0].perf_message == "Duplicate modifier 'u' (user)"
