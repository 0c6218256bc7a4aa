"""How a later event of a command names an earlier one (COMPAT 1.7 and 1.14, Decision 9): the
names each event leaves for ``map:NAME.event=`` and ``prog:NAME.event=`` terms, and the lookup of
a ``prog:`` term's event among them. The syntax stage (``rules``), the object check and ``record``
(the loader) all use it; it reads the AST and the strings' text.
"""

from __future__ import annotations

from evspec.ast import BpfEvent, CacheEvent, Event, SymbolEvent, Term, TermKind, Word

TYPE_CHECKING = False  # imports for annotations only: a cold start does not pay for them
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable

# Among reference names, an event's bare name (its event name without terms and modifiers) is kept
# behind this mark: only prog:NAME.event= looks at it, and only when no name matches. A bare name
# that two earlier events share is marked ambiguous.
_BARE, _AMBIGUOUS = "\x00", "\x01"


def event_reference_names(event: Event, source_text: str) -> tuple[str, ...]:
    """The names a later ``map:NAME.event=`` may use for ``event`` (COMPAT 1.7, Decision 9): its
    first ``name=`` value, else its literal text with modifiers (``bpf-output/no-inherit/``).
    A BPF object's events are named by its sections, which only the object can tell: none here.

    A built-in or cache event written with terms or modifiers also leaves its bare name, which a
    later ``prog:NAME.event=`` may use when nothing else matches (COMPAT 1.14:
    ``-e cpu-clock/freq=99/ -e ./sampler.bpf.o/prog:on_tick.event=cpu-clock/``).
    """
    if isinstance(event, BpfEvent):
        return ()
    bare = (_BARE + event.name,) if isinstance(event, (SymbolEvent, CacheEvent)) else ()
    terms = getattr(event, "terms", None)
    if terms is not None:
        for term in terms.items:
            if isinstance(term, Term) and term.kind is TermKind.KEYWORD and term.key == "name":
                if isinstance(term.value, Word):
                    return (term.value.text, *bare)
    text = source_text[event.span.start:event.span.end] if source_text else ""
    if not text:
        from evspec.printer import print_event

        text = print_event(event)
    return (text, *bare) if bare and bare[0][1:] != text else (text,)


def add_reference_names(names: set[str], new: Iterable[str]) -> None:
    """``names`` with ``new`` (from ``event_reference_names``) added; a bare name seen twice is
    marked ambiguous."""
    for name in new:
        if name.startswith(_BARE) and name in names:
            names.add(_AMBIGUOUS + name[1:])
        names.add(name)


def program_event_name(text: str, earlier: Iterable[tuple[Event, str]]) -> str | None:
    """The name (``name=`` value, else literal text: what the compiler names the evsel) of the
    earlier event that ``prog:NAME.event=TEXT`` finds among ``earlier`` (events with the source text
    of their string), by ``program_event_reference``'s rule; None when none or several match."""
    names: set[str] = set()
    by_bare: dict[str, str] = {}
    for event, source in earlier:
        found = event_reference_names(event, source)
        add_reference_names(names, found)
        for bare in found[1:]:
            by_bare.setdefault(bare, found[0])
    try:
        key = program_event_reference(text, names)
    except ValueError:
        return None
    return by_bare.get(key, key) if key is not None else None


def program_event_reference(text: str, names: Collection[str]) -> str | None:
    """The reference name ``prog:NAME.event=TEXT`` finds among ``names``: TEXT itself, else the
    bare name of exactly one earlier event (the key to look it up with); None when there is none.
    Raises ValueError when several earlier events share that bare name."""
    if text in names:
        return text
    if _AMBIGUOUS + text in names:
        raise ValueError(text)
    return _BARE + text if _BARE + text in names else None
