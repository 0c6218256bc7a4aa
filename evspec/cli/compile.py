"""``evspec compile``: the perf_event_attr of every event, as a perf release computes it (the
newest by default, ``--perf VERSION`` another; a string that release refuses is an error)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from evspec.ast import BpfEvent, EventList, MapTerm, ProgTerm, VarTerm
from evspec.cli.app import COMPILE_RELEASES, add_system, load_system
from evspec.diagnostics import Diagnostic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evspec.loader.sections.program_events import ProgramEvent
    from evspec.system.model import System


def _render_findings(diags: Sequence[Diagnostic]) -> None:
    from evspec.render.text import render_text, summary_line

    sys.stderr.write(render_text(diags, color=False) + summary_line(diags) + "\n")


def add_compile_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("compile", help="compile event strings to perf_event_attr plans")
    p.add_argument("-e", "--event", dest="events", action="append", default=[], metavar="SPEC")
    p.add_argument("--perf", choices=COMPILE_RELEASES, default=COMPILE_RELEASES[-1], metavar="VERSION",
                   help="the attrs perf VERSION (" + ", ".join(COMPILE_RELEASES) + ") computes "
                        "(default: the newest); a string that release refuses is an error")
    add_system(p, "live")
    p.add_argument("--format", choices=("text", "json"), default="text")


def compile_main(args: argparse.Namespace) -> int:
    from evspec.check import CheckOptions, check_specs
    from evspec.compiler.compile import compile_events
    from evspec.compiler.gate import release_findings, release_takes
    from evspec.compiler.releases import release
    from evspec.diagnostics import EvspecError
    from evspec.inputs import InputError, collect

    if not args.events:
        raise InputError("no event strings: give -e SPEC")
    perf = release(args.perf)
    system = load_system(args)
    checked = check_specs(collect(args.events, []), CheckOptions(system=system, mode=args.mode))
    findings = [d for c in checked for d in c.diagnostics if not (d.is_error and release_takes(d, perf))]
    if not any(d.is_error for d in findings):
        sources = {c.events.source: c.input.source for c in checked}
        findings += [d.located(d.event, sources.get(d.event))
                     for d in release_findings([c.events for c in checked], perf, system, args.mode)]
    if findings:  # the warnings too: what perf does at run time with an event (WM001) is one
        _render_findings(findings)
    if any(d.is_error for d in findings):
        return 1
    lists = [c.events for c in checked]
    programs: list[_ObjectPrograms] = []
    try:
        if any(isinstance(e, BpfEvent) for events in lists for e in events.items):
            lists, programs, system = _with_program_events(lists, system)
        plan = compile_events(lists, system, args.mode, perf)
    except EvspecError as exc:
        _render_findings(exc.diagnostics)
        return 1
    created = {(o.spec_index, p.event) for o in programs for p in o.programs if p.created}
    if args.format == "json":
        data = plan.to_json()
        for event, planned in zip(data["events"], plan.events, strict=True):
            if (planned.spec_index, planned.name) in created:
                event["attr"].pop("config", None)
                event["created_by_record"] = True
        data["programs"] = [o.to_json() for o in programs]
        print(json.dumps(data, indent=2))
        return 0
    auto = len(checked)  # the spec index of the automatic __bpf_stdout__ event
    for event in plan.events:
        group = ""
        if event.group is not None:
            group = f", group {event.group.index}" + (" leader" if event.group.leader else "")
        where = "automatic" if event.spec_index == auto else f"-e #{event.spec_index + 1}"
        print(f"{event.name}  ({where}{group})")
        print("  perf_event_attr:")
        is_created = (event.spec_index, event.name) in created
        for field, value in event.attr.to_json().items():
            if field == "config" and is_created:
                print(f"    {field:<24}(the id of the probe 'evspec record' creates)")
            elif value:
                print(f"    {field:<24}{value:#x}" if field.startswith(("config", "bp_addr")) else
                      f"    {field:<24}{value}")
    for o in programs:
        print(f"{o.path}  (-e #{o.spec_index + 1}, BPF object: loaded by 'evspec record')")
        for p in o.programs:
            print(f"  program {p.program} (section '{p.section}'): {p.how}")
        for text in o.outputs:
            print(f"  {text}")
    for ref in plan.bpf:  # objects inside a group: not expanded
        print(f"{ref.event.path}  (-e #{ref.spec_index + 1}, BPF object: loaded by 'evspec record')")
    return 0


class _ObjectPrograms:
    """An object of one ``-e`` and its programs' events (``ProgramEvent``)."""

    def __init__(self, spec_index: int, path: str, programs: tuple[ProgramEvent, ...]) -> None:
        self.spec_index = spec_index
        self.path = path
        self.programs = programs
        self.outputs: list[str] = []  # what record creates for its perf event arrays

    def to_json(self) -> dict[str, object]:
        return {"spec_index": self.spec_index, "path": self.path,
                "programs": [{"program": p.program, "section": p.section, "event": p.event,
                              "created_by_record": p.created, "how": p.how} for p in self.programs],
                "outputs": self.outputs}


