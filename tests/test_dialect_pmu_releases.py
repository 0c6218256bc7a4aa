"""perf 6.12, 7.2 and 7.3 as the engine emulates them: what their sources say, case by case.

The differential tests (test_dialect_answers.py, test_dialect_live_releases.py) hold the
emulation to the binaries on this kind of machine; these name the rules one by one, on this
machine's snapshot and on machines the binaries cannot be shown here (an Intel ``cpu`` PMU with
uncore PMUs, a hybrid ``cpu_core``/``cpu_atom`` machine: evspec.system.fixtures).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evspec.dialect import predict
from evspec.dialect.installed import ReleaseError, release_of
from evspec.dialect.perf_pmus import (
    PerfPmus,
    _suffix_match_72,
    _suffix_match_612,
    name_cmp,
    name_len_no_suffix,
)
from evspec.dialect.terms import c_strtod, cpu_list_valid
from evspec.dialect.versions import profile
from evspec.system import read_snapshot
from evspec.system.fixtures import corpus_system, hybrid_system, intel_system

MACHINE = Path(__file__).resolve().parent / "data" / "dialect" / "machine.json"


@pytest.fixture(scope="module")
def machine():
    return read_snapshot(MACHINE)


def errors(text: str, version: str, **kw) -> list[tuple[str, int]]:
    """Every error perf prints, in its order, as (message, column)."""
    v = predict(text, version, **kw)
    assert not v.accepted, text
    return [(e.message, e.column) for e in (v.error, *v.more_errors) if e is not None]


# ---- the error list


def test_every_error_is_printed_newest_first(machine):
    assert errors("cpu-clock/foo=1/", "7.2", system=machine) == [
        ("Bad event or PMU", 0),
        ("unknown term 'foo' for pmu 'software'", 10),
    ]
    v = predict("cpu-clock/foo=1/", "7.2", system=machine)
    assert v.initial_error is None and "Initial error:" not in v.stderr
    blocks = v.stderr.split("\nevent syntax error: ")
    assert len(blocks) == 2 and blocks[0].startswith("event syntax error: 'cpu-clock/foo=1/'")


def test_a_wildcard_retries_the_pmu_it_just_failed(machine):
    """perf_pmus__find, then the wildcard scan that matches the same PMU again: the error twice."""
    assert errors("uprobe/foo/", "7.2", system=machine) == [
        ("Bad event or PMU", 0),
        ("unknown term 'foo' for pmu 'uprobe'", 7),
        ("unknown term 'foo' for pmu 'uprobe'", 7),
    ]


def test_unrecognized_input_only_when_nothing_was_said(machine):
    assert errors("msr/tsc/:u", "7.2", system=machine) == [("Unrecognized input", 7)]  # no ':' after '/../'
    assert errors("cpu-clock:uu", "7.2", system=machine) == [("Duplicate modifier 'u' (user)", 11)]
    assert errors("cpu-clock:pppp", "6.12", system=machine) == [("Maximum precise value is 3", 13)]
    assert errors("99999999999999999999:1", "7.3", system=machine) == [
        ('Bad base 10 number "99999999999999999999"', 0)
    ]


def test_modifiers_per_release(machine):
    assert predict("cpu-clock:X", "7.2", system=machine).accepted  # dont_regroup
    assert errors("cpu-clock:X", "6.12", system=machine) == [("Unrecognized input", 9)]
    assert errors("cpu-clock:ukhIGHpppPSDWebRX", "7.2", system=machine) == [
        ("Weak modifier is for use with groups", 10)
    ]
    assert errors("{cycles:pp}:pp", "7.2", system=machine) == [
        ('Maximum combined precise value is 3, adding precision to "cycles:pp"', 12)
    ]


# ---- names through the PMUs


def test_72_finds_software_tool_and_legacy_events_in_its_tables(machine):
    for text in ("software/cpu-clock/", "tool/duration_time/", "default_core/cycles/", "cpu/L1-dcache-loads/",
                 "cycles", "L1-dcache-load-misses", "duration_time", "num_cpus"):  # fmt: skip
        assert predict(text, "7.2", system=machine).accepted, text
    assert errors("tool/slots/", "7.2", system=machine)[0] == ("Bad event or PMU", 0)  # arm64 only
    assert errors("default_core/cycles/", "6.12", system=machine)[0] == ("Bad event or PMU", 0)


def test_two_events_in_one_term_list_clash(machine):
    assert errors("software/cpu-clock,task-clock/", "7.2", system=machine) == [
        ("Bad event or PMU", 0),
        ("Attempt to set event's unit twice", 19),
        ("Attempt to set event's unit twice", 19),
    ]
    assert errors("software/faults,cs/", "7.2", system=machine)[1] == ("Attempt to set event's scale twice", 16)


def test_612_lexes_symbols_and_cache_names(machine):
    assert predict("cycles/name=x/", "6.12", system=machine).accepted
    assert errors("L1-dcache-loads/foo/", "6.12", system=machine) == [("<sysfs term>", 16)]
    assert errors("L1-dcache-loads/foo/", "7.2", system=machine)[1] == ("unknown term 'foo' for pmu 'cpu'", 16)
    assert predict("9p:9p_client_req", "6.12", system=machine).error.message == "unknown tracepoint"
    assert predict("9p:9p_client_req", "6.6", system=machine).error.message == "parser error"


# ---- terms


def test_cpu_term(machine):
    assert predict("cpu-clock/cpu=1/", "7.2", system=machine).accepted
    assert predict("cpu-clock/cpu=0-1/", "7.2", system=machine).accepted
    assert predict("cpu-clock/cpu=msr/", "7.2", system=machine).accepted
    assert errors("cpu-clock/cpu=2/", "7.2", system=machine)[1] == ("too big", 14)  # 2 CPUs
    assert errors("cpu-clock/cpu=x/", "7.2", system=machine)[1] == ("not a valid PMU or CPU number", 14)
    assert errors("cpu-clock/cpu=2/", "6.12", system=machine) == [("<sysfs term>", 10)]  # no such keyword


def test_ratio_and_legacy_config_terms(machine):
    assert errors("cpu-clock/ratio-to-prev=1e999/", "7.2", system=machine)[1] == ("too big", 24)
    assert errors("cpu-clock/ratio-to-prev='0.0'/", "7.2", system=machine)[1] == ("zero or negative", 24)
    assert errors("cpu-clock/ratio-to-prev=0/", "7.2", system=machine)[1] == ("expected string value", 24)
    assert errors("msr/legacy-hardware-config=1/", "7.2", system=machine)[1] == ("needs a core PMU", 27)
    assert errors("cpu/legacy-hardware-config=10/", "7.2", system=machine)[1] == ("too big", 27)
    assert predict("cpu/legacy-cache-config=0x10000/", "7.2", system=machine).accepted


def test_stat_keeps_fewer_terms(machine):
    v = predict("cpu-clock/freq=1/", "7.2", system=machine, mode="stat")
    assert (v.more_errors[-1].message, v.more_errors[-1].column) == ("'freq' is not usable in 'perf stat'", -1)
    assert predict("cpu-clock/cpu=1/", "7.2", system=machine, mode="stat").accepted
    help_ = predict("msr/foo/", "7.2", system=machine, mode="stat").more_errors[0].help
    assert help_ == "valid terms: event,config,config1,config2,config3,config4,name,period,percore,metric-id,cpu"


# ---- tracepoints


def test_tracepoint_globs(machine):
    v = predict("nosu*:foo", "6.12", system=machine)
    assert v.silent and v.stderr.startswith("WARNING: event parser found nothing\n")
    assert errors("nosu*:foo", "7.2", system=machine) == [("unknown tracepoint", 0)]
    assert predict("sched:sched_s*", "7.2", system=machine).accepted
    v = predict("nosuch:foo", "7.2", system=machine)
    assert v.error.help.startswith("Error:\tFile /sys/kernel/tracing//events/nosuch/foo not found.\n")


# ---- the lexer: columns after a newline, carets in bytes


def test_a_newline_starts_the_column_again(machine):
    assert errors("cycles,\nfoo", "7.2", system=machine) == [("Bad event name", 1)]


def test_carets_count_bytes(machine):
    v = predict("minor-faults,branch-loads:ukhIGHépPSDWebRX", "7.2", system=machine)
    assert "event syntax error: '..ads:ukhIGHépPSDWebRX'\n" in v.stderr  # the caret is under é's second byte


# ---- other machines


def test_hybrid_machines_get_one_event_per_core_pmu():
    system = hybrid_system()
    v = predict("cycles", "7.2", system=system)
    assert v.accepted and len(v.evsels) == 2
    assert predict("cpu_atom/cycles/", "7.2", system=system).accepted
    assert errors("cpu_atom/topdown-retiring/", "7.2", system=system)[0] == ("Bad event or PMU", 0)
    assert len(predict("cycles", "6.12", system=system).evsels) == 2


def test_uncore_wildcards_and_format_limits():
    system = intel_system()
    assert len(predict("uncore_imc/clockticks/", "7.2", system=system).evsels) == 2
    assert len(predict("imc/clockticks/", "6.12", system=system).evsels) == 2
    assert errors("cpu/event=0x3c,umask=0x100/", "7.2", system=system)[1] == (
        "value too big for format (umask), maximum is 255", 21
    )
    assert errors("cpu/cmask/", "7.2", system=system)[1] == ("no value assigned for term", 0)
    assert predict("cpu/ld_lat.any,ldlat=3/", "7.2", system=system).accepted
    v = predict("cpu/ld_lat.any/", "7.2", system=system)  # ldlat=? with no ldlat=VALUE: perf says nothing
    assert [e.message for e in (v.error, *v.more_errors)] == ["Bad event or PMU"]


def test_the_pmu_list_order_and_wildcards():
    pmus = PerfPmus(profile("7.2"), intel_system())
    assert [p.name for p in pmus.all] == ["cpu", "breakpoint", "intel_pt", "msr", "power", "software", "tool", "tracepoint",
                                         "uncore_imc_0", "uncore_imc_1", "uprobe"]  # fmt: skip
    assert name_len_no_suffix("uncore_imc_0") == 10 and name_len_no_suffix("cpum_cf") == 7
    assert name_cmp("uncore_imc_2", "uncore_imc_10") < 0 < name_cmp("msr", "breakpoint")
    assert _suffix_match_72("imc_0", "imc") and _suffix_match_72("imc0_1", "imc")
    assert not _suffix_match_612("imc0_1", "imc") and _suffix_match_612("imc_0", "imc")
    assert not _suffix_match_72("cpum_cf", "cpum") and not _suffix_match_72("msr", "ms")
    assert [p.name for p in PerfPmus(profile("6.12"), corpus_system()).core] == ["cpu"]  # the placeholder


# ---- helpers ported from perf and libc


@pytest.mark.parametrize(
    ("text", "valid"),
    [("0", True), ("0-1", True), ("0,2", True), ("", True), ("0,x", True), ("x", False), ("1-0", False),
     ("0,0", False), ("0-1x", False), ("32767", False), ("0x1", True)],
)  # fmt: skip
def test_cpu_lists_as_perf_cpu_map_new_reads_them(text, valid):
    assert cpu_list_valid(text) is valid


def test_strtod():
    assert c_strtod("2") == (2.0, False)
    assert c_strtod("2abc") == (2.0, False)
    assert c_strtod("abc") == (0.0, False)
    assert c_strtod("1e999")[1] and c_strtod("1e-999") == (0.0, True)
    assert c_strtod("0x1p3") == (8.0, False)


def test_installed_release_names():
    assert release_of("perf version 7.3.0-rc7\n") == "7.3"
    assert release_of("perf version 6.12.95") == "6.12"
    with pytest.raises(ReleaseError, match=r"6\.8\.0, a release evspec does not emulate \(known: 4\.7, 6\.1"):
        release_of("perf version 6.8.0")
    with pytest.raises(ReleaseError, match="cannot read a release"):
        release_of("command not found")


# ---- what perf runs when it accepts a typo


@pytest.mark.parametrize(
    ("text", "ran"),
    [("cpu-clock;", "cpu-clock"), ("{cpu-clock", "cpu-clock"), ("cpu-clock u", "cpu-clock:u"),
     ("cycles#u", "cycles:u"), ("~cycles", "cycles"), ("4294967297:0", "1:0"),
     ("cpu-clock/period=1/u", "cpu-clock/period=1/u")],
)  # fmt: skip
def test_ran_as(text, ran, machine):
    for version in ("6.12", "7.2", "7.3"):
        v = predict(text, version, system=machine)
        assert v.accepted and v.ran_as == ran, (version, v.ran_as)


# ---- what perf prints while it parses an accepted string


def test_config_bits_no_format_covers_are_warned_of(machine):
    v = predict("uprobe/config=2,name=x/", "7.2", system=machine)
    assert v.accepted and v.stderr == "WARNING: event 'x' not valid (bits 1 of config '2' not supported by kernel)!\n"
    assert predict("8:6", "6.12", system=machine).stderr == (
        "WARNING: event 'N/A' not valid (bits 1-2 of config '6' not supported by kernel)!\n"
    )
    assert predict("msr/tsc/", "7.2", system=machine).stderr == ""  # event: config:0-63


@pytest.mark.parametrize(
    ("text", "warned"),
    [("{cpu-clock,msr/tsc/}", True), ("{sched:sched_switch,cpu-clock}", True), ("{cpu-clock:R,task-clock}", True),
     ("{cycles,cpu-clock}", False), ("{cpu-clock,task-clock}", False), ("{cpu-clock,ms*/tsc/}", False)],
)  # fmt: skip
def test_groups_split_where_their_pmus_differ(text, warned, machine):
    """A software event counts with its group's first non-software PMU (msr and tracepoints are
    software too); a wildcard PMU in the string silences the warning."""
    for version in ("6.12", "7.2"):
        v = predict(text, version, system=machine)
        assert v.accepted and (v.stderr == "WARNING: events were regrouped to match PMUs\n") == warned, version
