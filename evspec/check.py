"""``evspec check``: every stage that applies to a set of event strings, findings in order.

Syntax and system-independent rules always run; with a system description the semantic checks
(PMUs, aliases, tracepoints) and the BPF object checks (files relative to ``cwd``) run too;
without one, ``Unverified`` gathers the names only a system could tell, for a note that lists
them. Library code: returns diagnostics, never prints.
"""

from __future__ import annotations

from evspec.diagnostics import Diagnostic, collapsed, note, warning
from evspec.inputs import SpecInput
from evspec.span import Slotted, Span

#: the codes of what a check without a system says (evspec.codes.semantic, evspec.codes.syntax)
UNVERIFIED = "WM002"
NOT_RAW = "WS010"

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from pathlib import Path

    from evspec.ast import EventList
    from evspec.compiler.resolve import Mode
    from evspec.system.model import System


class CheckedSpec(Slotted):
    """One checked event string: its input, the items that parsed, and its findings in order."""

    input: SpecInput
    events: EventList
    diagnostics: tuple[Diagnostic, ...]


class CheckOptions(Slotted, frozen=False):
    """What to check against: a ``system`` (None: syntax and system-independent rules only), perf
    record's or perf stat's term rules (``mode``), the directory BPF object paths are relative
    to (``cwd``; None: the current directory), and the options clang gets for a BPF source
    (``clang_opts``)."""

    __slots__ = ("system", "mode", "cwd", "clang_opts")
    system: System | None
    mode: Mode
    cwd: Path | None
    clang_opts: tuple[str, ...]

    def __init__(self, system: System | None = None, mode: Mode = "record", cwd: Path | None = None,
                 clang_opts: Sequence[str] = ()) -> None:
        self.system = system
        self.mode = mode
        self.cwd = cwd
        self.clang_opts = tuple(clang_opts)


def check_specs(inputs: Iterable[SpecInput], options: CheckOptions | None = None,
                unverified: Unverified | None = None) -> list[CheckedSpec]:
    """``iter_checked`` as a list."""
    return list(iter_checked(inputs, options, unverified))


def iter_checked(inputs: Iterable[SpecInput], options: CheckOptions | None = None,
                 unverified: Unverified | None = None) -> Iterator[CheckedSpec]:
    """Check each event string as it comes; strings of one command (which come together) see the
    events defined before them. Nothing about a command is kept once the next one starts, so a
    file of a million lines is checked in the memory of one. Without a system, the names that
    could not be verified go to ``unverified``, and a word written like a raw event that is
    not one is a warning."""
    from evspec import parser, references
    options = options or CheckOptions()
    command: int | None = None
    earlier: list[str] = []
    facts = _DefinedEvents()
    for spec in inputs:
        if spec.command != command:
            command, earlier, facts = spec.command, [], _DefinedEvents()
        result = parser.analyze(spec.text, earlier_names=tuple(earlier))
        diags = list(result.diagnostics)
        if options.system is not None:
            diags.extend(_semantic(result.events, options, facts))
        else:
            diags.extend(_not_raw_events(result.events))
            if unverified is not None:
                unverified.add(result.events, spec)
        for event in result.events.events():
            earlier.extend(references.event_reference_names(event, spec.text))
        diags.sort(key=lambda d: d.span.start)
        located = tuple(d.located(spec.text, spec.source) for d in collapsed(diags))
        yield CheckedSpec(spec, result.events, located)


def _not_raw_events(events: EventList) -> Iterator[Diagnostic]:
    from evspec.ast import AliasEvent
    from evspec.suggest import hex_problem

    for event in events.events():
        if isinstance(event, AliasEvent):
            problem = hex_problem(event.name)
            if problem is not None:
                yield warning(NOT_RAW, problem, event.name_span,
                              help=("a raw event is r and hex digits ('r1a'); other words are PMU event "
                                    "aliases, which only a system can tell (--system live)",))


