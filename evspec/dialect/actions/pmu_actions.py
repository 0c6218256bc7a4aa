"""The semantic actions of perf 6.12 and later: every name is looked up in perf's PMU list.

Each method mirrors a function of that release's util/parse-events.c (and the pmu.c functions it
calls) closely enough to record the same errors, at the same columns, in the same order, and to
fail silently where perf does: a word is a PMU, then a wildcard over PMU names, then an event of
every PMU that has it (``event_or_pmu``); a word alone is an event of every PMU that has it
(``bare_event``); a PMU event's terms are checked, its aliases expanded and its sysfs terms
configured (``_add_pmu``). 6.12 still lexes hardware, software, tool and cache names as symbols
(``numeric``, ``tool``, ``cache``).
"""

from __future__ import annotations

import fnmatch

from evspec.dialect.actions.cache_names import CACHE_OPS, CACHE_RESULTS, CACHE_TYPES, parse_aliases
from evspec.dialect.actions.cache_names import CACHE_VALID_OPS as CACHE_OP_SUPPORT
from evspec.dialect.actions.errors import ErrorSlot
from evspec.dialect.actions.events import NO_TRACEFS_HELP, SKIP_EVENTS, SKIP_SYSTEMS
from evspec.dialect.actions.perf_pmus import PerfPmu, perf_pmus
from evspec.dialect.actions.terms import NUM, STR, USER, PmuTermRules, Term
from evspec.dialect.engine.cint import read_unsigned
from evspec.dialect.versions import INTERNAL_TERMS, Profile

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms

if TYPE_CHECKING:
    from typing import NoReturn

    from evspec.system.model import System

PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE = 0, 3
HW_MAX = 10  # PERF_COUNT_HW_MAX
UNKNOWN_TRACEPOINT_HELP = (
    "Error:\tFile {path}/{sys}/{event} not found.\n"
    "Hint:\tPerhaps this kernel misses some CONFIG_ setting to enable this feature?.\n"
)
SDT_HELP = (
    "Error:\tFile {path}/{sys}/{event} not found.\n"
    "Hint:\tSDT event cannot be directly recorded on.\n"
    "\tPlease first use 'perf probe {sys}:{event}' before recording it.\n"
)


class Failed(Exception):
    """An add function returned an error (what it recorded, if anything, is in the error list)."""


class PmuEvsel:
    """An event perf added: its name (None until the event's text names it), kind, PMU (the one
    perf_pmus__find_by_attr finds where the event names none), the precision its modifiers
    asked for, its group leader (None: itself) and its group's size, and the ``X`` and ``R``
    modifiers that the regrouping after the parse reads."""

    __slots__ = ("name", "kind", "perf_pmu", "precise", "leader", "members", "dont_regroup", "retire_lat")

    def __init__(self, name: str | None, kind: str, perf_pmu: PerfPmu | None = None) -> None:
        self.name, self.kind, self.perf_pmu, self.precise = name, kind, perf_pmu, 0
        self.leader: PmuEvsel | None = None
        self.members = 1
        self.dont_regroup = self.retire_lat = False

    @property
    def pmu(self) -> str | None:
        return self.perf_pmu.name if self.perf_pmu is not None else None


CONFIG_FIELDS = ("config", "config1", "config2", "config3", "config4")
PERF_TYPE_MAX = 6


class _Attr:
    """The part of perf_event_attr the checks read: the type and the config fields."""

    __slots__ = ("type", "configs")

    def __init__(self, type_: int, config: int = 0) -> None:
        self.type = type_
        self.configs = dict.fromkeys(CONFIG_FIELDS, 0)
        self.configs["config"] = config

    @property
    def config(self) -> int:
        return self.configs["config"]

    @config.setter
    def config(self, value: int) -> None:
        self.configs["config"] = value


class _Info:
    """struct perf_pmu_info: what one event's aliases set (only one alias may set each)."""

    __slots__ = ("unit", "scale")

    def __init__(self) -> None:
        self.unit = self.scale = False


