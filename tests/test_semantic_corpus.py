"""FULL column of the corpus: syntax + system-independent rules + semantic checks, per row.

Rows that name a BPF object (a ``.o``/``.obj``/``.c`` path) are checked by the BPF object checks,
not here. The synthetic corpus machine makes the test independent of the machine it runs on; the
same strings are also checked against this machine (where it is the corpus machine) and against a
snapshot of it loaded back from a file.
"""

from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from evspec.diagnostics import Diagnostic
from evspec.system import System, read_snapshot, write_snapshot
from evspec.system.fixtures import corpus_system

_BPF_PATH = re.compile(r"\.(o|obj|c)($|[/,}:])")


@dataclass(frozen=True)
class Row:
    line: int
    string: str
    full: str
    note: str

    def expected(self) -> tuple[str, int | None, int | None]:
        if self.full == "ok":
            return ("ok", None, None)
        start, end = self.full.split(":", 1)[0].removeprefix("error@").split("-")
        return ("error", int(start), int(end))


def non_bpf_rows() -> list[Row]:
    """The corpus rows naming no BPF object (read here: parametrizing needs them at collection)."""
    shared = Path(os.environ.get("EVSPEC_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    path = shared / "corpus" / "events.tsv"
    if not path.exists():
        return []
    rows = []
    with path.open(newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(reader)
        for line, (string, _syntax, full, _pmsg, _perf61, note) in enumerate(reader, start=2):
            if not _BPF_PATH.search(string):
                rows.append(Row(line, string, full, note))
    return rows


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
def test_full_verdict_on_the_corpus_machine(row: Row) -> None:
    got = verdict(full_diagnostics(row.string, corpus_system()))
    assert got == row.expected(), f"{row.string!r}: {row.full} (NOTE: {row.note})"


def test_the_corpus_rows_are_there(corpus: list) -> None:
    assert len(ROWS) > 250 and len(ROWS) < len(corpus)


def test_the_corpus_covers_every_semantic_error_code() -> None:
    codes = set()
    for row in ROWS:
        codes.update(d.code for d in full_diagnostics(row.string, corpus_system()))
    assert {"EM001", "EM002", "EM003", "EM005", "EM009", "EM010"} <= codes


# ---- this machine


def _live_differences(live: System) -> list[str]:
    """Why this machine is not the corpus machine (empty if it is, for what the strings use)."""
    corpus = corpus_system()
    out = []
    if live.pmu_names() != corpus.pmu_names():
        out.append(f"PMUs {live.pmu_names()} instead of {corpus.pmu_names()}")
    else:
        for name in corpus.pmu_names():
            if live.pmu(name) != corpus.pmu(name):
                out.append(f"PMU {name} differs")
    try:
        for sys_name in ("sched", "raw_syscalls", "msr", "power"):
            missing = set(corpus.tracepoint_events(sys_name)) - set(live.tracepoint_events(sys_name))
            if missing:
                out.append(f"tracepoints {sys_name}:{sorted(missing)[:3]} missing")
        for sys_name in live.tracepoint_systems():
            if sys_name.startswith(("nosu", "xyz")) or sys_name in ("kvm-s390", "smi", "sched-x", "sched.x"):
                out.append(f"has trace system {sys_name}")
            if sys_name != "sched" and sys_name.startswith("s") and "sched_switch" in live.tracepoint_events(sys_name):
                out.append(f"trace system {sys_name} has sched_switch")
    except Exception as exc:  # noqa: BLE001 - any tracefs trouble means: not the corpus machine
        out.append(f"tracefs: {exc}")
    return out


@pytest.fixture(scope="module")
def live_system() -> System:
    from evspec.system import LiveSystem

    live = LiveSystem()
    differences = _live_differences(live)
    if differences:
        pytest.skip("this machine is not the corpus machine: " + "; ".join(differences))
    return live


def test_full_verdicts_on_this_machine(live_system: System) -> None:
    wrong = []
    for row in ROWS:
        got = verdict(full_diagnostics(row.string, live_system))
        if got != row.expected():
            wrong.append(f"{row.string!r}: got {got}, corpus {row.full}")
    assert not wrong, "\n".join(wrong)


def test_snapshot_of_this_machine_gives_the_same_verdicts(live_system: System, tmp_path: Path) -> None:
    path = tmp_path / "this-machine.json"
    write_snapshot(live_system, path)
    loaded = read_snapshot(path)
    for row in ROWS:
        live = [(d.code, d.span, d.message) for d in full_diagnostics(row.string, live_system)]
        snap = [(d.code, d.span, d.message) for d in full_diagnostics(row.string, loaded)]
        assert snap == live, row.string
