"""The canonical printer: identity strings, normalisation, and hand-built ASTs."""

from __future__ import annotations

from pathlib import Path

import pytest

from evspec.ast import (
    AliasEvent,
    AllIndices,
    BpfEvent,
    EventList,
    Group,
    IndexItem,
    IndexList,
    MapTerm,
    Modifiers,
    Number,
    SymbolEvent,
    SymbolKind,
    Term,
    TermKind,
    Terms,
    Word,
)
from evspec.parser import analyze, parse
from evspec.printer import print_event, print_events, print_item, print_term, print_terms, print_value
from evspec.span import Span

IDENTITY = [
    line for line in (Path(__file__).parent / "identity.txt").read_text().splitlines()
    if line and not line.startswith("#")
]
S = Span(0, 0)


@pytest.mark.parametrize("text", IDENTITY, ids=repr)
def test_identity(text: str) -> None:
    result = analyze(text)
    assert result.ok, [d.message for d in result.diagnostics]
    assert print_events(result.events) == text
    assert parse(print_events(result.events)) == result.events


def test_identity_file_has_the_seed_examples() -> None:
    for seed in ("./test_bpf_map.o/map:channel.value[0,1,2,3...5]=101/", "bpf-output/no-inherit,name=evt/",
                 "bpf-output/no-inherit,name=evt/,./a.o/map:channel.event=evt/"):
        assert seed in IDENTITY
    assert len(IDENTITY) >= 36


@pytest.mark.parametrize(("text", "canonical"), [
    ("{ cpu-clock , task-clock }", "{cpu-clock,task-clock}"),
    ("  cycles  ", "cycles"),
    ("cycles , instructions", "cycles,instructions"),
    ("grp {a}", "grp{a}"),
    ("r1a:", "r1a"),
    ("tsc:", "tsc"),
    ("sched:sched_switch:", "sched:sched_switch"),
    ("mem:0/name=x/:u", "mem:0/name=x/u"),
    ("mem:0:rw/name=x/:k", "mem:0:rw/name=x/k"),
    ("r1a/period=1/:u", "r1a/period=1/u"),
    ("1:2/period=1/:k", "1:2/period=1/k"),
    ("sched:sched_switch/nr=1/:u", "sched:sched_switch/nr=1/u"),
    ("./maps.o/map:arr.value[ 0 , 1 ... 3 ]=5/", "./maps.o/map:arr.value[0,1...3]=5/"),
    ("./maps.o/map:arr.value[ all ]=5/", "./maps.o/map:arr.value[all]=5/"),
    ("mem:0x10/4:", "mem:0x10/4"),
])
def test_normalisation(text: str, canonical: str) -> None:
    ast = parse(text)
    assert print_events(ast) == canonical
    assert parse(canonical) == ast


def test_hand_built_asts() -> None:
    mods = Modifiers("u", S)
    assert print_event(BpfEvent("./x.o", False, None, mods, S, S)) == "./x.o//u"
    assert print_event(AliasEvent("tsc", Modifiers("", S), S, S)) == "tsc"
    assert print_event(SymbolEvent(SymbolKind.HARDWARE, "cycles", Terms((), S), mods, S, S)) == "cycles//u"
    group = Group("g", (AliasEvent("a", None, S, S),), mods, S)
    assert print_item(group) == "g{a}:u"
    assert print_events(EventList((group, AliasEvent("b", None, S, S)))) == "g{a}:u,b"


def test_terms_and_values() -> None:
    items = (
        MapTerm("m", "value", IndexList((IndexItem(Number(0, "0", S), Number(3, "0x3", S), S),), S),
                Number(1, "1", S), S, S, S, S),
        MapTerm("m", "event", AllIndices(S), Word("evt"), S, S, S, S),
        MapTerm("m", "value", None, None, S, S, S, S),
        Term(TermKind.RAW, "r0x1a", Number(0x1A, "0x1a", S), S, S),
        Term(TermKind.DRIVER, "cfg", Word("x"), S, S),
        Term(TermKind.DRIVER, "cfg", None, S, S),
        Term(TermKind.KEYWORD, "name", Word("a,b", quoted=True), S, S),
        Term(TermKind.USER, "umask", None, S, S),
    )
    assert print_terms(Terms(items, S)) == (
        "/map:m.value[0...0x3]=1,map:m.event[all]=evt,map:m.value,r0x1a,@cfg=x,@cfg,name='a,b',umask/"
    )
    assert print_terms(Terms((), S)) == "//"
    assert print_term(items[0]) == "map:m.value[0...0x3]=1"
    assert print_value(Number(10, "0xa", S)) == "0xa"
    assert print_value(Word("x", quoted=True)) == "'x'"


def test_not_an_event() -> None:
    with pytest.raises(TypeError):
        print_event(object())  # type: ignore[arg-type]
