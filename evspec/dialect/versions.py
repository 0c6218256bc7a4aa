"""What differs between the perf releases evspec emulates (perf-event-language.md §9).

A :class:`Profile` holds every knob the lexer, the grammar and the semantic actions read; the
engine is the same for all releases. Facts marked "derived" in the spec (4.7, 6.5, 6.6) were read
from the sources, not run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

VERSIONS: tuple[str, ...] = ("4.7", "6.1", "6.5", "6.6")

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
# internal term types that have a printable name but no keyword
INTERNAL_TERMS = frozenset({"driver-config", "raw", "legacy-cache", "hardware"})
# the terms perf stat keeps (parse_events__shrink_config_terms)
STAT_TERMS = frozenset({"config", "config1", "config2", "config3", "name", "metric-id", "period", "percore"})
# the terms a tracepoint (and a BPF-created event) takes
TRACEPOINT_TERMS = frozenset(
    {"call-graph", "stack-size", "inherit", "no-inherit", "max-stack", "nr", "overwrite", "no-overwrite",
     "aux-output", "aux-sample-size"}
)  # fmt: skip

KERNEL_PMU_KEYWORDS_61 = r"cycles-ct|cycles-t|mem-loads-aux|mem-loads|mem-stores|topdown-[a-z-]+|tx-capacity-[a-z-]+|el-capacity-[a-z-]+"
KERNEL_PMU_KEYWORDS_47 = r"cycles-ct|cycles-t|mem-loads|mem-stores"


@dataclass(frozen=True, slots=True)
class Profile:
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

PERF_65 = replace(
    PERF_61,
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

PERF_66 = replace(
    PERF_65,
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

PROFILES: dict[str, Profile] = {p.version: p for p in (PERF_47, PERF_61, PERF_65, PERF_66)}


def profile(version: str) -> Profile:
    try:
        return PROFILES[version]
    except KeyError:
        raise ValueError(f"unknown perf version {version!r} (known: {', '.join(VERSIONS)})") from None
