"""Value classes (``evspec.span.Slotted``) whose ``__init__`` is generated from their annotated
fields: defaults, factories, field options, the rules the metaclass enforces, and that nothing is
compiled before the first instance."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from evspec.span import Slotted, Span, replace, value_field


class Point(Slotted):
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


class Bag(Slotted, frozen=False):
    name: str
    items: list[int] = value_field(default_factory=list)
    note: str = value_field(default="", compare=False, repr=False)


class Keyed(Slotted):
    key: str
    table: dict[str, int] = value_field(hash=False)


class Identity(Slotted, frozen=False, eq=False):
    value: int


class Checked(Slotted):
    low: int
    high: int

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError("low > high")


def test_nothing_is_compiled_before_the_first_instance() -> None:
    class Late(Slotted):
        a: int
        b: str = "b"

    first = Late.__init__
    assert first.__name__ == "_first_init"
    late = Late(1)
    assert Late.__init__ is not first and Late.__init__.__qualname__.endswith("Late.__init__")
    assert (late.a, late.b) == (1, "b")
    assert Late(2, b="c").b == "c"


def test_defaults_keywords_and_a_missing_argument() -> None:
    assert Point(1) == Point(x=1, y=0, tags=())
    assert Point(1, 2).y == 2
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=3)  # type: ignore[call-arg]


def test_a_factory_makes_a_new_value_for_each_instance() -> None:
    a, b = Bag("a"), Bag("b")
    a.items.append(1)
    assert b.items == [] and a.items == [1]
    assert Bag("c", [5]).items == [5]


def test_field_options_leave_fields_out_of_equality_hash_and_repr() -> None:
    assert Bag("a", note="x") == Bag("a", note="y")
    assert "note" not in repr(Bag("a", note="x")) and repr(Bag("a")) == "Bag(name='a', items=[])"
    one, two = Keyed("k", {"a": 1}), Keyed("k", {"a": 2})
    assert one != two and hash(one) == hash(two)  # a dict is compared, not hashed


def test_frozen_by_default_and_mutable_when_asked() -> None:
    p = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.x  # type: ignore[misc]
    bag = Bag("a")
    bag.name = "b"
    assert bag.name == "b"
    with pytest.raises(TypeError, match="unhashable"):
        hash(bag)


def test_eq_false_compares_identity() -> None:
    a = Identity(1)
    assert a != Identity(1) and a == a and hash(a) == object.__hash__(a)


def test_post_init_runs_after_the_fields_are_set() -> None:
    assert Checked(1, 2).high == 2
    with pytest.raises(ValueError, match="low > high"):
        Checked(3, 2)


def test_what_dataclasses_and_pickle_see() -> None:
    fields = {f.name: f for f in dataclasses.fields(Bag)}
    assert list(fields) == ["name", "items", "note"]
    assert fields["items"].default_factory is list and fields["note"].default == ""
    assert not fields["note"].compare and not fields["note"].repr
    assert dataclasses.is_dataclass(Point) and dataclasses.asdict(Point(1, 2)) == {"x": 1, "y": 2, "tags": ()}
    assert dataclasses.replace(Point(1), y=5) == Point(1, 5) == replace(Point(1), y=5)
    p = Point(1, 2, ("t",))
    assert pickle.loads(pickle.dumps(p)) == p and copy.deepcopy(p) == p
    assert Point.__match_args__ == ("x", "y", "tags")
    match p:
        case Point(1, y):
            assert y == 2
        case _:
            pytest.fail("positional match failed")


def test_the_rules_are_enforced_when_the_class_is_made() -> None:
    with pytest.raises(TypeError, match="mutable default"):
        class Shared(Slotted):
            items: list[int] = []  # noqa: RUF012
    with pytest.raises(TypeError, match="without a default follows one with a default"):
        class Order(Slotted):
            a: int = 0
            b: int
    with pytest.raises(TypeError, match="cannot be subclassed"):
        class More(Point):  # type: ignore[misc]
            z: int
    with pytest.raises(TypeError, match="lists its __slots__"):
        class Own(Slotted):
            a: int

            def __init__(self, a: int) -> None:
                object.__setattr__(self, "a", a)


def test_a_written_out_init_keeps_its_checks_and_defaults() -> None:
    with pytest.raises(ValueError, match="invalid span"):
        Span(3, 1)
    assert [f.name for f in dataclasses.fields(Span)] == ["start", "end"]
