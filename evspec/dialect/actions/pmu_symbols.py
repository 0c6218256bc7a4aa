"""perf's PMU alias symbol table: why ``tsc``, ``energy`` or ``smi`` lex differently per machine.

perf 4.x-6.1 build a table of every PMU alias of the machine the first time a name is lexed: an
alias ``A-B-C`` contributes the prefix ``A``, suffix ``B`` and second suffix ``C``, ``A-B`` a
prefix and a suffix, a plain alias the whole symbol (4.7 knew no second suffix: ``A-B-C`` gave the
prefix ``A`` and the suffix ``B-C``). The table is sorted with ``strcasecmp`` and searched with
``bsearch``, so a name equal to any of these pieces, in any case, becomes a special token
(perf-event-language.md §2.6). ``cpu`` is never a symbol.
"""

from __future__ import annotations

from enum import Enum

from evspec.span import Slotted

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms

if TYPE_CHECKING:
    from evspec.system.model import System


class SymbolKind(str, Enum):
    SYMBOL = "PE_KERNEL_PMU_EVENT"
    PREFIX = "PE_PMU_EVENT_PRE"
    SUFFIX = "PE_PMU_EVENT_SUF"
    SUFFIX2 = "PE_PMU_EVENT_SUF2"


def _casefold_c(text: str) -> bytes:
    """The bytes strcasecmp compares: ASCII letters lowered, everything else as is."""
    return bytes(b + 32 if 65 <= b <= 90 else b for b in text.encode("latin-1", "replace"))


class PmuSymbols(Slotted):
    """The symbol table: (strcasecmp key, kind) entries, sorted by the key."""

    entries: tuple[tuple[bytes, SymbolKind], ...]

    @classmethod
    def of(cls, system: System | None, second_suffix: bool = True) -> PmuSymbols:
        if system is None:
            return cls(())
        raw: list[tuple[str, SymbolKind]] = []
        for pmu in system.pmus():
            for alias in pmu.aliases.values():
                raw.extend(_pieces(alias.name, second_suffix))
        # glibc's qsort is a merge sort: equal keys keep their order
        ordered = sorted(((_casefold_c(s), kind) for s, kind in raw), key=lambda e: e[0])
        return cls(tuple(ordered))

    def classify(self, name: str) -> SymbolKind | None:
        """perf_pmu__parse_check: the kind of ``name``, or None for a plain name."""
        if name == "cpu" or not self.entries:
            return None
        key = _casefold_c(name)
        lo, hi = 0, len(self.entries)
        while lo < hi:  # glibc bsearch
            mid = (lo + hi) // 2
            probe = self.entries[mid][0]
            if key < probe:
                hi = mid
            elif key > probe:
                lo = mid + 1
            else:
                return self.entries[mid][1]
        return None


def _pieces(alias: str, second_suffix: bool) -> list[tuple[str, SymbolKind]]:
    first = alias.find("-")
    if first < 0:
        return [(alias, SymbolKind.SYMBOL)]
    second = alias.find("-", first + 1)
    if second < 0 or not second_suffix:
        return [(alias[:first], SymbolKind.PREFIX), (alias[first + 1 :], SymbolKind.SUFFIX)]
    return [
        (alias[:first], SymbolKind.PREFIX),
        (alias[first + 1 : second], SymbolKind.SUFFIX),
        (alias[second + 1 :], SymbolKind.SUFFIX2),
    ]
