"""map: object terms checked offline against hand-built ObjectSpecs equal to the fixture maps."""

from __future__ import annotations

import re
import sys

import pytest
from evspec.loader.lint.terms.maps import (
    BPF_MAP_HINT,
    EventFacts,
    EventKind,
    MapUpdate,
    check_map_terms,
    facts_for_event,
    plan_map_updates,
    range_keys,
)
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec

from evspec.ast import (
    AllIndices,
    BpfEvent,
    IndexItem,
    IndexList,
    MapTerm,
    Number,
    SymbolEvent,
    SymbolKind,
    Term,
    TermKind,
    Terms,
    Word,
)
from evspec.diagnostics import Diagnostic, EvspecError, Severity
from evspec.span import Span

ARRAY, PEA, HASH, PERCPU = MapType.ARRAY, MapType.PERF_EVENT_ARRAY, MapType.HASH, MapType.PERCPU_ARRAY


def obj(path: str, *maps: tuple[str, MapType, int, int, int]) -> ObjectSpec:
    return ObjectSpec(path, "GPL", None, tuple(MapSpec(n, int(t), k, v, e) for n, t, k, v, e in maps), ())


# the fixture maps (corpus README, "The BPF fixtures")
MAPS_O = obj(
    "maps.o",
    ("channel", PEA, 4, 4, 4),
    ("chan1", PEA, 4, 4, 1),
    ("arr", ARRAY, 4, 4, 8),
    ("arr64", ARRAY, 4, 8, 8),
    ("arr8", ARRAY, 4, 1, 4),
    ("arr3", ARRAY, 4, 3, 2),
    ("hmap", HASH, 4, 4, 8),
)
A_O = obj("a.o", ("channel", ARRAY, 4, 4, 8))
NANOSLEEP_O = obj(
    "nanosleep.o", ("counts", ARRAY, 4, 2, 16), ("events", PEA, 4, 4, 2), ("pcpu", PERCPU, 4, 4, 4)
)
SPECS = {"maps.o": MAPS_O, "a.o": A_O, "test_bpf_map.o": A_O, "nanosleep.o": NANOSLEEP_O}


# --------------------------------------------------------------------------------------------
# a small builder of BpfEvent nodes with exact spans (independent of the event-string parser)

_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|[0-9]+")
_NAME = re.compile(r"[A-Za-z_*?][A-Za-z0-9_*?:.\-]*")
_KEYWORDS = ("call-graph", "stack-size", "inherit", "no-inherit", "max-stack", "name", "period")


def _value(text: str, start: int) -> Number | Word:
    span = Span(start, start + len(text))
    if _NUMBER.fullmatch(text):
        return Number(int(text, 0), text, span)
    if _NAME.fullmatch(text):
        return Word(text, False, span)
    raise ValueError(f"value {text!r} does not lex")


def _indices(text: str, start: int) -> AllIndices | IndexList:
    span = Span(start, start + len(text))
    inner = text[1:-1]
    if inner.strip() == "all":
        return AllIndices(span)
    items = []
    pos = start + 1
    if inner.strip():
        for part in inner.split(","):
            lead = len(part) - len(part.lstrip())
            item = part.strip()
            first_text, _, last_text = item.partition("...")
            s = pos + lead
            first = Number(int(first_text, 0), first_text, Span(s, s + len(first_text)))
            last = None
            if last_text:
                ls = s + len(first_text) + 3
                last = Number(int(last_text, 0), last_text, Span(ls, ls + len(last_text)))
            items.append(IndexItem(first, last, Span(s, s + len(item))))
            pos += len(part) + 1
    return IndexList(tuple(items), span)


_MAP_TERM = re.compile(r"map:(?P<name>[^.=\[]*)\.(?P<opt>[^=\[]*)(?P<idx>\[[^\]]*\])?(?:=(?P<val>.*))?\Z")


def _term(text: str, start: int) -> Term | MapTerm:
    span = Span(start, start + len(text))
    m = _MAP_TERM.match(text)
    if m is not None:
        key_end = start + (m.end("idx") if m.group("idx") else m.end("opt"))
        return MapTerm(
            m.group("name"),
            m.group("opt"),
            _indices(m.group("idx"), start + m.start("idx")) if m.group("idx") else None,
            _value(m.group("val"), start + m.start("val")) if m.group("val") is not None else None,
            span,
            Span(start, key_end),
            Span(start + m.start("name"), start + m.end("name")),
            Span(start + m.start("opt"), start + m.end("opt")),
        )
    key, eq, val = text.partition("=")
    kind = TermKind.KEYWORD if key in _KEYWORDS else TermKind.USER
    value = _value(val, start + len(key) + 1) if eq else None
    return Term(kind, key, value, span, Span(start, start + len(key)))


