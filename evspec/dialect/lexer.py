"""perf's event lexer (``util/parse-events.l``) for each emulated release, on the flex engine.

The rules are written in perf's order, since order decides ties (perf-event-language.md §2):
start conditions EVENT (exclusive: cuts the event text out for its name), INITIAL, CONFIG
(inclusive: inside ``/terms/``), ARRAY (exclusive: index lists) and MEM (exclusive: breakpoints).
Machine knowledge enters in two places, as in perf: names are classified against the PMU alias
table, and a word ending in ``.o``/``.c``/``.obj`` is a BPF object only if ``stat()`` finds it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from evspec.compiler.attr import CACHE_OPS, CACHE_RESULTS, CACHE_TYPES
from evspec.dialect.flexscan import (
    INITIAL,
    Cursor,
    Loc,
    Rule,
    Scanner,
    Token,
    literals,
    rewind,
    token,
    unput_first,
    user_reject,
)
from evspec.dialect.pmu_symbols import PmuSymbols, SymbolKind
from evspec.dialect.versions import (
    BPF_OUTPUT,
    CGROUP_SWITCHES,
    HARDWARE_SYMBOLS,
    INTERNAL_TERMS,
    TOOL_SYMBOLS,
    Profile,
)

EVENT, CONFIG, ARRAY, MEM = "event", "config", "array", "mem"
U64_MAX = (1 << 64) - 1

_GROUP = r"[^,{}/]*\{[^}]*\}[^,{}/]*"
_EVENT_PMU = r"[^,{}/]+/[^/]*/[^,{}/]*"
_EVENT = r"[^,{}/]+"
_BPF_OBJECT = r"[^,{}]+\.(?:o|bpf)[a-zA-Z0-9._]*"
_BPF_SOURCE = r"[^,{}]+\.c[a-zA-Z0-9._]*"
_BPF_OBJECT_GREEDY = r".*\.(?:o|bpf)"
_BPF_SOURCE_GREEDY = r".*\.c"
_NAME_MINUS = r"[a-zA-Z_*?][a-zA-Z0-9\-_*?.:]*"
_NAME_TAG = r"'[a-zA-Z_*?\[\]][a-zA-Z0-9_*?\-,.\[\]:=]*'"
_DRV_CFG = r"@[a-zA-Z0-9_.]+(?:=[a-zA-Z0-9_*?.:]+)?"
_MODIFIER_BP = r"[rwx]{1,3}"


def _words(groups: tuple[tuple[str, ...], ...]) -> tuple[str, ...]:
    return tuple(w for g in groups for w in g)


def _symbols(table: tuple[tuple[tuple[str, ...], int], ...]) -> dict[str, int]:
    return {word: config for words, config in table for word in words}


@dataclass(frozen=True, slots=True)
class LexResult:
    tokens: list[Token]
    echoed: str  # what flex's default rule printed to stdout
    skipped: tuple[int, ...]  # columns of characters the catch-all rule ignored
    not_bpf: tuple[str, ...]  # words that looked like BPF objects but failed perf's suffix/stat() test


@lru_cache(maxsize=8)
def _scanner(p: Profile) -> Scanner:
    rules: list[Rule] = []

    def add(name: str, pattern: str | re.Pattern[str], *states: str, trail: str | None = None, reject: bool = False) -> None:
        pat = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)
        rules.append(Rule(name, pat, frozenset(states), re.compile(trail) if trail else None, reject))

    bpf_object, bpf_source = (
        (_BPF_OBJECT_GREEDY, _BPF_SOURCE_GREEDY) if p.bpf == "greedy" else (_BPF_OBJECT, _BPF_SOURCE)
    )
    # <event>
    add("group", _GROUP, EVENT)
    add("event_name", _EVENT_PMU, EVENT)
    if p.bpf is not None:
        add("event_name", bpf_object, EVENT)
        add("event_name", bpf_source, EVENT)
    add("event_name", _EVENT, EVENT)
    if p.event_comma:
        add(",", ",", EVENT)
    # <array>
    if p.arrays:
        add("]", r"\]", ARRAY)
        add("value10", r"[0-9]+", ARRAY)
        add("value16", r"0x[a-fA-F0-9]+", ARRAY)
        add(",", ",", ARRAY)
        add("PE_ARRAY_RANGE", r"\.\.\.", ARRAY)
    # <config>
    keywords = [t for t in p.terms if t not in INTERNAL_TERMS]
    add("term", literals(*keywords), CONFIG)
    if p.hardware_terms:
        add("hw_term", literals(*_words(tuple(w for w, _ in HARDWARE_SYMBOLS))), CONFIG)
    if p.raw_terms:
        add("raw", r"r[a-fA-F0-9]+", CONFIG)
        add("raw", r"r0x[a-fA-F0-9]+", CONFIG)
    add(",", ",", CONFIG)
    add("/config_end", "/", CONFIG)
    if p.legacy_cache_token:
        add("legacy_cache", _legacy_cache_pattern(), CONFIG)
    add("PE_NAME", _NAME_MINUS, CONFIG)
    if p.arrays:
        add("PE_ARRAY_ALL", r"\[all\]", CONFIG)
        add("[", r"\[", CONFIG)
    if p.drv_cfg:
        add("drv_cfg", _DRV_CFG, CONFIG)
    # <mem>
    add("PE_MODIFIER_BP", _MODIFIER_BP, MEM)
    if p.mem_trailing_context:
        add("PE_BP_COLON", ":", MEM, trail=_MODIFIER_BP)
        add("PE_BP_SLASH", "/", MEM, trail=r"[0-9]")
        add("/mem_config", "/", MEM, trail=r"[^0-9]")
    else:
        add("mem_colon", ":", MEM)
        add("mem_slash", "/", MEM)
    add("value10", r"[0-9]+", MEM)
    add("value16", r"0x[a-fA-F0-9]+", MEM)
    add("mem_exit", r".", MEM)
    # INITIAL (and the inclusive CONFIG)
    add("sym_hw", literals(*_words(tuple(w for w, _ in HARDWARE_SYMBOLS))))
    add("sym_sw", literals(*_words(tuple(w for w, _ in p.software))))
    if p.tools:
        add("sym_tool", literals(*_words(tuple(w for w, _ in TOOL_SYMBOLS))))
    add("sym_sw", literals(*_words(tuple(w for w, _ in BPF_OUTPUT + (CGROUP_SWITCHES if p.tools else ())))))
    if p.kernel_pmu_keywords is not None:
        add("PE_KERNEL_PMU_EVENT", p.kernel_pmu_keywords)
    if p.legacy_cache_token:
        add("legacy_cache", _legacy_cache_pattern())
    else:
        add("PE_NAME_CACHE_TYPE", literals(*_words(CACHE_TYPES)))
        add("PE_NAME_CACHE_OP_RESULT", literals(*_words(CACHE_OPS + CACHE_RESULTS)))
    add("mem:", "mem:")
    add("raw", r"r[a-fA-F0-9]+")
    add("value10", r"[0-9]+")
    add("value16", r"0x[a-fA-F0-9]+")
    add("PE_MODIFIER_EVENT", f"[{p.modifier_letters}]+")
    if p.bpf is not None:
        add("PE_BPF_OBJECT", bpf_object, reject=p.bpf == "checked")
        add("PE_BPF_SOURCE", bpf_source, reject=p.bpf == "checked")
    add("name", p.name_pattern)
    if p.name_tag:
        add("name_tag", _NAME_TAG)
    add("/", "/")
    add("-", "-")
    add(",", ",")
    add(":", ":")
    add("{", r"\{")
    add("}", r"\}")
    add("=", "=")
    add("ignore", r"\n")
    add("ignore", r".")
    return Scanner(tuple(rules), exclusive=frozenset({EVENT, ARRAY, MEM}), inclusive=frozenset({CONFIG}))


def _legacy_cache_pattern() -> str:
    types = "|".join(re.escape(w) for w in sorted(_words(CACHE_TYPES), key=len, reverse=True))
    ops = "|".join(re.escape(w) for w in sorted(_words(CACHE_OPS + CACHE_RESULTS), key=len, reverse=True))
    return f"(?:{types})(?:-(?:{ops}))?(?:-(?:{ops}))?"


def _strtoull(text: str, base: int) -> int | None:
    value = int(text, base)
    return value if value <= U64_MAX else None


def is_bpf_suffix(text: str) -> bool:
    """perf 6.1's isbpf_suffix: ``.o``, ``.c`` or ``.obj`` (not ``.bpf``)."""
    return len(text) >= 2 and (text.endswith((".c", ".o")) or (len(text) > 4 and text.endswith(".obj")))


