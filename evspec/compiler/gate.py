"""Whether a perf release takes an event string at all, before ``compile --perf VERSION``
computes its attrs: a string that release refuses has none.

Where the perf dialect emulation knows the release (``evspec.dialect.VERSIONS``) its verdict
decides, message and all. Otherwise the release's facts (``releases.py``) say which parts of
today's language it lacks: term keywords, modifier letters, quoted names, names that start with
a digit, terms on breakpoints and tool events, event names in another letter case. What depends
on the machine (PMUs, their events) the resolver checks with the same facts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from evspec import lexicon
from evspec.ast import (
    AliasEvent,
    BpfEvent,
    BreakpointEvent,
    CacheEvent,
    Event,
    EventList,
    Group,
    Modifiers,
    PmuEvent,
    SymbolEvent,
    SymbolKind,
    Term,
    TermKind,
    TracepointEvent,
    Word,
)
from evspec.compiler.releases import Release
from evspec.diagnostics import Diagnostic, error
from evspec.span import Span
from evspec.system.model import System

CODE = "EM019"


def release_findings(lists: Sequence[EventList], release: Release, system: System | None,
                     mode: str) -> list[Diagnostic]:
    """Why perf ``release`` refuses each string of ``lists`` (empty when it takes them all)."""
    from evspec import dialect

    out: list[Diagnostic] = []
    earlier: list[str] = []
    for events in lists:
        if release.version in dialect.VERSIONS and not _own_bpf_events(events, release.version):
            verdict = dialect.predict(events.source, release.version, system=system, mode=mode,  # type: ignore[arg-type]
                                      earlier_events=tuple(earlier))
            earlier.extend(verdict.evsels)
            if not verdict.accepted:
                reasons = [d.message for d in _lacking(events, release)]
                out.append(_refused(events.source, release, verdict.error.message if verdict.error else None,
                                    verdict.error.column if verdict.error else None, reasons))
            continue
        out.extend(d.located(events.source) for d in _lacking(events, release))
    return out


def _own_bpf_events(events: EventList, version: str) -> bool:
    """Whether the string names a BPF object and ``version`` has no BPF events (6.6 removed them):
    such a string is evspec's own language (COMPAT section 1), whose perf parts the release's
    facts still check."""
    from evspec.dialect.versions import profile

    return profile(version).bpf is None and any(isinstance(e, BpfEvent) for e in events.events())


def _lacking(events: EventList, release: Release) -> Iterator[Diagnostic]:
    """What of today's language the string uses that ``release`` lacks, by the release's facts."""
    for event in events.events():
        yield from _lacks(event, release)
    for item in events.items:
        if isinstance(item, Group):
            yield from _letters(item.modifiers, release)


#: evspec's own findings (today's rules) that a release does not make, by the fact that says so
_OLDER_RULES: dict[str, str] = {
    "ES027": "cache_names_any_order",  # L1-dcache-load-load: a repeated part ignored
    "ES051": "cache_names_any_order",  # L1-dcache-misses-load: parts in any order
    "ES052": "weak_on_events",  # cycles:W: perf 6.1 takes W outside a group, and ignores it
}


def release_takes(diagnostic: Diagnostic, release: Release) -> bool:
    """Whether ``release`` accepts what today's ``diagnostic`` refuses (so that ``compile --perf``
    computes that release's attrs for it)."""
    fact = _OLDER_RULES.get(diagnostic.code)
    return fact is not None and getattr(release, fact)


def _refused(text: str, release: Release, message: str | None, column: int | None,
             reasons: Sequence[str] = ()) -> Diagnostic:
    span = Span(0, len(text)) if column is None or column < 0 else Span(min(column, len(text) - 1),
                                                                         min(column, len(text) - 1) + 1)
    said = f"'{message}'" if message else "nothing (it fails silently)"
    why = f" ({'; '.join(dict.fromkeys(reasons))})" if reasons else ""
    return error(CODE, f"perf {release.version} refuses this string; it says {said}{why}", span,
                 perf_message=message,
                 help=(f"perf {release.version} computes no attrs for it; 'evspec check --perf {release.version}' "
                       "says why",)).located(text)


def _lacks(event: Event, release: Release) -> Iterator[Diagnostic]:
    v = release.version
    quoted = getattr(event, "quoted", False)
    if quoted and not release.quoted_names:
        yield _lack(f"perf {v} knows no quoted event names", getattr(event, "name_span", event.span))
    name = getattr(event, "name", None)
    if isinstance(event, (SymbolEvent, CacheEvent)) and not release.any_case_names and not _canonical_case(event):
        yield _lack(f"perf {v} knows '{name}' only in its own letter case", event.name_span)
    if isinstance(event, SymbolEvent) and event.kind is SymbolKind.TOOL and event.name.lower() not in release.tool_events:
        yield _lack(f"perf {v} has no tool event '{name}'", event.name_span)
    if not release.digit_names:
        for text, span in _heads(event):
            if text[:1].isdigit():
                yield _lack(f"perf {v} reads no name that starts with a digit ('{text}')", span)
    terms = getattr(event, "terms", None)
    if terms is not None and terms.items:
        if isinstance(event, BreakpointEvent) and not release.breakpoint_terms:
            yield _lack(f"perf {v} takes no terms on a breakpoint", terms.span)
        if isinstance(event, SymbolEvent) and event.kind is SymbolKind.TOOL and not release.tool_terms:
            yield _lack(f"perf {v} takes no terms on a tool event", terms.span)
        for term in terms.items:
            if not isinstance(term, Term):
                continue
            if term.kind is TermKind.KEYWORD and not release.takes_term(term.key):
                yield _lack(f"perf {v} does not know the term '{term.key}'", term.key_span)
            if not release.digit_names and isinstance(term.value, Word) and not term.value.quoted and \
                    term.value.text[:1].isdigit():
                yield _lack(f"perf {v} reads no value that starts with a digit unless it is a number "
                            f"('{term.value.text}')", term.value.span)
    yield from _letters(getattr(event, "modifiers", None), release)


def _letters(modifiers: Modifiers | None, release: Release) -> Iterator[Diagnostic]:
    """The modifier letters (of an event or a group) the release does not know."""
    for offset, letter in enumerate(modifiers.letters if modifiers is not None else ""):
        if letter not in release.modifier_letters:
            at = modifiers.span.start + offset  # type: ignore[union-attr]
            yield _lack(f"perf {release.version} has no modifier '{letter}'", Span(at, at + 1))


def _canonical_case(event: SymbolEvent | CacheEvent) -> bool:
    if isinstance(event, SymbolEvent):
        return event.name in (lexicon.HARDWARE_EVENTS.keys() | lexicon.SOFTWARE_EVENTS.keys() | lexicon.TOOL_EVENTS)
    return event.cache_type in lexicon.CACHE_TYPES and all(
        p in lexicon.CACHE_OPS or p in lexicon.CACHE_RESULTS for p in event.parts)


def _heads(event: Event) -> Iterator[tuple[str, Span]]:
    """The names an event is written with (a built-in name never starts with a digit)."""
    if isinstance(event, TracepointEvent):
        yield event.system, event.system_span
        yield event.event, event.event_span
    elif isinstance(event, AliasEvent):
        yield event.name, event.name_span
    elif isinstance(event, PmuEvent):
        yield event.pmu, event.name_span


def _lack(message: str, span: Span) -> Diagnostic:
    return error(CODE, message, span,
                 help=("compile for a newer release with --perf, or write the string that release knows",))
