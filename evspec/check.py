"""``evspec check``: every stage that applies to a set of event strings, findings in order.

Syntax and system-independent rules always run; with a system description the semantic checks
(PMUs, aliases, tracepoints) and the BPF object checks (files relative to ``cwd``) run too.
Library code: returns diagnostics, never prints.
"""

from __future__ import annotations

from evspec.diagnostics import Diagnostic
from evspec.inputs import SpecInput
from evspec.span import Record, set_field

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from evspec.ast import EventList
    from evspec.system.model import System


class CheckedSpec(Record):
    """One checked event string: its input, the items that parsed, and its findings in order."""

    __slots__ = ("input", "events", "diagnostics")
    input: SpecInput
    events: EventList
    diagnostics: tuple[Diagnostic, ...]

    def __init__(self, input: SpecInput, events: EventList, diagnostics: tuple[Diagnostic, ...]) -> None:
        set_field(self, "input", input)
        set_field(self, "events", events)
        set_field(self, "diagnostics", diagnostics)


class CheckOptions(Record, frozen=False):
    """What to check against: a ``system`` (None: syntax and system-independent rules only), perf
    record's or perf stat's term rules (``mode``), and the directory BPF object paths are relative
    to (``cwd``; None: the current directory)."""

    __slots__ = ("system", "mode", "cwd")
    system: System | None
    mode: str
    cwd: Path | None

    def __init__(self, system: System | None = None, mode: str = "record", cwd: Path | None = None) -> None:
        self.system = system
        self.mode = mode
        self.cwd = cwd


def check_specs(inputs: Sequence[SpecInput], options: CheckOptions | None = None) -> list[CheckedSpec]:
    """Check each event string; strings of one command see the events defined before them."""
    from evspec import parser, rules

    options = options or CheckOptions()
    results: list[CheckedSpec] = []
    defined: dict[int, list[str]] = {}
    facts: dict[int, dict[str, object]] = {}
    for spec in inputs:
        earlier = defined.setdefault(spec.command, [])
        result = parser.analyze(spec.text, earlier_names=tuple(earlier))
        diags = list(result.diagnostics)
        if options.system is not None:
            diags.extend(_semantic(result.events, options, facts.setdefault(spec.command, {})))
        for event in result.events.events():
            earlier.extend(rules.event_reference_names(event, spec.text))
        diags.sort(key=lambda d: d.span.start)
        located = tuple(d.located(spec.text, spec.source) for d in diags)
        results.append(CheckedSpec(spec, result.events, located))
    return results


def _semantic(events: EventList, options: CheckOptions, defined_facts: dict[str, object]) -> list[Diagnostic]:
    from evspec.ast import BpfEvent
    from evspec.compiler.resolve import check_semantics

    assert options.system is not None
    diags = list(check_semantics(events, options.system, options.mode))
    bpf_events = [e for e in events.events() if isinstance(e, BpfEvent)]
    if bpf_events:
        from pathlib import Path

        from evspec.loader.object_check import check_bpf_events

        cwd = options.cwd if options.cwd is not None else Path.cwd()
        diags.extend(check_bpf_events(events, options.system, cwd, defined_facts))
    return diags
