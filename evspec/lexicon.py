"""Word tables of the event language: built-in event names, cache words, terms, modifiers.

Facts from perf 7.3 (COMPAT 1.15: today's perf is the reference): its tool, software and legacy
hardware and cache event tables (tools/perf/pmu-events/arch/common/common/*.json and
make_legacy_cache.py), its term keywords and its modifier letters (util/parse-events.l). Event
names are matched case-insensitively, as perf 7.3 looks them up; term keywords and modifier
letters are case-sensitive.
"""

from __future__ import annotations

import re
from enum import Enum
from functools import lru_cache

from evspec.ast import SymbolKind
from evspec.span import Slotted

# --------------------------------------------------------------------------------------------
# built-in symbolic events: spelling -> (kind, canonical perf name)

HARDWARE_EVENTS: dict[str, str] = {
    "cpu-cycles": "cpu-cycles",
    "cycles": "cpu-cycles",
    "instructions": "instructions",
    "cache-references": "cache-references",
    "cache-misses": "cache-misses",
    "branch-instructions": "branch-instructions",
    "branches": "branch-instructions",
    "branch-misses": "branch-misses",
    "bus-cycles": "bus-cycles",
    "stalled-cycles-frontend": "stalled-cycles-frontend",
    "idle-cycles-frontend": "stalled-cycles-frontend",
    "stalled-cycles-backend": "stalled-cycles-backend",
    "idle-cycles-backend": "stalled-cycles-backend",
    "ref-cycles": "ref-cycles",
}

SOFTWARE_EVENTS: dict[str, str] = {
    "cpu-clock": "cpu-clock",
    "task-clock": "task-clock",
    "page-faults": "page-faults",
    "faults": "page-faults",
    "minor-faults": "minor-faults",
    "major-faults": "major-faults",
    "context-switches": "context-switches",
    "cs": "context-switches",
    "cpu-migrations": "cpu-migrations",
    "migrations": "cpu-migrations",
    "alignment-faults": "alignment-faults",
    "emulation-faults": "emulation-faults",
    "dummy": "dummy",
    "bpf-output": "bpf-output",
    "cgroup-switches": "cgroup-switches",
}

#: the events of perf's ``tool`` PMU on x86, in its order (config = position + 1; ``slots``, the
#: tenth, exists only on arm64)
TOOL_EVENT_ORDER: tuple[str, ...] = (
    "duration_time", "user_time", "system_time", "has_pmem", "num_cores", "num_cpus",
    "num_cpus_online", "num_dies", "num_packages", "slots", "smt_on", "system_tsc_freq", "core_wide",
    "target_cpu",
)  # fmt: skip
TOOL_EVENTS: frozenset[str] = frozenset(TOOL_EVENT_ORDER) - {"slots"}
#: the tool events perf 6.1 knew (software dummy evsels read by perf itself)
TOOL_EVENTS_61: frozenset[str] = frozenset({"duration_time", "user_time", "system_time"})


def symbol_kind(word: str) -> SymbolKind | None:
    """The kind of a built-in symbolic event name (any letter case), or None."""
    lower = word.lower()
    if lower in HARDWARE_EVENTS:
        return SymbolKind.HARDWARE
    if lower in SOFTWARE_EVENTS:
        return SymbolKind.SOFTWARE
    if lower in TOOL_EVENTS:
        return SymbolKind.TOOL
    return None


def symbol_name(word: str) -> str:
    """perf's canonical name of a built-in symbolic event (``CS`` -> ``context-switches``)."""
    lower = word.lower()
    return HARDWARE_EVENTS.get(lower) or SOFTWARE_EVENTS.get(lower) or lower


# --------------------------------------------------------------------------------------------
# cache events: TYPE[-OP_OR_RESULT[-OP_OR_RESULT]]


class CacheType(str, Enum):
    L1D = "L1-dcache"
    L1I = "L1-icache"
    LL = "LLC"
    DTLB = "dTLB"
    ITLB = "iTLB"
    BPU = "branch"
    NODE = "node"


class CacheOp(str, Enum):
    READ = "load"
    WRITE = "store"
    PREFETCH = "prefetch"


class CacheResult(str, Enum):
    ACCESS = "refs"
    MISS = "misses"


