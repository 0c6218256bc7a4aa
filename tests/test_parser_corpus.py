"""Every row of the acceptance corpus: the SYNTAX verdict and the round trip through the printer.

Rows are parametrized by their string (so a failure names it); ``test_rows_are_the_fixture_rows``
ties the parametrization to the ``corpus`` fixture.
"""

from __future__ import annotations

from typing import Any

import pytest
from corpus_files import read_corpus

from evspec.diagnostics import EvspecError, Severity
from evspec.parser import analyze, parse
from evspec.printer import print_events


def _rows() -> list[tuple[int, str, str]]:
    return [(r.line, r.string, r.syntax) for r in read_corpus()]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "row" in metafunc.fixturenames:
        rows = _rows()
        metafunc.parametrize("row", rows, ids=[f"L{n}:{s!r}" for n, s, _ in rows])
    if "ok_string" in metafunc.fixturenames:
        oks = [s for _, s, syntax in _rows() if syntax == "ok"]
        metafunc.parametrize("ok_string", oks, ids=[repr(s) for s in oks])


def _verdict(field: str) -> tuple[str, int | None, int | None]:
    if field == "ok":
        return ("ok", None, None)
    start, end = field.split(":", 1)[0].removeprefix("error@").split("-")
    return ("error", int(start), int(end))


def test_rows_are_the_fixture_rows(corpus: list[Any]) -> None:
    assert [(r.line, r.string, r.syntax) for r in corpus] == _rows()
    assert len(corpus) == 377


def test_syntax_verdict(row: tuple[int, str, str]) -> None:
    _, string, syntax = row
    result = analyze(string)
    errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
    kind, start, end = _verdict(syntax)
    if kind == "ok":
        assert errors == [], f"expected ok, got {errors[0].code} {errors[0].message} at {errors[0].span}"
        assert result.ok
    else:
        assert errors, f"expected an error at {start}-{end}, got ok"
        first = errors[0]
        assert (first.span.start, first.span.end) == (start, end), f"{first.code}: {first.message}"
        assert result.diagnostics[0] is first, "an error must not come after a warning of a later item"
    for diag in result.diagnostics:
        assert 0 <= diag.span.start <= diag.span.end <= len(string)


def test_ok_strings_print_and_reparse_equal(ok_string: str) -> None:
    ast = parse(ok_string)
    text = print_events(ast)
    again = parse(text)
    assert again == ast
    assert print_events(again) == text, "canonical output must be a fixed point"


def test_error_strings_raise_from_parse() -> None:
    with pytest.raises(EvspecError) as info:
        parse("cycles,,instructions")
    assert info.value.diagnostics[0].code == "ES001"
