"""libbpf 1.8's section names, name by name (tests/data/libbpf_sections/libbpf-1.8.tsv, read from
libbpf.c's section table; tests/libbpf_section_table.py), checked against libbpfs that run:
bpftool 7.8's libbpf 1.8 and the sid chroot's libbpf 1.7 (tests/data/libbpf_sections/sections17.c),
each loading one object per name while bpftrace reads what reaches the kernel in BPF_PROG_LOAD.
Where 1.7 differs from 1.8, libbpf-1.7-differences.tsv says so. Offline: the table's own shape
and the matching rules. Live (root and the tools of scripts/oracles.sh): both libbpfs' own lists
of names, and per name the program type, expected attach type, flags and attach BTF id sent to
the kernel, or libbpf's reason for sending nothing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from chroot_clang import build_runner
from conftest import oracle
from libbpf_section_table import (
    NO_MATCH,
    REFUSALS,
    RUNNER,
    builtin_names,
    capture_loads,
    expected,
    expected_17,
    listed_names,
    load_with_bpftool,
    match,
    read_differences,
    read_table,
    run_runner,
    section_names,
    write_objects,
)

TABLE = read_table()
DIFFERENCES = read_differences()
NAMES = section_names(TABLE)
FLAGS = {"attachable", "exp_attach_opt", "attach_btf", "sleepable", "xdp_frags", "usdt"}
ESRCH, EINVAL = 3, 22


def test_the_table_has_libbpf_18s_116_entries() -> None:
    sections = [e.section for e in TABLE]
    assert len(sections) == 116 and len(set(sections)) == 116
    assert all(e.flags <= FLAGS for e in TABLE)
    assert all(e.program_type for e in TABLE)
    assert len(TABLE) - len(DIFFERENCES) == 105  # libbpf 1.7's


def test_the_differences_name_entries_of_the_table() -> None:
    assert set(DIFFERENCES) <= {e.section for e in TABLE}
    assert set(DIFFERENCES.values()) <= set(REFUSALS)


@pytest.mark.parametrize(("name", "section"), [
    ("kprobe/do_nanosleep", "kprobe+"), ("kprobe", "kprobe+"), ("kprobex", None), ("kprobe.multi/x*", "kprobe.multi+"),
    ("tc/ingress", "tc/ingress"), ("tc", "tc"), ("tc/x", None), ("tcx/egress", "tcx/egress"),
    ("xdp.frags/devmap", "xdp.frags/devmap"), ("xdp.frags", "xdp.frags"), ("xdp/foo", None),
    ("uprobe.multi.s/bin:f", "uprobe.multi.s+"), ("uprobe.multi.x", None), ("cgroup/sock", "cgroup/sock"),
    ("cgroup/sock_create", "cgroup/sock_create"), ("sk_skb/stream_parser", "sk_skb/stream_parser"),
    ("tp/sched/sched_switch", "tp+"), ("tp_btf.s/x", "tp_btf.s+"), ("lsm_cgroup/x", "lsm_cgroup+"),
])
def test_the_first_matching_entry_wins(name: str, section: str | None) -> None:
    entry = match(TABLE, name)
    assert (entry.section if entry else None) == section


def test_what_libbpf_sends_follows_the_flags() -> None:
    assert expected(TABLE, "xdp.frags") == {"program_type": "xdp", "attach_type": "xdp", "flags": 32, "attach_btf": False}
    assert expected(TABLE, "lsm.s/file_open") == {"program_type": "lsm", "attach_type": "lsm_mac", "flags": 16,
                                                   "attach_btf": True}
    assert expected(TABLE, "usdt")["attach_type"] == "trace_uprobe_multi"
    assert expected(TABLE, "usdt", uprobe_multi=False)["attach_type"] == ""
    assert expected(TABLE, "fentry") == {"refused": "no_target"}
    assert expected(TABLE, "struct_ops/init") == {"refused": "unused_struct_ops"}
    assert expected(TABLE, "freplace/handler") == {"refused": "no_target_program"}
    assert expected(TABLE, "xdp/x") == {"refused": "unknown"}
    assert expected_17(TABLE, DIFFERENCES, "tp.s/a/b") == {"refused": "unknown"}
    assert expected_17(TABLE, DIFFERENCES, "tp/a/b") == expected(TABLE, "tp/a/b")


def test_every_entry_is_tried_alone_and_with_a_target() -> None:
    assert len(NAMES) == len(TABLE) + sum(e.section.endswith("+") for e in TABLE) + len(NO_MATCH)
    assert all(match(TABLE, n) is None for n in NO_MATCH)


# --- live ---------------------------------------------------------------------------------------------


def _uprobe_multi() -> bool:
    """uprobe_multi links came with Linux 6.6 (libbpf then loads usdt programs with that attach type)."""
    major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    return (major, minor) >= (6, 6)


@pytest.fixture(scope="module")
def runs(root_kernel: None, tracefs: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both libbpfs on one object per name, under one capture of BPF_PROG_LOAD."""
    bpftool, bpftrace, clang, sid_run = (oracle(t) for t in ("bpftool-sid", "bpftrace", "clang-21", "sid-run"))
    work = tmp_path_factory.mktemp("sections")
    runner = build_runner(clang, RUNNER, work)
    b_objects, s_objects = write_objects(work / "b", NAMES, "b"), write_objects(work / "s", NAMES, "s")
    with capture_loads(bpftrace, work) as capture:
        said = load_with_bpftool(bpftool, b_objects, work)
        answers = run_runner(sid_run, runner, s_objects)
    return {"said": said, "answers": answers, "b": capture.by_name("b"), "s": capture.by_name("s"),
            "types": builtin_names(bpftool, "prog_types"), "attach": builtin_names(bpftool, "attach_types"),
            "runner": runner, "sid_run": sid_run}


