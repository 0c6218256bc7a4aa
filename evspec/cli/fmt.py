"""``evspec fmt``: canonical event strings, like a code formatter (``--check`` for CI)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from evspec.cli.app import add_inputs, print_text, use_color
from evspec.diagnostics import Diagnostic, EvspecError, Source
from evspec.inputs import InputError, is_skipped_line, split_comment, split_lines
from evspec.span import Slotted


class FormattedLine(Slotted):
    original: str
    canonical: str | None  # None: the line does not parse (see diagnostics)
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def changed(self) -> bool:
        return self.canonical is not None and self.canonical != self.original


def canonical(text: str, source: Source) -> FormattedLine:
    from evspec.parser import parse
    from evspec.printer import print_events

    try:
        return FormattedLine(text, print_events(parse(text)))
    except EvspecError as exc:
        return FormattedLine(text, None, tuple(d.located(text, source) for d in exc.diagnostics))


def format_lines(lines: Sequence[str], path: str) -> list[FormattedLine]:
    """Each line of an events file in canonical form: comments kept as they are, a trailing
    comment kept after the canonical string."""
    out = []
    for number, line in enumerate(lines, start=1):
        if is_skipped_line(line):
            out.append(FormattedLine(line, line))
            continue
        text, comment = split_comment(line)
        result = canonical(text, Source("file", path=path, line=number))
        if comment:
            result = FormattedLine(line, None if result.canonical is None else result.canonical + comment,
                                   result.diagnostics)
        out.append(result)
    return out


def add_fmt_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("fmt", help="print event strings in canonical form")
    add_inputs(p, "event files to format")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="print nothing but the lines that are not canonical; exit 1 if there are any")
    mode.add_argument("--write", "-w", action="store_true", help="rewrite the files in place")


def fmt_main(args: argparse.Namespace) -> int:
    return format_main(args.events, args.files, check=args.check, write=args.write,
                       render=lambda diags: print_text(diags, use_color("auto")))


def format_main(events: Sequence[str], files: Sequence[str], *, check: bool, write: bool,
                render: Callable[[Sequence[Diagnostic]], None]) -> int:
    if not events and not files:
        raise InputError("no event strings: give -e SPEC or a FILE ('-' for stdin)")
    if write and (events or "-" in files):
        raise InputError("--write rewrites files; it cannot be used with -e or '-'")
    diagnostics: list[Diagnostic] = []
    unformatted = 0
    for index, text in enumerate(events):
        result = canonical(text, Source("arg", index=index))
        diagnostics.extend(result.diagnostics)
        if result.canonical is None:
            continue
        if check:
            if result.changed:
                unformatted += 1
                print(f"-e #{index + 1}: not canonical: {text!r} -> {result.canonical!r}")
        else:
            print(result.canonical)
    for name in files:
        display = "<stdin>" if name == "-" else name
        try:
            data = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read {name}: {exc}") from exc
        results = format_lines(split_lines(data), display)
        for r in results:
            diagnostics.extend(r.diagnostics)
        new_text = "".join((r.canonical if r.canonical is not None else r.original) + "\n" for r in results)
        if check:
            for number, r in enumerate(results, start=1):
                if r.changed:
                    unformatted += 1
                    print(f"{display}:{number}: not canonical: {r.original!r} -> {r.canonical!r}")
        elif write:
            if new_text != data:
                Path(name).write_text(new_text, encoding="utf-8")
                print(f"reformatted {display}", file=sys.stderr)
        else:
            sys.stdout.write(new_text)
    if diagnostics:
        render(diagnostics)
    return 1 if diagnostics or unformatted else 0
