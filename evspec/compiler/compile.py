"""Event strings to perf_event_attr plans, the way a perf release builds its evsels (the newest
by default; ``releases.py`` holds what each release does differently).

The pipeline per event string: resolve each event against the system (``resolve.py``: type,
config fields, tracepoint ids, one evsel per PMU that has a named event), name it, apply its
modifiers and then its group's (``modifiers.py``), reorder the string's evsels so that no group
spans two PMUs (``regroup.py``, perf 6.12 and later). That is the state perf's own parse-events
tests check (``parse_events``); ``compile_events`` then applies the command's defaults and the
keyword terms: ``perf stat``'s counting setup, or ``perf record``'s sampling setup
(``evsel__config`` with the config terms and ``evlist__config``'s sample-id choice) for
``perf record -e STRING -- COMMAND``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from evspec.ast import BpfEvent, Event, EventList, Group, Number, Term, TermKind, Word
from evspec.compiler import attr as A
from evspec.compiler.modifiers import apply_modifiers
from evspec.compiler.perf_pmus import SOFTWARE_PMU, TOOL_PMU
from evspec.compiler.regroup import PmuInfo, sort_and_fix_groups
from evspec.compiler.releases import LATEST, PERF_PMU_TYPE_TOOL, Release
from evspec.compiler.resolve import BaseEvsel, Mode, mode_diagnostics, perf_pmus, resolve_event
from evspec.diagnostics import Diagnostic, EvspecError, error
from evspec.span import Slotted, value_field
from evspec.system.model import System

#: perf record's default sampling frequency (``-F``), and perf's DWARF stack dump default
DEFAULT_FREQ = 4000
DEFAULT_STACK_DUMP = 8192
#: x86-64 PERF_REGS_MASK: the user registers a DWARF call graph samples
X86_64_USER_REGS = 0xFF0FFF
#: PMUs perf counts as software (perf_pmu__is_software) besides the software-typed ones
_SOFTWARE_PMUS = frozenset({"kprobe", "msr", "uprobe"})
#: PMUs perf reads AUX area data from (their events may lead groups of other PMUs' events)
_AUX_PMUS = ("intel_pt", "intel_bts", "arm_spe", "cs_etm")

_EVENT_PMU_TEXT = re.compile(r"[^,{}/]+/[^/]*/[^,{}/]*")
_EVENT_TEXT = re.compile(r"[^,{}/]+")


class GroupRef(Slotted):
    index: int  # among the groups with more than one member, in order
    leader: bool
    position: int = 0  # the evsel's place in its group (perf's evsel__group_idx; the leader's is 0)
    members: int = 0  # the group's evsel count (perf's nr_members of the leader)
    name: str | None = None  # a named group's name (group1{...}), on its leader

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index, "leader": self.leader, "position": self.position,
                               "members": self.members}
        if self.name is not None:
            out["name"] = self.name
        return out


class PlannedEvent(Slotted):
    """One evsel: what ``perf_event_open`` gets, and what perf keeps beside the attr."""

    name: str
    spec_index: int
    group: GroupRef | None
    attr: A.Attr
    pmu: str | None = None
    tracepoint: str | None = None  # "sys:event"
    unit: str | None = None
    scale: str | None = None
    per_pkg: bool = False
    metric_id: str | None = None
    weak_group: bool = False
    sample_read: bool = False
    precise_max: bool = False
    bpf_counter: bool = False
    percore: bool = False
    max_events: int | None = None
    tool: bool = False
    driver_config: tuple[str, ...] = ()
    cpus: tuple[int, ...] | None = None  # the CPUs it is opened on where they are not all
    alternate_hw: int | None = None  # the legacy hardware event a core PMU's sysfs event stands for
    retire_lat: bool = False
    dont_regroup: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "spec_index": self.spec_index,
            "group": self.group.to_json() if self.group else None,
            "attr": self.attr.to_json(),
        }
        extra = {
            "pmu": self.pmu,
            "tracepoint": self.tracepoint,
            "unit": self.unit,
            "scale": self.scale,
            "per_pkg": self.per_pkg,
            "metric_id": self.metric_id,
            "weak_group": self.weak_group,
            "sample_read": self.sample_read,
            "precise_max": self.precise_max,
            "bpf_counter": self.bpf_counter,
            "percore": self.percore,
            "max_events": self.max_events,
            "tool": self.tool,
            "driver_config": list(self.driver_config),
            "cpus": list(self.cpus) if self.cpus is not None else None,
            "alternate_hw": self.alternate_hw,
            "retire_lat": self.retire_lat,
            "dont_regroup": self.dont_regroup,
        }
        out.update({k: v for k, v in extra.items() if v not in (None, False, [])})
        return out


class BpfReference(Slotted):
    """A BPF object event, compiled later by the loader."""

    spec_index: int
    event: BpfEvent
    group: GroupRef | None

    def to_json(self) -> dict[str, Any]:
        return {
            "spec_index": self.spec_index,
            "path": self.event.path,
            "source": self.event.is_source,
            "group": self.group.to_json() if self.group else None,
        }


class Plan(Slotted):
    events: tuple[PlannedEvent, ...]
    bpf: tuple[BpfReference, ...] = ()
    mode: str = "record"
    warnings: tuple[Diagnostic, ...] = ()
    release: str = LATEST.version

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "perf": self.release,
            "events": [e.to_json() for e in self.events],
            "bpf": [b.to_json() for b in self.bpf],
        }


# --------------------------------------------------------------------------------------------
# evsel state while building


class _Evsel(Slotted, frozen=False, eq=False):
    base: BaseEvsel
    spec_index: int
    name: str
    attr: dict[str, int]
    terms: tuple[Term, ...]
    leader: _Evsel | None = None  # None: its own leader
    members: int = 1  # for leaders: evsels in its group
    group_name: str | None = None
    exclude_gh: bool = False
    sample_read: bool = False
    precise_max: bool = False
    weak: bool = False
    bpf_counter: bool = False
    retire_lat: bool = False
    dont_regroup: bool = False
    config_term_kinds: set[str] = value_field(default_factory=set)

    @property
    def is_leader(self) -> bool:
        return self.leader is None


# --------------------------------------------------------------------------------------------
# entry points


def compile_events(lists: Sequence[EventList], system: System | None, mode: Mode = "record",
                   release: Release = LATEST) -> Plan:
    """The plan for the event strings ``lists`` (one per ``-e``) on ``system``, as perf
    ``release`` makes it.

    Raises EvspecError with every error found (unknown PMUs, tracepoints, terms; terms perf stat
    does not take in ``mode="stat"``; tracepoints and PMU events without a system). Warnings
    travel with the plan.
    """
    evsels, bpf, diags = _build(lists, system, mode, release)
    if mode == "stat":
        _configure_stat(evsels)
    else:
        _configure_record(evsels, release)
    planned, refs = _output(evsels, bpf)
    return Plan(planned, refs, mode, tuple(diags), release.version)


def parse_events(lists: Sequence[EventList], system: System | None,
                 release: Release = LATEST) -> tuple[PlannedEvent, ...]:
    """The evsels as perf ``release``'s parse_events leaves them, before any command sets them
    up: the state perf's own parse-events tests check (tools/perf/tests/parse-events.c)."""
    evsels, bpf, _ = _build(lists, system, None, release)
    return _output(evsels, bpf)[0]


