"""The human text renderer: layout, caret placement by display width, labels, colour."""

from __future__ import annotations

import re

import pytest

from evspec.diagnostics import Diagnostic, Label, Source, error, warning
from evspec.render.text import (
    DisplayLine,
    describe_source,
    display_char,
    render_diagnostic,
    render_text,
    summary_line,
)
from evspec.span import Span

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def block(diag: Diagnostic) -> list[str]:
    return render_diagnostic(diag).rstrip("\n").split("\n")


def marks_under(diag: Diagnostic) -> tuple[str, str]:
    """The event line and the first mark line, both without the gutter."""
    lines = block(diag)
    event_line, mark_line = lines[3], lines[4]
    return event_line[4:], mark_line[4:]


def test_header_and_location_for_an_argument() -> None:
    diag = error("ES012", "bad modifier: 'u' repeated", Span(8, 9), event="cycles:uu", source=Source("arg", 0))
    assert block(diag) == [
        "error[ES012]: bad modifier: 'u' repeated",
        " --> -e #1, col 9",
        "  |",
        "  | cycles:uu",
        "  |         ^",
    ]


def test_location_for_a_file_line_and_wide_line_numbers() -> None:
    diag = warning("WS001", "no effect", Span(10, 11), event="cpu-clock:p",
                   source=Source("file", path="events.txt", line=123))
    assert block(diag) == [
        "warning[WS001]: no effect",
        "   --> events.txt:123:11",
        "    |",
        "123 | cpu-clock:p",
        "    |           ^",
    ]


def test_location_without_source() -> None:
    diag = error("ES001", "x", Span(2, 3), event="abc")
    assert block(diag)[1] == " --> col 3"


def test_describe_source() -> None:
    assert describe_source(Source("arg", 4)) == "-e #5"
    assert describe_source(Source("file", path="a/b.txt", line=2)) == "a/b.txt:2"
    assert describe_source(None) == ""


def test_carets_cover_the_span_exactly() -> None:
    event = "cpu-clock,bogus,task-clock"
    shown, marks = marks_under(error("EM001", "unknown event", Span(10, 15), event=event))
    assert shown == event
    assert marks == " " * 10 + "^^^^^"


def test_zero_width_span_at_end_gets_one_caret_after_the_last_character() -> None:
    shown, marks = marks_under(error("ES002", "expected a modifier", Span(7, 7), event="cycles:"))
    assert marks == " " * 7 + "^"
    assert len(marks) == len(shown) + 1


def test_zero_width_span_inside_marks_the_next_character() -> None:
    _, marks = marks_under(error("ES003", "missing ','", Span(6, 6), event="cyclesinstructions"))
    assert marks == " " * 6 + "^"


def test_span_on_an_empty_event() -> None:
    lines = block(error("ES004", "empty event string", Span(0, 0), event=""))
    assert lines[3:] == ["  |", "  | ^"]


def test_tab_is_escaped_and_the_caret_follows_it() -> None:
    event = "cycles,\tinstructions:q"
    shown, marks = marks_under(error("ES013", "unknown modifier", Span(21, 22), event=event))
    assert shown == "cycles,\\tinstructions:q"
    assert shown[marks.index("^")] == "q"


def test_wide_characters_take_two_columns() -> None:
    event = "事件,cycles:q"
    shown, marks = marks_under(error("ES013", "unknown modifier", Span(10, 11), event=event))
    assert shown == event
    assert marks.index("^") == 2 * 2 + len(",cycles:")
    _, wide = marks_under(error("EM001", "unknown event", Span(0, 2), event=event))
    assert wide == "^^^^"


@pytest.mark.parametrize(
    ("ch", "shown"),
    [
        ("\x00", "\\x00"),
        ("\x1b", "\\x1b"),
        ("\x7f", "\\x7f"),
        ("\r", "\\r"),
        ("\n", "\\n"),
        ("\u200b", "\\u200b"),  # zero-width space: invisible
        ("\u0301", "\\u0301"),  # combining accent: would merge with the previous cell
        ("\u2028", "\\u2028"),  # line separator
        ("\U000e0001", "\\U000e0001"),  # language tag (format character outside the BMP)
        ("é", "é"),
        ("\u00a0", "\u00a0"),
        ("😀", "😀"),
    ],
)
def test_display_char(ch: str, shown: str) -> None:
    assert display_char(ch) == shown


def test_display_columns_mix_escapes_and_wide_characters() -> None:
    line = DisplayLine.of("a\x00事😀b")
    assert line.text == "a\\x00事😀b"
    assert line.columns == (0, 1, 5, 7, 9, 10)
    assert line.cells(2, 4) == (5, 9)
    assert line.cells(5, 5) == (10, 11)
    assert line.cells(9, 12) == (10, 11)  # spans past the end are clamped, never empty


