"""Parser and rules unit tests: every diagnostic code (code + span), AST shapes, parse_terms,
recovery, event references and the item splitter."""

from __future__ import annotations

import pytest

from evspec import rules
from evspec.ast import (
    AliasEvent,
    AllIndices,
    BpfEvent,
    BreakpointEvent,
    CacheEvent,
    Group,
    IndexList,
    MapTerm,
    Number,
    NumericEvent,
    PmuEvent,
    RawEvent,
    SymbolEvent,
    SymbolKind,
    Term,
    TermKind,
    TracepointEvent,
    Word,
)
from evspec.codes import catalogue
from evspec.diagnostics import EvspecError, Severity
from evspec.parser import analyze, parse, parse_terms
from evspec.parser.recover import split_items
from evspec.printer import print_events
from evspec.span import Span

# (string, code, start, end): the first diagnostic of the string.
FIRST_DIAGNOSTIC = [
    # grammar
    (",cycles", "ES001", 0, 1),
    ("cycles,,instructions", "ES001", 7, 8),
    ("cycles,", "ES001", 6, 7),
    ("cycles , ", "ES001", 7, 8),
    ("cpu-clock,task-clock}", "ES001", 20, 21),
    ("{cpu-clock,}", "ES001", 11, 12),
    ("x{cpu-clock}y", "ES001", 12, 13),
    ("cpu-clock::u", "ES001", 10, 11),
    ("MEM:0x1000", "ES001", 4, 10),
    ("1:1:1", "ES001", 4, 5),
    ("cycles;instructions", "ES002", 6, 7),
    ("'cpu-clock'u", "ES001", 11, 12),
    (":1", "ES001", 0, 1),
    ("cycles@", "ES002", 6, 7),
    ("cycles\x00", "ES002", 6, 7),
    ("cycl\u00e9s", "ES002", 4, 5),
    ("cycles u", "ES003", 6, 7),
    ("cycles/ /", "ES003", 7, 8),
    ("cpu-clock/name=a b/", "ES003", 16, 17),
    ("mem :0x1000", "ES003", 3, 4),
    ("cycles: u", "ES003", 7, 8),
    ("cycles/", "ES004", 6, 7),
    ("cycles/period=1", "ES004", 6, 7),
    ("{cpu-clock,task-clock", "ES004", 0, 1),
    ("./a.o/map:x.value[0=1/", "ES004", 17, 18),
    ("cpu-clock/name='abc/", "ES004", 15, 16),
    ("{}", "ES005", 0, 2),
    ("{ }", "ES005", 0, 3),
    ("./maps.o/map:arr.value[ ]=5/", "ES006", 22, 25),
    ("./a.o/map:x.value[]=1/", "ES006", 17, 19),
    ("{cpu-clock,{task-clock}}", "ES007", 11, 12),
    ("{a,b{c}}", "ES007", 4, 5),
    ("cpu-clock:u:k", "ES008", 11, 12),
    ("sched:sched_switch:u:k", "ES008", 20, 21),
    ("tsc:u:k", "ES008", 5, 6),
    ("software/config=0/:u", "ES008", 18, 19),
    ("{cpu-clock,task-clock}u", "ES008", 22, 23),
    ("./up1.o:u", "ES008", 7, 8),
    ("./x.o//:u", "ES008", 7, 8),
    ("mem:0:u:k", "ES008", 7, 8),
    ("cpu-clock/period=1//", "ES009", 19, 20),
    ("mem:0x1000:w/", "ES004", 12, 13),
    ("mem:0x1000/8/", "ES004", 12, 13),
    ("mem:0/1/2", "ES009", 7, 8),
    ("mem:0/x//", "ES009", 8, 9),
    ("mem:0:u/x/", "ES009", 6, 7),
    ("L1-dcache-loads/name=x/:u", "ES008", 23, 24),
    ("cycles:u/period=1/", "ES009", 8, 18),
    ("1:2:u/period=1/", "ES009", 5, 6),
    ("1:", "ES010", 1, 2),
    ("1:x", "ES010", 2, 3),
    ("1", "ES010", 0, 1),
    ("mem:0x1000/", "ES004", 10, 11),
    ("./maps.o/map:arr.value=-1/", "ES010", 23, 24),
    ("cpu-clock/period=1,/", "ES010", 19, 20),
    ("cpu-clock/period=/", "ES010", 17, 18),
    ("{a}:", "ES010", 3, 4),
    ("./maps.bpf", "ES011", 0, 10),
    ("./maps.o.1", "ES011", 0, 10),
    ("", "ES012", 0, 0),
    ("   ", "ES012", 0, 3),
    ("cpu-clock/period[0]=1/", "ES013", 16, 19),
    ("cpu-clock/period=1x/", "ES034", 17, 19),
    ("'sched':sched_switch", "ES058", 0, 7),
    # rules: modifiers and names
    ("cpu-clock:x", "ES020", 10, 11),
    ("cpu-clock:ux", "ES020", 11, 12),
    ("mem:0:ru", "ES020", 6, 7),
    ("cpu-clock:uu", "ES021", 11, 12),
    ("{cpu-clock,task-clock}:uu", "ES021", 24, 25),
    ("cpu-clock:pppp", "ES022", 13, 14),
    ("mem:0:rr", "ES023", 7, 8),
    ("L1-dcache-lods", "ES024", 10, 14),
    ("L1-dcache-", "ES024", 9, 10),
    ("L1-dcache-load-misses-misses", "ES025", 22, 28),
    ("L1-icache-stores", "ES026", 10, 16),
    ("branch-stores", "ES026", 7, 13),
    ("L1-dcache-load-store", "ES027", 15, 20),
    ("L1-dcache-load-load", "ES027", 15, 19),
    ("L1-dcache-misses-miss", "ES027", 17, 21),
    ("L1-dcache-misses-load", "ES051", 17, 21),
    ("cpu-clock:W", "ES052", 10, 11),
    ("{cpu-clock:W,task-clock}", "ES052", 11, 12),
    ("{cpu-clock:ppp}:p", "ES053", 16, 17),
    ("{cpu-clock:p,task-clock}:Sppp", "ES053", 26, 29),
    ("r10000000000000000", "ES028", 0, 18),
    ("1:18446744073709551616", "ES028", 2, 22),
    ("cpu-clock/config=18446744073709551616/", "ES028", 17, 37),
    ("4294967296:0", "ES029", 0, 10),
    # rules: terms
    ("cpu-clock/foo=1/", "ES030", 10, 13),
    ("LLC-loads/foo/", "ES030", 10, 13),
    ("cpu-clock/map:x.value=1/", "ES030", 10, 21),
    ("sched:sched_switch/name=foo/", "ES031", 19, 23),
    ("sched:sched_switch/r1a/", "ES031", 19, 22),
    ("./maps.o/name=foo/", "ES031", 9, 13),
    ("cpu-clock/@cfg/", "ES032", 10, 14),
    ("./maps.o/@cfg/", "ES032", 9, 13),
    ("duration_time/foo=1/", "ES030", 14, 17),
    ("mem:0/foo=1/", "ES030", 6, 9),
    ("mem:0/legacy-cache-config=1/", "ES030", 6, 25),
    ("sched:sched_switch/cpu=0/", "ES031", 19, 22),
    ("cpu-clock/legacy-hardware-config=1/", "ES054", 10, 32),
    ("duration_time/legacy-cache-config=1/", "ES054", 14, 33),
    ("cpu-clock/cpu=3-1/", "ES055", 14, 17),
    ("cpu-clock/cpu=0-1,/", "ES010", 18, 19),
    ("cpu-clock/cpu='0;1'/", "ES055", 14, 19),
    ("cpu-clock/aux-action=stop/", "ES056", 21, 25),
    ("{a,cpu-clock/ratio-to-prev=abc/}", "ES057", 27, 30),
    ("{a,cpu-clock/ratio-to-prev=0.0/}", "ES057", 27, 30),
    ("{a,cpu-clock/ratio-to-prev=1e999/}", "ES057", 27, 32),
    ("{a,cpu-clock/ratio-to-prev=2/}", "ES035", 27, 28),
    ("cycles/legacy-hardware-config=10/", "ES037", 30, 32),
    ("cpu/legacy-cache-config=0x10007/", "ES037", 24, 31),
    ("cpu/legacy-cache-config=0x1000000/", "ES037", 24, 33),
    ("cpu-clock/period=abc/", "ES034", 17, 20),
    ("cpu-clock/time=yes/", "ES034", 15, 18),
    ("cpu-clock/name=1/", "ES035", 15, 16),
    ("cpu-clock/call-graph/", "ES035", 10, 20),
    ("cpu-clock/time=2/", "ES036", 15, 16),
    ("cpu-clock/percore=3/", "ES036", 18, 19),
    ("cpu-clock/aux-sample-size=4294967296/", "ES037", 26, 36),
    ("cpu-clock/call-graph=bogus/", "ES038", 21, 26),
    ("cpu-clock/branch_type=bogus/", "ES039", 22, 27),
    # rules: BPF object terms
    ("./maps.o/map:arr=1/", "ES040", 9, 16),
    ("./maps.o/map:arr.=1/", "ES040", 9, 17),
    ("./maps.o/map:.value=1/", "ES041", 9, 19),
    ("./maps.o/map:arr.value[ 5...3]=5/", "ES042", 24, 29),
    ("./maps.o/map:arr.value[18446744073709551616]=5/", "ES028", 23, 43),
    ("./maps.o/map:arr.size=1/", "ES043", 17, 21),
    ("./maps.o/map:arr.value/", "ES044", 9, 22),
    ("./maps.o/map:arr.value[1]/", "ES044", 9, 25),
    ("./maps.o/map:arr.value=abc/", "ES045", 23, 26),
    ("./maps.o/map:arr.event=1/", "ES045", 23, 24),
    ("./maps.o/map:ev.type=5/", "ES045", 21, 22),
    ("./maps.o/map:ev.type[0]=event/", "ES050", 20, 23),
    ("./maps.o/map:ev.type[all]=event/", "ES050", 20, 25),
    ("./maps.o/map:arr.value=5,foo=1/", "ES046", 25, 28),
    ("./a.o/map:channel.event=evt/", "ES047", 24, 27),
    ("./maps.o/prog:p=1/", "ES048", 9, 15),
    ("./maps.o/prog:p.foo=1/", "ES048", 16, 19),
    ("./maps.o/prog:p.event=evt/", "ES047", 22, 25),
    ("./vars.o/var:targ_pid/", "ES049", 9, 21),
    ("./vars.o/var:=1/", "ES049", 9, 13),
    ("./vars.o/var:mode.x=1/", "ES049", 17, 19),
    ("cpu-clock/var:x=1/", "ES030", 10, 15),
    ("sched:sched_switch/var:x=1/", "ES031", 19, 24),
    # COMPAT 1.12 and the corpus rules on spans
    ("cycles/period=1 /", "ES003", 15, 16),
    ("cycles/period=1, /", "ES010", 17, 18),
    ("mem:", "ES010", 0, 4),
    ("{mem:}", "ES010", 1, 5),
    ("cycles,mem:", "ES010", 7, 11),
    ("./maps.o/map:arr.value[0,x]=1/", "ES001", 25, 26),
    ("./maps.o/map:arr.value[0, xy ]=1/", "ES001", 26, 28),
    ("cycles/period=1/ux", "ES020", 17, 18),
]


