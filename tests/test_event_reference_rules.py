"""How a `prog:NAME.event=TEXT` term finds an earlier event (evspec.rules): by its name= term
only (another keyword term with a word value, call-graph=dwarf, is no name), else its text or
its bare name; nothing found is None. And the raw term's number span inside a term list. The
mutants these tests were written to kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

from evspec.parser import analyze, parse
from evspec.rules import event_reference_names, program_event_name


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
