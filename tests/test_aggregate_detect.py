"""Which maps and globals record prints (loader/output/aggregate/usage.py, detect.py): the rule
on instruction sequences written here, and on the 57 objects of Debian sid's libbpf-tools 0.37,
where it picks what objects.json says the tools print, but for the differences DIFFERENCES names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import oracle
from evspec.loader import asm
from evspec.loader.object.reader import read_object
from evspec.loader.object.spec import ObjectSpec, ProgramSpec, Relocation
from evspec.loader.output.aggregate.detect import detect
from evspec.loader.output.aggregate.usage import accumulated, last_values, object_usage
from heldout_tools import extract_sid_objects

FACTS = json.loads((Path(__file__).parent / "data" / "libbpf_tools" / "objects.json").read_text())
LOOKUP, UPDATE, DELETE = 1, 2, 3
ATOMIC_ADD_DW = asm.STX | 0xC0 | asm.DW
# (object, name): why record's choice differs from what the tool prints
DIFFERENCES = {
    ("memleak", "allocs"): "outstanding allocations: entries are deleted on free, the rule's sign of state",
    ("ksnoop", "ksnoop_func_stack"): "ksnoop counts a per-task call depth into it; the tool prints records only",
}


def _spec(*insns: bytes, relocations: tuple[Relocation, ...] = ()) -> ObjectSpec:
    prog = ProgramSpec("p", "tracepoint/x/y", b"".join(insns), relocations=relocations)
    return ObjectSpec("t.o", "GPL", None, (), (prog,))


def _lookup(map_name: str, at: int) -> tuple[list[bytes], Relocation]:
    """r1 = &map; r2 = fp - 8; call lookup (5 instruction slots from ``at``); r0 is the value."""
    code = [asm.ld_imm64(asm.R1, 0), asm.encode(asm.OP_MOV64_REG, asm.R2, asm.R10),
            asm.encode(asm.OP_ADD64_IMM, asm.R2, imm=-8), asm.encode(asm.OP_CALL, imm=LOOKUP)]
    return code, Relocation(at, "map", map_name, map_name)


def test_an_atomic_add_through_a_looked_up_value_counts() -> None:
    code, reloc = _lookup("counts", 0)
    usage = object_usage(_spec(*code, asm.encode(asm.OP_MOV64_IMM, asm.R1, imm=1),
                               asm.encode(ATOMIC_ADD_DW, asm.R0, asm.R1, off=8), asm.encode(asm.OP_EXIT),
                               relocations=(reloc,)))
    assert accumulated(usage) == ["counts"] and usage["counts"].counted == {8}


def test_a_load_incremented_and_stored_back_counts_and_a_spill_keeps_the_pointer() -> None:
    code, reloc = _lookup("data", 0)
    usage = object_usage(_spec(
        *code,
        asm.encode(asm.stx(8), asm.R10, asm.R0, off=-16),  # spill the value pointer
        asm.encode(asm.OP_CALL, imm=5),  # clobbers r0-r5
        asm.encode(asm.ldx(8), asm.R6, asm.R10, off=-16),  # fill it into r6
        asm.encode(asm.ldx(8), asm.R1, asm.R6, off=0),
        asm.encode(asm.OP_ADD64_IMM, asm.R1, imm=1),
        asm.encode(asm.stx(8), asm.R6, asm.R1, off=0),
        asm.encode(asm.OP_EXIT), relocations=(reloc,)))
    assert accumulated(usage) == ["data"]


def test_a_map_whose_entries_are_deleted_is_state() -> None:
    code, reloc = _lookup("start", 0)
    delete = [asm.ld_imm64(asm.R1, 0), asm.encode(asm.OP_MOV64_REG, asm.R2, asm.R10),
              asm.encode(asm.OP_ADD64_IMM, asm.R2, imm=-8), asm.encode(asm.OP_CALL, imm=DELETE)]
    usage = object_usage(_spec(*code, asm.encode(asm.OP_MOV64_IMM, asm.R1, imm=1),
                               asm.encode(ATOMIC_ADD_DW, asm.R0, asm.R1), *delete, asm.encode(asm.OP_EXIT),
                               relocations=(reloc, Relocation(7, "map", "start", "start"))))
    assert usage["start"].deleted and accumulated(usage) == []


def test_a_field_reset_by_a_plain_store_is_a_scratch_buffer() -> None:
    code, reloc = _lookup("heap", 0)
    usage = object_usage(_spec(
        *code,
        asm.encode(asm.st(4), asm.R0, off=32, imm=0),  # e->n = 0
        asm.encode(asm.ldx(4), asm.R1, asm.R0, off=32),
        asm.encode(asm.OP_ADD64_IMM, asm.R1, imm=1),
        asm.encode(asm.stx(4), asm.R0, asm.R1, off=32),  # e->n++
        asm.encode(asm.OP_EXIT), relocations=(reloc,)))
    assert accumulated(usage) == []


def test_a_map_only_written_by_update_holds_last_values() -> None:
    update = [asm.ld_imm64(asm.R1, 0), asm.encode(asm.OP_MOV64_REG, asm.R2, asm.R10),
              asm.encode(asm.OP_ADD64_IMM, asm.R2, imm=-8), asm.encode(asm.OP_CALL, imm=UPDATE)]
    usage = object_usage(_spec(*update, asm.encode(asm.OP_EXIT), relocations=(Relocation(0, "map", "info", "info"),)))
    assert last_values(usage) == ["info"] and accumulated(usage) == []


def test_a_global_counted_into_is_named_by_section_and_variable() -> None:
    usage = object_usage(_spec(
        asm.ld_imm64(asm.R2, 0), asm.encode(asm.OP_MOV64_IMM, asm.R3, imm=1),
        asm.encode(asm.OP_ADD64_REG, asm.R2, asm.R1),  # &counts[i]: still counts
        asm.encode(ATOMIC_ADD_DW, asm.R2, asm.R3), asm.encode(asm.OP_EXIT),
        relocations=(Relocation(0, "data", "counts", "t.bss", 16),)))
    assert accumulated(usage) == ["t.bss:counts"]


def _expected(names: dict[str, object]) -> set[str]:
    """objects.json's keys (``.bss a, b`` lists globals) as names."""
    out: set[str] = set()
    for key in names:
        out.update(n for n in re.split(r"[ ,]+", key.removeprefix(".bss ")) if n)
    return out


@pytest.fixture(scope="module")
def sid_objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    oracle("sid-run")
    return extract_sid_objects(tmp_path_factory.mktemp("sid_objects"))


def test_the_rule_picks_what_the_tools_print_for_the_57_objects(sid_objects: dict[str, Path]) -> None:
    assert len(sid_objects) == 57
    found: dict[str, set[str]] = {}
    wrong = []
    for tool, path in sorted(sid_objects.items()):
        aggregates = detect(read_object(path), {})
        names = {n for a in aggregates for n in (a.group or (a.name,))}
        hists = {a.name for a in aggregates if a.kind == "histogram"}
        facts = FACTS[tool]
        expected = _expected(facts["histograms"]) | _expected(facts["tables"])
        differ = {n for n in names ^ expected if (tool, n) not in DIFFERENCES}
        if differ or hists != _expected(facts["histograms"]):
            wrong.append((tool, sorted(names), sorted(expected), sorted(hists)))
        found[tool] = names
    assert not wrong
    for tool, name in DIFFERENCES:  # each still is one
        facts = FACTS[tool]
        assert (name in found[tool]) != (name in _expected(facts["histograms"]) | _expected(facts["tables"]))
