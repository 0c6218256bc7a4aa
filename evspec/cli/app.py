"""What the commands of the ``evspec`` command line share, as public names: exit statuses, the
errors ``evspec.cli.main`` turns into them, the argument parser class and the argument groups
several commands take, reading event strings and the system to check against, and colour.
Library code raises; the commands render; ``evspec.cli.main`` picks the exit status."""

from __future__ import annotations

import argparse
import os
import sys

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import NoReturn

    from evspec.diagnostics import Diagnostic
    from evspec.inputs import SpecInput
    from evspec.system.model import System

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
PERF_VERSIONS = ("4.7", "6.1", "6.5", "6.6", "6.12", "7.2", "7.3")  # evspec.dialect.VERSIONS, without importing it
COMPILE_RELEASES = ("6.1", "6.12", "7.2", "7.3")  # evspec.compiler.releases.RELEASES, without importing it


class UsageError(Exception):
    """A command was given what it cannot use: exit 2 with the message."""


class Terminated(BaseException):
    """SIGTERM arrived: raised where the program is, so that cleanup runs as for SIGINT."""

    def __init__(self, signo: int) -> None:
        super().__init__(signo)
        self.signo = signo


def columns() -> int:
    """The terminal width as ``shutil.get_terminal_size`` finds it: $COLUMNS, else stdout's terminal."""
    try:
        width = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        width = 0
    if width > 0:
        return width
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, sized without importing shutil (and bz2, lzma, zlib with it), which
    argparse would do for every argument it adds: 2-4 ms of every cold start."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=columns() - 2)


class Parser(argparse.ArgumentParser):
    """An argument parser whose help is sized by ``HelpFormatter`` and whose errors exit 2."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def add_inputs(p: argparse.ArgumentParser, files_help: str) -> None:
    """``-e SPEC`` (repeatable) and FILE arguments, read by ``read_inputs``."""
    p.add_argument("-e", "--event", dest="events", action="append", default=[], metavar="SPEC",
                   help="an event string, as given to perf -e (repeatable; together they form one command)")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help=files_help + " ('-' reads stdin; blank lines and '#' comments are skipped)")


def add_clang_opt(p: argparse.ArgumentParser) -> None:
    """``--clang-opt OPT`` (repeatable), for commands that may compile a BPF source."""
    p.add_argument("--clang-opt", dest="clang_opts", action="append", default=[], metavar="OPT",
                   help="an option for clang when a .c source is compiled, after evspec's own (repeatable: "
                        "--clang-opt=-DDEBUG --clang-opt=-I/opt/inc; perf's llvm.clang-opt)")


def add_system(p: argparse.ArgumentParser, default: str) -> None:
    """``--system`` (read by ``load_system``) with the command's ``default``, and ``--mode``."""
    p.add_argument("--system", metavar="live|none|FILE",
                   help=f"machine to check against: the live one, none (syntax only), or a snapshot file "
                        f"from 'evspec system snapshot' (default: $EVSPEC_SYSTEM or {default})")
    p.set_defaults(system_default=default)
    p.add_argument("--mode", choices=("record", "stat"), default="record",
                   help="the rules of perf record or of perf stat: the terms each takes, and what each does "
                        "at run time with an event the machine cannot count or sample (default: record)")


def read_inputs(args: argparse.Namespace) -> Iterator[SpecInput]:
    """The event strings of ``-e`` and the files (``add_inputs``), read as they are checked."""
    from evspec.inputs import iter_inputs

    if not args.events and not args.files:
        raise UsageError("no event strings: give -e SPEC or a FILE ('-' for stdin)")
    return iter_inputs(args.events, args.files)


def system_spec(args: argparse.Namespace) -> tuple[str, str]:
    """The system a command describes, and where that choice came from: ``--system``, else
    ``$EVSPEC_SYSTEM``, else the command's default."""
    if args.system is not None:
        return args.system, "--system"
    chosen = os.environ.get("EVSPEC_SYSTEM")
    if chosen:
        return chosen, "$EVSPEC_SYSTEM"
    return args.system_default, "--system"


def load_system(args: argparse.Namespace) -> System | None:
    """The system ``system_spec`` names; None for ``none``, which keeps the syntax-only path free
    of the system model's imports."""
    spec, given_by = system_spec(args)
    if spec == "none":
        return None
    from evspec.system import load_system as load

    return load(spec, given_by=given_by)


def use_color(choice: str) -> bool:
    """``--color`` ``auto`` (stderr is a terminal and NO_COLOR is unset), ``always`` or ``never``."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stderr.isatty()


def print_text(diags: Sequence[Diagnostic], color: bool) -> None:
    """Findings on stderr as text, then their summary line."""
    from evspec.render.text import render_text, summary_line

    sys.stderr.write(render_text(diags, color=color))
    sys.stderr.write(summary_line(diags) + "\n")
