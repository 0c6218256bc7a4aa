"""Diagnostics as a SARIF 2.1.0 log, for code-scanning services.

Event strings from files become physical locations (``startLine``/``startColumn``/``endColumn``,
1-based, end exclusive, counted in Unicode code points as the run's ``columnKind`` says); strings
given as ``-e`` arguments have no file, so they become a logical location ``-e #N`` with the
string itself as the region's snippet and the span as ``charOffset``/``charLength``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from urllib.parse import quote

import evspec
from evspec import codes
from evspec.diagnostics import Diagnostic, Severity, Source
from evspec.render.text import describe_source
from evspec.span import Span

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
    if source is not None and source.kind == "file":
        return {
            "startLine": source.line,
            "startColumn": span.start + 1,
            "endColumn": span.end + 1,
            "snippet": _text(event),
        }
    return {"charOffset": span.start, "charLength": len(span), "snippet": _text(event)}


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
        "message": _text(diag.message),
        "locations": [_location(diag.span, diag.event, diag.source, None)],
    }
    if diag.labels:
        result["relatedLocations"] = [
            {"id": n, **_location(lb.span, diag.event, diag.source, lb.message)}
            for n, lb in enumerate(diag.labels)
        ]
    properties: dict[str, object] = {"event": diag.event}
    if diag.help:
        properties["help"] = list(diag.help)
    if diag.notes:
        properties["notes"] = list(diag.notes)
    if diag.perf_message is not None:
        properties["perfMessage"] = diag.perf_message
    result["properties"] = properties
    return result


def sarif_log(diags: Sequence[Diagnostic], information_uri: str | None = None) -> dict[str, object]:
    """The SARIF log as a dict: one run of the ``evspec`` tool, rules for the codes that occur.
    The project has no public home page yet: ``informationUri`` is written only when given."""
    catalogue = codes.catalogue()
    rule_index: dict[str, int] = {}
    rules: list[dict[str, object]] = []
    for diag in diags:
        if diag.code not in rule_index:
            rule_index[diag.code] = len(rules)
            rules.append(_rule(diag.code, catalogue.get(diag.code), diag.severity))
    driver: dict[str, object] = {"name": "evspec", "version": evspec.__version__}
    if information_uri is not None:
        driver["informationUri"] = information_uri
    driver["rules"] = rules
    run = {
        "tool": {"driver": driver},
        "columnKind": "unicodeCodePoints",
        "results": [_result(d, rule_index[d.code]) for d in diags],
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render_sarif(diags: Sequence[Diagnostic], information_uri: str | None = None) -> str:
    """The SARIF 2.1.0 log as indented JSON (no trailing newline)."""
    return json.dumps(sarif_log(diags, information_uri), indent=2, ensure_ascii=False)
