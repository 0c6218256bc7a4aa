"""What `evspec compile` says of each program of an object: where record puts it (section names of
every attach family)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from evspec.loader.sections.program_events import program_events


@dataclass(frozen=True)
class _Program:
    name: str
    section: str


@dataclass(frozen=True)
class _Spec:
    programs: tuple[_Program, ...]


@pytest.mark.parametrize(("section", "event", "said"), [
    ("raw_syscalls:sys_enter", "raw_syscalls:sys_enter", "on tracepoint raw_syscalls:sys_enter"),
    ("tracepoint/sched/sched_switch", "sched:sched_switch", "on tracepoint sched:sched_switch"),
    ("raw_tp/sys_enter", None, "on the raw tracepoint sys_enter, system-wide (no perf event)"),
    ("tp_btf/sched_switch", None, "on the BTF tracepoint sched_switch, system-wide (no perf event)"),
    ("fentry/do_unlinkat", None, "through a BPF trampoline on do_unlinkat, system-wide (no perf event)"),
    ("lsm/file_open", None, "through a BPF trampoline on file_open, system-wide (no perf event)"),
    ("kprobe", None, "loaded, not attached"),
    ("?tp/sched/sched_switch", None, "loaded, not attached"),
    ("xdp", None, "xdp on the --dev interface, by netlink"),
    ("iter/task", None, "iterator: not attached"),
])
def test_each_section_family_says_where_record_puts_it(section: str, event: str | None, said: str) -> None:
    [found] = program_events(_Spec((_Program("p", section),)))  # type: ignore[arg-type]
    assert (found.program, found.section, found.event, found.how) == ("p", section, event, said)
