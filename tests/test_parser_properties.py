"""Property tests: generated valid event strings round-trip through the printer, and the
production LALR parser agrees with Lark's Earley parser over the same grammar file."""

from __future__ import annotations

import dataclasses
import os

import pytest
from corpus_files import read_corpus
from evspec.grammar.lalr import SyntaxStop
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark.exceptions import UnexpectedInput

from evspec import lexicon
from evspec.ast import AllIndices, BpfEvent, EventList, Group, IndexList, SymbolKind
from evspec.parser import analyze, earley_parser, machine, parse
from evspec.parser.builder import AstBuilder, Fault
from evspec.printer import print_events
from evspec.span import Span

EXAMPLES = 300 if os.environ.get("CI") == "true" else 120

# --------------------------------------------------------------------------------------------
# strategies: valid strings, built per event kind and term kind


def _is_plain_word(w: str) -> bool:
    return lexicon.event_word_kind(w) is None and not w.startswith("mem")


lower_word = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
plain_word = lower_word.filter(_is_plain_word)
glob_word = st.from_regex(r"[a-z_*?][a-z0-9_*?]{0,6}(\[[a-z]{1,2}\])?[a-z0-9_*]{0,2}", fullmatch=True)
decimal = st.integers(0, lexicon.U64_MAX).map(str)
hexnum = st.integers(0, lexicon.U64_MAX).map(lambda n: f"0x{n:x}")
number = st.one_of(decimal, hexnum, st.sampled_from(["0", "010", "0x00", "0xFF"]))
small_number = st.integers(0, 4096).map(str)
word_value = st.from_regex(r"[A-Za-z_*?][A-Za-z0-9_.:\-]{0,8}", fullmatch=True)
quoted_value = st.from_regex(r"'[A-Za-z0-9_ ,:=./\-]{0,10}'", fullmatch=True)


@st.composite
def modifiers(draw: st.DrawFn, group: bool = False) -> str:
    """An event's modifier letters (no 'W': that one is for groups), or a group's (no 'p': the
    group's precise level adds to each member's)."""
    letters = draw(st.lists(st.sampled_from([c for c in lexicon.MODIFIER_LETTERS if c != "p" and (group or c != "W")]),
                            unique=True, max_size=5))
    letters += ["p"] * (0 if group else draw(st.integers(0, lexicon.MAX_PRECISE)))
    if not letters:
        letters = ["u"]
    return "".join(draw(st.permutations(letters)))


@st.composite
def keyword_term(draw: st.DrawFn, allowed: tuple[str, ...] | None = None) -> str:
    """A valid keyword term; the legacy config terms only where ``allowed`` names them (they need
    an event of a core PMU)."""
    names = allowed or tuple(k for k in lexicon.KEYWORD_TERMS if k not in lexicon.LEGACY_CONFIG_TERMS)
    key = draw(st.sampled_from(names))
    info = lexicon.KEYWORD_TERMS[key]
    if key == "call-graph":
        return f"{key}={draw(st.sampled_from(lexicon.CALL_GRAPH_MODES))}"
    if key == "branch_type":
        return f"{key}={draw(st.sampled_from((*lexicon.BRANCH_TYPES, 'no')))}"
    if key == "aux-action":
        return f"{key}={draw(st.sampled_from(lexicon.AUX_ACTIONS))}"
    if key == "ratio-to-prev":
        return f"{key}={draw(st.sampled_from(['2.0', '0.5', '1e3', '3x']))}"
    if key == "cpu":
        return draw(st.sampled_from([key, "cpu=0", "cpu=0x1", "cpu=0-1", "cpu='0,2-3'", "cpu=software", "cpu=cpu_core"]))
    if key == "legacy-cache-config":
        return f"{key}={draw(st.integers(0, 6)) | draw(st.integers(0, 2)) << 8 | draw(st.integers(0, 1)) << 16:#x}"
    if info.value_type is lexicon.ValueType.STRING:
        return f"{key}={draw(st.one_of(word_value, quoted_value))}"
    if info.value_type is lexicon.ValueType.BOOL:
        return draw(st.sampled_from([key, f"{key}=0", f"{key}=1"]))
    if info.maximum is not None:
        return f"{key}={draw(st.integers(0, info.maximum))}"
    return draw(st.one_of(st.just(key), number.map(lambda v: f"{key}={v}")))


