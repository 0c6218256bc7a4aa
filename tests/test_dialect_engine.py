"""Unit tests of the dialect engine: flex semantics, bison tables, the error slot, the PMU symbol
table, perf stat's term restriction, stderr layout and quirk explanations."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from evspec.dialect import predict
from evspec.dialect.actions.errors import ErrorSlot, PerfError
from evspec.dialect.actions.pmu_symbols import PmuSymbols, SymbolKind
from evspec.dialect.engine.flexscan import Cursor, Loc, Rule, Scanner, Token, literals, token, user_reject
from evspec.dialect.engine.lalr import Abort, Production, build, parse
from evspec.system.fixtures import corpus_system

# ---- flex semantics


def _scan(rules: list[Rule], text: str, reject: set[str] = frozenset()) -> tuple[list[tuple[str, str, int, int]], str]:
    def act(cur: Cursor, lexeme: str, rule: Rule) -> Token | None:
        if lexeme in reject:
            user_reject(cur, lexeme)
        if rule.name == "skip":
            return None
        return token(cur, rule.name, lexeme, lexeme)

    scanner = Scanner(tuple(rules), exclusive=frozenset({"x"}), inclusive=frozenset())
    tokens, cur = scanner.scan(text, "INITIAL", act, lambda c: c.begin("INITIAL"))
    return [(t.kind, t.text, t.loc.first, t.loc.last) for t in tokens[:-1]], "".join(cur.echoed)


def test_longest_match_wins_then_the_first_rule():
    rules = [
        Rule("kw", literals("branch", "branches")),
        Rule("name", re.compile(r"[a-z]+")),
        Rule("skip", re.compile(r".")),
    ]
    toks, _ = _scan(rules, "branches branchy")
    assert [(k, t) for k, t, *_ in toks] == [("kw", "branches"), ("name", "branchy")]


def test_reject_falls_back_to_shorter_matches_and_moves_the_columns():
    rules = [Rule("obj", re.compile(r"[a-z.]+\.o[a-z.]*"), may_reject=True), Rule("skip", re.compile(r"."))]
    toks, _ = _scan(rules, "a.o.x", reject={"a.o.x", "a.o."})
    # the rejected matches still ran YY_USER_ACTION: last/first moved twice before "a.o" won
    assert toks == [("obj", "a.o", 0, 0)]


def test_unmatched_characters_in_an_exclusive_state_are_echoed():
    rules = [Rule("word", re.compile(r"[a-z]+"), frozenset({"x"}))]
    scanner = Scanner(tuple(rules), exclusive=frozenset({"x"}), inclusive=frozenset())
    tokens, cur = scanner.scan(
        "{ab", "x", lambda c, lx, r: token(c, "word", lx, lx), lambda c: c.begin("INITIAL")
    )
    assert cur.echoed == ["{"]
    assert tokens[0].loc == Loc(1, 0)  # the echoed '{' counted as a lexeme at column 0


# ---- bison tables


def test_default_reductions_run_actions_before_the_bad_token_is_looked_at():
    seen: list[str] = []

    def reduce_item(ctx, v, loc):
        seen.append(v[0])
        return v[0]

    tables = build(
        "s",
        [
            Production("s", ("item", "opt")),
            Production("item", ("A",), reduce_item),
            Production("opt", ("C",)),
            Production("opt", ()),
        ],
    )
    tokens = iter([Token("A", "a", Loc(0, 1), "a"), Token("B", None, Loc(2, 0), "b"), Token("$end", None, Loc(2, 0), "")])
    outcome = parse(tables, tokens, None)
    assert seen == ["a"]  # item was reduced although B is wrong
    assert not outcome.ok and outcome.syntax_error_at is not None and outcome.syntax_error_at.kind == "B"


def test_an_aborting_action_stops_the_parse_without_a_syntax_error():
    def fail(ctx, v, loc):
        raise Abort

    tables = build("s", [Production("s", ("A",), fail)])
    outcome = parse(tables, iter([Token("A", None, Loc(0, 1), "a"), Token("$end", None, Loc(0, 1), "")]), None)
    assert not outcome.ok and outcome.syntax_error_at is None


# ---- the error slot


def test_third_error_keeps_the_second_errors_column():
    slot = ErrorSlot(2)
    slot.handle(3, "one")
    slot.handle(5, "two", "help two")
    slot.handle(9, "three")
    assert slot.first == PerfError("one", 3)
    assert slot.last == PerfError("three", 5)


def test_one_slot_keeps_the_last_error_and_may_keep_the_column():
    slot = ErrorSlot(1)
    slot.handle(4, "one")
    slot.handle(None, "two")
    assert slot.first is None and slot.last == PerfError("two", 4)


# ---- PMU alias symbols


def test_alias_pieces_are_symbols_case_insensitively():
    symbols = PmuSymbols.of(corpus_system())
    assert symbols.classify("tsc") is SymbolKind.SYMBOL
    assert symbols.classify("TSC") is SymbolKind.SYMBOL
    assert symbols.classify("energy") is SymbolKind.PREFIX
    assert symbols.classify("PSYS") is SymbolKind.SUFFIX
    assert symbols.classify("msr") is None
    assert PmuSymbols.of(None).classify("tsc") is None


# ---- whole predictions: columns, machine dependence, perf stat


def test_without_a_system_aliases_are_plain_names():
    assert predict("tsc{cpu-clock}", system=corpus_system()).error == PerfError("parser error", 0)
    assert predict("tsc{cpu-clock}").accepted  # a group named tsc


def test_bpf_words_depend_on_stat(tmp_path: Path):
    assert predict("./x.o", cwd=tmp_path).error == PerfError("parser error", 1)
    (tmp_path / "x.o").write_text("not an object")
    v = predict("./x.o", cwd=tmp_path)
    assert v.error == PerfError("Internal error: load bpf obj with NULL", 0, "(add -v to see detail)")
    assert v.quirk is not None and "NULL" in v.quirk


@pytest.mark.parametrize(
    ("text", "record", "stat"),
    [
        ("cpu-clock/time=1/", None, PerfError("'time' is not usable in 'perf stat'", -1)),
        ("cpu-clock/time=2/", PerfError("expected 0 or 1", 15), PerfError("expected 0 or 1", 15)),
        ("cpu-clock/period=1,name=x/", None, None),
    ],
)
def test_perf_stat_keeps_seven_terms(text, record, stat):
    assert predict(text, mode="record").error == record
    assert predict(text, mode="stat").error == stat


def test_stat_help_lists_only_the_stat_terms():
    v = predict("cpu-clock/foo=1/", mode="stat")
    assert v.error is not None and v.error.help == "valid terms: config,config1,config2,name,period,percore,metric-id"


def test_msr_event_without_value_passes_through_the_wildcard_retry():
    system = corpus_system()
    assert predict("msr/event/", system=system).accepted
    v = predict("msr/event/,foo", system=system)
    assert v.error == PerfError("parser error", 11)
    assert v.initial_error == PerfError("no value assigned for term", 0)


# ---- stderr


def test_stderr_layout_with_initial_error_and_usage():
    v = predict("software/foo/", system=corpus_system(), mode="stat")
    help = "valid terms: config,config1,config2,name,period,percore,metric-id"
    block = f"event syntax error: 'software/foo/'\n{' ' * 30}\\___ unknown term 'foo' for pmu 'software'\n\n{help}\n"
    assert v.stderr == (
        f"{block}\nInitial error:\n{block}Run 'perf list' for a list of valid events\n\n"
        " Usage: perf stat [<options>] [<command>]\n\n"
        "    -e, --event <event>   event selector. use 'perf list' to list available events\n"
    )


def test_stderr_windowing_follows_the_terminal_width():
    text = "cpu-clock,task-clock,page-faults,minor-faults,major-faults,context-switches,bogus"
    # the caret is at 'bogus' (76): 13 characters are kept before it, then the window ends
    narrow = predict(text, system=corpus_system(), term_width=30).stderr.splitlines()
    assert narrow[:2] == ["event syntax error: '..t-sw..'", " " * 34 + "\\___ parser error"]
    wide = predict(text, system=corpus_system(), term_width=200).stderr.splitlines()
    assert wide[0] == "event syntax error: '..t-switches,bogus'"
    first = predict("bogus," + text, system=corpus_system(), term_width=30).stderr.splitlines()
    assert first[:2] == ["event syntax error: 'bogus,..'", " " * 21 + "\\___ parser error"]


def test_silent_and_nothing_found_print_no_error_block():
    system = corpus_system()
    silent = predict("L1-icache-stores", system=system, mode="stat")
    assert silent.silent and silent.stderr.startswith("Run 'perf list'")
    assert silent.quirk is not None and "without printing any message" in silent.quirk
    nothing = predict("nosu*:foo", system=system)
    assert nothing.silent and nothing.stderr.startswith("WARNING: event parser found nothing\nRun 'perf list'")


# ---- quirks


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("tsc{cpu-clock}", "PMU alias"),
        ("sched:read", "keyword"),
        ("cycles@", "silently skips"),
        ("{cpu-clock,task-clock", "echoes"),
        ("./maps.bpf", "stat()"),
    ],
)
def test_quirks_say_why(text, words):
    v = predict(text, system=corpus_system())
    assert v.quirk is not None and words in v.quirk


def test_plain_verdicts_have_no_quirk():
    assert predict("cpu-clock:u").quirk is None


def test_echoed_characters_are_reported_as_stdout(bpf_fixtures: Path):
    assert predict("{cpu-clock,task-clock").stdout == "{"
    text = "./maps.o/map:arr.value[ 0]=5/"
    v = predict(text, system=corpus_system(str(bpf_fixtures)), cwd=bpf_fixtures)
    assert v.accepted and v.stdout == " "  # the ARRAY state echoes the blank of perf's work-around
    assert predict(text).stdout == ""  # no object here: no BPF token, no index list, nothing echoed


def test_importing_the_dialect_loads_nothing_heavy():
    code = (
        "import sys; import evspec.dialect as d; d.predict('cpu-clock/period=1/:u');"
        "bad = [m for m in ('lark', 'elftools', 'pyroute2', 'evspec.loader.kernel', 'evspec.loader.object.reader') "
        "if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", check=True)
    assert out.stdout.strip() == "[]"