def _build(lists: Sequence[EventList], system: System | None, mode: Mode | None,
           release: Release) -> tuple[list[_Evsel], list[tuple[int, BpfEvent, _Evsel | None]], list[Diagnostic]]:
    diags: list[Diagnostic] = []
    evsels: list[_Evsel] = []
    bpf: list[tuple[int, BpfEvent, _Evsel | None]] = []
    for spec_index, events in enumerate(lists):
        list_diags: list[Diagnostic] = []
        string: list[_Evsel] = []
        for item in events.items:
            members: list[_Evsel] = []
            item_events = item.events if isinstance(item, Group) else (item,)
            bpf_here: list[BpfEvent] = []
            for event in item_events:
                if mode is not None:
                    list_diags.extend(mode_diagnostics(event, mode, release))
                if isinstance(event, BpfEvent):
                    bpf_here.append(event)
                    continue
                resolution = resolve_event(event, system, release)
                list_diags.extend(resolution.diagnostics)
                if resolution.invalid:
                    list_diags.append(_invalid(event))
                made = [_new_evsel(base, spec_index, events.source, release) for base in resolution.evsels]
                if event.modifiers is not None:
                    for ev in made:
                        apply_modifiers(ev, event.modifiers.letters, group=False, release=release)
                members.extend(made)
            if isinstance(item, Group) and members:
                _make_group(members, item.name)
                if item.modifiers is not None:
                    for ev in members:
                        apply_modifiers(ev, item.modifiers.letters, group=True, release=release)
            leader = members[0] if isinstance(item, Group) and len(members) > 1 else None
            bpf.extend((spec_index, e, leader) for e in bpf_here)
            string.extend(members)
        if release.regroup and string:
            # _Evsel.leader is an _Evsel: Grouped's settable leader is invariant, so the TypeVar cannot see it
            string = sort_and_fix_groups(string, _pmu_info(system, release))  # type: ignore[type-var]
        evsels.extend(string)
        diags.extend(d.located(events.source) for d in sorted(list_diags, key=lambda d: d.span.start))
    if any(d.is_error for d in diags):
        raise EvspecError(diags)
    return evsels, bpf, diags


