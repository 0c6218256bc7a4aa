"""``evspec explain CODE``: what a diagnostic code means, or the list of every code."""

from __future__ import annotations

import argparse

from evspec.cli.app import EXIT_CLEAN, UsageError


def add_explain_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("explain", help="explain a diagnostic code")
    p.add_argument("code", nargs="?", help="a code such as ES001 (omit to list every code)")


def explain_main(args: argparse.Namespace) -> int:
    from evspec.render.explain import explain, list_codes

    if not args.code:
        print(list_codes())
        return EXIT_CLEAN
    try:
        print(explain(args.code))
    except KeyError as exc:
        raise UsageError(str(exc.args[0]) if exc.args else f"unknown code {args.code}") from None
    return EXIT_CLEAN
