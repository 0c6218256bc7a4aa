#!/usr/bin/env python3
"""Regenerate the grammars' parse tables (run after editing a grammar):
grammar/events_tables.json from grammar/events.lark (grammar/tablegen.py), grammar/section_tables.json
from grammar/section.lark (loader/sections/tablegen.py). Both generators are this repository's,
loaded by path (grammar/ and loader/ are installed as evspec.grammar and evspec.loader).

Usage: python scripts/gen_tables.py [--check]
  --check   write nothing; exit 1 if a committed file is out of date with its grammar.
Needs lark (the parsers themselves do not).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path) -> ModuleType:
    """The repository's module at ``path``, imported as ``name`` (so that what imports ``name``
    gets it, not an installed copy)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only check that the committed files are current")
    args = ap.parse_args()
    events = _load("evspec.grammar.tablegen", REPO / "grammar" / "tablegen.py")
    sections = _load("evspec.loader.sections.tablegen", REPO / "loader" / "sections" / "tablegen.py")
    status = 0
    for grammar, tables, generate in (("events.lark", "events_tables.json", events.generate),
                                      ("section.lark", "section_tables.json", sections.generate)):
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
