"""``evspec list``: what a system offers, like ``perf list``."""

from __future__ import annotations

import argparse
import json


def list_main(args: argparse.Namespace) -> int:
    from evspec.cli.app import _load_system
    from evspec.compiler.listing import list_events, to_json

    system = _load_system(args)
    events = list_events(system, args.what)
    if args.format == "json":
        print(json.dumps(to_json(events), indent=2))
        return 0
    width = max((len(e.label) for e in events), default=0)
    for e in events:
        print(f"  {e.label:<{width}}  [{e.description}]")
    return 0
