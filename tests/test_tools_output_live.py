"""Live: the objects Debian sid's libbpf-tools 0.37 embeds, run by ``evspec record -a -e
./TOOL.bpf.o`` alone (no bpf-output event, no map:NAME.event= term), on the scripted workload of
their references (tests/libbpf_tools_workload.py, tests/data/libbpf_tools/TOOL.json).

- The snoopers whose record type the object carries (execsnoop, sigsnoop) print the workload's
  records as fields, and those fields, masked as the references are, are the tool's own rows
  (sigsnoop's: those of sigsnoop and of killsnoop, its -k, together: evspec loads both mechanisms).
- The snoopers whose record type is not in the object print the workload's records as bytes, with
  the workload's pid where the tool's struct puts it, and say once that map:NAME.type= would type
  them.
- evspec's own activity never shows: not its opens (opensnoop reads every task's opens into a ring
  buffer, evspec's reading of which would feed itself), not its execs.

Each recording runs as a process of its own (``python -m evspec record``), started once the
workload has printed its pid, told to go once evspec has said (-v) what it set up, and stopped with
SIGINT once the workload is done, as the references' tools are."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import oracle
from heldout_tools import extract_sid_objects
from libbpf_tools_refs import WORKLOAD, Run, _Drain, _mask_value, _workload_row, read_reference

READY_SECONDS = 60.0  # loading an object on a busy machine of 2 cores
SETTLE_SECONDS = 0.5  # after the workload, for the drain to print what the rings hold
STOP_SECONDS = 30.0


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if os.geteuid() != 0:
        pytest.skip("needs root: loads BPF programs")  # conftest's root_kernel, at module scope
    oracle("sid-run")  # the chroot of scripts/oracles.sh, whose binaries embed the objects: required in CI
    return extract_sid_objects(tmp_path_factory.mktemp("sid-objects"))


@dataclass
class Recording:
    records: list[dict[str, Any]]  # the JSON lines of the records (the summary left out)
    stderr: str
    evspec: set[int]  # the pids of evspec's processes: record and its drain
    run: Run  # the workload's roles, as libbpf_tools_refs masks by them


def _children(pid: int) -> set[int]:
    try:
        return {int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except OSError:
        return set()


def record(obj: Path, steps: tuple[str, ...], terms: str = "", workload_argv: tuple[str, ...] | None = None,
           around: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())) -> Recording:
    """``evspec record --format json -v -a -e OBJ[/TERMS/]`` while the workload runs ``steps``
    (``{pid}`` in TERMS: the workload's pid); ``around``: event strings before and after it."""
    argv = workload_argv or (sys.executable, str(WORKLOAD), *steps)
    workload = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert workload.stdin is not None and workload.stdout is not None
    try:
        ready = json.loads(workload.stdout.readline())
        spec = f"{obj}/{terms.format(pid=ready['pid'])}/" if terms else str(obj)
        strings = [arg for text in (*around[0], spec, *around[1]) for arg in ("-e", text)]
        proc = subprocess.Popen([sys.executable, "-m", "evspec", "record", "--format", "json", "-v", "-a", *strings],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=obj.parent)
        assert proc.stdout is not None and proc.stderr is not None
        out, err = _Drain(proc.stdout.fileno()), _Drain(proc.stderr.fileno())
        out.start()
        err.start()
        deadline = time.monotonic() + READY_SECONDS
        # the session's -v notes are written once everything is attached
        while b"evspec record: " not in err.data and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, err.data.decode()
        evspec = {proc.pid, *_children(proc.pid)}
        workload.stdin.write("go\n")
        workload.stdin.flush()
        done = json.loads(workload.stdout.readline() or "{}")
        time.sleep(SETTLE_SECONDS)
        evspec |= _children(proc.pid)
        proc.send_signal(signal.SIGINT)
        try:
            status = proc.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            status = proc.wait()
        out.join()
        err.join()
    finally:
        workload.stdin.close()
        workload.wait()
    stderr = err.data.decode(errors="replace")
    assert status == 0, stderr
    roles = {os.getpid(): "L", ready["pid"]: "W", proc.pid: "tool"}
    roles.update({pid: f"C{i}" for i, pid in enumerate(done.get("children", []), 1)})
    roles.update({tid: f"T{i}" for i, tid in enumerate(done.get("threads", []), 1)})
    lines = [json.loads(line) for line in out.data.decode().splitlines()]
    records = [r for r in lines if "summary" not in r]
    return Recording(records, stderr, evspec, Run(obj.stem, (), "", "", status, True, roles, ready.get("port", 0)))


# --- typed records: field by field against the tool's own rows ----------------------------------

# reference column -> the field of the tool's struct event that the tool prints in it
TYPED = {
    "execsnoop": ("var:ignore_failed=0", {"PCOMM": "comm", "PID": "pid", "PPID": "ppid", "RET": "retval",
                                          "ARGS": "args"}),
    "sigsnoop": ("var:filtered_pid={pid}", {"PID": "pid", "COMM": "comm", "SIG": "sig", "TPID": "tpid",
                                            "RESULT": "ret"}),
}


def _rows(rec: Recording, columns: Mapping[str, str], masks: Mapping[str, str]) -> Iterator[dict[str, str]]:
    from libbpf_tools_refs import _WLDIR

    for r in rec.records:
        fields = r["fields"]
        row = {}
        for column, field in columns.items():
            value = _WLDIR.sub("<wldir>", str(fields[field]))
            row[column] = _mask_value(masks[column], value, rec.run) if column in masks else value
        if _workload_row(row, {c: k for c, k in masks.items() if c in columns}):
            yield row


@pytest.mark.parametrize("tool", sorted(TYPED))
def test_typed_records_are_the_tools_own_rows(objects: dict[str, Path], tool: str) -> None:
    ref = read_reference(tool)
    terms, columns = TYPED[tool]
    rec = record(objects[tool], tuple(ref["workload"]), terms)
    assert {r["event"] for r in rec.records} == {"events"}, rec.stderr
    assert f"its records are printed as struct event ({'7720' if tool == 'execsnoop' else '48'} bytes), the value " \
           "type of map" in rec.stderr
    assert "map:events.type=TYPE would print them" not in rec.stderr
    got = list(_rows(rec, columns, ref["masks"]))
    want = [{c: row[c] for c in columns} for row in ref["rows"]]
    if tool == "sigsnoop":
        # the tool loads sig_trace alone, or with -k (killsnoop) the kill_* programs alone; evspec
        # loads every program of the object (until prog:NAME.autoload=): the rows of both, in no
        # order (two mechanisms, two paths to the ring)
        want += [{c: row[c] for c in columns} for row in read_reference("killsnoop")["rows"]]
        assert Counter(map(json.dumps, got)) == Counter(map(json.dumps, want)), (got, want)
    else:
        assert got == want


# --- untyped records: bytes, with the workload's pid where the tool's struct has it --------------

# tool -> (terms as its reference's options, the map, offset of a pid of the workload's in the
# record, the role whose pid it is) (offsets: bcc 0.37's libbpf-tools/TOOL.h)
UNTYPED = {
    "opensnoop": ("var:targ_tgid={pid}", "events", 8, "W"),  # struct event { u64 ts; pid_t pid; ...
    "exitsnoop": ("", "events", 16, "C"),  # struct event { u64 start_time, exit_time; u32 pid; ...
    "statsnoop": ("var:target_pid={pid}", "events", 8, "W"),  # struct event { u64 ts_ns; u32 pid; ...
}


@pytest.mark.parametrize("tool", sorted(UNTYPED))
def test_untyped_records_arrive_with_the_workloads_pid_and_one_hint(objects: dict[str, Path], tool: str) -> None:
    ref = read_reference(tool)
    terms, map_name, offset, role = UNTYPED[tool]
    rec = record(objects[tool], tuple(ref["workload"]), terms)
    pids = {pid for pid, r in rec.run.roles.items() if r == role or (role == "C" and r.startswith("C"))}
    raws = [bytes.fromhex(r["raw_hex"]) for r in rec.records if r["event"] == map_name]
    assert raws, rec.stderr
    assert any(int.from_bytes(raw[offset:offset + 4], "little") in pids for raw in raws), rec.stderr
    assert rec.stderr.count(f"map '{map_name}': its records are printed as bytes") == 1
    assert f"map:{map_name}.type=TYPE would print them as fields" in rec.stderr


# --- evspec's own activity ----------------------------------------------------------------------


def test_evspec_never_sees_its_own_opens(objects: dict[str, Path], tmp_path: Path) -> None:
    """opensnoop system-wide, with no filter: every task's opens go into its ring buffer, evspec's
    own reading and printing of them would feed itself. The workload opens a file of a name of its
    own (again and again: on a busy machine a full ring drops records) and is seen; evspec is not."""
    marker = tmp_path / "evspec-own-activity-marker"
    marker.write_text("x")
    script = ("import json, sys, time\n"
              "print(json.dumps({'pid': __import__('os').getpid()}), flush=True)\n"
              "sys.stdin.readline()\n"
              "for _ in range(100):\n"
              f"    open({str(marker)!r}).close()\n"
              "    time.sleep(0.01)\n"
              "print('{}', flush=True)\n"
              "sys.stdin.readline()\n")
    rec = record(objects["opensnoop"], (), workload_argv=(sys.executable, "-c", script))
    raws = [bytes.fromhex(r["raw_hex"]) for r in rec.records if r.get("ringbuf")]
    pids = Counter(int.from_bytes(raw[8:12], "little") for raw in raws)
    workload = next(pid for pid, role in rec.run.roles.items() if role == "W")
    assert any(str(marker).encode() in raw and int.from_bytes(raw[8:12], "little") == workload for raw in raws)
    assert not rec.evspec & set(pids), (rec.evspec, pids.most_common(5))
    assert len(raws) < 20_000  # printing its own activity would have fed itself while the workload ran


def test_evspec_never_sees_its_own_execs(objects: dict[str, Path]) -> None:
    rec = record(objects["execsnoop"], ("exec",), "var:ignore_failed=0")
    pids = {r["fields"]["pid"] for r in rec.records} | {r["fields"]["ppid"] for r in rec.records}
    children = {pid for pid, role in rec.run.roles.items() if role.startswith("C")}
    assert children <= pids, rec.stderr
    assert not rec.evspec & pids


def test_check_and_compile_say_what_record_creates(objects: dict[str, Path]) -> None:
    """The same plan without loading anything: check's note (WB164) and compile's event list."""
    env = {**os.environ, "NO_COLOR": "1"}
    check = subprocess.run([sys.executable, "-m", "evspec", "check", "--system", "live", "-e", "./execsnoop.bpf.o",
                            "-e", "cpu-clock/name=events/,./sigsnoop.bpf.o"], cwd=objects["execsnoop"].parent,
                           capture_output=True, text=True, env=env, timeout=120)
    assert check.returncode == 1, check.stderr
    text = check.stdout + check.stderr
    assert ("note[WB164]: ./execsnoop.bpf.o: map 'events' (perf event array) gets the bpf-output event 'events' "
            "(no-inherit, at every CPU's key) that record creates: program tracepoint__syscalls__sys_exit_execve "
            "sends to it and no term gives it an event; its records are printed as struct event (7720 bytes)") in text
    assert ("error[EB159]: the bpf-output event 'events' that record creates for map 'events' of ./sigsnoop.bpf.o "
            "has the name of the event 'events' defined before the object") in text
    compiled = subprocess.run([sys.executable, "-m", "evspec", "compile", "--format", "json", "-e", "./javagc.bpf.o"],
                              cwd=objects["javagc"].parent, capture_output=True, text=True, env=env, timeout=120)
    assert compiled.returncode == 0, compiled.stderr
    data = json.loads(compiled.stdout)
    assert "perf_map" not in [e["name"] for e in data["events"]]  # perf's evsels: perf has no such event
    [outputs] = [o["outputs"] for o in data["programs"]]
    assert len(outputs) == 1 and "map:perf_map.type=TYPE would print them as fields" in outputs[0]


def test_an_event_a_term_gives_the_array_is_typed_too_unless_shared(objects: dict[str, Path]) -> None:
    """map:events.event=out, no type term: out's samples are typed as the object says, unless out
    also holds another map's records (then bytes, and the notice says why)."""
    out = "bpf-output/no-inherit,name=out/"
    own = record(objects["execsnoop"], ("exec",), "map:events.event=out", around=((out,), ()))
    children = {pid for pid, role in own.run.roles.items() if role.startswith("C")}
    assert {r["event"] for r in own.records} == {"out"}, own.stderr
    assert children & {r["fields"]["pid"] for r in own.records}, own.stderr
    assert "map 'events': its records are printed as struct event (7720 bytes), the value type of map 'execs'" \
        in own.stderr
    shared = record(objects["execsnoop"], ("exec",), "map:events.event=out",
                    around=((out,), (f"{objects['sigsnoop']}/map:events.event=out/",)))
    assert shared.records and all("fields" not in r and "raw_hex" in r for r in shared.records), shared.stderr
    for tool in ("execsnoop", "sigsnoop"):
        assert (f"{objects[tool]}: map 'events': its records are printed as bytes: event out also holds other maps' "
                "records; map:events.type=TYPE would print them as fields") in shared.stderr


def test_a_capture_keeps_the_chosen_type(objects: dict[str, Path], tmp_path: Path) -> None:
    """-o: the automatic event's attr names the type chosen, and script prints the fields again."""
    data = tmp_path / "exec.data"
    evspec = (sys.executable, "-m", "evspec")
    rec = subprocess.run([*evspec, "record", "-o", str(data), "-a", "-e", str(objects["execsnoop"]), "--",
                          "sh", "-c", "/bin/true evspec-capture-marker"], capture_output=True, text=True, timeout=120,
                         cwd=data.parent)  # not the checkout: its evspec/ would shadow the installed one
    assert rec.returncode == 0, rec.stderr
    shown = subprocess.run([*evspec, "script", "-i", str(data)], capture_output=True, text=True, timeout=120,
                           cwd=data.parent)
    assert shown.returncode == 0, shown.stderr
    assert "events: pid=" in shown.stdout and "args=/bin/true evspec-capture-marker (short record: " in shown.stdout
