"""A hand-written ``evspec.span.Slotted`` class held to the dataclass it stands for (its twin):
fields, repr, equality, hashing, asdict, replace, pickling, copying and frozen-ness alike."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable

import pytest

from evspec.span import Slotted


def body(text: str) -> str:
    """A repr without its class name."""
    return text[text.index("("):]


def described(cls: type) -> list[tuple[object, ...]]:
    """What ``dataclasses.fields`` says of each field; a field with a default factory shows None
    (a record's ``__init__`` takes None for a new empty one), a callable default its result."""
    out = []
    for f in dataclasses.fields(cls):
        default = f.default
        if f.default_factory is not dataclasses.MISSING:
            default = None
        elif callable(default):
            default = default()
        out.append((f.name, default, f.init, f.repr, f.compare, f.hash, f.kw_only))
    return out


def assert_like_twin(record: type, twin: type, args: tuple[object, ...], other: tuple[object, ...],
                     *, more: Callable[[object, object], None] | None = None) -> None:
    """``record`` behaves as ``twin`` for instances of ``args`` and ``other`` (which differ in a
    compared field); ``more(a, c)`` checks what the caller adds, before fields are changed."""
    assert issubclass(record, Slotted) and dataclasses.is_dataclass(record)
    assert described(record) == described(twin)
    assert record.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]
    a, b, c = record(*args), record(*args), record(*other)
    ta, tc = twin(*args), twin(*other)
    assert body(repr(a)) == body(repr(ta)) and body(repr(c)) == body(repr(tc))
    assert (a == b, a == c, a != c) == (True, False, True) == (ta == twin(*args), ta == tc, ta != tc)
    assert a != ta and a.__eq__(ta) is NotImplemented
    assert dataclasses.asdict(a) == dataclasses.asdict(ta)
    assert dataclasses.replace(c, **{f.name: getattr(a, f.name) for f in dataclasses.fields(a)}) == a
    for clone in (pickle.loads(pickle.dumps(a)), copy.copy(a), copy.deepcopy(a)):
        assert clone == a and body(repr(clone)) == body(repr(a))
    assert not hasattr(a, "__dict__")
    if more is not None:
        more(a, c)
    name = dataclasses.fields(record)[0].name
    if twin.__hash__ is None:  # a mutable dataclass: unhashable, fields can be set
        assert record.__hash__ is None
        for f in dataclasses.fields(record):
            setattr(a, f.name, getattr(c, f.name))
        assert a == c
        return
    assert hash(a) == hash(b) == hash(ta)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field"):
        setattr(a, name, getattr(c, name))
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field"):
        delattr(a, name)