@pytest.mark.parametrize(("text", "code", "start", "end"), FIRST_DIAGNOSTIC,
                         ids=[repr(t) for t, *_ in FIRST_DIAGNOSTIC])
def test_first_diagnostic(text: str, code: str, start: int, end: int) -> None:
    result = analyze(text)
    assert result.diagnostics, "expected a diagnostic"
    first = result.diagnostics[0]
    assert (first.code, first.span) == (code, Span(start, end)), first.message
    assert first.severity is Severity.ERROR
    assert first.event == text
    assert not result.ok


@pytest.mark.parametrize(("text", "code", "start", "end"), [
    ("cpu-clock/ratio-to-prev=2.0/", "WS004", 10, 23),
    ("{cpu-clock/period=1,ratio-to-prev=2.0/,task-clock}", "WS004", 20, 33),
    ("cpu-clock/config=1,config=2/", "WS002", 19, 25),
    ("cpu-clock/name=a,name=b/", "WS002", 17, 21),
    ("./vars.o/var:targ_pid=1,var:targ_pid=2/", "WS003", 24, 36),
])
def test_warnings_do_not_fail(text: str, code: str, start: int, end: int) -> None:
    result = analyze(text)
    assert result.ok
    assert [(d.code, d.span, d.severity) for d in result.diagnostics] == [
        (code, Span(start, end), Severity.WARNING)
    ]
    assert parse(text) == result.events


