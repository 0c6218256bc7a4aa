"""What every renderer shows of an event string: the whole string up to ``EXCERPT_LIMIT``
characters, else a window around the diagnostic's span, so that the output about a 1 MB string
stays a few hundred characters a finding. Messages, help and notes that quote a long piece of
the string are ``clipped`` alike."""

from __future__ import annotations

from evspec.span import Slotted, Span

#: strings up to this long are shown whole
EXCERPT_LIMIT = 400
#: characters shown before and after the span in a longer string
CONTEXT = 120
#: characters of the span itself shown at most (a bad word may be megabytes long)
SPAN_SHOWN = EXCERPT_LIMIT - 2 * CONTEXT

#: how repeats are listed: the first few of them
REPEATS_SHOWN = 10

#: a message, help or note line longer than this is shown by its head and tail
TEXT_LIMIT = 600
_TEXT_HEAD = 400
_TEXT_TAIL = 120


class Excerpt(Slotted):
    """``text`` is ``event[start:start + len(text)]``; ``length`` is the length of the whole string."""

    text: str
    start: int
    length: int

    @property
    def whole(self) -> bool:
        return self.start == 0 and len(self.text) == self.length

    @property
    def cut_before(self) -> bool:
        return self.start > 0

    @property
    def cut_after(self) -> bool:
        return self.start + len(self.text) < self.length

    def holds(self, span: Span) -> bool:
        return self.start <= span.start and span.end <= self.start + len(self.text)

    def to_json(self) -> dict[str, int]:
        return {"start": self.start, "length": self.length}


def excerpt(event: str, span: Span) -> Excerpt:
    """The part of ``event`` a renderer shows for a finding at ``span``."""
    if len(event) <= EXCERPT_LIMIT:
        return Excerpt(event, 0, len(event))
    start = max(0, span.start - CONTEXT)
    end = min(len(event), span.start + min(max(len(span), 1), SPAN_SHOWN) + CONTEXT)
    return Excerpt(event[start:end], start, len(event))


def columns_list(spans: tuple[Span, ...]) -> str:
    """``21, 26, 31 and 4 more`` (1-based columns of the first ``REPEATS_SHOWN`` spans)."""
    shown = ", ".join(str(span.start + 1) for span in spans[:REPEATS_SHOWN])
    rest = len(spans) - REPEATS_SHOWN
    return f"{shown} and {rest:,} more" if rest > 0 else shown


def repeats_note(spans: tuple[Span, ...]) -> str:
    """The note a renderer adds to a finding that recurs in its string."""
    times = "once more" if len(spans) == 1 else f"{len(spans):,} more times"
    where = "col" if len(spans) == 1 else "cols"
    return f"the same problem occurs {times} in this string ({where} {columns_list(spans)})"


def clipped(text: str) -> str:
    """``text``, or its head and tail around a ``…`` when it is longer than ``TEXT_LIMIT``."""
    if len(text) <= TEXT_LIMIT:
        return text
    return f"{text[:_TEXT_HEAD]}…[{len(text) - _TEXT_HEAD - _TEXT_TAIL:,} characters]…{text[-_TEXT_TAIL:]}"


def clipped_all(texts: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(clipped(t) for t in texts)
