"""record --dump-maps: which maps are dumped, their BTF decoding and the log2 histogram (offline),
and golden files of a live run whose workload makes every count exact.

Run with ``EVSPEC_BLESS=1`` to rewrite the files under tests/golden/dump_maps/ after an intended
change, then review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bpf_build import build_bpf, build_program, copy_sources, require_tools
from corpus_files import DATA
from evspec.loader.object.map_dump import (
    MapDump,
    decode_map,
    dumped_maps,
    is_histogram,
    render_json,
    render_log2_hist,
    render_text,
    unknown_names,
)
from evspec.loader.object.reader import read_object
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec
from golden_files import check_golden
from record_cli import run_record as _record

CALLS = "100"  # getppid() calls of the workload: n = 1..100, so every slot and bucket is known
EVENT = "./vars.o/var:targ_comm='varswork',var:delta='-5',var:mode=MODE_COUNT/"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/data/vars built: vars.o (its maps: calls_hist, stats, seen) and the varswork workload."""
    require_tools("clang", "cc")
    out = tmp_path_factory.mktemp("dump_maps")
    copy_sources(DATA / "vars", ("vars.c", "varswork.c"), out)
    build_program(out, "varswork.c", "varswork")
    build_bpf(out, "vars.c", "vars.o")
    return out


def _spec(*maps: MapSpec) -> ObjectSpec:
    return ObjectSpec("t.o", "GPL", None, maps, ())


def _map(name: str, type: MapType, key_size: int = 4, value_size: int = 8, max_entries: int = 32,
         section: str = ".maps") -> MapSpec:
    return MapSpec(name, int(type), key_size, value_size, max_entries, section=section)


def test_output_maps_and_data_sections_are_left_out_unless_named() -> None:
    spec = _spec(_map("h", MapType.HASH), _map("out", MapType.PERF_EVENT_ARRAY), _map("rb", MapType.RINGBUF),
                 _map("jmp", MapType.PROG_ARRAY), _map("pc", MapType.PERCPU_ARRAY), _map("lru", MapType.LRU_HASH),
                 _map("t.bss", MapType.ARRAY, max_entries=1, section=".bss"))
    assert [m.name for m in dumped_maps(spec, None)] == ["h", "pc", "lru"]
    assert [m.name for m in dumped_maps(spec, ["lru", ".bss"])] == ["lru", "t.bss"]
    assert unknown_names([spec], ["h", "out", "nosuch", "t.bss"]) == ["out", "nosuch"]


def test_the_histogram_rule() -> None:
    """An ARRAY named *hist* of at most 64 four- or eight-byte counts; nothing else."""
    assert is_histogram(_map("lat_hist", MapType.ARRAY), None)
    assert is_histogram(_map("HISTOGRAM", MapType.ARRAY, value_size=4, max_entries=64), None)
    assert not is_histogram(_map("counts", MapType.ARRAY), None)
    assert not is_histogram(_map("lat_hist", MapType.ARRAY, max_entries=65), None)
    assert not is_histogram(_map("lat_hist", MapType.PERCPU_ARRAY), None)
    assert not is_histogram(_map("lat_hist", MapType.ARRAY, value_size=16), None)


def test_without_btf_keys_and_values_are_hex_and_per_cpu_values_a_list() -> None:
    pc = MapSpec("pc", int(MapType.PERCPU_ARRAY), 4, 4, 2)
    raw = (5).to_bytes(4, "little") + bytes(4) + (6).to_bytes(4, "little") + bytes(4)  # 2 CPUs, 8-byte strides
    dump = decode_map(_spec(pc), pc, [(b"\1\0\0\0", raw), (b"\0\0\0\0", bytes(16))], cpus=2)
    assert render_text(dump) == "pc[00 00 00 00] = [00 00 00 00, 00 00 00 00]\npc[01 00 00 00] = [05 00 00 00, 06 00 00 00]\n"
    assert json.loads(render_json(dump).splitlines()[1]) == {"map": "pc", "key": "01 00 00 00",
                                                            "value": ["05 00 00 00", "06 00 00 00"]}


def test_the_histogram_layout_is_print_log2_hist() -> None:
    dump = MapDump("h", ((0, 3), (1, 0), (2, 6)), histogram=True)
    assert render_log2_hist(dump) == (
        "h:\n"
        "     value               : count     distribution\n"
        "         0 -> 1          : 3        |********************                    |\n"
        "         4 -> 7          : 6        |****************************************|\n")
    wide = render_log2_hist(MapDump("h", ((40, 1),), histogram=True)).splitlines()
    assert wide[2] == f"{1 << 40:>20} -> {(1 << 41) - 1:<20} : 1        |{'*' * 20}|"
    assert render_log2_hist(MapDump("h", ((0, 0),), histogram=True)) == "h: empty\n"


def test_global_data_decodes_by_variable(built: Path) -> None:
    spec = read_object(built / "vars.o")
    rodata = spec.map("vars.rodata")
    assert rodata is not None and rodata.initial_value is not None
    raw = bytearray(rodata.initial_value)
    raw[12:16] = b"abc\0"  # targ_comm (ELF symbol offset 12)
    raw[8:12] = (1).to_bytes(4, "little")  # mode
    (entry,) = decode_map(spec, rodata, [(bytes(4), bytes(raw))], cpus=1).entries
    assert entry == (0, {"targ_pid": 0, "delta": 0, "verbose": False, "mode": "MODE_COUNT", "targ_comm": "abc",
                         "cfg": {"a": 0, "b": 0}})


@pytest.mark.parametrize("name", ["calls_hist", "stats"])
def test_golden_dumps_of_a_live_run(built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch,
                                    name: str) -> None:
    """The 100 calls make slots 1, 2, 4, ..., 32 and 37; buckets n % 4 of 25 calls each."""
    monkeypatch.chdir(built)
    status, out, err = _record(f"--dump-maps={name}", "-e", EVENT, "--", "./varswork", CALLS)
    assert status == 0, err
    check_golden(f"dump_maps/{name}.txt", out)


def test_json_has_one_object_per_entry_before_the_summary(built: Path, root_kernel: None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(built)
    status, out, err = _record("--format", "json", "--dump-maps", "-e", EVENT, "--", "./varswork", CALLS)
    assert status == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line.get("map") for line in lines] == ["calls_hist"] * 32 + ["stats"] * 4 + ["seen", None]
    assert lines[6] == {"map": "calls_hist", "key": 6, "value": 37}  # the histogram is plain entries in JSON
    assert lines[32] == {"map": "stats", "key": 0, "value": {"calls": 25, "sum": 1300, "delta": -5, "mode": "MODE_COUNT"}}
    assert lines[-1] == {"summary": {"samples": 0, "lost": 0}}


def test_an_unknown_map_name_is_refused_before_the_run(built: Path, root_kernel: None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(built)
    status, out, err = _record("--dump-maps=stat", "-e", EVENT, "--", "./varswork", CALLS)
    assert status == 2 and out == ""
    assert ("evspec record: error: --dump-maps: no hash, array or per-CPU map named stat\n"
            "  help: maps dumped by default: calls_hist, stats, seen\n") in err
