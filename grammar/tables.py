"""The committed LALR(1) tables of the grammars, read from the ``evspec.grammar`` package
(``events_tables.json``; ``section_tables.json`` through ``evspec.loader.sections.lalr``).

``evspec.grammar.tablegen`` writes the events file from Lark's analysis of ``events.lark`` (see there
for the format); this module only reads it, so that parsing imports neither Lark nor the grammar
analysis. The file is read through the package's own loader (``get_data``, the resource call
``pkgutil.get_data`` makes), which works wherever ``evspec.grammar`` is imported from;
``importlib.resources`` would add some 20 ms of imports to every cold start. The JSON is decoded
by the C scanner of the standard library's ``_json`` module, which is what ``json.loads`` runs;
importing the ``json`` package itself compiles half a dozen regular expressions (1.5 ms).
"""

from __future__ import annotations

import os

TABLES_FILE = "events_tables.json"

TYPE_CHECKING = False  # imports for annotations only: a cold start does not pay for them
if TYPE_CHECKING:
    Lexer = tuple[tuple[str, ...], dict[str, tuple[str, ...]]]  # terminals in order, literal folds


class LalrTables:
    """The parser's view of the tables: terminals in the scanner's order of preference, rules as
    ``(origin, symbols)``, one action map per state, and the first and accepting state of each
    start symbol. ``lexers`` (optional, with ``state_lexers``: each state's lexer) are Lark's own
    per-state lexers, for a grammar whose literals Lark folds into the patterns that also match
    them: ``(terminals tried in order, {terminal: literal terminals a whole match may become})``,
    lexer 0 the root lexer; without them a state's scanner tries the terminals its actions take."""

    __slots__ = ("terminals", "rules", "states", "start", "end", "lexers", "state_lexers")

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
        self.lexers: tuple[Lexer, ...] | None = None
        self.state_lexers: tuple[int, ...] | None = None
        if "lexers" in data:
            self.lexers = tuple((tuple(names), {kind: tuple(literals) for kind, literals in folds.items()})
                                for names, folds in data["lexers"])  # type: ignore[attr-defined]
            self.state_lexers = tuple(data["state_lexers"])  # type: ignore[call-overload]


def read_tables_text(name: str = TABLES_FILE) -> str:
    """The text of a data file of the ``evspec.grammar`` package."""
    import evspec.grammar as package

    loader = package.__spec__.loader
    path = os.path.join(os.path.dirname(package.__file__), name)
    return loader.get_data(path).decode("utf-8")  # type: ignore[no-any-return, union-attr]


class _JsonOptions:
    """The options ``json.loads`` hands ``_json.make_scanner`` when it is given no hooks."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity


_JSON_BLANKS = " \t\n\r"


def decode_json(text: str) -> object:
    """``json.loads(text)``, by ``_json``'s C scanner where the interpreter has it. Text it does not
    take as one value between white space goes to ``json.loads``, for the same error."""
    try:
        from _json import make_scanner
    except ImportError:  # an interpreter without the C accelerator
        return _json_loads(text)
    start = len(text) - len(text.lstrip(_JSON_BLANKS))
    try:
        value, end = make_scanner(_JsonOptions)(text, start)
    except (StopIteration, ValueError):
        return _json_loads(text)
    return _json_loads(text) if text[end:].strip(_JSON_BLANKS) else value


def _json_loads(text: str) -> object:
    import json

    return json.loads(text)


def load_tables(name: str = TABLES_FILE) -> LalrTables:
    return LalrTables(decode_json(read_tables_text(name)))  # type: ignore[arg-type]
