"""The human diagnostic format, in the style of rustc and ruff.

::

    error[ES012]: bad modifier: 'u' repeated
     --> -e #1, col 9
      |
      | cycles:uu
      |        -^
      |        |
      |        first 'u' here
      |
      = help: write each modifier once

A diagnostic with perf's own wording for the problem ends in ``= perf: MESSAGE`` (``Target map
doesn't exist``, ``Index too large``, ...), since that is the text users search for.

The event string is shown with control and invisible characters escaped (``\\t``, ``\\x00``,
``\\u200b``) and carets are placed by display width (east-asian wide characters take two cells), so
the marks stay under the characters they point at whatever the string contains.
"""

from __future__ import annotations

import unicodedata

from evspec.diagnostics import Diagnostic, Severity, Source
from evspec.render.excerpt import clipped, clipped_all, excerpt, repeats_note
from evspec.span import Slotted, Span

TYPE_CHECKING = False  # imports for annotations only: a cold start does not pay for them
if TYPE_CHECKING:
    from collections.abc import Sequence

_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Mn", "Me", "Zl", "Zp"})
_SHORT_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}

ELLIPSIS = "…"
_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_BLUE = "\x1b[1;34m"
_SEVERITY_STYLE = {Severity.ERROR: "\x1b[1;31m", Severity.WARNING: "\x1b[1;33m", Severity.NOTE: "\x1b[1;36m"}


def display_char(ch: str) -> str:
    """How one character of an event string is shown: itself, or an escape if it is invisible."""
    if ch in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[ch]
    if unicodedata.category(ch) not in _ESCAPED_CATEGORIES:
        return ch
    cp = ord(ch)
    if cp <= 0xFF:
        return f"\\x{cp:02x}"
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def cell_width(shown: str) -> int:
    """Terminal cells taken by ``shown`` (which contains no escaped categories)."""
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in shown)


class DisplayLine(Slotted):
    """An event string as displayed, with the display column where each character starts:
    ``columns[i]`` is the cell where character ``i`` starts, ``columns[len]`` the total width."""

    text: str
    columns: tuple[int, ...]

    @classmethod
    def of(cls, event: str) -> DisplayLine:
        parts: list[str] = []
        columns: list[int] = []
        col = 0
        for ch in event:
            shown = display_char(ch)
            parts.append(shown)
            columns.append(col)
            col += cell_width(shown)
        columns.append(col)
        return cls("".join(parts), tuple(columns))

    def cells(self, start: int, end: int) -> tuple[int, int]:
        """Display columns ``[first, last)`` for the character range ``[start, end)``; never empty."""
        last_index = len(self.columns) - 1
        start = min(start, last_index)
        end = min(max(end, start), last_index)
        first = self.columns[start]
        return first, max(self.columns[end], first + 1)


def describe_source(source: Source | None) -> str:
    """``-e #1`` for the first ``-e`` argument, ``events.txt:3`` for line 3 of a file, or ``""``."""
    if source is None:
        return ""
    if source.kind == "arg":
        return f"-e #{(source.index or 0) + 1}"
    return f"{source.path}:{source.line}"


def _location(diag: Diagnostic) -> str:
    col = diag.span.start + 1
    source = diag.source
    if source is None:
        return f"col {col}"
    if source.kind == "arg":
        return f"{describe_source(source)}, col {col}"
    return f"{describe_source(source)}:{col}"


class _Mark(Slotted):
    """Display columns ``[first, last)`` marked with ``char`` ("^" for the primary span, "-" for a
    label), and the label's message."""

    first: int
    last: int
    char: str
    message: str


def _overlaps(a: _Mark, b: _Mark) -> bool:
    return a.first < b.last and b.first < a.last


class _Style(Slotted):
    color: bool
    severity: Severity

    def paint(self, text: str, code: str) -> str:
        return f"{code}{text}{_RESET}" if self.color and text else text

    def mark(self, text: str, char: str) -> str:
        return self.paint(text, _SEVERITY_STYLE[self.severity] if char == "^" else _BLUE)


