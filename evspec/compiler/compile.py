"""Event strings to perf_event_attr plans, the way perf 6.1 builds its evsels.

The pipeline per event list: resolve each event against the system (``resolve.py``: type, config
fields, tracepoint ids), name it, apply its modifiers and then its group's modifiers (perf's
``get_event_modifier`` rules), then the command's defaults and the keyword terms: ``perf stat``'s
counting setup, or ``perf record``'s sampling setup (``evsel__config`` with the config terms and
``evlist__config``'s sample-id choice) for ``perf record -e STRING -- COMMAND``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evspec.ast import BpfEvent, Event, EventList, Group, Modifiers, Number, Term, TermKind, Word
from evspec.compiler import attr as A
from evspec.compiler.resolve import BaseEvsel, Mode, mode_diagnostics, resolve_event
from evspec.diagnostics import Diagnostic, EvspecError, error
from evspec.system.model import System

#: perf record's default sampling frequency (``-F``), and perf's DWARF stack dump default
DEFAULT_FREQ = 4000
DEFAULT_STACK_DUMP = 8192
#: x86-64 PERF_REGS_MASK: the user registers a DWARF call graph samples
X86_64_USER_REGS = 0xFF0FFF

_EVENT_PMU_TEXT = re.compile(r"[^,{}/]+/[^/]*/[^,{}/]*")
_EVENT_TEXT = re.compile(r"[^,{}/]+")


@dataclass(frozen=True, slots=True)
class GroupRef:
    index: int  # among the groups with more than one member, in order
    leader: bool

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "leader": self.leader}


@dataclass(frozen=True, slots=True)
class PlannedEvent:
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
        }
        out.update({k: v for k, v in extra.items() if v not in (None, False, [])})
        return out


@dataclass(frozen=True, slots=True)
class BpfReference:
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


@dataclass(frozen=True, slots=True)
class Plan:
    events: tuple[PlannedEvent, ...]
    bpf: tuple[BpfReference, ...] = ()
    mode: str = "record"
    warnings: tuple[Diagnostic, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "events": [e.to_json() for e in self.events],
            "bpf": [b.to_json() for b in self.bpf],
        }


# --------------------------------------------------------------------------------------------
# evsel state while building


@dataclass(slots=True)
class _Evsel:
    base: BaseEvsel
    spec_index: int
    name: str
    attr: dict[str, int]
    terms: tuple[Term, ...]
    leader: _Evsel | None = None  # None: its own leader
    members: int = 1  # for leaders: evsels in its group
    group_index: int | None = None
    exclude_gh: bool = False
    sample_read: bool = False
    precise_max: bool = False
    weak: bool = False
    bpf_counter: bool = False
    config_term_kinds: set[str] = field(default_factory=set)

    @property
    def is_leader(self) -> bool:
        return self.leader is None


# --------------------------------------------------------------------------------------------
# entry point


def compile_events(lists: Sequence[EventList], system: System | None, mode: Mode = "record") -> Plan:
    """The plan for the event strings ``lists`` (one per ``-e``) on ``system``.

    Raises EvspecError with every error found (unknown PMUs, tracepoints, terms; terms perf stat
    does not take in ``mode="stat"``; tracepoints and PMU events without a system). Warnings
    travel with the plan.
    """
    diags: list[Diagnostic] = []
    evsels: list[_Evsel] = []
    bpf: list[BpfReference] = []
    group_count = 0
    for spec_index, events in enumerate(lists):
        list_diags: list[Diagnostic] = []
        for item in events.items:
            members: list[_Evsel] = []
            item_events = item.events if isinstance(item, Group) else (item,)
            bpf_here: list[BpfEvent] = []
            for event in item_events:
                list_diags.extend(mode_diagnostics(event, mode))
                if isinstance(event, BpfEvent):
                    bpf_here.append(event)
                    continue
                resolution = resolve_event(event, system)
                list_diags.extend(resolution.diagnostics)
                if resolution.invalid:
                    list_diags.append(_invalid(event))
                made = [_new_evsel(base, spec_index, events.source) for base in resolution.evsels]
                if event.modifiers is not None:
                    for ev in made:
                        _apply_modifiers(ev, event.modifiers, add=False)
                members.extend(made)
            group_ref = None
            if isinstance(item, Group) and len(members) > 1:
                _make_group(members, group_count)
                group_ref = GroupRef(group_count, False)
                group_count += 1
            if isinstance(item, Group) and item.modifiers is not None:
                for ev in members:
                    _apply_modifiers(ev, item.modifiers, add=True)
            evsels.extend(members)
            bpf.extend(BpfReference(spec_index, e, group_ref) for e in bpf_here)
        diags.extend(d.located(events.source) for d in sorted(list_diags, key=lambda d: d.span.start))
    errors = [d for d in diags if d.is_error]
    if errors:
        raise EvspecError(diags)
    if mode == "stat":
        _configure_stat(evsels)
    else:
        _configure_record(evsels)
    planned = tuple(_planned(ev) for ev in evsels)
    return Plan(planned, tuple(bpf), mode, tuple(diags))


def _invalid(event: Event) -> Diagnostic:
    return error(
        "EM015",
        "this event breaks the language's rules and cannot be compiled",
        event.span,
        help=("check the string first: 'evspec check -e STRING' says what is wrong",),
    )


# --------------------------------------------------------------------------------------------
# building evsels


def _new_evsel(base: BaseEvsel, spec_index: int, source: str) -> _Evsel:
    event = base.event
    terms = tuple(t for t in (getattr(event, "terms", None) or _NO_TERMS).items if isinstance(t, Term))
    name = _first_string(terms, "name") or base.fixed_name or perf_event_text(source, event)
    attr = {
        "type": base.type,
        "size": A.PERF_ATTR_SIZE,
        "config": base.config,
        "exclude_guest": 1,  # perf's event_attr_init: not a guest profiler
    }
    if base.type == A.PERF_TYPE_BREAKPOINT:
        # bp_addr/bp_len share their words with config1/config2: a mem: event sets the first, the
        # breakpoint PMU's terms (breakpoint/config1=ADDR,config2=LEN/) the second
        attr.update(bp_type=base.bp_type, bp_addr=base.bp_addr or base.config1, bp_len=base.bp_len or base.config2)
    else:
        attr.update(config1=base.config1, config2=base.config2)
    attr["config3"] = base.config3
    attr["sample_period"] = base.sample_period
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


def _make_group(members: list[_Evsel], index: int) -> None:
    leader = members[0]
    leader.members = len(members)
    leader.group_index = index
    for ev in members[1:]:
        ev.leader = leader
        ev.group_index = index


def _apply_modifiers(ev: _Evsel, modifiers: Modifiers, *, add: bool) -> None:
    """perf 6.1's ``get_event_modifier`` + ``parse_events__modifier_event``: an event's own
    modifiers start from zero (``add=False``); a group's start from each member's current state."""
    a = ev.attr
    eu = a.get("exclude_user", 0) if add else 0
    ek = a.get("exclude_kernel", 0) if add else 0
    eh = a.get("exclude_hv", 0) if add else 0
    e_host = a.get("exclude_host", 0) if add else 0
    e_guest = a.get("exclude_guest", 0) if add else 0
    e_idle = a.get("exclude_idle", 0) if add else 0
    precise = a.get("precise_ip", 0) if add else 0
    pinned = a.get("pinned", 0) if add else 0
    exclusive = a.get("exclusive", 0) if add else 0
    exclude_gh = ev.exclude_gh if add else False
    exclude = eu | ek | eh
    precise_max = sample_read = weak = bpf_counter = False
    for letter in modifiers.letters:
        if letter in "ukh":
            if not exclude:
                exclude = eu = ek = eh = 1
            if letter == "u":
                if not exclude_gh:
                    e_guest = 1
                eu = 0
            elif letter == "k":
                ek = 0
            else:
                eh = 0
        elif letter in "GH":
            if not exclude_gh:
                exclude_gh = True
                e_guest = e_host = 1
            if letter == "G":
                e_guest = 0
            else:
                e_host = 0
        elif letter == "I":
            e_idle = 1
        elif letter == "p":
            precise += 1
            if not exclude_gh:
                e_guest = 1
        elif letter == "P":
            precise_max = True
        elif letter == "S":
            sample_read = True
        elif letter == "D":
            pinned = 1
        elif letter == "e":
            exclusive = 1
        elif letter == "W":
            weak = True
        elif letter == "b":
            bpf_counter = True
    a.update(
        exclude_user=eu,
        exclude_kernel=ek,
        exclude_hv=eh,
        precise_ip=precise,
        exclude_host=e_host,
        exclude_guest=e_guest,
        exclude_idle=e_idle,
    )
    ev.exclude_gh = exclude_gh
    ev.sample_read = sample_read
    ev.precise_max = precise_max
    ev.weak = weak
    ev.bpf_counter = bpf_counter
    if ev.is_leader:
        a["pinned"] = pinned
        a["exclusive"] = exclusive


# --------------------------------------------------------------------------------------------
# perf stat


def _configure_stat(evsels: Sequence[_Evsel]) -> None:
    """``create_perf_stat_counter``: count, never sample; the group leader starts disabled and is
    enabled on exec of the workload — unless every event is counted system-wide (uncore PMUs,
    ``duration_time``), when perf enables them itself."""
    on_exec = not all(_system_wide(ev.base) for ev in evsels)
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


def _system_wide(base: BaseEvsel) -> bool:
    """Events perf stat counts per CPU of their own CPU list: those of PMUs with a ``cpumask``
    (uncore, RAPL) and the ``duration_time`` tool event."""
    if base.tool:
        return getattr(base.event, "name", "") == "duration_time"
    return base.system_wide


# --------------------------------------------------------------------------------------------
# perf record


def _set_bits(a: dict[str, int], key: str, *names: str) -> None:
    for name in names:
        a[key] = a.get(key, 0) | A.SAMPLE[name]


def _clear_bits(a: dict[str, int], key: str, *names: str) -> None:
    for name in names:
        a[key] = a.get(key, 0) & ~A.SAMPLE[name]


def _configure_record(evsels: Sequence[_Evsel]) -> None:
    for position, ev in enumerate(evsels):
        _record_evsel(ev, tracking=position == 0)
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


def _record_evsel(ev: _Evsel, *, tracking: bool) -> None:
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
            a["inherit"] = 0
    if not a.get("sample_period"):
        a["freq"] = 1
        a["sample_period"] = DEFAULT_FREQ
    if a.get("freq"):
        _set_bits(a, "sample_type", "PERIOD")
    _set_bits(a, "sample_type", "TIME")
    if ev.precise_max:
        a["precise_ip"] = 3
    if tracking:
        a.update(mmap=1, comm=1, task=1, mmap2=1, comm_exec=1, ksymbol=1, bpf_event=1)
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


def _planned(ev: _Evsel) -> PlannedEvent:
    a = dict(ev.attr)
    if a.get("freq"):
        a["sample_freq"] = a.pop("sample_period", 0)
    base = ev.base
    alias = base.alias
    leader = ev.leader or ev
    group = GroupRef(leader.group_index, ev.is_leader) if leader.group_index is not None else None
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
    )