def bpf_event(text: str) -> BpfEvent:
    """``PATH`` or ``PATH/TERM,TERM/`` (commas inside [...] belong to the index list)."""
    m = re.match(r".*?\.(?:obj|o|c)(?=/|\Z)", text)
    assert m is not None, text
    path = m.group(0)
    terms = None
    if len(text) > len(path):
        assert text.endswith("/"), text
        body_start = len(path) + 1
        body = text[body_start:-1]
        items = []
        depth, start = 0, 0
        for i, ch in enumerate(body + ","):
            if ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
            elif ch == "," and depth == 0:
                items.append(_term(body[start:i], body_start + start))
                start = i + 1
        terms = Terms(tuple(items) if body else (), Span(len(path), len(text)))
    return BpfEvent(path.removeprefix("./"), path.endswith(".c"), terms, None, Span(0, len(text)),
                    Span(0, len(path)))


def check(text: str, defined: dict[str, EventFacts] | None = None, **kw: bool) -> list[Diagnostic]:
    event = bpf_event(text)
    return check_map_terms(event, SPECS[event.path.rsplit("/", 1)[-1]], defined or {}, **kw)


def first_error(text: str, defined: dict[str, EventFacts] | None = None) -> Diagnostic:
    errors = [d for d in check(text, defined) if d.is_error]
    assert errors, f"no error for {text}"
    return errors[0]


# --------------------------------------------------------------------------------------------
# the corpus


def _covered(row_string: str) -> BpfEvent | None:
    """Rows whose string is ONE BPF event of a hand-built object with map terms whose values lex."""
    m = re.fullmatch(r"\./(maps|a|test_bpf_map|nanosleep)\.o/(.*)/", row_string)
    if m is None or "map:" not in m.group(2):
        return None
    try:
        return bpf_event(row_string)
    except ValueError:
        return None  # e.g. map:arr.value=-1: a syntax error before any map rule


def test_every_map_term_row_of_the_corpus(corpus: list) -> None:
    covered = 0
    failures = []
    for row in corpus:
        event = _covered(row.string)
        if event is None:
            continue
        covered += 1
        verdict, start, end = row.verdict(row.full)
        errors = [d for d in check(row.string) if d.is_error]
        if verdict == "ok":
            if errors:
                failures.append(f"line {row.line} {row.string!r}: expected ok, got {errors[0].message}")
            continue
        if not errors:
            failures.append(f"line {row.line} {row.string!r}: expected error@{start}-{end}, got none")
            continue
        d = errors[0]
        if (d.span.start, d.span.end) != (start, end):
            failures.append(f"line {row.line} {row.string!r}: span {d.span} != {start}-{end} ({d.message})")
        if row.perf_message is not None and d.perf_message != row.perf_message:
            failures.append(f"line {row.line} {row.string!r}: perf_message {d.perf_message!r} != {row.perf_message!r}")
        if row.perf_message is None and d.code not in ("EB121", "EB122", "EB132"):
            failures.append(f"line {row.line} {row.string!r}: unexpected map error {d.code}")
    # 35 corpus rows have map: terms: ./notelf.o (not BPF: test_object_check) and map:arr.value=-1
    # (a syntax error before any map rule) are not covered here; a broken filter must not pass silently
    assert covered == 33, covered
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------------------------
# each rule: message, span, perf's text and hint


