"""The CO-RE resolver and patcher on committed sources, without root: tests/data/core/relocs.c
relocated against a target BTF built from tests/data/core/target.c (the same types laid out
otherwise), each relocation's value checked against what target.c's layout makes it; the
instructions patched as libbpf patches them; a missing field poisoned with a finding that names
type, field and path; two disagreeing flavours an error naming both."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from corpus_files import DATA
from evspec.loader.btf.core import CoreError, CoreKind, CoreResolver
from evspec.loader.btf.core_patch import POISON_HELPER, core_findings, relocate_object, unloadable_reason
from evspec.loader.btf.reader import Btf
from evspec.loader.btf.target import TargetBtf, essential_name
from evspec.loader.errors import ObjectError
from evspec.loader.object.elf import BpfElf
from evspec.loader.object.reader import read_object_bytes
from evspec.loader.object.spec import ObjectSpec

CORE = DATA / "core"
INSN = struct.Struct("<BBhi")


def build(out: Path, name: str) -> bytes:
    if shutil.which("clang") is None:
        pytest.fail("clang is needed (scripts/test.sh installs it)")
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c",
                    str(CORE / f"{name}.c"), "-o", str(out / f"{name}.o")], check=True)
    return (out / f"{name}.o").read_bytes()


def btf_of(data: bytes) -> bytes:
    elf = BpfElf("target.o", data)
    section = elf.section(".BTF")
    assert section is not None
    return elf.contents(section)


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("core")
    return {name: build(out, name) for name in ("relocs", "target", "ambiguous")}


@pytest.fixture(scope="module")
def spec(objects: dict[str, bytes]) -> ObjectSpec:
    return read_object_bytes(objects["relocs"], "relocs.o")


@pytest.fixture(scope="module")
def target(objects: dict[str, bytes]) -> TargetBtf:
    return TargetBtf(btf_of(objects["target"]), "target.o")


def _results(spec: ObjectSpec, target: TargetBtf) -> dict[tuple[str, str, str], tuple[int, int, str | None]]:
    """(local value, target value, poison) by (program, kind, access); the type relocations by
    (program, kind, type)."""
    assert spec.btf is not None
    resolver = CoreResolver(Btf(spec.btf), target)
    out = {}
    for prog, r in spec.core_relocations():
        res = resolver.resolve(r.type_id, r.access, r.kind_id)
        key = r.type_name if r.kind.startswith("type_") else r.access
        out[(prog.name, r.kind, key)] = (res.orig, res.new, res.poison)
    return out


def test_essential_names() -> None:
    assert [essential_name(n) for n in ("task_struct___mine", "a___b___c", "x____y", "___x", "s___", "RED___l")] \
        == ["task_struct", "a___b", "x____y", "___x", "s___", "RED"]


def test_every_kind_against_another_layout(spec: ObjectSpec, target: TargetBtf) -> None:
    """(local value, target value) per relocation; target.c's offsets: a 8, b 16 (in an anonymous
    struct inside an anonymous union at 12), c 20, in 36 (y 44), bitfields at bit 384 (bf2: bits
    389..395), arr 56 (8-byte elements), grew 120 (an unsigned long), no 'gone'."""
    got = {k: v[:2] for k, v in _results(spec, target).items()}
    sample_id = target.named("sample")[0]
    assert got == {
        ("fields", "field_byte_offset", "0:0"): (0, 8),
        ("fields", "field_byte_offset", "0:1:0"): (4, 16),
        ("fields", "field_byte_offset", "0:1:1:3"): (11, 23),
        ("fields", "field_byte_offset", "0:2"): (16, 36),
        ("fields", "field_byte_offset", "0:5:2"): (48, 72),
        ("fields", "field_byte_offset", "0:7"): (68, 120),
        ("info", "field_exists", "0:6"): (1, 0),
        ("info", "field_exists", "0:2:0"): (1, 1),
        ("info", "field_byte_size", "0:1:1"): (8, 16),
        ("info", "field_signed", "0:0"): (1, 1),
        ("info", "field_byte_size", "0:5:1"): (8, 8),
        ("bitfield", "field_byte_offset", "0:4"): (24, 48),
        ("bitfield", "field_byte_size", "0:4"): (4, 4),
        ("bitfield", "field_lshift_u64", "0:4"): (56, 52),
        ("bitfield", "field_signed", "0:4"): (0, 0),
        ("bitfield", "field_rshift_u64", "0:4"): (59, 57),
        ("types", "type_exists", "struct sample___l"): (1, 1),
        ("types", "type_size", "struct sample___l"): (72, 128),
        ("types", "type_exists", "struct absent___l"): (1, 0),
        ("types", "type_id_target", "struct sample___l"): (2, sample_id),
        ("enums", "enumval_exists", "2"): (1, 0),
        ("enums", "enumval_exists", "1"): (1, 1),
        ("enums", "enumval_value", "0"): (0, 20),
        ("missing", "field_byte_offset", "0:6"): (64, 0),
    }


def _insns(data: bytes) -> list[tuple[int, int, int, int]]:
    return [INSN.unpack_from(data, i) for i in range(0, len(data), 8)]


def test_instructions_are_patched(spec: ObjectSpec, target: TargetBtf) -> None:
    relocated, findings = relocate_object(spec, target)
    fields = {p.name: p for p in relocated.programs}["fields"]
    before = _insns({p.name: p for p in spec.programs}["fields"].insns)
    after = _insns(fields.insns)
    changed = {i: (b, a) for i, (b, a) in enumerate(zip(before, after, strict=True)) if a != b}
    # (opcode, offset, immediate): LDX offsets, &s->in an ALU immediate; 'grew' (u32 -> u64,
    # unsigned: safe) also gets a DW load instead of a W load
    assert {i: (a[0], a[2], a[3]) for i, (_, a) in changed.items()} == {
        0: (0x61, 8, 0), 1: (0x61, 16, 0), 3: (0x71, 23, 0), 7: (0xB7, 0, 36), 12: (0x79, 72, 0),
        14: (0x79, 120, 0)}
    assert before[14][0] == 0x61
    assert all(r.applied for _, r in relocated.core_relocations())
    assert unloadable_reason(relocated, target) is None and unloadable_reason(relocated) is None
    types = _insns({p.name: p for p in relocated.programs}["types"].insns)
    assert types[1][3] == 128  # ALU immediate: the type's size
    [poisoned] = findings
    assert core_findings(relocated) == [poisoned]
    assert (poisoned.function, poisoned.insn) == ("missing", 0)
    assert poisoned.message == (
        "field_byte_offset of struct sample___l (access 0:6): field struct sample___l.gone (access 0:6) "
        f"is in none of target.o's struct sample [{target.named('sample')[0]}]")
    missing = {p.name: p for p in relocated.programs}["missing"]
    assert _insns(missing.insns)[0] == (0x85, 0, 0, POISON_HELPER)
    assert "call 195896080" in str(poisoned) and "instruction 0" in str(poisoned)


def test_type_matches(spec: ObjectSpec, target: TargetBtf) -> None:
    """clang 14 cannot emit type_matches: asked of the resolver directly. struct inner has an
    extra member in the target (still a match); enum color lacks BLUE (no match)."""
    assert spec.btf is not None
    local = Btf(spec.btf)
    resolver = CoreResolver(local, target)
    inner = local.find("inner___l")
    color = local.find("color___l")
    assert inner is not None and color is not None
    assert resolver.resolve(inner.id, "0", CoreKind.TYPE_MATCHES).new == 1
    assert resolver.resolve(color.id, "0", CoreKind.TYPE_MATCHES).new == 0


def test_disagreeing_flavours_are_an_error(spec: ObjectSpec, objects: dict[str, bytes]) -> None:
    target = TargetBtf(btf_of(objects["ambiguous"]), "ambiguous.o")
    assert spec.btf is not None
    with pytest.raises(CoreError, match=r"ambiguous in ambiguous.o: struct sample \[\d\]\.a gives 0, "
                                        r"struct sample___2 \[\d\]\.a gives 8"):
        CoreResolver(Btf(spec.btf), target).resolve(2, "0:0", CoreKind.FIELD_BYTE_OFFSET)
    with pytest.raises(ObjectError) as exc:
        relocate_object(spec, target)
    assert exc.value.code == "EB015" and "function 'fields', instruction 0" in exc.value.message


@pytest.mark.parametrize(("access", "kind", "message"), [
    ("0:9", CoreKind.FIELD_BYTE_OFFSET, "step 1 is member 9, but struct sample___l has 8"),
    ("0:5:4", CoreKind.FIELD_BYTE_OFFSET, "step 2 is element 4 of an array of 4"),
    ("0:0:1", CoreKind.FIELD_BYTE_OFFSET, "goes into int int, which has no members"),
    ("1:x", CoreKind.FIELD_BYTE_OFFSET, "malformed access string '1:x'"),
    ("", CoreKind.FIELD_EXISTS, "malformed access string ''"),
    ("0:0", CoreKind.TYPE_SIZE, "a type relocation's access string is '0'"),
    ("0", 99, "unknown CO-RE relocation kind 99"),
    ("0", CoreKind.ENUMVAL_VALUE, "names no enumerator"),
    ("0:5:1", CoreKind.FIELD_LSHIFT_U64, "cannot apply to an array element"),
])
def test_bad_records_are_errors(spec: ObjectSpec, target: TargetBtf, access: str, kind: int, message: str) -> None:
    assert spec.btf is not None
    resolver = CoreResolver(Btf(spec.btf), target)
    with pytest.raises(CoreError, match=message.replace("(", r"\(").replace(")", r"\)")):
        resolver.resolve(2, access, kind)