def test_every_code_used_is_in_the_catalogue() -> None:
    known = catalogue()
    used = {code for _, code, _, _ in FIRST_DIAGNOSTIC} | {"WS002", "WS003", "WS004", "WS010"}  # WS010: test_suggestions
    assert used <= known.keys()
    from evspec.codes.syntax import CODES

    ours = {info.code for info in CODES}
    assert ours <= used, f"codes without a test: {sorted(ours - used)}"
    for info in CODES:
        assert info.title and info.explanation and info.fix
        assert info.code.startswith(("ES0", "WS0"))


@pytest.mark.parametrize(("text", "perf"), [
    ("cpu-clock:uu", "Bad modifier"),
    ("cpu-clock:pppp", "Bad modifier"),
    ("cpu-clock/foo/", "unknown term"),
    ("cpu-clock/period=abc/", "expected numeric value"),
    ("cpu-clock/name=1/", "expected string value"),
    ("cpu-clock/time=2/", "expected 0 or 1"),
    ("cpu-clock/aux-sample-size=4294967296/", "too big"),
    ("cpu-clock/branch_type=bogus/", "invalid branch sample type"),
    ("cycles,,x", "parser error"),
    ("./maps.o/foo=1/", "Invalid object config option"),
    ("./maps.o/map:arr=1/", "Invalid object config option"),
    ("./maps.o/map:arr.value/", "Config value not set (missing '=')"),
    ("./maps.o/map:arr.value=x/", "Incorrect value type for map"),
    ("./maps.o/map:arr.foo=1/", "Invalid object map config option"),
    ("./maps.o/map:c.event=evt/", "Event not found for map setting"),
])
def test_perf_messages(text: str, perf: str) -> None:
    assert analyze(text).diagnostics[0].perf_message == perf


