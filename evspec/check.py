"""``evspec check``: every stage that applies to a set of event strings, findings in order.

Syntax and system-independent rules always run; with a system description the semantic checks
(PMUs, aliases, tracepoints) and the BPF object checks (files relative to ``cwd``) run too.
Library code: returns diagnostics, never prints.
"""

from __future__ import annotations

from evspec.diagnostics import Diagnostic
from evspec.inputs import SpecInput
from evspec.span import Slotted, set_field

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from evspec.ast import EventList
    from evspec.system.model import System


class CheckedSpec(Slotted):
    """One checked event string: its input, the items that parsed, and its findings in order."""

    __slots__ = ("input", "events", "diagnostics")
    input: SpecInput
    events: EventList
    diagnostics: tuple[Diagnostic, ...]

    def __init__(self, input: SpecInput, events: EventList, diagnostics: tuple[Diagnostic, ...]) -> None:
        set_field(self, "input", input)
        set_field(self, "events", events)
        set_field(self, "diagnostics", diagnostics)


class CheckOptions(Slotted, frozen=False):
    """What to check against: a ``system`` (None: syntax and system-independent rules only), perf
    record's or perf stat's term rules (``mode``), the directory BPF object paths are relative
    to (``cwd``; None: the current directory), and the options clang gets for a BPF source
    (``clang_opts``)."""

    __slots__ = ("system", "mode", "cwd", "clang_opts")
    system: System | None
    mode: str
    cwd: Path | None
    clang_opts: tuple[str, ...]

    def __init__(self, system: System | None = None, mode: str = "record", cwd: Path | None = None,
                 clang_opts: Sequence[str] = ()) -> None:
        self.system = system
        self.mode = mode
        self.cwd = cwd
        self.clang_opts = tuple(clang_opts)


def check_specs(inputs: Sequence[SpecInput], options: CheckOptions | None = None) -> list[CheckedSpec]:
    """Check each event string; strings of one command see the events defined before them."""
    from evspec import parser, references
    options = options or CheckOptions()
    results: list[CheckedSpec] = []
    defined: dict[int, list[str]] = {}
    facts: dict[int, _DefinedEvents] = {}
    for spec in inputs:
        earlier = defined.setdefault(spec.command, [])
        result = parser.analyze(spec.text, earlier_names=tuple(earlier))
        diags = list(result.diagnostics)
        if options.system is not None:
            diags.extend(_semantic(result.events, options, facts.setdefault(spec.command, _DefinedEvents())))
        for event in result.events.events():
            earlier.extend(references.event_reference_names(event, spec.text))
        diags.sort(key=lambda d: d.span.start)
        located = tuple(d.located(spec.text, spec.source) for d in diags)
        results.append(CheckedSpec(spec, result.events, located))
    return results


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

    assert options.system is not None
    diags = list(check_semantics(events, options.system, options.mode))
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
