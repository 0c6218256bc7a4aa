"""What differs between the perf releases evspec emulates (perf-event-language.md §9).

A :class:`Profile` holds every knob the lexer, the grammar and the semantic actions read; the
engine is the same for all releases. Facts marked "derived" in the spec (4.7, 6.5, 6.6) were read
from the sources, not run; 6.12, 7.2 and 7.3 were read from their sources (util/parse-events.l,
.y, .c, pmu.c, pmus.c, tool_pmu.c) and checked against the released binaries.
"""

from __future__ import annotations

VERSIONS: tuple[str, ...] = ("4.7", "6.1", "6.5", "6.6", "6.12", "7.2", "7.3")

# perf's event symbol tables: (spellings, (attr type, config))
HARDWARE_SYMBOLS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("cpu-cycles", "cycles"), 0),
    (("stalled-cycles-frontend", "idle-cycles-frontend"), 7),
    (("stalled-cycles-backend", "idle-cycles-backend"), 8),
    (("instructions",), 1),
    (("cache-references",), 2),
    (("cache-misses",), 3),
    (("branch-instructions", "branches"), 4),
    (("branch-misses",), 5),
    (("bus-cycles",), 6),
    (("ref-cycles",), 9),
)
SOFTWARE_SYMBOLS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("cpu-clock",), 0),
    (("task-clock",), 1),
    (("page-faults", "faults"), 2),
    (("minor-faults",), 5),
    (("major-faults",), 6),
    (("context-switches", "cs"), 3),
    (("cpu-migrations", "migrations"), 4),
    (("alignment-faults",), 7),
    (("emulation-faults",), 8),
    (("dummy",), 9),
)
TOOL_SYMBOLS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("duration_time",), 1),
    (("user_time",), 2),
    (("system_time",), 3),
)
BPF_OUTPUT = ((("bpf-output",), 10),)
CGROUP_SWITCHES = ((("cgroup-switches",), 11),)

# config_term_names, in perf's order (this order is the "valid terms:" help)
TERMS_61: tuple[str, ...] = (
    "config", "config1", "config2", "name", "period", "freq", "branch_type", "time", "call-graph",
    "stack-size", "no-inherit", "inherit", "max-stack", "nr", "no-overwrite", "overwrite",
    "driver-config", "percore", "aux-output", "aux-sample-size", "metric-id",
)  # fmt: skip
TERMS_65: tuple[str, ...] = (
    "config", "config1", "config2", "config3", "name", "period", "freq", "branch_type", "time",
    "call-graph", "stack-size", "no-inherit", "inherit", "max-stack", "nr", "no-overwrite", "overwrite",
    "driver-config", "percore", "aux-output", "aux-sample-size", "metric-id", "raw", "legacy-cache",
    "hardware",
)  # fmt: skip
TERMS_47: tuple[str, ...] = (
    "config", "config1", "config2", "name", "period", "freq", "branch_type", "time", "call-graph",
    "stack-size", "no-inherit", "inherit",
)  # fmt: skip
# enum parse_events__term_type after <sysfs term>: the "valid terms:" order of 6.12 and of 7.2
TERMS_612: tuple[str, ...] = TERMS_65
TERMS_72: tuple[str, ...] = (
    "config", "config1", "config2", "config3", "config4", "name", "period", "freq", "branch_type", "time",
    "call-graph", "stack-size", "no-inherit", "inherit", "max-stack", "nr", "no-overwrite", "overwrite",
    "driver-config", "percore", "aux-output", "aux-action", "aux-sample-size", "metric-id", "raw", "cpu",
    "ratio-to-prev", "legacy-hardware-config", "legacy-cache-config",
)  # fmt: skip
# internal term types that have a printable name but no keyword
INTERNAL_TERMS = frozenset({"driver-config", "raw", "legacy-cache", "hardware"})
# the terms perf stat keeps (parse_events__shrink_config_terms)
STAT_TERMS = frozenset({"config", "config1", "config2", "config3", "name", "metric-id", "period", "percore"})
STAT_TERMS_72 = STAT_TERMS | {"config4", "cpu"}
# the terms a tracepoint (and a BPF-created event) takes
TRACEPOINT_TERMS = frozenset(
    {"call-graph", "stack-size", "inherit", "no-inherit", "max-stack", "nr", "overwrite", "no-overwrite",
     "aux-output", "aux-sample-size"}
)  # fmt: skip

KERNEL_PMU_KEYWORDS_61 = r"cycles-ct|cycles-t|mem-loads-aux|mem-loads|mem-stores|topdown-[a-z-]+|tx-capacity-[a-z-]+|el-capacity-[a-z-]+"
KERNEL_PMU_KEYWORDS_47 = r"cycles-ct|cycles-t|mem-loads|mem-stores"


