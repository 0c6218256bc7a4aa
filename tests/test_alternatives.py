"""Alternatives (programs hooking one function or event by different mechanisms) derived from the
sections, checked against the choices libbpf-tools make (objects.json) for all 57 sid objects;
``prog:NAME.autoload=``; and (live) record loading the first alternative this kernel attaches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.lint.alternatives import alternatives, choose
from evspec.loader.lint.terms.programs import apply_autoload
from evspec.loader.object.reader import read_object
from evspec.loader.object.spec import ObjectSpec, ProgramSpec
from heldout_tools import extract_sid_objects
from record_cli import run_record

from evspec.ast import BpfEvent
from evspec.codes import bpf as codes
from evspec.codes import bpfconfig
from evspec.diagnostics import EvspecError
from evspec.parser import parse

OBJECTS = json.loads((Path(__file__).parent / "data" / "libbpf_tools" / "objects.json").read_text())
EXIT = b"\x95" + bytes(7)


def spec_of(*sections: tuple[str, str]) -> ObjectSpec:
    return ObjectSpec("t.o", "GPL", None, (), tuple(ProgramSpec(n, s, EXIT, 0, (), (), ()) for n, s in sections))


def groups(spec: ObjectSpec) -> list[list[list[str]]]:
    return [[list(v) for v in c.variants] for c in alternatives(spec)]


def test_mechanisms_of_one_hook_are_grouped_in_the_tools_order() -> None:
    spec = spec_of(("k_in", "kprobe/vfs_read"), ("k_out", "kretprobe/vfs_read"), ("f_in", "fentry/vfs_read"),
                   ("f_out", "fexit/vfs_read"), ("tp", "tracepoint/sched/sched_switch"),
                   ("raw", "raw_tp/sched_switch"), ("btf", "tp_btf/sched_switch"),
                   ("alone", "kprobe/vfs_write"), ("twice1", "tp_btf/sched_wakeup"), ("twice2", "tp_btf/sched_wakeup"),
                   ("off", "?fentry/vfs_write"), ("uprobe", "uprobe//bin/sh:main"))
    assert groups(spec) == [[["f_in", "f_out"], ["k_in", "k_out"]], [["btf"], ["raw"], ["tp"]]]


def test_renamed_functions_and_their_tracepoints_are_one_hook() -> None:
    spec = spec_of(("a", "kprobe/__blk_account_io_start"), ("b", "kprobe/blk_account_io_start"),
                   ("c", "tp_btf/block_io_start"), ("d", "kprobe/kmem_cache_alloc_noprof"),
                   ("e", "kprobe/kmem_cache_alloc"))
    assert groups(spec) == [[["c"], ["a"], ["b"]], [["d"], ["e"]]]


@pytest.fixture(scope="module")
def sid_objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return extract_sid_objects(tmp_path_factory.mktemp("sid"))


# The tool names the function at run time (bpf_program__set_attach_target): its sections' targets
# are placeholders that differ between the fentry and the kprobe programs.
RUN_TIME_TARGETS = {"funclatency"}


def test_the_grouping_is_the_tools_for_all_57_objects(sid_objects: dict[str, Path]) -> None:
    assert len(OBJECTS) == 57
    wrong: list[str] = []
    for tool, facts in OBJECTS.items():
        spec = read_object(sid_objects[tool])
        programs = facts["programs"]
        expected = [c["prefer"] for c in facts.get("choices", []) if c["kind"] == "alternatives"]
        derived = alternatives(spec)
        for choice in derived:
            prefer = next((p for p in expected if set(choice.programs) <= {n for g in p for n in g}), None)
            if prefer is None:
                wrong.append(f"{tool}: {choice.variants} is no choice of the tool")
                continue
            rank = {n: i for i, g in enumerate(prefer) for n in g}
            for i, first in enumerate(choice.variants):
                for later in choice.variants[i + 1:]:
                    a, b = programs[first[0]]["section"], programs[later[0]]["section"]
                    same_target = a.rsplit("/", 1)[1].lstrip("_") == b.rsplit("/", 1)[1].lstrip("_")
                    one_event = _is_event(a) != _is_event(b)
                    if (same_target or one_event) and rank[first[0]] > rank[later[0]]:
                        wrong.append(f"{tool}: {first} before {later}, the tool prefers the other")
        covered = {n for c in derived for n in c.programs}
        for prefer in expected:
            missing = {n for g in prefer for n in g} - covered
            if missing and tool not in RUN_TIME_TARGETS:
                wrong.append(f"{tool}: {sorted(missing)} not grouped")
            if tool in RUN_TIME_TARGETS:
                assert missing, f"{tool} is grouped now: take it out of RUN_TIME_TARGETS"
    assert wrong == []
    with_choices = {t for t, f in OBJECTS.items() if any(c["kind"] == "alternatives" for c in f.get("choices", []))}
    assert len(with_choices) == 26
    assert {t for t in OBJECTS if alternatives(read_object(sid_objects[t]))} == with_choices - RUN_TIME_TARGETS


def _is_event(section: str) -> bool:
    return section.split("/", 1)[0] in ("tp_btf", "raw_tp", "tracepoint", "tp", "raw_tracepoint")


def test_the_first_variant_that_attaches_is_kept() -> None:
    spec = spec_of(("f_in", "fentry/vfs_read"), ("f_out", "fexit/vfs_read"), ("k_in", "kprobe/vfs_read"),
                   ("k_out", "kretprobe/vfs_read"), ("other", "tp_btf/sched_switch"))
    refused = {"f_out": "no trampolines"}
    chosen = choose(spec, lambda p: refused.get(p.name))
    assert [p.name for p in chosen.spec.programs] == ["k_in", "k_out", "other"]
    assert chosen.notes == ("t.o: vfs_read: loads k_in, k_out (of f_in, f_out | k_in, k_out); passed over: "
                            "f_in, f_out: no trampolines",)
    assert [p.name for p in choose(spec, lambda p: None).spec.programs] == ["f_in", "f_out", "other"]


def test_no_variant_that_attaches_is_an_error_with_every_reason() -> None:
    spec = spec_of(("f_in", "fentry/vfs_read"), ("k_in", "kprobe/vfs_read"))
    with pytest.raises(ObjectError) as exc:
        choose(spec, lambda p: f"{p.name} cannot")
    assert exc.value.code == codes.NO_ALTERNATIVE
    assert exc.value.message == ("t.o: no program hooking vfs_read can attach on this kernel: "
                                 "f_in: f_in cannot; k_in: k_in cannot")


def test_an_autoload_term_turns_the_choice_off_for_its_group() -> None:
    spec = spec_of(("f_in", "fentry/vfs_read"), ("k_in", "kprobe/vfs_read"), ("btf", "tp_btf/sched_switch"),
                   ("raw", "raw_tp/sched_switch"))
    chosen = choose(spec, lambda p: None, fixed={"k_in"})
    assert [p.name for p in chosen.spec.programs] == ["f_in", "k_in", "btf"]
    assert chosen.notes[0] == "t.o: f_in | k_in: chosen by prog:NAME.autoload= terms"


def _event(text: str) -> BpfEvent:
    found = next(iter(parse(text).events()))
    assert isinstance(found, BpfEvent)
    return found


def test_autoload_leaves_programs_out_and_turns_question_mark_sections_on() -> None:
    spec = spec_of(("a", "tp_btf/sched_switch"), ("b", "?raw_tp/sched_switch"), ("c", "?tp_btf/sched_wakeup"))
    out, fixed = apply_autoload(_event("./t.o/prog:a.autoload=1,prog:a.autoload=0,prog:b.autoload=1/"), spec)
    assert [(p.name, p.section) for p in out.programs] == [("b", "raw_tp/sched_switch"), ("c", "?tp_btf/sched_wakeup")]
    assert fixed == {"a", "b"}


def test_autoload_of_an_unknown_program_lists_the_programs() -> None:
    text = "./t.o/prog:nope.autoload=0/"
    with pytest.raises(EvspecError) as exc:
        apply_autoload(_event(text), spec_of(("a", "tp_btf/sched_switch"), ("b", "raw_tp/sched_switch")))
    (d,) = exc.value.diagnostics
    assert (d.code, text[d.span.start:d.span.end], d.help) == (
        bpfconfig.NO_SUCH_PROGRAM, "nope", ("programs of the object: a, b",))


@pytest.mark.parametrize("value", ["2", "yes"])
def test_autoload_takes_0_or_1(value: str) -> None:
    from evspec.parser import analyze

    text = f"./t.o/prog:a.autoload={value}/"
    (d,) = analyze(text).diagnostics
    assert (d.code, text[d.span.start:d.span.end]) == (codes.PROG_AUTOLOAD, value)


# ---------------------------------------------------------------------------------------------
# live: this kernel has BTF tracepoints and raw tracepoints, no trampolines and no kprobes


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if " loads " in line or "chosen by" in line]


@pytest.mark.parametrize("tool, terms, loads", [
    ("runqlat", "", ["sched_wakeup, sched_wakeup_new, sched_switch", "handle_sched_wakeup"]),
    ("biolatency", "", ["block_rq_insert_btf, block_rq_issue_btf, block_rq_complete_btf"]),
    ("hardirqs", "", ["irq_handler_entry_btf, irq_handler_exit_btf"]),
    ("cpudist", "map:start.max_entries=4096,map:hists.max_entries=1", ["sched_switch_btf"]),
])
def test_record_loads_the_btf_tracepoints(root_kernel: None, sid_objects: dict[str, Path], tool: str,
                                         terms: str, loads: list[str]) -> None:
    spec = f"{sid_objects[tool]}/{terms}/" if terms else str(sid_objects[tool])
    status, _, err = run_record("-v", "-a", "-e", spec, "--", "true")
    assert status == 0, err
    notes = _notes(err)
    assert notes and all(" loads " in n for n in notes), err
    assert f"loads {loads[0]}" in " ".join(notes) or all(f"loads {n}" in " ".join(notes) for n in loads[0].split(", "))
    assert "raw_tp" not in " ".join(n.split("(of")[0] for n in notes)


def test_autoload_terms_choose_the_raw_tracepoint(root_kernel: None, sid_objects: dict[str, Path]) -> None:
    spec = (f"{sid_objects['cpudist']}/map:start.max_entries=4096,map:hists.max_entries=1,"
            "prog:sched_switch_btf.autoload=0/")
    status, _, err = run_record("-v", "-a", "-e", spec, "--", "true")
    assert status == 0, err
    assert "program 'sched_switch_tp' attached to raw tracepoint sched_switch" in err
    assert "'sched_switch_btf'" not in err


@pytest.mark.parametrize("tool, hook", [("vfsstat", "vfs_read"), ("cachestat", "add_to_page_cache_lru")])
def test_with_neither_trampolines_nor_kprobes_both_reasons_are_given(root_kernel: None, sid_objects: dict[str, Path],
                                                                    tool: str, hook: str) -> None:
    status, _, err = run_record("-a", "-e", str(sid_objects[tool]), "--", "true")
    assert status != 0
    assert f"no program hooking {hook} can attach on this kernel" in err
    assert "BPF trampolines (fentry/fexit/fmod_ret/lsm) are not available" in err
    assert "this kernel has no kprobe support" in err  # the tool's own reason (vfsstat.json)
    assert "BPF_PROG_LOAD" not in err  # refused before anything is loaded


def test_biosnoop_fails_on_the_kprobe_its_tool_fails_on(root_kernel: None, sid_objects: dict[str, Path]) -> None:
    status, _, err = run_record("-a", "-e", str(sid_objects["biosnoop"]), "--", "true")
    assert status != 0
    assert "blk_account_io_merge_bio" in err and "kprobe" in err
    assert "blk_account_io_start" not in err  # the fentry alternative of the block_io_start tracepoint


def test_check_leaves_an_alternative_that_cannot_attach_to_record(sid_objects: dict[str, Path]) -> None:
    """Without kprobe_events, check refuses a kprobe program that has no alternative (biosnoop's
    blk_account_io_merge_bio, as its tool fails) and none of those that have one; a program left
    out with autoload=0 is not checked."""
    from evspec.loader.lint.event import ObjectEnvironment, check_bpf_event

    env = ObjectEnvironment(cwd=Path("/"), tracepoint_exists=lambda s, e: True, kprobe_events=False,
                            uprobe_events=True, core_target=None)

    def refused(text: str) -> list[str]:
        return [d.message for d in check_bpf_event(_event(text), env, {}) if d.code == bpfconfig.NO_PROBE_SUPPORT]

    assert refused(str(sid_objects["vfsstat"])) == []
    assert refused(str(sid_objects["biosnoop"])) == [
        "section 'kprobe/blk_account_io_merge_bio': a kprobe, but this system has no kprobe_events"]
    assert refused(f"{sid_objects['biosnoop']}/prog:blk_account_io_merge_bio.autoload=0/") == []
