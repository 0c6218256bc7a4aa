"""Compiling event strings into perf_event_attr plans, and the semantic checks against a system.

``compile_events(lists, system, mode)`` -> ``Plan``; ``check_semantics(events, system, mode)`` ->
diagnostics; ``list_events(system, what)`` -> what ``evspec list`` shows. Submodules are imported
on first use, so ``evspec check`` pays only for the resolver.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing itself costs a start 2-3 ms
if TYPE_CHECKING:
    from typing import Any

    from evspec.compiler.attr import Attr
    from evspec.compiler.compile import BpfReference, GroupRef, Plan, PlannedEvent, compile_events
    from evspec.compiler.listing import ListedEvent, list_events
    from evspec.compiler.resolve import check_semantics, resolve_event

_EXPORTS = {
    "Attr": "attr",
    "BpfReference": "compile",
    "GroupRef": "compile",
    "Plan": "compile",
    "PlannedEvent": "compile",
    "compile_events": "compile",
    "ListedEvent": "listing",
    "list_events": "listing",
    "check_semantics": "resolve",
    "resolve_event": "resolve",
}

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evspec.compiler' has no attribute {name!r}")
    return getattr(importlib.import_module(f"evspec.compiler.{module}"), name)
