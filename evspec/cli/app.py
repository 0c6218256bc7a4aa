"""The ``evspec`` command line. Library code raises; this module renders and picks exit codes, in
one place (``main``): 0 clean, 1 findings, 2 usage or I/O error (``UsageError``, ``InputError``
and its ``SnapshotError``, any ``OSError``), 3 internal error (a bug in evspec, never a finding),
128+N when signal N stops the command (130 for SIGINT, 143 for SIGTERM)."""

from __future__ import annotations

import argparse
import os
import sys

from evspec import __version__

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from typing import NoReturn

    from evspec.check import CheckedSpec, Unverified
    from evspec.diagnostics import Diagnostic
    from evspec.inputs import SpecInput

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
PERF_VERSIONS = ("4.7", "6.1", "6.5", "6.6", "6.12", "7.2", "7.3")  # evspec.dialect.VERSIONS, without importing it
COMPILE_RELEASES = ("6.1", "6.12", "7.2", "7.3")  # evspec.compiler.releases.RELEASES, without importing it


class UsageError(Exception):
    pass


class Terminated(BaseException):
    """SIGTERM arrived: raised where the program is, so that cleanup runs as for SIGINT."""

    def __init__(self, signo: int) -> None:
        super().__init__(signo)
        self.signo = signo


def _columns() -> int:
    """The terminal width as ``shutil.get_terminal_size`` finds it: $COLUMNS, else stdout's terminal."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, sized without importing shutil (and bz2, lzma, zlib with it), which
    argparse would do for every argument it adds: 2-4 ms of every cold start."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _add_inputs(p: argparse.ArgumentParser, files_help: str) -> None:
    p.add_argument("-e", "--event", dest="events", action="append", default=[], metavar="SPEC",
                   help="an event string, as given to perf -e (repeatable; together they form one command)")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help=files_help + " ('-' reads stdin; blank lines and '#' comments are skipped)")


def add_clang_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clang-opt", dest="clang_opts", action="append", default=[], metavar="OPT",
                   help="an option for clang when a .c source is compiled, after evspec's own (repeatable: "
                        "--clang-opt=-DDEBUG --clang-opt=-I/opt/inc; perf's llvm.clang-opt)")


def _add_system(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--system", metavar="live|none|FILE",
                   help=f"machine to check against: the live one, none (syntax only), or a snapshot file "
                        f"from 'evspec system snapshot' (default: $EVSPEC_SYSTEM or {default})")
    p.set_defaults(system_default=default)
    p.add_argument("--mode", choices=("record", "stat"), default="record",
                   help="the rules of perf record or of perf stat: the terms each takes, and what each does "
                        "at run time with an event the machine cannot count or sample (default: record)")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. Given the known sub-``command`` about to run, only that sub-command's
    parser is built: each one costs a cold start time (argparse formats and translates its help as
    it goes) and record's needs heavy imports. Without a known command (``evspec -h``, a typo),
    all are built."""
    top = _Parser(prog="evspec", description="Parse, check, format, compile and load perf event strings.")
    top.add_argument("--version", action="version", version=f"evspec {__version__}")
    sub = top.add_subparsers(dest="subcommand", metavar="COMMAND", parser_class=_Parser)
    every = command not in COMMANDS

    if every or command == "parse":
        p = sub.add_parser("parse", help="print the AST of event strings")
        _add_inputs(p, "files with one event string per line")
        p.add_argument("--format", choices=("text", "json"), default="text")

    if every or command == "check":
        p = sub.add_parser("check", help="validate event strings (syntax; with --system also PMUs, "
                                         "tracepoints and BPF objects)")
        _add_inputs(p, "files with one event string per line")
        p.add_argument("--format", choices=("text", "perf", "json", "sarif", "github"), default="text")
        p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                       help="colour for --format text (auto: only on a terminal and without NO_COLOR)")
        p.add_argument("--fail-on", choices=("error", "warning"), default="warning",
                       help="exit 1 on any warning (default) or only on errors")
        p.add_argument("--perf", choices=(*PERF_VERSIONS, "installed"), metavar="VERSION",
                       help="also predict what perf VERSION (" + ", ".join(PERF_VERSIONS) + ", or 'installed': "
                            "the release of the perf on PATH) does with "
                            "each string: its verdict, message and caret, quirks explained; "
                            "--format perf then prints exactly what that perf prints")
        _add_system(p, "none")
        add_clang_opt(p)

    if every or command == "fmt":
        p = sub.add_parser("fmt", help="print event strings in canonical form")
        _add_inputs(p, "event files to format")
        mode = p.add_mutually_exclusive_group()
        mode.add_argument("--check", action="store_true",
                          help="print nothing but the lines that are not canonical; exit 1 if there are any")
        mode.add_argument("--write", "-w", action="store_true", help="rewrite the files in place")

    if every or command == "explain":
        p = sub.add_parser("explain", help="explain a diagnostic code")
        p.add_argument("code", nargs="?", help="a code such as ES001 (omit to list every code)")

    if every or command == "compile":
        p = sub.add_parser("compile", help="compile event strings to perf_event_attr plans")
        p.add_argument("-e", "--event", dest="events", action="append", default=[], metavar="SPEC")
        p.add_argument("--perf", choices=COMPILE_RELEASES, default=COMPILE_RELEASES[-1], metavar="VERSION",
                       help="the attrs perf VERSION (" + ", ".join(COMPILE_RELEASES) + ") computes "
                            "(default: the newest); a string that release refuses is an error")
        _add_system(p, "live")
        p.add_argument("--format", choices=("text", "json"), default="text")

    if every or command == "list":
        p = sub.add_parser("list", help="list the events a system offers, like perf list")
        p.add_argument("what", nargs="?", help="hw, sw, cache, tracepoint, pmu, or a glob")
        p.add_argument("--system", metavar="live|FILE",
                       help="machine to list: the live one or a snapshot file (default: $EVSPEC_SYSTEM or live)")
        p.set_defaults(system_default="live")
        p.add_argument("--format", choices=("text", "json"), default="text")

    if every or command == "system":
        p = sub.add_parser("system", help="describe this machine for checks elsewhere")
        ssub = p.add_subparsers(dest="system_command", metavar="ACTION", parser_class=_Parser, required=True)
        s = ssub.add_parser("snapshot", help="write a snapshot of this machine's PMUs, tracepoints and CPUs")
        s.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
        s.add_argument("--btf", action="store_true",
                       help="also save the running kernel's BTF and what BPF externs resolve against (uname, "
                            "Kconfig, kallsyms names; compressed), for checking CO-RE relocations and "
                            "externs against this kernel elsewhere")
        s.add_argument("--without-tracefs", action="store_true",
                       help="write the snapshot even when this user cannot read tracefs (Debian mounts it "
                            "mode 0700): it then holds no tracepoints, and kprobe and uprobe support unknown")

    if every or command == "record":
        from evspec.cli.record import add_record_parser

        add_record_parser(sub)

    if every or command == "script":
        from evspec.cli.script import add_script_parser

        add_script_parser(sub)

    if every or command == "verify":
        from evspec.cli.verify import add_verify_parser

        add_verify_parser(sub)

    if every or command == "inspect":
        p = sub.add_parser("inspect", help="show the maps and programs of a BPF object or source")
        p.add_argument("object", help="a BPF object (.o) or source (.c, compiled with clang)")
        p.add_argument("--format", choices=("text", "json"), default="text")
        add_clang_opt(p)
    return top


