"""Diagnostics as a SARIF 2.1.0 log, for code-scanning services.

Event strings from files become physical locations (``startLine``/``startColumn``/``endColumn``,
1-based, end exclusive, counted in Unicode code points as the run's ``columnKind`` says); strings
given as ``-e`` arguments have no file, so they become a logical location ``-e #N`` with the
string itself as the region's snippet and the span as ``charOffset``/``charLength``. Snippets of
strings past 400 characters are excerpts around the span (``evspec.render.excerpt``); a problem
that recurs in its string is one result, its other places (the first ten) related locations.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from urllib.parse import quote

import evspec
from evspec import codes
from evspec.diagnostics import Diagnostic, Severity, Source
from evspec.render.excerpt import REPEATS_SHOWN, clipped, clipped_all, excerpt
from evspec.render.text import describe_source
from evspec.span import Span

TYPE_CHECKING = False  # imports for annotations only
if TYPE_CHECKING:
    from typing import TextIO

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"


def _text(text: str) -> dict[str, str]:
    return {"text": text}


def _rule(code: str, info: codes.CodeInfo | None, severity: Severity) -> dict[str, object]:
    rule: dict[str, object] = {"id": code}
    if info is not None:
        rule["shortDescription"] = _text(info.title)
        if info.explanation:
            rule["fullDescription"] = _text(info.explanation)
        if info.fix:
            rule["help"] = _text(info.fix)
    rule["defaultConfiguration"] = {"level": severity.value}
    return rule


def _region(span: Span, event: str, source: Source | None) -> dict[str, object]:
    snippet = _text(excerpt(event, span).text)
    if source is not None and source.kind == "file":
        return {
            "startLine": source.line,
            "startColumn": span.start + 1,
            "endColumn": span.end + 1,
            "snippet": snippet,
        }
    return {"charOffset": span.start, "charLength": len(span), "snippet": snippet}


def _location(span: Span, event: str, source: Source | None, message: str | None) -> dict[str, object]:
    artifact: dict[str, object]
    if source is not None and source.kind == "file":
        artifact = {"uri": quote(source.path or "", safe="/")}
    else:
        artifact = {"description": _text("event string given on the command line")}
    location: dict[str, object] = {
        "physicalLocation": {"artifactLocation": artifact, "region": _region(span, event, source)}
    }
    if source is not None and source.kind == "arg":
        location["logicalLocations"] = [{"name": describe_source(source), "kind": "parameter"}]
    if message is not None:
        location["message"] = _text(message)
    return location


def _result(diag: Diagnostic, rule_index: int) -> dict[str, object]:
    result: dict[str, object] = {
        "ruleId": diag.code,
        "ruleIndex": rule_index,
        "level": diag.severity.value,
        "message": _text(clipped(diag.message)),
        "locations": [_location(diag.span, diag.event, diag.source, None)],
    }
    if diag.labels:
        result["relatedLocations"] = [
            {"id": n, **_location(lb.span, diag.event, diag.source, clipped(lb.message))}
            for n, lb in enumerate(diag.labels)
        ]
    part = excerpt(diag.event, diag.span)
    properties: dict[str, object] = {"event": part.text}
    if not part.whole:
        properties["excerpt"] = part.to_json()
    if diag.help:
        properties["help"] = list(clipped_all(diag.help))
    if diag.notes:
        properties["notes"] = list(clipped_all(diag.notes))
    if diag.repeats:
        properties["repeats"] = len(diag.repeats)
        earlier = result.get("relatedLocations", [])
        assert isinstance(earlier, list)
        result["relatedLocations"] = [
            *earlier,
            *({"id": len(diag.labels) + n, **_location(span, diag.event, diag.source, "the same problem")}
              for n, span in enumerate(diag.repeats[:REPEATS_SHOWN])),
        ]
    if diag.perf_message is not None:
        properties["perfMessage"] = clipped(diag.perf_message)
    result["properties"] = properties
    return result


class SarifRules:
    """The rules of a run, one per code, in order of first use."""

    def __init__(self) -> None:
        self._catalogue = codes.catalogue()
        self._index: dict[str, int] = {}
        self.rules: list[dict[str, object]] = []

    def index(self, diag: Diagnostic) -> int:
        if diag.code not in self._index:
            self._index[diag.code] = len(self.rules)
            self.rules.append(_rule(diag.code, self._catalogue.get(diag.code), diag.severity))
        return self._index[diag.code]


def _tool(rules: SarifRules, information_uri: str | None) -> dict[str, object]:
    driver: dict[str, object] = {"name": "evspec", "version": evspec.__version__}
    if information_uri is not None:
        driver["informationUri"] = information_uri
    driver["rules"] = rules.rules
    return {"driver": driver}


def sarif_log(diags: Sequence[Diagnostic], information_uri: str | None = None) -> dict[str, object]:
    """The SARIF log as a dict: one run of the ``evspec`` tool, rules for the codes that occur.
    The project has no public home page yet: ``informationUri`` is written only when given."""
    rules = SarifRules()
    results = [_result(d, rules.index(d)) for d in diags]
    run = {"columnKind": "unicodeCodePoints", "results": results, "tool": _tool(rules, information_uri)}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render_sarif(diags: Sequence[Diagnostic], information_uri: str | None = None) -> str:
    """The SARIF 2.1.0 log as indented JSON (no trailing newline)."""
    return json.dumps(sarif_log(diags, information_uri), indent=2, ensure_ascii=False)


class SarifStream:
    """``render_sarif``'s text, written to ``out`` result by result (the run's tool, with the
    rules of the codes seen, comes after its results): ``add`` each diagnostic, then ``close``."""

    def __init__(self, out: TextIO, information_uri: str | None = None) -> None:
        self._out = out
        self._uri = information_uri
        self._rules = SarifRules()
        self._results = 0
        head = json.dumps({"$schema": SARIF_SCHEMA, "version": SARIF_VERSION}, indent=2)[:-2]
        out.write(head + ',\n  "runs": [\n    {\n      "columnKind": "unicodeCodePoints",\n      "results": [')

    def add(self, diag: Diagnostic) -> None:
        text = json.dumps(_result(diag, self._rules.index(diag)), indent=2, ensure_ascii=False)
        self._out.write(("," if self._results else "") + "\n        " + text.replace("\n", "\n        "))
        self._results += 1

    def close(self) -> None:
        tool = json.dumps(_tool(self._rules, self._uri), indent=2, ensure_ascii=False).replace("\n", "\n      ")
        self._out.write(("\n      ]" if self._results else "]") + ',\n      "tool": ' + tool + "\n    }\n  ]\n}")
