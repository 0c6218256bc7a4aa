"""The references of what Debian sid's libbpf-tools print here (tests/data/libbpf_tools/TOOL.json,
made by scripts/libbpf_tools_refs.py with tests/libbpf_tools_refs.py): offline, that every tool of
the package has one, that each is whole, masked and agrees with its spec, and that the masking,
parsing and comparing code does what it says; live (root and the sid chroot), that the package's
tools are the specs' and that a few cheap tools print today what their reference says."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import oracle
from heldout_tools import extract_sid_objects, sid_tool_paths, tool_stem
from libbpf_tools_refs import (
    COMPARES,
    DATA,
    KPROBE,
    OUTPUTS,
    SPECS,
    WORKLOAD,
    Run,
    Spec,
    differences,
    read_reference,
    reference,
    run_tool,
)
from libbpf_tools_workload import STEPS

REFS = {tool: read_reference(tool) for tool in SPECS if (DATA / f"{tool}.json").exists()}
KEYS = {"tool", "binary", "object", "package", "args", "workload", "runs", "status", "reason", "output",
        "compare", "note", "stdout", "stderr"}
PARSED = {"records": {"columns", "rows", "masks"}, "table": {"columns", "rows", "masks"},
          "histogram": {"histograms"}, "stacks": {"stacks"}, None: set()}
MASK_TOKENS = {"pid": re.compile(r"<(W|C\d+|T\d+|L|tool|pid)>"), "time": re.compile("<time>"),
               "n": re.compile("<n>"), "addr": re.compile("<addr>"), "ns": re.compile("<ns>"),
               "port": re.compile(r"<port>|<eport>|0"), "comm": re.compile(r"<comm>|evspec-wl|evspecwl-exec|bash|N/A")}
# cheap tools whose masked output holds on any machine of this kind, rerun live
LIVE = ("execsnoop", "killsnoop", "opensnoop", "statsnoop", "syscount", "runqlen", "vfsstat")


def _texts(ref: dict[str, Any]) -> list[str]:
    return [*ref["stdout"], *ref["stderr"], *(json.dumps(r) for r in ref.get("rows", [])),
            *(line for h in ref.get("histograms", []) for line in h["labels"]),
            *(line for s in ref.get("stacks", []) for line in s)]


# --- the committed references --------------------------------------------------------------------


def test_every_tool_of_the_package_has_a_reference() -> None:
    files = {p.stem for p in DATA.glob("*.json") if p.name != "objects.json"}
    assert files == set(SPECS), f"only files {sorted(files - set(SPECS))}, only specs {sorted(set(SPECS) - files)}"
    assert len(SPECS) == 74  # 57 binaries, 17 aliases


@pytest.mark.parametrize("tool", sorted(SPECS))
def test_reference_is_whole_and_agrees_with_its_spec(tool: str) -> None:
    ref, spec = REFS[tool], SPECS[tool]
    assert KEYS | PARSED[ref["output"]] == set(ref), sorted(set(ref) ^ (KEYS | PARSED[ref["output"]]))
    assert (ref["tool"], ref["binary"], ref["object"]) == (tool, f"{tool}-libbpf", spec.object or tool)
    assert (ref["args"], ref["workload"], ref["compare"], ref["note"]) == (
        list(spec.args), list(spec.steps), spec.compare, spec.note), "the spec changed: regenerate the reference"
    if ref["runs"]:
        assert spec.fails is None and ref["reason"] is None and ref["status"] == 0
        assert ref["output"] == spec.output
    else:
        assert spec.fails is not None and ref["output"] is None and ref["status"] != 0 or tool == "llcstat"
        assert ref["reason"], f"{tool} fails without a reason: {ref['stderr']}"
        evidence = "failed to create kprobe" if spec.fails == KPROBE else spec.fails[0]
        assert any(evidence in line for line in ref["stderr"]), ref["stderr"]


@pytest.mark.parametrize("tool", sorted(t for t in SPECS if SPECS[t].output in ("records", "table")))
def test_rows_are_split_by_the_header_and_masked_by_column(tool: str) -> None:
    ref = REFS[tool]
    assert ref["columns"] and ref["columns"][0] == SPECS[tool].header
    assert ref["masks"] == dict(SPECS[tool].masks)
    for row in ref["rows"]:
        assert list(row) == ref["columns"]
        for col, kind in ref["masks"].items():
            assert MASK_TOKENS[kind].fullmatch(row[col]), f"{col}={row[col]!r} is not masked as {kind}"
    if SPECS[tool].rows == "workload":
        assert all(re.search(r"<(W|C\d+|T\d+)>|evspec", json.dumps(row)) for row in ref["rows"])


@pytest.mark.parametrize("tool", sorted(t for t in SPECS if SPECS[t].output == "histogram"))
def test_histograms_have_units_and_slots(tool: str) -> None:
    hists = REFS[tool]["histograms"]
    assert hists and any(b[2] for h in hists for b in h["buckets"]), "the workload makes every histogram count"
    for h in hists:
        lows = [b[0] for b in h["buckets"]]
        if h["slots"] == "log2":
            assert h["buckets"][0][:2] == [0, 1]
            assert all(hi == 2 * lo - 1 for lo, hi, _ in h["buckets"][1:]) and lows[1:] == [2 ** k for k in range(1, len(lows))]
        else:
            assert h["slots"] == "linear" and lows == sorted(lows)


def test_snoopers_saw_the_workload() -> None:
    """The rows the workload's steps make, as the tools print them."""
    rows = {t: REFS[t]["rows"] for t in ("execsnoop", "opensnoop", "statsnoop", "killsnoop", "syncsnoop", "tcplife")}
    assert [(r["PCOMM"], r["PID"], r["RET"], r["ARGS"]) for r in rows["execsnoop"]] == [
        ("evspecwl-exec", "<C1>", "0", "<wldir>/evspecwl-exec --first"),
        ("evspecwl-exec", "<C2>", "0", "<wldir>/evspecwl-exec --second two words"),
        ("evspec-wl", "<C3>", "-2", "/nonexistent/evspec-wl")]
    assert [(r["PATH"], r["ERR"]) for r in rows["opensnoop"]] == [("/etc/hostname", "0"), ("/nonexistent/evspec-wl", "2")]
    assert [(r["PATH"], r["ERR"]) for r in rows["statsnoop"]] == [("/etc/hostname", "0"), ("/nonexistent/evspec-wl", "2")]
    assert [(r["SIG"], r["TPID"], r["RESULT"]) for r in rows["killsnoop"]] == [
        ("0", "<C1>", "0"), ("10", "<C1>", "0"), ("12", "<C1>", "-3")]
    assert [r["CALL"] for r in rows["syncsnoop"]] == ["fsync", "fdatasync", "syncfs", "sync"]
    assert [(r["TX_KB"], r["RX_KB"], r["RPORT"]) for r in rows["tcplife"]] == [("4.00", "2.00", "<port>")]


