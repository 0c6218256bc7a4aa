"""perf's own parse-events tests, as tables, against evspec: every event string of
tools/perf/tests/parse-events.c of perf 7.3 (the default release) and of perf 6.1
(``compile --perf 6.1``), with every field its check functions assert, on the synthetic Intel and
hybrid machines of tests/data/systems/ (tests/parse_events_table.py evaluates the tables).

perf 6.1's terms test reads ``read`` as the raw term 0xead; its code injects a ``read`` alias into
the PMU event list, which no machine has: evspec reads it as perf does on a machine (see
docs/differences-from-perf.md), and the table says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from parse_events_table import Failure, Run, evsels_of, load, run_check

from evspec.ast import Number, Term, TermKind
from evspec.compiler.releases import LATEST, PERF_61, Release
from evspec.parser import analyze, parse_terms
from evspec.system import read_snapshot, snapshot
from evspec.system.fixtures import hybrid_system, intel_system
from evspec.system.model import System

DATA = Path(__file__).resolve().parent / "data"
TABLES = {"7.3": DATA / "parse_events" / "perf-7.3.json", "6.1": DATA / "parse_events" / "perf-6.1.json"}
RELEASES = {"7.3": LATEST, "6.1": PERF_61}


def systems() -> dict[str, System]:
    return {name: read_snapshot(DATA / "systems" / f"{name}.json") for name in ("intel", "hybrid")}


def test_the_synthetic_machines_are_the_fixtures() -> None:
    """tests/data/systems/*.json are evspec.system.fixtures' Intel and hybrid machines (rewrite them
    with write_snapshot when the fixtures change)."""
    for name, fixture in (("intel", intel_system()), ("hybrid", hybrid_system())):
        assert json.loads((DATA / "systems" / f"{name}.json").read_text()) == snapshot(fixture), name


def _cases(version: str) -> list[tuple[str, str, str]]:
    table = load(TABLES[version])
    out = []
    for string, check, *extra in table["events"]:
        for system in (extra[0].get("systems") if extra else None) or table["systems"]:
            out.append((system, string, check))
    return out


def _run(version: str, system_name: str, string: str, check: str, machines: dict[str, System]) -> Run:
    """perf's test_events: 'default_core' written with the first core PMU's name, then parsed."""
    table = load(TABLES[version])
    release: Release = RELEASES[version]
    run = Run(string, system_name, machines[system_name], release)
    if run.core_pmus:
        string = run.string = string.replace("default_core", run.core_pmus[0])
    run.evsels = evsels_of(string, run.system, release)
    run_check(run, table["checks"], check)
    return run


@pytest.fixture(scope="module")
def machines() -> dict[str, System]:
    return systems()


@pytest.mark.parametrize("version", ["7.3", "6.1"])
def test_every_string_and_assertion(version: str, machines: dict[str, System]) -> None:
    failures: list[str] = []
    assertions = strings = 0
    for system_name, string, check in _cases(version):
        strings += 1
        try:
            assertions += _run(version, system_name, string, check, machines).assertions
        except Failure as exc:
            failures.append(str(exc))
        except Exception as exc:  # noqa: BLE001 - a string evspec refuses is a failure to report
            failures.append(f"{system_name}: {string!r}: {type(exc).__name__}: {exc}")
    assert not failures, f"{len(failures)} of {strings} strings fail:\n" + "\n".join(failures)
    assert assertions >= {"7.3": 2000, "6.1": 900}[version], assertions


@pytest.mark.parametrize("version", ["7.3", "6.1"])
def test_generated_pmu_event_strings(version: str, machines: dict[str, System]) -> None:
    """test__pmu_events: PMU/event=NAME/u for every sysfs event of every PMU (not those with a '.'
    or a '?' parameter), and NAME:u,PMU/event=NAME/u for a core PMU's names without '-'."""
    table = load(TABLES[version])
    release = RELEASES[version]
    failures = []
    made = 0
    generated = table["generated"]
    for system_name in table["systems"]:
        system = machines[system_name]
        for pmu in system.pmus():
            if "pmus" in generated and pmu.name not in generated["pmus"]:
                continue  # perf 6.1 made them for the cpu PMU only
            for alias in pmu.aliases.values():
                if "." in alias.name or "?" in alias.definition and "pmus" not in generated:
                    continue
                if "." in alias.name:
                    continue
                strings = [(f"{pmu.name}/event={alias.name}/u", generated["pmu_events"])]
                if pmu.is_core and ("-" not in alias.name or generated.get("mix_all_names")):
                    strings.append((f"{alias.name}:u,{pmu.name}/event={alias.name}/u", table["generated"]["pmu_events_mix"]))
                for string, check in strings:
                    made += 1
                    run = Run(string, system_name, system, release)
                    try:
                        run.evsels = evsels_of(string, system, release)
                        run_check(run, table["checks"], check)
                    except Exception as exc:  # noqa: BLE001
                        failures.append(f"{system_name}: {string!r}: {exc}")
    assert made >= 20 and not failures, "\n".join(failures)


def _term_tuple(term: Any, raw_as: str) -> tuple[str, str, int | None]:  # noqa: ANN401 - an AST term
    """(kind, name, number) of a term as perf's tests see it; perf 6.1 makes a raw term a config
    term as it parses it (``raw_as`` "config"), 7.3 keeps it raw until it knows the PMU."""
    assert isinstance(term, Term)
    value = term.value.value if isinstance(term.value, Number) else None
    if term.kind is TermKind.RAW and raw_as == "config":
        return "keyword", "config", value
    kind = {TermKind.KEYWORD: "keyword", TermKind.USER: "user", TermKind.RAW: "raw"}[term.kind]
    return kind, term.key, value


@pytest.mark.parametrize("version", ["7.3", "6.1"])
def test_term_lists(version: str) -> None:
    """test__terms: the term kinds, names and values of an alias-file term list, where perf's
    test and a machine agree; where they do not, the difference is documented."""
    differences_doc = (Path(__file__).resolve().parent.parent / "docs" / "differences-from-perf.md").read_text()
    for case in load(TABLES[version])["terms"]:
        got = [_term_tuple(t, case.get("raw_terms_as", "raw")) for t in parse_terms(case["string"]).items]
        assert got == [tuple(t) for t in case["terms"]], case["string"]
        for difference in case.get("differences", ()):
            assert tuple(difference["perf"]) != got[difference["term"]]
            assert "`read` in a term list" in differences_doc


@pytest.mark.parametrize("version", ["7.3", "6.1"])
def test_fake_pmu_strings_are_valid_syntax(version: str) -> None:
    """test__pmu_events_alias2 parses its strings with perf's fake PMU, which takes any event:
    only their syntax is checked."""
    strings = load(TABLES[version]).get("fake_pmu", [])
    for string in strings:
        assert analyze(string).ok, string
    assert strings or version == "6.1"


@pytest.mark.perf
@pytest.mark.parametrize(("machine", "perf_version"), [("intel", "7.3"), ("hybrid", "7.3"), ("intel", "6.1")])
def test_perfs_own_tests_pass_on_the_synthetic_machines(machine: str, perf_version: str, root_kernel: None,
                                                        tmp_path: Path) -> None:
    """The tables' facts are perf's: its own 'Parse event definition strings' test passes on a
    machine with the same PMUs (this one, shown a fake Intel or hybrid core PMU; perf 6.1's test
    is for machines with one core PMU)."""
    import os
    import subprocess

    from conftest import oracle
    from fake_sysfs import devices, run
    from fake_sysfs import machine as fake_machine

    if perf_version != "6.1":
        perf = oracle(f"perf-{perf_version}")
    elif os.access("/usr/bin/perf", os.X_OK):
        perf = "/usr/bin/perf"
    elif os.environ.get("CI") == "true":
        pytest.fail("perf 6.1 (/usr/bin/perf) is needed in CI")
    else:
        pytest.skip("perf 6.1 not installed")
    listed = subprocess.run([perf, "test", "list"], capture_output=True, text=True, timeout=60)
    listing = listed.stdout + listed.stderr
    number = next(line.split(":")[0].strip() for line in listing.splitlines()
                  if line.rstrip().endswith("Parse event definition strings"))
    folder = devices(fake_machine(machine), tmp_path / "devices")
    proc = run(folder, [perf, "test", "-v", number], timeout=600)
    out = proc.stdout + proc.stderr
    results = [line for line in out.splitlines() if ("subtest" in line or line.lstrip()[:1].isdigit()) and ":" in line
               and any(w in line for w in ("Ok", "FAILED", "Skip"))]
    assert len(results) >= 5 and not any("FAILED" in line for line in results), out[-3000:]
    skipped = [line for line in results if "Skip" in line]
    allowed = ("no aliases in sysfs", "not hybrid")
    assert all(any(a in line for a in allowed) for line in skipped), "\n".join(skipped)
