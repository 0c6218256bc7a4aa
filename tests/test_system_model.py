"""System model: format files, bit fields, CPU lists, PMU wildcards, fixtures, snapshots."""

from __future__ import annotations

import json

import pytest

from evspec.cpus import parse_cpu_list
from evspec.system import (
    FormatField,
    SnapshotError,
    SnapshotSystem,
    TracefsUnavailable,
    load_system,
    parse_format,
    pmu_suffix_matches,
    read_snapshot,
    snapshot,
    write_snapshot,
)
from evspec.system.fixtures import corpus_system, hybrid_system, intel_system

# ---- format files


@pytest.mark.parametrize(
    ("text", "field", "bits"),
    [
        ("config:0-7\n", "config", ((0, 7),)),
        ("config:0-7,21", "config", ((0, 7), (21, 21))),
        ("config1:0-15", "config1", ((0, 15),)),
        ("config2:3", "config2", ((3, 3),)),
        ("config3:0-63", "config3", ((0, 63),)),
        ("config:32-63", "config", ((32, 63),)),
        ("config : 0 - 3 , 8", "config", ((0, 3), (8, 8))),
    ],
)
def test_parse_format(text: str, field: str, bits: tuple[tuple[int, int], ...]) -> None:
    f = parse_format("t", text)
    assert (f.field, f.bits) == (field, bits)


@pytest.mark.parametrize("text", ["", "0-7", "config4:0-3", "config:", "config:7-3", "config:0-64", "config:1,config1:2"])
def test_parse_format_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_format("t", text)


def test_bit_field_encoding_and_maxima() -> None:
    split = parse_format("any", "config:0-7,21")
    assert split.width == 9
    assert split.max_value == 0x1FF
    assert split.encode(0xFF) == 0xFF
    assert split.encode(0x100) == 1 << 21  # bit 8 of the value goes to the next listed bit
    assert split.encode(0x1FF) == 0x2000FF
    high = parse_format("ref_ctr_offset", "config:32-63")
    assert high.max_value == 0xFFFFFFFF
    assert high.encode(5) == 5 << 32
    full = parse_format("event", "config:0-63")
    assert full.max_value == (1 << 64) - 1
    assert full.encode((1 << 64) - 1) == (1 << 64) - 1
    one = parse_format("edge", "config:18")
    assert (one.width, one.max_value, one.encode(1)) == (1, 1, 1 << 18)
    assert FormatField("x", "config", ((4, 5), (0, 1))).encode(0b1110) == 0b110010


def test_format_text_round_trip() -> None:
    for text in ("config:0-7,21", "config1:0-15", "config:18"):
        assert parse_format("t", text).text() == text


# ---- CPU lists and PMU wildcards


def test_parse_cpu_list() -> None:
    assert parse_cpu_list("0-1\n") == (0, 1)
    assert parse_cpu_list("0-3,8,10-11") == (0, 1, 2, 3, 8, 10, 11)
    assert parse_cpu_list("5") == (5,)
    with pytest.raises(ValueError):
        parse_cpu_list("3-1")


@pytest.mark.parametrize(
    ("pmu", "token", "matches"),
    [
        ("uncore_imc_0", "uncore_imc", True),
        ("uncore_imc_1", "imc", True),  # uncore_ stripped
        ("uncore_imc_12", "uncore_imc", True),
        ("uncore_imc_0", "uncore_im", False),
        ("msr", "ms", False),
        ("msr", "msr", True),
        ("cpu_core", "cpu", False),
        ("hisi_sccl1_ddrc2", "hisi_sccl1_ddrc", True),
        ("power0", "power", True),
        ("uncore_imc_0", "uncore_imc_", True),  # perf: the rest "0" is digits
        ("uncore_imc_x", "uncore_imc", False),
    ],
)
def test_pmu_wildcard_rule(pmu: str, token: str, matches: bool) -> None:
    assert pmu_suffix_matches(pmu, token) is matches


# ---- fixtures


