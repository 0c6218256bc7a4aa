"""``evspec check --perf VERSION``: what a given perf release does with each string, next to
evspec's own findings.

Each checked string gets that perf's verdict (``evspec.dialect.predict``). Where the two disagree
the findings say so: a string evspec accepts and that perf rejects gets an ``EP001``/``EP002``
error quoting perf's message and caret; a string evspec rejects and that perf accepts, or rejects
differently, gets a note on evspec's first finding. Library code: returns data, never prints.
"""

from __future__ import annotations

from collections.abc import Sequence

from evspec.diagnostics import Diagnostic, error
from evspec.span import Slotted, Span

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms

if TYPE_CHECKING:
    from pathlib import Path

    from evspec.check import CheckedSpec
    from evspec.dialect import PerfError, PerfVerdict
    from evspec.system.model import System

CODE_PERF_REJECTS = "EP001"
CODE_PERF_SILENT = "EP002"


class DialectChecked(Slotted):
    """A checked string, its findings with perf's disagreement added, and that perf's verdict."""

    spec: CheckedSpec
    diagnostics: tuple[Diagnostic, ...]
    verdict: PerfVerdict


def _noted(diag: Diagnostic, notes: tuple[str, ...], perf: tuple[str | None, str | None] | None = None) -> Diagnostic:
    """``diag`` with ``notes`` added (and, given, its perf message and help replaced)."""
    message, help_ = perf if perf is not None else (diag.perf_message, diag.perf_help)
    return Diagnostic(diag.code, diag.severity, diag.message, diag.span, diag.labels, diag.help,
                      (*diag.notes, *notes), message, help_, diag.event, diag.source)


def _caret_span(text: str, column: int) -> Span:
    """The character perf's caret points at; the whole string for column -1 (the opening quote)."""
    if not text:
        return Span(0, 0)
    if column < 0:
        return Span(0, len(text))
    start = min(column, len(text) - 1)
    return Span(start, start + 1)


def _perf_said(err: PerfError) -> str:
    # 1-based, as every column of the human-readable output ('col 9'); JSON keeps perf's 0-based column
    where = "with its caret under the opening quote" if err.column < 0 else f"with its caret at col {err.column + 1}"
    return f"'{err.message}' {where}"


def _verdict_notes(verdict: PerfVerdict) -> tuple[str, ...]:
    notes: list[str] = []
    if verdict.initial_error is not None:
        notes.append(f"perf {verdict.version} also prints 'Initial error:' {_perf_said(verdict.initial_error)}")
    notes.extend(f"perf {verdict.version} also prints {_perf_said(e)}" for e in verdict.more_errors)
    if verdict.quirk:
        notes.append(f"why: {verdict.quirk}")
    return tuple(notes)


def _rejection(spec: CheckedSpec, verdict: PerfVerdict) -> Diagnostic:
    text = spec.input.text
    if verdict.silent or verdict.error is None:
        diag = error(
            CODE_PERF_SILENT,
            f"perf {verdict.version} rejects this string without saying why (evspec accepts it)",
            Span(0, len(text)),
            notes=_verdict_notes(verdict),
        )
    else:
        err = verdict.error
        diag = error(
            CODE_PERF_REJECTS,
            f"perf {verdict.version} rejects this string (evspec accepts it): {_perf_said(err)}",
            _caret_span(text, err.column),
            notes=_verdict_notes(verdict),
            perf_message=err.message,
            perf_help=err.help,
        )
    return diag.located(text, spec.input.source)


def _annotated(first: Diagnostic, verdict: PerfVerdict) -> Diagnostic:
    """evspec's first error with the chosen perf's verdict added; its ``perf_message`` (what perf
    says about the problem) becomes that release's own words, or none where it says nothing."""
    if verdict.accepted:
        said = f"perf {verdict.version} accepts this string"
    elif verdict.silent or verdict.error is None:
        said = f"perf {verdict.version} rejects it too, without saying why"
    else:
        said = f"perf {verdict.version} rejects it too: {_perf_said(verdict.error)}"
    err = verdict.error if not verdict.accepted else None
    return _noted(first, (said, *_verdict_notes(verdict)),
                  (err.message, err.help) if err is not None else (None, None))


