#!/usr/bin/env python3
"""Regenerate grammar/section_tables.json from grammar/section.lark (run after editing the grammar).

Usage: python scripts/gen_section_tables.py [--check]
  --check   write nothing; exit 1 if the committed tables are out of date with the grammar.
Needs lark (parsing section names does not).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
GRAMMAR = REPO / "grammar" / "section.lark"
TABLES = REPO / "grammar" / "section_tables.json"


def _generator() -> ModuleType:
    """The repository's generator module (it imports nothing of evspec), not an installed one."""
    spec = importlib.util.spec_from_file_location("section_tablegen", REPO / "loader" / "object" / "section_tablegen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only check that the committed file is current")
    args = ap.parse_args()
    text = _generator().generate(GRAMMAR.read_text(encoding="utf-8"))
    current = TABLES.read_text(encoding="utf-8") if TABLES.exists() else None
    if args.check:
        if text != current:
            print(f"{TABLES.relative_to(REPO)} is out of date: run python scripts/gen_section_tables.py",
                  file=sys.stderr)
            return 1
        return 0
    if text != current:
        TABLES.write_text(text, encoding="utf-8")
        print(f"wrote {TABLES.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
