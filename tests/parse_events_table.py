"""The evaluator of perf's parse-events tests written as tables (tests/data/parse_events/*.json).

perf's tools/perf/tests/parse-events.c parses event strings and asserts fields of the evsels
its parse_events leaves (before any command's set-up). A table holds the same facts as data:
``checks`` (one per check function of perf's file: which evsels, how many, what each field must
be) and the strings that use them. ``Table.run`` runs every string through
``evspec.compiler.compile.parse_events`` on a synthetic system and counts the assertions, so a
failure names the string, the evsel and the field.

A check::

  {"also": [CHECK, ...],          checks perf's function calls after its own
   "count": EXPR, "groups": EXPR,  evlist__nr_entries, evlist__nr_groups
   "first": ASSERT, "all": ASSERT, evlist__first, every evsel
   "seq": [ASSERT | {"repeat": EXPR, "seq": [ASSERT, ...]}, ...],   evsels in order
   "cases": [[WHEN, ASSERT], ...]} each evsel: the first WHEN it fits decides (perf's if/continue)

EXPR: a number, ``core`` (perf's num_core_entries: the core PMUs the evsels are on, 1 when one),
``cores`` (every core PMU of the system), ``tracepoints``, ``N*core``, ``N*core+M``, ``>N``, ``>=N``.
ASSERT: perf_event_attr fields by name, and ``match`` (perf's evsel__match: ``HARDWARE:INSTRUCTIONS``,
with the sysfs event's legacy alternate), ``hw_config`` (config & 0xffffffff), ``not_type``,
``name``, ``group_name``, ``is_leader``, ``label``/``leader`` (the evsel labelled so in the same
sequence is its leader), ``nr_members``, ``group_idx``, ``sample_read``, ``time``/``callchain``
(sample_type bits), ``pmu_is_core``, and the conditional ``if_grouped``, ``if_single_core``,
``if_members``. ``$core_type``/``$core_name``: the first core PMU's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evspec.compiler import attr as A
from evspec.compiler.compile import PlannedEvent, parse_events
from evspec.compiler.releases import Release
from evspec.compiler.resolve import perf_pmus
from evspec.parser import parse
from evspec.system.model import System

HW = {"CPU_CYCLES": 0, "INSTRUCTIONS": 1, "CACHE_REFERENCES": 2, "CACHE_MISSES": 3,
      "BRANCH_INSTRUCTIONS": 4, "BRANCH_MISSES": 5}
SW = {"CPU_CLOCK": 0, "TASK_CLOCK": 1, "PAGE_FAULTS": 2}
TYPES = {"HARDWARE": (A.PERF_TYPE_HARDWARE, HW), "SOFTWARE": (A.PERF_TYPE_SOFTWARE, SW)}


class Failure(AssertionError):
    pass


@dataclass
class Evsel:
    """One evsel as perf's tests see it."""

    planned: PlannedEvent
    is_core: bool
    leader: int  # index of its leader in the evlist
    nr_members: int  # perf's core.nr_members: the count on a leader, 0 on a member
    group_idx: int


@dataclass
class Run:
    string: str
    system_name: str
    system: System
    release: Release
    evsels: list[Evsel] = field(default_factory=list)
    assertions: int = 0

    @property
    def core_pmus(self) -> tuple[str, ...]:
        return tuple(p.name for p in perf_pmus(self.system, self.release).core)

    def fail(self, what: str) -> Failure:
        return Failure(f"{self.system_name}: {self.string!r}: {what}")


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def evsels_of(string: str, system: System, release: Release) -> list[Evsel]:
    planned = parse_events([parse(string)], system, release)
    core = set(p.name for p in perf_pmus(system, release).core)
    leaders: dict[tuple[int, int], int] = {}
    out: list[Evsel] = []
    for i, ev in enumerate(planned):
        group = ev.group
        if group is None:
            leader, members, idx = i, 1, 0
        else:
            key = (ev.spec_index, group.index)
            if group.leader:
                leaders[key] = i
            leader = leaders[key]
            members, idx = (group.members if group.leader else 0), group.position
        out.append(Evsel(ev, ev.pmu in core if ev.pmu else ev.attr["type"] in (0, 3, 4), leader, members, idx))
    return out


def _expr(run: Run, expr: object) -> tuple[str, int]:
    """(comparison, number) of a count expression."""
    if isinstance(expr, int):
        return "==", expr
    text = str(expr)
    op = "=="
    m = re.fullmatch(r"(>=|>)?\s*(.*)", text)
    assert m is not None
    if m.group(1):
        op, text = m.group(1), m.group(2)
    values = {"core": _num_core_entries(run), "cores": len(run.core_pmus),
              "tracepoints": sum(len(run.system.tracepoint_events(s)) for s in run.system.tracepoint_systems())}
    total = 0
    for part in text.split("+"):
        factor, _, name = part.strip().rpartition("*")
        value = values[name] if name in values else int(name)
        total += (int(factor) if factor else 1) * value
    return op, total


def _num_core_entries(run: Run) -> int:
    seen = {e.planned.pmu for e in run.evsels if e.is_core}
    return len(run.core_pmus) if len(seen) > 1 else 1


def _compare(run: Run, what: str, expr: object, actual: int) -> None:
    op, want = _expr(run, expr)
    run.assertions += 1
    ok = actual == want if op == "==" else actual > want if op == ">" else actual >= want
    if not ok:
        raise run.fail(f"{what} is {actual}, perf's test wants {op} {want} ({expr})")