def merge_verdict(spec: CheckedSpec, verdict: PerfVerdict) -> tuple[Diagnostic, ...]:
    """evspec's findings for ``spec`` with ``verdict``'s disagreement folded in."""
    diags = spec.diagnostics
    errors = [i for i, d in enumerate(diags) if d.is_error]
    if not errors:
        if verdict.accepted:
            return diags
        return tuple(sorted((*diags, _rejection(spec, verdict)), key=lambda d: d.span.start))
    first = errors[0]
    return (*diags[:first], _annotated(diags[first], verdict), *diags[first + 1 :])


def check_with_perf(
    checked: Sequence[CheckedSpec],
    version: str,
    *,
    system: System | None,
    cwd: Path,
    mode: str,
    term_width: int = 80,
) -> list[DialectChecked]:
    """Predict ``version``'s verdict for every string and merge it into the findings. Strings of
    one command are one perf command line: a map's ``event=`` finds the events of earlier ones."""
    from evspec.dialect import predict

    out: list[DialectChecked] = []
    earlier: dict[int, list[str]] = {}  # per command: the events its earlier -e options added
    for spec in checked:
        names = earlier.setdefault(spec.input.command, [])
        verdict = predict(spec.input.text, version, system=system, cwd=cwd, mode=mode,  # type: ignore[arg-type]
                          term_width=term_width, earlier_events=names)
        names.extend(verdict.evsels)
        out.append(DialectChecked(spec, merge_verdict(spec, verdict), verdict))
    return out


def perf_json(verdict: PerfVerdict) -> dict[str, object]:
    """The ``"perf"`` object each JSON diagnostic carries under ``--perf``."""
    err = verdict.error
    return {
        "version": verdict.version,
        "verdict": "ok" if verdict.accepted else "error",
        "message": err.message if err is not None else None,
        "column": err.column if err is not None else None,
        "silent": verdict.silent,
    }


# ---- COMPAT decision 15: what today's perf accepts only by accident

#: the releases the default check names when perf runs a string evspec rejects
CURRENT_RELEASES = ("6.12", "7.2", "7.3")


def _releases(versions: Sequence[str]) -> str:
    if len(versions) == 1:
        return f"perf {versions[0]} runs"
    return f"perf {', '.join(versions[:-1])} and {versions[-1]} run"


def _alike(versions: Sequence[str]) -> list[list[str]]:
    """The releases grouped where their profiles differ in nothing but the number (7.2, 7.3):
    one prediction answers for the group."""
    from evspec.dialect.versions import profile

    groups: dict[object, list[str]] = {}
    for version in versions:
        groups.setdefault(profile(version).derive(version=""), []).append(version)
    return list(groups.values())


def accident_notes(
    checked: Sequence[CheckedSpec], *, system: System | None, cwd: str | Path, mode: str
) -> list[CheckedSpec]:
    """The default check's findings with a note on each string whose first error is a syntax
    error that today's perf does not see (a character it skips, a number it truncates): which
    releases run it anyway, and as what (``perf 7.2 runs this as 'cpu-clock'``)."""
    from evspec.check import CheckedSpec
    from evspec.dialect import predict

    out: list[CheckedSpec] = []
    for spec in checked:
        diags = spec.diagnostics
        first = next((i for i, d in enumerate(diags) if d.is_error), None)
        if first is None or not diags[first].code.startswith("ES"):
            out.append(spec)
            continue
        runs: dict[str, list[str]] = {}
        for versions in _alike(CURRENT_RELEASES):
            verdict = predict(spec.input.text, versions[0], system=system, cwd=cwd, mode=mode)  # type: ignore[arg-type]
            if verdict.accepted:
                runs.setdefault(verdict.ran_as, []).extend(versions)
        if not runs:
            out.append(spec)
            continue
        notes = tuple(f"{_releases(versions)} this as {ran!r}" for ran, versions in runs.items())
        target = diags[first]
        every = sum(len(v) for v in runs.values()) == len(CURRENT_RELEASES)
        # where every current release runs it, an older perf's error message would contradict the note
        diags = (*diags[:first], _noted(target, notes, (None, None) if every else None), *diags[first + 1 :])
        out.append(CheckedSpec(spec.input, spec.events, diags))
    return out