def test_help_suggests_the_fix() -> None:
    assert analyze("./up1.o:u").diagnostics[0].help == ("did you mean './up1.o//u'?",)
    assert analyze("software/config=0/:u").diagnostics[0].help == ("did you mean 'software/config=0/u'?",)
    assert analyze("cpu-clock:u:k").diagnostics[0].help == ("did you mean 'cpu-clock:uk'?",)
    assert any("valid terms" in h for h in analyze("cpu-clock/foo/").diagnostics[0].help)


# --------------------------------------------------------------------------------------------
# AST shapes


def one(text: str) -> object:
    items = parse(text).items
    assert len(items) == 1
    return items[0]


def test_symbol_events_keep_their_spelling() -> None:
    ev = one("cs:u")
    assert ev == SymbolEvent(SymbolKind.SOFTWARE, "cs", None, ev.modifiers, Span(0, 4), Span(0, 2))
    assert ev.modifiers.letters == "u" and ev.modifiers.span == Span(3, 4)
    assert one("cycles").kind is SymbolKind.HARDWARE
    assert one("duration_time").kind is SymbolKind.TOOL
    assert one("branches").kind is SymbolKind.HARDWARE


def test_words_are_classified_by_position() -> None:
    assert isinstance(one("sched:read"), TracepointEvent)
    assert one("sched:read").event == "read"
    cache = one("branches-loads")
    assert isinstance(cache, CacheEvent) and (cache.cache_type, cache.parts) == ("branches", ("loads",))
    assert isinstance(one("tsc{cpu-clock}"), Group)
    assert isinstance(one("cycles{cpu-clock}"), Group)
    assert one("sched:u") == AliasEvent("sched", one("sched:u").modifiers, Span(0, 7), Span(0, 5))
    assert one("tsc:").modifiers is None
    assert isinstance(one("mem:foo"), TracepointEvent)
    assert isinstance(one("r0x1a"), AliasEvent)
    assert isinstance(one("R1a"), AliasEvent)
    assert isinstance(one("'r1a'"), AliasEvent)  # perf 7.3: a quoted word is never raw


