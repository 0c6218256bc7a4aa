"""``evspec inspect``: the maps and programs of a BPF object (or of a source, compiled first)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def inspect_main(args: argparse.Namespace) -> int:
    from evspec.loader.errors import ObjectError
    from evspec.loader.object.inspect import inspect_report, inspect_text
    from evspec.loader.object.reader import read_object
    from evspec.loader.object.section import describe_section

    path = Path(args.object)
    try:
        if path.suffix == ".c":
            from evspec.loader.object.compile import compile_source

            path = compile_source(path)
        report = inspect_report(read_object(path), attach=describe_section)
    except ObjectError as exc:
        print(f"evspec inspect: error[{exc.code}]: {exc.message}", file=sys.stderr)
        if exc.detail:
            print(exc.detail.rstrip(), file=sys.stderr)
        for line in exc.help:
            print(f"  = help: {line}", file=sys.stderr)
        return 1
    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        print(inspect_text(report))
    return 0
