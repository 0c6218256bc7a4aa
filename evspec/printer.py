"""The canonical printer: AST back to an event string.

Canonical form: no blanks around ``,`` ``{`` ``}`` and none inside index lists; modifiers after a
``:`` only where the event kind needs one (``cycles:u``, but ``cycles/period=1/u``); ``//`` kept;
quoted values re-quoted; numbers as written. ``parse(print_events(ast)) == ast`` for every AST the
parser produces, and a canonical string prints back unchanged (``evspec fmt --check``).
"""

from __future__ import annotations

from evspec.ast import (
    AliasEvent,
    AllIndices,
    AnyTerm,
    BpfEvent,
    BreakpointEvent,
    CacheEvent,
    Event,
    EventList,
    Group,
    Indices,
    Item,
    MapTerm,
    Modifiers,
    Number,
    NumericEvent,
    PmuEvent,
    ProgTerm,
    RawEvent,
    SymbolEvent,
    Term,
    TermKind,
    Terms,
    TracepointEvent,
    Value,
    VarTerm,
    Word,
)

__all__ = ["print_events", "print_item", "print_event", "print_terms", "print_term", "print_value"]


def print_events(ast: EventList) -> str:
    return ",".join(print_item(item) for item in ast.items)


def print_item(item: Item) -> str:
    if isinstance(item, Group):
        body = ",".join(print_event(e) for e in item.events)
        name = _quoted(item.name, item.quoted) if item.name is not None else ""
        return f"{name}{{{body}}}{_colon_modifiers(item.modifiers)}"
    return print_event(item)


def print_event(event: Event) -> str:
    if isinstance(event, (SymbolEvent, CacheEvent)):
        return _with_terms(_quoted(event.name, event.quoted), event.terms, event.modifiers)
    if isinstance(event, RawEvent):
        return _with_terms(f"r{event.code.text}", event.terms, event.modifiers)
    if isinstance(event, NumericEvent):
        return _with_terms(f"{event.type.text}:{event.config.text}", event.terms, event.modifiers)
    if isinstance(event, TracepointEvent):
        return _with_terms(event.name, event.terms, event.modifiers)
    if isinstance(event, PmuEvent):
        return f"{_quoted(event.pmu, event.quoted)}{print_terms(event.terms)}{_letters(event.modifiers)}"
    if isinstance(event, AliasEvent):
        return f"{_quoted(event.name, event.quoted)}{_colon_modifiers(event.modifiers)}"
    if isinstance(event, BreakpointEvent):
        text = f"mem:{event.address.text}"
        if event.length is not None:
            text += f"/{event.length.text}"
        if event.access is not None:
            text += f":{event.access}"
        return _with_terms(text, event.terms, event.modifiers)
    if isinstance(event, BpfEvent):
        terms = event.terms
        if terms is None and event.modifiers:
            terms = Terms((), event.span)  # a BPF object takes modifiers only after a term list
        return f"{event.path}{'' if terms is None else print_terms(terms)}{_letters(event.modifiers)}"
    raise TypeError(f"not an event: {event!r}")


def _quoted(name: str, quoted: bool) -> str:
    return f"'{name}'" if quoted else name


def _with_terms(head: str, terms: Terms | None, modifiers: Modifiers | None) -> str:
    if terms is None:
        return head + _colon_modifiers(modifiers)
    return head + print_terms(terms) + _letters(modifiers)


def _letters(modifiers: Modifiers | None) -> str:
    return modifiers.letters if modifiers is not None else ""


def _colon_modifiers(modifiers: Modifiers | None) -> str:
    return f":{modifiers.letters}" if modifiers is not None and modifiers.letters else ""


def print_terms(terms: Terms) -> str:
    """``/term,term/`` (``//`` when empty)."""
    return "/" + ",".join(print_term(t) for t in terms.items) + "/"


def print_term(term: AnyTerm) -> str:
    if isinstance(term, MapTerm):
        key = f"map:{term.map_name}"
        if term.option:
            key += f".{term.option}"
        if term.indices is not None:
            key += _indices(term.indices)
        return key if term.value is None else f"{key}={print_value(term.value)}"
    if isinstance(term, ProgTerm):
        key = f"prog:{term.prog_name}" + (f".{term.option}" if term.option else "")
        return key if term.value is None else f"{key}={print_value(term.value)}"
    if isinstance(term, VarTerm):
        key = f"var:{term.name}"
        return key if term.value is None else f"{key}={print_value(term.value)}"
    assert isinstance(term, Term)
    if term.kind is TermKind.RAW:
        return term.key
    if term.kind is TermKind.DRIVER:
        return f"@{term.key}" if term.value is None else f"@{term.key}={print_value(term.value)}"
    return term.key if term.value is None else f"{term.key}={print_value(term.value)}"


def print_value(value: Value) -> str:
    if isinstance(value, Number):
        return value.text
    assert isinstance(value, Word)
    return f"'{value.text}'" if value.quoted else value.text


def _indices(indices: Indices) -> str:
    if isinstance(indices, AllIndices):
        return "[all]"
    items = (
        item.first.text if item.last is None else f"{item.first.text}...{item.last.text}"
        for item in indices.items
    )
    return "[" + ",".join(items) + "]"
