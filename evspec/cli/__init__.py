"""The ``evspec`` command: the command table, the argument parser it builds, and ``main``, which
runs one command and picks its exit status in one place: 0 clean, 1 findings, 2 usage or I/O error
(``UsageError``, ``InputError`` and its ``SnapshotError``, any ``OSError``), 3 internal error (a bug
in evspec, never a finding), 128+N when signal N stops the command (130 for SIGINT, 143 for
SIGTERM). Each command is a module of this package with ``add_NAME_parser(subparsers)`` and
``NAME_main(args)``; what they share is in ``evspec.cli.app``."""

from __future__ import annotations

import argparse
import os
import sys

from evspec import __version__
from evspec.cli.app import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_INTERNAL,
    EXIT_USAGE,
    Parser,
    Terminated,
    UsageError,
    print_text,
    use_color,
)

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["COMMANDS", "build_parser", "console_main", "main"]

# name: ("module:function" adding its parser, "module:function" running it), in --help's order;
# a command's module is imported only when that command is named (or for --help)
COMMANDS: dict[str, tuple[str, str]] = {
    "parse": ("evspec.cli.parse:add_parse_parser", "evspec.cli.parse:parse_main"),
    "check": ("evspec.cli.check:add_check_parser", "evspec.cli.check:check_main"),
    "fmt": ("evspec.cli.fmt:add_fmt_parser", "evspec.cli.fmt:fmt_main"),
    "explain": ("evspec.cli.explain:add_explain_parser", "evspec.cli.explain:explain_main"),
    "compile": ("evspec.cli.compile:add_compile_parser", "evspec.cli.compile:compile_main"),
    "list": ("evspec.cli.list:add_list_parser", "evspec.cli.list:list_main"),
    "system": ("evspec.cli.system:add_system_parser", "evspec.cli.system:system_main"),
    "record": ("evspec.cli.record:add_record_parser", "evspec.cli.record:record_main"),
    "script": ("evspec.cli.script:add_script_parser", "evspec.cli.script:script_main"),
    "verify": ("evspec.cli.verify:add_verify_parser", "evspec.cli.verify:verify_main"),
    "inspect": ("evspec.cli.inspect:add_inspect_parser", "evspec.cli.inspect:inspect_main"),
}


def _function(where: str) -> Callable[[argparse.Namespace], int]:
    """The function a ``"module:function"`` entry of ``COMMANDS`` names, its module imported now."""
    module, _, name = where.partition(":")
    return getattr(__import__(module, fromlist=[name]), name)  # type: ignore[no-any-return]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. Given the known sub-``command`` about to run, only that sub-command's
    parser is built: each one costs a cold start time (argparse formats and translates its help as
    it goes) and imports its module. Without a known command (``evspec -h``, a typo), all are built."""
    top = Parser(prog="evspec", description="Parse, check, format, compile and load perf event strings.")
    top.add_argument("--version", action="version", version=f"evspec {__version__}")
    sub = top.add_subparsers(dest="subcommand", metavar="COMMAND", parser_class=Parser)
    for name, (adds, _runs) in COMMANDS.items():
        if command not in COMMANDS or command == name:
            _function(adds)(sub)  # type: ignore[arg-type]
    return top


def _command_word(argv: Sequence[str]) -> str | None:
    """The sub-command named on the command line (the top level has no options with values)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _os_error(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename is not None else ""
    return f"{where}{exc.strerror or exc}"


def _raise_terminated(signo: int, _frame: object) -> None:
    raise Terminated(signo)


def _on_sigterm(handler: object) -> object:
    """Install ``handler`` for SIGTERM; the previous one (None outside the main thread). Through
    ``_signal``, which the interpreter has loaded already: ``signal`` costs a cold start 1-2 ms."""
    import _signal  # type: ignore[import-not-found]

    try:
        return _signal.signal(_signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` (default: ``sys.argv[1:]``) names; its exit status."""
    parser = build_parser(_command_word(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    if not args.subcommand:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    from evspec.inputs import InputError

    name = f"evspec {args.subcommand}" + (f" {args.system_command}" if args.subcommand == "system" else "")
    previous = _on_sigterm(_raise_terminated)
    try:
        try:
            return _function(COMMANDS[args.subcommand][1])(args)
        finally:
            if previous is not None:
                _on_sigterm(previous)
    except (UsageError, InputError) as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_CLEAN
    except OSError as exc:  # reading or writing a file, the terminal: an I/O error, not a bug
        print(f"{name}: error: {_os_error(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 128 + 2  # SIGINT
    except Terminated as exc:
        return 128 + exc.signo
    except Exception as exc:  # noqa: BLE001 - the last line of defence, reported as a bug
        from evspec.diagnostics import EvspecError

        if isinstance(exc, EvspecError):
            print_text(exc.diagnostics, use_color("auto"))
            return EXIT_FINDINGS
        import traceback

        traceback.print_exc()
        print(f"evspec: internal error ({type(exc).__name__}: {exc}); this is a bug in evspec, "
              f"not a finding about your input", file=sys.stderr)
        return EXIT_INTERNAL


def console_main() -> int:
    """The installed command (and ``python -m evspec``): ``main``, then every object it made is
    frozen out of the collector, so that the interpreter's exit does not walk them again (a few ms
    of each short run). Not for in-process callers: they keep using ``main``.

    argparse passes each of its own texts through gettext, which looks for a catalogue on disk
    every time (1-3 ms of a start); Python ships none for argparse, so the command asks for none."""
    argparse._ = str  # type: ignore[attr-defined]
    status = main()
    import gc

    gc.freeze()
    return status
