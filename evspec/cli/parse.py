"""``evspec parse``: the typed AST of event strings, with spans, written as each is parsed."""

from __future__ import annotations

import argparse
import sys

from evspec.cli.app import EXIT_CLEAN, EXIT_FINDINGS, add_inputs, read_inputs, use_color

TYPE_CHECKING = False  # imports for annotations only
if TYPE_CHECKING:
    from collections.abc import Iterator

    from evspec.check import CheckedSpec


def add_parse_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("parse", help="print the AST of event strings")
    add_inputs(p, "files with one event string per line")
    p.add_argument("--format", choices=("text", "json"), default="text")


def parse_main(args: argparse.Namespace) -> int:
    """The typed AST of every string, as a tree or JSON, and the findings."""
    from evspec.check import CheckOptions, iter_checked

    checked = iter_checked(read_inputs(args), CheckOptions(system=None, mode="record"))
    if args.format == "json":
        return _json(checked)
    from evspec.render.ast import to_tree
    from evspec.render.text import counts_line, render_diagnostic

    color = use_color("auto")
    errors = warnings = 0
    findings: list[str] = []
    for c in checked:
        sys.stdout.write(f"# {c.input.text}\n{to_tree(c.events)}\n")
        for d in c.diagnostics:
            findings.append(render_diagnostic(d, color) + "\n")
            errors += d.is_error
            warnings += not d.is_error
    if errors or warnings:
        sys.stderr.write("".join(findings) + counts_line(errors, warnings) + "\n")
    return EXIT_FINDINGS if errors or warnings else EXIT_CLEAN


def _json(checked: Iterator[CheckedSpec]) -> int:
    """``{"results": [...], "diagnostics": [...], "summary": {...}}``, written as it is made; the
    diagnostics wait in a temporary file until the results are written."""
    from evspec.render.ast import to_data
    from evspec.render.jsonfmt import DiagnosticsJson, JsonWriter, dumped_item, spool_reader

    writer = JsonWriter(sys.stdout)
    writer.open_array("results")
    spool = None
    for c in checked:
        writer.item({"event": c.input.text, "source": c.input.source.to_json(), "ast": to_data(c.events)})
        if c.diagnostics:
            if spool is None:
                import tempfile

                spool = tempfile.TemporaryFile("w+", encoding="utf-8")
            for d in c.diagnostics:
                spool.write(dumped_item(d) + "\n")
    writer.close_array()
    stream = DiagnosticsJson(sys.stdout, writer)
    if spool is not None:
        with spool:
            spool.seek(0)
            for text, severity in spool_reader(spool):
                stream.add_dumped(text, severity)
    stream.close()
    sys.stdout.write("\n")
    return EXIT_FINDINGS if stream.count else EXIT_CLEAN
