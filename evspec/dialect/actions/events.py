"""The semantic side of perf's parser: adding events while parsing, with perf's checks and errors.

Each method mirrors one ``parse_events_add_*`` function of perf's ``util/parse-events.c`` closely
enough to record the same errors, at the same columns, in the same order, and to fail silently
where perf does. An evsel is reduced to what later steps need: how many there are (group
modifiers, "event parser found nothing") and their names (``map:…event=`` looks them up).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable

from evspec.dialect.actions.cache_names import CACHE_OPS, CACHE_RESULTS, CACHE_TYPES
from evspec.dialect.actions.cache_names import CACHE_VALID_OPS as CACHE_OP_SUPPORT
from evspec.dialect.actions.errors import ErrorSlot
from evspec.dialect.actions.terms import NUM, STR, USER, Term, TermRules
from evspec.dialect.engine.cint import read_unsigned
from evspec.dialect.versions import Profile
from evspec.span import Slotted

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms

if TYPE_CHECKING:
    from typing import NoReturn

    from evspec.system.model import Pmu, PmuAlias, System

TRACING_EVENTS = "/sys/kernel/tracing/events"
SKIP_SYSTEMS = frozenset({".", "..", "enable", "header_event", "header_page"})
SKIP_EVENTS = frozenset({".", "..", "enable", "filter"})
UNKNOWN_TRACEPOINT_HELP = (
    "Error:\tFile {path}/{sys}/{event} not found.\n"
    "Hint:\tPerhaps this kernel misses some CONFIG_ setting to enable this feature?.\n"
)
SDT_HELP = (
    "Error:\tFile {path}/{sys}/{event} not found.\n"
    "Hint:\tSDT event cannot be directly recorded on.\n"
    "\tPlease first use 'perf probe {sys}:{event}' before recording it.\n"
)
NO_TRACEFS_HELP = (
    "Error:\tUnable to find debugfs/tracefs\n"
    "Hint:\tWas your kernel compiled with debugfs/tracefs support?\n"
    "Hint:\tIs the debugfs/tracefs filesystem mounted?\n"
    "Hint:\tTry 'sudo mount -t debugfs nodev /sys/kernel/debug'"
)


class Failed(Exception):
    """An add function returned an error (what it recorded, if anything, is in the error slot)."""


class Evsel(Slotted):
    """An event perf added: its name and kind ("hardware", "software", "tool", "cache", "raw",
    "numeric", "breakpoint", "tracepoint", "pmu")."""

    name: str
    kind: str


class PerfState:
    """``struct parse_events_state`` plus the machine perf runs on: ``exists`` is stat() relative
    to perf's working directory, ``evsels`` every evsel added in order, ``probes`` the probe
    events BPF objects created, ``earlier`` the evsel names of the earlier -e options (where
    ``map:M.event=`` looks)."""

    __slots__ = ("profile", "system", "stat", "errors", "rules", "exists", "cwd", "text", "evsels", "probes",
                 "quirks", "earlier")

    def __init__(self, profile: Profile, system: System | None, stat: bool, errors: ErrorSlot, rules: TermRules,
                 exists: Callable[[str], bool], cwd: str | None, text: str, earlier: tuple[str, ...] = ()) -> None:
        self.profile, self.system, self.stat, self.errors, self.rules = profile, system, stat, errors, rules
        self.exists, self.cwd, self.text, self.earlier = exists, cwd, text, earlier
        self.evsels: list[Evsel] = []
        self.probes: dict[str, int] = {}
        self.quirks: list[str] = []

    # ---- helpers

    def add(self, kind: str, name: str) -> list[Evsel]:
        evsel = Evsel(name, kind)
        self.evsels.append(evsel)
        return [evsel]

    # ---- numeric, symbolic, tool, raw

    def add_numeric(self, kind: str, name: str, terms: list[Term] | None) -> list[Evsel]:
        if terms and not self.rules.config_attr(terms, self.errors, "common"):
            raise Failed
        return self.add(kind, _named(terms, name))

    # ---- legacy cache

    def add_cache(self, words: list[str], terms: list[Term] | None) -> list[Evsel]:
        """parse_events_add_cache: the first word is the type, then up to two ops/results."""
        cache_type = _alias_index(words[0], CACHE_TYPES)
        if cache_type < 0:
            raise Failed
        op = result = -1
        for word in words[1:3]:
            if op == -1:
                op = _alias_index(word, CACHE_OPS)
                if op >= 0:
                    if not CACHE_OP_SUPPORT[cache_type] >> op & 1:
                        self.quirks.append(
                            f"'{CACHE_TYPES[cache_type][0]}' does not support the operation '{word}': perf "
                            "fails without printing any message"
                        )
                        raise Failed
                    continue
            if result == -1:
                result = _alias_index(word, CACHE_RESULTS)
        if terms and not self.rules.config_attr(terms, self.errors, "common"):
            raise Failed
        return self.add("cache", _named(terms, "-".join(words)))

    # ---- breakpoints

    def add_breakpoint(self, access: str | None) -> list[Evsel]:
        seen: set[str] = set()
        for letter in (access or "")[:3]:
            if letter in seen:
                self.quirks.append(f"the access letter '{letter}' appears twice: perf fails without a message")
                raise Failed
            seen.add(letter)
        return self.add("breakpoint", "mem")

    # ---- tracepoints

    def add_tracepoint(self, sys: str, event: str, terms: list[Term] | None, column: int) -> list[Evsel]:
        """parse_events_add_tracepoint; ``column`` is where this release puts tracepoint errors."""
        if terms and not self.rules.config_attr(terms, self.errors, "tracepoint"):
            raise Failed
        if f"{sys}:{event}" in self.probes:  # a probe event a BPF object created during this parse
            return self.add("tracepoint", f"{sys}:{event}")
        out: list[Evsel] = []
        if "*" in sys or "?" in sys:
            systems = self._trace_systems(sys, event, column)
            for name in systems:
                if not fnmatch.fnmatchcase(name, sys):
                    continue
                out += self._tracepoint_event(name, event, column)
            return out
        return self._tracepoint_event(sys, event, column)

    def _trace_systems(self, sys: str, event: str, column: int) -> tuple[str, ...]:
        from evspec.system.model import TracefsUnavailable

        if self.system is None:
            self._tracepoint_error(column, sys, event, tracefs=False)
        try:
            known = self.system.tracepoint_systems()
        except TracefsUnavailable:
            self._tracepoint_error(column, sys, event, tracefs=False)
            raise AssertionError from None
        return tuple(s for s in known if s not in SKIP_SYSTEMS)  # directory order: perf's

    def _tracepoint_event(self, sys: str, event: str, column: int) -> list[Evsel]:
        from evspec.system.model import TracefsUnavailable

        if self.system is None:
            self._tracepoint_error(column, sys, event, tracefs=False)
        try:
            if "*" in event or "?" in event:
                if not self.system.has_tracepoint_system(sys):
                    self._tracepoint_error(column, sys, event)
                names = [e for e in self.system.tracepoint_events(sys) if e not in SKIP_EVENTS]
                found = [e for e in names if fnmatch.fnmatchcase(e, event)]
                if not found:
                    self._tracepoint_error(column, sys, event)
                return [self.add("tracepoint", f"{sys}:{e}")[0] for e in found]
            if self.system.tracepoint_id(sys, event) is None:
                self._tracepoint_error(column, sys, event)
        except TracefsUnavailable:
            self._tracepoint_error(column, sys, event, tracefs=False)
        return self.add("tracepoint", f"{sys}:{event}")

    def _tracepoint_error(self, column: int, sys: str, event: str, tracefs: bool = True) -> NoReturn:
        if not tracefs:
            help = NO_TRACEFS_HELP
        else:
            template = SDT_HELP if sys.startswith("sdt_") else UNKNOWN_TRACEPOINT_HELP
            help = template.format(path=TRACING_EVENTS, sys=sys, event=event)
        self.errors.handle(column, "unknown tracepoint", help)
        raise Failed

    # ---- PMUs

    def pmus(self) -> tuple[Pmu, ...]:
        return self.system.pmus() if self.system is not None else ()

    def add_pmu(self, name: str, terms: list[Term] | None, column: int = 0) -> list[Evsel]:
        """parse_events_add_pmu: PMU ``name`` with ``terms`` (aliases are expanded in place)."""
        pmu = self.system.pmu(name) if self.system is not None else None
        if pmu is None:
            if self.profile.unknown_pmu_message:
                self.errors.handle(column, f"Cannot find PMU `{name}'. Missing kernel support?")
            raise Failed
        if terms is None:
            return self.add("pmu", name)
        if not self._expand_aliases(pmu, terms):
            raise Failed
        if not self.rules.config_attr(terms, self.errors, "pmu"):
            raise Failed
        if not self._config_formats(pmu, terms):
            raise Failed
        return self.add("pmu", _named(terms, name))

    def _expand_aliases(self, pmu: Pmu, terms: list[Term]) -> bool:
        """perf_pmu__check_alias: replace alias terms by their definitions; two aliases in one
        event conflict on their scale (every alias has one, 1.0 by default) and fail silently."""
        expanded: list[Term] = []
        seen_alias = False
        for term in terms:
            alias = self._find_alias(pmu, term)
            if alias is None:
                expanded.append(term)
                continue
            if seen_alias:
                self.quirks.append(
                    f"two aliases of PMU '{pmu.name}' in one event: perf rejects the second (their unit/scale "
                    "would conflict) without a message"
                )
                return False
            seen_alias = True
            expanded.extend(_alias_terms(alias.definition))
        terms[:] = expanded
        return True

    @staticmethod
    def _find_alias(pmu: Pmu, term: Term) -> PmuAlias | None:
        if term.hardcoded:
            return None
        if term.type_val == NUM:
            if term.val != 1 or term.config is None or pmu.format(term.config) is not None:
                return None
            name = term.config
        else:
            if (term.config or "").lower() != "event":
                return None
            name = str(term.val)
        return pmu.alias(name)

    def _config_formats(self, pmu: Pmu, terms: list[Term]) -> bool:
        """perf_pmu__config_terms: every sysfs term must be a format term of the PMU."""
        for term in terms:
            if term.used or term.hardcoded:
                continue
            fmt = pmu.format(term.config or "")
            if fmt is None:
                formats = ",".join(sorted(pmu.formats))
                self.errors.handle(
                    term.err_term,
                    f"unknown term '{term.config}' for pmu '{pmu.name}'",
                    self.rules.valid_terms_help(formats or None),
                )
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
                supplied = [t for t in terms if t.type_val == NUM and t.config == term.config and t is not term]
                if not supplied:
                    self.quirks.append(
                        f"the alias needs '{term.config}=VALUE': perf fails without a message (it says so only with -v)"
                    )
                    return False
                supplied[0].used = True
                assert isinstance(supplied[0].val, int)
                value = supplied[0].val
            if value > fmt.max_value:
                self.errors.handle(term.err_val, f"value too big for format, maximum is {fmt.max_value}")
                return False
        return True

    def add_pmu_wildcard(self, name: str, terms: list[Term] | None, column: int) -> list[Evsel]:
        """The ``PE_NAME opt_pmu_config`` action: the literal PMU, then every PMU named NAME,
        NAME_<digits> or NAME<digits> (``uncore_`` stripped), each with a copy of the terms."""
        original = [t.clone(keep_no_value=True) for t in terms] if terms is not None else None
        try:
            return self.add_pmu(name, terms, column)
        except Failed:
            pass
        out: list[Evsel] = []
        for pmu in self.pmus():
            if not _wildcard_match(pmu.name, name):
                continue
            copy = [t.clone(not self.profile.no_value_copy_bug) for t in original] if original is not None else None
            try:
                out += self.add_pmu(pmu.name, copy, column)
            except Failed:
                continue
            if original and any(t.no_value for t in original) and self.profile.no_value_copy_bug:
                self.quirks.append(
                    "perf retries the PMU with a copy of the terms that forgets which terms had no value, so "
                    "the 'no value assigned for term' error of the first try is dropped"
                )
        if out:
            return out
        if self.profile.name_as_event:
            try:
                return self.multi_pmu_add(name, terms)
            except Failed:
                if self.profile.bad_event_messages:
                    self.errors.handle(column, "Bad event or PMU", f"Unabled to find PMU or event on a PMU of '{name}'")
                raise
        raise Failed

    def multi_pmu_add(self, alias: str, terms: list[Term] | None) -> list[Evsel]:
        """parse_events_multi_pmu_add: the alias on every PMU that has it."""
        out: list[Evsel] = []
        for pmu in self.pmus():
            for candidate in pmu.aliases.values():
                if candidate.name.lower() != alias.lower():
                    continue
                head = [t.clone(not self.profile.no_value_copy_bug) for t in terms or ()]
                head.append(Term(USER, alias, 1, NUM, False, 0, 0))
                try:
                    out += self.add_pmu(pmu.name, head)
                except Failed:
                    continue
        if not out:
            if not any(p.alias(alias) for p in self.pmus()):
                self.quirks.append(f"no PMU has an alias '{alias}': perf fails without a message")
            raise Failed
        return out

    # ---- modifiers

    def modifier(self, evsels: list[Evsel], text: str, group: bool) -> bool:
        """parse_events__modifier_event: check_modifier, then get_event_modifier (per evsel for
        a group, so an empty group never fails)."""
        if len(text) > self.profile.modifier_max:
            return False
        for i, letter in enumerate(text):
            if letter != "p" and letter in text[i + 1 :]:
                return False
        if group and not evsels:
            return True
        return text.count("p") <= 3


def _alias_index(word: str, table: tuple[tuple[str, ...], ...]) -> int:
    """perf's parse_aliases: the first entry one of whose spellings is a case-insensitive prefix."""
    low = word.lower()
    for i, spellings in enumerate(table):
        if any(low.startswith(s.lower()) for s in spellings):
            return i
    return -1


