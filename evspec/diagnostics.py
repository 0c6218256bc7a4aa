"""The one diagnostic model every stage reports in; renderers live in evspec.render."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from evspec.span import Span


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Label:
    """A secondary mark in the same event string: ``span`` with a short ``message``."""

    span: Span
    message: str


@dataclass(frozen=True, slots=True)
class Source:
    """Where an event string came from: the N-th ``-e`` argument, or a line of a file."""

    kind: str  # "arg" or "file"
    index: int | None = None  # for "arg": 0-based position among the -e arguments
    path: str | None = None  # for "file"
    line: int | None = None  # for "file": 1-based line number

    def to_json(self) -> dict[str, object]:
        if self.kind == "arg":
            return {"kind": "arg", "index": self.index}
        return {"kind": "file", "path": self.path, "line": self.line}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A finding about one event string.

    ``code`` is stable (see ``evspec explain CODE``); ``span`` is the primary range in ``event``;
    ``perf_message`` is perf's own wording for the same condition where perf has one (for example
    ``Target map doesn't exist``), ``perf_help`` the help block perf prints with it.
    """

    code: str
    severity: Severity
    message: str
    span: Span
    labels: tuple[Label, ...] = ()
    help: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    perf_message: str | None = None
    perf_help: str | None = None
    event: str = ""  # the whole event string the span points into
    source: Source | None = field(default=None, compare=False)

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def located(self, event: str, source: Source | None = None) -> Diagnostic:
        """The same diagnostic, attached to the event string (and its origin) it describes."""
        return replace(self, event=event, source=source if source is not None else self.source)

    def shifted(self, offset: int) -> Diagnostic:
        """Move every span by ``offset`` (for findings made on a substring of the event string)."""
        return replace(
            self,
            span=self.span.shift(offset),
            labels=tuple(Label(lb.span.shift(offset), lb.message) for lb in self.labels),
        )


def error(code: str, message: str, span: Span, **kw: object) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, span, **kw)  # type: ignore[arg-type]


def warning(code: str, message: str, span: Span, **kw: object) -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, message, span, **kw)  # type: ignore[arg-type]


class EvspecError(Exception):
    """Raised by library code; carries the diagnostics that explain the failure."""

    def __init__(self, diagnostics: Diagnostic | tuple[Diagnostic, ...] | list[Diagnostic]) -> None:
        if isinstance(diagnostics, Diagnostic):
            diagnostics = (diagnostics,)
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        first = self.diagnostics[0].message if self.diagnostics else "error"
        super().__init__(first)
