"""Diagnostics as JSON, for tools.

The contract (other keys may follow the listed ones, never replace them)::

    {"diagnostics": [{"code", "severity", "message", "span": {"start", "end"}, "source", "event",
                      "perf_message", "labels": [{"span", "message"}], "help", "notes",
                      "perf_help"}],
     "summary": {"errors", "warnings"}}
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from evspec.diagnostics import Diagnostic, Severity
from evspec.span import Span


def _span(span: Span) -> dict[str, int]:
    return {"start": span.start, "end": span.end}


def diagnostic_to_json(diag: Diagnostic) -> dict[str, object]:
    """One diagnostic as a JSON-ready dict, keys in contract order."""
    return {
        "code": diag.code,
        "severity": diag.severity.value,
        "message": diag.message,
        "span": _span(diag.span),
        "source": diag.source.to_json() if diag.source is not None else None,
        "event": diag.event,
        "perf_message": diag.perf_message,
        "labels": [{"span": _span(lb.span), "message": lb.message} for lb in diag.labels],
        "help": list(diag.help),
        "notes": list(diag.notes),
        "perf_help": diag.perf_help,
    }


def _merged(base: dict[str, object], more: Mapping[str, object], what: str) -> dict[str, object]:
    clash = sorted(set(base) & set(more))
    if clash:
        raise ValueError(f"{what} cannot replace the keys {', '.join(clash)}")
    return {**base, **more}


def json_document(
    diags: Sequence[Diagnostic],
    extra: Mapping[str, object] | None = None,
    diagnostic_extra: Mapping[int, Mapping[str, object]] | None = None,
) -> dict[str, object]:
    """The JSON document as a dict (see :func:`render_json` for the arguments)."""
    entries = []
    for i, diag in enumerate(diags):
        entry = diagnostic_to_json(diag)
        if diagnostic_extra is not None and i in diagnostic_extra:
            entry = _merged(entry, diagnostic_extra[i], f"extra keys of diagnostic {i}")
        entries.append(entry)
    errors = sum(1 for d in diags if d.is_error)
    notes = sum(1 for d in diags if d.severity is Severity.NOTE)
    summary: dict[str, object] = {"errors": errors, "warnings": len(diags) - errors - notes}
    if notes:
        summary["notes"] = notes

    top = dict(extra or {})
    more_summary = top.pop("summary", {})
    if not isinstance(more_summary, Mapping):
        raise ValueError("extra['summary'] must be a mapping of summary keys")
    summary = _merged(summary, more_summary, "extra summary keys")
    return _merged({"diagnostics": entries, "summary": summary}, top, "extra top-level keys")


def render_json(
    diags: Sequence[Diagnostic],
    extra: Mapping[str, object] | None = None,
    diagnostic_extra: Mapping[int, Mapping[str, object]] | None = None,
) -> str:
    """The diagnostics as an indented JSON document (no trailing newline).

    ``extra`` adds top-level keys; its ``summary`` entry, a mapping, adds keys to ``summary``.
    ``diagnostic_extra`` maps a position in ``diags`` to keys added to that diagnostic's object.
    Neither may replace a key of the contract.
    """
    return json.dumps(json_document(diags, extra, diagnostic_extra), indent=2, ensure_ascii=False)
