"""AST nodes behave like frozen slotted dataclasses whose spans are compare=False, repr=False."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from evspec import ast
from evspec.ast import (
    BpfEvent,
    Group,
    MapTerm,
    Modifiers,
    Number,
    SymbolEvent,
    SymbolKind,
    Term,
    TermKind,
    Word,
)
from evspec.parser import parse
from evspec.span import Span

EVERY_NODE = ("cycles:u,L1-dcache-loads,r1a,4:0x10/period=3/,mem:0x1000/8:rw:u,sched:sched_switch,"
              "cpu/event=0x3c,@cfg=1,r0x1/,tsc,g{instructions,./x.o/map:m.value[0,3...6]=1,map:n.event[all]=tsc,"
              "prog:p.event=tsc,var:v='a b'/}:S")
NODE_CLASSES = [c for c in vars(ast).values()
                if isinstance(c, type) and issubclass(c, ast._Node) and c is not ast._Node]


def _nodes(node: object) -> list[object]:
    out = [node]
    for f in dataclasses.fields(node):  # type: ignore[arg-type]
        value = getattr(node, f.name)
        for child in value if isinstance(value, tuple) else (value,):
            if dataclasses.is_dataclass(child) and not isinstance(child, Span):
                out.extend(_nodes(child))
    return out


def all_nodes() -> list[object]:
    return _nodes(parse(EVERY_NODE))


def test_the_sample_string_has_every_kind_of_node() -> None:
    assert {type(n) for n in all_nodes()} == set(NODE_CLASSES)


def test_spans_are_not_part_of_equality_hash_or_repr() -> None:
    a = Number(16, "0x10", Span(0, 4))
    b = Number(16, "0x10", Span(7, 11))
    assert a == b and hash(a) == hash(b) and repr(a) == repr(b) == "Number(value=16, text='0x10')"
    assert a != Number(16, "16", Span(0, 4))
    assert a != Word("0x10") and Word("x") != "x"
    assert parse("cycles:u") == parse("  cycles:u ") and hash(parse("cycles:u")) == hash(parse("cycles:u "))


def test_equality_and_hash_match_the_dataclass_definition() -> None:
    for node in all_nodes():
        compared = tuple(getattr(node, f.name) for f in dataclasses.fields(node) if f.compare)  # type: ignore[arg-type]
        assert hash(node) == hash(compared)
        assert node == dataclasses.replace(node)  # type: ignore[type-var]
        assert {f.name for f in dataclasses.fields(node) if not f.compare} == {  # type: ignore[arg-type]
            f.name for f in dataclasses.fields(node)  # type: ignore[arg-type]
            if f.name in ("span", "source") or f.name.endswith(("_span", "_spans"))
        }


def test_nodes_are_frozen() -> None:
    node = Term(TermKind.USER, "k", None, Span(0, 1), Span(0, 1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.key = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del node.key  # type: ignore[misc]
    with pytest.raises(AttributeError):
        node.other = 1  # type: ignore[attr-defined]
    assert not hasattr(node, "__dict__")


def test_dataclasses_functions_work() -> None:
    event = parse("./x.o/map:m.value[0]=1/").items[0]
    assert isinstance(event, BpfEvent) and dataclasses.is_dataclass(event)
    moved = dataclasses.replace(event, span=Span(8, 15), path_span=Span(8, 13))
    assert moved == event and moved.span == Span(8, 15) and moved.path_span == Span(8, 13)
    assert [f.name for f in dataclasses.fields(MapTerm)] == [
        "map_name", "option", "indices", "value", "span", "key_span", "name_span", "option_span"]
    data = dataclasses.asdict(Modifiers("u", Span(7, 8)))
    assert data == {"letters": "u", "span": {"start": 7, "end": 8}}
    assert dataclasses.fields(Word)[1].default is False and dataclasses.fields(Word)[2].default == Span(0, 0)
    assert dataclasses.fields(Number)[0].default is dataclasses.MISSING


def test_keywords_defaults_and_match_args() -> None:
    word = Word(text="x")
    assert (word.quoted, word.span) == (False, Span(0, 0))
    group = Group(name=None, events=(), modifiers=None, span=Span(0, 2))
    assert group.name_span is None
    match SymbolEvent(SymbolKind.HARDWARE, "cycles", None, None, Span(0, 6), Span(0, 6)):
        case SymbolEvent(kind, name):
            assert (kind, name) == (SymbolKind.HARDWARE, "cycles")
        case _:
            pytest.fail("positional pattern did not match")


def test_pickle_and_copy_keep_spans() -> None:
    events = parse(EVERY_NODE)
    for clone in (pickle.loads(pickle.dumps(events)), copy.deepcopy(events), copy.copy(events)):
        assert clone == events
        assert [getattr(n, "span", None) for n in _nodes(clone)] == [getattr(n, "span", None) for n in _nodes(events)]
        assert clone.source == events.source


def test_a_node_class_must_annotate_its_slots() -> None:
    with pytest.raises(TypeError, match="annotate exactly"):
        class Broken(ast._Node):
            __slots__ = ("a", "span")
            a: int


def test_fields_are_made_per_class_on_first_use() -> None:
    class Probe(ast._Node):
        __slots__ = ("x", "span")
        x: int
        span: Span

        def __init__(self, x: int, span: Span = Span(0, 0)) -> None:  # noqa: B008
            ast._set(self, "x", x)
            ast._set(self, "span", span)

    assert dataclasses.fields(ast._Node) == ()  # asking the base first must not hide a node's fields
    assert [(f.name, f.compare, f.default) for f in dataclasses.fields(Probe)] == [
        ("x", True, dataclasses.MISSING), ("span", False, Span(0, 0))]
    assert "__dataclass_fields__" in vars(Probe) and dataclasses.replace(Probe(1), x=2) == Probe(2)
