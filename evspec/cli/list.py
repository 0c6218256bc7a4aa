"""``evspec list``: what a system offers, like ``perf list``."""

from __future__ import annotations

import argparse
import json

from evspec.cli.app import load_system


def add_list_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("list", help="list the events a system offers, like perf list")
    p.add_argument("what", nargs="?", help="hw, sw, cache, tracepoint, pmu, or a glob")
    p.add_argument("--system", metavar="live|FILE",
                   help="machine to list: the live one or a snapshot file (default: $EVSPEC_SYSTEM or live)")
    p.set_defaults(system_default="live")
    p.add_argument("--format", choices=("text", "json"), default="text")


def list_main(args: argparse.Namespace) -> int:
    from evspec.compiler.listing import list_events, to_json

    system = load_system(args)
    events = list_events(system, args.what)
    if args.format == "json":
        print(json.dumps(to_json(events), indent=2))
        return 0
    width = max((len(e.label) for e in events), default=0)
    for e in events:
        print(f"  {e.label:<{width}}  [{e.description}]")
    return 0
