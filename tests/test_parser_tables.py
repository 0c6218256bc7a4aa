"""The committed LALR tables (grammar/events_tables.json) and the driver that runs them.

The tables must be exactly what the generator makes from the grammar today (regenerate with
``python scripts/gen_tables.py``), in any hash seed; the driver must behave like Lark's LALR parser
with the contextual lexer, which a small grammar with every tree-shaping rule checks directly.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from evspec.grammar.lalr import LalrMachine, SyntaxStop, Tok
from evspec.grammar.tablegen import build_tables, generate, render_tables
from evspec.grammar.tables import TABLES_FILE, LalrTables, load_tables, read_tables_text

from evspec.parser import grammar_text

STALE = "grammar/events_tables.json is out of date with grammar/events.lark: run python scripts/gen_tables.py"


def test_committed_tables_match_the_grammar() -> None:
    committed = read_tables_text()
    assert json.loads(committed)["grammar_sha256"] == hashlib.sha256(grammar_text().encode()).hexdigest(), STALE
    assert committed == generate(grammar_text()), STALE


@pytest.mark.parametrize("seed", ["1", "2"])
def test_generation_does_not_depend_on_the_hash_seed(seed: str, tmp_path: object) -> None:
    code = ("import sys; from evspec.parser import grammar_text; from evspec.grammar.tablegen import generate; "
            "sys.stdout.write(generate(grammar_text()))")
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tmp_path), check=True,
                         capture_output=True, text=True).stdout
    assert out == read_tables_text()


def test_tables_are_consistent() -> None:
    tables = load_tables(TABLES_FILE)
    names = [name for name, _ in tables.terminals]
    assert len(names) == len(set(names))
    nonterminals = {origin for origin, _ in tables.rules}
    for actions in tables.states:
        for symbol, code in actions.items():
            assert symbol in names or symbol in nonterminals or symbol == "$END", symbol
            if code >= 0:
                assert code < len(tables.states)
            else:
                assert ~code < len(tables.rules)
                assert symbol in names or symbol == "$END"  # only a lookahead terminal reduces
    for start in ("events", "term_list"):
        assert tables.start[start] != tables.end[start]


# --------------------------------------------------------------------------------------------
# the driver over a small grammar: inlined rules, dropped tokens, contextual terminals

TOY = r"""
events: _LEAD? _items
term_list: item
_items: item (COMMA item)*
item: KEY
    | KEY EQ VALUE
    | _pair
_pair: KEY COLON KEY
KEY: /[a-z]+/
VALUE: /[a-z0-9]+/
EQ: "="
COLON: ":"
COMMA: ","
_LEAD: /[ ]+/
"""


def _show(value: object) -> object:
    return f"{value.type}:{value}@{value.start_pos}" if isinstance(value, Tok) else value


class ToyBuilder:
    def events(self, children: list[object]) -> tuple[object, ...]:
        return ("events", *map(_show, children))

    def term_list(self, children: list[object]) -> tuple[object, ...]:
        return ("term_list", *map(_show, children))

    def item(self, children: list[object]) -> tuple[object, ...]:
        return tuple(map(_show, children))

    def transform(self, tree: Any) -> object:
        """A Lark parse tree through the same methods, as a Lark Transformer would."""
        children = [self.transform(c) if hasattr(c, "children") else Tok(c.type, str(c), c.start_pos, c.end_pos)
                    for c in tree.children]
        return getattr(self, str(tree.data))(children)


def _toy() -> LalrMachine:
    return LalrMachine(LalrTables(json.loads(render_tables(build_tables(TOY)))), ToyBuilder())


@pytest.mark.parametrize(("text", "start"), [
    ("  a,b=c1,d:e", "events"), ("a", "events"), ("k=1x", "term_list"), ("a:b", "term_list"),
    ("a,=", "events"), ("a=", "events"), ("a?", "events"), ("1x", "events"), ("a,b", "term_list"), ("", "events"),
])
def test_driver_agrees_with_lark(text: str, start: str) -> None:
    from lark import Lark
    from lark.exceptions import UnexpectedInput

    lark = Lark(TOY, parser="lalr", lexer="contextual", start=["events", "term_list"])
    try:
        expected = ToyBuilder().transform(lark.parse(text, start=start))
    except UnexpectedInput:
        expected = "reject"
    try:
        got = _toy().parse(text, start)
    except SyntaxStop:
        got = "reject"
    assert got == expected


def test_driver_builds_like_a_lark_transformer() -> None:
    machine = _toy()
    # _LEAD is dropped, _items and _pair are spliced into their parents, COMMA stays
    assert machine.parse("  a,b=c1,d:e", "events") == (
        "events", ("KEY:a@2",), "COMMA:,@3", ("KEY:b@4", "EQ:=@5", "VALUE:c1@6"),
        "COMMA:,@8", ("KEY:d@9", "COLON::@10", "KEY:e@11"),
    )
    # "1x" lexes as VALUE only where a value may stand: the scanner is contextual
    assert machine.parse("k=1x", "term_list") == ("term_list", ("KEY:k@0", "EQ:=@1", "VALUE:1x@2"))


def test_driver_reports_where_it_stopped() -> None:
    machine = _toy()
    with pytest.raises(SyntaxStop) as stop:
        machine.parse("a,=", "events")
    assert (stop.value.pos, stop.value.token.type if stop.value.token else None) == (2, "EQ")
    assert stop.value.expected == {"KEY"}
    with pytest.raises(SyntaxStop) as stop:
        machine.parse("a=", "events")
    assert stop.value.at_end and stop.value.pos == 2 and stop.value.expected == {"VALUE"}
    with pytest.raises(SyntaxStop) as stop:
        machine.parse("a?", "events")
    assert stop.value.token is None and stop.value.pos == 1