def _value(run: Run, value: object) -> object:
    if value == "$core_type":
        return perf_pmus(run.system, run.release).core[0].type
    if isinstance(value, str) and "$core_name" in value:
        return value.replace("$core_name", run.core_pmus[0])
    return value


def _match(run: Run, ev: Evsel, spec: str) -> bool:
    """perf's evsel__match: type and config, the PMU type bits ignored on a machine whose kernel
    takes them, or a core PMU's sysfs event standing for that legacy hardware event."""
    kind, _, event = spec.partition(":")
    want_type, table = TYPES[kind]
    want = table[event]
    a = ev.planned.attr
    if a["type"] == want_type and a["config"] == want:
        return True
    if want_type != A.PERF_TYPE_HARDWARE:
        return False
    config = a["config"]
    if a["type"] in (A.PERF_TYPE_HARDWARE, A.PERF_TYPE_HW_CACHE) and perf_pmus(run.system, run.release).extended_type:
        config &= 0xFFFFFFFF
    if a["type"] == want_type and config == want:
        return True
    return ev.is_core and ev.planned.alternate_hw == want


def _fits(run: Run, index: int, when: dict[str, Any]) -> bool:
    ev = run.evsels[index]
    for key, value in when.items():
        if key == "match":
            fits = _match(run, ev, value)
        elif key == "pmu":
            fits = ev.planned.pmu == value
        elif key == "is_leader":
            fits = (ev.leader == index) == value
        else:
            fits = ev.planned.attr.value(key) == value
        if not fits:
            return False
    return True


def _assert(run: Run, index: int, spec: dict[str, Any], labels: dict[str, int]) -> None:
    ev = run.evsels[index]
    a = ev.planned.attr
    where = f"evsel {index} ({ev.planned.name})"
    for key, raw in spec.items():
        value = _value(run, raw)
        if key == "label":
            labels[value] = index  # type: ignore[index]
            continue
        if key == "if_grouped":
            if ev.leader != index or ev.nr_members > 1:
                _assert(run, index, value, labels)  # type: ignore[arg-type]
            continue
        if key == "if_single_core":
            if len(run.core_pmus) == 1:
                _assert(run, index, value, labels)  # type: ignore[arg-type]
            continue
        if key == "if_members":
            members, then = value  # type: ignore[misc]
            if ev.nr_members == members:
                _assert(run, index, then, labels)
            continue
        run.assertions += 1
        if key == "match":
            ok = _match(run, ev, value)  # type: ignore[arg-type]
        elif key == "hw_config":
            ok = a["config"] & 0xFFFFFFFF == value
        elif key == "not_type":
            ok = a["type"] != value
        elif key == "name":
            ok = ev.planned.name == value
        elif key == "group_name":
            ok = (ev.planned.group.name if ev.planned.group is not None else None) == value
        elif key == "is_leader":
            ok = (ev.leader == index) == value
        elif key == "leader":
            ok = ev.leader == labels[value]  # type: ignore[index]
        elif key == "nr_members":
            ok = ev.nr_members == value
        elif key == "group_idx":
            ok = ev.group_idx == value
        elif key == "sample_read":
            ok = ev.planned.sample_read == value
        elif key == "time":
            ok = bool(a.value("sample_type") & A.SAMPLE["TIME"]) == value
        elif key == "callchain":
            ok = bool(a.value("sample_type") & A.SAMPLE["CALLCHAIN"]) == value
        elif key == "pmu_is_core":
            ok = ev.is_core == value
        else:
            ok = a.value(key) == value
        if not ok:
            raise run.fail(f"{where}: {key} should be {value!r} ({_describe(ev)})")


def _describe(ev: Evsel) -> str:
    p = ev.planned
    return (f"pmu {p.pmu}, attr {dict(p.attr)}, leader {ev.leader}, nr_members {ev.nr_members}, "
            f"group_idx {ev.group_idx}, sample_read {p.sample_read}")


def _seq(run: Run, items: list[Any], start: int) -> int:
    index = start
    labels: dict[str, int] = {}
    for item in items:
        if isinstance(item, dict) and "repeat" in item:
            _, times = _expr(run, item["repeat"])
            for _ in range(times):
                index = _seq(run, item["seq"], index)
            continue
        if index >= len(run.evsels):
            raise run.fail(f"perf's test wants an evsel {index}, there are {len(run.evsels)}")
        _assert(run, index, item, labels)
        index += 1
    return index


def run_check(run: Run, checks: dict[str, Any], name: str) -> None:
    check = checks[name]
    if "count" in check:
        _compare(run, "the number of evsels", check["count"], len(run.evsels))
    if "groups" in check:
        groups = sum(1 for i, e in enumerate(run.evsels) if e.leader == i and e.nr_members > 1)
        _compare(run, "the number of groups", check["groups"], groups)
    if "first" in check:
        if not run.evsels:
            raise run.fail("no evsel")
        _assert(run, 0, check["first"], {})
    if "all" in check:
        for i in range(len(run.evsels)):
            _assert(run, i, check["all"], {})
    if "seq" in check:
        _seq(run, check["seq"], 0)
    if "cases" in check:
        labels: dict[str, int] = {}
        for i in range(len(run.evsels)):
            for when, spec in check["cases"]:
                if _fits(run, i, when):
                    _assert(run, i, spec, labels)
                    break
    for other in check.get("also", ()):
        run_check(run, checks, other)
