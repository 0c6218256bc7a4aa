"""What a perf release does at run time with an event on this machine: ``perf record`` and
``perf stat``, per task and with ``-a``; its exit status, the lines it says about the events, and
for a recording the events the data file holds (``perf evlist``).

tests/test_perf_runtime.py compares evspec's run-time findings (WM001 and its siblings) with what
was seen here, kept in tests/data/perf_runtime/ with a snapshot of the machine; ``EVSPEC_BLESS=1``
records it again.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

#: the events observed: hardware, cache and raw events on a machine without a hardware PMU,
#: groups of them, a system-wide PMU (msr), and a software control
EVENTS = (
    "cpu-clock", "cycles", "cpu-cycles", "cycles:u", "cycles/period=100000/", "instructions", "instructions:u",
    "cache-misses", "branches", "r1a", "L1-dcache-loads", "{cycles,instructions}", "{cpu-clock,cycles}",
    "{cycles,cpu-clock}", "cpu-clock,instructions", "cpu-clock,cycles", "msr/tsc/", "cpu-clock,msr/tsc/",
)
MODES = (("record", False), ("record", True), ("stat", False), ("stat", True))

#: perf's lines about events, what the comparison keeps of its output
_SAID = re.compile(
    r"(The \S+ event is not supported\.|Failure to open event '[^']+'.*|Failure to open any events.*|"
    r"No supported events found\.|Invalid event \(\S+\) in per-thread mode.*|"
    r"The sys_perf_event_open\(\) syscall (returned with|failed for event).*|<not supported>\s+\S+|"
    r"trying to fall back to \S+)"
)


def observe(perf: str, tool: str, system_wide: bool, event: str) -> dict[str, object]:
    """Run ``perf TOOL [-a] -v -e EVENT -- true`` and keep what it says about the events."""
    with tempfile.TemporaryDirectory(prefix="evspec-perf-runtime-") as tmp:
        data = Path(tmp) / "perf.data"
        argv = [perf, tool, *(["-o", str(data)] if tool == "record" else []), *(["-a"] if system_wide else []),
                "-v", "-e", event, "--", "true"]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp)
        said = sorted({m.group(0).strip() for m in _SAID.finditer(proc.stdout + proc.stderr)})
        said = [re.sub(r"\s+", " ", line) for line in said]
        recorded: list[str] | None = None
        if tool == "record" and proc.returncode == 0 and data.exists():
            listed = subprocess.run([perf, "evlist", "-i", str(data)], capture_output=True, text=True, timeout=60,
                                    cwd=tmp)
            if listed.returncode == 0:
                recorded = [line.strip() for line in listed.stdout.splitlines()
                            if line.strip() and not line.startswith("#") and "dummy" not in line]
            else:  # perf 7.2 writes a file it cannot read back after dropping a group member
                said.append(f"perf evlist: {(listed.stderr + listed.stdout).strip().splitlines()[0]}")
    return {"status": proc.returncode, "said": said, "recorded": recorded}


def observe_all(perf: str) -> dict[str, dict[str, object]]:
    """Every event of ``EVENTS`` in every mode of ``MODES``, keyed ``TOOL[ -a] EVENT``."""
    return {key(tool, system_wide, event): observe(perf, tool, system_wide, event)
            for tool, system_wide in MODES for event in EVENTS}


def key(tool: str, system_wide: bool, event: str) -> str:
    return f"{tool}{' -a' if system_wide else ''} {event}"
