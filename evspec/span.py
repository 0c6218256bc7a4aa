"""Half-open character ranges over an event string."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class Span:
    """``[start, end)``: 0-based offsets into the event string the node or diagnostic came from."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.start < 0 or self.end < self.start:
            raise ValueError(f"invalid span [{self.start}, {self.end})")

    def __len__(self) -> int:
        return self.end - self.start

    def shift(self, offset: int) -> Span:
        return Span(self.start + offset, self.end + offset)

    def cover(self, other: Span) -> Span:
        return Span(min(self.start, other.start), max(self.end, other.end))

    def text(self, source: str) -> str:
        return source[self.start : self.end]
