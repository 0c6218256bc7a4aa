"""The events perf 7.2 and later carry in their own tables (pmu-events/arch/common/common):
``software.json``, ``tool.json``, ``legacy-hardware.json`` and the legacy cache names that
``make_legacy_cache.py`` generates, each as the term list perf expands it to (jevents.py writes
``config=N``, ``legacy-hardware-config=N`` or ``legacy-cache-config=0xNNNNNN``).

perf 6.12 has no such tables: its lexer knows these names as symbols instead.
"""

from __future__ import annotations

from functools import lru_cache

from evspec.dialect.actions.cache_names import CACHE_OPS, CACHE_RESULTS, CACHE_TYPES, CACHE_VALID_OPS
from evspec.span import Slotted


class TableEvent(Slotted):
    """An event of perf's tables: its name, its definition as a term list, and the unit of its
    ScaleUnit ("msec"; an event with a unit cannot share a term list with another)."""

    name: str
    terms: str
    unit: str = ""


def _hex_or_dec(value: int) -> str:
    """jevents.py's llx(): a number below 10 in decimal, otherwise 0x-hex."""
    return str(value) if 0 <= value < 10 else hex(value)


SOFTWARE: tuple[TableEvent, ...] = tuple(
    TableEvent(name, f"config={_hex_or_dec(config)}", unit)
    for name, config, unit in (
        ("cpu-clock", 0, "msec"), ("task-clock", 1, "msec"), ("faults", 2, ""), ("page-faults", 2, ""),
        ("context-switches", 3, ""), ("cs", 3, ""), ("cpu-migrations", 4, ""), ("migrations", 4, ""),
        ("minor-faults", 5, ""), ("major-faults", 6, ""), ("alignment-faults", 7, ""), ("emulation-faults", 8, ""),
        ("dummy", 9, ""), ("bpf-output", 10, ""), ("cgroup-switches", 11, ""),
    )
)  # fmt: skip

# tool.json; "slots" is for arm64 only and "system_tsc_freq" for x86 only (tool_pmu__skip_event):
# the tables are those of an x86 build
TOOL: tuple[TableEvent, ...] = tuple(
    TableEvent(name, f"config={_hex_or_dec(config)}")
    for config, name in enumerate(
        ("duration_time", "user_time", "system_time", "has_pmem", "num_cores", "num_cpus", "num_cpus_online",
         "num_dies", "num_packages", "slots", "smt_on", "system_tsc_freq", "core_wide", "target_cpu"),
        start=1,
    )
)  # fmt: skip
TOOL_SKIPPED = frozenset({"slots"})

LEGACY_HARDWARE: tuple[TableEvent, ...] = tuple(
    TableEvent(name, f"legacy-hardware-config={config}")
    for name, config in (
        ("cpu-cycles", 0), ("cycles", 0), ("instructions", 1), ("cache-references", 2), ("cache-misses", 3),
        ("branches", 4), ("branch-instructions", 4), ("branch-misses", 5), ("bus-cycles", 6),
        ("stalled-cycles-frontend", 7), ("idle-cycles-frontend", 7), ("stalled-cycles-backend", 8),
        ("idle-cycles-backend", 8), ("ref-cycles", 9),
    )
)  # fmt: skip


@lru_cache(maxsize=1)
def legacy_cache() -> tuple[TableEvent, ...]:
    """Every name make_legacy_cache.py writes: TYPE, TYPE-OP, TYPE-OP-RESULT and TYPE-RESULT for
    every spelling of each, with the operations each cache supports; "branches" and
    "branch-misses" are left to the hardware events."""
    out: list[TableEvent] = []

    def add(name: str, cache: int, op: int, result: int) -> None:
        if name not in ("branch-misses", "branches"):
            out.append(TableEvent(name, f"legacy-cache-config=0x{cache | op << 8 | result << 16:06x}"))

    for cache, spellings in enumerate(CACHE_TYPES):
        for name in spellings:
            add(name, cache, 0, 0)
            for op, op_names in enumerate(CACHE_OPS):
                if not CACHE_VALID_OPS[cache] >> op & 1:
                    continue
                for op_name in op_names:
                    add(f"{name}-{op_name}", cache, op, 0)
                    for result, result_names in enumerate(CACHE_RESULTS):
                        for result_name in result_names:
                            add(f"{name}-{op_name}-{result_name}", cache, op, result)
            for result, result_names in enumerate(CACHE_RESULTS):
                for result_name in result_names:
                    add(f"{name}-{result_name}", cache, 0, result)
    return tuple(out)


@lru_cache(maxsize=1)
def default_core() -> dict[str, TableEvent]:
    """The "default_core" table every core PMU has (legacy hardware, then legacy cache events), by
    lower-case name; perf looks names up case-insensitively."""
    table: dict[str, TableEvent] = {}
    for event in (*LEGACY_HARDWARE, *legacy_cache()):
        table.setdefault(event.name.lower(), event)
    return table


@lru_cache(maxsize=1)
def software() -> dict[str, TableEvent]:
    return {e.name.lower(): e for e in SOFTWARE}


@lru_cache(maxsize=1)
def tool() -> dict[str, TableEvent]:
    """The tool PMU's events of an x86 build, by lower-case name."""
    return {e.name.lower(): e for e in TOOL if e.name not in TOOL_SKIPPED}
