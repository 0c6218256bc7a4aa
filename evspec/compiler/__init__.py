"""Compiling event strings into perf_event_attr plans, and the semantic checks against a system.

``compile_events(lists, system, mode)`` -> ``Plan``; ``check_semantics(events, system, mode)`` ->
diagnostics; ``list_events(system, what)`` -> what ``evspec list`` shows.
"""

from __future__ import annotations

from evspec.compiler.attr import Attr
from evspec.compiler.compile import BpfReference, GroupRef, Plan, PlannedEvent, compile_events
from evspec.compiler.listing import ListedEvent, list_events
from evspec.compiler.resolve import check_semantics, resolve_event

__all__ = [
    "Attr",
    "BpfReference",
    "GroupRef",
    "ListedEvent",
    "Plan",
    "PlannedEvent",
    "check_semantics",
    "compile_events",
    "list_events",
    "resolve_event",
]
