"""What a given perf release does with an event string: its verdict, message, caret and quirks.

``predict(text, version)`` runs an emulation of that release's event parser: its flex lexer
(start conditions, longest match, REJECT, ignored and echoed characters, PMU-alias and ``stat()``
dependent tokens), its bison grammar with bison's LALR(1) tables and default reductions, and the
semantic actions that add events and record errors (perf-event-language.md §2-§9). Nothing heavy
is imported until a BPF object has to be read.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from evspec.dialect.errors import ErrorSlot, PerfError
from evspec.dialect.versions import VERSIONS, profile

if TYPE_CHECKING:
    from evspec.system.model import System

__all__ = ["VERSIONS", "PerfError", "PerfVerdict", "predict"]


@dataclass(frozen=True, slots=True)
class PerfVerdict:
    version: str
    accepted: bool
    silent: bool  # rejected and perf prints no event-syntax block
    error: PerfError | None  # the error perf shows first (None when accepted or silent)
    initial_error: PerfError | None  # the "Initial error:" block
    stderr: str  # what that perf prints to stderr, '' if accepted
    quirk: str | None  # why this perf's verdict differs from a sane reading, when it's a quirk
    stdout: str = ""  # characters perf's lexer echoed to stdout
    evsels: tuple[str, ...] = ()  # names of the events an accepted string adds, in order


def predict(
    text: str,
    version: str = "6.1",
    *,
    system: System | None = None,
    cwd: Path | None = None,
    mode: Literal["record", "stat"] = "record",
    term_width: int = 80,
    earlier_events: Sequence[str] = (),
) -> PerfVerdict:
    """What perf ``version`` does with ``perf MODE -e TEXT`` on ``system`` in ``cwd``, after
    earlier ``-e`` options that added the events named ``earlier_events`` (see ``evsels``)."""
    from evspec.dialect.events import PerfState
    from evspec.dialect.grammar import tables
    from evspec.dialect.lalr import parse
    from evspec.dialect.lexer import lex, stat_in
    from evspec.dialect.pmu_symbols import PmuSymbols
    from evspec.dialect.quirks import explain
    from evspec.dialect.render import perf_stderr, unterminated_window
    from evspec.dialect.terms import TermRules

    if mode not in ("record", "stat"):
        raise ValueError(f"mode must be 'record' or 'stat' (got {mode!r})")
    p = profile(version)
    raw = text.encode(errors="surrogateescape").decode("latin-1")  # one character per byte, as perf sees it
    where = os.fspath(cwd) if cwd is not None else (system.cwd if system is not None else None)
    symbols = PmuSymbols.of(system, second_suffix=p.pmu_symbols == "pre_suf_suf2")
    lexed = lex(raw, p, symbols, stat_in(where))
    errors = ErrorSlot(p.error_slots)
    state = PerfState(p, system, mode == "stat", errors, TermRules(p, mode == "stat"), stat_in(where), where, raw,
                      earlier=tuple(earlier_events))
    outcome = parse(tables(p), iter(lexed.tokens), state)
    if outcome.syntax_error_at is not None:
        errors.handle(outcome.syntax_error_at.loc.last, "parser error")
    nothing_found = outcome.ok and not state.evsels
    accepted = outcome.ok and not nothing_found
    quirk = explain(text, raw, p, lexed, state, outcome, accepted)
    if accepted:
        names = tuple(e.name for e in state.evsels)
        return PerfVerdict(p.version, True, False, None, None, "", quirk, lexed.echoed, names)
    last = _chars(text, errors.last)
    first = _chars(text, errors.first) if errors.count > 1 and p.error_slots == 2 else None
    stderr = perf_stderr(
        text,
        last,
        first,
        nothing_found=nothing_found,
        one_slot=p.error_slots == 1,
        printed=tuple(errors.printed),
        mode=mode,
        term_width=term_width,
    )
    if any(e is not None and unterminated_window(text, e.column, term_width) for e in (last, first)):
        garbage = (
            "the quoted string fills perf's buffer exactly, and perf leaves it unterminated: it prints whatever "
            "follows in memory after it"
        )
        quirk = f"{quirk}; {garbage}" if quirk else garbage
    return PerfVerdict(p.version, False, last is None, last, first, stderr, quirk, lexed.echoed)


def _chars(text: str, err: PerfError | None) -> PerfError | None:
    """The error with its byte column turned into an index into ``text``."""
    if err is None or err.column <= 0:
        return err
    consumed = 0
    for i, ch in enumerate(text):
        size = len(ch.encode(errors="surrogateescape"))
        if consumed + size > err.column:
            return PerfError(err.message, i, err.help)
        consumed += size
    return PerfError(err.message, len(text) + err.column - consumed, err.help)
