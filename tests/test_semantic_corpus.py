"""FULL column of the corpus: syntax + system-independent rules + semantic checks, per row.

Rows that name a BPF object (a ``.o``/``.obj``/``.c`` path) are checked by the BPF object checks,
not here. The synthetic corpus machine makes the test independent of the machine it runs on; the
same strings are also checked against this machine (where it is the corpus machine) and against a
snapshot of it loaded back from a file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpus_files import CORPUS, CorpusRow, read_corpus

from evspec.diagnostics import Diagnostic
from evspec.system import System, read_snapshot, snapshot, write_snapshot
from evspec.system.fixtures import corpus_system

CORPUS_SNAPSHOT = CORPUS / "system.json"


def non_bpf_rows() -> list[CorpusRow]:
    """The corpus rows naming no BPF object (read here: parametrizing needs them at collection)."""
    return [row for row in read_corpus() if not row.names_object]


def full_diagnostics(text: str, system: System) -> list[Diagnostic]:
    """What ``evspec check --system`` reports for one string, first finding first."""
    from evspec.compiler import check_semantics
    from evspec.parser import analyze

    result = analyze(text)
    diags = list(result.diagnostics) + check_semantics(result.events, system, "record")
    return sorted((d for d in diags if d.is_error), key=lambda d: d.span.start)


def verdict(diags: list[Diagnostic]) -> tuple[str, int | None, int | None]:
    if not diags:
        return ("ok", None, None)
    return ("error", diags[0].span.start, diags[0].span.end)


ROWS = non_bpf_rows()


@pytest.mark.parametrize("row", ROWS, ids=[f"L{r.line}" for r in ROWS])
def test_full_verdict_on_the_corpus_machine(row: CorpusRow) -> None:
    got = verdict(full_diagnostics(row.string, corpus_system()))
    assert got == row.verdict(row.full), f"{row.string!r}: {row.full} (NOTE: {row.note})"


def test_the_corpus_rows_are_there(corpus: list) -> None:
    assert len(ROWS) > 250 and len(ROWS) < len(corpus)


def test_the_corpus_covers_every_semantic_error_code() -> None:
    codes = set()
    for row in ROWS:
        codes.update(d.code for d in full_diagnostics(row.string, corpus_system()))
    assert {"EM001", "EM002", "EM003", "EM005", "EM009", "EM010"} <= codes


# ---- the corpus machine as a committed snapshot, and this machine through its own snapshot


def test_the_committed_snapshot_is_the_corpus_machine() -> None:
    """tests/data/corpus/system.json is what `evspec system snapshot` writes for the corpus machine
    (re-write it with write_snapshot(corpus_system(), ...) when the corpus machine changes)."""
    assert json.loads(CORPUS_SNAPSHOT.read_text()) == snapshot(corpus_system())


def test_the_committed_snapshot_gives_the_corpus_verdicts() -> None:
    """What a CI job without the corpus machine does: check against the machine's snapshot file."""
    loaded = read_snapshot(CORPUS_SNAPSHOT)
    wrong = []
    for row in ROWS:
        got = verdict(full_diagnostics(row.string, loaded))
        if got != row.verdict(row.full):
            wrong.append(f"line {row.line} {row.string!r}: got {got}, corpus {row.full}")
    assert not wrong, "\n".join(wrong)


@pytest.fixture(scope="module")
def live_system(root_kernel: None) -> System:
    """This machine, whatever its PMUs; tracefs must be readable (root mounts it)."""
    from evspec.system import LiveSystem

    live = LiveSystem()
    assert live.tracepoint_systems(), "tracefs shows no trace systems here"
    return live


def test_snapshot_of_this_machine_gives_the_same_verdicts(live_system: System, tmp_path: Path) -> None:
    path = tmp_path / "this-machine.json"
    write_snapshot(live_system, path)
    loaded = read_snapshot(path)
    assert loaded.pmu_names() == live_system.pmu_names()
    for row in ROWS:
        live = [(d.code, d.span, d.message) for d in full_diagnostics(row.string, live_system)]
        snap = [(d.code, d.span, d.message) for d in full_diagnostics(row.string, loaded)]
        assert snap == live, row.string
