"""perf's error slot: which of the errors recorded during a parse perf prints, and where.

perf 4.x-6.x keep ``struct parse_events_error``. Since 4.20 it holds two errors: the first one
recorded and the last one; from the third error on the message and help of the last slot are
replaced but **its column is not** (an accident of ``parse_events_error__handle``), so the last
message may be printed under an earlier error's caret. 4.7 had one slot whose column is set by
whoever remembers to set it. perf 6.12 and later keep every error in a list and print them all,
the newest first (``slots`` 0).
"""

from __future__ import annotations

from evspec.span import Slotted


class PerfError(Slotted):
    """One error as perf prints it: its text after ``\\___``, its caret column (0-based into
    the string; -1: under the opening quote) and the help block printed under it, if any."""

    message: str
    column: int
    help: str | None = None


class ErrorSlot(Slotted, frozen=False):
    """``slots``: 2: first and last (6.1-6.6), 1: one slot (4.7), 0: every error (6.12+);
    ``history``: everything recorded; ``printed``: warnings perf prints to stderr while parsing."""

    __slots__ = ("slots", "count", "column", "message", "help", "first", "history", "printed")
    slots: int
    count: int
    column: int
    message: str | None
    help: str | None
    first: PerfError | None
    history: list[PerfError]
    printed: list[str]

    def __init__(self, slots: int) -> None:
        self.slots, self.count, self.column = slots, 0, 0
        self.message: str | None = None
        self.help: str | None = None
        self.first: PerfError | None = None
        self.history: list[PerfError] = []
        self.printed: list[str] = []

    def handle(self, column: int | None, message: str, help: str | None = None) -> None:
        """Record an error; ``column`` None leaves the column as it is (4.7 code paths do that)."""
        self.history.append(PerfError(message, column if column is not None else self.column, help))
        if self.slots == 0:
            self.count += 1
            self.column, self.message, self.help = self.history[-1].column, message, help
            return
        if self.slots == 1 or self.count == 0:
            if column is not None:
                self.column = column
        elif self.count == 1:
            self.first = PerfError(self.message or "", self.column, self.help)
            if column is not None:
                self.column = column
        # from the third error on only the message and help move
        self.message = message
        self.help = help
        self.count += 1

    @property
    def listed(self) -> tuple[PerfError, ...]:
        """Every error in the order perf 6.12+ prints them: the newest first."""
        return tuple(reversed(self.history))

    @property
    def last(self) -> PerfError | None:
        if self.message is None:
            return None
        return PerfError(self.message, self.column, self.help)
