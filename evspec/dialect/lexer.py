"""perf's event lexer (``util/parse-events.l``) for each emulated release, on the flex engine.

The rules are written in perf's order, since order decides ties (perf-event-language.md §2):
start conditions EVENT (exclusive: cuts the event text out for its name), INITIAL, CONFIG
(inclusive: inside ``/terms/``), ARRAY (exclusive: index lists) and MEM (exclusive: breakpoints).
Machine knowledge enters in two places, as in perf up to 6.6: names are classified against the PMU
alias table, and a word ending in ``.o``/``.c``/``.obj`` is a BPF object only if ``stat()`` finds it.
perf 6.12 and later lex without the machine: names that may start with a digit, quoted names,
modifiers checked by the lexer (a duplicate letter is an error there), bounded hex numbers and
numbers that overflow reported as "Bad base N number" (``_scanner_pmu``).

Tokens are made as the parser asks for them (``Lexing``), so that what the lexer records or echoes
happens in perf's order relative to the parser's actions.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator

from evspec.dialect.actions.cache_names import CACHE_OPS, CACHE_RESULTS, CACHE_TYPES
from evspec.dialect.actions.errors import ErrorSlot
from evspec.dialect.actions.pmu_symbols import PmuSymbols, SymbolKind
from evspec.dialect.engine.cint import read_unsigned
from evspec.dialect.engine.flexscan import (
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


class Lexing:
    """The tokens of one string as the parser pulls them, and what the lexer did on the way."""

    __slots__ = ("tokens", "_cursor", "_source", "skipped", "_not_bpf")

    def __init__(self, cursor: Cursor, source: Iterator[Token], skipped: list[int], not_bpf: list[str]) -> None:
        self.tokens: list[Token] = [Token("PE_START_EVENTS", None, Loc(1, 1), "")]  # read so far
        self._cursor = cursor
        self._source = source
        self.skipped = skipped  # columns of characters the catch-all rule ignored
        self._not_bpf = not_bpf

    def __iter__(self) -> Iterator[Token]:
        yield self.tokens[0]
        for tok in self._source:
            self.tokens.append(tok)
            yield tok

    @property
    def echoed(self) -> str:
        """What flex's default rule printed to stdout (of the part of the string read)."""
        return "".join(self._cursor.echoed)

    @property
    def not_bpf(self) -> tuple[str, ...]:
        """Words that looked like BPF objects but failed perf's suffix/stat() test."""
        return tuple(dict.fromkeys(self._not_bpf))


# the modifier letters' names in perf's struct parse_events_modifier (6.12+ name duplicates by them)
MODIFIER_FIELDS = {
    "u": "user", "k": "kernel", "h": "hypervisor", "I": "non_idle", "G": "guest", "H": "host",
    "P": "precise_max", "S": "sample_read", "D": "pinned", "W": "weak", "e": "exclusive", "b": "bpf",
    "R": "retire_lat", "X": "dont_regroup",
}  # fmt: skip


_SCANNERS: dict[str, Scanner] = {}


def _scanner(p: Profile) -> Scanner:
    """``p``'s scanner, built once per release (hashing a Profile costs more than a lookup)."""
    found = _SCANNERS.get(p.version)
    if found is None:
        found = _SCANNERS[p.version] = _scanner_pmu(p) if p.pmu_names else _scanner_classic(p)
    return found


def _scanner_classic(p: Profile) -> Scanner:
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


_TERM_NAME_72 = r"[a-zA-Z0-9_*?\[\]][a-zA-Z0-9_*?.\[\]!\-:]*"
_QUOTED_612 = r"'[a-zA-Z0-9_*?\[\]][a-zA-Z0-9_*?\-,.\[\]:=]*'"
_QUOTED_72 = r"'[a-zA-Z0-9_*?\[\]][a-zA-Z0-9_*?.\[\]!\-:,.=]*'"
_HEX16 = r"[a-fA-F0-9]{1,16}"


