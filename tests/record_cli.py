"""``evspec record`` run in-process, as the command line parses it: the tests' one way to start it."""

from __future__ import annotations

import argparse
import io

from evspec.cli.record import add_record_parser, record_main


def run_record(*argv: str) -> tuple[int, str, str]:
    """The exit status, standard output and standard error of ``evspec record ARGV...``."""
    parser = argparse.ArgumentParser()
    add_record_parser(parser.add_subparsers(dest="cmd"))
    out, err = io.StringIO(), io.StringIO()
    status = record_main(parser.parse_args(["record", *argv]), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()
