"""--perf 6.12, 7.2 and 7.3 against what those binaries answered, without the binaries.

tests/data/dialect/perf-RELEASE.jsonl.gz holds, for every corpus string and every generated string
(tests/dialect_strings.py) in record and stat mode, what the installed perf answered on the machine
that tests/data/dialect/machine.json describes (``evspec system snapshot`` of it); predicting
against that snapshot must give the same verdicts, the same stderr for every rejection and the
same echoed characters. tests/perf_answers.py regenerates the answers; test_dialect_live_releases.py
checks them against the binaries themselves.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dialect_strings import GENERATED, generate, read_generated
from perf_oracle import ENV, RELEASES, RUN_PERF_LIST, differences, jobs, read_answers, same_stderr, strings

from evspec.dialect import predict
from evspec.system import read_snapshot

MACHINE = Path(__file__).resolve().parent / "data" / "dialect" / "machine.json"


@pytest.fixture(scope="module")
def machine():
    return read_snapshot(MACHINE)


def test_the_generated_strings_are_the_generator_s():
    assert read_generated() == generate(), f"regenerate {GENERATED} (python tests/dialect_strings.py)"
    texts = read_generated()
    assert len(texts) >= 2000 and len(set(texts)) == len(texts)
    assert not any(t.startswith("-") or "\0" in t for t in texts)


@pytest.mark.parametrize("release", RELEASES)
def test_the_answers_cover_every_string_in_both_modes(release):
    version, answers = read_answers(release)
    assert version.startswith(f"perf version {release}.")
    assert [(a.mode, a.text) for a in answers] == jobs(strings()), "regenerate the answers (tests/perf_answers.py)"
    assert any(a.rejected for a in answers) and any(not a.rejected for a in answers)


@pytest.mark.parametrize("release", RELEASES)
def test_predictions_equal_the_committed_answers(release, machine):
    _, answers = read_answers(release)
    diffs = differences(release, answers, machine)
    assert not diffs, f"{len(diffs)}+ differences:\n" + "\n\n".join(diffs)


@pytest.mark.parametrize("release", RELEASES)
def test_format_perf_prints_what_perf_printed(release, capfdbinary, monkeypatch):
    """``check --perf RELEASE --format perf`` writes perf's stderr byte for byte (every 25th
    rejection; the usage block after "Run 'perf list'" is the same for all and is not stored)."""
    from evspec.cli import main

    monkeypatch.setenv("COLUMNS", ENV["COLUMNS"])
    _, answers = read_answers(release)
    sample = [a for a in answers if a.rejected][::25]
    assert len(sample) > 100
    for a in sample:
        main(["check", "--perf", release, "--format", "perf", "--mode", a.mode, "--system", str(MACHINE),
              "-e", a.text])
        out, err = capfdbinary.readouterr()
        printed = err.decode(errors="surrogateescape")
        assert out.decode(errors="surrogateescape") == a.stdout, a.text
        kept = printed[: printed.find(RUN_PERF_LIST) + len(RUN_PERF_LIST)]
        assert same_stderr(kept, a.stderr, predict(a.text, release, system=read_snapshot(MACHINE), mode=a.mode).quirk), (
            a.text, kept, a.stderr)
