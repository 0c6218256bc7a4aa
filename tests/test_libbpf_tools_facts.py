"""The facts about the objects of sid's libbpf-tools 0.37 (tests/data/libbpf_tools/objects.json,
tests/libbpf_tools_facts.py): offline, that the facts kept by hand agree with libbpf's view and
with the tools' references, and that the checks catch what they say; live (the sid chroot), that
libbpf's view is what libbpf 1.7 says of the objects today."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from conftest import oracle
from heldout_tools import extract_sid_objects
from libbpf_tools_facts import (
    DERIVED,
    KEPT,
    build_objfacts,
    derive,
    hook,
    merge,
    problems,
    read_objects,
    run_objfacts,
)
from libbpf_tools_refs import SPECS, read_reference

OBJECTS = read_objects()


def test_every_object_and_tool_is_described() -> None:
    assert len(OBJECTS) == 57
    assert sum(len(e["programs"]) for e in OBJECTS.values()) == 365
    assert all(set(e) == {*KEPT, *DERIVED} for e in OBJECTS.values())
    tools = [t for e in OBJECTS.values() for t in e["tools"]]
    assert sorted(tools) == sorted(SPECS)
    assert all(t in OBJECTS[SPECS[t].object or t]["tools"] for t in SPECS)


def test_the_kept_facts_agree_with_libbpfs_view() -> None:
    assert problems(OBJECTS) == []


def test_what_the_tools_print_comes_from_what_the_facts_say() -> None:
    """A tool that prints records has an output map, one that prints a histogram has one."""
    wanted = {"records": "outputs", "histogram": "histograms", "table": "tables", "stacks": "tables"}
    for tool in SPECS:
        ref = read_reference(tool)
        if ref["runs"]:
            assert OBJECTS[ref["object"]][wanted[ref["output"]]], f"{tool} prints {ref['output']}"


def test_the_choices_the_issue_counts() -> None:
    """The 33 tools whose user space calls bpf_program__set_autoload, 26 of them to choose between
    mechanisms (fentry or kprobe, tp_btf or raw_tp, a tracepoint or a function); the maps libbpf
    cannot create as the object has them; the ring buffers."""
    autoload = sorted(s for s, e in OBJECTS.items() if any(c["kind"] in ("alternatives", "if", "option")
                                                            for c in e["choices"]))
    assert autoload == [
        "biolatency", "biosnoop", "biostacks", "biotop", "cachestat", "cpudist", "drsnoop", "filelife", "fsdist",
        "fsslower", "funclatency", "hardirqs", "klockstat", "mdflush", "memleak", "mountsnoop", "numamove",
        "offcputime", "opensnoop", "readahead", "runqlat", "runqslower", "sigsnoop", "slabratetop", "softirqs",
        "solisten", "statsnoop", "syncsnoop", "tcpconnlat", "tcppktlat", "tcprtt", "tcpsynbl", "vfsstat"]
    choosing = [s for s in autoload if any(c["kind"] == "alternatives" for c in OBJECTS[s]["choices"])]
    assert len(choosing) == 26
    unsized = sorted(f"{s}.{m}" for s, e in OBJECTS.items() for m in e["sized_by_user_space"])
    assert unsized == ["capable.stackmap", "cpudist.hists", "cpudist.start", "futexctn.stackmap",
                       "memleak.combined_allocs", "memleak.stack_traces", "offcputime.stackmap", "profile.stackmap",
                       "wakeuptime.stackmap"]
    rings = sorted(s for s, e in OBJECTS.items() if any(o["kind"] == "ringbuf" for o in e["outputs"].values()))
    assert rings == ["filelife", "mountsnoop", "oomkill", "opensnoop", "tcppktlat"]


@pytest.mark.parametrize(("section", "expected"), [
    ("fentry/vfs_read", ("entry", "vfs_read")), ("kprobe/vfs_read", ("entry", "vfs_read")),
    ("kretprobe/vfs_read", ("exit", "vfs_read")), ("tp_btf/sched_switch", ("event", "sched_switch")),
    ("tracepoint/sched/sched_switch", ("event", "sched_switch")), ("raw_tp/sched_switch", ("event", "sched_switch")),
    ("uprobe", None), ("perf_event", None), ("kprobe", None),
])
def test_hook(section: str, expected: tuple[str, str] | None) -> None:
    assert hook(section) == expected


def _broken(stem: str) -> dict[str, Any]:
    return {stem: copy.deepcopy(OBJECTS[stem])}


def test_problems_catch_unknown_names_and_undescribed_maps() -> None:
    objects = _broken("cpudist")
    entry = objects["cpudist"]
    entry["choices"][0]["prefer"][1] = ["sched_switch_raw"]
    del entry["sized_by_user_space"]["start"]
    entry["options"]["targ_nothing"] = "-z"
    del entry["options"]["targ_ms"]
    assert problems(objects) == [
        "cpudist: choice names no program sched_switch_raw",
        "cpudist: map start cannot be created as the object has it, and nothing says who sizes it",
        "cpudist: options names no global targ_nothing",
        "cpudist: .rodata global targ_ms is neither in options nor in constants",
        "cpudist: sched_switch_btf and sched_switch_tp hook the same and no alternatives choice sets them apart"]


def test_problems_catch_outputs_histograms_and_tables() -> None:
    objects = {**_broken("execsnoop"), **_broken("vfsstat")}
    objects["execsnoop"]["outputs"] = {"execs": {"kind": "ringbuf", "record": "struct event"}}
    objects["vfsstat"]["tables"] = {".bss stats, calls": "..."}
    objects["vfsstat"]["histograms"] = {"hists": {}}
    assert problems(objects) == [
        "execsnoop: output map events (perf_event_array) is not in outputs",
        "execsnoop: output execs is not a ringbuf map",
        "vfsstat: histograms names no map or global hists",
        "vfsstat: tables names no map or global .bss calls"]


def test_problems_catch_alternatives_left_out() -> None:
    objects = _broken("vfsstat")
    objects["vfsstat"]["choices"][0]["prefer"] = [["fentry_vfs_read"], ["kprobe_vfs_read"]]
    assert len(problems(objects)) == 7  # the other 7 pairs of vfs_* functions


# --- live ---------------------------------------------------------------------------------------------


def test_libbpfs_view_is_todays(tmp_path: Path) -> None:
    sid_run, clang = oracle("sid-run"), oracle("clang-21")
    objects = extract_sid_objects(tmp_path / "objects")
    raw = run_objfacts(sid_run, build_objfacts(clang, tmp_path), objects)
    assert set(raw) == set(OBJECTS)
    for stem, entry in OBJECTS.items():
        fresh = merge(entry, derive(raw[stem], entry["outputs"]))
        assert fresh == entry, f"{stem}: libbpf's view changed (scripts/libbpf_tools_facts.py refreshes it)"