def _scanner_pmu(p: Profile) -> Scanner:
    """perf 6.12+'s parse-events.l (7.2 dropped the symbol and cache tokens)."""
    rules: list[Rule] = []

    def add(name: str, pattern: str | re.Pattern[str], *states: str, trail: str | None = None) -> None:
        pat = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)
        rules.append(Rule(name, pat, frozenset(states), re.compile(trail) if trail else None))

    hw_words = _words(tuple(w for w, _ in HARDWARE_SYMBOLS))
    # <event>
    add("group", _GROUP, EVENT)
    add("event_name", _EVENT_PMU, EVENT)
    add("event_name", _EVENT, EVENT)
    add(",", ",", EVENT)
    # <config>
    add("term", literals(*(t for t in p.terms if t not in INTERNAL_TERMS)), CONFIG)
    if p.symbol_tokens:
        add("hw_term", literals(*hw_words), CONFIG)
    add("raw", f"r{_HEX16}", CONFIG)
    add("raw", f"r0x{_HEX16}", CONFIG)
    add(",", ",", CONFIG)
    add("/config_end", "/", CONFIG)
    if p.symbol_tokens:
        add("legacy_cache", _legacy_cache_pattern(), CONFIG)
        add("PE_NAME", _NAME_MINUS, CONFIG)
    else:
        add("value10", r"[0-9]+", CONFIG)
        add("value16", f"0x{_HEX16}", CONFIG)
        add("PE_NAME", _TERM_NAME_72, CONFIG)
    add("drv_cfg", _DRV_CFG, CONFIG)
    # <mem>
    add("PE_MODIFIER_BP", _MODIFIER_BP, MEM)
    add("PE_BP_COLON", ":", MEM, trail=_MODIFIER_BP)
    add("PE_BP_SLASH", "/", MEM, trail=r"[0-9]")
    add("/mem_config", "/", MEM, trail=r"[^0-9]")
    add("value10", r"[0-9]+", MEM)
    add("value16", f"0x{_HEX16}", MEM)
    add("mem_exit", r".", MEM)
    # INITIAL (and the inclusive CONFIG)
    if p.symbol_tokens:
        add("sym_hw", literals(*hw_words))
        add("sym_sw", literals(*_words(tuple(w for w, _ in p.software))))
        add("sym_tool", literals(*_words(tuple(w for w, _ in TOOL_SYMBOLS))))
        add("sym_sw", literals(*_words(tuple(w for w, _ in BPF_OUTPUT + CGROUP_SWITCHES))))
        add("legacy_cache", _legacy_cache_pattern())
    add("mem:", "mem:")
    add("raw", f"r{_HEX16}")
    add("value10", r"[0-9]+")
    add("value16", f"0x{_HEX16}")
    add("modifier", f"[{p.modifier_letters}]{{1,{p.modifier_run}}}")
    add("name", p.name_pattern)
    add("name_tag", _QUOTED_612 if p.symbol_tokens else _QUOTED_72)
    add("/", "/")
    add(",", ",")
    add(":", ":")
    add("{", r"\{")
    add("}", r"\}")
    add("=", "=")
    add("ignore", r"\n")
    add("ignore", r".")
    return Scanner(tuple(rules), exclusive=frozenset({EVENT, MEM}), inclusive=frozenset({CONFIG}),
                   newline_resets_column=True)


def _legacy_cache_pattern() -> str:
    types = "|".join(re.escape(w) for w in sorted(_words(CACHE_TYPES), key=len, reverse=True))
    ops = "|".join(re.escape(w) for w in sorted(_words(CACHE_OPS + CACHE_RESULTS), key=len, reverse=True))
    return f"(?:{types})(?:-(?:{ops}))?(?:-(?:{ops}))?"


def _strtoull(text: str, base: int) -> int | None:
    value = read_unsigned(text, base)
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


def lex(
    text: str, p: Profile, symbols: PmuSymbols, exists: Callable[[str], bool], errors: ErrorSlot | None = None
) -> Lexing:
    """Tokens of ``text`` (latin-1 characters = the bytes perf sees), the end token last, made as
    they are read; ``errors`` receives what perf 6.12+'s lexer records."""
    sw = _symbols(p.software + BPF_OUTPUT + CGROUP_SWITCHES)
    hw = _symbols(HARDWARE_SYMBOLS)
    tools = _symbols(TOOL_SYMBOLS)
    slot = errors if errors is not None else ErrorSlot(2)

    def classify(cur: Cursor, lexeme: str) -> Token:
        kind = symbols.classify(lexeme) if p.pmu_symbols else None
        return token(cur, kind.value if kind is not None else "PE_NAME", lexeme, lexeme)

    def value(cur: Cursor, lexeme: str, digits: str, base: int, kind: str = "PE_VALUE") -> Token:
        number = _strtoull(digits, base)
        if number is None:
            if p.bounded_numbers:
                slot.handle(cur.first, f'Bad base {base} number "{lexeme}"')
            return token(cur, "PE_ERROR", None, lexeme)
        return token(cur, kind, number, lexeme)

    def modifiers(cur: Cursor, lexeme: str) -> Token:
        """perf 6.12+'s modifiers(): a letter twice, or a fourth 'p', is an error at that letter."""
        seen: set[str] = set()
        precise = 0
        for i, letter in enumerate(lexeme):
            if letter == "p":
                precise += 1
                if precise > 3:
                    slot.handle(cur.first + i, "Maximum precise value is 3")
                    return token(cur, "PE_ERROR", None, lexeme)
                continue
            if letter in seen:
                slot.handle(cur.first + i, f"Duplicate modifier '{letter}' ({MODIFIER_FIELDS[letter]})")
                return token(cur, "PE_ERROR", None, lexeme)
            seen.add(letter)
        return token(cur, "PE_MODIFIER_EVENT", lexeme, lexeme)

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
            if p.pmu_names:
                return token(cur, "PE_RAW", lexeme, lexeme)
            if p.raw_symbol_check and symbols.classify(lexeme) is SymbolKind.SYMBOL:
                return token(cur, "PE_NAME", lexeme, lexeme)
            return value(cur, lexeme, lexeme[1:], 16, "PE_RAW")
        if name == "modifier":
            return modifiers(cur, lexeme)
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

    cursor = Cursor(text, state=EVENT)
    return Lexing(cursor, _scanner(p).tokens(cursor, act, on_eof), skipped, not_bpf)
