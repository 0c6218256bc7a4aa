"""record's histograms and tables on a live run whose workload makes every count exact
(tests/data/vars: 100 getppid() calls counted into a log2 array, a hash of structs and a .bss
global): the text at exit (golden file), the JSON objects, the print and clear of --interval,
--dump-maps in their place, and the print terms checked against the object.

``EVSPEC_BLESS=1`` rewrites tests/golden/aggregate/*.txt after an intended change."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from bpf_build import build_bpf, build_program, copy_sources, require_tools
from corpus_files import DATA
from evspec.loader.kernel import KernelError
from evspec.loader.output.aggregate.hook import every_interval
from golden_files import check_golden
from record_cli import run_record

from evspec.codes.kernel import OBJECT

EVENT = "./vars.o/var:targ_comm='varswork',var:delta='-5',var:mode=MODE_COUNT"
CALLS = "100"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tools("clang", "cc")
    out = tmp_path_factory.mktemp("aggregate")
    copy_sources(DATA / "vars", ("vars.c", "varswork.c"), out)
    build_program(out, "varswork.c", "varswork")
    build_bpf(out, "vars.c", "vars.o")
    return out


def _json(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


def test_the_counts_print_at_exit(built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """calls_hist: n = 1..100 in log2 slots; stats: 25 calls in each bucket n % 4; calls: 100.
    The map 'seen' (only stored into) is no result."""
    monkeypatch.chdir(built)
    status, out, err = run_record("-e", f"{EVENT},map:calls_hist.unit=calls/", "--", "./varswork", CALLS)
    assert status == 0, err
    check_golden("aggregate/vars_exit.txt", out)


def test_json_objects_follow_the_schema(built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(built)
    status, out, err = run_record("--format", "json", "-e", f"{EVENT},map:stats.column[0]=BUCKET,"
                                  "map:stats.column[3]=none,map:stats.column[4]=none/", "--", "./varswork", CALLS)
    assert status == 0, err
    lines = _json(out)
    assert lines[-1] == {"summary": {"samples": 0, "lost": 0}}
    hist, stats, calls = lines[:-1]
    assert set(hist) == {"histogram", "labels", "unit", "slots", "buckets", "at"}
    assert hist["histogram"] == "calls_hist" and hist["slots"] == "log2" and hist["at"] == "exit"
    assert hist["unit"] == "value" and hist["labels"] == {}
    assert hist["buckets"] == [[0, 1, 1], [2, 3, 2], [4, 7, 4], [8, 15, 8], [16, 31, 16], [32, 63, 32], [64, 127, 37]]
    assert stats == {"table": "stats", "columns": ["BUCKET", "calls", "sum"], "left_out": 0, "at": "exit",
                     "rows": [[0, 25, 1300], [1, 25, 1225], [2, 25, 1250], [3, 25, 1275]]}
    assert calls == {"table": "calls", "columns": ["calls"], "rows": [[100]], "left_out": 0, "at": "exit"}


def test_top_leaves_rows_out_and_says_how_many(built: Path, root_kernel: None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(built)
    status, out, err = run_record("--top", "1", "--format", "json", "-e", f"{EVENT}/", "--", "./varswork", "99")
    assert status == 0, err
    stats = next(line for line in _json(out) if line.get("table") == "stats")
    # n = 1..99: 24 calls in bucket 0 (4, 8, ..., 96), 25 in the others; ties keep key order
    assert stats["rows"] == [[1, 25, 1225, -5, "MODE_COUNT"]] and stats["left_out"] == 3


def test_an_interval_prints_and_clears(built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The calls are made at once, then the workload waits past a few intervals: each print
    clears what it printed, so over all the prints (intervals and exit) every call is counted
    once, and the last counts nothing."""
    monkeypatch.chdir(built)
    status, out, err = run_record("--interval", "0.4", "--format", "json", "-e", f"{EVENT}/", "--",
                                  "sh", "-c", f"./varswork {CALLS}; sleep 1.5")
    assert status == 0, err
    lines = _json(out)[:-1]
    hists = [line for line in lines if line.get("histogram") == "calls_hist"]
    assert len(hists) >= 3 and [h["at"] for h in hists] == ["interval"] * (len(hists) - 1) + ["exit"]
    counted = [sum(b[2] for b in h["buckets"]) for h in hists]  # type: ignore[union-attr]
    assert sum(counted) == 100 and counted[-1] == 0
    stats = [line["rows"] for line in lines if line.get("table") == "stats"]
    assert sum(row[1] for rows in stats for row in rows) == 100 and stats[-1] == []  # type: ignore[union-attr, index]
    calls = [line["rows"] for line in lines if line.get("table") == "calls"]
    assert sum(rows[0][0] for rows in calls) == 100 and calls[-1] == [[0]]  # type: ignore[index]


