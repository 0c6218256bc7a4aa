"""SARIF 2.1.0 output, checked against the schema's structure by hand.

The schema (sarif-schema-2.1.0.json, OASIS) cannot be downloaded here, so the objects evspec
emits are described below with their full property lists (the schema sets
``additionalProperties: false`` on them), required properties and value types.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest

import evspec
from evspec import codes
from evspec.codes import CodeInfo
from evspec.diagnostics import Diagnostic, Label, Source, error, warning
from evspec.render.sarif import render_sarif, sarif_log
from evspec.span import Span

Check = Callable[[object, str], None]


@dataclass(frozen=True)
class ObjectType:
    properties: dict[str, Check]
    required: tuple[str, ...] = ()
    any_of: tuple[tuple[str, ...], ...] = ()  # at least one of each group must be present
    open_ended: bool = False  # propertyBag: any extra key allowed


def is_str(value: object, where: str) -> None:
    assert isinstance(value, str), f"{where}: expected a string"


def is_int(minimum: int) -> Check:
    def check(value: object, where: str) -> None:
        assert isinstance(value, int) and not isinstance(value, bool), f"{where}: expected an integer"
        assert value >= minimum, f"{where}: {value} < {minimum}"

    return check


def enum(*values: str) -> Check:
    def check(value: object, where: str) -> None:
        assert value in values, f"{where}: {value!r} not in {values}"

    return check


def uri(value: object, where: str) -> None:
    is_str(value, where)
    assert isinstance(value, str) and not any(c in value for c in ' "<>\\^`{|}'), f"{where}: not a URI"


def obj(name: str) -> Check:
    return lambda value, where: validate(value, name, where)


def array(item: Check, unique: bool = False) -> Check:
    def check(value: object, where: str) -> None:
        assert isinstance(value, list), f"{where}: expected an array"
        for i, element in enumerate(value):
            item(element, f"{where}[{i}]")
        if unique:
            dumped = [json.dumps(v, sort_keys=True) for v in value]
            assert len(set(dumped)) == len(dumped), f"{where}: items must be unique"

    return check


def anything(value: object, where: str) -> None:
    pass


LEVEL = enum("none", "note", "warning", "error")

SCHEMA: dict[str, ObjectType] = {
    "sarifLog": ObjectType(
        {"$schema": uri, "version": enum("2.1.0"), "runs": array(obj("run")),
         "inlineExternalProperties": anything, "properties": obj("propertyBag")},
        required=("version", "runs"),
    ),
    "run": ObjectType(
        {name: anything for name in (
            "invocations", "conversion", "language", "versionControlProvenance", "originalUriBaseIds",
            "artifacts", "logicalLocations", "graphs", "automationDetails", "runAggregates",
            "baselineGuid", "redactionTokens", "defaultEncoding", "defaultSourceLanguage",
            "newlineSequences", "externalPropertyFileReferences", "threadFlowLocations", "taxonomies",
            "addresses", "translations", "policies", "webRequests", "webResponses", "specialLocations")}
        | {"tool": obj("tool"), "results": array(obj("result")),
           "columnKind": enum("utf16CodeUnits", "unicodeCodePoints"), "properties": obj("propertyBag")},
        required=("tool",),
    ),
    "tool": ObjectType(
        {"driver": obj("toolComponent"), "extensions": array(obj("toolComponent")),
         "properties": obj("propertyBag")},
        required=("driver",),
    ),
    "toolComponent": ObjectType(
        {name: anything for name in (
            "guid", "organization", "product", "productSuite", "fullName", "semanticVersion",
            "dottedQuadFileVersion", "releaseDateUtc", "downloadUri", "globalMessageStrings",
            "notifications", "taxa", "locations", "language", "contents", "isComprehensive",
            "localizedDataSemanticVersion", "minimumRequiredLocalizedDataSemanticVersion",
            "associatedComponent", "translationMetadata", "supportedTaxonomies")}
        | {"name": is_str, "version": is_str, "informationUri": uri,
           "shortDescription": obj("multiformatMessageString"),
           "fullDescription": obj("multiformatMessageString"),
           "rules": array(obj("reportingDescriptor"), unique=True), "properties": obj("propertyBag")},
        required=("name",),
    ),
    "reportingDescriptor": ObjectType(
        {name: anything for name in (
            "deprecatedIds", "guid", "deprecatedGuids", "name", "deprecatedNames", "messageStrings",
            "helpUri", "relationships")}
        | {"id": is_str, "shortDescription": obj("multiformatMessageString"),
           "fullDescription": obj("multiformatMessageString"), "help": obj("multiformatMessageString"),
           "defaultConfiguration": obj("reportingConfiguration"), "properties": obj("propertyBag")},
        required=("id",),
    ),
    "reportingConfiguration": ObjectType(
        {"enabled": anything, "level": LEVEL, "rank": anything, "parameters": anything,
         "properties": obj("propertyBag")},
    ),
    "multiformatMessageString": ObjectType(
        {"text": is_str, "markdown": is_str, "properties": obj("propertyBag")}, required=("text",)
    ),
    "message": ObjectType(
        {"text": is_str, "markdown": is_str, "id": is_str, "arguments": array(is_str),
         "properties": obj("propertyBag")},
        any_of=(("text", "id"),),
    ),
    "result": ObjectType(
        {name: anything for name in (
            "rule", "kind", "analysisTarget", "guid", "correlationGuid", "occurrenceCount",
            "partialFingerprints", "fingerprints", "stacks", "codeFlows", "graphs", "graphTraversals",
            "suppressions", "baselineState", "rank", "attachments", "hostedViewerUri", "workItemUris",
            "provenance", "fixes", "taxa", "webRequest", "webResponse")}
        | {"ruleId": is_str, "ruleIndex": is_int(-1), "level": LEVEL, "message": obj("message"),
           "locations": array(obj("location")), "relatedLocations": array(obj("location"), unique=True),
           "properties": obj("propertyBag")},
        required=("message",),
    ),
    "location": ObjectType(
        {"id": is_int(-1), "physicalLocation": obj("physicalLocation"),
         "logicalLocations": array(obj("logicalLocation")), "message": obj("message"),
         "annotations": anything, "relationships": anything, "properties": obj("propertyBag")},
    ),
    "physicalLocation": ObjectType(
        {"address": anything, "artifactLocation": obj("artifactLocation"), "region": obj("region"),
         "contextRegion": obj("region"), "properties": obj("propertyBag")},
        any_of=(("address", "artifactLocation"),),
    ),
    "artifactLocation": ObjectType(
        {"uri": uri, "uriBaseId": is_str, "index": is_int(-1), "description": obj("message"),
         "properties": obj("propertyBag")},
    ),
    "region": ObjectType(
        {"startLine": is_int(1), "startColumn": is_int(1), "endLine": is_int(1), "endColumn": is_int(1),
         "charOffset": is_int(-1), "charLength": is_int(0), "byteOffset": is_int(-1),
         "byteLength": is_int(0), "snippet": obj("artifactContent"), "message": obj("message"),
         "sourceLanguage": is_str, "properties": obj("propertyBag")},
        # a text region is given by lines/columns or by a character offset (SARIF 3.30.2)
        any_of=(("startLine", "charOffset", "byteOffset"),),
    ),
    "artifactContent": ObjectType(
        {"text": is_str, "binary": is_str, "rendered": anything, "properties": obj("propertyBag")},
    ),
    "logicalLocation": ObjectType(
        {"name": is_str, "index": is_int(-1), "fullyQualifiedName": is_str, "decoratedName": is_str,
         "parentIndex": is_int(-1), "kind": is_str, "properties": obj("propertyBag")},
    ),
    "propertyBag": ObjectType({"tags": array(is_str, unique=True)}, open_ended=True),
}


def validate(value: object, type_name: str, where: str = "$") -> None:
    spec = SCHEMA[type_name]
    assert isinstance(value, dict), f"{where}: expected a {type_name} object"
    for key in spec.required:
        assert key in value, f"{where}: {type_name} requires {key!r}"
    for group in spec.any_of:
        assert any(key in value for key in group), f"{where}: {type_name} needs one of {group}"
    for key, item in value.items():
        check = spec.properties.get(key)
        if check is None:
            assert spec.open_ended, f"{where}: {type_name} has no property {key!r}"
            continue
        check(item, f"{where}.{key}")


CATALOGUE = {
    "EB031": CodeInfo("EB031", "event not found for a map term", "No earlier -e option defines it.",
                      "./x.o/map:m.event=evt/", "Define the event in an earlier -e option."),
    "WS001": CodeInfo("WS001", "modifier without effect", "The modifier changes nothing here."),
}

ARG = Source("arg", index=1)
FILE = Source("file", path="ci/my events.txt", line=7)
DIAGS: list[Diagnostic] = [
    error("EB031", "no earlier event named 'evt'", Span(37, 40),
          labels=(Label(Span(23, 30), "map 'pmu_map'"),), help=("define it",), notes=("note",),
          perf_message="Event not found for map setting",
          event="./test_bpf_map_2.c/map:pmu_map.event=evt/", source=ARG),
    warning("WS001", "modifier 'p' has no effect", Span(10, 11), event="cpu-clock:p", source=FILE),
    error("EB031", "no earlier event named 'x'", Span(7, 7), event="cycles:", source=FILE),
    error("ES999", "a code without catalogue entry", Span(0, 1), event="x"),
]


@pytest.fixture(autouse=True)
def fixed_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codes, "catalogue", lambda: dict(CATALOGUE))


def test_log_matches_the_schema_structure() -> None:
    validate(json.loads(render_sarif(DIAGS)), "sarifLog")


def test_validator_rejects_what_the_schema_rejects() -> None:
    log = sarif_log(DIAGS)
    run = log["runs"][0]  # type: ignore[index]
    broken = [
        {**log, "version": "2.0.0"},
        {k: v for k, v in log.items() if k != "runs"},
        {**log, "runs": [{**run, "colour": 1}]},
        {**log, "runs": [{**run, "results": [{"ruleId": "X"}]}]},
        {**log, "runs": [{**run, "results": [{"message": {}}]}]},
        {**log, "runs": [{**run, "results": [{"message": {"text": "m"}, "level": "fatal"}]}]},
        {**log, "runs": [{**run, "results": [{"message": {"text": "m"},
                                              "locations": [{"physicalLocation": {"region": {"startLine": 1}}}]}]}]},
        {**log, "runs": [{**run, "results": [{"message": {"text": "m"}, "locations": [
            {"physicalLocation": {"artifactLocation": {"uri": "a b"}, "region": {"startLine": 0}}}]}]}]},
    ]
    for bad in broken:
        with pytest.raises(AssertionError):
            validate(bad, "sarifLog")


def test_driver_and_rules() -> None:
    run = sarif_log(DIAGS)["runs"][0]  # type: ignore[index]
    driver = run["tool"]["driver"]
    assert driver["name"] == "evspec" and driver["version"] == evspec.__version__
    assert "informationUri" not in driver  # the project has no public home page to point at
    assert sarif_log(DIAGS, "https://example.org/evspec")["runs"][0]["tool"]["driver"]["informationUri"] == (  # type: ignore[index]
        "https://example.org/evspec")
    assert [r["id"] for r in driver["rules"]] == ["EB031", "WS001", "ES999"]
    eb031 = driver["rules"][0]
    assert eb031["shortDescription"] == {"text": "event not found for a map term"}
    assert eb031["fullDescription"] == {"text": "No earlier -e option defines it."}
    assert eb031["help"] == {"text": "Define the event in an earlier -e option."}
    assert eb031["defaultConfiguration"] == {"level": "error"}
    assert "help" not in driver["rules"][1]  # no fix in the catalogue entry
    assert driver["rules"][2] == {"id": "ES999", "defaultConfiguration": {"level": "error"}}
    assert [r["ruleIndex"] for r in run["results"]] == [0, 1, 0, 2]
    for result in run["results"]:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_file_source_is_a_physical_location_with_1_based_exclusive_columns() -> None:
    result = sarif_log(DIAGS)["runs"][0]["results"][1]  # type: ignore[index]
    assert result["level"] == "warning"
    assert result["message"] == {"text": "modifier 'p' has no effect"}
    assert result["locations"] == [{
        "physicalLocation": {
            "artifactLocation": {"uri": "ci/my%20events.txt"},
            "region": {"startLine": 7, "startColumn": 11, "endColumn": 12, "snippet": {"text": "cpu-clock:p"}},
        }
    }]


def test_zero_width_span_is_an_empty_region() -> None:
    region = sarif_log(DIAGS)["runs"][0]["results"][2]["locations"][0]["physicalLocation"]["region"]  # type: ignore[index]
    assert (region["startColumn"], region["endColumn"]) == (8, 8)


def test_argument_source_is_a_logical_location_with_the_snippet() -> None:
    result = sarif_log(DIAGS)["runs"][0]["results"][0]  # type: ignore[index]
    (location,) = result["locations"]
    assert location["logicalLocations"] == [{"name": "-e #2", "kind": "parameter"}]
    region = location["physicalLocation"]["region"]
    assert region == {"charOffset": 37, "charLength": 3,
                      "snippet": {"text": "./test_bpf_map_2.c/map:pmu_map.event=evt/"}}
    assert "uri" not in location["physicalLocation"]["artifactLocation"]


def test_labels_are_related_locations_and_the_rest_goes_to_properties() -> None:
    result = sarif_log(DIAGS)["runs"][0]["results"][0]  # type: ignore[index]
    (related,) = result["relatedLocations"]
    assert related["id"] == 0 and related["message"] == {"text": "map 'pmu_map'"}
    assert related["physicalLocation"]["region"]["charOffset"] == 23
    assert result["properties"] == {
        "event": "./test_bpf_map_2.c/map:pmu_map.event=evt/", "help": ["define it"], "notes": ["note"],
        "perfMessage": "Event not found for map setting",
    }


def test_columns_count_code_points() -> None:
    diag = error("EM001", "unknown event", Span(2, 3), event="😀,x", source=FILE)
    log = sarif_log([diag])
    run = log["runs"][0]  # type: ignore[index]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["results"][0]["locations"][0]["physicalLocation"]["region"]["startColumn"] == 3
    validate(log, "sarifLog")


def test_empty_log_is_valid() -> None:
    log = json.loads(render_sarif([]))
    validate(log, "sarifLog")
    assert log["runs"][0]["results"] == [] and log["runs"][0]["tool"]["driver"]["rules"] == []