class PmuState:
    """``struct parse_events_state`` of perf 6.12+, with the machine's PMUs; ``truncated`` maps
    the column of a numeric event's type perf cut to 32 bits to what it kept."""

    __slots__ = ("profile", "system", "stat", "errors", "text", "evsels", "quirks", "truncated", "pmus", "rules",
                 "wildcards")

    def __init__(self, profile: Profile, system: System | None, stat: bool, errors: ErrorSlot, text: str) -> None:
        self.profile, self.system, self.stat, self.errors, self.text = profile, system, stat, errors, text
        self.evsels: list[PmuEvsel] = []
        self.quirks: list[str] = []
        self.truncated: dict[int, int] = {}
        self.wildcards = False  # a PMU wildcard added events: perf does not warn of regrouping then
        self.pmus = perf_pmus(profile, system)
        self.rules = PmuTermRules(profile, stat, self.pmus.max_present_cpu,
                                  lambda name: self.pmus.find(name) is not None)

    def _add(self, kind: str, name: str | None, pmu: PerfPmu | None = None, type_: int = -1) -> PmuEvsel:
        """__add_event: a PMU-less event gets the one its attr type names, a legacy hardware,
        cache or raw event the first core PMU."""
        if pmu is None and type_ >= 0:
            pmu = self.pmus.core[0] if type_ in (0, 3, 4) and self.pmus.by_type(type_) is None else (
                self.pmus.by_type(type_))
        evsel = PmuEvsel(name, kind, pmu)
        self.evsels.append(evsel)
        return evsel

    # ---- groups, names, modifiers

    def group(self, evsels: list[PmuEvsel], name: str | None = None) -> list[PmuEvsel]:
        """parse_events__set_leader: the first evsel leads the others."""
        for evsel in evsels:
            evsel.leader = evsels[0]
        evsels[0].members = len(evsels)
        return evsels

    def default_name(self, evsels: list[PmuEvsel], text: str) -> list[PmuEvsel]:
        """parse_events__set_default_name: the event's text names the evsels without a name."""
        for evsel in evsels:
            if evsel.name is None:
                evsel.name = text
        return evsels

    def modify(self, evsels: list[PmuEvsel], letters: str, column: int, group: bool) -> list[PmuEvsel]:
        """parse_events__modifier_list (the lexer already refused repeated letters)."""
        if not group and "W" in letters:
            self.errors.handle(column, "Weak modifier is for use with groups")
            raise Failed
        precise = letters.count("p")
        for evsel in evsels:
            evsel.dont_regroup = evsel.dont_regroup or "X" in letters
            evsel.retire_lat = evsel.retire_lat or "R" in letters
            if not precise:
                continue
            if evsel.precise + precise > 3:
                name = evsel.name if evsel.name is not None else "unknown"
                self.errors.handle(
                    column, f'Maximum combined precise value is 3, adding precision to "{name}"'
                )
                raise Failed
            evsel.precise += precise
        return evsels

    # ---- names through the PMUs

    def event_or_pmu(self, name: str, terms: list[Term] | None, column: int) -> list[PmuEvsel]:
        """parse_events_multi_pmu_add_or_add_pmu: ``NAME/terms/``."""
        out: list[PmuEvsel] = []
        pmu = self.pmus.find(name)
        if pmu is not None:
            try:
                return [self._add_pmu(pmu, terms)]
            except Failed:
                pass
        for pmu in self.pmus.matching(name):
            try:
                out.append(self._add_pmu(pmu, terms))
            except Failed:
                continue
            self.wildcards = True
        if out:
            return out
        try:
            return self._multi_pmu_add(name, terms, column)
        except Failed:
            pass
        self.errors.handle(column, "Bad event or PMU", f"Unable to find PMU or event on a PMU of '{name}'")
        raise Failed

    def bare_event(self, name: str, column: int) -> list[PmuEvsel]:
        """``NAME`` alone: parse_events_multi_pmu_add, "Bad event name" when no PMU has it."""
        try:
            return self._multi_pmu_add(name, None, column)
        except Failed:
            pass
        self.errors.handle(column, "Bad event name", f"Unable to find event on a PMU of '{name}'")
        raise Failed

    def _multi_pmu_add(self, name: str, terms: list[Term] | None, column: int) -> list[PmuEvsel]:
        """parse_events_multi_pmu_add: the event on every PMU that has it, the event's name added
        as a last term."""
        head = [t.clone(keep_no_value=True) for t in terms or ()]
        head.append(Term(USER, name, 1, NUM, True, column, 0))
        out: list[PmuEvsel] = []
        for pmu in self.pmus.with_event(name):
            try:
                out.append(self._add_pmu(pmu, head))
            except Failed:
                continue
        if not out:
            raise Failed
        return out

    def _add_pmu(self, pmu: PerfPmu, const_terms: list[Term] | None) -> PmuEvsel:
        """parse_events_add_pmu."""
        if not const_terms:
            return self._add("pmu", None, pmu)
        terms = [t.clone(keep_no_value=True) for t in const_terms]
        self._fix_raw(pmu, terms)
        attr = _Attr(pmu.type)
        if not all(self._config_term_pmu(attr, t) for t in terms):
            raise Failed
        rewrote = self._check_alias(pmu, terms)
        if rewrote and not all(self._config_term_pmu(attr, t) for t in terms):
            raise Failed
        if not self._configure(pmu, terms, attr):
            raise Failed
        self._warn_invalid_config(pmu, attr, _named(terms))
        return self._add("pmu", _named(terms), pmu)

    def _fix_raw(self, pmu: PerfPmu, terms: list[Term]) -> None:
        """fix_raw: ``rNNN`` is an event of the PMU if it has one of that name, else ``config=0xNNN``."""
        for term in terms:
            if term.type_term != "raw":
                continue
            text = str(term.val)
            if self.pmus.have_event(pmu, text):
                term.type_term, term.config, term.val, term.type_val, term.no_value = USER, text, 1, NUM, True
            else:
                term.type_term, term.config, term.type_val, term.no_value = "config", "config", NUM, False
                term.val = read_unsigned(text[1:], 16)

    def _config_term_pmu(self, attr: _Attr, term: Term) -> bool:
        t = term.type_term
        err = self.errors
        if t == "legacy-hardware-config" and "legacy-hardware-config" in self.profile.terms:
            if term.type_val != NUM:
                err.handle(term.err_val, "expected numeric value")
                return False
            assert isinstance(term.val, int)
            if term.val >= HW_MAX:
                err.handle(term.err_val, "too big")
                return False
            if not self._core_type(attr.type, term):
                return False
            attr.type, attr.config = PERF_TYPE_HARDWARE, term.val
            return True
        if t == "legacy-cache-config" and "legacy-cache-config" in self.profile.terms:
            if term.type_val != NUM:
                err.handle(term.err_val, "expected numeric value")
                return False
            assert isinstance(term.val, int)
            value = term.val
            if value & ~0xFFFFFF or (value & 0xFF) >= len(CACHE_TYPES) or (value >> 8 & 0xFF) >= len(CACHE_OPS) or (
                value >> 16 & 0xFF
            ) >= len(CACHE_RESULTS):
                err.handle(term.err_val, "too big")
                return False
            if not self._core_type(attr.type, term):
                return False
            attr.type, attr.config = PERF_TYPE_HW_CACHE, value
            return True
        if t == "legacy-cache" and "legacy-cache" in self.profile.terms:  # 6.12
            pmu = self.pmus.by_type(attr.type)
            if pmu is None:
                err.handle(term.err_term, f"Failed to find PMU for type {attr.type}")
                return False
            if pmu.is_core and not self.pmus.have_event(pmu, term.config or ""):
                attr.type = PERF_TYPE_HW_CACHE
                if _decode_cache(term.config or "") is None:
                    self.quirks.append(f"'{term.config}' is no valid cache event: perf fails without a message")
                    return False
                return True
            term.type_term, term.no_value = USER, True
        if t == "hardware" and "hardware" in self.profile.terms:  # 6.12
            pmu = self.pmus.by_type(attr.type)
            if pmu is None:
                err.handle(term.err_term, f"Failed to find PMU for type {attr.type}")
                return False
            if self.pmus.have_event(pmu, term.config or ""):
                term.type_term, term.no_value = USER, True
            else:
                attr.type = PERF_TYPE_HARDWARE
            return True
        if term.type_term in (USER, "driver-config"):
            return True
        if not self.rules.common(term, err):
            return False
        if term.type_term in CONFIG_FIELDS:
            assert isinstance(term.val, int)
            attr.configs[term.type_term] = term.val
        return True

    def _core_type(self, type_: int, term: Term) -> bool:
        """check_pmu_is_core."""
        if any(p.type == type_ for p in self.pmus.core):
            return True
        self.errors.handle(term.err_val, "needs a core PMU")
        return False

    def _check_alias(self, pmu: PerfPmu, terms: list[Term]) -> bool:
        """perf_pmu__check_alias: each term that names an event of the PMU is replaced by that
        event's terms; two events in one term list clash on their unit or scale."""
        rewrote = False
        info = _Info()
        for term in list(terms):
            name = self._alias_name(pmu, term)
            event = pmu.event(name) if name is not None else None
            if event is None:
                continue
            expansion = _alias_terms(event.terms, self.profile.terms)
            if expansion is None:
                self.errors.handle(term.err_term, "Failed to parse terms")
                raise Failed
            rewrote = True
            if info.unit and event.unit:
                self.errors.handle(term.err_term, "Attempt to set event's unit twice")
                raise Failed
            if info.scale:
                self.errors.handle(term.err_term, "Attempt to set event's scale twice")
                raise Failed
            info.unit = info.unit or bool(event.unit)
            info.scale = True
            at = terms.index(term)
            terms[at : at + 1] = expansion
        return rewrote

    @staticmethod
    def _alias_name(pmu: PerfPmu, term: Term) -> str | None:
        """pmu_find_alias's candidate: a value-less sysfs term that is no format, or ``event=NAME``."""
        if term.type_term != USER:
            return None
        if term.type_val == NUM:
            if not term.no_value or pmu.format(term.config) is not None:
                return None
            return term.config
        if (term.config or "").lower() != "event":
            return None
        return str(term.val)

    def _warn_invalid_config(self, pmu: PerfPmu | None, attr: _Attr, name: str | None) -> None:
        """perf_pmu__warn_invalid_config: a raw or dynamic PMU event that sets config bits no format
        of its PMU covers gets a warning per field (perf adds the event all the same)."""
        if pmu is None or not pmu.formats or not (attr.type == 4 or attr.type >= PERF_TYPE_MAX):
            return
        masks = dict.fromkeys(CONFIG_FIELDS, 0)
        for fmt in pmu.formats:
            masks[fmt.field] = masks.get(fmt.field, 0) | fmt.encode((1 << 64) - 1)
        fields = CONFIG_FIELDS if "config4" in self.profile.terms else CONFIG_FIELDS[:4]
        for field in fields:
            value = attr.configs[field]
            bits = value & ~masks[field] & ((1 << 64) - 1)
            if bits:
                self.errors.printed.append(
                    f"WARNING: event '{name or 'N/A'}' not valid (bits {_bit_ranges(bits)} of {field} "
                    f"'{value:x}' not supported by kernel)!\n"
                )

    def _configure(self, pmu: PerfPmu, terms: list[Term], attr: _Attr | None = None) -> bool:
        """perf_pmu__config: every sysfs term must be a format of the PMU and fit it; its value
        goes to the format's bits of ``attr``."""
        for term in terms:
            if term.used or term.type_term != USER:
                continue
            fmt = pmu.format(term.config)
            if fmt is None:
                formats = ",".join(f.name for f in pmu.formats)
                self.errors.handle(term.err_term, f"unknown term '{term.config}' for pmu '{pmu.name}'",
                                   self.rules.valid_terms_help(formats or None))
                return False
            if term.type_val == NUM:
                assert isinstance(term.val, int)
                if term.no_value and fmt.width > 1:
                    self.errors.handle(term.err_val, "no value assigned for term")
                    return False
                value = term.val
            elif term.val != "?":
                self.errors.handle(term.err_val, "expected numeric value")
                return False
            else:
                supplied = [t for t in terms if t.type_val == NUM and t.config == term.config]
                if not supplied:
                    self.quirks.append(f"the event needs '{term.config}=VALUE': perf fails without a message")
                    return False
                supplied[0].used = True
                assert isinstance(supplied[0].val, int)
                value = supplied[0].val
            if value > fmt.max_value:
                self.errors.handle(term.err_val,
                                   f"value too big for format ({fmt.name}), maximum is {fmt.max_value}")
                return False
            if attr is not None:
                attr.configs[fmt.field] = attr.configs.get(fmt.field, 0) | fmt.encode(value)
        return True

    # ---- after the parse

    def regrouped(self) -> bool:
        """parse_events__sort_events_and_fix_groups: events sort by their group, then within a
        group by the PMU they count on, and a group splits where that PMU changes; True when
        that changed an index or the number of groups (perf then warns, unless a PMU wildcard
        added events). Intel's topdown grouping is not modelled."""
        events = self.evsels
        if not any(e.leader is not None or e.retire_lat for e in events):
            return False  # every event leads itself and sorts by its own index: nothing moves
        import functools

        index = {id(e): i for i, e in enumerate(events)}
        names = {id(e): self._group_pmu_name(e) for e in events}

        def leader(e: PmuEvsel) -> PmuEvsel:
            return e.leader if e.leader is not None else e

        def sort_index(e: PmuEvsel) -> int:
            if e.dont_regroup:
                return index[id(e)]
            grouped = leader(e) is not e or e.members > 1
            return index[id(leader(e))] if grouped else index[id(e)]

        def cmp(a: PmuEvsel, b: PmuEvsel) -> int:
            ia, ib = sort_index(a), sort_index(b)
            if ia != ib:
                return ia - ib
            na, nb = names[id(a)].encode(), names[id(b)].encode()
            if na != nb:
                return -1 if na < nb else 1
            if a.retire_lat != b.retire_lat:  # x86: a retire-latency event never leads
                return 1 if a.retire_lat else -1
            return index[id(a)] - index[id(b)]

        before = sum(1 for e in events if leader(e) is e)
        ordered = sorted(events, key=functools.cmp_to_key(cmp))
        changed = any(index[id(e)] != i for i, e in enumerate(ordered))
        leaders: dict[int, PmuEvsel] = {}
        cur: PmuEvsel | None = None
        cur_group: PmuEvsel | None = None
        for e in ordered:
            if cur is None or (e.dont_regroup and "X" in self.profile.modifier_letters):
                cur = leader(e) if e.dont_regroup else e
                cur_group = cur
            if names[id(cur)] != names[id(e)]:
                cur, cur_group = e, leader(e)
            elif cur_group is not leader(e):
                cur, cur_group = e, leader(e)
            leaders[id(e)] = cur
        after = sum(1 for e in ordered if leaders[id(e)] is e)
        return changed or after != before

    def _group_pmu_name(self, e: PmuEvsel) -> str:
        """evsel__compute_group_pmu_name: a software event counts with its group's first PMU
        that is not software."""
        pmu = e.perf_pmu or self.pmus.core[0]
        lead = e.leader if e.leader is not None else e
        if not _software(pmu):
            return pmu.name
        lead_pmu = lead.perf_pmu or self.pmus.core[0]
        if not _software(lead_pmu):
            return lead_pmu.name
        if lead.members > 1:
            for other in self.evsels:
                if other is lead or other.leader is not lead:
                    continue
                other_pmu = other.perf_pmu or self.pmus.core[0]
                if not _software(other_pmu):
                    return other_pmu.name
        return pmu.name

    # ---- events of their own kind

    def numeric_type(self, type_: int, column: int) -> int:
        """``TYPE:CONFIG`` takes TYPE as a u32: higher bits are dropped without a word."""
        if type_ > 0xFFFFFFFF:
            self.truncated[column] = type_ & 0xFFFFFFFF
            self.quirks.append(f"perf keeps the low 32 bits of the type {type_}: it is {type_ & 0xFFFFFFFF}")
        return type_ & 0xFFFFFFFF

    def numeric(self, type_: int, config: int, terms: list[Term] | None, wildcard: bool = False) -> list[PmuEvsel]:
        """parse_events_add_numeric: ``TYPE:CONFIG``, ``rNNN`` and (6.12) hardware and software
        symbols; one evsel per core PMU for a hardware symbol on a hybrid machine."""
        if terms and not all(self.rules.common(t, self.errors) for t in terms):
            raise Failed
        count = len(self.pmus.core) if wildcard and len(self.pmus.core) > 1 else 1
        pmu = self.pmus.by_type(type_)
        attr = _Attr(type_, config)
        for t in terms or ():
            if t.type_term in CONFIG_FIELDS and isinstance(t.val, int):
                attr.configs[t.type_term] = t.val
        self._warn_invalid_config(pmu, attr, _named(terms))
        return [self._add("numeric", _named(terms), pmu, type_) for _ in range(count)]

    def tool(self, event: int) -> list[PmuEvsel]:
        return [self._add("tool", None, type_=1)]  # 6.12: a dummy software event

    def cache(self, name: str, terms: list[Term] | None) -> list[PmuEvsel]:
        """6.12's parse_events_add_cache: the name on every PMU that has it as an event, as a
        legacy cache event on every core PMU that does not."""
        out: list[PmuEvsel] = []
        for pmu in self.pmus.all:
            if self.pmus.have_event(pmu, name):
                out.append(self._add_pmu(pmu, terms))
                continue
            if not pmu.is_core:
                continue
            if _decode_cache(name) is None:
                self.quirks.append(f"'{name}' is no valid cache event: perf fails without a message")
                raise Failed
            if terms and not all(self.rules.common(t, self.errors) for t in terms):
                raise Failed
            out.append(self._add("cache", _named(terms) or name, pmu))
        if not out:
            raise Failed
        return out

    def breakpoint(self, addr: int, access: str | None, length: int, terms: list[Term] | None) -> list[PmuEvsel]:
        """parse_events_add_breakpoint."""
        seen: set[str] = set()
        for letter in (access or "")[:3]:
            if letter in seen:
                self.quirks.append(f"the access letter '{letter}' appears twice: perf fails without a message")
                raise Failed
            seen.add(letter)
        if terms and not all(self.rules.common(t, self.errors) for t in terms):
            raise Failed
        return [self._add("breakpoint", _named(terms), type_=5)]

    # ---- tracepoints

    def tracepoint(self, sys: str, event: str, terms: list[Term] | None, column: int) -> list[PmuEvsel]:
        """parse_events_add_tracepoint and add_tracepoint_multi_sys."""
        if terms and not all(self.rules.tracepoint(t, self.errors) for t in terms):
            raise Failed
        found = 0
        out: list[PmuEvsel] = []
        if self.system is None:  # no tracefs described: no tracepoint is known
            found = 0 if "*" in sys or "?" in sys else self._tracepoint_error(sys, event, column)
        else:
            from evspec.system.model import TracefsUnavailable

            try:
                if "*" in sys or "?" in sys:
                    for name in self._systems():
                        if fnmatch.fnmatchcase(name, sys):
                            found += self._tracepoint_events(name, event, column, out)
                else:
                    found += self._tracepoint_events(sys, event, column, out)
            except TracefsUnavailable:
                self.errors.handle(column, "unknown tracepoint", NO_TRACEFS_HELP)
                raise Failed from None
        if not found and (self.profile.tracepoint_counts or not ("*" in sys or "?" in sys)):
            self._tracepoint_error(sys, event, column)
        return out

    def _systems(self) -> tuple[str, ...]:
        assert self.system is not None
        return tuple(s for s in self.system.tracepoint_systems() if s not in SKIP_SYSTEMS)

    def _tracepoint_events(self, sys: str, event: str, column: int, out: list[PmuEvsel]) -> int:
        """add_tracepoint_multi_event: how many events matched (an error on the first one missing)."""
        assert self.system is not None
        if "*" not in event and "?" not in event:
            if self.system.tracepoint_id(sys, event) is None:
                self._tracepoint_error(sys, event, column)
            out.append(self._add("tracepoint", f"{sys}:{event}", type_=2))
            return 1
        if not self.system.has_tracepoint_system(sys):
            return 0
        found = 0
        for name in self.system.tracepoint_events(sys):
            if name in SKIP_EVENTS or not fnmatch.fnmatchcase(name, event):
                continue
            found += 1
            if self.system.tracepoint_id(sys, name) is None:
                self._tracepoint_error(sys, name, column)
            out.append(self._add("tracepoint", f"{sys}:{name}", type_=2))
        return found

    def _tracepoint_error(self, sys: str, event: str, column: int) -> NoReturn:
        template = SDT_HELP if sys.startswith("sdt_") else UNKNOWN_TRACEPOINT_HELP
        self.errors.handle(column, "unknown tracepoint",
                           template.format(path=self.profile.tracing_events, sys=sys, event=event))
        raise Failed


