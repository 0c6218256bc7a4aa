"""What ``evspec record`` runs, compiled before the loader starts: the events of its strings, the
automatic bpf-output event perf adds for the objects whose ``__bpf_stdout__`` map no term
configures, and (``output_events``) those evspec adds for the other perf event arrays programs send
to, once the loader has read the objects and named them. The loader's recording session compiles
nothing itself."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evspec.compiler.compile import Plan, PlannedEvent, compile_events
from evspec.span import Slotted

if TYPE_CHECKING:
    from collections.abc import Sequence

    from evspec.ast import EventList
    from evspec.system.model import System


class RecordingPlan(Slotted):
    """The compiled events of ``record``'s strings (``plan``), and the bpf-output event it opens
    when an object's output map needs one (``stdout_events``)."""

    plan: Plan
    stdout_events: tuple[PlannedEvent, ...]

    def output_events(self, names: Sequence[str]) -> tuple[PlannedEvent, ...]:
        """The automatic bpf-output events called ``names`` (``bpf_stdout.output_event_string``)."""
        from evspec.loader.lint.terms.bpf_stdout import output_event_string
        from evspec.parser import parse

        if not names:
            return ()
        return compile_events([parse(output_event_string(n)) for n in names], None, "record").events


def recording_plan(lists: Sequence[EventList], system: System | None) -> RecordingPlan:
    """``lists`` (one per ``-e``) compiled as ``record`` opens them on ``system``."""
    from evspec.loader.lint.terms.bpf_stdout import STDOUT_EVENT_STRING
    from evspec.parser import parse

    plan = compile_events(lists, system, "record")
    return RecordingPlan(plan, compile_events([parse(STDOUT_EVENT_STRING)], None, "record").events)
