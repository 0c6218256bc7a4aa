"""`evspec list` and `evspec check` agree: every name list prints, check against the same system
accepts (perf stat's rules; perf record's too, but for the events list marks as counting only),
on this machine and on snapshots of others. list showed 10 hardware events and every cache event
on a machine without a hardware PMU, and 16 ftrace events check called unknown."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from evspec.cli import main
from evspec.system import snapshot
from evspec.system.fixtures import corpus_system, hybrid_system, intel_system


def run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    assert "internal error" not in err.getvalue(), err.getvalue()
    return code, out.getvalue()


@pytest.fixture(scope="module", params=["live", "corpus", "intel", "hybrid"])
def system(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "live":
        return "live"
    made = {"corpus": corpus_system, "intel": intel_system, "hybrid": hybrid_system}[request.param]()
    path = tmp_path_factory.mktemp("system") / f"{request.param}.json"
    path.write_text(json.dumps(snapshot(made)))
    return str(path)


def _listed(system: str) -> list[dict[str, object]]:
    code, out = run("list", "--system", system, "--format", "json")
    assert code == 0
    return json.loads(out)["events"]  # type: ignore[no-any-return]


def _strings(listed: list[dict[str, object]]) -> list[tuple[str, dict[str, object]]]:
    """Every name list prints, as an event string (an alias's parameters given a value)."""
    out = []
    for entry in listed:
        if entry.get("template"):
            continue
        for name in [entry["name"], *entry["aliases"]]:  # type: ignore[list-item]
            text = str(name)
            for parameter in entry.get("parameters", []):  # type: ignore[attr-defined]
                text = f"{text[:-1]},{parameter}=1/"
            out.append((text, entry))
    return out


def _check(system: str, mode: str, strings: list[str], tmp_path: Path) -> list[dict[str, object]]:
    events = tmp_path / f"listed-{mode}.events"
    events.write_text("".join(s + "\n" for s in strings))
    code, out = run("check", "--system", system, "--mode", mode, "--format", "json", str(events))
    found = json.loads(out)["diagnostics"]
    assert code == (1 if found else 0)
    return [{**d, "string": strings[d["source"]["line"] - 1]} for d in found]


def test_every_listed_name_is_accepted_by_check(system: str, tmp_path: Path) -> None:
    listed = _listed(system)
    strings = _strings(listed)
    assert len(strings) > 20
    assert _check(system, "stat", [s for s, _ in strings], tmp_path) == []
    in_record = _check(system, "record", [s for s, _ in strings], tmp_path)
    counting_only = {s for s, entry in strings if "counting only" in str(entry["description"])}
    assert all(d["code"] == "EM032" and d["string"] in counting_only for d in in_record), in_record
    assert {d["string"] for d in in_record} == counting_only


def test_no_hardware_events_are_listed_without_a_hardware_pmu(system: str) -> None:
    listed = _listed(system)
    kinds = {str(e["kind"]) for e in listed}
    has_core = system not in ("live",) and not system.endswith("corpus.json")
    if system == "live":
        from evspec.system.live import LiveSystem

        has_core = bool(LiveSystem().core_pmus())
    assert ("hw" in kinds and "cache" in kinds) is has_core
    assert ("rNNN" in {e["name"] for e in listed}) is has_core
    if has_core:
        hw = [e for e in listed if e["kind"] == "hw"]
        assert len(hw) == 10 and hw[0]["name"] == "cpu-cycles" and hw[0]["aliases"] == ["cycles"]


def test_aliases_are_a_list_and_the_text_joins_them() -> None:
    code, out = run("list", "--system", "none", "--format", "json", "sw")
    faults = next(e for e in json.loads(out)["events"] if e["name"] == "page-faults")
    assert code == 0 and faults["aliases"] == ["faults"]
    code, out = run("list", "--system", "none", "sw")
    assert "  page-faults OR faults " in out
    code, out = run("list", "--system", "none", "--format", "json", "faults")  # a glob finds the aliases too
    assert {e["name"] for e in json.loads(out)["events"]} >= {"page-faults", "minor-faults", "major-faults"}


def test_tracepoints_without_an_id_are_not_listed(tmp_path: Path) -> None:
    """ftrace's own events (ftrace:function has an id, ftrace:funcgraph_entry has none)."""
    data = snapshot(corpus_system())
    data["tracefs"]["events"]["ftrace"] = {"function": 1, "print": 5}
    path = tmp_path / "with_ftrace.json"
    path.write_text(json.dumps(data))
    from evspec.compiler.listing import list_events
    from evspec.system import read_snapshot

    class WithoutIds(type(read_snapshot(path))):  # type: ignore[misc]
        def tracepoint_events(self, system: str) -> tuple[str, ...]:
            found = super().tracepoint_events(system)
            return (*found, "funcgraph_entry") if system == "ftrace" else found

    names = {e.name for e in list_events(WithoutIds(data), "ftrace")}
    assert names == {"ftrace:function", "ftrace:print"}