def test_invisible_characters_do_not_shift_the_caret() -> None:
    event = "cyc\u200bles\x00:\u0301q"
    shown, marks = marks_under(error("ES013", "unknown modifier", Span(len(event) - 1, len(event)), event=event))
    assert shown == "cyc\\u200bles\\x00:\\u0301q"
    assert shown[marks.index("^")] == "q"


def test_label_on_the_same_line_with_its_message_at_the_end() -> None:
    diag = error("EB031", "no earlier event named 'evt'", Span(4, 7),
                 labels=(Label(Span(10, 13), "this map"),), event="evt=evt,x=map")
    _, marks = marks_under(diag)
    assert marks == "    ^^^   --- this map"


def test_labels_left_of_the_primary_hang_below() -> None:
    event = "a=evt,b=evt,c=evt"
    diag = error("EM020", "duplicate", Span(14, 17),
                 labels=(Label(Span(2, 5), "first"), Label(Span(8, 11), "second")), event=event)
    lines = [line[4:] for line in block(diag)[4:]]
    assert lines == [
        "  ---   ---   ^^^",
        "  |     |",
        "  |     second",
        "  first",
    ]


def test_overlapping_labels_get_their_own_lines() -> None:
    event = "software/foo=1/"
    diag = error("EM010", "unknown term", Span(9, 12),
                 labels=(Label(Span(0, 15), "this event"), Label(Span(9, 14), "this term")), event=event)
    lines = [line[4:] for line in block(diag)[4:]]
    assert lines == [
        "         ^^^",
        "--------------- this event",
        "         ----- this term",
    ]


def test_label_without_message() -> None:
    diag = error("EM010", "x", Span(0, 1), labels=(Label(Span(3, 5), ""),), event="a, bc")
    assert marks_under(diag)[1] == "^  --"


def test_help_and_notes() -> None:
    diag = error("EM020", "duplicate", Span(0, 1), help=("rename one",),
                 notes=("first line\nsecond line", "another"), event="x")
    assert block(diag)[5:] == [
        "  |",
        "  = help: rename one",
        "  = note: first line",
        "          second line",
        "  = note: another",
    ]


def test_render_text_separates_diagnostics_by_a_blank_line() -> None:
    a = error("ES001", "a", Span(0, 1), event="x")
    b = warning("WS001", "b", Span(0, 1), event="y")
    assert render_text([a, b]) == render_diagnostic(a) + "\n" + render_diagnostic(b) + "\n"
    assert render_text([]) == ""


def test_no_colour_unless_asked() -> None:
    diag = error("EM020", "duplicate", Span(4, 7), labels=(Label(Span(0, 3), "first"),),
                 help=("rename",), event="evt,evt", source=Source("arg", 0))
    plain = render_text([diag])
    coloured = render_text([diag], color=True)
    assert "\x1b" not in plain
    assert "\x1b[1;31merror[EM020]" in coloured
    assert "\x1b[1;31m^^^\x1b[0m" in coloured
    assert "\x1b[1;34m---\x1b[0m" in coloured
    assert ANSI.sub("", coloured) == plain


def test_warning_colour_is_yellow() -> None:
    diag = warning("WS001", "no effect", Span(0, 1), event="x")
    coloured = render_text([diag], color=True)
    assert coloured.startswith("\x1b[1;33mwarning[WS001]")
    assert ANSI.sub("", coloured) == render_text([diag])


@pytest.mark.parametrize(
    ("errors", "warnings", "line"),
    [(0, 0, "0 errors, 0 warnings"), (1, 0, "1 error, 0 warnings"), (2, 1, "2 errors, 1 warning"),
     (1, 3, "1 error, 3 warnings")],
)
def test_summary_line(errors: int, warnings: int, line: str) -> None:
    diags = [error("ES001", "e", Span(0, 0))] * errors + [warning("WS001", "w", Span(0, 0))] * warnings
    assert summary_line(diags) == line


def test_perfs_own_words_close_the_block() -> None:
    """Users search for perf's messages: a diagnostic that has one shows it, after help and notes."""
    diag = error("EB123", "map 'chanel' does not exist in the object", Span(11, 17), event="./a.o/map:chanel.value=1/",
                 help=("did you mean 'channel'?",), perf_message="Target map doesn't exist")
    assert block(diag)[-3:] == [
        "  |",
        "  = help: did you mean 'channel'?",
        "  = perf: Target map doesn't exist",
    ]
    same = error("ES001", "parser error", Span(0, 1), event="x", perf_message="parser error")
    assert not any("= perf:" in line for line in block(same))  # nothing to add when the words are perf's already
    bare = error("EB124", "index 8 is too large", Span(0, 1), event="x", perf_message="Index too large")
    assert block(bare)[-2:] == ["  |", "  = perf: Index too large"]
