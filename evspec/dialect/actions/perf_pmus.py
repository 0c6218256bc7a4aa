"""perf 6.12+'s list of PMUs (util/pmus.c, pmu.c, tool_pmu.c) over a described machine.

Core PMUs first (``cpu``, ``cpum_cf`` or any with a ``cpus`` file; a placeholder ``cpu`` of type
4 when the machine has none, as on a VM without a hardware PMU), then the others, each list sorted
by perf's ``pmu_name_cmp``; 7.2 adds its ``tool`` PMU among the others. A PMU's events are its
sysfs aliases and, from 7.2 on, the events of perf's own tables (``builtin_events``): software events
on ``software``, tool events on ``tool``, the legacy hardware and cache events on every core PMU.
The ``tracepoint`` PMU has the machine's tracepoints as ``SYS:EVENT`` events.
"""

from __future__ import annotations

import fnmatch

from evspec.dialect.actions import builtin_events
from evspec.dialect.actions.builtin_events import TableEvent
from evspec.span import Slotted, set_field

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms

if TYPE_CHECKING:
    from collections.abc import Mapping

    from evspec.dialect.versions import Profile
    from evspec.system.model import FormatField, Pmu, PmuAlias, System

PERF_TYPE_RAW = 4
PLACEHOLDER, SYSFS, TOOL = "placeholder", "sysfs", "tool"
WELL_KNOWN = {"software": 1, "tracepoint": 2, "breakpoint": 5}


class PmuEvent(Slotted):
    """An event of a PMU as perf_pmu__find_alias returns it."""

    name: str
    terms: str
    unit: str
    sysfs: bool


class PerfPmu(Slotted):
    """One PMU as perf lists it: ``kind`` PLACEHOLDER, SYSFS or TOOL; ``is_uncore``: it has a
    cpumask file (wildcards may name it with a suffix); ``formats`` in the order perf lists
    them; ``aliases`` its sysfs events/ and ``table`` perf's own events, by lower-case name."""

    __slots__ = ("name", "type", "kind", "is_core", "is_uncore", "formats", "aliases", "table")
    name: str
    type: int
    kind: str
    is_core: bool
    is_uncore: bool
    formats: tuple[FormatField, ...]
    aliases: Mapping[str, PmuAlias]
    table: Mapping[str, TableEvent]

    def __init__(self, name: str, type: int, kind: str, is_core: bool, is_uncore: bool,  # noqa: A002
                 formats: tuple[FormatField, ...] = (), aliases: Mapping[str, PmuAlias] | None = None,
                 table: Mapping[str, TableEvent] | None = None) -> None:
        set_field(self, "name", name)
        set_field(self, "type", type)
        set_field(self, "kind", kind)
        set_field(self, "is_core", is_core)
        set_field(self, "is_uncore", is_uncore)
        set_field(self, "formats", formats)
        set_field(self, "aliases", aliases if aliases is not None else {})
        set_field(self, "table", table if table is not None else {})

    @property
    def is_tracepoint(self) -> bool:
        return self.type == 2

    def format(self, name: str | None) -> FormatField | None:
        for fmt in self.formats:
            if fmt.name == name:
                return fmt
        return None

    def event(self, name: str) -> PmuEvent | None:
        """perf_pmu__find_alias with json events added: a sysfs alias (perf tests for the file
        under the name in lower and in upper case) or an event of perf's tables."""
        alias = self.aliases.get(name.lower())
        if alias is not None and alias.name in (name.lower(), name.upper()):
            unit = alias.unit.strip() if alias.unit else ""
            return PmuEvent(alias.name, alias.definition.strip(), unit, True)
        entry = self.table.get(name.lower())
        if entry is not None:
            return PmuEvent(entry.name, entry.terms, entry.unit, False)
        return None


