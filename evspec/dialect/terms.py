"""Config terms (``/term,term/``) as perf checks them: the term table, tracepoint and PMU rules,
and perf stat's restriction (perf-event-language.md §5)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from evspec.dialect.errors import ErrorSlot
from evspec.dialect.versions import INTERNAL_TERMS, STAT_TERMS, TRACEPOINT_TERMS, Profile

USER = "user"
NUM = "num"
STR = "str"
UINT_MAX = 0xFFFFFFFF

BRANCH_FILTERS = frozenset(
    {"u", "k", "hv", "any", "any_call", "any_ret", "ind_call", "abort_tx", "in_tx", "no_tx", "cond",
     "ind_jmp", "call", "save_type", "stack", "priv"}
)  # fmt: skip
NUMERIC_TERMS = frozenset(
    {"config", "config1", "config2", "config3", "period", "freq", "time", "stack-size", "inherit",
     "no-inherit", "overwrite", "no-overwrite", "max-stack", "nr", "percore", "aux-output",
     "aux-sample-size"}
)  # fmt: skip
STRING_TERMS = frozenset({"name", "metric-id", "call-graph", "branch_type"})


@dataclass(slots=True)
class Term:
    """``struct parse_events_term``: ``err_term``/``err_val`` are the columns perf reports."""

    type_term: str  # USER or a config term name ("config", "driver-config", ...)
    config: str | None
    val: int | str
    type_val: str  # NUM or STR
    no_value: bool
    err_term: int
    err_val: int
    array: tuple[tuple[int, int], ...] | None = None  # (start, length) ranges; () = [all]
    used: bool = False

    @property
    def hardcoded(self) -> bool:
        return self.type_term != USER

    def clone(self, keep_no_value: bool) -> Term:
        """parse_events_term__clone; perf 6.1 forgets ``no_value`` (and the index list)."""
        return replace(self, no_value=self.no_value and keep_no_value, array=None, used=False)


@dataclass(frozen=True, slots=True)
class TermRules:
    profile: Profile
    stat: bool  # perf stat: parse_events__shrink_config_terms() was called

    def available(self, term_type: str) -> bool:
        return not self.stat or term_type in STAT_TERMS

    def static_terms(self) -> str:
        """config_terms_list: the keywords usable here, in perf's order."""
        names = [t for t in self.profile.terms if self.available(t) and t not in ("raw", "legacy-cache", "hardware")]
        return ",".join(names)

    def valid_terms_help(self, extra: str | None = None) -> str:
        if extra:
            return f"valid terms: {extra},{self.static_terms()}"
        return f"valid terms: {self.static_terms()}"

    def _type_error(self, term: Term, want: str, err: ErrorSlot) -> bool:
        if term.type_val == want:
            return False
        err.handle(term.err_val, "expected numeric value" if want == NUM else "expected string value")
        return True

    def common(self, term: Term, err: ErrorSlot) -> bool:
        """config_term_common: True if the term is fine (an error is recorded otherwise)."""
        t = term.type_term
        if t in NUMERIC_TERMS and t in self.profile.terms:
            if self._type_error(term, NUM, err):
                return False
            assert isinstance(term.val, int)
            if t == "time" and term.val > 1 or t == "percore" and (term.val & UINT_MAX) > 1:
                err.handle(term.err_val, "expected 0 or 1")
                return False
            if t == "aux-sample-size" and term.val > UINT_MAX:
                err.handle(term.err_val, "too big")
                return False
        elif t in STRING_TERMS and t in self.profile.terms:
            if self._type_error(term, STR, err):
                return False
            if t == "branch_type":
                assert isinstance(term.val, str)
                unknown = _unknown_branch_filter(term.val) if term.val != "no" else None
                if unknown is not None:
                    err.printed.append(f"unknown branch filter {unknown}, check man page\n")
                    err.handle(term.err_val, "invalid branch sample type")
                    return False
        else:
            err.handle(term.err_term, "unknown term", self.valid_terms_help())
            return False
        if not self.available(t):
            err.handle(-1, f"'{t}' is not usable in 'perf stat'")
            return False
        return True

    def tracepoint(self, term: Term, err: ErrorSlot) -> bool:
        if term.type_term in TRACEPOINT_TERMS and term.type_term in self.profile.terms:
            return self.common(term, err)
        err.handle(term.err_term, "unknown term", "valid terms: call-graph,stack-size\n")
        return False

    def pmu(self, term: Term, err: ErrorSlot) -> bool:
        """config_term_pmu: sysfs and driver terms pass, the rest as common (6.5+: raw/cache/hw
        terms are resolved by the PMU code first)."""
        if term.type_term in (USER, "driver-config") or term.type_term in INTERNAL_TERMS:
            return True
        return self.common(term, err)

    def config_attr(self, terms: list[Term] | None, err: ErrorSlot, check: str) -> bool:
        fn = {"common": self.common, "tracepoint": self.tracepoint, "pmu": self.pmu}[check]
        return all(fn(t, err) for t in terms or ())


def _unknown_branch_filter(text: str) -> str | None:
    """perf's parse_branch_str: the first piece of the comma list that names no branch filter."""
    for part in text.split(","):
        if part.lower() not in BRANCH_FILTERS:
            return part
    return None