def stat_in(cwd: str | os.PathLike[str] | None) -> Callable[[str], bool]:
    """``stat()`` of a lexeme (latin-1 text of its bytes), relative to ``cwd``."""
    base = os.fsencode(os.fspath(cwd)) if cwd is not None else b"."

    def exists(text: str) -> bool:
        raw = text.encode("latin-1")
        try:
            os.stat(os.path.join(base, raw) if not raw.startswith(b"/") else raw)
        except (OSError, ValueError):
            return False
        return True

    return exists


def lex(text: str, p: Profile, symbols: PmuSymbols, exists: Callable[[str], bool]) -> LexResult:
    """Tokens of ``text`` (latin-1 characters = the bytes perf sees), the end token last."""
    sw = _symbols(p.software + BPF_OUTPUT + CGROUP_SWITCHES)
    hw = _symbols(HARDWARE_SYMBOLS)
    tools = _symbols(TOOL_SYMBOLS)

    def classify(cur: Cursor, lexeme: str) -> Token:
        kind = symbols.classify(lexeme) if p.pmu_symbols else None
        return token(cur, kind.value if kind is not None else "PE_NAME", lexeme, lexeme)

    def value(cur: Cursor, lexeme: str, digits: str, base: int, kind: str = "PE_VALUE") -> Token:
        number = _strtoull(digits, base)
        if number is None:
            return token(cur, "PE_ERROR", None, lexeme)
        return token(cur, kind, number, lexeme)

    skipped: list[int] = []
    not_bpf: list[str] = []

    def act(cur: Cursor, lexeme: str, rule: Rule) -> Token | None:
        name = rule.name
        if name == "group":
            cur.begin(INITIAL)
            rewind(cur, lexeme)
            return None
        if name == "event_name":
            cur.begin(INITIAL)
            tok = token(cur, "PE_EVENT_NAME", lexeme, lexeme)
            rewind(cur, lexeme)
            return tok
        if name in ("value10", "value16"):
            return value(cur, lexeme, lexeme, 10 if name == "value10" else 16)
        if name == "raw":
            if p.raw_symbol_check and symbols.classify(lexeme) is SymbolKind.SYMBOL:
                return token(cur, "PE_NAME", lexeme, lexeme)
            return value(cur, lexeme, lexeme[1:], 16, "PE_RAW")
        if name == "term":
            return token(cur, "PE_TERM", lexeme, lexeme)
        if name == "hw_term":
            return token(cur, "PE_TERM_HW", (lexeme, hw[lexeme]), lexeme)
        if name == "sym_hw":
            return token(cur, "PE_VALUE_SYM_HW", (0, hw[lexeme]), lexeme)
        if name == "sym_sw":
            return token(cur, "PE_VALUE_SYM_SW", (1, sw[lexeme]), lexeme)
        if name == "sym_tool":
            return token(cur, "PE_VALUE_SYM_TOOL", tools[lexeme], lexeme)
        if name == "legacy_cache":
            return token(cur, "PE_LEGACY_CACHE", lexeme, lexeme)
        if name == "mem:":
            cur.begin(MEM)
            return token(cur, "PE_PREFIX_MEM", lexeme, lexeme)
        if name == "mem_exit":
            unput_first(cur)
            cur.begin(INITIAL)
            return None
        if name in ("PE_BPF_OBJECT", "PE_BPF_SOURCE"):
            if p.bpf == "checked" and not (is_bpf_suffix(lexeme) and exists(lexeme)):
                not_bpf.append(lexeme)
                user_reject(cur, lexeme)
            return token(cur, name, lexeme, lexeme)
        if name == "name":
            return classify(cur, lexeme)
        if name == "name_tag":
            return token(cur, "PE_NAME", lexeme[1:-1], lexeme)
        if name == "drv_cfg":
            return token(cur, "PE_DRV_CFG_TERM", lexeme[1:], lexeme)
        if name == "/":
            cur.begin(CONFIG)
            return token(cur, "/", None, lexeme)
        if name == "/config_end":
            cur.begin(INITIAL)
            return token(cur, "/", None, lexeme)
        if name == "/mem_config":
            cur.begin(CONFIG)
            return token(cur, "/", None, lexeme)
        if name in (",", "{"):
            if not rule.states:
                cur.begin(EVENT)
            return token(cur, name, None, lexeme)
        if name == "]":
            cur.begin(CONFIG)
            return token(cur, "]", None, lexeme)
        if name == "[":
            cur.begin(ARRAY)
            return token(cur, "[", None, lexeme)
        if name in ("mem_colon", "mem_slash"):
            return token(cur, lexeme, None, lexeme)
        if name == "ignore":
            if lexeme != "\n":
                skipped.append(cur.first)
            return None
        return token(cur, name, lexeme, lexeme)

    def on_eof(cur: Cursor) -> None:
        cur.begin(INITIAL)

    scanner = _scanner(p)
    tokens, cur = scanner.scan(text, EVENT, act, on_eof)
    start = Token("PE_START_EVENTS", None, Loc(1, 1), "")
    return LexResult([start, *tokens], "".join(cur.echoed), tuple(skipped), tuple(dict.fromkeys(not_bpf)))
