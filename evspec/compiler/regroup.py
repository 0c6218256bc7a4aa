"""perf's reordering of the evsels of one event string so that no group spans two PMUs
(``parse_events__sort_events_and_fix_groups``, perf 6.12 and later).

A group's members are sorted by the PMU they count on (its ``group_pmu_name``: a software event
takes the PMU of the first hardware member of its group), ties by their place; then a new group
starts wherever the PMU changes. So ``{cycles,instructions}`` on a machine with ``cpu_atom`` and
``cpu_core`` becomes two groups, one per core PMU. An evsel with the ``X`` modifier is sorted by
its own place, not its group's; one with ``R`` (retirement latency) never leads a group of its
PMU (x86's ``arch_evlist__cmp``). The event list then takes each group's evsels together
(``evlist__splice_list_tail``). Intel's topdown slot forcing is not modelled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cmp_to_key
from typing import Protocol, TypeVar


class Grouped(Protocol):
    """What regrouping reads and sets on an evsel (``compile._Evsel``)."""

    leader: Grouped | None  # None: its own leader
    members: int
    dont_regroup: bool
    retire_lat: bool


E = TypeVar("E", bound=Grouped)

#: (PMU name, whether perf counts it as a software PMU, whether it is an AUX area PMU)
PmuInfo = tuple[str, bool, bool]


def _leader(ev: E) -> E:
    return ev.leader if ev.leader is not None else ev  # type: ignore[return-value]


def group_pmu_names(evsels: Sequence[E], pmu_of: Callable[[E], PmuInfo]) -> list[str]:
    """perf's ``evsel__compute_group_pmu_name`` for each evsel, in list order."""
    out = []
    for ev in evsels:
        name, software, _ = pmu_of(ev)
        leader = _leader(ev)
        if software or pmu_of(leader)[2]:
            leader_name, leader_software, _ = pmu_of(leader)
            if not leader_software:
                name = leader_name
            elif leader.members > 1:
                for pos in evsels:
                    if pos is leader or _leader(pos) is not leader:
                        continue
                    pos_name, pos_software, _ = pmu_of(pos)
                    if not pos_software:
                        name = pos_name
                        break
        out.append(name)
    return out


def sort_and_fix_groups(evsels: Sequence[E], pmu_of: Callable[[E], PmuInfo]) -> list[E]:
    """``evsels`` (one event string's, in the order parsing added them, with their groups) in
    perf's order, each with its new leader and each leader with its new member count."""
    names = group_pmu_names(evsels, pmu_of)
    index = {id(ev): i for i, ev in enumerate(evsels)}
    group_name = {id(ev): n for ev, n in zip(evsels, names, strict=True)}

    def sort_idx(ev: E) -> int:
        leader = _leader(ev)
        has_group = leader is not ev or ev.members > 1
        return index[id(leader)] if has_group and not ev.dont_regroup else index[id(ev)]

    def compare(lhs: E, rhs: E) -> int:
        a, b = sort_idx(lhs), sort_idx(rhs)
        if a != b:
            return a - b
        ln, rn = group_name[id(lhs)], group_name[id(rhs)]
        if ln != rn:
            return -1 if ln < rn else 1
        if lhs.retire_lat != rhs.retire_lat:
            return 1 if lhs.retire_lat else -1
        return index[id(lhs)] - index[id(rhs)]

    ordered = sorted(evsels, key=cmp_to_key(compare))
    original = {id(ev): _leader(ev) for ev in ordered}
    cur_leader: E | None = None
    cur_group: E | None = None  # the original group the current leader's group comes from
    for pos in ordered:
        pos_leader = original[id(pos)]
        if cur_leader is None or pos.dont_regroup:
            cur_leader = pos_leader if pos.dont_regroup else pos
            cur_group = cur_leader
        if group_name[id(cur_leader)] != group_name[id(pos)]:
            cur_leader, cur_group = pos, pos_leader
        elif cur_group is not pos_leader:
            cur_leader, cur_group = pos, pos_leader
        pos.leader = None if cur_leader is pos else cur_leader
    for pos in ordered:
        pos.members = 0
    for pos in ordered:
        _leader(pos).members += 1
    return splice(ordered)


def splice(evsels: list[E]) -> list[E]:
    """perf's ``evlist__splice_list_tail``: the evsels moved to the event list one group at a
    time, each leader followed by every evsel it leads, so that a group's members are together."""
    remaining = list(evsels)
    out: list[E] = []
    while remaining:
        first = remaining.pop(0)
        out.append(first)
        members = [ev for ev in remaining if ev.leader is first]
        out.extend(members)
        remaining = [ev for ev in remaining if ev.leader is not first]
    return out
