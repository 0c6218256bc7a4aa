"""The AST builder's spans of numeric and breakpoint events: each event's span runs from its
first character to its last, modifiers included, wherever it is in the list (diagnostics put
their carets there). The mutants these tests were written to kill are listed in
tools/mutation/pins.toml."""

from __future__ import annotations

import pytest

from evspec.parser import parse


@pytest.mark.parametrize(("text", "spans"), [
    ("1:0", [(0, 3)]),
    ("1:0:u", [(0, 5)]),
    ("cycles,1:2:u,mem:0x10", [(0, 6), (7, 12), (13, 21)]),
    ("mem:0x1000:rw", [(0, 13)]),
    ("mem:0x1000/8:x:u", [(0, 16)]),
    ("instructions,mem:0x1000/4", [(0, 12), (13, 25)]),
])  # fmt: skip
def test_numeric_and_breakpoint_events_span_their_whole_text(text: str, spans: list[tuple[int, int]]) -> None:
    items = parse(text).items
    assert [(i.span.start, i.span.end) for i in items] == spans
    assert [text[s:e] for s, e in spans] == text.split(",")


def test_a_driver_terms_value_starts_after_its_equals_sign() -> None:
    term = parse("cpu/@cfg=val/").items[0].terms.items[0]
    assert (term.key, term.value.text, term.value.span.start, term.value.span.end) == ("cfg", "val", 9, 12)


@pytest.mark.parametrize(("text", "letters"), [("1:0:u", "u"), ("4:0x1a:ku", "ku"), ("1:0", "")])
def test_a_numeric_events_modifiers_follow_its_second_colon(text: str, letters: str) -> None:
    event = parse(text).items[0]
    assert (event.modifiers.letters if event.modifiers else "") == letters