def _wildcard_match(pmu_name: str, token: str) -> bool:
    name = pmu_name
    if name.startswith("uncore_") and not token.startswith("uncore_"):
        name = name[len("uncore_") :]
    if not fnmatch.fnmatchcase(name, token + "*") or not name.startswith(token):
        return False
    rest = name[len(token) :]
    if rest.startswith("_"):
        rest = rest[1:]
        return rest.isdigit()
    return rest == "" or rest.isdigit()


def _alias_terms(definition: str) -> list[Term]:
    """An alias definition (``event=0x3c,umask=?``) as terms; perf lexes it as a separate string,
    so the error columns point into the definition, not the event string."""
    out: list[Term] = []
    pos = 0
    for piece in definition.strip().split(","):
        key, eq, value = piece.partition("=")
        key = key.strip()
        value = value.strip()
        val_col = pos + len(key) + 1
        if not eq:
            out.append(Term(USER, key, 1, NUM, True, pos, 0))
        else:
            number = _number(value)
            if number is not None:
                out.append(Term(USER, key, number, NUM, False, pos, val_col))
            else:
                out.append(Term(USER, key, value, STR, False, pos, val_col))
        pos += len(piece) + 1
    return out


def _number(text: str) -> int | None:
    try:
        if text.startswith("0x"):
            return read_unsigned(text[2:], 16)
        if text.isdigit():
            return read_unsigned(text, 10)
    except ValueError:
        return None
    return None


def _named(terms: list[Term] | None, default: str) -> str:
    """The evsel's name: its first ``name=`` term, else ``default``."""
    for t in terms or ():
        if t.type_term == "name" and t.type_val == STR:
            return str(t.val)
    return default
