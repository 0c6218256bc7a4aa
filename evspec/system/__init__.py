"""System descriptions: what semantic checks know about a machine.

``load_system("live" | "none" | PATH)`` picks one; ``snapshot(system)`` turns any system into
JSON-ready data that ``read_snapshot`` loads back. ``LiveSystem`` is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evspec.cpus import parse_cpu_list
from evspec.system.model import (
    Features,
    FormatField,
    Pmu,
    PmuAlias,
    System,
    TracefsUnavailable,
    TracepointMatch,
    parse_format,
    pmu_suffix_matches,
)
from evspec.system.snapshot import (
    SnapshotError,
    SnapshotSystem,
    load_system,
    read_snapshot,
    snapshot,
    write_snapshot,
)

if TYPE_CHECKING:
    from evspec.system.live import LiveSystem

__all__ = [
    "Features",
    "FormatField",
    "LiveSystem",
    "Pmu",
    "PmuAlias",
    "SnapshotError",
    "SnapshotSystem",
    "System",
    "TracefsUnavailable",
    "TracepointMatch",
    "load_system",
    "parse_cpu_list",
    "parse_format",
    "pmu_suffix_matches",
    "read_snapshot",
    "snapshot",
    "write_snapshot",
]


def __getattr__(name: str) -> Any:
    if name == "LiveSystem":
        from evspec.system.live import LiveSystem

        return LiveSystem
    raise AttributeError(f"module 'evspec.system' has no attribute {name!r}")
