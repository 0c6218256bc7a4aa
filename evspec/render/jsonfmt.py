"""Diagnostics as JSON, for tools.

The contract (other keys may follow the listed ones, never replace them)::

    {"diagnostics": [{"code", "severity", "message", "span": {"start", "end"}, "source", "event",
                      "perf_message", "labels": [{"span", "message"}], "help", "notes",
                      "perf_help"}],
     "summary": {"errors", "warnings"}}

``severity`` is ``error``, ``warning`` or ``note`` (what the check could not do; it fails
nothing), and the summary counts ``notes`` too when there are any.

Spans are offsets into the event string. ``event`` holds it whole up to 400 characters; past
that, an excerpt around the span, and ``"excerpt": {"start", "length"}`` says where the excerpt
starts in the string and how long the string is. A problem that recurs in its string is one
diagnostic with ``"repeats": {"count", "spans"}`` (the first ten of the other spans).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from evspec.diagnostics import Diagnostic
from evspec.render.excerpt import REPEATS_SHOWN, clipped, clipped_all, excerpt
from evspec.span import Span

TYPE_CHECKING = False  # imports for annotations only: a cold start does not pay for them
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TextIO


def _span(span: Span) -> dict[str, int]:
    return {"start": span.start, "end": span.end}


def diagnostic_to_json(diag: Diagnostic) -> dict[str, object]:
    """One diagnostic as a JSON-ready dict, keys in contract order."""
    part = excerpt(diag.event, diag.span)
    out: dict[str, object] = {
        "code": diag.code,
        "severity": diag.severity.value,
        "message": clipped(diag.message),
        "span": _span(diag.span),
        "source": diag.source.to_json() if diag.source is not None else None,
        "event": part.text,
        "perf_message": None if diag.perf_message is None else clipped(diag.perf_message),
        "labels": [{"span": _span(lb.span), "message": clipped(lb.message)} for lb in diag.labels],
        "help": list(clipped_all(diag.help)),
        "notes": list(clipped_all(diag.notes)),
        "perf_help": None if diag.perf_help is None else clipped(diag.perf_help),
    }
    if not part.whole:
        out["excerpt"] = part.to_json()
    if diag.repeats:
        out["repeats"] = {"count": len(diag.repeats), "spans": [_span(s) for s in diag.repeats[:REPEATS_SHOWN]]}
    return out


def _merged(base: dict[str, object], more: Mapping[str, object], what: str) -> dict[str, object]:
    clash = sorted(set(base) & set(more))
    if clash:
        raise ValueError(f"{what} cannot replace the keys {', '.join(clash)}")
    return {**base, **more}


def _counts(diags: Iterable[Diagnostic]) -> dict[str, object]:
    counts = _Counts()
    for diag in diags:
        counts.add(diag.severity.value)
    return counts.summary()


class _Counts:
    """The summary's counts: ``errors``, ``warnings``, and ``notes`` when there are any."""

    def __init__(self) -> None:
        self.by_severity = {"error": 0, "warning": 0, "note": 0}

    def add(self, severity: str) -> None:
        self.by_severity[severity] += 1

    @property
    def total(self) -> int:
        return sum(self.by_severity.values())

    def summary(self) -> dict[str, object]:
        out: dict[str, object] = {"errors": self.by_severity["error"], "warnings": self.by_severity["warning"]}
        if self.by_severity["note"]:
            out["notes"] = self.by_severity["note"]
        return out


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
    top = dict(extra or {})
    more_summary = top.pop("summary", {})
    if not isinstance(more_summary, Mapping):
        raise ValueError("extra['summary'] must be a mapping of summary keys")
    summary = _merged(_counts(diags), more_summary, "extra summary keys")
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


def _dumped(value: object, depth: int) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)


def dumped_item(diag: Diagnostic) -> str:
    """A diagnostic as one line of a spool: its severity, a tab, and its item text with its line
    breaks written as NUL (which JSON text never holds raw: ``json`` escapes it in strings)."""
    return diag.severity.value + "\t" + _dumped(diagnostic_to_json(diag), 2).replace("\n", "\x00")


def spool_reader(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """The (item text, severity) pairs of a spool ``dumped_item`` wrote."""
    for line in lines:
        severity, _, text = line.rstrip("\n").partition("\t")
        yield text.replace("\x00", "\n"), severity


class JsonWriter:
    """A JSON object written to ``out`` as it is made, key by key and array item by item, so that
    a document about a million strings is never held whole; the text is what
    ``json.dumps(document, indent=2, ensure_ascii=False)`` makes of the same document."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._keys = 0
        self._items: int | None = None  # items of the array being written
        out.write("{")

    def _key(self, key: str) -> None:
        self._out.write(("," if self._keys else "") + "\n  " + json.dumps(key, ensure_ascii=False) + ": ")
        self._keys += 1

    def value(self, key: str, value: object) -> None:
        self._key(key)
        self._out.write(_dumped(value, 1))

    def open_array(self, key: str) -> None:
        self._key(key)
        self._out.write("[")
        self._items = 0

    def item(self, value: object) -> None:
        assert self._items is not None, "no array is open"
        self._out.write(("," if self._items else "") + "\n    " + _dumped(value, 2))
        self._items += 1

    def item_text(self, text: str) -> None:
        """An item already dumped at its depth (``_dumped(value, 2)``), as a spool holds it."""
        assert self._items is not None, "no array is open"
        self._out.write(("," if self._items else "") + "\n    " + text)
        self._items += 1

    def close_array(self) -> None:
        self._out.write("\n  ]" if self._items else "]")
        self._items = None

    def close(self) -> None:
        self._out.write("\n}" if self._keys else "}")


class DiagnosticsJson:
    """The diagnostics document of ``render_json``, written as the diagnostics come: ``add`` each,
    then ``close`` with the top-level keys and summary keys to add (see ``render_json``)."""

    def __init__(self, out: TextIO, writer: JsonWriter | None = None) -> None:
        self._writer = writer if writer is not None else JsonWriter(out)
        self._writer.open_array("diagnostics")
        self._counts = _Counts()

    def add(self, diag: Diagnostic, extra: Mapping[str, object] | None = None) -> None:
        entry = diagnostic_to_json(diag)
        if extra:
            entry = _merged(entry, extra, "extra keys of a diagnostic")
        self._writer.item(entry)
        self._counts.add(diag.severity.value)

    def add_dumped(self, text: str, severity: str) -> None:
        """A diagnostic ``dumped_item`` wrote (to a spool), of ``severity``."""
        self._writer.item_text(text)
        self._counts.add(severity)

    @property
    def count(self) -> int:
        return self._counts.total

    def close(self, extra: Mapping[str, object] | None = None, summary: Mapping[str, object] | None = None) -> None:
        self._writer.close_array()
        self._writer.value("summary", _merged(self._counts.summary(), summary or {}, "extra summary keys"))
        for key, value in (extra or {}).items():
            if key in ("diagnostics", "summary"):
                raise ValueError(f"extra top-level keys cannot replace the keys {key}")
            self._writer.value(key, value)
        self._writer.close()
