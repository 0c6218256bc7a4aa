"""``evspec compile``: the perf_event_attr of every event, as perf 6.1 computes it."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from evspec.diagnostics import Diagnostic


def _render_findings(diags: Sequence[Diagnostic]) -> None:
    from evspec.render.text import render_text, summary_line

    sys.stderr.write(render_text(diags, color=False) + summary_line(diags) + "\n")


def compile_main(args: argparse.Namespace) -> int:
    from evspec.check import CheckOptions, check_specs
    from evspec.compiler.compile import compile_events
    from evspec.diagnostics import EvspecError
    from evspec.inputs import InputError, collect
    from evspec.system import load_system

    if not args.events:
        raise InputError("no event strings: give -e SPEC")
    system = load_system(args.system)
    checked = check_specs(collect(args.events, []), CheckOptions(system=system, mode=args.mode))
    errors = [d for c in checked for d in c.diagnostics if d.is_error]
    if errors:
        _render_findings(errors)
        return 1
    try:
        plan = compile_events([c.events for c in checked], system, args.mode)
    except EvspecError as exc:
        _render_findings(exc.diagnostics)
        return 1
    if args.format == "json":
        print(json.dumps(plan.to_json(), indent=2))
        return 0
    for event in plan.events:
        group = ""
        if event.group is not None:
            group = f", group {event.group.index}" + (" leader" if event.group.leader else "")
        print(f"{event.name}  (-e #{event.spec_index + 1}{group})")
        print("  perf_event_attr:")
        for field, value in event.attr.to_json().items():
            if value:
                print(f"    {field:<24}{value:#x}" if field.startswith(("config", "bp_addr")) else
                      f"    {field:<24}{value}")
    for ref in plan.bpf:
        print(f"{ref.event.path}  (-e #{ref.spec_index + 1}, BPF object: loaded by 'evspec record')")
    return 0
