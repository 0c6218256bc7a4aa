"""The perf events ``evspec record`` opens for the programs of an object, known without a kernel.

perf turns a BPF event into one tracepoint evsel per program (``SYS:EVENT`` for a tracepoint
section, ``GROUP:EVENT`` of the probe it creates for a kprobe/uprobe section), and adds the
automatic ``__bpf_stdout__`` bpf-output event when an object has that map and no term configures
it. ``evspec compile`` shows those events with their attrs, as ``perf record -vv`` does; a probe's
tracepoint id exists only once record has created the probe.
"""

from __future__ import annotations

from evspec.loader.object.spec import ObjectSpec
from evspec.loader.sections.names import (
    PERF_BPF_PROBE_GROUP,
    AttachKind,
    BtfTarget,
    NetHookTarget,
    ProbeTarget,
    RawTracepointTarget,
    SectionStyle,
    TracepointTarget,
    parse_section,
)

from evspec.span import Slotted


class ProgramEvent(Slotted):
    """A program and how record attaches it: ``event`` is the tracepoint-style name of the perf
    event that carries it (None: no perf event, e.g. XDP or a load-only program); ``created``:
    the event is a probe record creates (its id is known only then); ``how`` says it in words."""

    program: str
    section: str
    event: str | None
    created: bool
    how: str


def program_events(spec: ObjectSpec) -> tuple[ProgramEvent, ...]:
    """One entry per program of ``spec``, in the object's order (sections were checked before)."""
    out = []
    for prog in spec.programs:
        section = parse_section(prog.section)
        target = section.target
        if section.attach is AttachKind.NONE:
            out.append(ProgramEvent(prog.name, prog.section, None, False, "loaded, not attached"))
        elif isinstance(target, TracepointTarget):
            out.append(ProgramEvent(prog.name, prog.section, target.name, False, f"on tracepoint {target.name}"))
        elif isinstance(target, ProbeTarget):
            name = _probe_event(target, section.style)
            where = f"{target.binary}:" if target.binary else (f"{target.module}:" if target.module else "")
            kind = _probe_kind(target)
            point = target.point.function or (f"{target.point.address:#x}" if target.point.address else "?")
            glob = " (one event per matching function)" if target.point.is_glob else ""
            out.append(ProgramEvent(prog.name, prog.section, name, True,
                                    f"on the {kind} {where}{point} that record creates{glob}"))
        elif isinstance(target, RawTracepointTarget):
            kind = "BTF tracepoint" if section.attach is AttachKind.BTF_TRACEPOINT else "raw tracepoint"
            out.append(ProgramEvent(prog.name, prog.section, None, False,
                                    f"on the {kind} {target.event}, system-wide (no perf event)"))
        elif isinstance(target, BtfTarget) and section.attach is AttachKind.TRAMPOLINE:
            out.append(ProgramEvent(prog.name, prog.section, None, False,
                                    f"through a BPF trampoline on {target.name}, system-wide (no perf event)"))
        elif isinstance(target, NetHookTarget):
            dev = target.dev or "the --dev interface"
            out.append(ProgramEvent(prog.name, prog.section, None, False, f"{target.hook} on {dev}, by netlink"))
        else:
            out.append(ProgramEvent(prog.name, prog.section, None, False, f"{section.attach.value}: not attached"))
    return tuple(out)


def _probe_event(target: ProbeTarget, style: SectionStyle) -> str:
    """The evsel name: perf's ``GROUP:EVENT`` for its own sections, evspec's ``KIND:FUNC`` for
    libbpf-style ones (those have no event name of their own)."""
    if style is SectionStyle.PERF and target.probe_name is not None:
        return target.probe_name
    kind = _probe_kind(target)
    function = target.point.function or PERF_BPF_PROBE_GROUP
    return f"{kind}:{function}+{target.point.offset:#x}" if target.point.offset else f"{kind}:{function}"


def _probe_kind(target: ProbeTarget) -> str:
    base = "uprobe" if target.is_uprobe else "kprobe"
    return base.replace("probe", "retprobe") if target.point.retprobe else base