@pytest.mark.parametrize(
    ("text", "code", "span_text", "perf"),
    [
        ("./maps.o/map:arr=1/", "EB120", "map:arr", "Invalid object config option"),
        ("./maps.o/map:arr.=1/", "EB120", "map:arr.", "Invalid object config option"),
        ("./maps.o/foo=1/", "EB120", "foo", "Invalid object config option"),
        ("./maps.o/map:.value=1/", "EB119", "map:.value", "Target map doesn't exist"),
        ("./maps.o/map:nosuch.value=1/", "EB123", "nosuch", "Target map doesn't exist"),
        ("./maps.o/map:arr.value[ 8]=5/", "EB124", "8", "Index too large"),
        ("./maps.o/map:arr.value[ 0,2...9]=5/", "EB124", "2...9", "Index too large"),
        ("./maps.o/map:arr.value[ 0x8]=5/", "EB124", "0x8", "Index too large"),
        ("./maps.o/map:arr.val=5/", "EB125", "val", "Invalid object map config option"),
        ("./maps.o/map:arr.value/", "EB126", "map:arr.value", "Config value not set (missing '=')"),
        ("./maps.o/map:arr.value[all]/", "EB126", "map:arr.value[all]", "Config value not set (missing '=')"),
        ("./maps.o/map:arr.value=abc/", "EB127", "abc", "Incorrect value type for map"),
        ("./maps.o/map:channel.event=123/", "EB127", "123", "Incorrect value type for map"),
        ("./maps.o/map:channel.event=evt/", "EB128", "evt", "Event not found for map setting"),
        ("./maps.o/map:hmap.value=1/", "EB129", "value", "Can't use this config term with this map type"),
        ("./maps.o/map:channel.value=1/", "EB129", "value", "Can't use this config term with this map type"),
        ("./nanosleep.o/map:pcpu.value=1/", "EB129", "value", "Can't use this config term with this map type"),
        ("./maps.o/map:arr3.value=1/", "EB131", "arr3", "Incorrect map value size"),
    ],
)
def test_rule(text: str, code: str, span_text: str, perf: str) -> None:
    d = first_error(text)
    assert (d.code, d.span.text(text), d.perf_message) == (code, span_text, perf), d.message
    assert d.perf_help == BPF_MAP_HINT


def test_hint_block_layout() -> None:
    assert BPF_MAP_HINT.split("\n") == [
        "Hint:\tValid config terms:",
        "     \tmap:[<arraymap>].value<indices>=[value]",
        "     \tmap:[<eventmap>].event<indices>=[event]",
        "",
        "     \twhere <indices> is something like [0,3...5] or [all]",
        "     \t(add -v to see detail)",
    ]


def test_messages_name_the_problem() -> None:
    assert first_error("./maps.o/map:arr.value[ 8]=5/").message == "index 8 too large (map 'arr' has 8 entries)"
    assert first_error("./maps.o/map:nosuch.value=1/").message == "map 'nosuch' not in the object"
    assert first_error("./maps.o/map:hmap.value=1/").message == "map 'hmap' is a HASH map, .value needs an ARRAY"
    assert first_error("./maps.o/map:arr.event=e/", {"e": EventFacts(EventKind.BPF_OUTPUT, 1, False)}).message == (
        "map 'arr' is an ARRAY map, .event needs a PERF_EVENT_ARRAY")
    assert first_error("./maps.o/map:channel.event=evt/").message == "no earlier event named 'evt'"


def test_help_suggests_close_map_names() -> None:
    d = first_error("./maps.o/map:ar.value=1/")
    assert d.help[0] == "did you mean 'arr'?"
    assert d.help[-1] == "maps in the object: channel, chan1, arr, arr64, arr8, arr3, hmap"


def test_empty_and_reversed_index_lists() -> None:
    text = "./maps.o/map:arr.value[ ]=5/"
    d = first_error(text)
    assert (d.code, d.span.text(text), d.perf_message) == ("EB121", "[ ]", None)
    text = "./maps.o/map:arr.value[ 1,5...3]=5/"
    d = first_error(text)
    assert (d.code, d.span.text(text), d.perf_message) == ("EB122", "5...3", None)
    assert d.message == "reversed index range (5...3)"


# --------------------------------------------------------------------------------------------
# perf's order inside one term


@pytest.mark.parametrize(
    ("text", "defined", "code"),
    [
        ("./maps.o/map:.=1/", {}, "EB120"),  # no option before empty map name
        ("./maps.o/map:nosuch.value[ 5...3]=1/", {}, "EB122"),  # index list before map exists
        ("./maps.o/map:nosuch.value[ 99]=x/", {}, "EB123"),  # map exists before index too large
        ("./maps.o/map:arr.bogus[ 9]=1/", {}, "EB124"),  # index too large before option
        ("./maps.o/map:arr.bogus/", {}, "EB125"),  # option before value present
        ("./maps.o/map:hmap.value/", {}, "EB126"),  # value present before map type
        ("./maps.o/map:hmap.value=abc/", {}, "EB127"),  # value type before map type
        ("./maps.o/map:arr.event=evt/", {}, "EB128"),  # event exists before map type
        ("./maps.o/map:arr.event=evt/", {"evt": EventFacts(EventKind.BPF_OUTPUT, 1, False)}, "EB129"),
        ("./maps.o/map:arr3.value=99999/", {}, "EB131"),  # value size before value width
    ],
)
def test_order(text: str, defined: dict[str, EventFacts], code: str) -> None:
    assert first_error(text, defined).code == code


