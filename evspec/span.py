"""Half-open character ranges over an event string, and ``Slotted``: the base of evspec's value
classes on both sides (``Span``, the AST nodes, diagnostics, inputs; the loader's specs and
results). "Record" is not its name: that word means a ring's records, and ``record``.

A value class behaves like a ``@dataclass(frozen=True, slots=True)`` class: keyword construction,
equality and hashing over its compared fields, a dataclass ``repr``, ``FrozenInstanceError`` on
assignment, pickling and copying, and ``dataclasses.fields``, ``replace``, ``asdict`` and
``is_dataclass``. Its methods are written out instead of generated, because the ``dataclass``
decorator imports ``inspect`` (with ``ast``, ``dis`` and ``tokenize``) and compiles every class's
methods at import: more than the rest of a cold ``evspec check`` together.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from dataclasses import Field

set_field = object.__setattr__  # how a value class's ``__init__`` sets its (frozen) fields


class _DataclassFields:
    """``__dataclass_fields__`` of a value class, made the first time something asks (the
    ``dataclasses`` functions) and then kept on the class: checking event strings never asks."""

    def __get__(self, record: object, cls: type[Slotted]) -> dict[str, Field[object]]:
        import dataclasses

        names = cls.__slots__
        if not names:
            return {}  # a base without fields: keep the descriptor for its subclasses
        defaults = cls.__init__.__defaults__ or ()
        first_default = len(names) - len(defaults)
        fields = {}
        for i, name in enumerate(names):
            f: Field[object] = dataclasses.field(  # type: ignore[assignment]
                default=defaults[i - first_default] if i >= first_default else dataclasses.MISSING,
                compare=name in cls._compared, repr=name in cls._shown, kw_only=False,
            )
            f.name = name
            f.type = cls.__annotations__[name]
            f._field_type = dataclasses._FIELD  # type: ignore[attr-defined]  # what fields() lists
            fields[name] = f
        cls.__dataclass_fields__ = fields  # type: ignore[misc]
        return fields


class Slotted:
    """Base of the value classes. A value class lists its fields in ``__slots__`` (in constructor
    order, annotated alike) and sets them in ``__init__`` with ``set_field``; it is final, as the
    methods here know only its own fields. Class keywords say
    what a ``field(...)`` would: ``uncompared`` fields are left out of equality and hashing,
    ``hidden`` ones out of the repr; ``frozen=False`` makes a mutable, unhashable one."""

    __slots__: tuple[str, ...] = ()
    _compared: tuple[str, ...] = ()
    _shown: tuple[str, ...] = ()
    __dataclass_fields__ = _DataclassFields()

    def __init_subclass__(cls, uncompared: tuple[str, ...] = (), hidden: tuple[str, ...] = (),
                          frozen: bool = True) -> None:
        super().__init_subclass__()
        if any(base.__dict__.get("__slots__") for base in cls.__mro__[1:]):
            raise TypeError(f"{cls.__name__}: a value class with fields cannot be subclassed")
        names = cls.__slots__
        if tuple(cls.__annotations__) != names:
            raise TypeError(f"{cls.__name__}: annotate exactly the fields of __slots__, in order")
        cls._compared = tuple(n for n in names if n not in uncompared)
        cls._shown = tuple(n for n in names if n not in hidden)
        cls.__match_args__ = names  # type: ignore[attr-defined]
        if not frozen:
            cls.__setattr__ = object.__setattr__  # type: ignore[method-assign, assignment]
            cls.__delattr__ = object.__delattr__  # type: ignore[method-assign, assignment]
            cls.__hash__ = None  # type: ignore[assignment]

    def _values(self) -> tuple[object, ...]:
        return tuple([getattr(self, name) for name in self._compared])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined, no-any-return]

    def __hash__(self) -> int:
        return hash(self._values())

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
        return self.start == other.start and self.end == other.end  # type: ignore[attr-defined]

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