def _invalid(event: Event) -> Diagnostic:
    return error(
        "EM015",
        "this event breaks the language's rules and cannot be compiled",
        event.span,
        help=("check the string first: 'evspec check -e STRING' says what is wrong",),
    )


def _pmu_info(system: System | None, release: Release):  # type: ignore[no-untyped-def]
    """For regrouping: an evsel's PMU as perf's evsel__find_pmu finds it (the first core PMU for
    legacy events without one), whether perf counts it as software, whether it is an AUX PMU."""
    view = perf_pmus(system, release) if system is not None else None
    first_core = view.core[0].name if view is not None and view.core else "cpu"

    def info(ev: _Evsel) -> PmuInfo:
        base = ev.base
        name = base.pmu
        if name is None:
            found = view.by_type(base.type) if view is not None else None
            name = found.name if found is not None else None
        if name is None:
            if base.type in (A.PERF_TYPE_HARDWARE, A.PERF_TYPE_HW_CACHE, A.PERF_TYPE_RAW):
                name = first_core
            else:
                name = {A.PERF_TYPE_SOFTWARE: SOFTWARE_PMU, A.PERF_TYPE_TRACEPOINT: "tracepoint",
                        A.PERF_TYPE_BREAKPOINT: "breakpoint", PERF_PMU_TYPE_TOOL: TOOL_PMU}.get(base.type, first_core)
        pmu = view.find(name) if view is not None else None
        core = pmu is not None and view is not None and view.is_core(pmu)
        uncore = pmu is not None and pmu.cpumask is not None
        software = not core and not uncore and not name.startswith(_AUX_PMUS) and (
            base.type in (A.PERF_TYPE_SOFTWARE, A.PERF_TYPE_TRACEPOINT, A.PERF_TYPE_BREAKPOINT, PERF_PMU_TYPE_TOOL)
            or name in _SOFTWARE_PMUS)
        return name, software, name.startswith(_AUX_PMUS)

    return info


# --------------------------------------------------------------------------------------------
# building evsels


def _new_evsel(base: BaseEvsel, spec_index: int, source: str, release: Release) -> _Evsel:
    event = base.event
    terms = tuple(t for t in (getattr(event, "terms", None) or _NO_TERMS).items if isinstance(t, Term))
    fixed = base.fixed_name if base.tracepoint is not None or not release.tool_pmu else None
    name = _first_string(terms, "name") or fixed or perf_event_text(source, event)
    attr = {
        "type": base.type,
        "size": release.attr_size,
        "config": base.config,
    }
    if release.exclude_guest_default:
        attr["exclude_guest"] = 1  # event_attr_init: not a guest profiler
    if base.type == A.PERF_TYPE_BREAKPOINT:
        # bp_addr/bp_len share their words with config1/config2: a mem: event sets the first, the
        # breakpoint PMU's terms (breakpoint/config1=ADDR,config2=LEN/) the second
        attr.update(bp_type=base.bp_type, bp_addr=base.bp_addr or base.config1, bp_len=base.bp_len or base.config2)
    else:
        attr.update(config1=base.config1, config2=base.config2)
    attr["config3"] = base.config3
    attr["config4"] = base.config4
    attr["sample_period"] = base.sample_period
    attr["sample_type"] = base.sample_type
    if _is_bpf_output(attr):
        attr["sample_period"] = 1  # evsel__new: bpf-output samples every event, like a tracepoint
    return _Evsel(base, spec_index, name, attr, terms)


def _is_bpf_output(attr: dict[str, int]) -> bool:
    return attr["type"] == A.PERF_TYPE_SOFTWARE and attr["config"] == A.SOFTWARE_EVENTS["bpf-output"]