def test_key_size_is_checked_before_value_size() -> None:
    spec = obj("k.o", ("small", ARRAY, 2, 3, 4))
    event = bpf_event("./k.o/map:small.value=1/")
    (d,) = check_map_terms(event, spec, {})
    assert (d.code, d.perf_message, d.span.text("./k.o/map:small.value=1/")) == (
        "EB130", "Incorrect map key size", "small")


def test_one_error_per_term_and_every_term_checked() -> None:
    text = "./maps.o/map:nosuch.value=1,map:arr.value=5,map:hmap.value=1/"
    diags = check(text)
    assert [(d.code, d.span.text(text)) for d in diags] == [("EB123", "nosuch"), ("EB129", "value")]


def test_event_terms_are_left_to_the_object_checker() -> None:
    assert check("./maps.o/map:arr.value=5,call-graph=fp/") == []


# --------------------------------------------------------------------------------------------
# value width


def test_value_too_wide_is_an_error_by_default() -> None:
    text = "./maps.o/map:arr8.value=300/"
    (d,) = check(text)
    assert (d.code, d.severity, d.span.text(text), d.perf_message) == ("EB132", Severity.ERROR, "300", None)
    assert d.message == "value 300 does not fit the 1-byte values of map 'arr8'"
    assert d.notes == ("perf 6.1 silently stores 44 (the low 8 bits)",)
    assert d.help == ("the largest value is 255 (0xff)",)


def test_value_truncated_is_a_warning_in_perf_mode() -> None:
    text = "./maps.o/map:arr8.value=300/"
    (d,) = check(text, truncate_values=True)
    assert (d.code, d.severity, d.span.text(text)) == ("WB132", Severity.WARNING, "300")
    assert d.message == "value 300 does not fit the 1-byte values of map 'arr8': perf stores 44"


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("./maps.o/map:arr8.value=255/", True),
        ("./maps.o/map:arr8.value=256/", False),
        ("./nanosleep.o/map:counts.value=0xffff/", True),
        ("./nanosleep.o/map:counts.value=0x10000/", False),
        ("./maps.o/map:arr.value=4294967295/", True),
        ("./maps.o/map:arr.value=4294967296/", False),
        ("./maps.o/map:arr64.value=0xffffffffffffffff/", True),
    ],
)
def test_value_width_limits(text: str, ok: bool) -> None:
    assert (check(text) == []) is ok


# --------------------------------------------------------------------------------------------
# event references and apply-time warnings


def test_storable_non_inheriting_event_is_clean() -> None:
    facts = {"evt": EventFacts(EventKind.BPF_OUTPUT, 1, inherit=False)}
    assert check("./maps.o/map:chan1.event=evt/", facts) == []
    assert check("./maps.o/map:channel.event[ 0]=evt/", facts) == []


def test_apply_time_warnings() -> None:
    text = "./maps.o/map:chan1.event=c/"
    diags = check(text, {"c": EventFacts(EventKind.SOFTWARE, 1, inherit=True)})
    assert [(d.code, d.severity, d.span.text(text)) for d in diags] == [
        ("WB134", Severity.WARNING, "c"),
        ("WB133", Severity.WARNING, "c"),
    ]
    assert diags[0].perf_message == "Can only put raw, hardware and BPF output event into a BPF map"
    assert diags[1].perf_message == "Doesn't support inherit event (Hint: use -i to turn off inherit)"
    assert check(text, {"c": EventFacts(EventKind.HARDWARE, 0, inherit=False)}) == []
    assert check(text, {"c": EventFacts(EventKind.RAW, 4, inherit=False)}) == []
    # a PMU whose type is the raw type (x86 'cpu') is storable
    assert check(text, {"c": EventFacts(EventKind.PMU, 4, inherit=False)}) == []


def _symbol(kind: SymbolKind, name: str, *terms: Term) -> SymbolEvent:
    return SymbolEvent(kind, name, Terms(terms, Span(0, 0)) if terms else None, None, Span(0, 0), Span(0, 0))


def _kw(key: str, value: Number | None = None) -> Term:
    return Term(TermKind.KEYWORD, key, value, Span(0, 0), Span(0, 0))