def name_len_no_suffix(name: str) -> int:
    """pmu_name_len_no_suffix: the length without a ``_<digits>`` (or ``_<3+ hex digits>``) suffix."""
    length = len(name)
    has_hex = False
    while length > 0 and name[length - 1] in "0123456789abcdefABCDEF":
        if not name[length - 1].isdigit():
            has_hex = True
        length -= 1
    if 0 < length != len(name) and name[length - 1] == "_" and (not has_hex or len(name) - length > 2):
        return length - 1
    return len(name)


def _strncmp(a: str, b: str, n: int) -> int:
    x, y = a[:n].encode("latin-1", "replace"), b[:n].encode("latin-1", "replace")
    return (x > y) - (x < y)


def name_cmp(left: str, right: str) -> int:
    """pmu_name_cmp: by the name without its suffix, then by the suffix's hex value."""
    ll, rl = name_len_no_suffix(left), name_len_no_suffix(right)
    ret = _strncmp(left, right, min(ll, rl))
    if ll != rl or ret != 0 or ll == 0:
        return ret
    lnum = int(left[ll + 1 :], 16) if ll + 1 < len(left) else 0
    rnum = int(right[rl + 1 :], 16) if rl + 1 < len(right) else 0
    return (lnum > rnum) - (lnum < rnum)


def _sorted(pmus: list[PerfPmu]) -> list[PerfPmu]:
    """list_sort with pmus_cmp: a stable merge sort."""
    import functools

    def by_name(a: PerfPmu, b: PerfPmu) -> int:
        return name_cmp(a.name, b.name)

    return sorted(pmus, key=functools.cmp_to_key(by_name))


def is_glob(text: str) -> bool:
    """perf's strisglob: any of ``*?[``."""
    return any(c in text for c in "*?[")


def _suffix_match_612(name: str, token: str) -> bool:
    """6.12's perf_pmu__match_ignoring_suffix: ``token`` then nothing, or an optional ``_`` and
    digits (hex digits only if more than two)."""
    if not name.startswith(token):
        return False
    rest = name[len(token) :]
    if not rest:
        return True
    if rest.startswith("_"):
        rest = rest[1:]
    if not rest or any(c not in "0123456789abcdefABCDEF" for c in rest):
        return False
    return all(c.isdigit() for c in rest) or len(rest) > 2


def _suffix_match_72(name: str, token: str) -> bool:
    """7.2's perf_pmu__match_wildcard: ``token`` then nothing, or hex digits with at most one
    ``_`` among them (hex letters only if more than two characters follow the ``_``)."""
    if not name.startswith(token):
        return False
    rest = name[len(token) :]
    if not rest:
        return True
    seen_underscore = False
    has_hex = False
    i = 0
    start = 0
    while True:
        if not seen_underscore and i < len(rest) and rest[i] == "_":
            seen_underscore = True
            i += 1
            start = i
        if i >= len(rest) or rest[i] not in "0123456789abcdefABCDEF":
            return False
        if not has_hex:
            has_hex = not rest[i].isdigit()
        i += 1
        if i >= len(rest):
            break
    return i - start > 2 if has_hex else True


_MADE: dict[tuple[str, int], tuple[object, PerfPmus]] = {}


def perf_pmus(p: Profile, system: System | None) -> PerfPmus:
    """The PMU list of release ``p`` on ``system``, made once per system object (perf reads sysfs
    once per run; predictions of many strings against one system share the list)."""
    key = (p.version, id(system))
    made = _MADE.get(key)
    if made is not None and made[0] is system:
        return made[1]
    if len(_MADE) > 32:
        _MADE.clear()
    pmus = PerfPmus(p, system)
    _MADE[key] = (system, pmus)
    return pmus