def test_event_names_in_any_letter_case() -> None:
    """perf 7.3 looks events up case-insensitively (COMPAT 1.15); the spelling is kept."""
    cache = one("l1-DCACHE-Load-MISSES")
    assert isinstance(cache, CacheEvent) and (cache.cache_type, cache.parts) == ("l1-DCACHE", ("Load", "MISSES"))
    assert cache.part_spans == (Span(10, 14), Span(15, 21))
    assert not analyze("l1-DCACHE-Load-MISSES").diagnostics
    cycles = one("CYCLES")
    assert isinstance(cycles, SymbolEvent) and (cycles.kind, cycles.name) == (SymbolKind.HARDWARE, "CYCLES")
    assert one("Duration_Time").kind is SymbolKind.TOOL
    assert one("num_cpus").kind is SymbolKind.TOOL
    assert isinstance(one("slots"), AliasEvent)  # the tool PMU's slots is arm64's


def test_quoted_event_names() -> None:
    """perf 7.3's quoted_name: the name between the quotes, classified like the bare word."""
    ev = one("'cpu-clock':u")
    assert isinstance(ev, SymbolEvent) and (ev.name, ev.quoted, ev.name_span) == ("cpu-clock", True, Span(0, 11))
    assert ev.modifiers.letters == "u"
    cache = one("'L1-dcache-load-misses'/name=x/")
    assert isinstance(cache, CacheEvent) and cache.quoted and cache.part_spans == (Span(11, 15), Span(16, 22))
    pmu = one("'msr'/event=1/")
    assert isinstance(pmu, PmuEvent) and (pmu.pmu, pmu.quoted) == ("msr", True)
    assert one("'tsc'") != one("tsc")
    assert print_events(parse("'a,b=c'")) == "'a,b=c'"
    # a group's name too (perf 6.1 to 7.3: the group is named 'grp', without the quotes)
    (group,) = parse("'grp'{cpu-clock,task-clock}:u").items
    assert isinstance(group, Group) and (group.name, group.quoted, group.name_span) == ("grp", True, Span(0, 5))
    assert group != parse("grp{cpu-clock,task-clock}:u").items[0]
    assert print_events(parse("'grp'{cpu-clock}")) == "'grp'{cpu-clock}"


def test_digit_first_names() -> None:
    """perf 7.3's names may start with a digit; a word that is all number stays a number."""
    tp = one("9p:9p_client_req")
    assert isinstance(tp, TracepointEvent) and (tp.system, tp.event) == ("9p", "9p_client_req")
    assert isinstance(one("1:1"), NumericEvent)
    assert isinstance(one("2abc"), AliasEvent)
    assert isinstance(one("0x1g:u"), AliasEvent)
    values = [t.value for t in one("cpu/name=1x,period=0x10,cpu=0-1,ratio-to-prev=2.0,event=010/").terms.items]
    assert [type(v).__name__ for v in values] == ["Word", "Number", "Word", "Word", "Number"]
    assert values[4].value == 10


