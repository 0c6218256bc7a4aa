"""Config terms (``/term,term/``) as perf checks them: the term table, tracepoint and PMU rules,
and perf stat's restriction (perf-event-language.md §5)."""

from __future__ import annotations

from evspec.dialect.actions.errors import ErrorSlot
from evspec.dialect.engine.cint import U64_MAX, read_unsigned
from evspec.dialect.versions import INTERNAL_TERMS, STAT_TERMS, TRACEPOINT_TERMS, Profile
from evspec.span import Slotted

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


class Term(Slotted, frozen=False):
    """``struct parse_events_term``: ``type_term`` is USER or a config term name ("config",
    "driver-config", ...), ``type_val`` NUM or STR; ``err_term``/``err_val`` are the columns perf
    reports; ``array``: (start, length) ranges of a map term's index list, () for ``[all]``."""

    __slots__ = ("type_term", "config", "val", "type_val", "no_value", "err_term", "err_val", "array", "used")
    type_term: str
    config: str | None
    val: int | str
    type_val: str
    no_value: bool
    err_term: int
    err_val: int
    array: tuple[tuple[int, int], ...] | None
    used: bool

    def __init__(self, type_term: str, config: str | None, val: int | str, type_val: str, no_value: bool,
                 err_term: int, err_val: int, array: tuple[tuple[int, int], ...] | None = None,
                 used: bool = False) -> None:
        self.type_term, self.config, self.val, self.type_val = type_term, config, val, type_val
        self.no_value, self.err_term, self.err_val, self.array, self.used = no_value, err_term, err_val, array, used

    @property
    def hardcoded(self) -> bool:
        return self.type_term != USER

    def clone(self, keep_no_value: bool) -> Term:
        """parse_events_term__clone; perf 6.1 forgets ``no_value`` (and the index list)."""
        return Term(self.type_term, self.config, self.val, self.type_val, self.no_value and keep_no_value,
                    self.err_term, self.err_val)


class TermRules(Slotted):
    """The term checks of perf up to 6.6; ``stat``: perf stat called
    parse_events__shrink_config_terms()."""

    profile: Profile
    stat: bool

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


# ---- perf 6.12 and later

BRANCH_FILTERS_612 = BRANCH_FILTERS | {"no_flags", "no_cycles", "hw_index", "counter"}
SYSFS_TERM = "<sysfs term>"  # what perf calls a term that is no keyword
NUMERIC_TERMS_612 = NUMERIC_TERMS | {"config4"}
STRING_TERMS_612 = STRING_TERMS | {"raw", "aux-action"}
TRACEPOINT_TERMS_612 = TRACEPOINT_TERMS | {"aux-action"}
CPU_LIST_MAX = 0x7FFF  # INT16_MAX: perf_cpu_map__new refuses CPUs from here on


