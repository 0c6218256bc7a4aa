"""How a `prog:NAME.event=TEXT` term finds an earlier event (evspec.references): by its name= term
only (another keyword term with a word value, call-graph=dwarf, is no name), else its text or
its bare name; nothing found is None. And the raw term's number span inside a term list. The
mutants these tests were written to kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

import pytest

from evspec.parser import analyze, parse
from evspec.references import (
    add_reference_names,
    event_reference_names,
    program_event_name,
    program_event_reference,
)


def _events(*texts: str) -> list[tuple[object, str]]:
    return [(parse(t).items[0], t) for t in texts]


def test_only_a_name_term_names_an_event() -> None:
    text = "cpu-clock/call-graph=dwarf/"
    assert event_reference_names(parse(text).items[0], text) == (text, "\0cpu-clock")
    text = "cpu-clock/call-graph=dwarf,name=tick/"
    assert event_reference_names(parse(text).items[0], text) == ("tick", "\0cpu-clock")


def test_a_program_event_is_found_by_name_text_or_bare_name_or_not_at_all() -> None:
    earlier = _events("cpu-clock/call-graph=dwarf,name=tick/", "cycles:u")
    assert program_event_name("tick", earlier) == "tick"
    assert program_event_name("cycles", earlier) == "cycles:u"
    assert program_event_name("dwarf", earlier) is None
    assert program_event_name("nosuch", earlier) is None


def test_a_raw_terms_number_spans_its_hex_digits() -> None:
    term = parse("cpu/r1a/").items[0].terms.items[0]
    assert (term.value.span.start, term.value.span.end) == (5, 7)


def test_a_string_term_given_a_number_says_what_it_takes() -> None:
    """ES035's help names the values call-graph and branch_type take, and shows another
    string term's forms."""
    helps = {text: [d.help for d in analyze(text).diagnostics] for text in
             ("cpu-clock/call-graph=1/", "cpu-clock/branch_type=7/", "cpu-clock/name=5/")}
    assert helps["cpu-clock/call-graph=1/"] == [("call-graph is fp, dwarf, lbr or no",)]
    assert helps["cpu-clock/branch_type=7/"][0][0].startswith("branch_type is no or one of: u, k, hv, any,")
    assert helps["cpu-clock/name=5/"] == [("for example name=foo, or quoted: name='a:b'",)]


def test_two_earlier_events_of_one_bare_name_are_no_reference() -> None:
    """A bare name two earlier events share is ambiguous: no event is found (and why is said)."""
    earlier = _events("cycles:u", "cycles:k")
    assert program_event_name("cycles", earlier) is None
    names: set[str] = set()
    for event, text in earlier:
        add_reference_names(names, event_reference_names(event, text))
    with pytest.raises(ValueError, match="cycles"):
        program_event_reference("cycles", names)


def _codes(text: str) -> list[tuple[str, str, int, int]]:
    return [(d.code, d.message, d.span.start, d.span.end) for d in analyze(text).diagnostics]


def test_bool_and_bounded_terms_take_their_limits() -> None:
    """A 0/1 term takes 1 and not 2; a bounded term takes its maximum and not one more."""
    assert _codes("cpu-clock/time=1/") == []
    assert _codes("cpu-clock/time=2/") == [("ES036", "'time' expects 0 or 1", 15, 16)]
    assert _codes("cpu-clock/aux-sample-size=0xFFFFFFFF/") == []
    assert _codes("cpu-clock/aux-sample-size=0x100000000/")[0][:2] == ("ES037", "aux-sample-size too big (max 4294967295)")


def test_terms_after_a_driver_term_are_still_checked_and_the_first_name_wins() -> None:
    """Each term is checked after one the event kind refuses; of two name= terms the first is
    used (WS002 on the second), of other repeated terms the last."""
    found = _codes("cpu-clock/@cfg=1,name=a,name=b,period=1,period=2/")
    assert [c[0] for c in found] == ["ES032", "WS002", "WS002"]
    assert found[1][1:] == ("term 'name' given twice; the first value is used", 24, 28)
    assert found[2][1:] == ("term 'period' given twice; the last value is used", 40, 46)


def test_an_empty_program_name_is_refused() -> None:
    assert _codes("./a.o/prog:.event=x/")[0][:2] == ("ES048", "empty program name")
