"""Runs every object of Debian sid's libbpf-tools 0.37 with `evspec record` from an event string
alone, on the scripted workload of its tool's reference (tests/data/libbpf_tools/TOOL.json), and
writes docs/libbpf-tools.md: per tool, the event string and what evspec printed on this machine
(records, histograms, tables) or why it could not run. Needs root and the sid chroot of
scripts/oracles.sh.

Usage: sudo python scripts/libbpf_tools_table.py [--out FILE] [TOOL...]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from heldout_tools import extract_sid_objects  # noqa: E402

DATA = REPO / "tests" / "data" / "libbpf_tools"
WORKLOAD = REPO / "tests" / "libbpf_tools_workload.py"
TICK = "cpu-clock/freq=99,name=tick/"
# terms (and events before the object) beyond the map sizes: what the tools' user space does
EXTRA: dict[str, tuple[str, tuple[str, ...]]] = {
    "runqlat": ("map:hists.unit=usecs", ()),
    "biolatency": ("map:hists.unit=usecs", ()),
    "bitesize": ("map:hists.unit=Kbytes", ()),
    "runqlen": ("prog:do_sample.event=tick,map:hists.hist=linear,map:hists.unit=runqlen", (TICK,)),
    "profile": ("prog:do_perf_event.event=tick", (TICK,)),
    "cpufreq": ("prog:do_sample.event=tick", (TICK,)),
    "syncsnoop": ("prog:tracepoint__syscalls__sys_enter_sync_file_range2.autoload=0,"
                  "prog:tracepoint__syscalls__sys_enter_arm_sync_file_range.autoload=0", ()),
    "softirqs": ("map:counts.column[0]=SOFTIRQ,map:counts.column[1]=none,map:counts.column[2]=TOTAL_usecs", ()),
    "hardirqs": ("map:infos.column[0]=HARDIRQ,map:infos.column[1]=none,map:infos.column[2]=TOTAL_count,"
                 "map:infos.column[3]=TOTAL_usecs,map:infos.column[4]=MAX_usecs", ()),
    "syscount": ("map:data.column[0]=SYSCALL,map:data.column[1]=COUNT,map:data.column[2]=none,"
                 "map:data.column[3]=none", ()),
}
READY_SECONDS = 60
SETTLE_SECONDS = 0.5


def sizes(facts: dict[str, object]) -> list[str]:
    """The setters that give the maps what the tool's user space gives them."""
    out = []
    for name in facts["sized_by_user_space"]:  # type: ignore[attr-defined]
        m = facts["maps"][name]  # type: ignore[index]
        if m["type"] == "stack_trace":
            out += [f"map:{name}.value_size=1016", f"map:{name}.max_entries=1024"]
        elif m["max_entries"] == 0:
            out.append(f"map:{name}.max_entries=4096")
    return out


def event_strings(tool: str, facts: dict[str, object]) -> list[str]:
    extra, before = EXTRA.get(tool, ("", ()))
    terms = ",".join([*sizes(facts), *([extra] if extra else [])])
    obj = f"./{tool}.bpf.o"
    return [*before, f"{obj}/{terms}/" if terms else obj]


def run(tool: str, strings: list[str], steps: list[str], cwd: Path) -> dict[str, object]:
    workload = subprocess.Popen([sys.executable, str(WORKLOAD), *steps], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, cwd=cwd)
    assert workload.stdin is not None and workload.stdout is not None
    err_path = cwd / f"{tool}.err"
    out_path = cwd / f"{tool}.out"
    try:
        json.loads(workload.stdout.readline())
        argv = [sys.executable, "-m", "evspec", "record", "--format", "json", "-v", "-a",
                *(a for s in strings for a in ("-e", s))]
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.Popen(argv, stdout=out, stderr=err, cwd=cwd)
            deadline = time.monotonic() + READY_SECONDS
            while (b"evspec record: " not in err_path.read_bytes() and proc.poll() is None
                   and time.monotonic() < deadline):
                time.sleep(0.05)
            if proc.poll() is None:
                workload.stdin.write("go\n")
                workload.stdin.flush()
                workload.stdout.readline()
                time.sleep(SETTLE_SECONDS)
                proc.send_signal(signal.SIGINT)
            try:
                status = proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                status = proc.wait()
    finally:
        workload.stdin.close()
        workload.wait()
    lines = [json.loads(x) for x in out_path.read_text().splitlines() if x.startswith("{")]
    stderr = err_path.read_text(errors="replace")
    errors = [x for x in stderr.splitlines() if x.startswith(("error", "evspec record: error"))]
    return {
        "status": status,
        "records": sum(1 for x in lines if "event" in x),
        "histograms": sorted({x["histogram"] for x in lines if "histogram" in x}),
        "tables": sorted({x["table"] for x in lines if "table" in x}),
        "error": errors[0] if errors else "",
    }


def outcome(result: dict[str, object], folder: Path) -> str:
    if result["status"] != 0:
        why = str(result["error"]).replace(f"{folder}/", "./").replace("|", "/")
        why = why.removeprefix("evspec record: ")
        return f"fails: {why[:240]}{'…' if len(why) > 240 else ''}"
    said = []
    if result["records"]:
        said.append(f"{result['records']} records")
    if result["histograms"]:
        said.append("histogram " + ", ".join(f"`{h}`" for h in result["histograms"]))  # type: ignore[attr-defined]
    if result["tables"]:
        said.append("table " + ", ".join(f"`{t}`" for t in result["tables"]))  # type: ignore[attr-defined]
    return "; ".join(said) if said else "runs; printed nothing for this workload"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "libbpf-tools.md")
    parser.add_argument("tools", nargs="*")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("needs root: record loads BPF programs")
    objects = json.loads((DATA / "objects.json").read_text())
    rows = []
    with tempfile.TemporaryDirectory(prefix="evspec-tools-") as tmp:
        folder = Path(tmp)
        extract_sid_objects(folder)
        for tool in sorted(args.tools or objects):
            facts = objects[tool]
            ref = json.loads((DATA / f"{tool}.json").read_text())
            strings = event_strings(tool, facts)
            result = run(tool, strings, ref["workload"], folder)
            said = outcome(result, folder)
            tool_runs = "runs" if ref["runs"] else f"fails: {ref['reason']}"
            print(f"{tool:14} {said}", flush=True)
            rows.append(f"| {tool} | `{' '.join(f'-e {s}' for s in strings)}` | {said} | {tool_runs} |")
    args.out.write_text(
        "# libbpf-tools from the event string\n\n"
        "Each object of Debian sid's libbpf-tools 0.37 run with `evspec record -a` and nothing but "
        "event strings, on the scripted workload of the tool's reference run "
        "(`tests/data/libbpf_tools/TOOL.json`), on a machine with tracepoints, raw and BTF "
        "tracepoints and uprobes, and no kprobes, BPF trampolines or hardware PMU. The last column "
        "is what the tool's own binary does on the same machine. Written by "
        "`scripts/libbpf_tools_table.py` (as root); the terms beyond the map sizes are explained in "
        "[language.md](language.md#histograms-and-tables).\n\n"
        "| tool | event strings | evspec record here | the tool here |\n|---|---|---|---|\n"
        + "\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
