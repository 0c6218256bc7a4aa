"""read_object over the corpus fixtures (built by the ``bpf_fixtures`` fixture)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.object.reader import read_object
from evspec.loader.object.spec import MapType, ObjectSpec

# The maps table of corpus/README.md: name -> (type, key size, value size, entries).
MAPS_O = {
    "channel": (MapType.PERF_EVENT_ARRAY, 4, 4, 4),
    "chan1": (MapType.PERF_EVENT_ARRAY, 4, 4, 1),
    "arr": (MapType.ARRAY, 4, 4, 8),
    "arr64": (MapType.ARRAY, 4, 8, 8),
    "arr8": (MapType.ARRAY, 4, 1, 4),
    "arr3": (MapType.ARRAY, 4, 3, 2),
    "hmap": (MapType.HASH, 4, 4, 8),
}
NANOSLEEP_O = {
    "counts": (MapType.ARRAY, 4, 2, 16),
    "events": (MapType.PERF_EVENT_ARRAY, 4, 4, 2),
    "pcpu": (MapType.PERCPU_ARRAY, 4, 4, 4),
}
NOT_OBJECTS = {"notelf.o", "empty.o", "x86.o"}


def _map_table(spec: ObjectSpec) -> dict[str, tuple[int, int, int, int]]:
    return {m.name: (m.type, m.key_size, m.value_size, m.max_entries)
            for m in spec.maps if m.initial_value is None}


def _sections_in_source(source: Path, fixtures: Path) -> dict[str, str]:
    """function name -> SEC() string, read from a fixture source (TARGET expanded as make does)."""
    text = source.read_text()
    out = {}
    for m in re.finditer(r'SEC\(((?:\s*(?:"[^"]*"|TARGET))+)\s*\)\s*\n\s*int\s+(\w+)', text):
        parts = re.findall(r'"([^"]*)"|(TARGET)', m.group(1))
        out[m.group(2)] = "".join(str(fixtures / "target") if t else s for s, t in parts)
    return out


def _bpf_objects(fixtures: Path) -> list[Path]:
    return sorted(p for p in fixtures.rglob("*") if p.is_file() and p.name not in NOT_OBJECTS
                  and (p.suffix in (".o", ".obj", ".bpf", ".1")))


def test_every_fixture_object_reads(bpf_fixtures: Path) -> None:
    objects = _bpf_objects(bpf_fixtures)
    assert len(objects) >= 30
    for path in objects:
        spec = read_object(path)
        assert spec.license == "GPL", path
        assert spec.btf is not None, path
        assert (spec.btf_ext is not None) == bool(spec.programs), path  # no code, no line info


def test_programs_and_sections_match_the_sources(bpf_fixtures: Path) -> None:
    checked = 0
    for source in sorted(bpf_fixtures.glob("*.c")):
        obj = source.with_suffix(".o")
        if obj.name in NOT_OBJECTS or not obj.exists():
            continue
        expected = _sections_in_source(source, bpf_fixtures)
        spec = read_object(obj)
        assert {p.name: p.section for p in spec.programs} == expected, source.name
        for p in spec.programs:
            assert p.insns and len(p.insns) % 8 == 0
            assert p.insns[-8] == 0x95, f"{p.name} does not end in exit"
        checked += 1
    assert checked >= 25


def test_maps_o_has_exactly_the_readme_maps(bpf_fixtures: Path) -> None:
    spec = read_object(bpf_fixtures / "maps.o")
    assert _map_table(spec) == MAPS_O
    assert [m.name for m in spec.maps] == ["arr", "channel", "chan1", "arr64", "arr8", "arr3", "hmap"]
    assert all(not m.legacy and m.section == ".maps" for m in spec.maps)
    assert spec.kernel_version is None
    arr64 = spec.map("arr64")
    assert arr64 is not None and arr64.key_type_id is not None and arr64.value_type_id is not None


def test_legacy_maps_equal_btf_maps(bpf_fixtures: Path) -> None:
    btf = read_object(bpf_fixtures / "maps.o")
    legacy = read_object(bpf_fixtures / "legacy_maps.o")
    assert _map_table(legacy) == _map_table(btf) == MAPS_O
    assert all(m.legacy and m.section == "maps" for m in legacy.maps)
    offsets = sorted(m.symbol_offset for m in legacy.maps)
    assert offsets == [16 * i for i in range(7)]  # one 16-byte struct bpf_map_def each
    assert [(p.name, p.section) for p in legacy.programs] == [(p.name, p.section) for p in btf.programs]


def test_copies_of_maps_o_read_the_same(bpf_fixtures: Path) -> None:
    reference = read_object(bpf_fixtures / "maps.o")
    for name in ("maps.obj", "maps.bpf", "maps.o.1", "maps.bpf.o", "weird name.o", "sub/maps.o"):
        spec = read_object(bpf_fixtures / name)
        assert spec.maps == reference.maps and spec.programs == reference.programs, name


def test_map_relocation_points_at_the_ld_imm64(bpf_fixtures: Path) -> None:
    spec = read_object(bpf_fixtures / "maps.o")
    (prog,) = spec.programs
    assert prog.name == "on_enter" and prog.section == "raw_syscalls:sys_enter"
    (rel,) = prog.relocations
    assert (rel.kind, rel.target, rel.symbol, rel.addend) == ("map", "arr", "arr", 0)
    assert prog.insns[rel.insn_index * 8] == 0x18  # BPF_LD | BPF_IMM | BPF_DW


def test_line_info_names_the_source(bpf_fixtures: Path) -> None:
    spec = read_object(bpf_fixtures / "maps.o")
    lines = spec.programs[0].line_info
    assert lines[0].insn_offset == 0
    assert lines[0].file.endswith("maps.c")
    assert lines[0].source_line == "int on_enter(void *ctx)"
    source = (bpf_fixtures / "maps.c").read_text().splitlines()
    for entry in lines:
        assert 0 <= entry.insn_offset < spec.programs[0].insn_count
        if entry.line:
            assert source[entry.line - 1] == entry.source_line
    assert [e.insn_offset for e in lines] == sorted(e.insn_offset for e in lines)


def test_tpbang_has_two_programs_and_no_maps(bpf_fixtures: Path) -> None:
    spec = read_object(bpf_fixtures / "tpbang.o")
    assert [(p.name, p.section) for p in spec.programs] == [
        ("hidden", "!raw_syscalls:sys_enter"), ("shown", "raw_syscalls:sys_exit")]
    assert spec.maps == ()


def test_noprog_has_a_map_and_no_program(bpf_fixtures: Path) -> None:
    spec = read_object(bpf_fixtures / "noprog.o")
    assert spec.programs == () and spec.subprograms == ()
    assert _map_table(spec) == {"onlymap": (MapType.ARRAY, 4, 4, 1)}


def test_nanosleep_maps(bpf_fixtures: Path) -> None:
    spec = read_object(bpf_fixtures / "nanosleep.o")
    assert _map_table(spec) == NANOSLEEP_O
    (prog,) = spec.programs
    assert [(r.kind, r.target) for r in prog.relocations] == [("map", "counts"), ("map", "events")]


def test_stdout1_has_bpf_stdout(bpf_fixtures: Path) -> None:
    spec = read_object(bpf_fixtures / "stdout1.o")
    stdout = spec.map("__bpf_stdout__")
    assert stdout is not None
    assert (stdout.type, stdout.key_size, stdout.value_size, stdout.max_entries) == (
        MapType.PERF_EVENT_ARRAY, 4, 4, 1)
    # the message "hello1" is a string literal: clang puts it in .rodata.str1.1, a data map
    data = [m for m in spec.maps if m.initial_value is not None]
    assert [(m.name, m.section, m.readonly) for m in data] == [(".rodata.str1.1", ".rodata.str1.1", True)]
    assert data[0].initial_value == b"hello1\0"


@pytest.mark.parametrize(("name", "code", "words"), [
    ("notelf.o", "EB002", "text file"),
    ("empty.o", "EB002", "empty"),
    ("x86.o", "EB003", "not a BPF object: ELF machine is x86-64"),
])
def test_non_bpf_fixtures_are_refused(bpf_fixtures: Path, name: str, code: str, words: str) -> None:
    with pytest.raises(ObjectError) as info:
        read_object(bpf_fixtures / name)
    assert info.value.code == code
    assert words in info.value.message
    assert info.value.perf_message == f"Failed to load {bpf_fixtures / name}: BPF object format invalid"


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(ObjectError) as info:
        read_object(tmp_path / "nope.o")
    assert info.value.code == "EB001" and "no such file" in info.value.message
    with pytest.raises(ObjectError) as info:
        read_object(tmp_path)
    assert info.value.code == "EB001" and "directory" in info.value.message


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "locked.o"
    target.write_bytes(b"")

    def refuse(path: str, *_args: object) -> object:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os, "open", refuse)  # root could read it whatever its mode
    with pytest.raises(ObjectError) as info:
        read_object(target)
    assert info.value.code == "EB001"
    assert info.value.message == f"{target}: cannot read the file: Permission denied"
    assert info.value.perf_message == f"Failed to load {target}: Permission denied"
