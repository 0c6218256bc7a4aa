"""``evspec check``: every finding about event strings, in the chosen format."""

from __future__ import annotations

import argparse
import sys

from evspec.cli.app import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    PERF_VERSIONS,
    UsageError,
    add_clang_opt,
    add_inputs,
    add_system,
    columns,
    load_system,
    read_inputs,
    use_color,
)

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from collections.abc import Sequence

    from evspec.check import CheckedSpec
    from evspec.diagnostics import Diagnostic
    from evspec.dialect.check import DialectChecked
    from evspec.render.jsonfmt import DiagnosticsJson
    from evspec.render.sarif import SarifStream


def add_check_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("check", help="validate event strings (syntax; with --system also PMUs, "
                                     "tracepoints and BPF objects)")
    add_inputs(p, "files with one event string per line")
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
    add_system(p, "none")
    add_clang_opt(p)


def check_main(args: argparse.Namespace) -> int:
    """Findings in the chosen format, written as each string is checked; with ``--perf VERSION``
    merged with that perf's verdicts (``--format perf`` then prints what that perf prints,
    ``json`` adds each ``"perf"`` verdict)."""
    inputs = read_inputs(args)
    system = load_system(args)
    from evspec.check import CheckOptions, Unverified, check_specs, iter_checked

    options = CheckOptions(system=system, mode=args.mode, clang_opts=args.clang_opts)
    if args.perf:
        unverified = Unverified() if system is None else None
        checked = check_specs(list(inputs), options, unverified)
        note = unverified.note() if unverified is not None else None
        return _check_with_perf(args, checked, system, () if note is None else (note,))
    from evspec.diagnostics import fails

    sink = _sink(args.format, args.color)
    unverified = Unverified() if system is None else None
    failing = False
    for one in iter_checked(inputs, options, unverified):
        if one.diagnostics:
            if any(d.code.startswith("ES") for d in one.diagnostics):
                one = _with_accident_notes(one, system, args.mode)
            sink.spec(one.diagnostics)
            failing = failing or any(fails(d, args.fail_on) for d in one.diagnostics)
    note = unverified.note() if unverified is not None else None
    if note is not None:
        sink.spec((note,))
    sink.close()
    return EXIT_FINDINGS if failing else EXIT_CLEAN


class _Sink:
    """Where findings go in one format: ``spec`` with the findings of each string, then ``close``."""

    def spec(self, diags: Sequence[Diagnostic]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _TextSink(_Sink):
    def __init__(self, color: bool) -> None:
        self.color = color
        self.counts = {"error": 0, "warning": 0, "note": 0}

    def spec(self, diags: Sequence[Diagnostic]) -> None:
        from evspec.render.text import render_diagnostic

        for d in diags:
            sys.stderr.write(render_diagnostic(d, self.color) + "\n")
            self.counts[d.severity.value] += 1

    def close(self) -> None:
        if any(self.counts.values()):
            from evspec.render.text import counts_line

            sys.stderr.write(counts_line(*self.counts.values()) + "\n")


class _PerfSink(_Sink):
    def spec(self, diags: Sequence[Diagnostic]) -> None:
        from evspec.render.perf import render_perf

        sys.stderr.write(render_perf(diags))


class _DocumentSink(_Sink):
    """A JSON or SARIF document on stdout, written as the findings come."""

    def __init__(self, stream: DiagnosticsJson | SarifStream) -> None:
        self.stream = stream

    def spec(self, diags: Sequence[Diagnostic]) -> None:
        for d in diags:
            self.stream.add(d)

    def close(self) -> None:
        self.stream.close()
        sys.stdout.write("\n")


class _GithubSink(_Sink):
    def spec(self, diags: Sequence[Diagnostic]) -> None:
        from evspec.render.github import render_github

        sys.stdout.write(render_github(diags))


def _sink(fmt: str, color: str) -> _Sink:
    if fmt == "text":
        return _TextSink(use_color(color))
    if fmt == "perf":
        return _PerfSink()
    if fmt == "json":
        from evspec.render.jsonfmt import DiagnosticsJson

        return _DocumentSink(DiagnosticsJson(sys.stdout))
    if fmt == "sarif":
        from evspec.render.sarif import SarifStream

        return _DocumentSink(SarifStream(sys.stdout))
    return _GithubSink()


def _check_with_perf(args: argparse.Namespace, checked: Sequence[CheckedSpec], system,  # type: ignore[no-untyped-def]
                     notes: tuple[Diagnostic, ...]) -> int:
    """``--perf VERSION``: the emulation needs every string of a command together. ``notes``
    (what was not verified) follow the findings, but in perf's own output."""
    results = _with_perf(args, checked, system)
    diags = [d for r in results for d in r.diagnostics]
    fmt = args.format
    if fmt == "perf":
        for r in results:
            _write_bytes(sys.stdout, r.verdict.stdout)
            _write_bytes(sys.stderr, r.verdict.stderr)
    elif fmt == "json":
        from evspec.render.jsonfmt import render_json

        extra, per_diag = _perf_json(results)
        sys.stdout.write(render_json([*diags, *notes], extra=extra, diagnostic_extra=per_diag) + "\n")
    else:
        sink = _sink(fmt, args.color)
        if diags or notes:
            sink.spec([*diags, *notes])
        sink.close()
    from evspec.diagnostics import fails

    return EXIT_FINDINGS if any(fails(d, args.fail_on) for d in diags) else EXIT_CLEAN


def _with_accident_notes(checked: CheckedSpec, system, mode: str) -> CheckedSpec:  # type: ignore[no-untyped-def]
    """A string with a syntax error, noted with what today's perf runs instead, if it runs it."""
    import os

    from evspec.dialect.check import accident_notes

    return accident_notes([checked], system=system, cwd=os.getcwd(), mode=mode)[0]


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
        from evspec.dialect.installed import ReleaseError, installed_release

        try:
            version = installed_release()
        except ReleaseError as exc:
            raise UsageError(str(exc)) from None
    return check_with_perf(checked, version, system=system, cwd=Path.cwd(), mode=args.mode, term_width=columns())


def _perf_json(results: Sequence[DialectChecked]) -> tuple[dict[str, object], dict[int, dict[str, object]]]:
    """The JSON additions of ``--perf``: top-level keys, and the ``"perf"`` key of each diagnostic."""
    from evspec.dialect.check import perf_json

    owners = [r for r in results for _ in r.diagnostics]
    per_diag: dict[int, dict[str, object]] = {i: {"perf": perf_json(owner.verdict)} for i, owner in enumerate(owners)}
    verdicts = [{"event": r.spec.input.text, "source": r.spec.input.source.to_json(), **perf_json(r.verdict)}
                for r in results]
    extra: dict[str, object] = {"summary": {"perf_accepts": all(r.verdict.accepted for r in results)}, "perf": verdicts}
    return extra, per_diag
