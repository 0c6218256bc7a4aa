"""The seed's example programs (2016 perf style) compile with compile_source and inspect right;
the inspect report and its text; legacy and BTF declarations of the same maps read alike."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from corpus_files import SEED_COMMITS
from evspec.loader.object.clang import compile_source, linux_version_code, possible_cpus
from evspec.loader.object.inspect import inspect_report, inspect_text, map_type_name
from evspec.loader.object.reader import read_object
from evspec.loader.object.spec import MapType, ObjectSpec
from evspec.loader.object.testgen import generate_big_source

DATA = Path(__file__).parent / "data" / "objects"
NR_CPUS = possible_cpus()
SEED_PROGRAMS = {
    # file: (maps {name: (type, key, value, entries)}, programs [(name, section)])
    "test_bpf_trace.c": ({"__bpf_stdout__": ("perf_event_array", 4, 4, NR_CPUS)},
                         [("func_begin", "func_begin=sys_nanosleep"),
                          ("func_end", "func_end=sys_nanosleep%return")]),
    "test_bpf_output.c": ({"channel": ("perf_event_array", 4, 4, NR_CPUS)},
                          [("func_write", "func_write=sys_write")]),
    "test_bpf_map_2.c": ({"pmu_map": ("perf_event_array", 4, 4, NR_CPUS)},
                         [("func_write", "func_write=sys_write"),
                          ("func_write_return", "func_write_return=sys_write%return")]),
    "test_bpf_map_1.c": ({"channel": ("array", 4, 4, 1)}, [("func", "func=sys_nanosleep")]),
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("clang") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("clang is required in CI")
        pytest.skip("clang not installed")
    return tmp_path_factory.mktemp("cache")


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_committed_sources_are_the_seeds() -> None:
    """Each committed file is the seed's text: only line breaks and the include name differ."""
    seed = SEED_COMMITS.read_text()
    found = dict(re.findall(r"(test_bpf_\w+\.c)(?: is:)?\s*/\*+ BEGIN \*+/(.*?)/\*+ END \*+/", seed, re.S))
    assert set(found) == set(SEED_PROGRAMS)
    for name, text in found.items():
        ours = (DATA / name).read_text()
        ours = ours[ours.index("*/") + 2:]  # our header comment
        ours = ours.replace("#include <uapi/linux/bpf.h>", "#include")
        assert _squash(ours) == _squash(text), name


@pytest.mark.parametrize("name", sorted(SEED_PROGRAMS))
def test_seed_program_compiles_and_inspects(cache: Path, name: str) -> None:
    maps, programs = SEED_PROGRAMS[name]
    spec = read_object(compile_source(DATA / name, cache_dir=cache))
    report = inspect_report(spec)
    assert report["license"] == "GPL"
    code = linux_version_code()
    assert report["kernel_version"] == f"{code >> 16}.{(code >> 8) & 0xFF}.{code & 0xFF}"
    legacy = {m["name"]: (m["type"], m["key_size"], m["value_size"], m["max_entries"])
              for m in report["maps"] if m["legacy"]}
    assert legacy == maps
    # everything else is global data clang made from string literals
    assert all(m["global_data"] for m in report["maps"] if not m["legacy"])
    assert [(p["name"], p["section"]) for p in report["programs"]] == programs
    for p in report["programs"]:
        assert p["attach"] == {} and p["type"] == "unknown"
        assert [r["target"] for r in p["relocations"] if r["kind"] == "map"] == list(maps)


def test_report_with_attach_descriptions(cache: Path) -> None:
    spec = read_object(compile_source(DATA / "test_bpf_map_2.c", cache_dir=cache))
    seen: list[str] = []

    def describe(section: str) -> dict[str, Any]:
        seen.append(section)
        return {"program_type": "KPROBE", "attach": "kprobe", "function": section.split("=")[1]}

    report = inspect_report(spec, describe)
    assert seen == ["func_write=sys_write", "func_write_return=sys_write%return"]
    assert [p["type"] for p in report["programs"]] == ["kprobe", "kprobe"]
    assert report["programs"][1]["attach"]["function"] == "sys_write%return"
    text = inspect_text(report)
    assert "func_write_return: kprobe  section 'func_write_return=sys_write%return'" in text
    assert "attach attach=kprobe  function=sys_write%return" in text


def test_report_with_the_section_parser(cache: Path) -> None:
    from evspec.loader.sections import names as section
    spec = read_object(compile_source(DATA / "test_bpf_trace.c", cache_dir=cache))
    report = inspect_report(spec, lambda name: section.parse_section(name).to_json())
    assert [p["type"] for p in report["programs"]] == ["kprobe", "kprobe"]
    json.dumps(report)
    text = inspect_text(report)
    assert "  func_end: kprobe  section 'func_end=sys_nanosleep%return'  insns " in text
    assert "perf_compatible=yes" in text


def test_report_is_json_and_text_lists_everything(bpf_fixtures: Path) -> None:
    spec = dataclasses.replace(read_object(bpf_fixtures / "maps.o"), path="maps.o")
    report = inspect_report(spec)
    assert json.loads(json.dumps(report)) == report
    assert set(report) >= {"license", "maps", "programs"}
    for m in report["maps"]:
        assert set(m) >= {"name", "type", "key_size", "value_size", "max_entries", "flags", "legacy"}
    for p in report["programs"]:
        assert set(p) >= {"name", "section", "type", "insns", "attach"}
    golden = DATA / "maps.inspect.txt"
    text = inspect_text(report)
    if os.environ.get("EVSPEC_BLESS") == "1":
        golden.write_text(text)
    assert text == golden.read_text()


def test_map_type_names() -> None:
    assert map_type_name(MapType.PERF_EVENT_ARRAY) == "perf_event_array"
    assert map_type_name(MapType.PERCPU_ARRAY) == "percpu_array"
    assert map_type_name(999) == 999


def _map_set(spec: ObjectSpec) -> set[tuple[str, int, int, int, int]]:
    return {(m.name, m.type, m.key_size, m.value_size, m.max_entries) for m in spec.maps}


def test_legacy_and_btf_versions_of_the_same_maps(cache: Path, tmp_path: Path) -> None:
    (tmp_path / "btf").mkdir()
    (tmp_path / "legacy").mkdir()
    btf_src = tmp_path / "btf" / "gen.c"
    btf_src.write_text(generate_big_source(6, 5))
    legacy_src = tmp_path / "legacy" / "gen.c"
    legacy_src.write_text(generate_big_source(6, 5, legacy=True))
    btf = read_object(compile_source(btf_src, cache_dir=cache))
    legacy = read_object(compile_source(legacy_src, cache_dir=cache))
    assert _map_set(btf) == _map_set(legacy)
    assert _map_set(btf) == {(f"m{i}", MapType.ARRAY, 4, 8, i + 1) for i in range(5)}
    assert all(m.legacy for m in legacy.maps) and not any(m.legacy for m in btf.maps)
    for a, b in zip(btf.programs, legacy.programs, strict=True):
        assert (a.name, a.section) == (b.name, b.section)
        assert [(r.kind, r.target) for r in a.relocations] == [(r.kind, r.target) for r in b.relocations]
    # programs come in section order, then by offset inside the section
    assert [(p.name, p.section) for p in btf.programs] == [
        (f"p{i}", "raw_syscalls:sys_enter") for i in (0, 2, 4)] + [
        (f"p{i}", "raw_syscalls:sys_exit") for i in (1, 3, 5)]
