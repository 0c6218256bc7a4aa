"""What attaching a program means, as data: the plan for one program (``ProgramAttach``: its
program type and the perf events that carry it, ``ProbeEvent``), and the options every kind
attacher gets (``AttachOptions``). The attacher and its kind attachers share them."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from evspec.loader.sections.names import AttachKind

from evspec.span import Slotted, value_field

TracepointIds = Callable[[str, str], int | None]


class ProbeEvent(Slotted):
    """A perf event that carries a program: the evsel name perf would show, and its attr fields.

    ``one_per_task``: every perf event opened with these values is a kernel probe of its own that
    runs the program on each hit, whatever CPU it is on (a probe PMU event), so the event must be
    opened once per task with cpu=-1 (system-wide: on one CPU only), not once per CPU, or the
    program runs once per CPU event for each hit. ``tracefs``: where the format of a tracepoint
    event shown under another name is (a probe perf named ``perf_bpf_probe:EVENT``, made in
    evspec's own group).
    """

    name: str
    values: Mapping[str, int] = value_field(hash=False)
    one_per_task: bool = False
    tracefs: str | None = None  # SYSTEM:EVENT of its tracefs entry, when that is not ``name``


class ProgramAttach(Slotted):
    """One program: its BPF program type and the events it goes on (none: load only).

    ``deferred`` programs are not loaded by ``load_object``: their kind attacher loads them itself
    (e.g. with an argument prologue in front) when ``program_fd`` is asked for them. ``detail`` is
    the kind attacher's own plan for the program (opaque here).
    """

    program: str
    prog_type: int
    events: tuple[ProbeEvent, ...] = ()
    deferred: bool = False
    kind: AttachKind = AttachKind.NONE
    detail: object = value_field(default=None, compare=False)
    expected_attach_type: int = 0  # what BPF_PROG_LOAD needs for some types (tp_btf: BPF_TRACE_RAW_TP)
    attach_btf_id: int = 0  # the kernel BTF type a tp_btf program is loaded for


class AttachOptions(Slotted):
    """What the command line says about attaching: tracepoint ids of the machine, ``--dev``;
    ``skip_tgid``: the recording's own process (or processes), in which the programs a kind
    attacher loads itself must do nothing (``load.self_filter``)."""

    tracepoint_id: TracepointIds
    dev: str | None = None
    skip_tgid: int | tuple[int, ...] | None = None
