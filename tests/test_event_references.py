"""Which earlier event a prog:NAME.event= or map:NAME.event= term names (COMPAT 1.7 and 1.14,
corpus Decision 9): by name= value or literal text; prog: terms also by an event's bare name."""

from __future__ import annotations

import pytest

from evspec.check import check_specs
from evspec.diagnostics import Source
from evspec.inputs import SpecInput
from evspec.parser import parse
from evspec.references import program_event_name


def _findings(*strings: str) -> list[tuple[str, str, str]]:
    inputs = [SpecInput(s, Source("arg", index=i), command=0) for i, s in enumerate(strings)]
    return [(d.code, d.message, s.input.text[d.span.start:d.span.end])
            for s in check_specs(inputs) for d in s.diagnostics]


@pytest.mark.parametrize("strings", [
    ("cpu-clock/freq=99/", "./x.o/prog:on_tick.event=cpu-clock/"),  # COMPAT 1.14's own example
    ("cpu-clock/freq=99/,./x.o/prog:on_tick.event=cpu-clock/",),
    ("cpu-clock:u", "./x.o/prog:on_tick.event=cpu-clock/"),
    ("cpu-clock/freq=99,name=tick/", "./x.o/prog:on_tick.event=cpu-clock/"),
    ("cpu-clock/freq=99,name=tick/", "./x.o/prog:on_tick.event=tick/"),
    ("cpu-clock", "cpu-clock/freq=9/", "./x.o/prog:on_tick.event=cpu-clock/"),  # the literal text wins
    ("L1-dcache-loads/period=1000/", "./x.o/prog:p.event=L1-dcache-loads/"),
])
def test_a_prog_term_finds_an_earlier_event_by_its_bare_name(strings: tuple[str, ...]) -> None:
    assert _findings(*strings) == []


def test_a_bare_name_two_earlier_events_share_is_ambiguous() -> None:
    assert _findings("cpu-clock/freq=99/", "cpu-clock/freq=9/", "./x.o/prog:on_tick.event=cpu-clock/") == [
        ("ES047", "more than one earlier event is a 'cpu-clock' event", "cpu-clock")]


@pytest.mark.parametrize("strings", [
    ("cpu-clock/freq=99/", "./x.o/map:m.event=cpu-clock/"),  # map: terms keep Decision 9: no bare names
    ("./x.o/prog:on_tick.event=cpu-clock/", "cpu-clock/freq=99/"),  # forward references fail
    ("sched:sched_switch", "./x.o/prog:p.event=sched/"),
])
def test_what_no_rule_finds_is_no_earlier_event(strings: tuple[str, ...]) -> None:
    [message] = [m for code, m, _ in _findings(*strings) if code == "ES047"]
    assert message.startswith("no earlier event named")


@pytest.mark.parametrize(("earlier", "text", "name"), [
    (("cpu-clock/freq=99/",), "cpu-clock", "cpu-clock/freq=99/"),
    (("cpu-clock/freq=99,name=tick/",), "cpu-clock", "tick"),
    (("cpu-clock/freq=99,name=tick/",), "tick", "tick"),
    (("cycles:u", "cpu-clock/freq=1/"), "cycles", "cycles:u"),
    (("cpu-clock/freq=99/", "cpu-clock:k"), "cpu-clock", None),  # ambiguous
    (("cycles",), "cpu-clock", None),
])
def test_the_evsel_name_a_prog_term_resolves_to(earlier: tuple[str, ...], text: str, name: str | None) -> None:
    events = [(event, s) for s in earlier for event in parse(s).events()]
    assert program_event_name(text, events) == name
