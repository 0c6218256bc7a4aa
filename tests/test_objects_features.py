"""read_object on an object with every feature the reader handles, compiled from source here:
several programs in one section, .text subprograms reached by bpf-to-bpf calls, a callback
passed to bpf_loop, a static function in a program section, global data in .data, .rodata and
.bss, and relocations of each kind."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest
from evspec.loader.object.clang import compile_source
from evspec.loader.object.reader import data_map_name, read_object
from evspec.loader.object.spec import MapType, ObjectSpec, ProgramSpec, Relocation

SOURCE = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 128);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(int));
	__uint(value_size, sizeof(int));
	__uint(max_entries, 3);
	__uint(pinning, 1);
} out SEC(".maps");

__u64 hits = 7;                                   /* .data */
const volatile __u32 limit = 42;                   /* .rodata, offset 0 */
static const char tag[8] = "feature";              /* .rodata, after limit */
__u64 misses;                                      /* .bss */

static __attribute__((noinline)) int bump(__u32 key)
{
	__u64 one = 1, *v = bpf_map_lookup_elem(&counts, &key);

	if (v)
		*v += 1;
	else
		bpf_map_update_elem(&counts, &key, &one, BPF_ANY);
	return key < limit;
}

static int step(__u32 index, void *ctx)
{
	misses += index;
	return 0;
}

SEC("raw_syscalls:sys_enter")
int on_enter(void *ctx)
{
	hits++;
	return bump(1);
}

SEC("raw_syscalls:sys_enter")
int on_enter_too(void *ctx)
{
	bpf_loop(4, step, 0, 0);
	bpf_perf_event_output(ctx, &out, BPF_F_CURRENT_CPU, (void *)tag, sizeof(tag));
	return bump(2);
}

static __attribute__((noinline, section("raw_syscalls:sys_exit"))) int local_helper(int x)
{
	return x * 3 + (int)misses;
}

SEC("raw_syscalls:sys_exit")
int on_exit(void *ctx)
{
	misses += 2;
	return local_helper(5);
}

char _license[] SEC("license") = "Dual BSD/GPL";
int _version SEC("version") = 0x060112;
"""


@pytest.fixture(scope="module")
def features(tmp_path_factory: pytest.TempPathFactory) -> ObjectSpec:
    if shutil.which("clang") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("clang is required in CI")
        pytest.skip("clang not installed")
    work = tmp_path_factory.mktemp("features")
    source = work / "features_test.c"
    source.write_text(SOURCE)
    cache = work / "cache"
    return read_object(compile_source(source, cache_dir=cache))


def _program(spec: ObjectSpec, name: str) -> ProgramSpec:
    found = [p for p in (*spec.programs, *spec.subprograms) if p.name == name]
    assert len(found) == 1, name
    return found[0]


def _insn(p: ProgramSpec, index: int) -> tuple[int, int, int]:
    opcode, regs, _off, imm = struct.unpack_from("<BBhi", p.insns, index * 8)
    return opcode, regs >> 4, imm


def test_license_and_version(features: ObjectSpec) -> None:
    assert features.license == "Dual BSD/GPL"
    assert features.kernel_version == 0x060112


def test_several_programs_in_one_section(features: ObjectSpec) -> None:
    assert [(p.name, p.section, p.offset) for p in features.programs] == [
        ("on_enter", "raw_syscalls:sys_enter", 0),
        ("on_enter_too", "raw_syscalls:sys_enter", _program(features, "on_enter").insn_count * 8),
        ("on_exit", "raw_syscalls:sys_exit", 0),
    ]
    for p in features.programs:
        assert p.insns[-8] == 0x95  # each slice ends in its own exit


def test_subprograms(features: ObjectSpec) -> None:
    assert {(p.name, p.section) for p in features.subprograms} == {
        ("bump", ".text"), ("step", ".text"), ("local_helper", "raw_syscalls:sys_exit")}


