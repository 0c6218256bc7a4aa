"""The one diagnostic model every stage reports in; renderers live in evspec.render."""

from __future__ import annotations

from enum import Enum

from evspec.span import Slotted, Span

TYPE_CHECKING = False  # imports for annotations only: a cold start does not pay for them
if TYPE_CHECKING:
    from collections.abc import Sequence


class Severity(str, Enum):
    """How a finding counts: an error or a warning fails a check (``--fail-on``); a note tells
    what the check could not do (names it could not verify) and fails nothing."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"  # says what evspec does differently (from libbpf, ...); never a failing finding


class Label(Slotted):
    """A secondary mark in the same event string: ``span`` with a short ``message``."""

    span: Span
    message: str


class Source(Slotted):
    """Where an event string came from: the N-th ``-e`` argument, or a line of a file.

    ``kind`` is "arg" or "file"; ``index`` (for "arg") is the 0-based position among the ``-e``
    arguments; ``path`` and ``line`` (1-based) are for "file"."""

    kind: str
    index: int | None = None
    path: str | None = None
    line: int | None = None

    def to_json(self) -> dict[str, object]:
        if self.kind == "arg":
            return {"kind": "arg", "index": self.index}
        return {"kind": "file", "path": self.path, "line": self.line}


class Diagnostic(Slotted, uncompared=("source",)):
    """A finding about one event string.

    ``code`` is stable (see ``evspec explain CODE``); ``span`` is the primary range in ``event``,
    the whole event string the diagnostic is about; ``perf_message`` is perf's own wording for the
    same condition where perf has one (for example ``Target map doesn't exist``), ``perf_help`` the
    help block perf prints with it. ``source`` (where ``event`` came from) is not compared.
    ``repeats`` are the spans where the same problem occurs again in the string (``collapsed``).
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
    event: str = ""
    source: Source | None = None
    repeats: tuple[Span, ...] = ()

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def located(self, event: str, source: Source | None = None) -> Diagnostic:
        """The same diagnostic, attached to the event string (and its origin) it describes."""
        return Diagnostic(self.code, self.severity, self.message, self.span, self.labels, self.help, self.notes,
                          self.perf_message, self.perf_help, event, source if source is not None else self.source,
                          self.repeats)

    def shifted(self, offset: int) -> Diagnostic:
        """Move every span by ``offset`` (for findings made on a substring of the event string)."""
        return Diagnostic(self.code, self.severity, self.message, self.span.shift(offset),
                          tuple(Label(lb.span.shift(offset), lb.message) for lb in self.labels), self.help,
                          self.notes, self.perf_message, self.perf_help, self.event, self.source,
                          tuple(span.shift(offset) for span in self.repeats))

    def problem(self) -> tuple[object, ...]:
        """What makes two findings the same problem: all but where they are."""
        return (self.code, self.severity, self.message, self.help, self.notes, self.perf_message, self.perf_help)


def collapsed(diags: Sequence[Diagnostic]) -> list[Diagnostic]:
    """One diagnostic per distinct problem (of one event string): the first occurrence, with the
    spans of the others as its ``repeats``, in the order of first occurrences."""
    first: dict[tuple[object, ...], int] = {}
    out: list[Diagnostic] = []
    again: dict[int, list[Span]] = {}
    for diag in diags:
        key = diag.problem()
        at = first.get(key)
        if at is None:
            first[key] = len(out)
            out.append(diag)
        else:
            again.setdefault(at, []).append(diag.span)
    for at, spans in again.items():
        d = out[at]
        out[at] = Diagnostic(d.code, d.severity, d.message, d.span, d.labels, d.help, d.notes, d.perf_message,
                             d.perf_help, d.event, d.source, (*d.repeats, *spans))
    return out


def error(code: str, message: str, span: Span, **kw: object) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, span, **kw)  # type: ignore[arg-type]


def warning(code: str, message: str, span: Span, **kw: object) -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, message, span, **kw)  # type: ignore[arg-type]


def note(code: str, message: str, span: Span, **kw: object) -> Diagnostic:
    return Diagnostic(code, Severity.NOTE, message, span, **kw)  # type: ignore[arg-type]


def fails(diag: Diagnostic, fail_on: str = "warning") -> bool:
    """Whether ``diag`` makes a check fail: an error always, a warning unless ``fail_on`` is
    ``"error"``, a note never."""
    return diag.is_error or (fail_on == "warning" and diag.severity is Severity.WARNING)


class EvspecError(Exception):
    """Raised by library code; carries the diagnostics that explain the failure."""

    def __init__(self, diagnostics: Diagnostic | tuple[Diagnostic, ...] | list[Diagnostic]) -> None:
        if isinstance(diagnostics, Diagnostic):
            diagnostics = (diagnostics,)
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        first = self.diagnostics[0].message if self.diagnostics else "error"
        super().__init__(first)
