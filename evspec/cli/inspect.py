"""``evspec inspect``: the maps and programs of a BPF object (or of a source, compiled first)."""

from __future__ import annotations

import argparse
import json
import sys

from evspec.cli.app import add_clang_opt
from evspec.cli.object_errors import print_object_error

EXIT_USAGE = 2


def add_inspect_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("inspect", help="show the maps and programs of a BPF object or source")
    p.add_argument("object", help="a BPF object (.o) or source (.c, compiled with clang)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    add_clang_opt(p)


def inspect_main(args: argparse.Namespace) -> int:
    """The report of the object named (a source compiled first), or exit 2 when it cannot be read:
    the object is this command's input, as for ``verify``."""
    from evspec.loader.errors import ObjectError
    from evspec.loader.object.inspect import inspect_report, inspect_text
    from evspec.loader.object.user_object import read_user_object
    from evspec.loader.sections.names import describe_section

    try:
        spec = read_user_object(args.object, clang_opts=args.clang_opts)
        report = inspect_report(spec, attach=describe_section)
    except ObjectError as exc:
        print_object_error("inspect", exc, sys.stderr)
        return EXIT_USAGE
    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        print(inspect_text(report))
    return 0