user_term = st.tuples(plain_word.filter(lambda w: w not in lexicon.KEYWORD_TERMS),
                      st.one_of(st.none(), number, word_value, quoted_value)).map(
    lambda kv: kv[0] if kv[1] is None else f"{kv[0]}={kv[1]}")
raw_term = st.integers(0, 0xFFFFFF).flatmap(lambda n: st.sampled_from([f"r{n:x}", f"r0x{n:x}"]))
driver_term = st.from_regex(r"@[a-z0-9_.]{1,6}(=[a-z0-9_*?.:]{1,6})?", fullmatch=True)


def term_list(term: st.SearchStrategy[str], max_size: int = 3) -> st.SearchStrategy[str]:
    return st.lists(term, max_size=max_size).map(lambda ts: "/" + ",".join(ts) + "/")


def with_suffix(draw: st.DrawFn, head: str, terms: st.SearchStrategy[str] | None, colon_after_terms: bool) -> str:
    """HEAD, HEAD:MODS, HEAD/TERMS/[MODS]; a ':' after the term list where the kind allows one."""
    shape = draw(st.sampled_from(["plain", "mods", "colon", "terms"] if terms is not None else ["plain", "mods", "colon"]))
    if shape == "plain":
        return head
    if shape == "mods":
        return f"{head}:{draw(modifiers())}"
    if shape == "colon":
        return f"{head}:"
    assert terms is not None
    text = head + draw(terms)
    if draw(st.booleans()):
        sep = ":" if colon_after_terms and draw(st.booleans()) else ""
        text += sep + draw(modifiers())
    return text


symbol_name = st.sampled_from(sorted({*lexicon.HARDWARE_EVENTS, *lexicon.SOFTWARE_EVENTS})).flatmap(
    lambda n: st.sampled_from([n, n.upper()]))
keyword_terms = term_list(keyword_term())
core_terms = term_list(keyword_term(tuple(lexicon.KEYWORD_TERMS)))
digit_word = st.from_regex(r"[0-9][a-z_][a-z0-9_]{0,6}", fullmatch=True)


def quoted_or_not(draw: st.DrawFn, name: str) -> str:
    return f"'{name}'" if draw(st.integers(0, 4)) == 0 else name
tracepoint_terms = term_list(keyword_term(lexicon.TRACEPOINT_TERMS))


@st.composite
def cache_word(draw: st.DrawFn) -> str:
    spelling = draw(st.sampled_from(sorted(lexicon.CACHE_TYPES)))
    cache = lexicon.CACHE_TYPES[spelling]
    ops = [w for w, op in lexicon.CACHE_OPS.items() if op in lexicon.CACHE_SUPPORTED_OPS[cache]]
    parts = sorted(draw(st.lists(st.sampled_from(["op", "result"]), unique=True, max_size=2)))  # op first
    words = [draw(st.sampled_from(ops if p == "op" else sorted(lexicon.CACHE_RESULTS))) for p in parts]
    word = "-".join([spelling, *words])
    return word if lexicon.symbol_kind(word) is None else spelling + "-load"


