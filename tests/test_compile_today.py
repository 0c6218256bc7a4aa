"""Compiling as today's perf does (perf 7.3, the default; COMPAT 1.15), and what the other
releases of ``compile --perf VERSION`` do differently: named events as PMU events, the tool and
software PMUs, hardware and cache names as PMU terms, hybrid expansion and regrouping, the new
terms and modifiers, and the releases' refusals."""

from __future__ import annotations

import copy

import pytest

from evspec import parser
from evspec.compiler import attr as A
from evspec.compiler import check_semantics, compile_events
from evspec.compiler.compile import parse_events
from evspec.compiler.gate import release_findings
from evspec.compiler.releases import LATEST, PERF_61, PERF_72, PERF_612, RELEASES, release
from evspec.diagnostics import EvspecError
from evspec.system import SnapshotSystem
from evspec.system.fixtures import corpus_system, hybrid_system, intel_system

TOOL = 0xFFFFFFFE


def plan(text: str, system=None, mode: str = "stat", perf=LATEST):  # type: ignore[no-untyped-def]
    return compile_events([parser.parse(text)], corpus_system() if system is None else system, mode, perf)  # type: ignore[arg-type]


def evsels(text: str, system=None, perf=LATEST):  # type: ignore[no-untyped-def]
    return parse_events([parser.parse(text)], corpus_system() if system is None else system, perf)