def test_dump_maps_prints_the_raw_entries_instead(built: Path, root_kernel: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(built)
    status, out, err = run_record("--dump-maps=stats", "-e", f"{EVENT}/", "--", "./varswork", CALLS)
    assert status == 0, err
    assert out.splitlines()[0].startswith("stats[0] = ") and "distribution" not in out and "calls:" not in out


@pytest.mark.parametrize(("terms", "message"), [
    ("map:nosuch.unit=usecs", "no map or .bss global named 'nosuch' in the object"),
    ("map:calls_hist.hist=log10", "map:calls_hist.hist=log10: the slots are log2, linear or none"),
    ("map:calls_hist.step=0", "map:calls_hist.step needs a positive number, not '0'"),
    ("map:stats.column=BUCKET", "map:stats.column needs the column's index"),
    ("map:stats.column[0...1]=BUCKET", "map:stats.column names one column at a time"),
    ("map:calls.unit[0]=calls", "map:calls.unit takes no index list"),
])
def test_a_bad_print_term_is_refused_before_the_run(built: Path, monkeypatch: pytest.MonkeyPatch,
                                                     terms: str, message: str) -> None:
    monkeypatch.chdir(built)
    status, out, err = run_record("-e", f"{EVENT},{terms}/", "--", "./varswork", "1")
    assert status == 1
    assert message in err and "EB1" in err, err


def test_a_linear_term_makes_a_linear_histogram(built: Path, root_kernel: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(built)
    status, out, err = run_record("--format", "json", "-e", f"{EVENT},map:calls_hist.hist=linear,"
                                  "map:calls_hist.step=10,map:stats.hist=none/", "--", "./varswork", CALLS)
    assert status == 0, err
    hist = next(line for line in _json(out) if line.get("histogram") == "calls_hist")
    assert hist["slots"] == "linear"
    assert hist["buckets"] == [[0, 9, 1], [10, 19, 2], [20, 29, 4], [30, 39, 8], [40, 49, 16], [50, 59, 32],
                               [60, 69, 37]]


class _FailingPrinter:
    """A printer whose maps cannot be read."""

    def __bool__(self) -> bool:
        return True

    def json(self, *, reset: bool, at: str) -> str:
        raise KernelError(OBJECT, "map 'hists': BPF_MAP_LOOKUP_ELEM failed", errno=9)

    def text(self, *, reset: bool, stamp: bool = False) -> str:
        raise AssertionError("json was asked for")


def test_an_interval_that_cannot_read_a_map_fails_the_run_after_it() -> None:
    written: list[bytes] = []
    with pytest.raises(KernelError, match="BPF_MAP_LOOKUP_ELEM failed"):
        with every_interval(_FailingPrinter(), 0.01, written.append, True):  # type: ignore[arg-type]
            time.sleep(0.1)  # several intervals: the first failure ends the printing
    assert written == []


def test_an_interval_with_nothing_to_print_is_said(built: Path, root_kernel: None,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(built)
    status, out, err = run_record("--interval", "1", "--dump-maps=stats", "-e", f"{EVENT}/", "--", "./varswork", "4")
    assert status == 0, err
    assert "warning: --interval prints nothing: --dump-maps prints the maps once, at exit" in err
    assert out.startswith("stats[0] = ")  # no interval stamp: the dump only
