"""``evspec explain CODE``: the catalogue entry of a diagnostic code as a plain-text page."""

from __future__ import annotations

import difflib
import textwrap

from evspec import codes

_INDENT = "    "


def _close_matches(code: str, known: list[str]) -> list[str]:
    return difflib.get_close_matches(code.upper(), known, n=5, cutoff=0.6)


def explain(code: str) -> str:
    """The page for ``code`` (case-insensitive): title, explanation, example and fix (no final newline).

    Raises ``KeyError`` whose first argument is a readable message naming close matches.
    """
    info = codes.lookup(code)
    if info is None:
        matches = _close_matches(code, sorted(codes.catalogue()))
        hint = f"; did you mean {', '.join(matches)}?" if matches else "; 'evspec explain' lists all codes"
        raise KeyError(f"unknown diagnostic code '{code}'{hint}")

    heading = f"{info.code}: {info.title}"
    parts = [f"{heading}\n{'=' * len(heading)}", info.explanation.strip()]
    if info.example:
        parts.append(f"Example:\n{_INDENT}{info.example}")
    if info.fix:
        parts.append(f"Fix:\n{textwrap.indent(info.fix.strip(), _INDENT)}")
    return "\n\n".join(part for part in parts if part)


def list_codes() -> str:
    """Every code in the catalogue with its title, one per line sorted by code (no final newline)."""
    catalogue = codes.catalogue()
    width = max((len(c) for c in catalogue), default=0)
    return "\n".join(f"{c.ljust(width)}  {catalogue[c].title}" for c in sorted(catalogue))
