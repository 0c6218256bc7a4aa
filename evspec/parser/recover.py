"""Error recovery: after a string fails to parse, every bad item gets its own diagnostic (COMPAT 1.11).

``recover`` parses item by item; ``split_items`` finds the top-level items of a string without the
parser, so that parsing can restart after a bad one. Each stretch of the string is parsed once
(the parser starts where the last bad item ends and stops at the next error), so recovery costs
O(n) however many items are bad.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

from evspec.ast import Item
from evspec.diagnostics import Diagnostic, error
from evspec.grammar.lalr import BLANKS, LalrMachine, SyntaxStop
from evspec.parser.builder import PARSER_ERROR, Fault
from evspec.parser.diagnose import diagnose, trailing_comma
from evspec.span import Span


def recover(text: str, parser: LalrMachine, first: SyntaxStop | Fault | None = None
            ) -> tuple[tuple[Item, ...], list[Diagnostic]]:
    """Parse item by item after the whole string failed (with ``first``, when the caller has it).

    The first error comes from parsing the whole string (so it is exactly what the grammar sees);
    then parsing restarts at the next top-level item and runs to the next error, with spans
    offsets into ``text``.
    """
    items: list[Item] = []
    diags: list[Diagnostic] = []
    segments = split_items(text)
    starts = [start for start, _ in segments]
    offset = 0
    stop = first
    while True:
        if stop is None:
            try:
                items.extend(parser.parse(text, "events", offset))  # type: ignore[arg-type]
                break
            except (SyntaxStop, Fault) as exc:
                stop = exc
        diag = stop.diagnostic if isinstance(stop, Fault) else diagnose(text, stop)
        stop = None
        diags.append(diag)
        k = _segment_at(segments, starts, diag.span.start)
        if segments[k][0] > offset:  # the good items before the bad one
            try:
                items.extend(parser.parse(text, "events", offset, segments[k - 1][1]))  # type: ignore[arg-type]
            except (SyntaxStop, Fault):
                pass  # cannot happen if the split agrees with the grammar; then nothing to add
        k += 1
        while k < len(segments) and not text[segments[k][0]:segments[k][1]].strip(BLANKS):
            empty = _empty_item(segments, k)
            if empty.span != diag.span:  # the comma the error was about
                diags.append(empty)
            k += 1
        if k >= len(segments):
            break
        offset = segments[k][0]
    return tuple(items), diags


def _segment_at(segments: list[tuple[int, int]], starts: list[int], pos: int) -> int:
    """The first segment whose ``[start, end]`` holds ``pos`` (the last one if none does)."""
    k = max(0, bisect_right(starts, pos) - 1)
    if k > 0 and segments[k - 1][1] >= pos:  # pos is the end of the one before (an empty next)
        k -= 1
    return k if segments[k][0] <= pos <= segments[k][1] else len(segments) - 1


def _empty_item(segments: list[tuple[int, int]], k: int) -> Diagnostic:
    """The finding about an item that holds nothing: a trailing ',' at the end, else the ',' after it."""
    start, end = segments[k]
    if k == len(segments) - 1:
        return trailing_comma(start - 1)
    return error("ES001", "unexpected ',' (an event must come first)", Span(end, end + 1),
                 perf_message=PARSER_ERROR)


@lru_cache(maxsize=1)
def _split_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A BPF path at an event start (as BPF_PATH in the grammar), and a breakpoint '/LEN'."""
    path = re.compile(
        r"[A-Za-z0-9_./:\-](?:[A-Za-z0-9_./:\- \t]*[A-Za-z0-9_./:\-])?\.(?:obj|o|c)"
        r"(?=[/:]|[ \t\n\r\f\v]*(?:[,}]|\Z))"
    )
    return path, re.compile(r"/(?:0x[0-9a-fA-F]+|[0-9]+)(?=[:,} \t\n\r\f\v]|\Z)")


def split_items(text: str, start: int = 0) -> list[tuple[int, int]]:
    """The top-level items of ``text[start:]`` as ``(start, end)`` pairs (separators excluded).

    Commas inside ``{...}``, inside term lists ``/.../``, index lists ``[...]`` and quoted values do
    not separate items; BPF paths (which may contain ``/`` and ``:``) are skipped whole.
    """
    path_at, bp_length = _split_patterns()
    segments: list[tuple[int, int]] = []
    n = len(text)
    i = seg_start = start
    depth = 0
    at_event = True
    while i < n:
        c = text[i]
        if at_event:
            if c in BLANKS:
                i += 1
                continue
            at_event = False
            m = path_at.match(text, i)
            if m:
                i = m.end()
                continue
        if c == ",":
            if depth == 0:
                segments.append((seg_start, i))
                seg_start = i + 1
            at_event = True
        elif c == "{":
            depth += 1
            at_event = True
        elif c == "}":
            depth = max(0, depth - 1)
        elif c == "/" and not bp_length.match(text, i):
            i = _skip_term_list(text, i + 1)
        elif c == "'":
            close = text.find("'", i + 1)
            i = n if close < 0 else close
        i += 1
    segments.append((seg_start, n))
    return segments


def _skip_term_list(text: str, i: int) -> int:
    """Index of the '/' that closes a term list opened before ``i`` (or the end of the text)."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "/":
            return i
        if c == "'":
            close = text.find("'", i + 1)
            if close < 0:
                return n
            i = close
        elif c == "[":
            close = text.find("]", i + 1)
            if close < 0:
                return n
            i = close
        i += 1
    return n