def _with_program_events(lists: list[EventList], system: System | None
                         ) -> tuple[list[EventList], list[_ObjectPrograms], System | None]:
    """Each top-level BPF event replaced by the events of its programs, as perf expands it (the
    event's own terms and modifiers on each), the automatic ``__bpf_stdout__`` event appended as
    a string of its own when record would create it (the bpf-output events evspec's record also
    creates for perf event arrays are said with their object: perf has no such evsels); the
    system also answers for the probes record will create."""
    from pathlib import Path

    from evspec.loader.lint.terms.bpf_stdout import STDOUT_EVENT_STRING, plan_outputs
    from evspec.loader.lint.terms.maps import plan_map_updates
    from evspec.loader.sections.program_events import program_events
    from evspec.loader.session import read_bpf_object
    from evspec.parser import parse
    from evspec.system.with_probes import WithProbes

    out: list[EventList] = []
    objects: list[_ObjectPrograms] = []
    loaded = []
    for index, events in enumerate(lists):
        pieces = []
        for item in events.items:
            if not isinstance(item, BpfEvent):
                pieces.append(events.source[item.span.start:item.span.end])
                continue
            spec = read_bpf_object(item.path, item.is_source, Path.cwd())
            loaded.append((spec, plan_map_updates(item, spec)))
            found = program_events(spec)
            objects.append(_ObjectPrograms(index, item.path, found))
            pieces.extend(p.event + _terms_and_modifiers(item, events.source) for p in found if p.event)
        if not pieces:  # every program attaches without a perf event (raw tracepoints, XDP)
            out.append(EventList((), ""))
        else:
            out.append(parse(",".join(pieces)) if pieces != [events.source] else events)
    outputs = plan_outputs(loaded)
    if outputs.create_event:
        out.append(parse(STDOUT_EVENT_STRING))
    for o in outputs.outputs:  # evspec's, not perf's: said with the object, not among perf's evsels
        objects[o.object_index].outputs.append(o.describe())
    probes = {p.event for o in objects for p in o.programs if p.created and p.event}
    return out, objects, (WithProbes(system, probes) if probes and system is not None else system)


def _terms_and_modifiers(event: BpfEvent, source: str) -> str:
    """The BPF event's own event terms and modifiers, for each event of its programs."""
    terms = [source[t.span.start:t.span.end] for t in (event.terms.items if event.terms else ())
             if not isinstance(t, (MapTerm, ProgTerm, VarTerm))]  # object terms stay with the object
    text = f"/{','.join(terms)}/" if terms else ""
    if event.modifiers is not None and event.modifiers.letters:
        text += event.modifiers.letters if terms else ":" + event.modifiers.letters
    return text