class Profile:
    """Every knob of one release, read by the lexer, the grammar and the semantic actions. A
    plain class, made without the ``dataclass`` decorator (a syntax error in a default check
    predicts today's releases, and that path stays as light as the check itself): keyword
    construction, equality and hashing over every knob, ``derive`` for a release that differs
    from another in a few knobs."""

    __slots__ = (
        "version",
        "name_pattern",
        "modifier_letters",
        "modifier_max",
        "terms",
        "software",
        "tools",
        "kernel_pmu_keywords",
        "pmu_symbols",
        "legacy_cache_token",
        "hardware_terms",
        "raw_terms",
        "raw_symbol_check",
        "drv_cfg",
        "name_tag",
        "event_comma",
        "bpf",
        "arrays",
        "mem_trailing_context",
        "error_slots",
        "tracepoint_error_at_event",
        "unknown_pmu_message",
        "name_as_event",
        "bad_event_messages",
        "no_value_copy_bug",
        "bpf_event_terms_split",
        "tracepoint_sections",
        "libbpf_v1",
        "pmu_names",
        "error_list",
        "syntax_message",
        "symbol_tokens",
        "bounded_numbers",
        "modifier_run",
        "stat_terms",
        "builtin_events",
        "tool_pmu",
        "default_core",
        "wildcard_rule",
        "tracing_events",
        "tracepoint_counts",
    )
    version: str
    name_pattern: str
    modifier_letters: str
    modifier_max: int  # check_modifier's length limit
    terms: tuple[str, ...]  # config_term_names order
    software: tuple[tuple[tuple[str, ...], int], ...]
    tools: bool
    kernel_pmu_keywords: str | None  # regex, or None when the token is gone
    pmu_symbols: str | None  # "pre_suf" (4.7), "pre_suf_suf2" (6.1), None (6.5+: no alias lexing)
    legacy_cache_token: bool  # 6.5+: one PE_LEGACY_CACHE token instead of type/op words
    hardware_terms: bool  # 6.5+: hardware words inside /.../ are PE_TERM_HW
    raw_terms: bool  # rHEX inside /.../
    raw_symbol_check: bool  # an rHEX word that is a PMU alias symbol becomes a name (6.1)
    drv_cfg: bool
    name_tag: bool  # 'quoted' names
    event_comma: bool  # the EVENT state has a ',' rule (not in 4.7)
    bpf: str | None  # "greedy" (4.7), "checked" (6.1, 6.5), None (6.6: removed)
    arrays: bool  # map-term index lists
    mem_trailing_context: bool  # 6.5+: PE_BP_COLON / PE_BP_SLASH and mem:ADDR/config/
    error_slots: int  # 1 (4.7) or 2 (first and last)
    tracepoint_error_at_event: bool  # the error column of tracepoint errors is the event's column
    unknown_pmu_message: bool  # "Cannot find PMU ..." is recorded (not in 4.7)
    name_as_event: bool  # 6.5+: PE_NAME opt_pmu_config falls back to "event on any PMU"
    bad_event_messages: bool  # 6.6: "Bad event or PMU" / "Bad event name"
    no_value_copy_bug: bool  # 6.1/6.5: the wildcard retry loses the "no value" flag
    bpf_event_terms_split: bool  # hard-coded terms of a BPF event go to its evsels (not 4.7)
    tracepoint_sections: bool  # BPF programs may name tracepoints (SYS:EVENT), not in 4.7
    libbpf_v1: bool  # 6.1+: NULL from bpf_object__open, no legacy maps, prologue bug
    pmu_names: bool  # names are looked up in perf's PMU list (pmus.c), not lexed as symbols
    error_list: bool  # every error is kept and printed, the newest first
    syntax_message: str  # what yyerror records
    symbol_tokens: bool  # hardware/software/tool names and cache names are lexer tokens
    bounded_numbers: bool  # 0x and rHEX take at most 16 digits; an overflow is "Bad base N number"
    modifier_run: int  # > 0: modifiers are lexed in runs of at most this many letters and checked there
    stat_terms: frozenset[str]  # what perf stat keeps (parse_events__shrink_config_terms)
    builtin_events: bool  # 7.2: the software, tool and legacy core events come from perf's own tables
    tool_pmu: bool  # 7.2: a "tool" PMU; 6.12 has tool events as lexer symbols
    default_core: bool  # 7.2: "default_core" names the first core PMU
    wildcard_rule: str  # how a word names PMUs: "suffix" (6.12 perf_pmu__match), "wildcard" (7.2)
    tracing_events: str  # the path in "unknown tracepoint" help
    tracepoint_counts: bool  # 7.2: a system glob that matches no tracepoint is "unknown tracepoint"

    def __init__(self, **knobs: object) -> None:
        unknown = set(knobs) - set(self.__slots__)
        missing = [n for n in self.__slots__ if n not in knobs and n not in _DEFAULTS]
        if unknown or missing:
            raise TypeError(f"Profile: unknown knobs {sorted(unknown)}, missing {missing}")
        for name in self.__slots__:
            object.__setattr__(self, name, knobs[name] if name in knobs else _DEFAULTS[name])

    def derive(self, **changes: object) -> Profile:
        """This profile with ``changes`` (a later release)."""
        return Profile(**{**{n: getattr(self, n) for n in self.__slots__}, **changes})

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, n) for n in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Profile) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Profile is read-only ({name})")

    def __repr__(self) -> str:
        return f"Profile(version={self.version!r})"