def _mark_lines(marks: list[_Mark], style: _Style) -> list[str]:
    """The lines under the event string: carets and label dashes, and the label messages."""
    on_main: list[_Mark] = []
    spilled: list[_Mark] = []
    for mark in marks:
        (spilled if any(_overlaps(mark, m) for m in on_main) else on_main).append(mark)
    on_main.sort(key=lambda m: m.first)

    def draw(items: list[tuple[int, str, str]]) -> str:
        line, width = "", 0
        for col, text, char in items:
            line += " " * (col - width) + style.mark(text, char)
            width = col + len(text)
        return line

    main = [(m.first, m.char * (m.last - m.first), m.char) for m in on_main]
    rightmost = on_main[-1]
    inline = rightmost if rightmost.message else None
    if inline is not None:
        main.append((rightmost.last + 1, inline.message, inline.char))
    lines = [draw(main)]

    hanging = [m for m in on_main if m.message and m is not inline]
    if hanging:
        lines.append(draw([(m.first, "|", m.char) for m in hanging]))
        for i in range(len(hanging) - 1, -1, -1):
            row = [(m.first, "|", m.char) for m in hanging[:i]]
            row.append((hanging[i].first, hanging[i].message, hanging[i].char))
            lines.append(draw(row))
    for m in spilled:
        text = m.char * (m.last - m.first)
        tail = [(m.last + 1, m.message, m.char)] if m.message else []
        lines.append(draw([(m.first, text, m.char), *tail]))
    return lines


def render_diagnostic(diag: Diagnostic, color: bool = False) -> str:
    """One diagnostic as a block of lines, each ending in a newline."""
    style = _Style(color, diag.severity)
    line_no = str(diag.source.line) if diag.source and diag.source.kind == "file" else ""
    gutter = " " * max(1, len(line_no))
    bar = style.paint(f"{gutter} |", _BLUE)

    head = style.paint(f"{diag.severity.value}[{diag.code}]", _SEVERITY_STYLE[diag.severity])
    out = [f"{head}{style.paint(': ' + clipped(diag.message), _BOLD)}"]
    out.append(f"{gutter}{style.paint('-->', _BLUE)} {_location(diag)}")
    out.append(bar)

    part = excerpt(diag.event, diag.span)
    shown = DisplayLine.of(part.text)
    lead = ELLIPSIS if part.cut_before else ""
    number = style.paint(f"{line_no.rjust(len(gutter))} |", _BLUE)
    text = lead + shown.text + (ELLIPSIS if part.cut_after else "")
    out.append(f"{number} {text}" if text else number)
    at, indent = part.start, len(lead)

    def cells(span: Span) -> tuple[int, int]:
        first, last = shown.cells(max(0, span.start - at), max(0, span.end - at))
        return first + indent, last + indent

    marks = [_Mark(*cells(diag.span), "^", "")]
    marks += [_Mark(*cells(lb.span), "-", clipped(lb.message)) for lb in diag.labels if part.holds(lb.span)]
    out.extend(f"{bar} {line}" for line in _mark_lines(marks, style))

    notes = diag.notes + tuple(f"{lb.message} (col {lb.span.start + 1})" for lb in diag.labels
                               if not part.holds(lb.span))
    notes = clipped_all(notes)
    if diag.repeats:
        notes += (repeats_note(diag.repeats),)
    if not part.whole:
        notes += (f"the string is {part.length:,} characters long; shown from col {part.start + 1}",)
    # perf's own wording is what users search for: shown whenever perf has one
    perf = (clipped(diag.perf_message),) if diag.perf_message is not None and diag.perf_message != diag.message \
        else ()
    if diag.help or notes or perf:
        out.append(bar)
    for kind, texts in (("help", clipped_all(diag.help)), ("note", notes), ("perf", perf)):
        for text in texts:
            first, *rest = text.split("\n")
            out.append(f"{gutter} {style.paint('= ' + kind + ':', _BOLD)} {first}")
            pad = " " * (len(gutter) + len(kind) + 5)
            out.extend(f"{pad}{more}" for more in rest)
    return "\n".join(out) + "\n"


def render_text(diags: Sequence[Diagnostic], color: bool = False) -> str:
    """Every diagnostic in order, each followed by a blank line; ANSI colour only if ``color``."""
    return "".join(render_diagnostic(d, color) + "\n" for d in diags)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def summary_line(diags: Sequence[Diagnostic]) -> str:
    """``2 errors, 1 warning`` (no trailing newline); ``, 1 note`` when there are notes."""
    errors = sum(1 for d in diags if d.is_error)
    notes = sum(1 for d in diags if d.severity is Severity.NOTE)
    return counts_line(errors, len(diags) - errors - notes, notes)


def counts_line(errors: int, warnings: int, notes: int = 0) -> str:
    """``summary_line`` from the counts."""
    line = f"{_count(errors, 'error')}, {_count(warnings, 'warning')}"
    return f"{line}, {_count(notes, 'note')}" if notes else line