def test_btf_maps(features: ObjectSpec) -> None:
    counts, out = features.map("counts"), features.map("out")
    assert counts is not None and out is not None
    assert (counts.type, counts.key_size, counts.value_size, counts.max_entries, counts.flags) == (
        MapType.HASH, 4, 8, 128, 1)  # BPF_F_NO_PREALLOC
    assert (out.type, out.key_size, out.value_size, out.max_entries, out.pinning) == (
        MapType.PERF_EVENT_ARRAY, 4, 4, 3, 1)
    assert out.key_type_id is None and counts.key_type_id is not None


def test_global_data_maps(features: ObjectSpec) -> None:
    data = {m.section: m for m in features.maps if m.initial_value is not None}
    assert set(data) == {".data", ".rodata", ".bss"}
    assert data[".data"].name == "features.data"
    assert data[".rodata"].name == "features.rodata"
    assert data[".bss"].name == "features.bss"
    for m in data.values():
        assert (m.type, m.key_size, m.max_entries) == (MapType.ARRAY, 4, 1)
        assert m.value_size == len(m.initial_value or b"")
        assert m.readonly == (m.section == ".rodata")
        assert m.value_type_id is not None  # the DATASEC's BTF id
    assert data[".data"].initial_value == struct.pack("<Q", 7)
    assert data[".bss"].initial_value == bytes(8)
    rodata = data[".rodata"].initial_value or b""
    assert rodata[:4] == struct.pack("<I", 42) and b"feature\0" in rodata


def test_map_and_data_relocations(features: ObjectSpec) -> None:
    bump = _program(features, "bump")
    kinds = [(r.kind, r.target) for r in bump.relocations]
    assert kinds == [("map", "counts"), ("map", "counts"), ("data", "features.rodata")]
    assert bump.relocations[2].addend == 0  # limit is at the start of .rodata
    on_enter = _program(features, "on_enter")
    assert on_enter.relocations[0] == Relocation(0, "data", "hits", "features.data", 0)
    too = _program(features, "on_enter_too")
    tag = next(r for r in too.relocations if r.kind == "data")
    assert tag.target == "features.rodata"
    rodata = features.map("features.rodata")
    assert rodata is not None and rodata.initial_value is not None
    assert rodata.initial_value[tag.addend:tag.addend + 8] == b"feature\0"
    for p in (bump, on_enter, too):
        for r in p.relocations:
            if r.kind in ("map", "data", "func"):
                assert _insn(p, r.insn_index)[0] == 0x18


def test_each_data_section_is_referenced_by_a_program(features: ObjectSpec) -> None:
    targets = {r.target for p in features.programs for r in p.relocations if r.kind == "data"}
    assert targets == {"features.data", "features.rodata", "features.bss"}
    (bss,) = [r for r in _program(features, "on_exit").relocations if r.kind == "data"]
    assert (bss.symbol, bss.addend) == ("misses", 0)


def test_call_relocations(features: ObjectSpec) -> None:
    calls = {p.name: [r.target for r in p.relocations if r.kind == "call"] for p in features.programs}
    assert calls == {"on_enter": ["bump"], "on_enter_too": ["bump"], "on_exit": ["local_helper"]}
    for p in features.programs:
        for r in p.relocations:
            if r.kind == "call":
                opcode, src, _imm = _insn(p, r.insn_index)
                assert (opcode, src) == (0x85, 1)  # BPF_JMP|BPF_CALL, BPF_PSEUDO_CALL
    # on_exit -> local_helper has no ELF relocation (same section): the reader adds one
    (rel,) = [r for r in _program(features, "on_exit").relocations if r.kind == "call"]
    assert rel.symbol == "raw_syscalls:sys_exit"


def test_callback_relocation(features: ObjectSpec) -> None:
    too = _program(features, "on_enter_too")
    assert [r.target for r in too.relocations if r.kind == "func"] == ["step"]


def test_line_info_per_program(features: ObjectSpec) -> None:
    for p in (*features.programs, *features.subprograms):
        assert p.line_info, p.name
        assert all(0 <= e.insn_offset < p.insn_count for e in p.line_info)
        assert p.line_info[0].file.endswith("features_test.c")
    too = _program(features, "on_enter_too")
    assert too.line_info[0].source_line == "int on_enter_too(void *ctx)"
    assert any("bpf_loop(4, step, 0, 0);" in e.source_line for e in too.line_info)
    lines = SOURCE.splitlines()
    for e in too.line_info:
        if e.line:
            assert lines[e.line - 1] == e.source_line
            assert e.column <= len(e.source_line) + 1


