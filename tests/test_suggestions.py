"""No silent pass: a check without a system says which names it could not verify and how to
verify them; a check against a system suggests the names it has ('did you mean'), by edit
distance, for events, tracepoints (a missing 'SYSTEM:' too), PMUs and PMU terms; characters of
other scripts drawn like ASCII letters are named; 'rHEX' that is not hex says so."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from evspec.cli import main
from evspec.cli.app import EXIT_CLEAN, EXIT_FINDINGS
from evspec.suggest import ascii_twin, closest, edit_distance, hex_problem, without_look_alikes
from evspec.system.fixtures import corpus_data


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("a", "b", "distance"), [
    ("cyles", "cycles", 1), ("sched_swtich", "sched_switch", 1), ("tcs", "tsc", 1), ("mrs", "msr", 1),
    ("task-clok", "task-clock", 1), ("cycles", "cycles", 0), ("abc", "xyz", 3), ("", "ab", 2),
])
def test_edit_distance(a: str, b: str, distance: int) -> None:
    assert edit_distance(a, b, 5) == distance
    assert edit_distance(b, a, 5) == distance
    assert edit_distance(a, b, distance - 1) == distance if distance else True


def test_closest_is_near_and_ordered() -> None:
    assert closest("cyles", ["cycles", "cpu-cycles", "bus-cycles", "cs"]) == ["cycles"]
    assert closest("Cycles", ["cycles", "cyclesx"]) == ["cycles", "cyclesx"]  # the other case first
    assert closest("zzz", ["cycles"]) == []
    assert closest("x" * 1000, ["x" * 1000 + "y"]) == []  # no machine names that long: nothing is near


@pytest.mark.parametrize(("word", "problem"), [
    ("r1g8", "'r1g8' is not a raw event: 'g' is not a hexadecimal digit"),
    ("r0x1a", "'r0x1a' is not a raw event: the event form is r + hex digits without '0x' ('r1a')"),
    ("r1a", None), ("read", None), ("rx_bytes", None), ("r2-d2", None), ("cycles", None),
])
def test_hex_problem(word: str, problem: str | None) -> None:
    said = hex_problem(word)
    assert (said is None and problem is None) or (said is not None and problem is not None and said.startswith(problem))


def test_look_alikes() -> None:
    assert ascii_twin("с") == "c" and ascii_twin("ｃ") == "c" and ascii_twin("\u2010") == "-"
    assert ascii_twin("c") is None and ascii_twin("事") is None
    assert without_look_alikes("сусlеs") == "cycles"


# ---- without a system: a note, never silence


def test_names_that_need_a_system_are_listed_in_a_note() -> None:
    """`check -e cyles` exited 0 and printed nothing; so did sched:sched_swtich and r1g8."""
    code, out, err = run("check", "-e", "cyles", "-e", "sched:sched_swtich", "-e", "msr/tcs/", "-e", "cyles")
    assert code == EXIT_CLEAN and out == ""  # a note fails nothing
    assert "note[WM002]: 3 names were not verified: no system was described (--system none)" in err
    assert "= note: 'cyles': event or PMU alias (-e #1, col 1, and 1 more strings); not a built-in event: " \
           "did you mean 'cycles'?" in err
    assert "= note: 'sched:sched_swtich': tracepoint (-e #2, col 1)" in err
    assert "= note: 'msr/tcs/': PMU event (-e #3, col 1)" in err
    assert "= help: check them against this machine: --system live" in err
    assert err.endswith("0 errors, 0 warnings, 1 note\n")


def test_the_note_in_every_format(tmp_path: Path) -> None:
    events = tmp_path / "a.events"
    events.write_text("cycles\nsched:sched_switch\n")
    code, out, _ = run("check", "--format", "json", str(events))
    document = json.loads(out)
    [diag] = document["diagnostics"]
    assert code == EXIT_CLEAN and document["summary"] == {"errors": 0, "warnings": 0, "notes": 1}
    assert (diag["code"], diag["severity"], diag["source"]["line"]) == ("WM002", "note", 2)
    _, out, _ = run("check", "--format", "github", str(events))
    assert out.startswith(f"::notice file={events},line=2,col=1,endColumn=19,title=WM002::1 name was not verified")
    _, out, _ = run("check", "--format", "sarif", str(events))
    assert json.loads(out)["runs"][0]["results"][0]["level"] == "note"
    _, _, err = run("check", "--format", "perf", str(events))
    assert err == ""  # perf has nothing to say about names it is not given to check


def test_a_word_written_like_a_raw_event_is_a_warning_without_a_system() -> None:
    code, _, err = run("check", "-e", "r1g8", "-e", "r0x1a", "-e", "r1a")
    assert code == EXIT_FINDINGS
    assert "warning[WS010]: 'r1g8' is not a raw event: 'g' is not a hexadecimal digit" in err
    assert "warning[WS010]: 'r0x1a' is not a raw event" in err
    assert err.count("WS010") == 2


def test_a_clean_check_of_built_in_events_says_nothing() -> None:
    assert run("check", "-e", "cycles:u,{cpu-clock,task-clock}:S") == (EXIT_CLEAN, "", "")


# ---- against a system: did you mean


@pytest.fixture(scope="module")
def corpus_snapshot(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("system") / "corpus.json"
    path.write_text(json.dumps(corpus_data()))
    return str(path)


@pytest.mark.parametrize(("event", "code", "help_line"), [
    ("cyles", "EM002", "did you mean 'cycles'?"),
    ("Task-Clok", "EM002", "did you mean 'task-clock'?"),  # 'Cycles' is cycles (COMPAT 1.15)
    ("task-clok", "EM002", "did you mean 'task-clock'?"),
    ("TSCC", "EM002", "did you mean 'tsc'?"),  # a PMU alias of the corpus machine
    ("sched_switch", "EM002", "a tracepoint is written SYSTEM:EVENT: did you mean 'sched:sched_switch'?"),
    ("r1g8", "EM002", "'r1g8' is not a raw event: 'g' is not a hexadecimal digit"),
    ("sched:sched_swtich", "EM009", "did you mean 'sched:sched_switch'?"),
    ("shed:sched_switch", "EM009", "did you mean 'sched:sched_switch'?"),
    ("mrs/tsc/", "EM001", "did you mean 'msr'?"),
    ("msr/tcs/", "EM003", "did you mean 'tsc'?"),
    ("msr/event=1,perod=1/", "EM003", "did you mean 'period'?"),
])
def test_did_you_mean(corpus_snapshot: str, event: str, code: str, help_line: str) -> None:
    status, out, _ = run("check", "--format", "json", "--system", corpus_snapshot, "--mode", "stat", "-e", event)
    assert status == EXIT_FINDINGS
    [diag] = [d for d in json.loads(out)["diagnostics"] if d["severity"] == "error"]
    assert diag["code"] == code and help_line in diag["help"], diag


def test_nothing_near_suggests_nothing(corpus_snapshot: str) -> None:
    _, out, _ = run("check", "--format", "json", "--system", corpus_snapshot, "-e", "zzzzqqq,sched:qqqqqqqqq")
    for diag in json.loads(out)["diagnostics"]:
        assert not any("did you mean" in h for h in diag["help"]), diag


@pytest.mark.parametrize(("event", "said", "meant"), [
    ("сycles", "'с' is U+0441 CYRILLIC SMALL LETTER ES, drawn like the ASCII 'c'", "cycles"),
    ("sched:sched_swіtch", "'і' is U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I", "sched:sched_switch"),
    ("cpu-clock,task\u2010clock", "'\u2010' is U+2010 HYPHEN, drawn like the ASCII '-'", "task-clock"),
    ("ｃｐｕ-clock", "'ｃ' is U+FF43 FULLWIDTH LATIN SMALL LETTER C", "cpu-clock"),
])
def test_look_alikes_are_named(event: str, said: str, meant: str) -> None:
    status, out, _ = run("check", "--format", "json", "-e", event)
    [diag] = [d for d in json.loads(out)["diagnostics"] if d["code"] == "ES002"]
    assert status == EXIT_FINDINGS
    assert any(h.startswith(said) and h.endswith(f"did you mean '{meant}'?") for h in diag["help"]), diag
