"""``evspec parse``: the typed AST of event strings, with spans."""

from __future__ import annotations

import argparse
import json

from evspec.cli.app import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    _inputs,
    _json_diags,
    _print_text,
    _run_checks,
    _use_color,
)


def parse_main(args: argparse.Namespace) -> int:
    """The typed AST of every string, as a tree or JSON, and the findings."""

    from evspec.render.ast import to_data, to_tree

    checked = _run_checks(_inputs(args), system=None, mode="record")
    findings = [d for c in checked for d in c.diagnostics]
    if args.format == "json":
        out = [{"event": c.input.text, "source": c.input.source.to_json(), "ast": to_data(c.events)}
               for c in checked]
        print(json.dumps({"results": out, **_json_diags(findings)}, indent=2, ensure_ascii=False))
    else:
        for c in checked:
            print(f"# {c.input.text}")
            print(to_tree(c.events))
        if findings:
            _print_text(findings, _use_color("auto"))
    return EXIT_FINDINGS if findings else EXIT_CLEAN