class _NoTerms:
    items: tuple[Term, ...] = ()


_NO_TERMS = _NoTerms()


def _first_string(terms: Sequence[Term], key: str) -> str | None:
    for term in terms:
        if term.kind is TermKind.KEYWORD and term.key == key and isinstance(term.value, Word):
            return term.value.text
    return None


def perf_event_text(source: str, event: Event) -> str:
    """The text perf's lexer cuts out for an event in its EVENT state (its evsel name unless a
    name comes from elsewhere): from after the preceding ``,`` or ``{`` (or the start), the
    longest of ``[^,{}/]+`` and ``[^,{}/]+/[^/]*/[^,{}/]*`` — so ``cycles:u`` keeps its modifier,
    ``msr/tsc/u`` its terms and ``mem:0x1000/8:w`` is just ``mem:0x1000``."""
    if not source:
        return _fallback_text(event)
    start = event.span.start
    while start > 0 and source[start - 1] not in ",{":
        start -= 1
    best = ""
    for pattern in (_EVENT_PMU_TEXT, _EVENT_TEXT):
        m = pattern.match(source, start)
        if m and len(m.group()) > len(best):
            best = m.group()
    return best or _fallback_text(event)


def _fallback_text(event: Event) -> str:
    from evspec.printer import print_event

    return print_event(event)


def _make_group(members: list[_Evsel], name: str | None) -> None:
    leader = members[0]
    leader.members = len(members)
    leader.group_name = name
    for ev in members[1:]:
        ev.leader = leader


# --------------------------------------------------------------------------------------------
# perf stat


def _configure_stat(evsels: Sequence[_Evsel]) -> None:
    """``create_perf_stat_counter``: count, never sample; the group leader starts disabled and is
    enabled on exec of the workload — unless every event is counted system-wide, when perf
    enables them itself: perf stat's target is then the whole system (``setup_system_wide``)."""
    on_exec = not all(_system_wide(ev) for ev in evsels)
    for ev in evsels:
        a = ev.attr
        leader = ev.leader or ev
        a["read_format"] = A.READ_FORMAT["TOTAL_TIME_ENABLED"] | A.READ_FORMAT["TOTAL_TIME_RUNNING"]
        if leader.members > 1:
            a["read_format"] |= A.READ_FORMAT["ID"] | A.READ_FORMAT["GROUP"]
        a["inherit"] = 1
        a["sample_period"] = 0
        a["sample_type"] = A.SAMPLE["IDENTIFIER"]
        if ev.is_leader:
            a["disabled"] = 1
            if on_exec:
                a["enable_on_exec"] = 1


def _system_wide(ev: _Evsel) -> bool:
    """What perf stat's ``setup_system_wide`` counts as system-wide: an event of a PMU with a
    ``cpumask`` (uncore, RAPL), or an evsel *named* ``duration_time`` (perf compares the name:
    ``duration_time:u`` and ``duration_time/name=x/`` are not)."""
    return ev.base.system_wide or ev.name == "duration_time"


# --------------------------------------------------------------------------------------------
# perf record


def _set_bits(a: dict[str, int], key: str, *names: str) -> None:
    for name in names:
        a[key] = a.get(key, 0) | A.SAMPLE[name]


def _clear_bits(a: dict[str, int], key: str, *names: str) -> None:
    for name in names:
        a[key] = a.get(key, 0) & ~A.SAMPLE[name]


def _configure_record(evsels: Sequence[_Evsel], release: Release) -> None:
    for position, ev in enumerate(evsels):
        _record_evsel(ev, release, tracking=position == 0)
    for ev in evsels:
        _leader_sampling(ev)
    if len(evsels) > 1:
        first_type = evsels[0].attr.get("sample_type", 0)
        identifier = any(ev.attr.get("sample_type", 0) != first_type for ev in evsels)
        for ev in evsels:
            _set_sample_id(ev.attr, identifier)


def _set_sample_id(a: dict[str, int], identifier: bool) -> None:
    if identifier:
        _clear_bits(a, "sample_type", "ID")
        _set_bits(a, "sample_type", "IDENTIFIER")
    else:
        _set_bits(a, "sample_type", "ID")
    a["read_format"] = a.get("read_format", 0) | A.READ_FORMAT["ID"]


