"""The JSON contract: keys, types, order, and the extension points."""

from __future__ import annotations

import json

import pytest

from evspec.diagnostics import Label, Source, error, warning
from evspec.render.jsonfmt import render_json
from evspec.span import Span

CONTRACT_KEYS = ["code", "severity", "message", "span", "source", "event", "perf_message", "labels", "help",
                 "notes"]

DIAGS = [
    error("EB031", "no earlier event named 'evt'", Span(37, 40),
          labels=(Label(Span(23, 30), "map 'pmu_map'"),), help=("define it earlier",), notes=("a note",),
          perf_message="Event not found for map setting", perf_help="Hint:\tValid config terms:",
          event="./test_bpf_map_2.c/map:pmu_map.event=evt/", source=Source("arg", 1)),
    warning("WS001", "modifier 'p' has no effect", Span(10, 11), event="cpu-clock:p",
            source=Source("file", path="ci/events.txt", line=3)),
    error("EM001", "unknown event '事件'", Span(0, 2), event="事件"),
]


def load(text: str) -> dict[str, object]:
    doc = json.loads(text)
    assert isinstance(doc, dict)
    return doc


def is_span(value: object) -> bool:
    return (isinstance(value, dict) and list(value) == ["start", "end"]
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value.values())
            and value["start"] <= value["end"])


def check_contract(entry: dict[str, object]) -> None:
    assert list(entry)[: len(CONTRACT_KEYS)] == CONTRACT_KEYS
    assert isinstance(entry["code"], str)
    assert entry["severity"] in ("error", "warning")
    assert isinstance(entry["message"], str)
    assert is_span(entry["span"])
    source = entry["source"]
    if source is not None:
        assert isinstance(source, dict)
        if source["kind"] == "arg":
            assert list(source) == ["kind", "index"] and isinstance(source["index"], int)
        else:
            assert list(source) == ["kind", "path", "line"] and source["kind"] == "file"
            assert isinstance(source["path"], str) and isinstance(source["line"], int)
    assert isinstance(entry["event"], str)
    assert entry["perf_message"] is None or isinstance(entry["perf_message"], str)
    labels = entry["labels"]
    assert isinstance(labels, list)
    for label in labels:
        assert list(label) == ["span", "message"] and is_span(label["span"]) and isinstance(label["message"], str)
    for key in ("help", "notes"):
        assert isinstance(entry[key], list) and all(isinstance(s, str) for s in entry[key])


def test_contract_keys_and_types() -> None:
    doc = load(render_json(DIAGS))
    assert list(doc) == ["diagnostics", "summary"]
    entries = doc["diagnostics"]
    assert isinstance(entries, list) and len(entries) == 3
    for entry in entries:
        check_contract(entry)
    assert doc["summary"] == {"errors": 2, "warnings": 1}


def test_values_carry_every_field() -> None:
    first, second, third = load(render_json(DIAGS))["diagnostics"]  # type: ignore[misc]
    assert first == {
        "code": "EB031",
        "severity": "error",
        "message": "no earlier event named 'evt'",
        "span": {"start": 37, "end": 40},
        "source": {"kind": "arg", "index": 1},
        "event": "./test_bpf_map_2.c/map:pmu_map.event=evt/",
        "perf_message": "Event not found for map setting",
        "labels": [{"span": {"start": 23, "end": 30}, "message": "map 'pmu_map'"}],
        "help": ["define it earlier"],
        "notes": ["a note"],
        "perf_help": "Hint:\tValid config terms:",
    }
    assert second["source"] == {"kind": "file", "path": "ci/events.txt", "line": 3}
    assert second["severity"] == "warning" and second["perf_message"] is None
    assert third["source"] is None


def test_output_is_indented_utf8_without_ascii_escapes() -> None:
    text = render_json(DIAGS)
    assert "事件" in text and "\\u" not in text
    assert text.startswith('{\n  "diagnostics": [\n    {\n      "code": "EB031"')
    assert not text.endswith("\n")


def test_empty() -> None:
    assert load(render_json([])) == {"diagnostics": [], "summary": {"errors": 0, "warnings": 0}}


def test_extra_top_level_and_summary_keys() -> None:
    doc = load(render_json(DIAGS, extra={"mode": "perf", "summary": {"perf_accepts": False}}))
    assert list(doc) == ["diagnostics", "summary", "mode"]
    assert doc["summary"] == {"errors": 2, "warnings": 1, "perf_accepts": False}


def test_per_diagnostic_extra() -> None:
    perf = {"perf": {"accepts": False, "column": 23}}
    doc = load(render_json(DIAGS, diagnostic_extra={0: perf}))
    entries = doc["diagnostics"]
    assert isinstance(entries, list)
    assert list(entries[0])[-1] == "perf" and entries[0]["perf"] == {"accepts": False, "column": 23}
    assert "perf" not in entries[1] and "perf" not in entries[2]
    check_contract(entries[0])


@pytest.mark.parametrize(
    ("extra", "diagnostic_extra"),
    [
        ({"diagnostics": []}, None),
        ({"summary": {"errors": 5}}, None),
        ({"summary": 3}, None),
        (None, {0: {"code": "X"}}),
    ],
)
def test_extras_cannot_replace_contract_keys(extra: dict[str, object] | None,
                                             diagnostic_extra: dict[int, dict[str, object]] | None) -> None:
    with pytest.raises(ValueError):
        render_json(DIAGS, extra=extra, diagnostic_extra=diagnostic_extra)
