"""perf's bison grammar (``util/parse-events.y``) per release, with its semantic actions.

The productions follow perf's own (perf-event-language.md §3 for 6.1, §9.1 for 4.7, §9.2 for
6.5/6.6; util/parse-events.y of 6.12 and 7.2 for ``_grammar_pmu``); the actions call
:class:`evspec.dialect.events.PerfState` (6.12+: :class:`evspec.dialect.pmu_actions.PmuState`),
record perf's errors at perf's columns, and abort the parse (YYABORT) where perf does.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from evspec.dialect.cache_names import CACHE_OPS, CACHE_RESULTS, CACHE_TYPES
from evspec.dialect.events import Evsel, Failed, PerfState
from evspec.dialect.flexscan import Loc
from evspec.dialect.lalr import Abort, Production, Tables, build
from evspec.dialect.terms import NUM, STR, USER, Term
from evspec.dialect.versions import Profile

Action = Callable[[PerfState, list, list[Loc]], object]
UINT_MASK = 0xFFFFFFFF


def _call(fn: Callable[[], object]) -> object:
    try:
        return fn()
    except Failed:
        raise Abort from None


def _first(i: int) -> Action:
    return lambda s, v, loc: v[i]


def _concat(a: int, b: int) -> Action:
    return lambda s, v, loc: [*v[a], *v[b]]


def _listed(i: int) -> Action:
    return lambda s, v, loc: [v[i]]


def _append(s: PerfState, v: list, loc: list[Loc]) -> list:
    """``LIST , ITEM``: the item added to the list in place (as perf's list_add_tail), so that a
    long list costs linear time."""
    v[0].append(v[2])
    return v[0]  # type: ignore[no-any-return]


def _none(s: PerfState, v: list, loc: list[Loc]) -> None:
    return None


# ---- events, groups, modifiers


def _event_modifier(s: PerfState, v: list, loc: list[Loc]) -> list[Evsel]:
    if not s.modifier(v[0], v[1], group=False):
        s.errors.handle(loc[1].first, "Bad modifier")
        raise Abort
    return v[0]


def _group_modifier(s: PerfState, v: list, loc: list[Loc]) -> list[Evsel]:
    if not s.modifier(v[0], v[2], group=True):
        s.errors.handle(loc[2].first, "Bad modifier")
        raise Abort
    return v[0]


def _symbol(kind: str, value_at: int = 0, terms_at: int | None = None) -> Action:
    def act(s: PerfState, v: list, loc: list[Loc]) -> object:
        terms = v[terms_at] if terms_at is not None else None
        return _call(lambda: s.add_numeric(kind, "symbol", terms))

    return act


def _value_sym(s: PerfState, v: list, loc: list[Loc]) -> tuple[str, tuple[int, int]]:
    type_, config = v[0]
    return ("hardware" if type_ == 0 else "software", (type_, config))


def _symbolic_with_terms(s: PerfState, v: list, loc: list[Loc]) -> object:
    kind, _ = v[0]
    return _call(lambda: s.add_numeric(kind, "symbol", v[2]))


def _symbolic(s: PerfState, v: list, loc: list[Loc]) -> object:
    kind, _ = v[0]
    return _call(lambda: s.add_numeric(kind, "symbol", None))


def _tool(s: PerfState, v: list, loc: list[Loc]) -> object:
    return s.add("tool", "tool")


def _cache(word_at: tuple[int, ...], terms_at: int) -> Action:
    return lambda s, v, loc: _call(lambda: s.add_cache([v[i] for i in word_at], v[terms_at]))


_LEGACY_CACHE: list[re.Pattern[str]] = []  # compiled on first use: only 6.5 and 6.6 need it


def _legacy_cache(s: PerfState, v: list, loc: list[Loc]) -> object:
    if not _LEGACY_CACHE:
        types = "|".join(re.escape(w) for w in sorted((w for g in CACHE_TYPES for w in g), key=len, reverse=True))
        ops = "|".join(re.escape(w) for w in sorted((w for g in CACHE_OPS + CACHE_RESULTS for w in g), key=len,
                                                    reverse=True))
        _LEGACY_CACHE.append(re.compile(f"({types})(?:-({ops}))?(?:-({ops}))?"))
    m = _LEGACY_CACHE[0].fullmatch(v[0])
    assert m is not None
    words = [w for w in m.groups() if w is not None]
    return _call(lambda: s.add_cache(words, v[1]))


def _breakpoint(access_at: int | None, terms_at: int | None = None) -> Action:
    def act(s: PerfState, v: list, loc: list[Loc]) -> object:
        terms = v[terms_at] if terms_at is not None else None
        if terms and not s.rules.config_attr(terms, s.errors, "common"):
            raise Abort
        return _call(lambda: s.add_breakpoint(v[access_at] if access_at is not None else None))

    return act


def _tracepoint(s: PerfState, v: list, loc: list[Loc]) -> object:
    sys, event = v[0]
    column = loc[0].first if s.profile.tracepoint_error_at_event else 0
    return _call(lambda: s.add_tracepoint(sys, event, v[1], column))


def _tp_name(s: PerfState, v: list, loc: list[Loc]) -> tuple[str, str]:
    return (v[0], v[2])


def _tp_name_dash(s: PerfState, v: list, loc: list[Loc]) -> tuple[str, str]:
    return (f"{v[0]}-{v[2]}", v[4])


def _numeric(s: PerfState, v: list, loc: list[Loc]) -> object:
    return _call(lambda: s.add_numeric("numeric", "numeric", v[3]))


def _raw(s: PerfState, v: list, loc: list[Loc]) -> object:
    return _call(lambda: s.add_numeric("raw", "raw", v[1]))


def _bpf(source: bool) -> Action:
    def act(s: PerfState, v: list, loc: list[Loc]) -> object:
        from evspec.dialect.bpf import load_bpf_event

        return _call(lambda: load_bpf_event(s, v[0], source, v[1], loc[0].first))

    return act


# ---- PMU events


def _pmu(s: PerfState, v: list, loc: list[Loc]) -> object:
    return _call(lambda: s.add_pmu_wildcard(v[0], v[1], loc[0].first if s.profile.bad_event_messages else 0))


def _pmu_plain(s: PerfState, v: list, loc: list[Loc]) -> object:
    return _call(lambda: s.add_pmu(v[0], v[1]))


def _alias(parts: tuple[int, ...], terms_at: int | None = None) -> Action:
    def act(s: PerfState, v: list, loc: list[Loc]) -> object:
        name = "-".join(v[i] for i in parts)
        terms = v[terms_at] if terms_at is not None else None
        return _call(lambda: s.multi_pmu_add(name, terms))

    return act


def _alias_in_cpu(parts: tuple[int, ...]) -> Action:
    """4.7: a kernel-PMU keyword is looked up in the "cpu" PMU only."""

    def act(s: PerfState, v: list, loc: list[Loc]) -> object:
        name = "-".join(v[i] for i in parts)
        return _call(lambda: s.add_pmu("cpu", [Term(USER, name, 1, NUM, False, 0, 0)]))

    return act


def _name_event(s: PerfState, v: list, loc: list[Loc]) -> object:
    """6.5+: ``PE_NAME sep_dc`` is an event looked up on every PMU."""
    try:
        return s.multi_pmu_add(v[0], None)
    except Failed:
        if s.profile.bad_event_messages:
            s.errors.handle(loc[0].first, "Bad event name", f"Unabled to find PMU or event on a PMU of '{v[0]}'")
        raise Abort from None


# ---- terms


def _term(type_at: int | None, key_at: int | None, value_at: int | None, array_at: int | None = None) -> Action:
    """A term with its type from token ``type_at`` (a PE_TERM) or USER, its key from ``key_at``."""

    def act(s: PerfState, v: list, loc: list[Loc]) -> Term:
        type_term = v[type_at] if type_at is not None else USER
        key = v[key_at] if key_at is not None else None
        err_term = loc[0].first
        if value_at is None:
            return Term(type_term, key, 1, NUM, True, err_term, 0)
        value = v[value_at]
        kind = NUM if isinstance(value, int) else STR
        term = Term(type_term, key, value, kind, False, err_term, loc[value_at].first)
        if array_at is not None:
            term.array = v[array_at]
        return term

    return act


def _raw_term(s: PerfState, v: list, loc: list[Loc]) -> Term:
    return Term("config", None, v[0], NUM, False, loc[0].first, 0)


def _raw_term_65(s: PerfState, v: list, loc: list[Loc]) -> Term:
    return Term("raw", "raw", v[0], NUM, False, loc[0].first, loc[0].first)


def _hw_value_term(s: PerfState, v: list, loc: list[Loc]) -> Term:
    """``NAME=<hardware symbol>``: the value becomes perf's canonical symbol name."""
    return Term(USER, v[0], "cpu-cycles", STR, False, 0, 0)


def _hw_term(s: PerfState, v: list, loc: list[Loc]) -> Term:
    return Term(USER, None, "cpu-cycles", STR, False, 0, 0)


def _hw_term_65(s: PerfState, v: list, loc: list[Loc]) -> Term:
    return Term("hardware", v[0][0], v[0][1], NUM, False, loc[0].first, 0)


def _legacy_cache_term(s: PerfState, v: list, loc: list[Loc]) -> Term:
    return Term("legacy-cache", v[0], 1, NUM, True, loc[0].first, 0)


def _drv_term(s: PerfState, v: list, loc: list[Loc]) -> Term:
    return Term("driver-config", v[0], v[0], STR, False, loc[0].first, 0)


def _array_item(s: PerfState, v: list, loc: list[Loc]) -> tuple[int, int]:
    return (v[0] & UINT_MASK, 1)


def _array_range(s: PerfState, v: list, loc: list[Loc]) -> tuple[int, int]:
    if v[2] < v[0]:
        s.quirks.append(
            f"the index range {v[0]}...{v[2]} runs backwards: perf aborts without printing a message"
        )
        raise Abort
    return (v[0] & UINT_MASK, v[2] - v[0] + 1)


# ---- the grammars


def _p(lhs: str, rhs: str, action: Action | None = None) -> Production:
    return Production(lhs, tuple(rhs.split()), action)


def _common_head(p: Profile) -> list[Production]:
    return [
        _p("start", "PE_START_EVENTS start_events", _first(1)),
        _p("start_events", "groups"),
        _p("groups", "groups , group", _concat(0, 2)),
        _p("groups", "groups , event", _concat(0, 2)),
        _p("groups", "group"),
        _p("groups", "event"),
        _p("group", "group_def : PE_MODIFIER_EVENT", _group_modifier),
        _p("group", "group_def"),
        _p("group_def", "PE_NAME { events }", _first(2)),
        _p("group_def", "{ events }", _first(1)),
        _p("events", "events , event", _concat(0, 2)),
        _p("events", "event"),
        _p("event", "event_mod"),
        _p("event_mod", "event_name PE_MODIFIER_EVENT", _event_modifier),
        _p("event_mod", "event_name"),
        _p("event_name", "PE_EVENT_NAME event_def", _first(1)),
        _p("event_name", "event_def"),
        _p("sep_dc", ":", _none),
        _p("sep_dc", "", _none),
        _p("opt_event_config", "/ event_config /", _first(1)),
        _p("opt_event_config", "/ /", _none),
        _p("opt_event_config", "", _none),
        _p("event_config", "event_config , event_term", _append),
        _p("event_config", "event_term", _listed(0)),
        _p("event_legacy_numeric", "PE_VALUE : PE_VALUE opt_event_config", _numeric),
        _p("event_legacy_raw", "PE_RAW opt_event_config", _raw),
        _p("event_legacy_tracepoint", "tracepoint_name opt_event_config", _tracepoint),
        _p("tracepoint_name", "PE_NAME : PE_NAME", _tp_name),
        _p("value_sym", "PE_VALUE_SYM_HW", _value_sym),
        _p("value_sym", "PE_VALUE_SYM_SW", _value_sym),
    ]


def _arrays() -> list[Production]:
    return [
        _p("event_term", "PE_NAME array = PE_NAME", _term(None, 0, 3, 1)),
        _p("event_term", "PE_NAME array = PE_VALUE", _term(None, 0, 3, 1)),
        _p("array", "[ array_terms ]", lambda s, v, loc: tuple(v[1])),
        _p("array", "PE_ARRAY_ALL", lambda s, v, loc: ()),
        _p("array_terms", "array_terms , array_term", _append),
        _p("array_terms", "array_term", _listed(0)),
        _p("array_term", "PE_VALUE", _array_item),
        _p("array_term", "PE_VALUE PE_ARRAY_RANGE PE_VALUE", _array_range),
    ]


def _bpf_rules() -> list[Production]:
    return [
        _p("event_def", "event_bpf_file"),
        _p("event_bpf_file", "PE_BPF_OBJECT opt_event_config", _bpf(False)),
        _p("event_bpf_file", "PE_BPF_SOURCE opt_event_config", _bpf(True)),
    ]


def _mem_classic() -> list[Production]:
    return [
        _p("event_def", "event_legacy_mem"),
        _p("event_legacy_mem", "PE_PREFIX_MEM PE_VALUE / PE_VALUE : PE_MODIFIER_BP sep_dc", _breakpoint(5)),
        _p("event_legacy_mem", "PE_PREFIX_MEM PE_VALUE / PE_VALUE sep_dc", _breakpoint(None)),
        _p("event_legacy_mem", "PE_PREFIX_MEM PE_VALUE : PE_MODIFIER_BP sep_dc", _breakpoint(3)),
        _p("event_legacy_mem", "PE_PREFIX_MEM PE_VALUE sep_dc", _breakpoint(None)),
    ]


def _cache_words() -> list[Production]:
    return [
        _p("event_def", "event_legacy_cache sep_dc"),
        _p(
            "event_legacy_cache",
            "PE_NAME_CACHE_TYPE - PE_NAME_CACHE_OP_RESULT - PE_NAME_CACHE_OP_RESULT opt_event_config",
            _cache((0, 2, 4), 5),
        ),
        _p("event_legacy_cache", "PE_NAME_CACHE_TYPE - PE_NAME_CACHE_OP_RESULT opt_event_config", _cache((0, 2), 3)),
        _p("event_legacy_cache", "PE_NAME_CACHE_TYPE opt_event_config", _cache((0,), 1)),
    ]


def _terms_classic(p: Profile) -> list[Production]:
    rules = [
        _p("event_term", "PE_NAME = PE_NAME", _term(None, 0, 2)),
        _p("event_term", "PE_NAME = PE_VALUE", _term(None, 0, 2)),
        _p("event_term", "PE_NAME = PE_VALUE_SYM_HW", _hw_value_term),
        _p("event_term", "PE_NAME", _term(None, 0, None)),
        _p("event_term", "PE_VALUE_SYM_HW", _hw_term),
        _p("event_term", "PE_TERM = PE_NAME", _term(0, None, 2)),
        _p("event_term", "PE_TERM = PE_VALUE", _term(0, None, 2)),
        _p("event_term", "PE_TERM", _term(0, None, None)),
    ]
    if p.raw_terms:
        rules.insert(0, _p("event_term", "PE_RAW", _raw_term))
    if p.drv_cfg:
        rules.append(_p("event_term", "PE_DRV_CFG_TERM", _drv_term))
    return rules


def _grammar_61(p: Profile) -> list[Production]:
    rules = _common_head(p) + [
        _p("event_def", "event_pmu"),
        _p("event_def", "event_legacy_symbol"),
        _p("event_def", "event_legacy_tracepoint sep_dc"),
        _p("event_def", "event_legacy_numeric sep_dc"),
        _p("event_def", "event_legacy_raw sep_dc"),
        _p("event_pmu", "event_pmu_name opt_pmu_config", _pmu),
        _p("event_pmu_name", "PE_NAME"),
        _p("event_pmu_name", "PE_PMU_EVENT_PRE"),
        _p("event_pmu", "PE_KERNEL_PMU_EVENT sep_dc", _alias((0,))),
        _p("event_pmu", "PE_KERNEL_PMU_EVENT opt_pmu_config", _alias((0,), 1)),
        _p("event_pmu", "PE_PMU_EVENT_PRE - PE_PMU_EVENT_SUF - PE_PMU_EVENT_SUF2 sep_dc", _alias((0, 2, 4))),
        _p("event_pmu", "PE_PMU_EVENT_PRE - PE_PMU_EVENT_SUF sep_dc", _alias((0, 2))),
        _p("opt_pmu_config", "/ event_config /", _first(1)),
        _p("opt_pmu_config", "/ /", _none),
        _p("event_legacy_symbol", "value_sym / event_config /", _symbolic_with_terms),
        _p("event_legacy_symbol", "value_sym sep_slash_slash_dc", _symbolic),
        _p("event_legacy_symbol", "PE_VALUE_SYM_TOOL sep_slash_slash_dc", _tool),
        _p("sep_slash_slash_dc", "/ /", _none),
        _p("sep_slash_slash_dc", ":", _none),
        _p("sep_slash_slash_dc", "", _none),
        _p("tracepoint_name", "PE_NAME - PE_NAME : PE_NAME", _tp_name_dash),
    ]
    rules += _cache_words() + _mem_classic() + _terms_classic(p) + _arrays() + _bpf_rules()
    return rules


def _grammar_47(p: Profile) -> list[Production]:
    rules = _common_head(p) + [
        _p("event_def", "event_pmu"),
        _p("event_def", "event_legacy_symbol"),
        _p("event_def", "event_legacy_tracepoint sep_dc"),
        _p("event_def", "event_legacy_numeric sep_dc"),
        _p("event_def", "event_legacy_raw sep_dc"),
        _p("event_pmu", "PE_NAME opt_event_config", _pmu_plain),
        _p("event_pmu", "PE_KERNEL_PMU_EVENT sep_dc", _alias_in_cpu((0,))),
        _p("event_pmu", "PE_PMU_EVENT_PRE - PE_PMU_EVENT_SUF sep_dc", _alias_in_cpu((0, 2))),
        _p("event_legacy_symbol", "value_sym / event_config /", _symbolic_with_terms),
        _p("event_legacy_symbol", "value_sym sep_slash", _symbolic),
        _p("sep_slash", "/", _none),
        _p("sep_slash", ":", _none),
        _p("sep_slash", "", _none),
        _p("tracepoint_name", "PE_NAME - PE_NAME : PE_NAME", _tp_name_dash),
    ]
    rules += _cache_words() + _mem_classic() + _terms_classic(p) + _arrays() + _bpf_rules()
    return rules


def _grammar_65(p: Profile) -> list[Production]:
    rules = _common_head(p) + [
        _p("event_def", "event_pmu"),
        _p("event_def", "event_legacy_symbol"),
        _p("event_def", "event_legacy_cache sep_dc"),
        _p("event_def", "event_legacy_mem sep_dc"),
        _p("event_def", "event_legacy_tracepoint sep_dc"),
        _p("event_def", "event_legacy_numeric sep_dc"),
        _p("event_def", "event_legacy_raw sep_dc"),
        _p("event_pmu", "PE_NAME opt_pmu_config", _pmu),
        _p("event_pmu", "PE_NAME sep_dc", _name_event),
        _p("opt_pmu_config", "/ event_config /", _first(1)),
        _p("opt_pmu_config", "/ /", _none),
        _p("event_legacy_symbol", "value_sym / event_config /", _symbolic_with_terms),
        _p("event_legacy_symbol", "value_sym sep_slash_slash_dc", _symbolic),
        _p("event_legacy_symbol", "PE_VALUE_SYM_TOOL sep_slash_slash_dc", _tool),
        _p("sep_slash_slash_dc", "/ /", _none),
        _p("sep_slash_slash_dc", ":", _none),
        _p("sep_slash_slash_dc", "", _none),
        _p("event_legacy_cache", "PE_LEGACY_CACHE opt_event_config", _legacy_cache),
        _p("event_legacy_mem", "PE_PREFIX_MEM PE_VALUE PE_BP_SLASH PE_VALUE PE_BP_COLON PE_MODIFIER_BP opt_event_config",
           _breakpoint(5, 6)),
        _p("event_legacy_mem", "PE_PREFIX_MEM PE_VALUE PE_BP_SLASH PE_VALUE opt_event_config", _breakpoint(None, 4)),
        _p("event_legacy_mem", "PE_PREFIX_MEM PE_VALUE PE_BP_COLON PE_MODIFIER_BP opt_event_config", _breakpoint(3, 4)),
        _p("event_legacy_mem", "PE_PREFIX_MEM PE_VALUE opt_event_config", _breakpoint(None, 2)),
        _p("event_term", "PE_RAW", _raw_term_65),
        _p("event_term", "name_or_raw = name_or_legacy", _term(None, 0, 2)),
        _p("event_term", "name_or_raw = PE_VALUE", _term(None, 0, 2)),
        _p("event_term", "name_or_raw = PE_TERM_HW", lambda s, v, loc: Term(USER, v[0], v[2][0], STR, False, loc[0].first, loc[2].first)),
        _p("event_term", "PE_LEGACY_CACHE", _legacy_cache_term),
        _p("event_term", "PE_NAME", _term(None, 0, None)),
        _p("event_term", "PE_TERM_HW", _hw_term_65),
        _p("event_term", "PE_TERM = name_or_legacy", _term(0, None, 2)),
        _p("event_term", "PE_TERM = PE_TERM_HW", lambda s, v, loc: Term(v[0], None, v[2][0], STR, False, loc[0].first, loc[2].first)),
        _p("event_term", "PE_TERM = PE_TERM", lambda s, v, loc: Term(v[0], None, v[2], STR, False, loc[0].first, loc[2].first)),
        _p("event_term", "PE_TERM = PE_VALUE", _term(0, None, 2)),
        _p("event_term", "PE_TERM", _term(0, None, None)),
        _p("name_or_raw", "PE_RAW", lambda s, v, loc: f"r{v[0]:x}"),
        _p("name_or_raw", "PE_NAME"),
        _p("name_or_raw", "PE_LEGACY_CACHE"),
        _p("name_or_legacy", "PE_NAME"),
        _p("name_or_legacy", "PE_LEGACY_CACHE"),
    ]  # fmt: skip
    if p.drv_cfg and p.arrays:  # 6.6's array revert also deleted the driver-config production
        rules.append(_p("event_term", "PE_DRV_CFG_TERM", _drv_term))
    if p.arrays:
        rules += _arrays()
    if p.bpf is not None:
        rules += _bpf_rules()
    return rules


# ---- perf 6.12 and later: names resolved through the PMU list (pmu_actions.PmuState)


def _pmu_call(fn: Callable[[], object]) -> object:
    from evspec.dialect.pmu_actions import Failed as PmuFailed

    try:
        return fn()
    except PmuFailed:
        raise Abort from None


def _modified(at: int, group: bool) -> Action:
    def act(s, v: list, loc: list[Loc]) -> object:
        return _pmu_call(lambda: s.modify(v[0], v[at], loc[at].first, group))

    return act


def _named_group(s, v: list, loc: list[Loc]) -> object:
    return s.group(v[2], v[0])


def _group(s, v: list, loc: list[Loc]) -> object:
    return s.group(v[1])


def _default_name(s, v: list, loc: list[Loc]) -> object:
    return s.default_name(v[1], v[0])


def _pmu_or_event(s, v: list, loc: list[Loc]) -> object:
    return _pmu_call(lambda: s.event_or_pmu(v[0], v[1], loc[0].first))


def _bare_event(s, v: list, loc: list[Loc]) -> object:
    return _pmu_call(lambda: s.bare_event(v[0], loc[0].first))


def _mem(addr: int, access: int | None, length: int | None, terms: int) -> Action:
    def act(s, v: list, loc: list[Loc]) -> object:
        return _pmu_call(lambda: s.breakpoint(
            v[addr], v[access] if access is not None else None, v[length] if length is not None else 0, v[terms]
        ))

    return act


def _pmu_tracepoint(s, v: list, loc: list[Loc]) -> object:
    sys, event = v[0]
    return _pmu_call(lambda: s.tracepoint(sys, event, v[1], loc[0].first))


def _pmu_numeric(s, v: list, loc: list[Loc]) -> object:
    return _pmu_call(lambda: s.numeric(s.numeric_type(v[0], loc[0].first), v[2], v[3]))


def _pmu_raw(s, v: list, loc: list[Loc]) -> object:
    return _pmu_call(lambda: s.numeric(4, int(v[0][1:], 16), v[1]))


def _pmu_symbol(terms_at: int | None) -> Action:
    def act(s, v: list, loc: list[Loc]) -> object:
        type_, config = v[0]
        return _pmu_call(lambda: s.numeric(type_, config, v[terms_at] if terms_at is not None else None,
                                           wildcard=type_ == 0))

    return act


def _pmu_tool(s, v: list, loc: list[Loc]) -> object:
    return s.tool(v[0])


def _pmu_cache(s, v: list, loc: list[Loc]) -> object:
    return _pmu_call(lambda: s.cache(v[0], v[1]))


def _t(type_at: int | None, key_at: int | None, value_at: int | None, term_value: bool = False) -> Action:
    """A term: its type from the PE_TERM at ``type_at`` (else a sysfs term named by ``key_at``),
    its value at ``value_at`` (none: the number 1 with no value; ``term_value``: the name of the
    PE_TERM there)."""

    def act(s, v: list, loc: list[Loc]) -> Term:
        kind = v[type_at] if type_at is not None else USER
        key = v[key_at] if key_at is not None else (kind if type_at is not None else None)
        if value_at is None:
            return Term(kind, key, 1, NUM, True, loc[0].first, 0)
        value = v[value_at]
        if isinstance(value, int):
            return Term(kind, key, value, NUM, False, loc[0].first, loc[value_at].first)
        return Term(kind, key if type_at is None else None, value, STR, False, loc[0].first, loc[value_at].first)

    return act


def _grammar_pmu(p: Profile) -> list[Production]:
    rules = [
        _p("start", "PE_START_EVENTS start_events", _first(1)),
        _p("start_events", "groups"),
        _p("groups", "groups , group", _concat(0, 2)),
        _p("groups", "groups , event", _concat(0, 2)),
        _p("groups", "group"),
        _p("groups", "event"),
        _p("group", "group_def : PE_MODIFIER_EVENT", _modified(2, True)),
        _p("group", "group_def"),
        _p("group_def", "PE_NAME { events }", _named_group),
        _p("group_def", "{ events }", _group),
        _p("events", "events , event", _concat(0, 2)),
        _p("events", "event"),
        _p("event", "event_mod"),
        _p("event_mod", "event_name PE_MODIFIER_EVENT", _modified(1, False)),
        _p("event_mod", "event_name"),
        _p("event_name", "PE_EVENT_NAME event_def", _default_name),
        _p("event_name", "event_def"),
        _p("event_def", "event_pmu"),
    ]
    if p.symbol_tokens:
        rules += [_p("event_def", "event_legacy_symbol"), _p("event_def", "event_legacy_cache sep_dc")]
    rules += [
        _p("event_def", "event_legacy_mem sep_dc"),
        _p("event_def", "event_legacy_tracepoint sep_dc"),
        _p("event_def", "event_legacy_numeric sep_dc"),
        _p("event_def", "event_legacy_raw sep_dc"),
        _p("event_pmu", "PE_NAME opt_pmu_config", _pmu_or_event),
        _p("event_pmu", "PE_NAME sep_dc", _bare_event),
    ]
    if p.symbol_tokens:
        rules += [
            _p("value_sym", "PE_VALUE_SYM_HW"),
            _p("value_sym", "PE_VALUE_SYM_SW"),
            _p("event_legacy_symbol", "value_sym / event_config /", _pmu_symbol(2)),
            _p("event_legacy_symbol", "value_sym sep_slash_slash_dc", _pmu_symbol(None)),
            _p("event_legacy_symbol", "PE_VALUE_SYM_TOOL sep_slash_slash_dc", _pmu_tool),
            _p("event_legacy_cache", "PE_LEGACY_CACHE opt_event_config", _pmu_cache),
        ]
    rules += [
        _p("event_legacy_mem", "PE_PREFIX_MEM PE_VALUE PE_BP_SLASH PE_VALUE PE_BP_COLON PE_MODIFIER_BP opt_event_config",
           _mem(1, 5, 3, 6)),
        _p("event_legacy_mem", "PE_PREFIX_MEM PE_VALUE PE_BP_SLASH PE_VALUE opt_event_config", _mem(1, None, 3, 4)),
        _p("event_legacy_mem", "PE_PREFIX_MEM PE_VALUE PE_BP_COLON PE_MODIFIER_BP opt_event_config", _mem(1, 3, None, 4)),
        _p("event_legacy_mem", "PE_PREFIX_MEM PE_VALUE opt_event_config", _mem(1, None, None, 2)),
        _p("event_legacy_tracepoint", "tracepoint_name opt_event_config", _pmu_tracepoint),
        _p("tracepoint_name", "PE_NAME : PE_NAME", _tp_name),
        _p("event_legacy_numeric", "PE_VALUE : PE_VALUE opt_event_config", _pmu_numeric),
        _p("event_legacy_raw", "PE_RAW opt_event_config", _pmu_raw),
        _p("opt_event_config", "/ event_config /", _first(1)),
        _p("opt_event_config", "/ /", _none),
        _p("opt_event_config", "", _none),
        _p("opt_pmu_config", "/ event_config /", _first(1)),
        _p("opt_pmu_config", "/ /", _none),
        _p("event_config", "event_config , event_term", _append),
        _p("event_config", "event_term", _listed(0)),
        _p("name_or_raw", "PE_RAW"),
        _p("name_or_raw", "PE_NAME"),
    ]  # fmt: skip
    if p.symbol_tokens:
        rules += [
            _p("name_or_raw", "PE_LEGACY_CACHE"),
            _p("name_or_raw", "PE_TERM_HW", lambda s, v, loc: v[0][0]),
        ]
    rules += [
        _p("event_term", "PE_RAW", lambda s, v, loc: Term("raw", "raw", v[0], STR, False, loc[0].first, loc[0].first)),
        _p("event_term", "name_or_raw = name_or_raw", _t(None, 0, 2)),
        _p("event_term", "name_or_raw = PE_VALUE", _t(None, 0, 2)),
    ]
    if p.symbol_tokens:
        rules.append(_p("event_term", "PE_LEGACY_CACHE",
                        lambda s, v, loc: Term("legacy-cache", v[0], 1, NUM, True, loc[0].first, 0)))
    rules.append(_p("event_term", "PE_NAME", _t(None, 0, None)))
    if p.symbol_tokens:
        rules.append(_p("event_term", "PE_TERM_HW",
                        lambda s, v, loc: Term("hardware", v[0][0], v[0][1], NUM, False, loc[0].first, 0)))
    rules += [
        _p("event_term", "PE_TERM = name_or_raw", _t(0, None, 2)),
        _p("event_term", "PE_TERM = PE_TERM", _t(0, None, 2)),
        _p("event_term", "PE_TERM = PE_VALUE", _t(0, None, 2)),
        _p("event_term", "PE_TERM", _t(0, None, None)),
        _p("event_term", "PE_DRV_CFG_TERM",
           lambda s, v, loc: Term("driver-config", v[0], v[0], STR, False, loc[0].first, 0)),
        _p("sep_dc", ":", _none),
        _p("sep_dc", "", _none),
    ]  # fmt: skip
    if p.symbol_tokens:
        rules += [
            _p("sep_slash_slash_dc", "/ /", _none),
            _p("sep_slash_slash_dc", ":", _none),
            _p("sep_slash_slash_dc", "", _none),
        ]
    return rules


_TABLES: dict[tuple[str, object], Tables] = {}


def tables(p: Profile) -> Tables:
    """The LALR tables of ``p``'s grammar, built once per grammar (7.2 and 7.3 share theirs)."""
    key: tuple[str, object] = ("pmu", p.symbol_tokens) if p.pmu_names else ("classic", p.version)
    found = _TABLES.get(key)
    if found is None:
        found = _TABLES[key] = _build(p)
    return found


def _build(p: Profile) -> Tables:
    if p.pmu_names:
        return build("start", _grammar_pmu(p))
    if p.version == "4.7":
        prods = _grammar_47(p)
    elif p.legacy_cache_token:
        prods = _grammar_65(p)
    else:
        prods = _grammar_61(p)
    return build("start", prods)
