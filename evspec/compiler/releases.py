"""What each perf release does differently when it builds its evsels: the facts ``compile --perf
VERSION`` follows, kept as data so that the next release is a new entry.

Every fact was read from that release's tools/perf (util/parse-events.{l,y,c}, util/pmu.c,
util/pmus.c, util/evsel.c, pmu-events/arch/common/common/*.json) and checked against its binary's
``perf stat -vv`` output; ``LATEST`` is the release the default language follows (COMPAT 1.15).
"""

from __future__ import annotations

from evspec import lexicon
from evspec.span import Slotted, replace

#: perf's PMU type of its ``tool`` PMU (PERF_PMU_TYPE_TOOL, 7.2 and later)
PERF_PMU_TYPE_TOOL = 0xFFFFFFFE

_TERMS_61 = (
    "config", "config1", "config2", "name", "period", "freq", "branch_type", "time", "call-graph",
    "stack-size", "no-inherit", "inherit", "max-stack", "nr", "no-overwrite", "overwrite", "percore",
    "aux-output", "aux-sample-size", "metric-id",
)  # fmt: skip
_TERMS_612 = (*_TERMS_61, "config3")
_TERMS_72 = (*_TERMS_612, "config4", "aux-action", "cpu", "ratio-to-prev", "legacy-hardware-config",
             "legacy-cache-config")
_STAT_61 = ("config", "config1", "config2", "name", "metric-id", "period", "percore")
_STAT_612 = (*_STAT_61, "config3")
_STAT_72 = (*_STAT_612, "config4", "cpu")


class Release(Slotted):
    """One perf release's event-building facts (see the module docstring)."""

    version: str
    attr_size: int  # sizeof(struct perf_event_attr) it sends
    exclude_guest_default: bool  # event_attr_init sets exclude_guest (not a guest profiler)
    #: when a 'p' modifier sets exclude_guest: "in-order" (6.1: unless G or H came before it),
    #: "always" (6.12), "never" (7.2+)
    precise_excludes_guest: str
    #: a modifier list sets sample_read, precise_max, weak and the BPF counter flag whether its
    #: letters are there or not (6.1: a group's ':u' clears a member's 'S'); later releases only set
    modifiers_overwrite_flags: bool
    keyword_terms: frozenset[str]  # the /term/ keywords its lexer knows
    stat_terms: frozenset[str]  # what perf stat keeps of them
    modifier_letters: str
    tool_events: tuple[str, ...]  # in config order (the tool PMU's config is the position + 1)
    tool_pmu: bool  # tool events are the 'tool' PMU's events (else software dummy evsels)
    tool_events_opened: bool  # its stat prints and opens every tool event's attr (6.12 skips them)
    software_pmu_events: bool  # the software PMU has events: software/cpu-clock/
    legacy_events_on_core_pmus: bool  # hardware and cache names are core PMU events: cpu/cycles/
    sysfs_over_legacy: bool  # a core PMU's sysfs event named like a hardware event wins over it
    placeholder_core_pmu: bool  # a 'cpu' core PMU (type 4, no formats) where sysfs has none
    default_core: bool  # 'default_core' names the first core PMU
    #: a PMU name matches as a glob too (ms*/tsc/), and PMUs with a hex suffix of 3+ digits
    #: (perf_pmu__match_wildcard; 6.1: a decimal suffix only)
    pmu_globs: bool
    any_case_names: bool  # event names looked up in any letter case
    quoted_names: bool  # 'cpu-clock' at an event's head
    digit_names: bool  # names may start with a digit (9p:9p_client_req)
    breakpoint_terms: bool  # mem:ADDR/terms/
    tool_terms: bool  # duration_time/name=x/
    weak_on_events: bool  # 'W' on an event outside a group (6.1 takes it, and ignores it)
    cache_names_any_order: bool  # TYPE-RESULT-OP and repeated parts taken (the decoder's way)
    colon_after_cache_terms: bool  # L1-dcache-loads/name=x/:u
    hybrid_raw_per_pmu: bool  # rHEX on a machine with several core PMUs: one evsel per core PMU
    #: a hybrid PMU whose only term is no alias of it reads that term as an event of that PMU alone
    #: (6.1: cpu_core/LLC-loads/ is the cache event on cpu_core)
    hybrid_pmu_single_term_event: bool
    regroup: bool  # evsels of a group sorted and split by PMU (parse_events__sort_events_and_fix_groups)
    record_inherit_sample_read: bool  # perf record keeps inherit on ':S' groups (read GROUP + inherit)
    record_build_id: bool  # perf record's tracking event asks for build ids (build_id=1)

    def takes_term(self, key: str) -> bool:
        return key in self.keyword_terms


