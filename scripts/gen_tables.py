#!/usr/bin/env python3
"""Regenerate the grammars' parse tables (run after editing a grammar):
grammar/events_tables.json from grammar/events.lark, grammar/section_tables.json from
grammar/section.lark.

Usage: python scripts/gen_tables.py [--check]
  --check   write nothing; exit 1 if a committed file is out of date with its grammar.
Needs lark (the parsers themselves do not).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evspec.parser import tablegen as events_tablegen  # noqa: E402 - the repository's package, not an installed one


def _section_generator() -> Callable[[str], str]:
    """The repository's loader/sections/tablegen.py (loader/ is installed as evspec.loader,
    so it is loaded by path; it imports nothing of the loader)."""
    spec = importlib.util.spec_from_file_location("section_tablegen", REPO / "loader" / "sections" / "tablegen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate  # type: ignore[no-any-return]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only check that the committed files are current")
    args = ap.parse_args()
    status = 0
    for grammar, tables, generate in (("events.lark", "events_tables.json", events_tablegen.generate),
                                      ("section.lark", "section_tables.json", _section_generator())):
        path = REPO / "grammar" / tables
        text = generate((REPO / "grammar" / grammar).read_text(encoding="utf-8"))
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if text == current:
            continue
        if args.check:
            print(f"{path.relative_to(REPO)} is out of date: run python scripts/gen_tables.py", file=sys.stderr)
            status = 1
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(REPO)}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