CACHE_TYPES: dict[str, CacheType] = {
    "L1-dcache": CacheType.L1D, "l1-d": CacheType.L1D, "l1d": CacheType.L1D, "L1-data": CacheType.L1D,
    "L1-icache": CacheType.L1I, "l1-i": CacheType.L1I, "l1i": CacheType.L1I,
    "L1-instruction": CacheType.L1I,
    "LLC": CacheType.LL, "L2": CacheType.LL,
    "dTLB": CacheType.DTLB, "d-tlb": CacheType.DTLB, "Data-TLB": CacheType.DTLB,
    "iTLB": CacheType.ITLB, "i-tlb": CacheType.ITLB, "Instruction-TLB": CacheType.ITLB,
    "branch": CacheType.BPU, "branches": CacheType.BPU, "bpu": CacheType.BPU, "btb": CacheType.BPU,
    "bpc": CacheType.BPU,
    "node": CacheType.NODE,
}

CACHE_OPS: dict[str, CacheOp] = {
    "load": CacheOp.READ, "loads": CacheOp.READ, "read": CacheOp.READ,
    "store": CacheOp.WRITE, "stores": CacheOp.WRITE, "write": CacheOp.WRITE,
    "prefetch": CacheOp.PREFETCH, "prefetches": CacheOp.PREFETCH,
    "speculative-read": CacheOp.PREFETCH, "speculative-load": CacheOp.PREFETCH,
}

CACHE_RESULTS: dict[str, CacheResult] = {
    "refs": CacheResult.ACCESS, "Reference": CacheResult.ACCESS, "ops": CacheResult.ACCESS,
    "access": CacheResult.ACCESS,
    "misses": CacheResult.MISS, "miss": CacheResult.MISS,
}

# Which operations each cache supports (perf's evsel__hw_cache_stat).
CACHE_SUPPORTED_OPS: dict[CacheType, frozenset[CacheOp]] = {
    CacheType.L1D: frozenset(CacheOp),
    CacheType.L1I: frozenset({CacheOp.READ, CacheOp.PREFETCH}),
    CacheType.LL: frozenset(CacheOp),
    CacheType.DTLB: frozenset(CacheOp),
    CacheType.ITLB: frozenset({CacheOp.READ}),
    CacheType.BPU: frozenset({CacheOp.READ}),
    CacheType.NODE: frozenset(CacheOp),
}

_CACHE_TYPES_LOWER = {k.lower(): v for k, v in CACHE_TYPES.items()}
_CACHE_OPS_LOWER = {k.lower(): v for k, v in CACHE_OPS.items()}
_CACHE_RESULTS_LOWER = {k.lower(): v for k, v in CACHE_RESULTS.items()}
_HYPHENATED_PARTS = frozenset(p.lower() for p in (*CACHE_OPS, *CACHE_RESULTS) if "-" in p)


def cache_type(spelling: str) -> CacheType:
    """The cache type a spelling names, in any letter case (KeyError if none)."""
    return _CACHE_TYPES_LOWER[spelling.lower()]


def cache_op(part: str) -> CacheOp | None:
    return _CACHE_OPS_LOWER.get(part.lower())


def cache_result(part: str) -> CacheResult | None:
    return _CACHE_RESULTS_LOWER.get(part.lower())


@lru_cache(maxsize=1)
def _cache_type_at() -> re.Pattern[str]:
    """A cache type at the start of a word, longest spelling first (so that "L1-dcache" is
    preferred over a shorter type that prefixes it), in any letter case. Compiled on first use:
    most words are not cache words, and a cold start should not pay for it."""
    return re.compile(
        "(" + "|".join(re.escape(t) for t in sorted(CACHE_TYPES, key=len, reverse=True)) + ")(?:-|$)", re.IGNORECASE
    )


class CacheWord(Slotted):
    """A word split into its cache type and parts; the part offsets are relative to the word."""

    cache_type: str
    parts: tuple[str, ...]
    part_offsets: tuple[int, ...]


