"""Regenerates tests/data/libbpf_tools/TOOL.json: what each tool of Debian sid's libbpf-tools 0.37
prints on this machine with its scripted workload, masked (tests/libbpf_tools_refs.py says how).
Needs root and the sid chroot of scripts/oracles.sh. Prints one line per tool: runs or not, why
not, and how much it printed; a tool whose failure is not the one its spec expects is an error.

Usage: sudo python scripts/libbpf_tools_refs.py [--out DIR] [TOOL...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from heldout_tools import SID_SBIN, SID_SUFFIX, sid_tool_paths, tool_stem  # noqa: E402
from libbpf_tools_refs import DATA, SPECS, reference, run_tool, write_reference  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DATA, help=f"where the references go (default {DATA})")
    parser.add_argument("tools", nargs="*", help="only these tools (default: every tool of the package)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("needs root: the tools load BPF programs")
    if not SID_SBIN.is_dir():
        parser.error(f"{SID_SBIN} is missing: run scripts/oracles.sh first")
    names = sorted(tool_stem(p) for p in SID_SBIN.glob(f"*{SID_SUFFIX}"))
    if set(names) != set(SPECS):
        parser.error(f"the package's tools and SPECS differ: only installed {sorted(set(names) - set(SPECS))}, "
                     f"only in SPECS {sorted(set(SPECS) - set(names))}")
    unknown = set(args.tools) - set(names)
    if unknown:
        parser.error(f"unknown tool(s): {', '.join(sorted(unknown))}")
    args.out.mkdir(parents=True, exist_ok=True)
    failures = 0
    started = time.monotonic()
    for tool in args.tools or [tool_stem(p) for p in sid_tool_paths()]:
        t0 = time.monotonic()
        ref = reference(run_tool(tool))
        write_reference(ref, args.out)
        took = time.monotonic() - t0
        if ref["runs"] and SPECS[tool].fails is not None:
            failures += 1
            print(f"{tool:16} UNEXPECTED: runs, where its spec expects it to fail")
        elif ref["runs"]:
            print(f"{tool:16} runs      {ref['output']}: {len(ref['stdout'])} line(s)  [{took:.1f} s]")
        elif ref["reason"] is None:
            failures += 1
            print(f"{tool:16} UNEXPECTED: stopped with {ref['status']}: {' | '.join(ref['stderr'][-3:])}")
        else:
            print(f"{tool:16} fails     {ref['reason']}  [{took:.1f} s]")
    print(f"{time.monotonic() - started:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
