"""Cost bounded by the input: parsing and recovery are linear in the length of a string (shown by
counting the parser's work for a string and for the same string doubled, never by timing), one
finding per distinct problem of a string with the count of its repeats, output about a long
string excerpted in every format, and a big events file checked and parsed as a stream."""

from __future__ import annotations

import io
import json
import random
import tracemalloc
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from evspec import parser
from evspec.check import check_specs
from evspec.cli import main
from evspec.cli.app import EXIT_FINDINGS, EXIT_INTERNAL
from evspec.inputs import collect

#: shapes of long strings: the text of n items
SHAPES: dict[str, Callable[[int], str]] = {
    "events": lambda n: ",".join(["cpu-clock"] * n),
    "group": lambda n: "{" + ",".join(["cpu-clock/period=1,name=x/u"] * n) + "}",
    "terms": lambda n: "cpu-clock/" + ",".join(["time"] * n) + "/",
    "bad-chars": lambda n: ",".join(["cycles@"] * n),
    "empty-items": lambda n: "x,," * n,
    "blanks": lambda n: ",".join(["a b"] * n),
    "unclosed-group": lambda n: "{" + ",".join(["cycles"] * n),
    "bad-hex": lambda n: ",".join(["cpu-clock/period=0X10/"] * n),
    "index-lists": lambda n: "./x.o/" + ",".join(f"map:m.value[{i},{i}...{i + 9}]=1" for i in range(n)) + "/",
}


def _work(text: str) -> int:
    """What parsing ``text`` makes the parser handle: tokens and the values of each reduction."""
    machine = parser.machine()
    before = machine.work
    parser.analyze(text)
    return machine.work - before


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_parsing_is_linear_in_the_number_of_items(shape: str) -> None:
    """Doubling the items doubles the work (the lists of the grammar grew by copying: 16k events
    were 3.96 s, quadratic; a bad item made recovery parse the rest of the string again)."""
    make = SHAPES[shape]
    small, large = _work(make(2000)), _work(make(4000))
    assert 1.8 <= large / small <= 2.2, (small, large)


@pytest.mark.parametrize("shape", ["events", "terms", "bad-chars", "empty-items"])
def test_memory_is_linear_in_the_length(shape: str) -> None:
    """The peak memory of checking a string, measured by allocation, doubles with the string."""
    peaks = []
    for n in (4000, 8000):
        text = SHAPES[shape](n)
        tracemalloc.start()
        try:
            check_specs(collect([text], []))
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    assert peaks[1] / peaks[0] <= 2.3, peaks


def test_one_finding_per_distinct_problem_with_its_repeats() -> None:
    """`cpu-clock/time,time,...` of 80 KB: 15,999 identical warnings were 1.29 GB of JSON."""
    text = "cpu-clock/" + ",".join(["time"] * 16000) + ",period=1,period=2,period=3/"
    [checked] = check_specs(collect([text], []))
    assert [(d.code, d.message, len(d.repeats)) for d in checked.diagnostics] == [
        ("WS002", "term 'time' given twice; the last value is used", 15998),
        ("WS002", "term 'period' given twice; the last value is used", 1),
    ]
    first = checked.diagnostics[0]
    assert first.span.start == 15 and [s.start for s in first.repeats[:2]] == [20, 25]


def test_repeated_syntax_errors_are_all_found_and_collapsed() -> None:
    text = ",".join(["cycles@"] * 5000) + ",cpu-clock;"
    [checked] = check_specs(collect([text], []))
    found = [(d.code, d.message, len(d.repeats)) for d in checked.diagnostics]
    assert found == [("ES002", "unexpected character '@'", 4999), ("ES002", "unexpected character ';'", 0)]


FORMATS = ("text", "json", "sarif", "github", "perf")


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_output_about_a_long_string_is_bounded(fmt: str) -> None:
    """The same findings in a string 10 times longer: the same output but for the counts."""
    sizes = []
    for n in (8000, 80000):
        text = "cpu-clock/" + ",".join(["time"] * n) + ",bogus=1/,cycles:uu"
        code, out = _run("check", "--format", fmt, "-e", text)
        assert code == EXIT_FINDINGS
        assert ("time,time,time" in out or fmt == "perf") and len(out) < 20000, len(out)
        sizes.append(len(out))
    assert abs(sizes[1] - sizes[0]) < 40, sizes


def test_a_json_finding_names_its_excerpt() -> None:
    text = "cpu-clock," * 1000 + "cycles:uu"
    code, out = _run("check", "--format", "json", "-e", text)
    [diag] = json.loads(out)["diagnostics"]
    start = diag["excerpt"]["start"]
    assert diag["excerpt"]["length"] == len(text) and text[start:start + len(diag["event"])] == diag["event"]
    span = diag["span"]
    assert diag["event"][span["start"] - start:span["end"] - start] == "u"