# the knobs of perf 6.12 and later, as the earlier releases have them
_DEFAULTS: dict[str, object] = {
    "pmu_names": False,
    "error_list": False,
    "syntax_message": "parser error",
    "symbol_tokens": True,
    "bounded_numbers": False,
    "modifier_run": 0,
    "stat_terms": STAT_TERMS,
    "builtin_events": False,
    "tool_pmu": False,
    "default_core": False,
    "wildcard_rule": "suffix",
    "tracing_events": "/sys/kernel/tracing/events",
    "tracepoint_counts": False,
}


NAME_61 = r"[a-zA-Z_*?\[\]][a-zA-Z0-9_*?.\[\]!]*"
NAME_65 = r"[a-zA-Z_*?\[\]][a-zA-Z0-9_*?.\[\]!\-]*"
NAME_47 = r"[a-zA-Z_*?][a-zA-Z0-9_*?.]*"

PERF_61 = Profile(
    version="6.1",
    name_pattern=NAME_61,
    modifier_letters="ukhpPGHSDIWeb",
    modifier_max=15,
    terms=TERMS_61,
    software=SOFTWARE_SYMBOLS,
    tools=True,
    kernel_pmu_keywords=KERNEL_PMU_KEYWORDS_61,
    pmu_symbols="pre_suf_suf2",
    legacy_cache_token=False,
    hardware_terms=False,
    raw_terms=True,
    raw_symbol_check=True,
    drv_cfg=True,
    name_tag=True,
    event_comma=True,
    bpf="checked",
    arrays=True,
    mem_trailing_context=False,
    error_slots=2,
    tracepoint_error_at_event=False,
    unknown_pmu_message=True,
    name_as_event=False,
    bad_event_messages=False,
    no_value_copy_bug=True,
    bpf_event_terms_split=True,
    tracepoint_sections=True,
    libbpf_v1=True,
)

PERF_65 = PERF_61.derive(
    version="6.5",
    name_pattern=NAME_65,
    terms=TERMS_65,
    kernel_pmu_keywords=None,
    pmu_symbols=None,
    legacy_cache_token=True,
    hardware_terms=True,
    raw_symbol_check=False,
    mem_trailing_context=True,
    name_as_event=True,
)

PERF_66 = PERF_65.derive(
    version="6.6",
    bpf=None,
    arrays=False,
    tracepoint_error_at_event=True,
    bad_event_messages=True,
    no_value_copy_bug=False,
)

PERF_47 = Profile(
    version="4.7",
    name_pattern=NAME_47,
    modifier_letters="ukhpPGHSDI",
    modifier_max=12,
    terms=TERMS_47,
    software=SOFTWARE_SYMBOLS,
    tools=False,
    kernel_pmu_keywords=KERNEL_PMU_KEYWORDS_47,
    pmu_symbols="pre_suf",
    legacy_cache_token=False,
    hardware_terms=False,
    raw_terms=False,
    raw_symbol_check=False,
    drv_cfg=False,
    name_tag=False,
    event_comma=False,
    bpf="greedy",
    arrays=True,
    mem_trailing_context=False,
    error_slots=1,
    tracepoint_error_at_event=True,
    unknown_pmu_message=False,
    name_as_event=False,
    bad_event_messages=False,
    no_value_copy_bug=False,
    bpf_event_terms_split=False,
    tracepoint_sections=False,
    libbpf_v1=False,
)

_NAME_612 = r"[a-zA-Z0-9_*?\[\]][a-zA-Z0-9_*?.\[\]!\-]*"

PERF_612 = PERF_66.derive(
    version="6.12",
    name_pattern=_NAME_612,
    modifier_letters="ukhpPGHSDIWebR",
    terms=TERMS_612,
    drv_cfg=True,
    bad_event_messages=True,
    pmu_names=True,
    error_list=True,
    syntax_message="Unrecognized input",
    bounded_numbers=True,
    modifier_run=16,
    tracing_events="/sys/kernel/tracing//events",
)

PERF_72 = PERF_612.derive(
    version="7.2",
    modifier_letters="ukhpPGHSDIWebRX",
    terms=TERMS_72,
    symbol_tokens=False,
    legacy_cache_token=False,
    hardware_terms=False,
    tools=False,
    modifier_run=17,
    stat_terms=STAT_TERMS_72,
    builtin_events=True,
    tool_pmu=True,
    default_core=True,
    wildcard_rule="wildcard",
    tracepoint_counts=True,
)

# 7.3's event parser, PMU and tool code is 7.2's, file for file
PERF_73 = PERF_72.derive(version="7.3")

PROFILES: dict[str, Profile] = {
    p.version: p for p in (PERF_47, PERF_61, PERF_65, PERF_66, PERF_612, PERF_72, PERF_73)
}


def profile(version: str) -> Profile:
    try:
        return PROFILES[version]
    except KeyError:
        raise ValueError(f"unknown perf version {version!r} (known: {', '.join(VERSIONS)})") from None