@pytest.mark.parametrize(("path", "section", "name"), [
    ("maps.o", ".data", "maps.data"),
    ("/x/nanosleep.o", ".rodata", "nanoslee.rodata"),
    ("a.o", ".bss", "a.bss"),
    ("a-b c.o", ".data", "a_b_c.data"),
    ("verylongobjectname.bpf.o", ".bss", "verylong.bss"),
    ("p.o", ".rodata.str1.1", ".rodata.str1.1"),
    ("p.o", ".data.counters", ".data.counters"),
    ("p.o", ".rodata.very_long_name", ".rodata.very_lo"),
])
def test_data_map_names(path: str, section: str, name: str) -> None:
    assert data_map_name(path, section) == name
    assert len(name) <= 15


LONG_LEGACY = r"""
#include <linux/bpf.h>
struct bpf_map_def {
	unsigned int type, key_size, value_size, max_entries, map_flags, inner_map_idx, numa_node;
};
struct bpf_map_def __attribute__((section("maps"), used)) first = {
	BPF_MAP_TYPE_HASH, 4, 16, 64, BPF_F_NO_PREALLOC, 0, 1 };
struct bpf_map_def __attribute__((section("maps"), used)) second = {
	BPF_MAP_TYPE_PERF_EVENT_ARRAY, 4, 4, 2, 0, 0, 0 };
"""


def test_legacy_maps_with_extra_fields(tmp_path: Path) -> None:
    """perf-era struct bpf_map_def with map_flags, inner_map_idx and numa_node (28 bytes)."""
    if shutil.which("clang") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("clang is required in CI")
        pytest.skip("clang not installed")
    source = tmp_path / "long_legacy.c"
    source.write_text(LONG_LEGACY)
    spec = read_object(compile_source(source, cache_dir=tmp_path / "cache"))
    assert [(m.name, m.type, m.key_size, m.value_size, m.max_entries, m.flags, m.symbol_offset, m.legacy)
            for m in spec.maps] == [
        ("first", MapType.HASH, 4, 16, 64, 1, 0, True),
        ("second", MapType.PERF_EVENT_ARRAY, 4, 4, 2, 0, 28, True)]
    assert spec.programs == () and spec.license == ""


def test_object_of_an_old_tool_chain(tmp_path: Path) -> None:
    """No BTF, no FUNC symbol (the section is one program named after it), and legacy map
    symbols without a size (each gets the section size divided by the number of maps)."""
    if shutil.which("clang") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("clang is required in CI")
        pytest.skip("clang not installed")
    asm = tmp_path / "old.s"
    asm.write_text(
        '\t.section "func=sys_write","ax",@progbits\n\tr1 = second ll\n\tr0 = 0\n\texit\n'
        '\t.section maps,"aw",@progbits\n'
        '\t.globl first\nfirst:\n\t.long 2, 4, 4, 8\n'
        '\t.globl second\nsecond:\n\t.long 4, 4, 4, 2\n'
        '\t.section license,"aw",@progbits\n\t.asciz "GPL"\n')
    obj = tmp_path / "old.o"
    import subprocess

    subprocess.run(["clang", "-target", "bpf", "-c", str(asm), "-o", str(obj)], check=True)
    spec = read_object(obj)
    assert spec.btf is None and spec.btf_ext is None and spec.license == "GPL"
    assert [(m.name, m.type, m.key_size, m.value_size, m.max_entries, m.symbol_offset) for m in spec.maps] == [
        ("first", MapType.ARRAY, 4, 4, 8, 0), ("second", MapType.PERF_EVENT_ARRAY, 4, 4, 2, 16)]
    (prog,) = spec.programs
    assert (prog.name, prog.section, prog.insn_count, prog.line_info) == (
        "func=sys_write", "func=sys_write", 4, ())  # ld_imm64 takes two slots
    assert prog.relocations == (Relocation(0, "map", "second", "second", 0),)