class PerfPmus:
    """The PMUs perf sees on ``system`` (None: the placeholder core PMU and perf's well-known ones)."""

    def __init__(self, p: Profile, system: System | None) -> None:
        self.profile = p
        self.system = system
        core: list[PerfPmu] = []
        other: list[PerfPmu] = []
        seen: set[str] = set()
        for pmu in system.pmus() if system is not None else ():
            perf_pmu = self._from_sysfs(pmu)
            (core if perf_pmu.is_core else other).append(perf_pmu)
            seen.add(pmu.name)
        for name, type_ in WELL_KNOWN.items():  # perf_pmu__lookup knows these without sysfs
            if name not in seen:
                other.append(self._well_known(name, type_))
        if not core:
            core.append(PerfPmu("cpu", PERF_TYPE_RAW, PLACEHOLDER, True, False, table=self._core_table()))
        if p.tool_pmu:
            other.append(PerfPmu("tool", -1, TOOL, False, False, table=builtin_events.tool()))
        self.core = _sorted(core)
        self.other = _sorted(other)
        self.all = (*self.core, *self.other)
        cpus = system.possible_cpus() if system is not None else ()
        self.max_present_cpu = max(cpus) + 1 if cpus else 1  # cpu__max_present_cpu (from the possible CPUs)

    def _core_table(self) -> Mapping[str, TableEvent]:
        return builtin_events.default_core() if self.profile.builtin_events else {}

    def _table_for(self, name: str, is_core: bool) -> Mapping[str, TableEvent]:
        if is_core:
            return self._core_table()
        if name == "software" and self.profile.builtin_events:
            return builtin_events.software()
        return {}

    def _from_sysfs(self, pmu: Pmu) -> PerfPmu:
        is_core = pmu.name in ("cpu", "cpum_cf") or pmu.cpus is not None
        return PerfPmu(pmu.name, pmu.type, SYSFS, is_core, pmu.cpumask is not None,
                       tuple(pmu.formats.values()), pmu.aliases, self._table_for(pmu.name, is_core))

    def _well_known(self, name: str, type_: int) -> PerfPmu:
        return PerfPmu(name, type_, SYSFS, False, False, table=self._table_for(name, False))

    # ---- lookups

    def find(self, name: str) -> PerfPmu | None:
        """perf_pmus__find: the PMU named exactly ``name`` (7.2: ``default_core`` is the first core PMU)."""
        if self.profile.default_core and name == "default_core":
            return self.core[0]
        for pmu in self.all:
            if pmu.name == name:
                return pmu
        return None

    def by_type(self, type_: int) -> PerfPmu | None:
        for pmu in self.all:
            if pmu.type == type_:
                return pmu
        return None

    def matching(self, token: str) -> list[PerfPmu]:
        """The PMUs a word names as a wildcard (7.2: perf_pmus__scan_matching_wildcard; 6.12: the
        perf_pmu__match test over every PMU)."""
        glob = is_glob(token)
        out = []
        for pmu in self.all:
            if self.profile.wildcard_rule == "wildcard":
                if pmu.is_core and token == "default_core":
                    out.append(pmu)
                    continue
                match = _suffix_match_72
            else:
                match = _suffix_match_612
            tok = token[7:] if token.startswith("uncore_") else token
            name = pmu.name[7:] if pmu.name.startswith("uncore_") else pmu.name
            if match(name, tok) or (glob and fnmatch.fnmatchcase(name, tok)):
                out.append(pmu)
        return out

    def have_event(self, pmu: PerfPmu, name: str) -> bool:
        """perf_pmu__have_event."""
        if pmu.kind == TOOL and name.lower() in builtin_events.TOOL_SKIPPED:
            return False
        if pmu.is_tracepoint:
            sys, colon, event = name.partition(":")
            return bool(colon) and self._tracepoint_exists(sys, event)
        return pmu.event(name) is not None

    def _tracepoint_exists(self, sys: str, event: str) -> bool:
        from evspec.system.model import TracefsUnavailable

        if self.system is None:
            return False
        try:
            return self.system.tracepoint_id(sys, event) is not None
        except TracefsUnavailable:
            return False

    def with_event(self, name: str) -> list[PerfPmu]:
        """Every PMU that has event ``name``, in perf's scan order."""
        return [pmu for pmu in self.all if self.have_event(pmu, name)]
