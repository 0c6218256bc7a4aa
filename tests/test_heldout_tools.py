"""Held-out real-world objects (the CO-RE objects of Debian's libbpf-tools, which nobody here
wrote, built against another kernel's vmlinux.h; tests/heldout_tools.py extracts them): for every
program of every object, ``evspec verify`` must end the way libbpf 1.1 ends on this kernel
(tests/libbpf_parity.py): what libbpf loads, evspec loads with the same instructions; what the
kernel refuses under libbpf, it refuses under evspec with the same errno; what libbpf refuses
itself, evspec refuses before loading. A failure prints the table of the programs that differ.
As root (both load programs into this kernel)."""

from __future__ import annotations

import pytest
from heldout_tools import extract_objects
from libbpf_parity import Row, build_runner, compare, evspec_verdicts, libbpf_verdicts, table


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory, root_kernel: None) -> list[Row]:
    root = tmp_path_factory.mktemp("heldout")
    objects = extract_objects(root / "objects")
    runner = build_runner(root)
    return compare(libbpf_verdicts(runner, objects), evspec_verdicts(objects))


def test_every_program_ends_as_it_ends_under_libbpf(rows: list[Row]) -> None:
    wrong = [r for r in rows if r.problem is not None]
    assert not wrong, f"{len(wrong)} of {len(rows)} program(s) differ from libbpf:\n{table(wrong)}"


@pytest.mark.parametrize(
    ("obj", "section"),
    [
        ("bashreadline", "uretprobe/readline"),  # a uprobe naming no binary: attached by hand
        ("biotop", "kprobe"),  # no target at all
        ("javagc", "usdt"),  # USDT programs are kprobe programs
    ],
)
def test_sections_libbpf_loads_without_attaching_them_load(rows: list[Row], obj: str, section: str) -> None:
    found = [r for r in rows if r.object == obj and r.section == section]
    assert found, f"no program of {obj} is in section {section}"
    assert all(r.evspec is not None and r.evspec["loaded"] for r in found), table(found)


def test_trampoline_programs_are_loaded_not_refused_by_name(rows: list[Row]) -> None:
    """fentry/fexit programs go to the kernel (or fail on the kernel's BTF) as under libbpf; none
    is refused for its section name."""
    tracing = [r for r in rows if r.section.startswith(("fentry/", "fexit/"))]
    assert tracing
    for r in tracing:
        assert r.evspec is not None
        said = r.evspec["error"] or r.evspec["verifier"] or ""
        assert "neither SYS:EVENT" not in said and "malformed" not in said, table([r])