def test_raw_and_numeric_events() -> None:
    raw = one("read")
    assert isinstance(raw, RawEvent) and raw.code.value == 0xEAD and raw.code.text == "ead"
    assert raw.code.span == Span(1, 4)
    num = one("0x4:010/name=x/u")
    assert isinstance(num, NumericEvent)
    assert (num.type.value, num.config.value, num.config.text) == (4, 10, "010")
    assert num.modifiers.letters == "u"


def test_cache_parts_and_spans() -> None:
    ev = one("L1-dcache-speculative-read-misses")
    assert isinstance(ev, CacheEvent)
    assert ev.parts == ("speculative-read", "misses")
    assert ev.part_spans == (Span(10, 26), Span(27, 33))
    assert ev.name == "L1-dcache-speculative-read-misses"


def test_breakpoints() -> None:
    ev = one("mem:0x1000/8:rw:u")
    assert isinstance(ev, BreakpointEvent)
    assert (ev.address.value, ev.length.value, ev.access) == (0x1000, 8, "rw")
    assert ev.access_span == Span(13, 15) and ev.modifiers.letters == "u"
    ev = one("mem:0:k")
    assert ev.access is None and ev.modifiers.letters == "k"


def test_pmu_events_and_terms() -> None:
    ev = one("energy-psys/name=x/")
    assert isinstance(ev, PmuEvent) and ev.pmu == "energy-psys"
    ev = one("software/r0x1a,@drv=a.b,event=0x5,umask,name='a,b:c'/ukp")
    assert isinstance(ev, PmuEvent)
    raw, drv, event, umask, name = ev.terms.items
    assert raw == Term(TermKind.RAW, "r0x1a", Number(0x1A, "0x1a", Span(0, 0)), Span(0, 0), Span(0, 0))
    assert (drv.kind, drv.key, drv.value) == (TermKind.DRIVER, "drv", Word("a.b"))
    assert drv.key_span == Span(15, 19)
    assert (event.kind, event.value) == (TermKind.USER, Number(5, "0x5", Span(0, 0)))
    assert umask.value is None and umask.kind is TermKind.USER
    assert (name.kind, name.value) == (TermKind.KEYWORD, Word("a,b:c", quoted=True))
    assert ev.modifiers.letters == "ukp"


def test_bpf_events_and_map_terms() -> None:
    text = "./weird name.o/map:channel.value[ 0 , 3...6 ]=0x10,map:x.event[all]=evt,call-graph=fp/u"
    (ev,) = analyze(text, earlier_names=("evt",)).events.items
    assert isinstance(ev, BpfEvent) and ev.path == "./weird name.o" and not ev.is_source
    first, second, cg = ev.terms.items
    assert isinstance(first, MapTerm)
    assert (first.map_name, first.option, first.value) == ("channel", "value", Number(16, "0x10", Span(0, 0)))
    assert isinstance(first.indices, IndexList)
    assert [(i.first.value, i.last and i.last.value) for i in first.indices.items] == [(0, None), (3, 6)]
    assert first.name_span == Span(19, 26) and first.option_span == Span(27, 32)
    assert first.key_span == Span(15, 45)
    assert isinstance(second.indices, AllIndices) and second.value == Word("evt")
    assert isinstance(cg, Term) and cg.key == "call-graph"
    assert ev.object_terms == (first, second)
    assert one("./prog.c").is_source
    assert isinstance(one("x.obj"), BpfEvent)
    assert isinstance(one("sub/maps.o"), BpfEvent)


def test_groups() -> None:
    g = one(" my-grp { cycles , mem:0:w }:uS ")
    assert isinstance(g, Group) and g.name == "my-grp" and g.name_span == Span(1, 7)
    assert [type(e) for e in g.events] == [SymbolEvent, BreakpointEvent]
    assert g.modifiers.letters == "uS" and g.span == Span(1, 31)
    assert parse("{a},b").events() == (AliasEvent("a", None, Span(0, 0), Span(0, 0)),
                                      AliasEvent("b", None, Span(0, 0), Span(0, 0)))