def test_facts_for_event() -> None:
    f = facts_for_event(_symbol(SymbolKind.SOFTWARE, "bpf-output", _kw("no-inherit"), _kw("name")))
    assert (f.kind, f.perf_type, f.inherit, f.storable_in_map) == (EventKind.BPF_OUTPUT, 1, False, True)
    f = facts_for_event(_symbol(SymbolKind.HARDWARE, "cycles"))
    assert (f.kind, f.perf_type, f.inherit, f.storable_in_map) == (EventKind.HARDWARE, 0, True, True)
    f = facts_for_event(_symbol(SymbolKind.SOFTWARE, "cpu-clock", _kw("inherit", Number(0, "0", Span(0, 0)))))
    assert (f.kind, f.inherit, f.storable_in_map) == (EventKind.SOFTWARE, False, False)
    f = facts_for_event(_symbol(SymbolKind.SOFTWARE, "cpu-clock"), inherit_default=False)  # perf record -i
    assert f.inherit is False
    f = facts_for_event(bpf_event("./maps.o"))
    assert (f.kind, f.perf_type) == (EventKind.BPF, 2)


# --------------------------------------------------------------------------------------------
# the plan


def plan(text: str, **kw: bool) -> list[MapUpdate]:
    event = bpf_event(text)
    return plan_map_updates(event, SPECS[event.path], **kw)


def test_plan_plain_value_sets_every_key() -> None:
    (u,) = plan("./maps.o/map:arr.value=5/")
    assert u == MapUpdate("arr", ((0, 7),), (5).to_bytes(4, "little"), None)
    assert list(range_keys(u.keys)) == list(range(8))


def test_plan_all() -> None:
    (u,) = plan("./maps.o/map:arr64.value[all]=0x1122334455667788/")
    assert u.keys == ((0, 7),)
    assert u.value == bytes.fromhex("8877665544332211")


def test_plan_lists_and_ranges_are_compacted() -> None:
    (u,) = plan("./test_bpf_map.o/map:channel.value[0,1,2,3...5]=101/")
    assert (u.keys, u.value) == (((0, 5),), (101).to_bytes(4, "little"))
    (u,) = plan("./maps.o/map:arr.value[ 6,0,2...3,3...4,0x7]=1/")
    assert u.keys == ((0, 0), (2, 4), (6, 7))
    assert list(range_keys(u.keys)) == [0, 2, 3, 4, 6, 7]


def test_plan_hex_and_sizes() -> None:
    (u,) = plan("./nanosleep.o/map:counts.value[ 0xf]=0xbeef/")
    assert (u.keys, u.value) == (((15, 15),), b"\xef\xbe")
    (u,) = plan("./maps.o/map:arr8.value[ 1...2]=0x7f/")
    assert (u.keys, u.value) == (((1, 2),), b"\x7f")


def test_plan_event_and_order() -> None:
    updates = plan("./maps.o/map:arr.value=1,map:channel.event[ 1]=evt,map:arr.value[ 0]=2/")
    assert updates == [
        MapUpdate("arr", ((0, 7),), b"\x01\x00\x00\x00", None),
        MapUpdate("channel", ((1, 1),), None, "evt"),
        MapUpdate("arr", ((0, 0),), b"\x02\x00\x00\x00", None),
    ]
    assert updates[1].span.text("./maps.o/map:arr.value=1,map:channel.event[ 1]=evt,map:arr.value[ 0]=2/") == (
        "map:channel.event[ 1]=evt")


def test_plan_truncates_only_in_perf_mode() -> None:
    with pytest.raises(EvspecError) as info:
        plan("./maps.o/map:arr8.value=300/")
    assert [d.code for d in info.value.diagnostics] == ["EB132"]
    (u,) = plan("./maps.o/map:arr8.value=300/", truncate_values=True)
    assert u.value == bytes([44])


def test_plan_refuses_invalid_terms() -> None:
    with pytest.raises(EvspecError) as info:
        plan("./maps.o/map:arr.value=1,map:nosuch.value=1,map:hmap.value=2/")
    assert [d.code for d in info.value.diagnostics] == ["EB123", "EB129"]


def test_plan_without_terms() -> None:
    assert plan("./maps.o") == []
    assert plan("./maps.o/call-graph=fp/") == []


def test_plan_keeps_a_huge_range_a_range() -> None:
    big = obj("big.o", ("arr", MapType.ARRAY, 4, 4, 1 << 20))
    event = bpf_event("./big.o/map:arr.value[0...1048575]=7/")
    (u,) = plan_map_updates(event, big)
    assert u.keys == ((0, (1 << 20) - 1),)
    assert u.value == (7).to_bytes(4, sys.byteorder)  # host order: as the programs read it
    (whole,) = plan_map_updates(bpf_event("./big.o/map:arr.value=7/"), big)
    assert whole.keys == u.keys