def errors(text: str, system=None, mode: str = "record", perf=LATEST) -> list[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    found = check_semantics(parser.parse(text), corpus_system() if system is None else system, mode, perf)  # type: ignore[arg-type]
    return [(d.code, d.span.start, d.span.end) for d in found if d.is_error]


def type_config(text: str, system=None, perf=LATEST) -> list[tuple[str | None, int, int]]:  # type: ignore[no-untyped-def]
    return [(e.pmu, e.attr["type"], e.attr["config"]) for e in evsels(text, system, perf)]


def test_releases_are_data() -> None:
    assert list(RELEASES) == ["6.1", "6.12", "7.2", "7.3"] and LATEST is release("7.3")
    assert [r.attr_size for r in RELEASES.values()] == [128, 136, 144, 144]
    with pytest.raises(ValueError, match="known: 6.1, 6.12, 7.2, 7.3"):
        release("6.6")
    from evspec.cli.app import COMPILE_RELEASES

    assert COMPILE_RELEASES == tuple(RELEASES)  # compile --perf offers every release, newest last


def test_attr_size_and_guest_defaults() -> None:
    (a,) = [e.attr for e in plan("cpu-clock:u").events]
    assert (a["size"], a.value("exclude_guest"), a["exclude_kernel"]) == (144, 0, 1)
    (a,) = [e.attr for e in plan("cpu-clock:u", perf=PERF_612).events]
    assert (a["size"], a["exclude_guest"]) == (136, 1)
    (a,) = [e.attr for e in plan("cpu-clock:p", perf=PERF_72).events]
    assert (a["precise_ip"], a.value("exclude_guest")) == (1, 0)  # 7.2+: guest and host only by G/H
    (a,) = [e.attr for e in plan("cpu-clock:G").events]
    assert (a.value("exclude_guest"), a["exclude_host"]) == (0, 1)


def test_group_modifiers_keep_member_flags() -> None:
    p = plan("{cpu-clock:S,task-clock}:u")
    assert p.events[0].sample_read  # perf 6.1 cleared it; 6.12+ only set
    assert not plan("{cpu-clock:S,task-clock}:u", perf=PERF_61).events[0].sample_read


def test_named_events_are_pmu_events() -> None:
    assert type_config("cycles") == [("cpu", 0, 0)]  # the placeholder core PMU of a PMU-less machine
    assert type_config("CYCLES,Cpu-Clock,duration_time,num_cpus") == [
        ("cpu", 0, 0), ("software", 1, 0), ("tool", TOOL, 1), ("tool", TOOL, 6)]
    assert type_config("software/cpu-clock/,tool/duration_time/,tsc") == [
        ("software", 1, 0), ("tool", TOOL, 1), ("msr", 10, 0)]
    assert type_config("cpu/config=10,config1,config2=3/") == [("cpu", 4, 10)]
    assert errors("cpu/event=1/") == [("EM003", 4, 9)]  # the placeholder has no formats
    # an Intel machine: sysfs's cpu-cycles wins over the legacy event, cycles stays legacy
    ev = evsels("cpu-cycles,cycles", intel_system())
    assert [(e.attr["type"], e.attr["config"], e.alternate_hw) for e in ev] == [(4, 0x3C, 0), (0, 0, None)]
    assert type_config("cpu-cycles", intel_system(), PERF_612) == [(None, 0, 0)]  # 6.12: legacy first


def test_hardware_and_cache_names_as_pmu_terms() -> None:
    (e,) = evsels("cpu/cycles,name=l1d/", intel_system())
    assert (e.name, e.attr["type"], e.attr["config"]) == ("l1d", 0, 0)
    (e,) = evsels("cpu/L1-dcache-load-miss/kp", intel_system())
    assert (e.attr["type"], e.attr["config"], e.attr["precise_ip"]) == (3, 0x10000, 1)
    assert type_config("cpu/instructions/", intel_system()) == [("cpu", 4, 0xC0)]  # sysfs's alias
    assert errors("cpu/cycles/", intel_system(), perf=PERF_61) == [("EM003", 4, 10)]
    assert type_config("cpu/cycles/", intel_system(), PERF_612) == [("cpu", 0, 0)]


def test_legacy_config_terms() -> None:
    assert type_config("cpu/legacy-hardware-config=1/", intel_system()) == [("cpu", 0, 1)]
    assert type_config("cpu/legacy-cache-config=0x10002/", intel_system()) == [("cpu", 3, 0x10002)]
    assert type_config("cpu_core/legacy-hardware-config=1/", hybrid_system()) == [("cpu_core", 0, 1 | 4 << 32)]
    assert errors("msr/legacy-hardware-config=1/") == [("EM018", 27, 28)]


def test_pmu_names_as_globs() -> None:
    """perf 6.12+ match a PMU name as a glob too (ms* is msr), and 'uncore_' is dropped from both
    sides; perf 6.1 took a name literally, then with a decimal suffix."""
    assert [e.pmu for e in evsels("ms*/tsc/")] == ["msr"] == [e.pmu for e in evsels("m?r/tsc/")]
    assert errors("ms/tsc/") == [("EM001", 0, 2)]
    assert [e.pmu for e in evsels("imc/cas_count_read/", intel_system())] == ["uncore_imc_0", "uncore_imc_1"]
    assert [e.pmu for e in evsels("uncore_imc_*/cas_count_read/", intel_system())] == ["uncore_imc_0", "uncore_imc_1"]
    assert errors("ms*/tsc/", perf=PERF_61) == [("EM001", 0, 3)]


def test_hybrid_expansion_and_order() -> None:
    system = hybrid_system()
    assert type_config("cycles", system) == [("cpu_atom", 0, 12 << 32), ("cpu_core", 0, 4 << 32)]
    assert type_config("L1-dcache-load-misses", system) == [
        ("cpu_atom", 3, 0x10000 | 12 << 32), ("cpu_core", 3, 0x10000 | 4 << 32)]
    assert type_config("r1a,0:1", system) == [("cpu_core", 4, 0x1A), (None, 0, 1)]  # once each
    assert type_config("default_core/config=1/", system) == [("cpu_atom", 12, 1)]
    # a kernel that does not take the extended type (perf probes it): no PMU type in the config
    data = copy.deepcopy(system._data)  # type: ignore[attr-defined]
    data["features"]["hybrid_extended_type"] = False
    assert type_config("cycles", SnapshotSystem(data)) == [("cpu_atom", 0, 0), ("cpu_core", 0, 0)]


def test_hybrid_groups_are_split_per_pmu() -> None:
    ev = evsels("{cycles,instructions}:u", hybrid_system())
    assert [(e.pmu, e.attr["config"] & 0xFF, e.group.index, e.group.position, e.group.members) for e in ev] == [
        ("cpu_atom", 0, 0, 0, 2), ("cpu_atom", 0xC0, 0, 1, 2), ("cpu_core", 0, 1, 0, 2), ("cpu_core", 0xC0, 1, 1, 2)]
    assert all(e.attr["exclude_kernel"] for e in ev)
    # a software leader goes with its group's first hardware member's PMU; the other core PMU's
    # member is left alone
    ev = evsels("{faults:k,branches}:u,cycles:k", hybrid_system())
    assert [(e.name, e.pmu, e.group is not None and e.group.leader) for e in ev] == [
        ("faults:k", "software", True), ("branches", "cpu_atom", False), ("branches", "cpu_core", False),
        ("cycles:k", "cpu_atom", False), ("cycles:k", "cpu_core", False)]
    assert [e.group.members if e.group else 1 for e in ev] == [2, 2, 1, 1, 1]
    # X sorts an evsel by its own place, not its group's: the cpu_core instructions are not moved
    # into the cpu_core cycles' group (perf 7.3 on a fake hybrid machine opens them so)
    ev = evsels("{cycles,instructions:X}", hybrid_system())
    assert [(e.pmu, e.dont_regroup, e.group.position if e.group else None) for e in ev] == [
        ("cpu_atom", False, 0), ("cpu_atom", True, 1), ("cpu_core", False, None), ("cpu_core", True, None)]


def test_retire_latency_sorts_after_and_samples_weight() -> None:
    ev = evsels("{instructions:R,cycles}", intel_system())
    assert [e.attr["config"] for e in ev] == [0, 0xC0]  # an R event never leads its PMU's group
    (e,) = plan("cpu-clock:R", mode="record").events
    assert e.attr["sample_type"] & A.SAMPLE["WEIGHT_STRUCT"]


def test_cpu_terms() -> None:
    assert [e.cpus for e in evsels("cpu-clock/cpu=1/,cpu-clock/cpu=0-1/,cpu-clock/cpu='0,1',cpu=software/")] == [
        (1,), (0, 1), (0, 1)]
    assert [e.cpus for e in evsels("cpu-clock/cpu=cpu_core/", hybrid_system())] == [tuple(range(8))]
    assert errors("cpu-clock/cpu=2/") == [("EM016", 14, 15)]
    assert errors("cpu-clock/cpu=nosuch/") == [("EM017", 14, 20)]
    assert errors("cpu-clock/cpu=0/", mode="stat") == []  # perf 7.2+ stat keeps cpu=
    assert errors("cpu-clock/cpu=0/", mode="stat", perf=PERF_612) == [("EM012", 10, 13)]


def test_breakpoints_and_tool_events_with_terms() -> None:
    (e,) = evsels("mem:0x1000:rw/name=bp,period=5/k")
    assert (e.name, e.attr["bp_addr"], e.attr["bp_type"], e.attr["exclude_user"]) == ("bp", 0x1000, 3, 1)
    (e,) = evsels("duration_time/name=dt/")
    assert (e.name, e.attr["type"], e.tool) == ("dt", TOOL, True)
    (e,) = plan("duration_time").events  # counted by perf itself: no exec to wait for
    assert not e.attr.value("enable_on_exec")
    # perf stat knows it by its evsel name only (perf 7.3 -vv: enable_on_exec 1 for these)
    for text in ("duration_time/name=x/", "tool/duration_time/", "duration_time:u", "DURATION_TIME"):
        (e,) = plan(text).events
        assert e.attr.value("enable_on_exec") == 1, text


def test_quoted_names_keep_their_quotes_as_evsel_names() -> None:
    assert [e.name for e in evsels("'cpu-clock':u,'cpu-clock'/name=x/")] == ["'cpu-clock':u", "x"]


@pytest.mark.parametrize(("text", "version", "expected"), [
    ("cpu-clock/config3=1/", "6.1", "unknown term"),
    ("'cpu-clock'", "6.12", "knows no quoted event names"),
    ("cpu-clock:X", "6.12", "has no modifier 'X'"),
    ("{cpu-clock,task-clock}:X", "6.12", "has no modifier 'X'"),
    ("CPU-CLOCK", "6.12", "only in its own letter case"),
    ("duration_time/name=x/", "6.12", "no terms on a tool event"),
    ("cpu-clock/cpu=0/", "6.12", "does not know the term 'cpu'"),
    ("9p:9p_client_req", "6.1", "parser error"),
])
def test_a_release_refuses_what_it_does_not_know(text: str, version: str, expected: str) -> None:
    found = release_findings([parser.parse(text)], release(version), corpus_system(), "record")
    assert found and found[0].code == "EM019" and expected in (found[0].message + str(found[0].perf_message))
    latest = release_findings([parser.parse(text)], LATEST, corpus_system(), "record")
    # (the corpus machine has no 9p tracepoints: perf 7.3 parses the name, then finds no such event)
    assert not [d for d in latest if expected in d.message + str(d.perf_message)], latest


def test_releases_accept_what_they_know() -> None:
    for text in ("cpu-clock:R", "mem:0/name=x/", "cpu-clock/name=1x/", "cpu-clock/config3=1/"):
        assert release_findings([parser.parse(text)], PERF_612, corpus_system(), "record") == [], text
    with pytest.raises(EvspecError):
        plan("cpu/cycles/", intel_system(), perf=PERF_61)
