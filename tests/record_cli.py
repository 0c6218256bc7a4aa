"""``evspec record`` and ``evspec script`` run in-process, as the command line parses them: the
tests' one way to start them."""

from __future__ import annotations

import argparse
import io
from collections.abc import Callable

from evspec.cli.record import add_record_parser, record_main
from evspec.cli.script import add_script_parser, script_main


def run_command(add_parser: Callable[..., object], main: Callable[..., int], *argv: str) -> tuple[int, str, str]:
    """The exit status, standard output and standard error of the sub-command ``add_parser`` adds,
    run by ``main`` with ``ARGV`` (the sub-command's name first)."""
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="cmd"))
    out, err = io.StringIO(), io.StringIO()
    status = main(parser.parse_args(list(argv)), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def run_record(*argv: str) -> tuple[int, str, str]:
    """``evspec record ARGV...``."""
    return run_command(add_record_parser, record_main, "record", *argv)


def run_script(*argv: str) -> tuple[int, str, str]:
    """``evspec script ARGV...``."""
    return run_command(add_script_parser, script_main, "script", *argv)
