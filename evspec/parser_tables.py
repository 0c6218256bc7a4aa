"""The committed LALR(1) tables of the event grammar, read from ``evspec.grammar/events_tables.json``.

``evspec.parser_tablegen`` writes the file from Lark's analysis of ``events.lark`` (see there for
the format); this module only reads it, so that parsing imports neither Lark nor the grammar
analysis. The file is read through the package's own loader (``get_data``, the resource call
``pkgutil.get_data`` makes), which works wherever ``evspec.grammar`` is imported from;
``importlib.resources`` would add some 20 ms of imports to every cold start.
"""

from __future__ import annotations

import json
import os

TABLES_FILE = "events_tables.json"


class LalrTables:
    """The parser's view of the tables: terminals in the scanner's order of preference, rules as
    ``(origin, symbols)``, one action map per state, and the first and accepting state of each
    start symbol."""

    __slots__ = ("terminals", "rules", "states", "start", "end")

    def __init__(self, data: dict[str, object]) -> None:
        self.terminals: tuple[tuple[str, str], ...] = tuple(
            (name, regex) for name, regex in data["terminals"]  # type: ignore[attr-defined]
        )
        self.rules: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
            (origin, tuple(symbols)) for origin, symbols in data["rules"]  # type: ignore[attr-defined]
        )
        self.states: tuple[dict[str, int], ...] = tuple(data["states"])  # type: ignore[call-overload]
        self.start: dict[str, int] = dict(data["start"])  # type: ignore[call-overload]
        self.end: dict[str, int] = dict(data["end"])  # type: ignore[call-overload]


def read_tables_text(name: str = TABLES_FILE) -> str:
    """The text of a data file of the ``evspec.grammar`` package."""
    import evspec.grammar as package

    loader = package.__spec__.loader
    path = os.path.join(os.path.dirname(package.__file__), name)
    return loader.get_data(path).decode("utf-8")  # type: ignore[no-any-return, union-attr]


def load_tables(name: str = TABLES_FILE) -> LalrTables:
    return LalrTables(json.loads(read_tables_text(name)))