class PmuTermRules(Slotted):
    """config_term_common, config_term_tracepoint and the help perf 6.12+ prints: an unknown term
    is named by its type (``<sysfs term>`` for a word that is no keyword). ``cpu=N`` must be below
    ``max_present_cpu``; ``is_pmu(name)``: does perf_pmus__find know the name."""

    profile: Profile
    stat: bool
    max_present_cpu: int
    is_pmu: object

    def type_name(self, term_type: str) -> str:
        return SYSFS_TERM if term_type == USER else term_type

    def available(self, term_type: str) -> bool:
        return not self.stat or term_type in self.profile.stat_terms

    def static_terms(self) -> str:
        """config_terms_list: every term type in enum order that this mode allows, cut where
        perf's buffer of 12 bytes per type would overflow."""
        size = (len(self.profile.terms) + 1) * 12
        out = ""
        for name in self.profile.terms:
            if not self.available(name):
                continue
            if len(out) + len(name) + 2 >= size:
                break
            out = f"{out},{name}" if out else name
        return out

    def valid_terms_help(self, formats: str | None = None) -> str:
        if formats:
            return f"valid terms: {formats},{self.static_terms()}"
        return f"valid terms: {self.static_terms()}"

    def _type_error(self, term: Term, want: str, err: ErrorSlot) -> bool:
        if term.type_val == want:
            return False
        err.handle(term.err_val, "expected numeric value" if want == NUM else "expected string value")
        return True

    def common(self, term: Term, err: ErrorSlot) -> bool:
        """config_term_common: True if the term is fine (an error is recorded otherwise)."""
        t = term.type_term
        if t == "cpu" and "cpu" in self.profile.terms:
            if not self._cpu(term, err):
                return False
        elif t == "ratio-to-prev" and t in self.profile.terms:
            if self._type_error(term, STR, err):
                return False
            value, overflow = c_strtod(str(term.val))
            if value <= 0:
                err.handle(term.err_val, "zero or negative")
                return False
            if overflow:
                err.handle(term.err_val, "too big")
                return False
        elif t in NUMERIC_TERMS_612 and t in self.profile.terms:
            if self._type_error(term, NUM, err):
                return False
            assert isinstance(term.val, int)
            if t == "time" and term.val > 1 or t == "percore" and (term.val & UINT_MAX) > 1:
                err.handle(term.err_val, "expected 0 or 1")
                return False
            if t == "aux-sample-size" and term.val > UINT_MAX:
                err.handle(term.err_val, "too big")
                return False
        elif t in STRING_TERMS_612 and t in self.profile.terms:
            if self._type_error(term, STR, err):
                return False
            if t == "branch_type" and term.val != "no":
                unknown = _unknown_filter(str(term.val), BRANCH_FILTERS_612)
                if unknown is not None:
                    err.printed.append(f"unknown branch filter {unknown}, check man page\n")
                    err.handle(term.err_val, "invalid branch sample type")
                    return False
        else:
            err.handle(term.err_term, self.type_name(t), self.valid_terms_help())
            return False
        if not self.available(t):
            err.handle(-1, f"'{t}' is not usable in 'perf stat'")
            return False
        return True

    def _cpu(self, term: Term, err: ErrorSlot) -> bool:
        if term.type_val == NUM:
            assert isinstance(term.val, int)
            if term.val >= self.max_present_cpu:
                err.handle(term.err_val, "too big")
                return False
            return True
        text = str(term.val)
        if self.is_pmu(text):  # type: ignore[operator]
            return True
        if not cpu_list_valid(text):
            err.handle(term.err_val, "not a valid PMU or CPU number")
            return False
        return True

    def tracepoint(self, term: Term, err: ErrorSlot) -> bool:
        if term.type_term in TRACEPOINT_TERMS_612 and term.type_term in self.profile.terms:
            return self.common(term, err)
        err.handle(term.err_term, self.type_name(term.type_term), "valid terms: call-graph,stack-size\n")
        return False


def _unknown_filter(text: str, known: frozenset[str]) -> str | None:
    for part in text.split(","):
        if part.lower() not in known:
            return part
    return None


def cpu_list_valid(text: str) -> bool:
    """Whether perf_cpu_map__new(text) returns a map: CPU numbers and ranges separated by ','
    (anything after a ',' that does not start with a digit is ignored), each below INT16_MAX,
    no range backwards, no CPU twice; an empty string is the "any CPU" map."""
    if text and not text[0].isdigit():
        return False
    seen: set[int] = set()
    pos = 0
    while pos < len(text) and text[pos].isdigit():
        start, pos = _strtoul(text, pos)
        if start >= CPU_LIST_MAX or (pos < len(text) and text[pos] not in ",-\n"):
            return False
        end = start
        if pos < len(text) and text[pos] == "-":
            end, pos = _strtoul(text, pos + 1)
            if end >= CPU_LIST_MAX or (pos < len(text) and text[pos] not in ",\n") or end < start:
                return False
        for cpu in range(start, end + 1):
            if cpu in seen:
                return False
            seen.add(cpu)
        if pos < len(text):
            pos += 1
    return True


def _strtoul(text: str, pos: int) -> tuple[int, int]:
    """strtoul(text + pos, &end, 0) for what follows a digit: octal after a 0, hex after 0x."""
    import re

    m = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*").match(text, pos)
    if m is None:
        return 0, pos
    digits = m.group()
    if digits[:2] in ("0x", "0X"):
        value = read_unsigned(digits[2:], 16)
    elif digits.startswith("0") and len(digits) > 1:
        value = read_unsigned(digits, 8)
    else:
        value = read_unsigned(digits, 10)
    return min(value, U64_MAX), m.end()


def c_strtod(text: str) -> tuple[float, bool]:
    """C's strtod on ``text``: the value of its longest numeric prefix (0 if none), and whether
    it overflowed (ERANGE; perf 7.2 reads errno without clearing it, so only an overflow or
    underflow of this very call makes it "too big")."""
    import math
    import re

    m = re.compile(
        r"\s*[+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
        r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)",
        re.IGNORECASE,
    ).match(text)
    if m is None:
        return 0.0, False
    lexeme = m.group().strip()
    try:
        value = float.fromhex(lexeme) if "x" in lexeme.lower() else float(lexeme)
    except (ValueError, OverflowError):
        return math.inf, True
    mantissa_nonzero = any(c in "123456789abcdefABCDEF" for c in lexeme.split("e")[0].split("p")[0].replace("x", ""))
    overflow = math.isinf(value) and "inf" not in lexeme.lower()
    underflow = value == 0.0 and mantissa_nonzero
    return value, overflow or underflow