def _sent(runs: dict[str, Any], prefix: str, name: str) -> dict[str, object] | None:
    load = runs[prefix].get(f"{prefix}{NAMES.index(name):03d}")
    if load is None:
        return None
    return {"program_type": runs["types"][load.program_type], "attach_type": load.attach_type,
            "flags": load.flags, "attach_btf": load.attach_btf_id != 0}


def _want(runs: dict[str, Any], want: dict[str, object]) -> dict[str, object] | None:
    if "refused" in want:
        return None
    return {**want, "attach_type": runs["attach"].index(want["attach_type"]) if want["attach_type"] else 0}


def test_libbpf_18_lists_the_names_of_the_table(runs: dict[str, Any]) -> None:
    said = next(line for line in runs["said"]["xdp/x"] if "supported section(type) names are:" in line)
    assert listed_names(said) == [e.section for e in TABLE]


def test_libbpf_17_lists_them_but_the_differences(runs: dict[str, Any]) -> None:
    proc = subprocess.run([runs["sid_run"], str(runs["runner"]), "--names"], capture_output=True, text=True, check=True)
    assert listed_names(proc.stdout) == [e.section for e in TABLE if e.section not in DIFFERENCES]


@pytest.mark.parametrize("name", NAMES)
def test_libbpf_18_sends_what_the_table_says(runs: dict[str, Any], name: str) -> None:
    want = expected(TABLE, name, _uprobe_multi())
    assert _sent(runs, "b", name) == _want(runs, want), runs["said"].get(name)
    if "refused" in want:
        assert any(w in line for w in REFUSALS[want["refused"]] for line in runs["said"][name]), runs["said"][name]


@pytest.mark.parametrize("name", NAMES)
def test_libbpf_17_sends_what_the_table_says_but_the_differences(runs: dict[str, Any], name: str) -> None:
    entry = match(TABLE, name)
    want = expected(TABLE, name, _uprobe_multi()) if entry is None or entry.section not in DIFFERENCES else (
        expected_17(TABLE, DIFFERENCES, name))
    answer = runs["answers"][name]
    assert _sent(runs, "s", name) == _want(runs, want), answer
    if "refused" in want:
        assert answer["load_errno"] and any(w in answer["warning"] for w in REFUSALS[want["refused"]]), answer
    if entry is None or entry.section in DIFFERENCES:
        assert (answer["prog_type_by_name"], answer["attach_type_by_name"]) == ({"errno": ESRCH}, {"errno": EINVAL})
    else:
        attach = entry.attach_type or "cgroup_inet_ingress"  # libbpf's name of attach type 0
        assert answer["prog_type_by_name"] == {"type": entry.program_type, "attach_type": attach}
        assert answer["attach_type_by_name"] == (attach if "attachable" in entry.flags else {"errno": EINVAL})
