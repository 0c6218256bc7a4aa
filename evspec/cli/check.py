"""``evspec check``: every finding about event strings, in the chosen format."""

from __future__ import annotations

import argparse
import sys

from evspec.cli.app import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    _columns,
    _inputs,
    _load_system,
    _print_text,
    _run_checks,
    _use_color,
)

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from collections.abc import Sequence

    from evspec.check import CheckedSpec
    from evspec.dialect.check import DialectChecked


def check_main(args: argparse.Namespace) -> int:
    """Findings in the chosen format; with ``--perf VERSION`` merged with that perf's verdicts
    (``--format perf`` then prints what that perf prints, ``json`` adds each ``"perf"`` verdict)."""
    inputs = _inputs(args)
    system = _load_system(args.system)
    checked = _run_checks(inputs, system, args.mode)
    if not args.perf and any(d.code.startswith("ES") for c in checked for d in c.diagnostics):
        import os

        from evspec.dialect.check import accident_notes

        checked = accident_notes(checked, system=system, cwd=os.getcwd(), mode=args.mode)
    results = _with_perf(args, checked, system) if args.perf else None
    if results is None:
        diags = [d for c in checked for d in c.diagnostics]
    else:
        diags = [d for r in results for d in r.diagnostics]
    fmt = args.format
    if fmt == "text":
        if diags:
            _print_text(diags, _use_color(args.color))
    elif fmt == "perf" and results is not None:
        for r in results:
            _write_bytes(sys.stdout, r.verdict.stdout)
            _write_bytes(sys.stderr, r.verdict.stderr)
    elif fmt == "perf":
        from evspec.render.perf import render_perf

        for c in checked:
            if c.diagnostics:
                sys.stderr.write(render_perf(c.diagnostics))
    elif fmt == "json":
        from evspec.render.jsonfmt import render_json

        extra, per_diag = _perf_json(results) if results is not None else (None, None)
        sys.stdout.write(render_json(diags, extra=extra, diagnostic_extra=per_diag) + "\n")
    elif fmt == "sarif":
        from evspec.render.sarif import render_sarif

        sys.stdout.write(render_sarif(diags) + "\n")
    else:
        from evspec.render.github import render_github

        sys.stdout.write(render_github(diags))
    failing = diags if args.fail_on == "warning" else [d for d in diags if d.is_error]
    return EXIT_FINDINGS if failing else EXIT_CLEAN


def _write_bytes(stream, text: str) -> None:  # type: ignore[no-untyped-def]
    """What perf wrote, byte for byte: bytes that are no UTF-8 travel as surrogate escapes."""
    raw = getattr(stream, "buffer", None)
    if raw is None:
        stream.write(text)
        return
    stream.flush()
    raw.write(text.encode(errors="surrogateescape"))
    raw.flush()


def _with_perf(args: argparse.Namespace, checked: Sequence[CheckedSpec], system) -> list[DialectChecked]:  # type: ignore[no-untyped-def]
    from pathlib import Path

    from evspec.dialect.check import check_with_perf

    version = args.perf
    if version == "installed":
        from evspec.cli.app import UsageError
        from evspec.dialect.installed import ReleaseError, installed_release

        try:
            version = installed_release()
        except ReleaseError as exc:
            raise UsageError(str(exc)) from None
    return check_with_perf(checked, version, system=system, cwd=Path.cwd(), mode=args.mode, term_width=_columns())


def _perf_json(results: Sequence[DialectChecked]) -> tuple[dict[str, object], dict[int, dict[str, object]]]:
    """The JSON additions of ``--perf``: top-level keys, and the ``"perf"`` key of each diagnostic."""
    from evspec.dialect.check import perf_json

    owners = [r for r in results for _ in r.diagnostics]
    per_diag: dict[int, dict[str, object]] = {i: {"perf": perf_json(owner.verdict)} for i, owner in enumerate(owners)}
    verdicts = [{"event": r.spec.input.text, "source": r.spec.input.source.to_json(), **perf_json(r.verdict)}
                for r in results]
    extra = {"summary": {"perf_accepts": all(r.verdict.accepted for r in results)}, "perf": verdicts}
    return extra, per_diag
