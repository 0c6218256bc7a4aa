#!/usr/bin/env python3
"""Regenerate grammar/events_tables.json from grammar/events.lark (run after editing the grammar).

Usage: python scripts/gen_tables.py [--check]
  --check   write nothing; exit 1 if the committed tables are out of date with the grammar.
Needs lark (the parser itself does not).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evspec.parser.tablegen import generate  # noqa: E402 - the repository's package, not an installed one

GRAMMAR = REPO / "grammar" / "events.lark"
TABLES = REPO / "grammar" / "events_tables.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only check that the committed file is current")
    args = ap.parse_args()
    text = generate(GRAMMAR.read_text(encoding="utf-8"))
    current = TABLES.read_text(encoding="utf-8") if TABLES.exists() else None
    if args.check:
        if text != current:
            print(f"{TABLES.relative_to(REPO)} is out of date: run python scripts/gen_tables.py", file=sys.stderr)
            return 1
        return 0
    if text != current:
        TABLES.write_text(text, encoding="utf-8")
        print(f"wrote {TABLES.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