def _record_evsel(ev: _Evsel, release: Release, *, tracking: bool) -> None:
    """``evsel__config`` for ``perf record -e STRING -- COMMAND`` with default options."""
    a = ev.attr
    leader = ev.leader or ev
    a["sample_id_all"] = 1
    a["inherit"] = 1
    a["read_format"] = A.READ_FORMAT["ID"] | A.READ_FORMAT["LOST"]
    if ev.base.type == A.PERF_TYPE_TRACEPOINT or _is_bpf_output(ev.attr):
        _set_bits(a, "sample_type", "RAW", "TIME", "CPU", "PERIOD")
    _set_bits(a, "sample_type", "IP", "TID")
    if ev.sample_read:
        _set_bits(a, "sample_type", "READ")
        _set_sample_id(a, False)
        if leader.members > 1:
            a["read_format"] |= A.READ_FORMAT["GROUP"]
            a["inherit"] = int(release.record_inherit_sample_read)
    if not a.get("sample_period"):
        a["freq"] = 1
        a["sample_period"] = DEFAULT_FREQ
    if a.get("freq"):
        _set_bits(a, "sample_type", "PERIOD")
    _set_bits(a, "sample_type", "TIME")
    if ev.precise_max:
        a["precise_ip"] = 3
    if ev.retire_lat:
        _set_bits(a, "sample_type", "WEIGHT_STRUCT")  # x86's arch_evsel__set_sample_weight
    if tracking:
        a.update(mmap=1, comm=1, task=1, mmap2=1, comm_exec=1, ksymbol=1, bpf_event=1)
        if release.record_build_id:
            a["build_id"] = 1
    if ev.is_leader:
        a["disabled"] = 1
        a["enable_on_exec"] = 1
    _apply_config_terms(ev)


def _apply_config_terms(ev: _Evsel) -> None:
    """``evsel__apply_config_terms``: the keyword terms, in order, over the defaults."""
    a = ev.attr
    callgraph: str | None = None
    dump_size = 0
    max_stack = 0
    for term in ev.terms:
        if term.kind is not TermKind.KEYWORD:
            continue
        key = term.key
        number = term.value.value if isinstance(term.value, Number) else (1 if term.value is None else None)
        text = term.value.text if isinstance(term.value, Word) else None
        ev.config_term_kinds.add(key)
        if key == "period" and number is not None:
            a["sample_period"] = number
            a["freq"] = 0
            _clear_bits(a, "sample_type", "PERIOD")
        elif key == "freq" and number is not None:
            a["sample_period"] = number
            a["freq"] = 1
            _set_bits(a, "sample_type", "PERIOD")
        elif key == "time" and number is not None:
            (_set_bits if number else _clear_bits)(a, "sample_type", "TIME")
        elif key == "call-graph" and text is not None:
            callgraph = text
        elif key == "branch_type" and text is not None:
            if text != "no":
                _set_bits(a, "sample_type", "BRANCH_STACK")
                a["branch_sample_type"] = _branch_mode(text)
            else:
                _clear_bits(a, "sample_type", "BRANCH_STACK")
        elif key == "stack-size" and number is not None:
            dump_size = number
        elif key == "max-stack" and number is not None:
            max_stack = number
        elif key in ("inherit", "no-inherit") and number is not None:
            a["inherit"] = int(bool(number)) if key == "inherit" else int(not number)
        elif key in ("overwrite", "no-overwrite") and number is not None:
            a["write_backward"] = int(bool(number)) if key == "overwrite" else int(not number)
        elif key == "aux-output" and number is not None:
            a["aux_output"] = int(bool(number))
        elif key == "aux-sample-size" and number is not None:
            a["aux_sample_size"] = number
    if callgraph is None and not dump_size and not max_stack:
        return
    if max_stack and callgraph is None:
        callgraph = "fp"
    if callgraph is None or callgraph == "no":
        return
    a["sample_max_stack"] = max_stack
    _set_bits(a, "sample_type", "CALLCHAIN")
    if callgraph == "dwarf":
        _set_bits(a, "sample_type", "ADDR", "DATA_SRC", "REGS_USER", "STACK_USER")
        a["sample_regs_user"] = X86_64_USER_REGS
        a["sample_stack_user"] = (dump_size + 7) // 8 * 8 if dump_size else DEFAULT_STACK_DUMP
        a["exclude_callchain_user"] = 1
    elif callgraph == "lbr":
        _set_bits(a, "sample_type", "BRANCH_STACK")
        a["branch_sample_type"] = (
            A.BRANCH_SAMPLE_TYPES["u"]
            | A.BRANCH_SAMPLE_TYPES["stack"]
            | 1 << 14  # NO_FLAGS
            | 1 << 15  # NO_CYCLES
            | 1 << 17  # HW_INDEX
        )