def _software(pmu: PerfPmu) -> bool:
    """perf_pmu__is_software."""
    if pmu.is_core or pmu.is_uncore:
        return False
    if pmu.type in (1, 2, 5) or pmu.kind == "tool":
        return True
    if pmu.type in (0, 3, 4):
        return False
    return pmu.name in ("kprobe", "msr", "uprobe")


def _bit_ranges(bits: int) -> str:
    """bitmap_scnprintf: the set bits as ``0,2,4-7``."""
    out: list[str] = []
    bit = 0
    while bits >> bit:
        if bits >> bit & 1:
            end = bit
            while bits >> (end + 1) & 1:
                end += 1
            out.append(f"{bit}-{end}" if end > bit else str(bit))
            bit = end + 1
        else:
            bit += 1
    return ",".join(out)


def _named(terms: list[Term] | None) -> str | None:
    for t in terms or ():
        if t.type_term == "name" and t.type_val == STR:
            return str(t.val)
    return None


def _decode_cache(name: str) -> int | None:
    """parse_events__decode_legacy_cache: TYPE, then an operation or a result, then the other;
    None where perf returns -EINVAL (no type, an operation the cache lacks)."""
    cache, length = parse_aliases(name, CACHE_TYPES)
    if cache < 0:
        return None
    op = result = -1
    rest: str | None = name[length + 1 :] if length + 1 <= len(name) else None
    if rest is not None:
        op, length = parse_aliases(rest, CACHE_OPS)
        if op >= 0:
            if not CACHE_OP_SUPPORT[cache] >> op & 1:
                return None
            rest = rest[length + 1 :] if length + 1 <= len(rest) else None
        else:
            result, length = parse_aliases(rest, CACHE_RESULTS)
            if result >= 0:
                rest = rest[length + 1 :] if length + 1 <= len(rest) else None
    if rest is not None:
        if op < 0:
            op, _ = parse_aliases(rest, CACHE_OPS)
            if op >= 0 and not CACHE_OP_SUPPORT[cache] >> op & 1:
                return None
        elif result < 0:
            result, _ = parse_aliases(rest, CACHE_RESULTS)
    return cache | max(op, 0) << 8 | max(result, 0) << 16


def _alias_terms(definition: str, keywords: tuple[str, ...]) -> list[Term] | None:
    """An alias definition parsed as perf parses it (parse_events_terms): its columns are those
    of the definition; None if it does not parse."""
    out: list[Term] = []
    pos = 0
    for piece in definition.split(","):
        key, eq, value = piece.partition("=")
        key, value = key.strip(), value.strip()
        if not key:
            return None
        val_col = pos + len(piece.split("=")[0]) + 1
        kind = key if key in keywords and key not in INTERNAL_TERMS else USER
        if not eq:
            out.append(Term(kind, key, 1, NUM, True, pos, 0))
        else:
            number = _number(value)
            if number is not None:
                out.append(Term(kind, key, number, NUM, False, pos, val_col))
            else:
                out.append(Term(kind, key if kind == USER else None, value, STR, False, pos, val_col))
        pos += len(piece) + 1
    return out


def _number(text: str) -> int | None:
    try:
        if text.lower().startswith("0x"):
            return read_unsigned(text[2:], 16)
        if text.isdigit():
            return read_unsigned(text, 10)
    except ValueError:
        return None
    return None