@st.composite
def event(draw: st.DrawFn, names: tuple[str, ...] = ()) -> str:
    kind = draw(st.sampled_from(["symbol", "tool", "cache", "raw", "numeric", "breakpoint", "tracepoint",
                                 "pmu", "alias", "bpf"]))
    if kind == "symbol":
        name = draw(symbol_name)
        terms = core_terms if lexicon.symbol_kind(name) is SymbolKind.HARDWARE else keyword_terms
        return with_suffix(draw, quoted_or_not(draw, name), terms, False)
    if kind == "tool":
        return with_suffix(draw, quoted_or_not(draw, draw(st.sampled_from(sorted(lexicon.TOOL_EVENTS)))),
                           keyword_terms, False)
    if kind == "cache":
        return with_suffix(draw, quoted_or_not(draw, draw(cache_word())), core_terms, False)
    if kind == "raw":
        return with_suffix(draw, f"r{draw(st.integers(0, lexicon.U64_MAX)):x}", keyword_terms, True)
    if kind == "numeric":
        head = f"{draw(st.integers(0, lexicon.U32_MAX))}:{draw(number)}"
        return with_suffix(draw, head, keyword_terms, True)
    if kind == "breakpoint":
        text = f"mem:{draw(number)}"
        if draw(st.booleans()):
            text += f"/{draw(small_number)}"
        access = "".join(draw(st.lists(st.sampled_from("rwx"), unique=True, max_size=3)))
        if access:
            text += f":{access}"
        if draw(st.booleans()):
            text += draw(keyword_terms)
            if draw(st.booleans()):
                text += (":" if draw(st.booleans()) else "") + draw(modifiers())
        elif draw(st.booleans()):
            text += f":{draw(modifiers())}"
        return text
    if kind == "tracepoint":
        system = draw(st.one_of(glob_word, digit_word).filter(lambda w: lexicon.event_word_kind(w) is None and w != "mem"))
        name = draw(glob_word.filter(lambda w: not lexicon.is_modifier_word(w)))
        return with_suffix(draw, f"{system}:{name}", tracepoint_terms, True)
    if kind == "pmu":
        pmu = draw(st.one_of(plain_word, st.sampled_from(["energy-psys", "uncore_imc_0", "cpu_core"])))
        terms = draw(term_list(st.one_of(keyword_term(tuple(lexicon.KEYWORD_TERMS)), user_term, raw_term, driver_term), 4))
        return pmu + terms + (draw(modifiers()) if draw(st.booleans()) else "")
    if kind == "alias":
        return with_suffix(draw, draw(st.one_of(plain_word, st.just("energy-psys"))), None, False)
    path = draw(st.sampled_from(["./a.o", "x.obj", "sub/dir/p.bpf.o", "./src.c", "/tmp/w e.o", "a:b.o"]))
    map_terms = [
        f"map:{draw(lower_word)}.value{draw(index_list())}={draw(number)}",
        *([f"map:{draw(lower_word)}.event{draw(index_list())}={draw(st.sampled_from(names))}"] if names else []),
    ]
    bpf_term = st.one_of(st.sampled_from(map_terms), keyword_term(lexicon.TRACEPOINT_TERMS))
    if draw(st.booleans()):
        return path
    return path + draw(term_list(bpf_term)) + (draw(modifiers()) if draw(st.booleans()) else "")


@st.composite
def index_list(draw: st.DrawFn) -> str:
    shape = draw(st.sampled_from(["none", "all", "list"]))
    if shape == "none":
        return ""
    if shape == "all":
        return "[all]"
    items = []
    for _ in range(draw(st.integers(1, 4))):
        first = draw(st.integers(0, 1 << 20))
        last = first + draw(st.integers(0, 100))
        fmt = draw(st.sampled_from(["{}", "0x{:x}"]))
        items.append(fmt.format(first) if draw(st.booleans()) else f"{fmt.format(first)}...{fmt.format(last)}")
    return "[" + ",".join(items) + "]"


@st.composite
def item(draw: st.DrawFn, names: tuple[str, ...]) -> str:
    if draw(st.integers(0, 4)) > 0:
        return draw(event(names))
    name = draw(st.one_of(st.just(""), plain_word, st.sampled_from(["tsc", "my-grp", "cycles", "g.1"])))
    members = draw(st.lists(event(names), min_size=1, max_size=4))
    text = name + "{" + ",".join(members) + "}"
    return text + (f":{draw(modifiers(group=True))}" if draw(st.booleans()) else "")


@st.composite
def event_string(draw: st.DrawFn) -> str:
    items: list[str] = []
    names: tuple[str, ...] = ()
    if draw(st.booleans()):
        items.append("bpf-output/no-inherit,name=evt/")
        names = ("evt", "cycles") if draw(st.booleans()) else ("evt",)
        if "cycles" in names:
            items.append("cycles")
    for _ in range(draw(st.integers(1, 4))):
        items.append(draw(item(names)))
    return ",".join(items)