def test_spans_cover_events_without_blanks() -> None:
    items = parse("  cycles:u , {a,b}  ").items
    assert [i.span for i in items] == [Span(2, 10), Span(13, 18)]


# --------------------------------------------------------------------------------------------
# recovery: one diagnostic per bad item


def test_every_bad_item_gets_a_diagnostic_in_order() -> None:
    text = "a b,,cycles:uu,ok,{x,,y},L1-icache-stores,./m.o:u"
    result = analyze(text)
    got = [(d.code, d.span.start) for d in result.diagnostics]
    assert got == [("ES003", 1), ("ES001", 4), ("ES021", 13), ("ES001", 21), ("ES026", 35), ("ES008", 47)]
    assert [type(i).__name__ for i in result.events.items] == ["SymbolEvent", "AliasEvent", "CacheEvent"]
    with pytest.raises(EvspecError) as info:
        parse(text)
    assert info.value.diagnostics == result.diagnostics


def test_rules_error_before_a_later_syntax_error() -> None:
    result = analyze("cycles:uu,foo bar")
    assert [(d.code, d.span) for d in result.diagnostics] == [("ES021", Span(8, 9)), ("ES003", Span(13, 14))]


def test_trailing_comma_after_a_bad_item() -> None:
    assert [d.code for d in analyze("a b,").diagnostics] == ["ES003", "ES001"]


def test_every_error_is_found_however_many() -> None:
    """Recovery is linear, so nothing is capped: 200 bad items, 200 findings (check collapses
    the ones that are the same problem)."""
    result = analyze("x,," * 200)
    assert len(result.diagnostics) == 200
    assert [d.span.start for d in result.diagnostics[:3]] == [2, 5, 8]
    assert result.diagnostics[-1].message == "unexpected ',' (an event must come first)"


def test_split_items() -> None:
    text = "a,{b,c}:u,./d e.o/map:m.value[0,1]=1/,x/k='a,b'/,mem:0/8,z"
    parts = [text[s:e] for s, e in split_items(text)]
    assert parts == ["a", "{b,c}:u", "./d e.o/map:m.value[0,1]=1/", "x/k='a,b'/", "mem:0/8", "z"]
    assert split_items("a,,b", 2) == [(2, 2), (3, 4)]


# --------------------------------------------------------------------------------------------
# event references


def test_event_references_resolve_against_earlier_events() -> None:
    assert analyze("bpf-output/no-inherit,name=evt/,./a.o/map:channel.event=evt/").ok
    assert analyze("{cycles:u,./a.o/map:c.event=cycles:u/}").ok
    assert analyze("./a.o/map:channel.event=evt/", earlier_names=("evt",)).ok
    forward = analyze("./a.o/map:c.event=cycles/,cycles").diagnostics
    assert [(d.code, d.span) for d in forward] == [("ES047", Span(18, 24))]


def test_event_reference_names() -> None:
    text = "bpf-output/no-inherit,name=evt,name=x/,cycles:u,./a.o,cpu-clock/period=1/"
    events = parse(text).events()
    # the name map: terms use first; then the bare name only prog: terms fall back to
    assert [rules.event_reference_names(e, text) for e in events] == [
        ("evt", "\0bpf-output"), ("cycles:u", "\0cycles"), (), ("cpu-clock/period=1/", "\0cpu-clock")
    ]
    assert rules.event_reference_names(events[1], "") == ("cycles:u", "\0cycles")
    assert rules.event_reference_names(parse("cycles").events()[0], "cycles") == ("cycles",)


def test_check_accepts_names_of_earlier_strings() -> None:
    events = analyze("./a.o/map:c.event=evt/").events
    assert [d.code for d in rules.check(events)] == ["ES047"]
    assert rules.check(events, earlier_names=["evt"]) == []


# --------------------------------------------------------------------------------------------
# parse_terms


