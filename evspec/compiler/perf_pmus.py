"""The PMUs and PMU events a perf release sees on a system: sysfs's, plus perf's own.

Since perf 6.12 a hardware or cache event name is an event of every core PMU (perf's legacy
tables, pmu-events/arch/common/common/legacy-hardware.json and make_legacy_cache.py), and a
machine whose sysfs lists no core PMU gets a placeholder ``cpu`` (type 4, no formats); since 7.2
the software events are the ``software`` PMU's, the tool events those of a ``tool`` PMU perf
makes up, ``default_core`` names the first core PMU, names match in any letter case, and a
hardware name that a core PMU's sysfs also lists takes the sysfs encoding. ``PerfPmus`` answers
the lookups perf's parse_events makes, in perf's scan order: core PMUs by name (perf's
``pmu_name_cmp``; perf 6.1: by type), then the others.
"""

from __future__ import annotations

import fnmatch
import re
import string
from functools import cached_property

from evspec import lexicon
from evspec.compiler import attr as A
from evspec.compiler.releases import PERF_PMU_TYPE_TOOL, Release
from evspec.span import Slotted
from evspec.system.model import Pmu, PmuAlias, System, pmu_suffix_matches

#: the name of the core PMU perf makes up where sysfs has none
PLACEHOLDER_CORE = "cpu"
DEFAULT_CORE = "default_core"
TOOL_PMU = "tool"
SOFTWARE_PMU = "software"


class PmuEvent(Slotted):
    """What a PMU's event NAME is: a sysfs alias (``alias``), or one of perf's legacy hardware,
    legacy cache, software or tool events (``kind`` with its ``config``). ``alternate_hw`` is the
    legacy hardware event a sysfs alias of a core PMU stands for (perf's alternate_hw_config)."""

    kind: str  # "alias", "hardware", "cache", "software", "tool"
    config: int = 0
    alias: PmuAlias | None = None
    alternate_hw: int | None = None


def _name_key(name: str) -> tuple[object, ...]:
    """perf's pmu_name_cmp: names compare as text, a trailing number as a number (uncore_imc_2
    before uncore_imc_10)."""
    m = re.fullmatch(r"(.*?)(\d+)", name)
    return (m.group(1), int(m.group(2))) if m else (name, -1)