def _branch_mode(text: str) -> int:
    """perf's ``parse_branch_str`` for one name; only privilege bits means any branch at those
    privilege levels."""
    mode = A.BRANCH_SAMPLE_TYPES.get(text.lower(), 0)
    if not mode & ~A.BRANCH_PLM_ALL:  # u, k, hv keep their privilege bit (perf 6.1: KERNEL|ANY)
        mode |= A.BRANCH_SAMPLE_TYPES["any"]
    return mode


def _leader_sampling(ev: _Evsel) -> None:
    """``evsel__config_leader_sampling``: members of an ``:S`` group do not sample themselves."""
    leader = ev.leader
    if leader is None or not leader.sample_read:
        return
    a = ev.attr
    if not ev.config_term_kinds & {"freq", "period"}:
        a["freq"] = 0
        a["sample_period"] = 0
    if not ev.config_term_kinds & {"overwrite", "no-overwrite"}:
        a["write_backward"] = 0
    a["sample_type"] = a.get("sample_type", 0) | leader.attr.get("sample_type", 0)


# --------------------------------------------------------------------------------------------
# output


def _output(evsels: Sequence[_Evsel], bpf: Sequence[tuple[int, BpfEvent, _Evsel | None]]
            ) -> tuple[tuple[PlannedEvent, ...], tuple[BpfReference, ...]]:
    """The planned events with their groups numbered in order (only groups of two or more)."""
    refs: dict[int, GroupRef] = {}
    positions: dict[int, int] = {}
    count = 0
    for ev in evsels:
        leader = ev.leader or ev
        if leader.members < 2:
            continue
        if id(leader) not in refs:
            refs[id(leader)] = GroupRef(count, True, 0, leader.members, leader.group_name)
            positions[id(leader)] = 0
            count += 1
        if ev is not leader:
            positions[id(leader)] += 1
    planned = []
    seen: dict[int, int] = {}
    for ev in evsels:
        leader = ev.leader or ev
        ref = refs.get(id(leader))
        group = None
        if ref is not None:
            position = seen.get(id(leader), 0)
            seen[id(leader)] = position + 1
            group = GroupRef(ref.index, ev is leader, position, ref.members, ref.name if ev is leader else None)
        planned.append(_planned(ev, group))
    bpf_refs = tuple(
        BpfReference(spec_index, event, GroupRef(refs[id(leader)].index, False) if leader is not None and id(
            leader) in refs else None)
        for spec_index, event, leader in bpf
    )
    return tuple(planned), bpf_refs


def _planned(ev: _Evsel, group: GroupRef | None) -> PlannedEvent:
    a = dict(ev.attr)
    if a.get("freq"):
        a["sample_freq"] = a.pop("sample_period", 0)
    base = ev.base
    alias = base.alias
    terms = ev.terms
    nr = next(
        (
            t.value.value
            for t in terms
            if t.kind is TermKind.KEYWORD and t.key == "nr" and isinstance(t.value, Number)
        ),
        None,
    )
    percore = next(
        (t for t in terms if t.kind is TermKind.KEYWORD and t.key == "percore"),
        None,
    )
    return PlannedEvent(
        name=ev.name,
        spec_index=ev.spec_index,
        group=group,
        attr=A.Attr.build(a),
        pmu=base.pmu,
        tracepoint=base.fixed_name if base.tracepoint else None,
        unit=alias.unit if alias else None,
        scale=alias.scale if alias else None,
        per_pkg=alias.per_pkg if alias else False,
        metric_id=_first_string(terms, "metric-id"),
        weak_group=ev.weak,
        sample_read=ev.sample_read,
        precise_max=ev.precise_max,
        bpf_counter=ev.bpf_counter,
        percore=percore is not None and (percore.value is None or getattr(percore.value, "value", 0) != 0),
        max_events=nr,
        tool=base.tool,
        driver_config=tuple(
            t.key + (f"={t.value.text}" if isinstance(t.value, Word) else "")
            for t in terms
            if t.kind is TermKind.DRIVER
        ),
        cpus=base.cpus,
        alternate_hw=base.alternate_hw,
        retire_lat=ev.retire_lat,
        dont_regroup=ev.dont_regroup,
    )
