"""perf's legacy cache event names as the dialect engine reads them: the spellings of each cache
type, operation and result in perf's table order (``evsel__hw_cache``, ``_op``, ``_result``),
which operations each cache supports, and perf's ``parse_aliases``.

The spellings are evspec's own word tables (``evspec.lexicon``), regrouped by perf's rows, so
that predicting a release loads nothing the check of an event string does not load already.
"""

from __future__ import annotations

from evspec.lexicon import CACHE_OPS as _OPS
from evspec.lexicon import CACHE_RESULTS as _RESULTS
from evspec.lexicon import CACHE_SUPPORTED_OPS, CacheOp, CacheResult, CacheType
from evspec.lexicon import CACHE_TYPES as _TYPES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping


def _rows(spellings: Mapping[str, object], order: Iterable[object]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(word for word, row in spellings.items() if row is member) for member in order)


CACHE_TYPES: tuple[tuple[str, ...], ...] = _rows(_TYPES, CacheType)
CACHE_OPS: tuple[tuple[str, ...], ...] = _rows(_OPS, CacheOp)
CACHE_RESULTS: tuple[tuple[str, ...], ...] = _rows(_RESULTS, CacheResult)
#: which operations each cache type supports (bit N = operation N)
CACHE_VALID_OPS: tuple[int, ...] = tuple(
    sum(1 << i for i, op in enumerate(CacheOp) if op in CACHE_SUPPORTED_OPS[cache]) for cache in CacheType
)


def parse_aliases(word: str, table: tuple[tuple[str, ...], ...]) -> tuple[int, int]:
    """perf's parse_aliases: (the first row one of whose spellings is a case-insensitive prefix
    of ``word``, the length of its longest such spelling), or (-1, -1)."""
    lower = word.lower()
    for index, spellings in enumerate(table):
        longest = max((len(s) for s in spellings if lower.startswith(s.lower())), default=-1)
        if longest > 0:
            return index, longest
    return -1, -1