def test_parse_terms_reads_alias_definitions() -> None:
    text = "event=0x3c,umask=0x00,name=foo,config1,param=?\n"
    terms = parse_terms(text)
    keys = [(t.kind, t.key, t.value) for t in terms.items]
    assert keys == [
        (TermKind.USER, "event", Number(0x3C, "0x3c", Span(0, 0))),
        (TermKind.USER, "umask", Number(0, "0x00", Span(0, 0))),
        (TermKind.KEYWORD, "name", Word("foo")),
        (TermKind.KEYWORD, "config1", None),
        (TermKind.USER, "param", Word("?")),
    ]
    assert terms.span == Span(0, len(text) - 1)


@pytest.mark.parametrize(("text", "code", "start", "end"), [
    ("event=", "ES010", 5, 6),
    ("event=1,", "ES001", 7, 8),
    ("event=1 umask=2", "ES003", 7, 8),
    ("", "ES012", 0, 0),
])
def test_parse_terms_errors(text: str, code: str, start: int, end: int) -> None:
    with pytest.raises(EvspecError) as info:
        parse_terms(text)
    first = info.value.diagnostics[0]
    assert (first.code, first.span) == (code, Span(start, end))


@pytest.mark.parametrize(("text", "canonical"), [
    ("cycles/period=1, name=x/", "cycles/period=1,name=x/"),
    ("cycles/period=1 ,name=x/", "cycles/period=1,name=x/"),
    ("cycles/period=1 , name=x,\ttime=0/u", "cycles/period=1,name=x,time=0/u"),
    ("duration_time//", "duration_time//"),
    ("user_time//u", "user_time//u"),
])
def test_blanks_around_term_commas_and_empty_tool_term_lists(text: str, canonical: str) -> None:
    """COMPAT 1.12: blanks around a term list's ',' as around an event list's; a tool event with
    an empty term list is valid."""
    result = analyze(text)
    assert result.ok and result.diagnostics == (), result.diagnostics
    assert print_events(result.events) == canonical


@pytest.mark.parametrize(("text", "helped"), [
    ("./x.o/var:delta=-5/", "a negative value of a var: term is written quoted: '-5'"),
    ("./x.o/var:d=-0x10,var:e=1/", "a negative value of a var: term is written quoted: '-0x10'"),
    ("./x.o/map:arr.value=-1/", "a value is a number (decimal or 0x-hex), a name, or a quoted '...' string"),
])
def test_a_negative_value_gets_a_help_that_fits_its_term(text: str, helped: str) -> None:
    diags = [d for d in analyze(text).diagnostics if d.code == "ES010"]
    assert len(diags) == 1 and diags[0].span.start == text.index("=-") + 1
    assert diags[0].help == (helped,)


def test_a_trailing_comma_is_reported_once() -> None:
    assert [(d.code, d.span) for d in analyze("cycles,").diagnostics] == [("ES001", Span(6, 7))]
    assert [(d.code, d.span) for d in analyze("a b,").diagnostics] == [("ES003", Span(1, 2)), ("ES001", Span(3, 4))]


@pytest.mark.parametrize(("text", "help_line"), [
    ("cpu-clock/period=0X10/", "a hex number is written with a lower-case x: '0x10'"),
    ("cpu-clock/period=10k/", "'period' takes a number: decimal or 0x-hex ('10k' is neither)"),
    ("cpu-clock/config=0x1g/", "'config' takes a number: decimal or 0x-hex ('0x1g' is neither)"),
    ("cpu-clock/period=cycles/", "a number is decimal or 0x-hex"),
])
def test_a_numeric_term_given_something_else(text: str, help_line: str) -> None:
    """The help says how to write the number (it once suggested quoting a name)."""
    [diag] = analyze(text).diagnostics
    assert diag.code == "ES034" and diag.help == (help_line,)


def test_a_name_valued_term_takes_a_value_that_starts_with_a_digit() -> None:
    """perf 7.2 counts cpu-clock/name=1x/ (issue 21)."""
    assert analyze("cpu-clock/name=1x/").diagnostics == ()