def split_cache_word(word: str) -> CacheWord | None:
    """Split ``L1-dcache-load-misses`` into type and parts, or None if it is no cache word.

    A word is a cache word if it is a cache type, or starts with a cache type followed by ``-``
    (COMPAT Decision 5). Parts are split at ``-`` except inside the hyphenated part names
    (``speculative-read``); whether the parts are valid is for the rules to say.
    """
    m = _cache_type_at().match(word)
    if m is None:
        return None
    spelling = m.group(1)
    if len(spelling) == len(word):
        return CacheWord(spelling, (), ())
    parts: list[str] = []
    offsets: list[int] = []
    pos = len(spelling) + 1
    pieces = word[pos:].split("-")
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        if i + 1 < len(pieces) and f"{piece}-{pieces[i + 1]}".lower() in _HYPHENATED_PARTS:
            piece = f"{piece}-{pieces[i + 1]}"
            i += 1
        parts.append(piece)
        offsets.append(pos)
        pos += len(piece) + 1
        i += 1
    return CacheWord(spelling, tuple(parts), tuple(offsets))


# --------------------------------------------------------------------------------------------
# raw events

RAW_EVENT = re.compile(r"r[0-9a-fA-F]+")
#: a word that is a number: decimal or 0x-hex (perf's lexer prefers a longer name match)
NUMBER = re.compile(r"0x[0-9a-fA-F]+|[0-9]+")


def is_raw_event(word: str) -> bool:
    """``rHEX`` at event level (``r0x1a`` is not: that form exists only as a term)."""
    return RAW_EVENT.fullmatch(word) is not None


RAW_TERM = re.compile(r"r(?:0x)?[0-9a-fA-F]+")


def classify_word(word: str) -> SymbolKind | CacheWord | str | None:
    """What a word at the head of an event is: a ``SymbolKind`` (hardware, software or tool event),
    a ``CacheWord``, ``"raw"`` for ``rHEX``, or None for anything else (a PMU or an alias)."""
    kind = symbol_kind(word)
    if kind is not None:
        return kind
    cache = split_cache_word(word)
    if cache is not None:
        return cache
    if RAW_EVENT.fullmatch(word) is not None:
        return "raw"
    return None


def event_word_kind(word: str) -> str | None:
    """"symbol", "cache" or "raw" for a built-in event word; None for anything else (an alias)."""
    kind = classify_word(word)
    if kind is None:
        return None
    if isinstance(kind, SymbolKind):
        return "symbol"
    return "cache" if isinstance(kind, CacheWord) else "raw"


# --------------------------------------------------------------------------------------------
# modifiers

MODIFIER_LETTERS = "ukhIGHpPSDWebRX"
#: the letters perf 6.1 knew (R, retirement latency, came in 6.12; X, do not regroup, in 7.2)
MODIFIER_LETTERS_61 = "ukhIGHpPSDWeb"
MAX_PRECISE = 3
BREAKPOINT_ACCESS_LETTERS = "rwx"


def is_modifier_word(word: str) -> bool:
    """True if every letter of ``word`` is a modifier letter (``WORD:LETTERS``, Decision 2)."""
    return bool(word) and all(c in MODIFIER_LETTERS for c in word)


def is_access_word(word: str) -> bool:
    return bool(word) and all(c in BREAKPOINT_ACCESS_LETTERS for c in word)


# --------------------------------------------------------------------------------------------
# terms


class ValueType(str, Enum):
    NUMBER = "number"
    STRING = "string"
    BOOL = "0 or 1"
    CPUS = "CPU number, CPU list or PMU name"


class KeywordTerm(Slotted):
    """A keyword term: its ``name``, the ``ValueType`` of its value, and the ``maximum`` of a
    number with a narrower range than 64 bits (or None)."""

    name: str
    value_type: ValueType
    maximum: int | None = None


