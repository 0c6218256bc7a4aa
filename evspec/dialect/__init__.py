"""What a given perf release does with an event string: its verdict, message, caret and quirks.

``predict(text, version)`` runs an emulation of that release's event parser: its flex lexer
(start conditions, longest match, REJECT, ignored and echoed characters, PMU-alias and ``stat()``
dependent tokens), its bison grammar with bison's LALR(1) tables and default reductions, and the
semantic actions that add events and record errors (perf-event-language.md §2-§9); from 6.12
on, the actions resolve every name through that release's list of PMUs (``pmu_actions``,
``perf_pmus``). Nothing heavy is imported until a BPF object has to be read, and nothing a check
of an event string does not import already.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from evspec.dialect.actions.errors import ErrorSlot, PerfError
from evspec.dialect.versions import VERSIONS, profile
from evspec.span import Slotted

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Literal

    from evspec.system.model import System

__all__ = ["VERSIONS", "PerfError", "PerfVerdict", "predict"]


class PerfVerdict(Slotted):
    """What one perf release does with a string: ``silent`` (rejected with no event-syntax
    block), ``error`` (the error perf shows first; None when accepted or silent),
    ``initial_error`` (6.1-6.6's "Initial error:" block), ``stderr`` (all it prints to stderr),
    ``quirk`` (why its verdict differs from a sane reading), ``stdout`` (characters its lexer
    echoed), ``evsels`` (the names of the events an accepted string adds, in order),
    ``more_errors`` (6.12+: the errors printed after ``error``) and ``ran_as`` (accepted: the
    string perf ran, without what it skipped or truncated)."""

    version: str
    accepted: bool
    silent: bool
    error: PerfError | None
    initial_error: PerfError | None
    stderr: str
    quirk: str | None
    stdout: str = ""
    evsels: tuple[str, ...] = ()
    more_errors: tuple[PerfError, ...] = ()
    ran_as: str = ""


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
    from evspec.dialect.actions.events import PerfState
    from evspec.dialect.actions.pmu_symbols import PmuSymbols
    from evspec.dialect.actions.terms import TermRules
    from evspec.dialect.engine.lalr import parse
    from evspec.dialect.grammar import tables
    from evspec.dialect.lexer import lex, stat_in
    from evspec.dialect.quirks import explain, ran_as
    from evspec.dialect.render import perf_stderr, unterminated_window

    if mode not in ("record", "stat"):
        raise ValueError(f"mode must be 'record' or 'stat' (got {mode!r})")
    p = profile(version)
    raw = text.encode(errors="surrogateescape").decode("latin-1")  # one character per byte, as perf sees it
    where = os.fspath(cwd) if cwd is not None else (system.cwd if system is not None else None)
    errors = ErrorSlot(0 if p.error_list else p.error_slots)
    symbols = PmuSymbols.of(system, second_suffix=p.pmu_symbols == "pre_suf_suf2") if p.pmu_symbols else PmuSymbols(())
    lexed = lex(raw, p, symbols, stat_in(where), errors)
    if p.pmu_names:
        from evspec.dialect.actions.pmu_actions import PmuState

        state: PerfState | PmuState = PmuState(p, system, mode == "stat", errors, raw)
    else:
        state = PerfState(p, system, mode == "stat", errors, TermRules(p, mode == "stat"), stat_in(where), where, raw,
                          earlier=tuple(earlier_events))
    outcome = parse(tables(p), iter(lexed), state)
    syntax_reported = outcome.syntax_error_at is not None and not (p.error_list and errors.count)
    if syntax_reported:
        errors.handle(outcome.syntax_error_at.loc.last, p.syntax_message)  # type: ignore[union-attr]
    nothing_found = outcome.ok and not state.evsels
    accepted = outcome.ok and not nothing_found
    quirk = explain(text, raw, p, lexed, state, outcome, accepted, syntax_reported)  # type: ignore[arg-type]
    if accepted and p.pmu_names and state.regrouped() and not state.wildcards:  # type: ignore[union-attr]
        errors.printed.append("WARNING: events were regrouped to match PMUs\n")
    if accepted:
        names = tuple(e.name or "" for e in state.evsels)
        truncated = getattr(state, "truncated", {})
        return PerfVerdict(p.version, True, False, None, None, "".join(errors.printed), quirk, lexed.echoed, names,
                           ran_as=ran_as(lexed, truncated))
    if p.error_list:
        shown: tuple[PerfError, ...] = errors.listed
        last_b, first_b = (shown[0] if shown else None), None
    else:
        last_b = errors.last
        first_b = errors.first if errors.count > 1 and p.error_slots == 2 else None
        shown = tuple(e for e in (last_b, first_b) if e is not None)
    stderr = perf_stderr(
        text,
        last_b,
        first_b,
        nothing_found=nothing_found,
        one_slot=p.error_slots == 1 and not p.error_list,
        printed=tuple(errors.printed),
        mode=mode,
        term_width=term_width,
        listed=shown if p.error_list else None,
    )
    if any(unterminated_window(text, e.column, term_width) for e in shown):
        garbage = (
            "the quoted string fills perf's buffer exactly, and perf leaves it unterminated: it prints whatever "
            "follows in memory after it"
        )
        quirk = f"{quirk}; {garbage}" if quirk else garbage
    last, first = _chars(text, last_b), _chars(text, first_b)
    more = tuple(e for e in (_chars(text, x) for x in shown[1:]) if e is not None) if p.error_list else ()
    return PerfVerdict(p.version, False, last is None, last, first, stderr, quirk, lexed.echoed, more_errors=more)


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