@pytest.mark.parametrize("tool", sorted(SPECS))
def test_no_pid_time_or_address_is_left(tool: str) -> None:
    for text in _texts(REFS[tool]):
        assert "/tmp/evspec-wl-" not in text
        assert not re.search(r"\b\d{1,2}:\d{2}:\d{2}\b", text), text
        assert not re.search(r"\b(0x)?[0-9a-f]{12,16}\b", text), text


def test_the_numbers_of_the_reference() -> None:
    """What runs here and what does not, by reason (the report of issue 24's groundwork)."""
    running = sorted(t for t, r in REFS.items() if r["runs"])
    kprobe = sorted(t for t, r in REFS.items() if (r["reason"] or "").startswith("kprobe:"))
    assert len(running) == 30 and len(kprobe) == 39
    assert sorted(set(REFS) - set(running) - set(kprobe)) == ["cpufreq", "javagc", "llcstat", "readahead", "zfsslower"]


# --- masking, parsing and comparing ----------------------------------------------------------------


def _run(tool: str, stdout: str, roles: dict[int, str] | None = None, port: int = 0, stderr: str = "") -> Run:
    return Run(tool, (), stdout, stderr, 0, True, roles or {1000: "W", 1001: "C1", 777: "L"}, port)


def test_records_are_masked_by_role_and_other_tasks_dropped() -> None:
    spec = Spec(output="records", header="PCOMM", rows="workload", masks={"PID": "pid", "AGE(s)": "n"})
    out = ("PCOMM  PID   AGE(s) EXIT_CODE\n"
           "perf   4242  0.04   code 129\n"
           "evspec-wl 1001 0.01 signal 15 (Terminated)\n"
           "at /tmp/evspec-wl-ab_12/x 01:02:03\n")
    ref = reference(_run("exitsnoop", out), spec)
    assert ref["rows"] == [{"PCOMM": "evspec-wl", "PID": "<C1>", "AGE(s)": "<n>", "EXIT_CODE": "signal 15 (Terminated)"}]
    assert ref["stdout"] == ["PCOMM  PID   AGE(s) EXIT_CODE", "evspec-wl <C1> <n> signal 15 (Terminated)"]


def test_all_rows_kept_and_ports_told_apart() -> None:
    spec = Spec(output="records", header="PID", masks={"PID": "pid", "LPORT": "port", "RPORT": "port", "MS": "n"})
    ref = reference(_run("tcplife", "PID LPORT RPORT MS\n1000 40000 5555 0.12\n31 5555 0 1\n", port=5555), spec)
    assert ref["rows"] == [{"PID": "<W>", "LPORT": "<eport>", "RPORT": "<port>", "MS": "<n>"},
                           {"PID": "<pid>", "LPORT": "<port>", "RPORT": "0", "MS": "<n>"}]


