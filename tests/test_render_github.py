"""GitHub Actions workflow commands: properties, messages and the runner's escaping rules."""

from __future__ import annotations

import pytest

from evspec.diagnostics import Source, error, warning
from evspec.render.github import escape_data, escape_property, render_annotation, render_github
from evspec.span import Span


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [("100%", "100%25"), ("a\nb", "a%0Ab"), ("a\r\nb", "a%0D%0Ab"), ("%0A", "%250A"), ("a:b,c", "a:b,c")],
)
def test_escape_data(raw: str, escaped: str) -> None:
    assert escape_data(raw) == escaped


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [("a:b,c", "a%3Ab%2Cc"), ("50%,\n", "50%25%2C%0A"), ("dir/ev ents.txt", "dir/ev ents.txt")],
)
def test_escape_property(raw: str, escaped: str) -> None:
    assert escape_property(raw) == escaped


def test_file_source_has_file_line_and_columns() -> None:
    diag = error("ES012", "modifier 'u' repeated", Span(8, 9), event="cycles:uu",
                 source=Source("file", path="ci/events.txt", line=3))
    assert render_annotation(diag) == (
        "::error file=ci/events.txt,line=3,col=9,endColumn=10,title=ES012::modifier 'u' repeated\n"
    )


def test_property_values_are_escaped() -> None:
    diag = warning("WS001", "50% done", Span(0, 0), event="x", source=Source("file", path="a,b:c.txt", line=1))
    assert render_annotation(diag) == (
        "::warning file=a%2Cb%3Ac.txt,line=1,col=1,endColumn=1,title=WS001::50%25 done\n"
    )


def test_arg_source_names_the_argument_in_the_message() -> None:
    diag = error("EM001", "unknown event 'bogus'", Span(10, 15), help=("see perf list",),
                 notes=("one\ntwo",), event="cpu-clock,bogus", source=Source("arg", 0))
    line = render_annotation(diag)
    assert line == (
        "::error title=EM001::-e #1: unknown event 'bogus'%0Ain 'cpu-clock,bogus' at col 11"
        "%0Ahelp: see perf list%0Anote: one%0Atwo\n"
    )
    assert "file=" not in line and "line=" not in line


def test_no_source_gives_a_bare_message() -> None:
    assert render_annotation(error("ES001", "x", Span(0, 1), event="x")) == "::error title=ES001::x\n"


def test_one_command_per_diagnostic_and_one_line_each() -> None:
    diags = [error("ES001", "a\nb", Span(0, 1), event="x"), warning("WS001", "c", Span(0, 1), event="y")]
    out = render_github(diags)
    assert out.splitlines() == ["::error title=ES001::a%0Ab", "::warning title=WS001::c"]
    assert render_github([]) == ""
