"""The perf numbers evspec keeps in tables, against the kernel's UAPI header
(/usr/include/linux/perf_event.h, from linux-libc-dev, which the test setup installs with
libbpf-dev): the hardware and software event ids of the compiler (evspec/compiler/attr.py) and
of the perf dialects (evspec/dialect/versions.py), the sample_type, read_format and
branch_sample_type bits; and the dialect knob that makes hardware words terms inside /.../ from
perf 6.5 on. The mutants these tests were written to kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evspec.compiler import attr
from evspec.dialect import predict, versions
from evspec.system.fixtures import corpus_system

UAPI = Path("/usr/include/linux/perf_event.h")
HARDWARE = {
    "cpu-cycles": "CPU_CYCLES", "cycles": "CPU_CYCLES", "instructions": "INSTRUCTIONS",
    "cache-references": "CACHE_REFERENCES", "cache-misses": "CACHE_MISSES",
    "branch-instructions": "BRANCH_INSTRUCTIONS", "branches": "BRANCH_INSTRUCTIONS",
    "branch-misses": "BRANCH_MISSES", "bus-cycles": "BUS_CYCLES",
    "stalled-cycles-frontend": "STALLED_CYCLES_FRONTEND", "idle-cycles-frontend": "STALLED_CYCLES_FRONTEND",
    "stalled-cycles-backend": "STALLED_CYCLES_BACKEND", "idle-cycles-backend": "STALLED_CYCLES_BACKEND",
    "ref-cycles": "REF_CPU_CYCLES",
}  # fmt: skip
SOFTWARE = {
    "cpu-clock": "CPU_CLOCK", "task-clock": "TASK_CLOCK", "page-faults": "PAGE_FAULTS", "faults": "PAGE_FAULTS",
    "context-switches": "CONTEXT_SWITCHES", "cs": "CONTEXT_SWITCHES", "cpu-migrations": "CPU_MIGRATIONS",
    "migrations": "CPU_MIGRATIONS", "minor-faults": "PAGE_FAULTS_MIN", "major-faults": "PAGE_FAULTS_MAJ",
    "alignment-faults": "ALIGNMENT_FAULTS", "emulation-faults": "EMULATION_FAULTS", "dummy": "DUMMY",
    "bpf-output": "BPF_OUTPUT", "cgroup-switches": "CGROUP_SWITCHES",
}  # fmt: skip
BRANCH = {
    "u": "USER", "k": "KERNEL", "hv": "HV", "any": "ANY", "any_call": "ANY_CALL", "any_ret": "ANY_RETURN",
    "ind_call": "IND_CALL", "abort_tx": "ABORT_TX", "in_tx": "IN_TX", "no_tx": "NO_TX", "cond": "COND",
    "ind_jmp": "IND_JUMP", "call": "CALL", "save_type": "TYPE_SAVE", "stack": "CALL_STACK", "priv": "PRIV_SAVE",
}  # fmt: skip


@pytest.fixture(scope="module")
def uapi() -> dict[str, int]:
    """The header's enumerators NAME = N or NAME = 1U << N, as numbers."""
    if not UAPI.is_file():
        pytest.fail(f"{UAPI} is missing (apt-get install linux-libc-dev)")
    values = {}
    for name, shift, number in re.findall(r"^\s*(PERF_\w+)\s*=\s*(?:1U\s*<<\s*(\d+)|(\d+))\s*,", UAPI.read_text(), re.M):
        values[name] = 1 << int(shift) if shift else int(number)
    return values


def _symbols(table: tuple[tuple[tuple[str, ...], int], ...]) -> dict[str, int]:
    return {name: config for names, config in table for name in names}


def test_event_ids_are_the_kernels(uapi: dict[str, int]) -> None:
    hardware = {name: uapi[f"PERF_COUNT_HW_{HARDWARE[name]}"] for name in HARDWARE}
    software = {name: uapi[f"PERF_COUNT_SW_{SOFTWARE[name]}"] for name in SOFTWARE}
    assert attr.HARDWARE_EVENTS == hardware
    assert {k: v for k, v in attr.SOFTWARE_EVENTS.items() if k in software} == software
    assert _symbols(versions.HARDWARE_SYMBOLS) == hardware
    dialect_software = _symbols(versions.SOFTWARE_SYMBOLS + versions.BPF_OUTPUT + versions.CGROUP_SWITCHES)
    assert dialect_software == software


def test_sample_read_and_branch_bits_are_the_kernels(uapi: dict[str, int]) -> None:
    assert {n: b for n, b in attr.SAMPLE_TYPE_BITS} == {n: uapi[f"PERF_SAMPLE_{n}"] for n, _ in attr.SAMPLE_TYPE_BITS}
    assert {n: b for n, b in attr.READ_FORMAT_BITS} == {n: uapi[f"PERF_FORMAT_{n}"] for n, _ in attr.READ_FORMAT_BITS}
    assert attr.BRANCH_SAMPLE_TYPES == {n: 1 << uapi[f"PERF_SAMPLE_BRANCH_{BRANCH[n]}_SHIFT"] for n in BRANCH}


def test_flag_names_read_back() -> None:
    value = attr.SAMPLE["IP"] | attr.SAMPLE["TID"] | attr.SAMPLE["WEIGHT_STRUCT"]
    text = attr.flag_names(value, attr.SAMPLE_TYPE_BITS)
    assert attr.parse_flag_names(text, attr.SAMPLE_TYPE_BITS) == value
    assert attr.parse_flag_names("ID | GROUP|0x100", attr.READ_FORMAT_BITS) == 4 | 8 | 0x100


@pytest.mark.parametrize(("version", "message", "column"), [
    ("4.7", None, None),                                              # no hardware terms: perf 4.7 says nothing
    ("6.1", "Cannot find PMU `cpu'. Missing kernel support?", 0),     # a user term: the PMU is looked up
    ("6.5", "parser error", 4),                                       # a hardware term takes no value
    ("6.6", "parser error", 4),
])  # fmt: skip
def test_hardware_words_are_terms_inside_slashes_from_perf_6_5(version: str, message: str | None,
                                                              column: int | None) -> None:
    verdict = predict("cpu/cache-misses=1/", version, system=corpus_system())
    assert not verdict.accepted
    got = (verdict.error.message, verdict.error.column) if verdict.error else (None, None)
    assert got == (message, column)


_BRANCH_PRINTED = {"ANY_RET": "ANY_RETURN"}  # perf -vv's short names where the header's differ


def test_branch_bits_as_perf_prints_them_are_the_kernels(uapi: dict[str, int]) -> None:
    assert attr.BRANCH_SAMPLE_BITS == tuple(
        (name, 1 << uapi[f"PERF_SAMPLE_BRANCH_{_BRANCH_PRINTED.get(name, name)}_SHIFT"])
        for name, _ in attr.BRANCH_SAMPLE_BITS)
    plm = ("USER", "KERNEL", "HV")
    assert attr.BRANCH_PLM_ALL == sum(1 << uapi[f"PERF_SAMPLE_BRANCH_{n}_SHIFT"] for n in plm) == 7


def test_an_attr_is_a_mapping_of_its_non_zero_fields_in_perfs_order() -> None:
    a = attr.Attr.build({"config": 0, "sample_period": 4000, "type": 1, "size": 128, "disabled": 0})
    assert list(a) == ["type", "size", "config", "sample_period"] and len(a) == 4
    assert dict(a) == {"type": 1, "size": 128, "config": 0, "sample_period": 4000}
