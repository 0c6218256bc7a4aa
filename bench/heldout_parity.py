"""Parity of `evspec verify` with libbpf 1.1 on held-out real-world objects: the CO-RE objects
embedded in Debian's libbpf-tools (bcc's tools, built against another kernel's vmlinux.h),
extracted from /usr/sbin as tests/heldout_tools.py does.

Per program, libbpf's verdict (tests/data/heldout/load_one.c: each program loaded on its own, one
bpf_object per program) against evspec verify's, compared as tests/libbpf_parity.py compares them
(loaded or not, instruction counts, the kernel's errno). Prints: objects and programs loaded by
libbpf and by evspec, the mismatches, and per section kind how many programs load under each.
--all also prints every program's row. Needs root, cc and libbpf-dev.
Usage: sudo python bench/heldout_parity.py [--all]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

from _common import REPO

sys.path.insert(0, str(REPO / "tests"))

from heldout_tools import extract_objects  # noqa: E402
from libbpf_parity import build_runner, compare, evspec_verdicts, libbpf_verdicts, summarize, table  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="print every program's row, not only mismatches")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evspec-heldout-") as tmp:
        root = Path(tmp)
        objects = extract_objects(root / "objects")
        rows = compare(libbpf_verdicts(build_runner(root), objects), evspec_verdicts(objects))
    s = summarize(rows)
    print(f"objects: {s.objects}; every program loaded: libbpf {s.objects_libbpf}, evspec {s.objects_evspec}")
    print(f"programs: {s.programs}; loaded: libbpf {s.programs_libbpf}, evspec {s.programs_evspec}; "
          f"mismatches: {s.mismatches}")
    kinds: Counter[tuple[str, str, str]] = Counter()
    for r in rows:
        kind = r.section.split("/", 1)[0]
        lib = "loaded" if r.libbpf and r.libbpf["loaded"] else (r.libbpf or {}).get("errno") or "refused"
        ev = "loaded" if r.evspec and r.evspec["loaded"] else (r.evspec or {}).get("errno") or "refused"
        kinds[(kind, lib, ev)] += 1
    print(f"\n{'section kind':14} {'libbpf':10} {'evspec':10} programs")
    for (kind, lib, ev), n in sorted(kinds.items()):
        print(f"{kind:14} {lib:10} {ev:10} {n}")
    shown = rows if args.all else [r for r in rows if r.problem is not None]
    if shown:
        print(f"\n{table(shown)}")
    return 1 if s.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