# ---------------------------------------------------------------------------------------------
# commands


def _inputs(args: argparse.Namespace) -> Iterator[SpecInput]:
    """The event strings of ``-e`` and the files, read as they are checked."""
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


def _load_system(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    spec, given_by = system_spec(args)
    if spec == "none":  # the syntax-only path stays free of the system model's imports
        return None
    from evspec.system import load_system

    return load_system(spec, given_by=given_by)


def _use_color(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stderr.isatty()


def _json_diags(diags: Sequence[Diagnostic]) -> dict[str, object]:
    import json

    from evspec.render.jsonfmt import render_json

    return json.loads(render_json(diags))  # type: ignore[no-any-return]


def _print_text(diags: Sequence[Diagnostic], color: bool) -> None:
    from evspec.render.text import render_text, summary_line

    sys.stderr.write(render_text(diags, color=color))
    sys.stderr.write(summary_line(diags) + "\n")


def _run_checks(inputs: Iterable[SpecInput], system, mode: str,  # type: ignore[no-untyped-def]
                unverified: Unverified | None = None, clang_opts: Sequence[str] = ()) -> list[CheckedSpec]:
    from evspec.check import CheckOptions, check_specs

    return check_specs(inputs, CheckOptions(system=system, mode=mode, clang_opts=clang_opts), unverified)


def cmd_parse(args: argparse.Namespace) -> int:
    from evspec.cli.parse import parse_main

    return parse_main(args)


def cmd_check(args: argparse.Namespace) -> int:
    from evspec.cli.check import check_main

    return check_main(args)


def cmd_fmt(args: argparse.Namespace) -> int:
    from evspec.cli.fmt import format_main

    return format_main(args.events, args.files, check=args.check, write=args.write,
                       render=lambda diags: _print_text(diags, _use_color("auto")))


def cmd_explain(args: argparse.Namespace) -> int:
    from evspec.render.explain import explain, list_codes

    if not args.code:
        print(list_codes())
        return EXIT_CLEAN
    try:
        print(explain(args.code))
    except KeyError as exc:
        raise UsageError(str(exc.args[0]) if exc.args else f"unknown code {args.code}") from None
    return EXIT_CLEAN


def cmd_compile(args: argparse.Namespace) -> int:
    from evspec.cli.compile import compile_main

    return compile_main(args)


def cmd_list(args: argparse.Namespace) -> int:
    from evspec.cli.list import list_main

    return list_main(args)


def cmd_system(args: argparse.Namespace) -> int:
    from evspec.cli.system import snapshot_main

    return snapshot_main(args)


def cmd_record(args: argparse.Namespace) -> int:
    from evspec.cli.record import record_main

    return record_main(args)


def cmd_script(args: argparse.Namespace) -> int:
    from evspec.cli.script import script_main

    return script_main(args)  # type: ignore[no-any-return]


def cmd_verify(args: argparse.Namespace) -> int:
    from evspec.cli.verify import verify_main

    return verify_main(args)


def cmd_inspect(args: argparse.Namespace) -> int:
    from evspec.cli.inspect import inspect_main

    return inspect_main(args)


COMMANDS = {
    "parse": cmd_parse, "check": cmd_check, "fmt": cmd_fmt, "explain": cmd_explain,
    "compile": cmd_compile, "list": cmd_list, "system": cmd_system, "inspect": cmd_inspect,
    "record": cmd_record, "script": cmd_script, "verify": cmd_verify,
}


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
    import _signal

    try:
        return _signal.signal(_signal.SIGTERM, handler)  # type: ignore[arg-type]
    except ValueError:  # not the main thread: leave signals alone
        return None


def main(argv: Sequence[str] | None = None) -> int:
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
            return COMMANDS[args.subcommand](args)
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
            _print_text(exc.diagnostics, _use_color("auto"))
            return EXIT_FINDINGS
        import traceback

        traceback.print_exc()
        print(f"evspec: internal error ({type(exc).__name__}: {exc}); this is a bug in evspec, "
              f"not a finding about your input", file=sys.stderr)
        return EXIT_INTERNAL
