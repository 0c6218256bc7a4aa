"""Error recovery: after a string fails to parse, every bad item gets its own diagnostic (COMPAT 1.11).

``recover`` parses item by item; ``split_items`` finds the top-level items of a string without the
parser, so that parsing can restart after a bad one.
"""

from __future__ import annotations

import re
from functools import lru_cache

from evspec.ast import Item
from evspec.diagnostics import Diagnostic, error
from evspec.grammar.lalr import BLANKS, LalrMachine, SyntaxStop
from evspec.parser.builder import Fault
from evspec.parser.diagnose import diagnose, trailing_comma

MAX_SYNTAX_ERRORS = 50


def recover(text: str, parser: LalrMachine) -> tuple[tuple[Item, ...], list[Diagnostic]]:
    """Parse item by item after the whole string failed.

    The first error comes from parsing the whole string (so it is exactly what the grammar sees);
    then parsing restarts at the next top-level item, with the text before it blanked out, so spans
    stay offsets into ``text``.
    """
    items: list[Item] = []
    diags: list[Diagnostic] = []
    offset = 0
    while True:
        if offset and not text[offset:].strip(BLANKS):
            diags.append(trailing_comma(offset - 1))
            break
        current = " " * offset + text[offset:] if offset else text
        try:
            items.extend(parser.parse(current, "events"))  # type: ignore[arg-type]
            break
        except Fault as fault:
            diag = fault.diagnostic
        except SyntaxStop as stop:
            diag = diagnose(current, stop)
        diags.append(diag)
        segments = split_items(text, offset)
        k = next(
            (n for n, (s, e) in enumerate(segments) if s <= diag.span.start <= e), len(segments) - 1
        )
        if k > 0:
            prefix_end = segments[k - 1][1]
            try:
                items.extend(parser.parse(" " * offset + text[offset:prefix_end], "events"))  # type: ignore[arg-type]
            except (SyntaxStop, Fault):
                pass  # cannot happen if the split agrees with the grammar; then nothing to add
        if k + 1 >= len(segments):
            break
        offset = segments[k + 1][0]
        if len(diags) >= MAX_SYNTAX_ERRORS:
            last = diags.pop()
            diags.append(error(last.code, last.message, last.span, help=last.help,
                               notes=(*last.notes, "further syntax errors are not shown"),
                               perf_message=last.perf_message))
            break
    return tuple(items), diags


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