def test_a_masked_column_must_be_in_the_header() -> None:
    with pytest.raises(ValueError, match=r"\['LAT'\] are not in the header"):
        reference(_run("x", "PID COMM\n1000 a\n"), Spec(output="records", header="PID", masks={"LAT": "n"}))


def test_histograms_are_parsed_with_their_labels() -> None:
    out = ("Tracing... Hit Ctrl-C to end.\n\nProcess Name = evspec-wl[1000]\n"
           "     usecs               : count    distribution\n"
           "         0 -> 1          : 0        |                    |\n"
           "         2 -> 3          : 1000     |********************|\n\n"
           "     runqlen       : count     distribution\n"
           "        0          : 5        |****|\n"
           "        1          : 2        |**  |\n")
    hists = reference(_run("x", out), Spec(output="histogram"))["histograms"]
    assert hists == [
        {"labels": ["Tracing... Hit Ctrl-C to end.", "Process Name = evspec-wl[<W>]"], "unit": "usecs", "slots": "log2",
         "buckets": [[0, 1, 0], [2, 3, 1000]]},
        {"labels": [], "unit": "runqlen", "slots": "linear", "buckets": [[0, 0, 5], [1, 1, 2]]}]


def test_stacks_become_blocks_with_their_frames_made_one() -> None:
    spec = Spec(output="stacks", lines=((r"^(\s+)\d+$", r"\1<n>"),), frame=r"^    (?!-  )\S")
    out = "Tracing...\n    schedule\n    do_nanosleep\n    -                evspec-wl (1000)\n        1000\n\n"
    ref = reference(_run("x", out), spec)
    assert ref["stacks"] == [["Tracing...", "<frames>", "    -                evspec-wl (<W>)", "        <n>"]]


def test_the_reason_of_a_kprobe_tool_names_its_program_and_function() -> None:
    err = "libbpf: prog 'vfs_read_entry': failed to create kprobe 'vfs_read+0x0' perf event: -ENOENT\n"
    ref = reference(Run("filetop", (), "", err, 1, False, {}, 0), Spec(fails=KPROBE))
    assert ref["reason"] == ("kprobe: program vfs_read_entry cannot attach to vfs_read: this kernel has no kprobes "
                             "(no kprobe PMU, no kprobe_events in tracefs)")
    assert reference(Run("x", (), "", "something else\n", 1, False, {}, 0), Spec(fails=KPROBE))["reason"] is None


@pytest.mark.parametrize("compare", COMPARES)
def test_differences_at_each_depth(compare: str) -> None:
    spec = Spec(output="records", header="PID", masks={"PID": "pid"}, compare=compare)
    ref = reference(_run("x", "PID PATH\n1000 /a\n1000 /a\n1000 /b\n"), spec)
    assert differences(ref, ref) == []
    twice_b = reference(_run("x", "PID PATH\n1000 /a\n1000 /b\n1000 /b\n"), spec)
    other = reference(_run("x", "PID PATH\n1000 /c\n"), spec)
    empty = reference(_run("x", "PID PATH\n"), spec)
    assert bool(differences(ref, twice_b)) == (compare == "exact")
    assert bool(differences(ref, other)) == (compare != "shape")
    assert differences(ref, empty)
    assert differences(ref, reference(Run("x", (), "", "", 1, False, {}, 0), spec)) == [
        "runs: reference True, now False", "output: reference 'records', now None"]


def test_specs_name_known_steps_outputs_and_placeholders() -> None:
    for tool, spec in SPECS.items():
        assert set(spec.steps) <= set(STEPS), tool
        assert (spec.output is None) == (spec.fails is not None), tool
        assert spec.output in (*OUTPUTS, None) and spec.compare in COMPARES, tool
        assert (spec.header is not None) == (spec.output in ("records", "table")), tool
        assert all(set(re.findall(r"{(\w*)}", a)) <= {"pid", "port"} for a in spec.args), tool


def test_the_workload_refuses_an_unknown_step() -> None:
    proc = subprocess.run([sys.executable, str(WORKLOAD), "open", "fly"], capture_output=True, text=True, input="")
    assert proc.returncode == 2
    assert proc.stderr.startswith("unknown step(s) fly; the steps are exec, exit,")


# --- live ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sid(root_kernel: None, tracefs: Path) -> None:
    oracle("sid-run")  # the chroot of scripts/oracles.sh: required in CI


def test_the_package_has_the_tools_of_the_specs(sid: None, tmp_path: Path) -> None:
    assert {tool_stem(p) for p in sid_tool_paths()} == set(SPECS)
    objects = extract_sid_objects(tmp_path)
    assert len(objects) == 57
    assert {s.object or t for t, s in SPECS.items()} <= set(objects)


@pytest.mark.parametrize("tool", LIVE)
def test_the_tool_prints_what_its_reference_says(sid: None, tool: str) -> None:
    problems = differences(REFS[tool], reference(run_tool(tool)))
    assert not problems, "\n".join(problems)