class Unverified:
    """The names a check without a system could not verify (events that may be PMU aliases,
    tracepoints, PMUs, BPF objects), once each, with the first string that named them and how
    many did; ``note`` lists them."""

    #: names listed in the note (all of them are counted)
    SHOWN = 10

    def __init__(self) -> None:
        self._first: dict[str, tuple[str, Span, SpecInput]] = {}
        self._count: dict[str, int] = {}

    def add(self, events: EventList, spec: SpecInput) -> None:
        from evspec.ast import AliasEvent, BpfEvent, PmuEvent, TracepointEvent

        for event in events.events():
            if isinstance(event, AliasEvent):
                found = (event.name, "event or PMU alias", event.name_span)
            elif isinstance(event, TracepointEvent):
                found = (event.name, "tracepoint", event.name_span)
            elif isinstance(event, PmuEvent):
                found = (spec.text[event.span.start:event.terms.span.end], "PMU event", event.name_span)
            elif isinstance(event, BpfEvent):
                found = (event.path, "BPF object", event.path_span)
            else:
                continue
            name, kind, span = found
            if name not in self._first:
                self._first[name] = (kind, span, spec)
            self._count[name] = self._count.get(name, 0) + 1

    def __len__(self) -> int:
        return len(self._first)

    def note(self) -> Diagnostic | None:
        """The note: how many names were not verified, the first ``SHOWN`` of them (a built-in
        name near one said), and how to verify them. Placed where the first one stands."""
        if not self._first:
            return None
        from evspec.render.text import describe_source
        from evspec.suggest import builtin_event_names, closest, did_you_mean

        lines = []
        for name in list(self._first)[:self.SHOWN]:
            kind, span, spec = self._first[name]
            times = self._count[name]
            where = f"{describe_source(spec.source)}, col {span.start + 1}"
            more = f", and {times - 1:,} more strings" if times > 1 else ""
            line = f"{_shown_name(name)}: {kind} ({where}{more})"
            if kind == "event or PMU alias":
                near = did_you_mean(closest(name, builtin_event_names()))
                if near is not None:
                    line += f"; not a built-in event: {near}"
            lines.append(line)
        if len(self._first) > self.SHOWN:
            lines.append(f"and {len(self._first) - self.SHOWN:,} more")
        count = len(self._first)
        kind, span, spec = next(iter(self._first.values()))
        what = "1 name was" if count == 1 else f"{count:,} names were"
        return note(UNVERIFIED, f"{what} not verified: no system was described (--system none)", span,
                    help=("check them against this machine: --system live",
                          "or against another: --system FILE, a snapshot written there with "
                          "'evspec system snapshot -o FILE'"),
                    notes=tuple(lines)).located(spec.text, spec.source)


def _shown_name(name: str) -> str:
    return f"'{name}'" if len(name) <= 80 else f"'{name[:60]}…' ({len(name):,} characters)"


class _DefinedEvents(Slotted, frozen=False):
    """The events earlier strings of one command defined, for ``map:NAME.event=`` checks: their
    facts by name, and the strings without BPF events whose facts are not taken yet (that takes
    the loader, which a command without BPF objects never imports)."""

    __slots__ = ("facts", "pending")
    facts: dict[str, object]
    pending: list[EventList]

    def __init__(self) -> None:
        self.facts = {}
        self.pending = []


def _semantic(events: EventList, options: CheckOptions, defined: _DefinedEvents) -> list[Diagnostic]:
    from evspec.ast import BpfEvent
    from evspec.compiler.resolve import check_semantics
    from evspec.compiler.runtime import NO_HARDWARE_PMU, runtime_findings

    assert options.system is not None
    # the resolver's WM001 says what no mode does; the run-time findings say it per mode
    diags = [d for d in check_semantics(events, options.system, options.mode) if d.code != NO_HARDWARE_PMU]
    diags.extend(runtime_findings(events, options.system, options.mode))
    if not any(isinstance(e, BpfEvent) for e in events.events()):
        defined.pending.append(events)
        return diags
    from pathlib import Path

    from evspec.loader.lint.event import check_bpf_events

    cwd = options.cwd if options.cwd is not None else Path.cwd()
    for earlier in defined.pending:  # no BPF event in them: this only records their facts
        check_bpf_events(earlier, options.system, cwd, defined.facts)  # type: ignore[arg-type]
    defined.pending.clear()
    diags.extend(check_bpf_events(events, options.system, cwd, defined.facts,  # type: ignore[arg-type]
                                  clang_opts=options.clang_opts))
    return diags