def test_a_number_past_pythons_digit_limit_is_a_finding() -> None:
    """int() refuses more than 4,300 digits: that was a ValueError and exit 3."""
    for text in ("cpu-clock/period=" + "9" * 1_000_000 + "/", "1" * 5000 + ":0", "mem:" + "7" * 5000,
                 "cpu-clock/config=" + "0" * 5000 + "1/"):
        code, out = _run("check", "--format", "json", "-e", text)
        diags = json.loads(out)["diagnostics"]
        assert len(out) < 5000 and len(diags) <= 1
        if diags:
            assert code == EXIT_FINDINGS and diags[0]["code"] in ("ES028", "ES029"), diags
        else:
            assert text.startswith("cpu-clock/config=0000")  # leading zeros: the value is 1


def test_a_big_events_file_is_checked_in_constant_memory(tmp_path: Path) -> None:
    """A file of a million lines took 2.2 GB (check) and 10.6 GB (parse) of JSON built whole:
    now the output is written as each line is checked, so the peak does not grow with the file."""
    rng = random.Random(7)
    lines = ("cycles", "cpu-clock:u", "{task-clock,cs}:S", "sched:sched_switch", "bad@", "cycles:uu")
    peaks: dict[str, list[int]] = {"check": [], "parse": []}
    for n in (1000, 3000):
        path = tmp_path / f"{n}.events"
        path.write_text("".join(rng.choice(lines) + "\n" for _ in range(n)))
        for command in peaks:
            sink = _Counting()
            tracemalloc.start()
            try:
                with redirect_stdout(sink), redirect_stderr(sink):
                    assert main([command, "--format", "json", str(path)]) == EXIT_FINDINGS
                peaks[command].append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
            assert sink.size > 100 * n
    for command, (small, large) in peaks.items():
        assert large < small * 1.5, (command, small, large)


class _Counting(io.TextIOBase):
    """A text sink that keeps nothing but the number of characters written."""

    def __init__(self) -> None:
        self.size = 0

    def write(self, text: str) -> int:
        self.size += len(text)
        return len(text)


def test_streamed_json_is_the_document_it_was(tmp_path: Path) -> None:
    path = tmp_path / "a.events"
    path.write_text("cycles:uu\ncpu-clock\n\n# c\na b,\n")
    for command in ("check", "parse"):
        code, out = _run(command, "--format", "json", "-e", "cycles", str(path))
        document = json.loads(out)
        assert code == EXIT_FINDINGS and document["summary"] == {"errors": 3, "warnings": 0}
        assert [d["source"] for d in document["diagnostics"]] == [
            {"kind": "file", "path": str(path), "line": 1}, {"kind": "file", "path": str(path), "line": 5},
            {"kind": "file", "path": str(path), "line": 5}]
        if command == "parse":
            assert [r["event"] for r in document["results"]] == ["cycles", "cycles:uu", "cpu-clock", "a b,"]


def _run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    assert code != EXIT_INTERNAL, err.getvalue()[-3000:]
    return code, out.getvalue() + err.getvalue()


# ---- a fuzz test over long strings: bounded, seeded

FRAGMENTS = ("cycles", "cpu-clock", "sched:sched_switch", "{", "}", ",", "/", ":", "=", "u", "period=1", "'",
             "[", "]", "...", "0x", "9" * 50, "map:m.value", "./x.o", " ", "\t", "#", "@", "с", "\u2028", "\x00",
             "r1g8", "mem:", "msr/tsc/", "name=", "0X10", "ü")


def _fuzz_string(rng: random.Random, size: int) -> str:
    pieces = []
    length = 0
    while length < size:
        piece = rng.choice(FRAGMENTS)
        if rng.random() < 0.02:  # a long run of one fragment
            piece *= rng.randint(100, 5000)
        pieces.append(piece)
        length += len(piece)
    return "".join(pieces)[:size]


def test_fuzzed_strings_up_to_1mb_end_in_findings(tmp_path: Path) -> None:
    """60 seeded strings from 10 bytes to 1 MB, each checked with and without a system, in every
    format: never an internal error, and output that does not grow with the string."""
    from evspec.system.fixtures import corpus_data

    system = tmp_path / "corpus.json"
    system.write_text(json.dumps(corpus_data()))
    rng = random.Random(22)
    sizes = [10 ** rng.uniform(1, 5) for _ in range(54)] + [1_000_000] * 6
    for i, size in enumerate(sizes):
        text = _fuzz_string(rng, int(size))
        fmt = FORMATS[i % len(FORMATS)]
        code, out = _run("check", "--format", fmt, "--system", str(system) if i % 2 else "none", "-e", text)
        assert code in (0, 1)
        count = max(1, out.count("\n"))
        assert len(out) < 4000 * count, (i, len(text), len(out))