_KEYWORDS = (
    KeywordTerm("config", ValueType.NUMBER),
    KeywordTerm("config1", ValueType.NUMBER),
    KeywordTerm("config2", ValueType.NUMBER),
    KeywordTerm("config3", ValueType.NUMBER),
    KeywordTerm("config4", ValueType.NUMBER),
    KeywordTerm("name", ValueType.STRING),
    KeywordTerm("period", ValueType.NUMBER),
    KeywordTerm("freq", ValueType.NUMBER),
    KeywordTerm("branch_type", ValueType.STRING),
    KeywordTerm("time", ValueType.BOOL),
    KeywordTerm("call-graph", ValueType.STRING),
    KeywordTerm("stack-size", ValueType.NUMBER),
    KeywordTerm("max-stack", ValueType.NUMBER),
    KeywordTerm("nr", ValueType.NUMBER),
    KeywordTerm("inherit", ValueType.NUMBER),
    KeywordTerm("no-inherit", ValueType.NUMBER),
    KeywordTerm("overwrite", ValueType.NUMBER),
    KeywordTerm("no-overwrite", ValueType.NUMBER),
    KeywordTerm("percore", ValueType.BOOL),
    KeywordTerm("aux-output", ValueType.NUMBER),
    KeywordTerm("aux-action", ValueType.STRING),
    KeywordTerm("aux-sample-size", ValueType.NUMBER, maximum=0xFFFFFFFF),
    KeywordTerm("metric-id", ValueType.STRING),
    KeywordTerm("cpu", ValueType.CPUS),
    KeywordTerm("ratio-to-prev", ValueType.STRING),
    KeywordTerm("legacy-hardware-config", ValueType.NUMBER, maximum=9),
    KeywordTerm("legacy-cache-config", ValueType.NUMBER),
)

KEYWORD_TERMS: dict[str, KeywordTerm] = {k.name: k for k in _KEYWORDS}

# Terms a tracepoint (and so a BPF event) accepts (COMPAT 1.10).
TRACEPOINT_TERMS: tuple[str, ...] = (
    "call-graph", "stack-size", "inherit", "no-inherit", "max-stack", "nr", "overwrite",
    "no-overwrite", "aux-output", "aux-action", "aux-sample-size",
)

# Terms that turn a core PMU's event into a legacy hardware or cache event: only PMU events take
# them (perf's config_term_pmu), and only on a core PMU.
LEGACY_CONFIG_TERMS: tuple[str, ...] = ("legacy-hardware-config", "legacy-cache-config")

# perf 7.3's help line for unknown terms (config_term_names in its order, internal names included).
VALID_TERMS_HELP = (
    "config,config1,config2,config3,config4,name,period,freq,branch_type,time,call-graph,stack-size,"
    "no-inherit,inherit,max-stack,nr,no-overwrite,overwrite,driver-config,percore,aux-output,"
    "aux-action,aux-sample-size,metric-id,raw,cpu,ratio-to-prev,legacy-hardware-config,legacy-cache-config"
)

# aux-action values (perf's aux_action_opts): start-paused goes on the AUX area event itself,
# pause and resume on the events of its group.
AUX_ACTIONS: tuple[str, ...] = ("start-paused", "pause", "resume")
# PERF_COUNT_HW_CACHE_MAX, _OP_MAX, _RESULT_MAX: the fields of a legacy-cache-config value
LEGACY_CACHE_LIMITS = (7, 3, 2)

CALL_GRAPH_MODES: tuple[str, ...] = ("fp", "dwarf", "lbr", "no")

# branch_type values: 'no' or one perf branch filter name (matched case-insensitively).
BRANCH_TYPES: tuple[str, ...] = (
    "u", "k", "hv", "any", "any_call", "any_ret", "ind_call", "abort_tx", "in_tx", "no_tx", "cond",
    "ind_jmp", "call", "save_type", "stack", "priv",
)

# map:NAME.OPTION of BPF object terms.
MAP_TERM_PREFIX = "map:"
# prog:NAME.event=EVENT: a perf_event program of a BPF object and the event it goes on.
PROG_TERM_PREFIX = "prog:"
PROG_OPTIONS = ("event", "autoload")  # autoload: libbpf's bpf_program__set_autoload
# var:NAME=VALUE: a global variable of a BPF object, set before it is loaded.
VAR_TERM_PREFIX = "var:"
# libbpf's map setters before load
MAP_SETTERS: tuple[str, ...] = ("max_entries", "map_flags", "key_size", "value_size", "numa_node", "pin", "map_type")
# how a map or .bss global of counts prints (record's histograms and tables; evspec only)
PRINT_MAP_OPTIONS: tuple[str, ...] = ("hist", "unit", "step", "column")
# type: COMPAT 1.14, typed output maps
MAP_OPTIONS: tuple[str, ...] = ("value", "event", "type", *MAP_SETTERS, *PRINT_MAP_OPTIONS)

U64_MAX = (1 << 64) - 1
U32_MAX = (1 << 32) - 1