PERF_61 = Release(
    version="6.1",
    attr_size=128,
    exclude_guest_default=True,
    precise_excludes_guest="in-order",
    modifiers_overwrite_flags=True,
    keyword_terms=frozenset(_TERMS_61),
    stat_terms=frozenset(_STAT_61),
    modifier_letters=lexicon.MODIFIER_LETTERS_61,
    tool_events=("duration_time", "user_time", "system_time"),
    tool_pmu=False,
    tool_events_opened=True,
    software_pmu_events=False,
    legacy_events_on_core_pmus=False,
    sysfs_over_legacy=False,
    placeholder_core_pmu=False,
    default_core=False,
    pmu_globs=False,
    any_case_names=False,
    quoted_names=False,
    digit_names=False,
    breakpoint_terms=False,
    tool_terms=False,
    weak_on_events=True,
    cache_names_any_order=True,
    colon_after_cache_terms=True,
    hybrid_raw_per_pmu=True,
    hybrid_pmu_single_term_event=True,
    regroup=False,
    record_inherit_sample_read=False,
    record_build_id=False,
)

PERF_612 = replace(
    PERF_61,
    version="6.12",
    attr_size=136,
    precise_excludes_guest="always",
    modifiers_overwrite_flags=False,
    keyword_terms=frozenset(_TERMS_612),
    stat_terms=frozenset(_STAT_612),
    modifier_letters=lexicon.MODIFIER_LETTERS_61 + "R",
    tool_events_opened=False,
    legacy_events_on_core_pmus=True,
    placeholder_core_pmu=True,
    pmu_globs=True,
    digit_names=True,
    breakpoint_terms=True,
    weak_on_events=False,
    hybrid_raw_per_pmu=False,
    hybrid_pmu_single_term_event=False,
    regroup=True,
)

PERF_72 = replace(
    PERF_612,
    version="7.2",
    attr_size=144,
    exclude_guest_default=False,
    precise_excludes_guest="never",
    keyword_terms=frozenset(_TERMS_72),
    stat_terms=frozenset(_STAT_72),
    modifier_letters=lexicon.MODIFIER_LETTERS,
    tool_events=tuple(e for e in lexicon.TOOL_EVENT_ORDER),
    tool_pmu=True,
    tool_events_opened=True,
    software_pmu_events=True,
    sysfs_over_legacy=True,
    default_core=True,
    any_case_names=True,
    quoted_names=True,
    tool_terms=True,
    cache_names_any_order=False,
    colon_after_cache_terms=False,
    record_inherit_sample_read=True,
    record_build_id=True,
)

PERF_73 = replace(PERF_72, version="7.3")

RELEASES: dict[str, Release] = {r.version: r for r in (PERF_61, PERF_612, PERF_72, PERF_73)}
LATEST = PERF_73


def release(version: str) -> Release:
    """The facts of perf ``version`` (ValueError naming the known ones otherwise)."""
    try:
        return RELEASES[version]
    except KeyError:
        raise ValueError(f"unknown perf release {version!r} (known: {', '.join(RELEASES)})") from None