def _blank_points(ast: EventList) -> set[int]:
    """Offsets where the language allows blanks: the ends, around item and member commas, around
    '{' and '}', inside index lists. Found from the AST's spans, so they are exact."""
    points = {0, len(ast.source)}
    items = ast.items
    for left, right in zip(items, items[1:], strict=False):
        points.update({left.span.end, right.span.start})
    for it in items:
        if isinstance(it, Group):
            lbrace = it.name_span.end if it.name_span is not None else it.span.start
            points.update({lbrace, lbrace + 1})
            for left, right in zip(it.events, it.events[1:], strict=False):
                points.update({left.span.end, right.span.start})
            rbrace = it.events[-1].span.end
            points.update({rbrace, rbrace + 1})
        for ev in it.events if isinstance(it, Group) else (it,):
            if isinstance(ev, BpfEvent):
                for term in ev.object_terms:
                    if isinstance(term.indices, IndexList):
                        points.update({term.indices.span.start + 1, term.indices.span.end - 1})
                        for entry in term.indices.items:
                            points.update({entry.span.start, entry.span.end})
                            if entry.last is not None:
                                points.update({entry.first.span.end, entry.last.span.start})
                    elif isinstance(term.indices, AllIndices):
                        points.update({term.indices.span.start + 1, term.indices.span.end - 1})
    return points


@st.composite
def decorated(draw: st.DrawFn) -> tuple[str, str]:
    """(text, the same text with blanks wherever the language allows them)."""
    text = draw(event_string())
    points = sorted(_blank_points(parse(text)), reverse=True)
    spaced = text
    for at in points:
        spaced = spaced[:at] + draw(st.sampled_from(["", " ", "  ", "\t"])) + spaced[at:]
    return text, spaced


# --------------------------------------------------------------------------------------------
# properties


def _spans(node: object, path: str = "") -> list[tuple[str, Span]]:
    out: list[tuple[str, Span]] = []
    if isinstance(node, Span):
        return [(path, node)]
    if dataclasses.is_dataclass(node):
        for f in dataclasses.fields(node):
            out.extend(_spans(getattr(node, f.name), f"{path}.{f.name}"))
    elif isinstance(node, tuple):
        for n, child in enumerate(node):
            out.extend(_spans(child, f"{path}[{n}]"))
    return out


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event_string())
def test_generated_strings_parse_print_reparse(text: str) -> None:
    result = analyze(text)
    assert result.ok, (text, [(d.code, d.message, d.span) for d in result.diagnostics])
    printed = print_events(result.events)
    again = parse(printed)
    assert again == result.events
    assert print_events(again) == printed
    if text == printed:
        assert _spans(again) == _spans(result.events)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(decorated())
def test_blanks_where_allowed_change_nothing(pair: tuple[str, str]) -> None:
    text, spaced = pair
    assert parse(spaced) == parse(text), spaced
    assert print_events(parse(spaced)) == print_events(parse(text))


def _lalr(text: str, start: str = "events") -> object:
    try:
        return machine().parse(text, start)
    except SyntaxStop:
        return "reject"
    except Fault as fault:
        return ("fault", fault.diagnostic.code, fault.diagnostic.span)


def _earley(text: str, start: str = "events") -> object:
    try:
        tree = earley_parser().parse(text, start=start)
    except UnexpectedInput:
        return "reject"
    assert "_ambig" not in str(tree), f"ambiguous: {text!r}"
    try:
        return AstBuilder().transform(tree)
    except Fault as fault:
        return ("fault", fault.diagnostic.code, fault.diagnostic.span)


def _same(text: str, start: str = "events") -> None:
    lalr, earley = _lalr(text, start), _earley(text, start)
    assert lalr == earley, text
    if not isinstance(lalr, (str, tuple)) or start == "term_list":
        assert _spans(EventList(lalr) if start == "events" else lalr) == \
            _spans(EventList(earley) if start == "events" else earley), text  # type: ignore[arg-type]


def _corpus_strings() -> list[str]:
    return [row.string for row in read_corpus()]


def test_earley_agrees_with_lalr_on_the_corpus(corpus: list[object]) -> None:
    strings = _corpus_strings()
    assert len(strings) == len(corpus)
    for text in strings:
        _same(text)


@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event_string())
def test_earley_agrees_with_lalr_on_generated_strings(text: str) -> None:
    _same(text)


@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("cyles:u/{},=.o mr0x1[]-'@")), max_size=14))
def test_earley_agrees_with_lalr_on_near_miss_strings(text: str) -> None:
    _same(text)


@pytest.mark.parametrize("text", ["event=0x3c,umask=0x00", "a,b=c,r1a,@x=1", "config=?", "x=1 "])
def test_earley_agrees_on_term_lists(text: str) -> None:
    _same(text, "term_list")
