"""``evspec system snapshot``: this machine's PMUs, tracepoints, CPUs and features, for checks
elsewhere."""

from __future__ import annotations

import argparse
import sys


def snapshot_main(args: argparse.Namespace) -> int:
    from evspec.system import load_system
    from evspec.system.snapshot import snapshot_text

    system = load_system("live")
    assert system is not None
    text = snapshot_text(system)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
