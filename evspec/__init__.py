"""evspec: the Linux perf event-specification language, parsed, checked, compiled and loaded.

The Python API (docs/api.md): ``parse``, ``check_strings`` (``evspec.check`` is the module of the
check stage), ``compile``, ``load_system``, ``read_object``, and the types their results and
errors are made of. Each name is imported when
it is first used: importing ``evspec`` costs nothing more than this module.
"""

from __future__ import annotations

__version__ = "0.2.0"

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from evspec.api import check_strings, compile, load_system, parse, read_object
    from evspec.ast import EventList
    from evspec.check import CheckedSpec
    from evspec.compiler.compile import Plan, PlannedEvent
    from evspec.diagnostics import Diagnostic, EvspecError, Severity
    from evspec.loader.errors import ObjectError
    from evspec.loader.object.spec import ObjectSpec
    from evspec.system.model import System
    from evspec.system.snapshot import SnapshotError

# public name -> the module that defines it
_EXPORTS = {
    "parse": "evspec.api", "check_strings": "evspec.api", "compile": "evspec.api", "load_system": "evspec.api",
    "read_object": "evspec.api",
    "EventList": "evspec.ast", "CheckedSpec": "evspec.check", "Plan": "evspec.compiler.compile",
    "PlannedEvent": "evspec.compiler.compile", "Diagnostic": "evspec.diagnostics",
    "EvspecError": "evspec.diagnostics", "Severity": "evspec.diagnostics", "System": "evspec.system.model",
    "SnapshotError": "evspec.system.snapshot", "ObjectSpec": "evspec.loader.object.spec",
    "ObjectError": "evspec.loader.errors",
}

__all__ = [
    "CheckedSpec",
    "Diagnostic",
    "EventList",
    "EvspecError",
    "ObjectError",
    "ObjectSpec",
    "Plan",
    "PlannedEvent",
    "Severity",
    "SnapshotError",
    "System",
    "check_strings",
    "compile",
    "load_system",
    "parse",
    "read_object",
    "__version__",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evspec' has no attribute {name!r}")
    value = getattr(__import__(module, fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
