"""Half-open character ranges over an event string, and ``Slotted``: the base of evspec's value
classes on both sides (``Span``, the AST nodes, diagnostics, inputs; the loader's specs and
results). "Record" is not its name: that word means a ring's records, and ``record``.

A value class behaves like a ``@dataclass(frozen=True, slots=True)`` class: keyword construction,
equality and hashing over its compared fields, a dataclass ``repr``, ``FrozenInstanceError`` on
assignment, pickling and copying, and ``dataclasses.fields``, ``replace``, ``asdict`` and
``is_dataclass``. The rule: a value class annotates its fields in order, with defaults written as
in a dataclass (``value_field(...)`` for a factory or a field left out of equality or the repr),
and writes no ``__slots__`` and no ``__init__``: its ``__init__`` is generated the first time an
instance is made, so importing costs no more than a plain class. The ``dataclass`` decorator is not
used because it imports ``inspect`` (with ``ast``, ``dis`` and ``tokenize``) and compiles every
class's methods at import: more than the rest of a cold ``evspec check`` together. A class that
must check its arguments writes its own ``__init__`` (and then its ``__slots__``), as ``Span`` does.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from dataclasses import Field
    from typing import Any, ClassVar

    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: object) -> object:
        return lambda cls: cls

if TYPE_CHECKING:
    from typing import TypeVar

    _V = TypeVar("_V", bound="Slotted")
set_field = object.__setattr__  # how a value class's ``__init__`` sets its (frozen) fields
_MISSING = object()
_MUTABLE = (list, dict, set, bytearray)


class _FieldSpec:
    __slots__ = ("default", "default_factory", "compare", "repr", "hash")

    def __init__(self, default: object, default_factory: Callable[[], object] | None, compare: bool, repr: bool,
                 hash: bool | None) -> None:
        self.default, self.default_factory = default, default_factory
        self.compare, self.repr, self.hash = compare, repr, hash


def value_field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None, compare: bool = True,
                repr: bool = True, hash: bool | None = None) -> Any:
    """A field's default as ``dataclasses.field`` says it: a value or a factory, and whether the
    field takes part in equality, hashing (``hash=None``: as in equality) and the repr."""
    return _FieldSpec(default, default_factory, compare, repr, hash)


class _DataclassFields:
    """``__dataclass_fields__`` of a value class, made the first time something asks (the
    ``dataclasses`` functions) and then kept on the class: checking event strings never asks."""

    def __get__(self, record: object, cls: type[Slotted]) -> dict[str, Field[object]]:
        import dataclasses

        names = cls.__slots__
        if not names:
            return {}  # a base without fields: keep the descriptor for its subclasses
        defaults = dict(cls._defaults)
        factories = dict(cls._factories)
        if not cls._generated:  # a written-out __init__: its signature has the defaults
            written = cls.__init__.__defaults__ or ()
            defaults.update(zip(names[len(names) - len(written):], written, strict=True))
        fields = {}
        for name in names:
            f: Field[object] = dataclasses.field(  # type: ignore[call-overload]
                default=defaults.get(name, dataclasses.MISSING),
                default_factory=factories.get(name, dataclasses.MISSING),
                compare=name in cls._compared, repr=name in cls._shown, kw_only=False,
            )
            f.name = name
            f.type = cls.__annotations__[name]
            f._field_type = dataclasses._FIELD  # type: ignore[attr-defined]  # what fields() lists
            fields[name] = f
        cls.__dataclass_fields__ = fields
        return fields


def _init_source(cls: type[Slotted]) -> tuple[str, dict[str, object]]:
    params, body = ["self"], []
    names: dict[str, object] = {"set_field": set_field, "MISSING": _MISSING}
    for name in cls.__slots__:
        if name in cls._defaults:
            names[f"default_{name}"] = cls._defaults[name]
            params.append(f"{name}=default_{name}")
        elif name in cls._factories:
            names[f"factory_{name}"] = cls._factories[name]
            params.append(f"{name}=MISSING")
            body.append(f" if {name} is MISSING: {name} = factory_{name}()")
        else:
            params.append(name)
        body.append(f" set_field(self, {name!r}, {name})")
    if hasattr(cls, "__post_init__"):
        body.append(" self.__post_init__()")
    return f"def __init__({', '.join(params)}):\n" + "\n".join(body) + "\n", names


def _first_init(self: Slotted, *args: object, **kwargs: object) -> None:
    """A value class's ``__init__`` until its first instance: compiles the real one, keeps it on
    the class and runs it."""
    cls = self.__class__
    source, names = _init_source(cls)
    exec(source, names)  # noqa: S102  # the source is made of the class's own field names
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"  # type: ignore[attr-defined]
    cls.__init__ = init  # type: ignore[method-assign, assignment]
    init(self, *args, **kwargs)  # type: ignore[operator]


@dataclass_transform(frozen_default=True, field_specifiers=(value_field,))
class _ValueClass(type):
    """Makes a value class from its annotated fields: ``__slots__``, defaults, the compared and
    shown fields, and the ``__init__`` generated at its first instance. Class keywords say what a
    ``field(...)`` would for several fields: ``uncompared`` are left out of equality and hashing,
    ``hidden`` out of the repr; ``frozen=False`` makes a mutable, unhashable class, and ``eq=False``
    one whose instances are equal only to themselves."""

    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any], *, frozen: bool = True,
                eq: bool = True, uncompared: tuple[str, ...] = (), hidden: tuple[str, ...] = ()) -> _ValueClass:
        if not bases:
            return super().__new__(mcls, name, bases, ns)  # Slotted itself
        for base in bases:
            if getattr(base, "__slots__", None):
                raise TypeError(f"{name}: a value class with fields cannot be subclassed")
        annotations: dict[str, str] = ns.get("__annotations__", {})
        for kind in annotations.values():
            if str(kind).startswith(("ClassVar", "typing.ClassVar")):
                annotations = {n: t for n, t in annotations.items() if not str(t).startswith(("ClassVar", "typing.ClassVar"))}
                break
        specs: dict[str, _FieldSpec] = {}
        if "__slots__" in ns:
            names = tuple(ns["__slots__"])
            if tuple(annotations) != names:
                raise TypeError(f"{name}: annotate exactly the fields of __slots__, in order")
            generated = False
        else:
            names = tuple(annotations)
            if "__init__" in ns and names:
                raise TypeError(f"{name}: a value class with its own __init__ lists its __slots__")
            for field_name in names:
                if field_name in ns:
                    spec = ns.pop(field_name)
                    if spec.__class__ is not _FieldSpec:
                        if isinstance(spec, _MUTABLE):
                            raise TypeError(f"{name}.{field_name}: a mutable default is shared by every "
                                            f"instance; use value_field(default_factory=...)")
                        spec = _FieldSpec(spec, None, True, True, None)
                    specs[field_name] = spec
                elif specs:
                    raise TypeError(f"{name}.{field_name}: a field without a default follows one with a default")
            ns["__slots__"] = names
            generated = bool(names)
            if generated:
                ns["__init__"] = _first_init
        positions = bases[0]._positions(names)  # type: ignore[attr-defined]
        if positions:
            uncompared, hidden = uncompared + positions, hidden + positions
        compared = shown = hashed = names
        if specs:
            ns["_defaults"] = {n: s.default for n, s in specs.items() if s.default is not _MISSING}
            ns["_factories"] = {n: s.default_factory for n, s in specs.items() if s.default_factory is not None}
            uncompared += tuple(n for n, s in specs.items() if not s.compare)
            hidden += tuple(n for n, s in specs.items() if not s.repr)
            hashed = tuple(n for n in names if n not in specs or specs[n].hash is not False)
        if uncompared:
            compared = tuple(n for n in names if n not in uncompared)
            hashed = tuple(n for n in hashed if n in compared)
        if hidden:
            shown = tuple(n for n in names if n not in hidden)
        ns["_generated"], ns["_compared"], ns["_hashed"], ns["_shown"] = generated, compared, hashed, shown
        ns["__match_args__"] = names
        if not frozen:
            ns["__setattr__"], ns["__delattr__"], ns["__hash__"] = object.__setattr__, object.__delattr__, None
        if not eq:  # instances equal only to themselves
            ns["__eq__"], ns["__hash__"] = object.__eq__, object.__hash__
        return super().__new__(mcls, name, bases, ns)


def replace(value: _V, **changes: object) -> _V:
    """``dataclasses.replace`` for value classes, without importing ``dataclasses``."""
    fields = {name: getattr(value, name) for name in value.__slots__}
    fields.update(changes)
    return value.__class__(**fields)


class Slotted(metaclass=_ValueClass):
    """Base of the value classes (see the module's docstring for the rule)."""

    __slots__: ClassVar[tuple[str, ...]] = ()
    _compared: ClassVar[tuple[str, ...]] = ()
    _hashed: ClassVar[tuple[str, ...]] = ()
    _shown: ClassVar[tuple[str, ...]] = ()
    _defaults: ClassVar[dict[str, object]] = {}
    _factories: ClassVar[dict[str, Callable[[], object]]] = {}
    _generated: ClassVar[bool] = False
    __dataclass_fields__: ClassVar[_DataclassFields] = _DataclassFields()

    @classmethod
    def _positions(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        """Of a subclass's fields ``names``, those neither compared nor shown (a base says which)."""
        return ()

    def _values(self) -> tuple[object, ...]:
        return tuple([getattr(self, name) for name in self._compared])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(tuple([getattr(self, name) for name in self._hashed]))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
        return f"{self.__class__.__qualname__}({shown})"

    def __setattr__(self, name: str, value: object) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return self.__class__, tuple([getattr(self, name) for name in self.__slots__])


class Span(Slotted):
    """``[start, end)``: 0-based offsets into the event string the node or diagnostic came from.
    Spans order as ``(start, end)`` tuples."""

    __slots__ = ("start", "end")
    start: int
    end: int

    def __init__(self, start: int, end: int) -> None:
        if start < 0 or end < start:
            raise ValueError(f"invalid span [{start}, {end})")
        set_field(self, "start", start)
        set_field(self, "end", end)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Span:
            return NotImplemented
        return self.start == other.start and self.end == other.end

    def __hash__(self) -> int:
        return hash((self.start, self.end))

    def __lt__(self, other: Span) -> bool:
        if other.__class__ is not Span:
            return NotImplemented
        return (self.start, self.end) < (other.start, other.end)

    def __le__(self, other: Span) -> bool:
        if other.__class__ is not Span:
            return NotImplemented
        return (self.start, self.end) <= (other.start, other.end)

    def __gt__(self, other: Span) -> bool:
        if other.__class__ is not Span:
            return NotImplemented
        return (self.start, self.end) > (other.start, other.end)

    def __ge__(self, other: Span) -> bool:
        if other.__class__ is not Span:
            return NotImplemented
        return (self.start, self.end) >= (other.start, other.end)

    def __len__(self) -> int:
        return self.end - self.start

    def shift(self, offset: int) -> Span:
        return Span(self.start + offset, self.end + offset)

    def cover(self, other: Span) -> Span:
        return Span(min(self.start, other.start), max(self.end, other.end))

    def text(self, source: str) -> str:
        return source[self.start : self.end]
