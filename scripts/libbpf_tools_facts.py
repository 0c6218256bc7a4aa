"""Refreshes libbpf's view in tests/data/libbpf_tools/objects.json (programs, maps, globals, what
libbpf sizes, whether each output's record is in the BTF) from the objects sid's libbpf-tools 0.37
embed, keeps the facts kept by hand, and checks the two agree (tests/libbpf_tools_facts.py says
how). Needs the sid chroot of scripts/oracles.sh (clang 21 and libbpf-dev there); not root.

Usage: python scripts/libbpf_tools_facts.py [--check]   (--check: write nothing, exit 1 on a difference)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from conftest import oracle  # noqa: E402
from heldout_tools import extract_sid_objects  # noqa: E402
from libbpf_tools_facts import (  # noqa: E402
    OBJECTS,
    build_objfacts,
    derive,
    merge,
    problems,
    read_objects,
    run_objfacts,
    write_objects,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file is not current")
    args = parser.parse_args()
    kept = read_objects()
    with tempfile.TemporaryDirectory(prefix="evspec-facts-", dir="/tmp") as tmp:
        objects = extract_sid_objects(Path(tmp) / "objects")
        raw = run_objfacts(oracle("sid-run"), build_objfacts(oracle("clang-21"), Path(tmp)), objects)
    missing = sorted(set(raw) ^ set(kept))
    if missing:
        print(f"objects and {OBJECTS.name} differ: {missing}", file=sys.stderr)
        return 1
    fresh = {stem: merge(kept[stem], derive(raw[stem], kept[stem]["outputs"])) for stem in raw}
    found = problems(fresh)
    for line in found:
        print(line, file=sys.stderr)
    programs = sum(len(e["programs"]) for e in fresh.values())
    print(f"{len(fresh)} objects, {programs} programs; {len(found)} problem(s)")
    if args.check:
        return 1 if found or fresh != kept else 0
    write_objects(fresh)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
