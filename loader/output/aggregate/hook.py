"""``record``'s hook for the histograms and tables of the objects' maps
(``loader/output/aggregate``): the printer for a prepared session, and the thread that prints
them every ``--interval``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evspec.loader.output.aggregate.printer import AggregatePrinter
    from evspec.loader.session import RecordSession


def aggregate_printer(session: RecordSession, compiled: object | None, top: int | None) -> AggregatePrinter:
    """The aggregates of the session's objects, with the hints of their events' terms
    (``session.objects`` are in the order of the plan's BPF events); none without ``compiled``."""
    from evspec.loader.lint.terms.print_terms import event_hints
    from evspec.loader.output.aggregate.printer import AggregatePrinter

    if compiled is None:
        return AggregatePrinter(session.kernel, [], top)
    events = [ref.event for ref in compiled.plan.bpf]  # type: ignore[attr-defined]
    objects = [(obj.live, event_hints(event)) for obj, event in zip(session.objects, events, strict=True)]
    return AggregatePrinter(session.kernel, objects, top)


@contextmanager
def every_interval(printer: AggregatePrinter, seconds: float | None, write: Callable[[bytes], None],
                   fmt_json: bool) -> Iterator[None]:
    """Print (and clear) ``printer``'s aggregates every ``seconds`` while the body runs. A map
    that cannot be read (``ObjectError``, a kernel error included) stops the printing; it is
    raised when the body is done."""
    from evspec.loader.errors import ObjectError

    if seconds is None or not printer:
        yield
        return
    done = threading.Event()
    failures: list[ObjectError] = []

    def tick() -> None:
        try:
            while not done.wait(seconds):
                write((printer.json(reset=True, at="interval") if fmt_json
                       else printer.text(reset=True, stamp=True)).encode())
        except ObjectError as exc:
            failures.append(exc)

    thread = threading.Thread(target=tick, name="evspec-interval", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
    if failures:
        raise failures[0]
