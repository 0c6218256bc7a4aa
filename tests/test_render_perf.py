"""perf 6.1's error layout.

The literal expected outputs below were captured from /usr/bin/perf 6.1 (``perf stat -e …`` and
``perf record -e …``, stderr) unless a comment says they are computed from the spec's §7.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from evspec.diagnostics import Diagnostic, Source, error, warning
from evspec.render.perf import (
    BPF_MAP_HINT,
    perf_error_block,
    perf_help_of,
    render_perf,
    window,
)
from evspec.span import Span

RUN = "Run 'perf list' for a list of valid events\n"
LONG_LIST = (
    "cpu-clock,task-clock,page-faults,minor-faults,major-faults,dummy,cs,bogus,"
    "cpu-clock,task-clock,page-faults,minor-faults,major-faults"
)
FIVE = "cpu-clock,task-clock,page-faults,minor-faults,major-faults"


def caret(spaces: int, message: str) -> str:
    return " " * spaces + "\\___ " + message + "\n"


def lines(block: str) -> list[str]:
    return block.split("\n")


# --- the §7 examples -------------------------------------------------------------------------


def test_window_keeps_13_characters_before_the_error() -> None:
    block = perf_error_block("cpu-clock,task-clock,xyz", 21, "parser error", None)
    assert block == "event syntax error: '..task-clock,xyz'\n" + caret(34, "parser error")


def test_long_list_with_error_at_0_shows_56_characters_and_dots() -> None:
    event = "xyz," + "cpu-clock," * 13  # 134 characters
    first = lines(perf_error_block(event, 0, "parser error", None))[0]
    shown = first.removeprefix("event syntax error: '").removesuffix("'")
    assert shown == event[:56] + ".."
    assert first == "event syntax error: 'xyz,cpu-clock,cpu-clock,cpu-clock,cpu-clock,cpu-clock,cp..'"


def test_long_list_with_error_in_the_middle() -> None:
    block = perf_error_block(LONG_LIST, LONG_LIST.index("bogus"), "parser error", None)
    assert block == (
        "event syntax error: '..s,dummy,cs,bogus,cpu-clock,task-clock,page-faults,mino..'\n"
        + caret(34, "parser error")
    )


# --- windowing edge cases --------------------------------------------------------------------


def test_error_at_0_has_no_cut() -> None:
    assert perf_error_block("xyz", 0, "parser error", None) == (
        "event syntax error: 'xyz'\n" + caret(21, "parser error")
    )


def test_error_at_13_is_the_last_column_without_cut() -> None:
    event = "0123456789abcdefghij"
    assert window(event.encode(), 13)[1] == 0
    assert perf_error_block(event, 13, "m", None) == (
        f"event syntax error: '{event}'\n" + caret(34, "m")
    )


def test_error_at_14_cuts_one_character_and_marks_it() -> None:
    event = "0123456789abcdefghij"
    assert window(event.encode(), 14) == (b"..3456789abcdefghij", 1)
    # the backslash stays under the error character: column 34 of the caret line
    block = perf_error_block(event, 14, "m", None)
    first, second = lines(block)[:2]
    assert second.index("\\") == first.index("e", 20) == 34


def test_caret_is_under_the_error_character_everywhere() -> None:
    for column in range(len(LONG_LIST)):
        first, second = lines(perf_error_block(LONG_LIST, column, "m", None))[:2]
        assert first[second.index("\\")] == LONG_LIST[column], column


def test_columns_40_matches_perf() -> None:
    # COLUMNS=40 LINES=20 perf stat -e '<five events>,xyz' / -e 'xyz,<five events>'
    tail = FIVE + ",xyz"
    assert perf_error_block(tail, tail.index("xyz"), "parser error", None, columns=40) == (
        "event syntax error: '..jor-faults,xyz'\n" + caret(34, "parser error")
    )
    head = "xyz," + FIVE
    assert perf_error_block(head, 0, "parser error", None, columns=40) == (
        "event syntax error: 'xyz,cpu-clock,ta..'\n" + caret(21, "parser error")
    )


@pytest.mark.parametrize(
    ("columns", "cut_end", "no_cut"),
    # perf 6.1 with COLUMNS=26..22: what it printed for an error at the end / at 0 of a long list
    [(26, "....", "xy.."), (25, "...", "x.."), (24, "..", ".."), (23, ".", "."), (22, "", "")],
)
def test_tiny_terminals_match_perf(columns: int, cut_end: str, no_cut: str) -> None:
    tail = FIVE + ",xyz"
    head = "xyz," + FIVE
    assert window(tail.encode(), tail.index("xyz"), columns)[0] == cut_end.encode()
    assert window(head.encode(), 0, columns)[0] == no_cut.encode()


def test_fewer_than_22_columns_is_refused() -> None:
    # perf 6.1 itself dies with "buffer overflow detected" there
    with pytest.raises(ValueError, match="22 columns"):
        perf_error_block("xyz", 0, "m", None, columns=21)


def test_terminal_width_is_capped_at_1000() -> None:
    event = "xyz," + "cpu-clock," * 120
    capped = perf_error_block(event, 0, "parser error", None, columns=2000)
    assert capped == perf_error_block(event, 0, "parser error", None, columns=1000)
    # perf 6.1 with COLUMNS=2000 printed a 1000-character first line: 978 characters quoted
    assert len(lines(capped)[0]) == 1000
    assert len(lines(perf_error_block(event, 0, "m", None, columns=999))[0]) == 999


def test_column_minus_one_puts_the_backslash_under_the_quote() -> None:
    # perf stat -e 'cpu-clock/call-graph=fp/'
    block = perf_error_block("cpu-clock/call-graph=fp/", -1, "'call-graph' is not usable in 'perf stat'", None)
    assert block == (
        "event syntax error: 'cpu-clock/call-graph=fp/'\n"
        + caret(20, "'call-graph' is not usable in 'perf stat'")
    )
    assert lines(block)[1].index("\\") == lines(block)[0].index("'")


def test_column_below_minus_one_is_refused() -> None:
    with pytest.raises(ValueError):
        perf_error_block("xyz", -2, "m", None)


def test_error_past_the_end() -> None:
    # an end-of-input error one past the last character: nothing is quoted under the backslash
    block = perf_error_block("cycles:", 7, "parser error", None)
    assert block == "event syntax error: 'cycles:'\n" + caret(28, "parser error")


def test_non_ascii_is_windowed_over_utf8_bytes_like_perf() -> None:
    event = "cpu-clock,task-clock,事件"
    # perf's cut and indent count bytes: 事 is 3 bytes, so the error at 件 is byte 24
    block = perf_error_block(event, event.index("件"), "parser error", None)
    assert block == "event syntax error: '..k-clock,事件'\n" + caret(34, "parser error")


def test_a_multibyte_character_cut_in_two_shows_a_replacement_character() -> None:
    event = "事件事件事件a,cycles:q"  # 18 bytes of CJK; the error at 'q' is byte 27, the cut byte 14
    shown = lines(perf_error_block(event, event.index("q"), "m", None))[0]
    # bytes 14-15 become '..', bytes 16-17 are the orphaned tail of the last 件
    assert shown == "event syntax error: '..\ufffd\ufffda,cycles:q'"


# --- help blocks, two errors, order ----------------------------------------------------------


def test_help_block_matches_perf() -> None:
    # perf record -e 'cpu-clock/foo=1/'
    help_text = (
        "valid terms: config,config1,config2,name,period,freq,branch_type,time,call-graph,stack-size,"
        "no-inherit,inherit,max-stack,nr,no-overwrite,overwrite,driver-config,percore,aux-output,"
        "aux-sample-size,metric-id"
    )
    diag = error("EM010", "unknown term 'foo'", Span(10, 13), perf_message="unknown term",
                 help=(help_text,), event="cpu-clock/foo=1/")
    assert render_perf([diag]) == (
        "event syntax error: 'cpu-clock/foo=1/'\n"
        + caret(31, "unknown term")
        + "\n" + help_text + "\n"
        + RUN
    )


def software_term(name: str, start: int) -> Diagnostic:
    return error("EM010", f"unknown term '{name}' for PMU 'software'", Span(start, start + 3),
                 perf_message=f"unknown term '{name}' for pmu 'software'",
                 help=("valid terms: config,config1,config2,name,period,percore,metric-id",),
                 event="software/foo=1,bar=2,baz=3/")


def test_two_errors_print_the_last_first_and_the_first_as_initial_error() -> None:
    first, middle, last = software_term("foo", 9), software_term("bar", 15), software_term("baz", 21)
    out = render_perf([first, middle, last])
    help_line = "\nvalid terms: config,config1,config2,name,period,percore,metric-id\n"
    assert out == (
        "event syntax error: '..oo=1,bar=2,baz=3/'\n"
        + caret(34, "unknown term 'baz' for pmu 'software'")
        + help_line
        + "\nInitial error:\n"
        + "event syntax error: 'software/foo=1,bar=2,baz=3/'\n"
        + caret(30, "unknown term 'foo' for pmu 'software'")
        + help_line
        + RUN
    )
    assert "'bar'" not in out  # perf keeps only the first and the last error


def test_same_error_twice_matches_perf_layout() -> None:
    # perf stat -e 'software/foo=1/' records the same error twice and prints both
    diag = error("EM010", "unknown term", Span(9, 12), perf_message="unknown term 'foo' for pmu 'software'",
                 help=("valid terms: config,config1,config2,name,period,percore,metric-id",),
                 event="software/foo=1/")
    block = (
        "event syntax error: 'software/foo=1/'\n"
        "                              \\___ unknown term 'foo' for pmu 'software'\n"
        "\n"
        "valid terms: config,config1,config2,name,period,percore,metric-id\n"
    )
    assert render_perf([diag, diag]) == block + "\nInitial error:\n" + block + RUN


def test_without_perf_order_every_error_is_shown_in_order() -> None:
    diags = [software_term("foo", 9), software_term("bar", 15), software_term("baz", 21)]
    out = render_perf(diags, perf_compat_order=False)
    assert "Initial error" not in out
    assert out.index("'foo'") < out.index("'bar'") < out.index("'baz'")
    assert out.endswith(RUN) and out.count(RUN) == 1


def test_one_report_per_event_string() -> None:
    a = error("ES001", "x", Span(0, 1), perf_message="parser error", event="xyz", source=Source("arg", 0))
    b = error("ES001", "y", Span(0, 1), perf_message="parser error", event="abc", source=Source("arg", 1))
    out = render_perf([a, b])
    assert out == (
        "event syntax error: 'xyz'\n" + caret(21, "parser error") + RUN
        + "event syntax error: 'abc'\n" + caret(21, "parser error") + RUN
    )


def test_warnings_have_no_perf_layout() -> None:
    w = warning("WS001", "no effect", Span(10, 11), event="cpu-clock:p")
    assert render_perf([w]) == ""
    assert render_perf([]) == ""


def test_message_and_help_prefer_perf_wording() -> None:
    diag = error("ES012", "modifier 'u' repeated", Span(8, 9), help=("write it once", "see -h"),
                 event="cycles:uu")
    assert perf_help_of(diag) == "write it once\nsee -h"
    assert "\\___ modifier 'u' repeated\n\nwrite it once\nsee -h\n" in render_perf([diag])
    perfish = error("ES012", "modifier 'u' repeated", Span(8, 9), help=("write it once",),
                    perf_message="Bad modifier", perf_help="", event="cycles:uu")
    assert "\\___ Bad modifier\n\n\n" in render_perf([perfish])


def test_column_of_overrides_the_span() -> None:
    # perf puts 'Bad modifier' at the modifier token start (7), evspec at the repeated letter (8)
    diag = error("ES012", "modifier 'u' repeated", Span(8, 9), perf_message="Bad modifier", event="cycles:uu")
    assert render_perf([diag], column_of=lambda d: 7) == (
        "event syntax error: 'cycles:uu'\n" + caret(28, "Bad modifier") + RUN
    )


# --- the BPF map-configuration hint and the seed's examples -----------------------------------

HINT_FROM_PERF = (
    "Hint:\tValid config terms:\n"
    "     \tmap:[<arraymap>].value<indices>=[value]\n"
    "     \tmap:[<eventmap>].event<indices>=[event]\n"
    "\n"
    "     \twhere <indices> is something like [0,3...5] or [all]\n"
    "     \t(add -v to see detail)"
)


def test_bpf_map_hint_is_perfs_text() -> None:
    assert BPF_MAP_HINT == HINT_FROM_PERF
    assert [line.split("\t")[0] for line in BPF_MAP_HINT.split("\n") if line] == ["Hint:"] + ["     "] * 4


def map_error(event: str, start: int, perf_message: str) -> Diagnostic:
    return error("EB030", "map term error", Span(start, start + 3), perf_message=perf_message,
                 perf_help=BPF_MAP_HINT, event=event)


def test_bpf_event_not_found_matches_perf() -> None:
    # perf record -e './test_bpf_map_2.o/map:pmu_map.event=evt/' (6.1): caret at term start + 4
    event = "./test_bpf_map_2.o/map:pmu_map.event=evt/"
    diag = map_error(event, 37, "Event not found for map setting")
    assert render_perf([diag], column_of=lambda d: event.index("pmu_map")) == (
        "event syntax error: '..ap_2.o/map:pmu_map.event=evt/'\n"
        + caret(34, "Event not found for map setting")
        + "\n" + HINT_FROM_PERF + "\n"
        + RUN
    )


def test_seed_bpf_examples() -> None:
    # the seed's 2016 transcript printed '..ps:pmu_map.event=evt/' (4.6 columns); 6.1 puts the
    # caret at the map name (term start + 4), so the window is computed from §7 with column 23
    evt = "./test_bpf_map_2.c/map:pmu_map.event=evt/"
    out = render_perf([map_error(evt, 37, "Event not found for map setting")], column_of=lambda d: 23)
    assert lines(out)[0] == "event syntax error: '..ap_2.c/map:pmu_map.event=evt/'"
    # the value-type error sits at the value itself: the seed and perf 6.1 agree
    num = "./test_bpf_map_2.c/map:pmu_map.event=123/"
    out = render_perf([map_error(num, 37, "Incorrect value type for map")])
    assert lines(out)[:2] == ["event syntax error: '.._map.event=123/'", caret(34, "Incorrect value type for map")[:-1]]


# --- differential: the same strings through perf 6.1 itself ----------------------------------

PERF_STAT_CASES = [
    # (event string, perf's column, perf's message, terminal columns)
    ("cpu-clock,task-clock,xyz", 21, "parser error", 80),
    ("cycles:uu", 7, "Bad modifier", 80),
    (LONG_LIST, LONG_LIST.index("bogus"), "parser error", 80),
    ("xyz," + FIVE, 0, "parser error", 40),
    (FIVE + ",xyz", len(FIVE) + 1, "parser error", 40),
    (FIVE + ",xyz", len(FIVE) + 1, "parser error", 26),
    ("xyz," + FIVE, 0, "parser error", 22),
    ("xyz," + "cpu-clock," * 120, 0, "parser error", 2000),
    ("cpu-clock/call-graph=fp/", -1, "'call-graph' is not usable in 'perf stat'", 80),
]


def perf_stderr(perf: str, args: list[str], columns: int, cwd: str | None = None) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "25"}
    proc = subprocess.run([perf, *args], capture_output=True, text=True, env=env, cwd=cwd)
    return proc.stderr[: proc.stderr.index(RUN) + len(RUN)]


@pytest.mark.perf
@pytest.mark.parametrize(("event", "column", "message", "columns"), PERF_STAT_CASES)
def test_layout_equals_perf_stat(perf_binary: str, event: str, column: int, message: str, columns: int) -> None:
    diag = error("ES001", "x", Span(0, 0), perf_message=message, event=event)
    ours = render_perf([diag], columns=columns, column_of=lambda d: column)
    assert ours == perf_stderr(perf_binary, ["stat", "-e", event, "true"], columns)


@pytest.mark.perf
def test_two_errors_equal_perf_stat(perf_binary: str) -> None:
    diag = error("EM010", "x", Span(9, 12), perf_message="unknown term 'foo' for pmu 'software'",
                 help=("valid terms: config,config1,config2,name,period,percore,metric-id",),
                 event="software/foo=1/")
    ours = render_perf([diag, diag])
    assert ours == perf_stderr(perf_binary, ["stat", "-e", "software/foo=1/", "true"], 80)


@pytest.mark.perf
@pytest.mark.parametrize(
    ("event", "column", "message"),
    [
        ("./maps.o/map:nosuch.value=1/", 13, "Target map doesn't exist"),
        ("./maps.o/map:arr.value=evt/", 23, "Incorrect value type for map"),
        ("./test_bpf_map.o/map:channel.event=evt/", 21, "Event not found for map setting"),
    ],
)
def test_bpf_map_errors_equal_perf_record(
    perf_binary: str, bpf_fixtures: object, root_kernel: None, event: str, column: int, message: str
) -> None:
    # perf loads the object's programs and resolves their tracepoints before it applies map terms
    if not os.path.isdir("/sys/kernel/tracing/events"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
    diag = map_error(event, column, message)
    ours = render_perf([diag], column_of=lambda d: column)
    theirs = perf_stderr(perf_binary, ["record", "-o", "/dev/null", "-e", event, "true"], 80, str(bpf_fixtures))
    assert ours == theirs