class PerfPmus:
    """``system``'s PMUs as perf ``release`` sees them (see the module docstring)."""

    def __init__(self, system: System, release: Release) -> None:
        self.system = system
        self.release = release

    # ---- PMUs

    @cached_property
    def core(self) -> tuple[Pmu, ...]:
        """The core (CPU) PMUs in perf's order; the placeholder where sysfs has none."""
        found = [p for p in self.system.pmus() if p.is_core]
        if not found and self.release.placeholder_core_pmu:
            return (Pmu(PLACEHOLDER_CORE, A.PERF_TYPE_RAW, {}, {}, None, None),)
        if self.release.regroup:
            return tuple(sorted(found, key=lambda p: _name_key(p.name)))
        return tuple(sorted(found, key=lambda p: p.type))

    @cached_property
    def tool(self) -> Pmu | None:
        return Pmu(TOOL_PMU, PERF_PMU_TYPE_TOOL, {}, {}, None, None) if self.release.tool_pmu else None

    @cached_property
    def others(self) -> tuple[Pmu, ...]:
        """The non-core PMUs in perf's order (the tool PMU among them)."""
        core = {p.name for p in self.core}
        found = [p for p in self.system.pmus() if p.name not in core]
        if self.tool is not None:
            found.append(self.tool)
        return tuple(sorted(found, key=lambda p: _name_key(p.name)))

    @property
    def multiple_core(self) -> bool:
        return len(self.core) > 1

    @property
    def extended_type(self) -> bool:
        """Whether hardware and cache events carry their core PMU's type in config bits 32-63:
        with several core PMUs, on a kernel that takes it (perf probes it; a system says it)."""
        return self.multiple_core and self.system.features().hybrid_extended_type

    def find(self, name: str) -> Pmu | None:
        """The PMU perf finds by this exact name (default_core, tool and the placeholder too)."""
        if name == DEFAULT_CORE and self.release.default_core:
            return self.core[0] if self.core else None
        if self.tool is not None and name == TOOL_PMU:
            return self.tool
        pmu = self.system.pmu(name)
        if pmu is not None:
            return pmu
        placeholder = self.core[0] if self.core and self.core[0].name == PLACEHOLDER_CORE else None
        return placeholder if placeholder is not None and name == PLACEHOLDER_CORE else None

    def by_type(self, pmu_type: int) -> Pmu | None:
        for pmu in (*self.core, *self.others):
            if pmu.type == pmu_type:
                return pmu
        return None

    def wildcard(self, name: str) -> tuple[Pmu, ...]:
        """The PMUs a name matches through perf's wildcard rule (uncore_imc -> uncore_imc_0...)."""
        match = wildcard_matches if self.release.pmu_globs else pmu_suffix_matches
        return tuple(p for p in (*self.core, *self.others) if match(p.name, name))

    def is_placeholder(self, pmu: Pmu) -> bool:
        """Whether ``pmu`` is the core PMU perf makes up where sysfs has none."""
        return pmu.name == PLACEHOLDER_CORE and self.system.pmu(PLACEHOLDER_CORE) is None and self.is_core(pmu)

    def is_core(self, pmu: Pmu) -> bool:
        return any(p.name == pmu.name for p in self.core)

    # ---- events

    def event(self, pmu: Pmu, name: str) -> PmuEvent | None:
        """What ``name`` is on ``pmu``, or None: a sysfs alias first (with the legacy hardware
        event it stands for on a core PMU), then perf's own tables."""
        alias = pmu.alias(name)
        core = self.is_core(pmu)
        legacy = self._legacy(name) if core and self.release.legacy_events_on_core_pmus else None
        if alias is not None:
            alternate = legacy.config if legacy is not None and legacy.kind == "hardware" else None
            return PmuEvent("alias", alias=alias, alternate_hw=alternate)
        if legacy is not None:
            return legacy
        key = name.lower() if self.release.any_case_names else name
        if pmu.name == SOFTWARE_PMU and self.release.software_pmu_events and key in lexicon.SOFTWARE_EVENTS:
            return PmuEvent("software", A.SOFTWARE_EVENTS[key])
        if pmu is self.tool and key in self.release.tool_events and key in lexicon.TOOL_EVENTS:
            return PmuEvent("tool", self.release.tool_events.index(key) + 1)
        return None

    def _legacy(self, name: str) -> PmuEvent | None:
        """A legacy hardware or cache event name (perf's legacy tables: cache names as
        make_legacy_cache.py spells them, without branches and branch-misses)."""
        key = name.lower() if self.release.any_case_names else name
        if key in lexicon.HARDWARE_EVENTS:
            return PmuEvent("hardware", A.HARDWARE_EVENTS[lexicon.symbol_name(key)])
        split = lexicon.split_cache_word(name)
        if split is None or not legacy_cache_name(split):
            return None
        return PmuEvent("cache", A.cache_config(split.cache_type, split.parts))

    def with_event(self, name: str) -> tuple[tuple[Pmu, PmuEvent], ...]:
        """Every PMU that has an event ``name``, in perf's scan order, with what it is there."""
        out = []
        for pmu in (*self.core, *self.others):
            found = self.event(pmu, name)
            if found is not None:
                out.append((pmu, found))
        return tuple(out)


def wildcard_matches(pmu_name: str, token: str) -> bool:
    """perf 7.3's perf_pmu__wildcard_match: without their ``uncore_`` prefixes, the name is the
    token followed by nothing or by hex digits with at most one ``_`` among them (with a hex
    letter: at least 3 digits), or the token is a glob (``*``, ``?``, ``[``) that matches the
    name. (perf 6.12 takes the ``_`` only first: no PMU name tells the two apart.)"""
    name = pmu_name.removeprefix("uncore_")
    token = token.removeprefix("uncore_")
    if any(c in token for c in "*?[") and fnmatch.fnmatchcase(name, token):
        return True
    if not name.startswith(token):
        return False
    suffix = name[len(token):]
    if not suffix:
        return True
    digits = suffix.replace("_", "", 1)
    if not digits or any(c not in string.hexdigits for c in digits):
        return False
    return digits.isdigit() or len(digits) > 2


def legacy_cache_name(split: lexicon.CacheWord) -> bool:
    """Whether perf 7.3's legacy cache table has this name: TYPE, TYPE-OP, TYPE-RESULT or
    TYPE-OP-RESULT with an operation the cache supports."""
    cache = lexicon.cache_type(split.cache_type)
    parts = split.parts
    if len(parts) > 2:
        return False
    ops = [lexicon.cache_op(p) for p in parts]
    results = [lexicon.cache_result(p) for p in parts]
    if len(parts) == 2 and (ops[0] is None or results[1] is None):
        return False
    if len(parts) == 1 and ops[0] is None and results[0] is None:
        return False
    return all(op is None or op in lexicon.CACHE_SUPPORTED_OPS[cache] for op in ops)