def test_corpus_system_matches_the_corpus_readme() -> None:
    s = corpus_system()
    assert s.pmu_names() == ("breakpoint", "msr", "power", "software", "tracepoint", "uprobe")
    assert [(p.name, p.type) for p in s.pmus()] == [
        ("breakpoint", 5), ("msr", 10), ("power", 9), ("software", 1), ("tracepoint", 2), ("uprobe", 8)
    ]
    assert s.core_pmus() == ()
    msr = s.pmu("msr")
    assert msr is not None and msr.format("event").max_value == (1 << 64) - 1
    assert msr.alias("TSC") is not None and msr.alias("tsc").definition == "event=0x00"
    energy = s.pmu("power").alias("energy-psys")
    assert (energy.unit, energy.scale) == ("Joules", "2.3283064365386962890625e-10")
    assert s.possible_cpus() == (0, 1)
    f = s.features()
    assert (f.kprobe_events, f.uprobe_events, f.btf_vmlinux) == (False, True, True)
    assert s.tracepoint_id("sched", "sched_switch") == 372
    assert s.tracepoint_id("sched", "nosuch") is None
    assert not any(sys.startswith(("nosu", "xyz")) for sys in s.tracepoint_systems())
    for missing in ("kvm-s390", "smi", "sched-x", "sched.x"):
        assert not s.has_tracepoint_system(missing)


def test_tracepoint_globs_decision_7() -> None:
    s = corpus_system()
    assert [f[:2] for f in s.match_tracepoints("s*", "sched_switch").found] == [("sched", "sched_switch")]
    assert s.match_tracepoints("nosu*", "foo").no_system
    assert s.match_tracepoints("sched", "sched_switc[h]").found == ()  # [...] alone is literal
    assert [f[1] for f in s.match_tracepoints("sched", "sched_sw[i]*").found] == ["sched_switch"]
    assert s.match_tracepoints("nosuchsys", "*").found == ()
    opens = [f[1] for f in s.match_tracepoints("syscalls", "sys_enter_open*").found]
    assert "sys_enter_openat" in opens and all(o.startswith("sys_enter_open") for o in opens)


def test_intel_and_hybrid_fixtures() -> None:
    intel = intel_system()
    cpu = intel.pmu("cpu")
    assert cpu is not None and cpu.is_core and not cpu.is_hybrid
    assert {n: cpu.format(n).text() for n in ("event", "umask", "edge", "inv", "cmask", "any")} == {
        "event": "config:0-7", "umask": "config:8-15", "edge": "config:18", "inv": "config:23",
        "cmask": "config:24-31", "any": "config:21",
    }
    assert [p.name for p in intel.pmus_matching("uncore_imc")] == ["uncore_imc_0", "uncore_imc_1"]
    hybrid = hybrid_system()
    assert [p.name for p in hybrid.hybrid_pmus()] == ["cpu_atom", "cpu_core"]
    assert {p.name: p.type for p in hybrid.hybrid_pmus()} == {"cpu_atom": 12, "cpu_core": 4}


def test_alias_parameters() -> None:
    cpu = intel_system().pmu("cpu")
    assert cpu.alias("ld_lat.any").parameters() == ("ldlat",)
    assert cpu.alias("cpu-cycles").parameters() == ()


# ---- snapshots


def test_snapshot_round_trip(tmp_path) -> None:
    original = intel_system()
    path = tmp_path / "sys.json"
    write_snapshot(original, path)
    loaded = read_snapshot(path)
    assert snapshot(loaded) | {"cwd": None} == snapshot(original) | {"cwd": None}
    assert loaded.pmu("uncore_imc_1") == original.pmu("uncore_imc_1")
    assert loaded.tracepoint_id("raw_syscalls", "sys_enter") == 443
    assert load_system(str(path)).pmu_names() == original.pmu_names()


def test_load_system_names() -> None:
    assert load_system("none") is None
    assert type(load_system("live")).__name__ == "LiveSystem"


def test_bad_snapshots(tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SnapshotError, match="not JSON"):
        read_snapshot(bad)
    bad.write_text(json.dumps({"evspec_system": 99}))
    with pytest.raises(SnapshotError, match="version"):
        read_snapshot(bad)
    with pytest.raises(SnapshotError, match="cannot read"):
        read_snapshot(tmp_path / "missing.json")


def test_snapshot_without_tracefs() -> None:
    data = snapshot(corpus_system())
    data["tracefs"] = {"available": False, "reason": "tracefs not available (test)", "help": ["mount it"]}
    s = SnapshotSystem(data)
    with pytest.raises(TracefsUnavailable) as exc:
        s.tracepoint_id("sched", "sched_switch")
    assert exc.value.help == ("mount it",)
    assert snapshot(s)["tracefs"]["available"] is False


def test_confined_files(tmp_path) -> None:
    (tmp_path / "prog.o").write_bytes(b"x")
    outside = tmp_path.parent / "evspec-outside.o"
    s = corpus_system(str(tmp_path))
    assert s.file_exists("prog.o") and s.file_exists("./prog.o")
    assert not s.file_exists("nonexist.o")
    assert not s.file_exists(str(outside))
    assert not s.file_exists("../" + tmp_path.name + "/../evspec-outside.o")
