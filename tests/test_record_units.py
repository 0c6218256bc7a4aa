"""evspec record without a kernel: output layout, __bpf_stdout__ rules, apply checks, attach plan."""

from __future__ import annotations

import json

import pytest
from evspec.loader.attach.attacher import plan_attachments, program_types
from evspec.loader.errors import ObjectError
from evspec.loader.lint.terms.bpf_stdout import STDOUT_EVENT, STDOUT_MAP, plan_outputs
from evspec.loader.lint.terms.maps import MapUpdate
from evspec.loader.load.apply import (
    MSG_EVTDIM,
    MSG_EVTINH,
    MSG_EVTTYPE,
    MSG_MAPSIZE,
    ApplyError,
    EventInstances,
    check_event_update,
)
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec, ProgramSpec
from evspec.loader.output.script import (
    LostLine,
    SampleLine,
    bpf_string,
    hexdump_lines,
    lost_json,
    sample_json,
    sample_text,
)
from evspec.loader.session import perf_attr

RAISE = b"Raise a BPF event!\0\0"


def _sample(raw: bytes | None, **kw: object) -> SampleLine:
    base = dict(event="__bpf_stdout__", comm="sleep", pid=42, tid=43, cpu=1,
                time_ns=1074_053516_789, period=0, raw=raw)
    base.update(kw)
    return SampleLine(**base)  # type: ignore[arg-type]


def test_text_matches_perf_script_layout() -> None:
    text = sample_text(_sample(RAISE), 22)
    assert text == (
        "           sleep    43 [001]  1074.053516:          0         __bpf_stdout__: \n"
        "      BPF output: 0000: 52 61 69 73 65 20 61 20  Raise a \n"
        "                  0008: 42 50 46 20 65 76 65 6e  BPF even\n"
        "                  0010: 74 21 00 00              t!..    \n"
        '      BPF string: "Raise a BPF event!"\n'
        "\n"
    )


def test_hexdump_of_whole_lines_has_no_padding() -> None:
    assert hexdump_lines(bytes(range(0x41, 0x49))) == ["      BPF output: 0000: 41 42 43 44 45 46 47 48  ABCDEFGH"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"hello1\0\0\0\0\0\0", "hello1"),
        (b"abcd", None),  # not NUL-terminated
        (b"a\x01b\0", None),  # unprintable before the NUL
        (b"tab\there\0", None),  # a tab is not printable to perf's bpf-output printer
        (b"hi\0x\0", None),  # text after the NUL
        (b"caf\xe9\0", "caf\xe9"),  # perf counts Latin-1 letters printable
        (b"", None),
        (None, None),
    ],
)
def test_bpf_string_rules(raw: bytes | None, expected: str | None) -> None:
    assert bpf_string(raw) == expected


def test_sample_without_payload_prints_header_only() -> None:
    assert sample_text(_sample(None, event="evt"), 3) == "           sleep    43 [001]  1074.053516:          0 evt: \n\n"


def test_json_lines() -> None:
    assert json.loads(sample_json(_sample(RAISE))) == {
        "event": "__bpf_stdout__", "comm": "sleep", "pid": 42, "tid": 43, "cpu": 1,
        "time_ns": 1074053516789, "raw_hex": RAISE.hex(), "string": "Raise a BPF event!",
    }
    assert json.loads(lost_json(LostLine("evt", 3, 7))) == {"lost": 7, "cpu": 3, "event": "evt"}


# ------------------------------------------------------------------ __bpf_stdout__


def _obj(path: str, *maps: MapSpec, programs: tuple[ProgramSpec, ...] = ()) -> ObjectSpec:
    return ObjectSpec(path, "GPL", None, maps, programs)


STDOUT = MapSpec(STDOUT_MAP, MapType.PERF_EVENT_ARRAY, 4, 4, 0)
STDOUT4 = MapSpec(STDOUT_MAP, MapType.PERF_EVENT_ARRAY, 4, 4, 4)
OTHER = MapSpec("arr", MapType.ARRAY, 4, 4, 8)


def test_no_stdout_map_no_event() -> None:
    plan = plan_outputs([(_obj("a.o", OTHER), [MapUpdate("arr", ((0, 7),), b"\1\0\0\0", None)])])
    assert not plan.create_event
    assert plan.updates == ((MapUpdate("arr", ((0, 7),), b"\1\0\0\0", None),),)


def test_unconfigured_maps_share_one_automatic_event() -> None:
    plan = plan_outputs([(_obj("a.o", STDOUT), []), (_obj("b.o", STDOUT4, OTHER), [])])
    assert plan.create_event
    assert plan.updates == (
        (MapUpdate(STDOUT_MAP, (), None, STDOUT_EVENT),),
        (MapUpdate(STDOUT_MAP, ((0, 3),), None, STDOUT_EVENT),),
    )


def test_configured_map_is_cloned_to_the_others() -> None:
    mine = MapUpdate(STDOUT_MAP, ((0, 3),), None, "mine")
    plan = plan_outputs([(_obj("a.o", STDOUT), []), (_obj("b.o", STDOUT4), [mine]), (_obj("c.o", OTHER), [])])
    assert not plan.create_event
    assert plan.updates == ((MapUpdate(STDOUT_MAP, (), None, "mine"),), (mine,), ())


def test_cloned_index_list_keeps_its_keys() -> None:
    one = MapUpdate(STDOUT_MAP, ((0, 0),), None, "mine")
    plan = plan_outputs([(_obj("a.o", STDOUT4), [one]), (_obj("b.o", STDOUT4), [])])
    assert plan.updates[1] == (one,)


# ------------------------------------------------------------------ apply checks

UPDATE = MapUpdate("channel", (), None, "evt")


def _event(**kw: object) -> EventInstances:
    base = dict(name="evt", perf_type=1, config=10, inherit=False, threads=1, fds=(5, 6))
    base.update(kw)
    return EventInstances(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("event", "keys", "message", "status"),
    [
        (_event(threads=2, inherit=True), [0], MSG_EVTDIM, 177),
        (_event(inherit=True, perf_type=2), [0], MSG_EVTINH, 176),
        (_event(perf_type=2, config=300), [0], MSG_EVTTYPE, 175),
        (_event(perf_type=1, config=0), [0], MSG_EVTTYPE, 175),
        (_event(), [0, 1, 2], MSG_MAPSIZE, 178),
    ],
)
def test_apply_checks_in_perfs_order(event: EventInstances, keys: list[int], message: str, status: int) -> None:
    with pytest.raises(ApplyError) as info:
        check_event_update(UPDATE, event, keys)
    assert info.value.perf_message == message
    assert info.value.exit_status == status


@pytest.mark.parametrize("perf_type", [0, 4])
def test_hardware_and_raw_events_fit_a_map(perf_type: int) -> None:
    event = _event(perf_type=perf_type, config=0)
    assert event.storable and not event.is_bpf_output  # storable for its type, not as a bpf-output
    assert check_event_update(UPDATE, event, [0, 1]) is None  # a key for each of its 2 CPU slots: accepted
    # a key past its CPU slots is refused by the size check, the last in perf's order: the event
    # went through every check before it (threads, inherit, type)
    with pytest.raises(ApplyError) as info:
        check_event_update(UPDATE, event, [0, 1, 2])
    assert (info.value.perf_message, info.value.exit_status) == (MSG_MAPSIZE, 178)


# ------------------------------------------------------------------ attach plan


def _prog(name: str, section: str) -> ProgramSpec:
    return ProgramSpec(name, section, b"\x95" + bytes(7))


def test_tracepoint_and_load_only_programs() -> None:
    spec = _obj("t.o", programs=(_prog("a", "syscalls:sys_enter_getppid"), _prog("b", "!raw_syscalls:unaugmented")))
    plan = plan_attachments(spec, lambda s, e: 77 if (s, e) == ("syscalls", "sys_enter_getppid") else None)
    assert [(p.program, [(e.name, dict(e.values)) for e in p.events]) for p in plan] == [
        ("a", [("syscalls:sys_enter_getppid", {"type": 2, "config": 77})]),
        ("b", []),
    ]
    assert program_types(plan) == {"a": 5, "b": 5}


def test_unknown_tracepoint_is_an_object_error() -> None:
    spec = _obj("t.o", programs=(_prog("a", "syscalls:nope"),))
    with pytest.raises(ObjectError, match="tracepoint 'syscalls:nope' does not exist"):
        plan_attachments(spec, lambda s, e: None)


def test_a_kind_without_attacher_is_refused_naming_it() -> None:
    spec = _obj("s.o", programs=(_prog("f", "socket"),))
    with pytest.raises(ObjectError, match="socket programs are not supported yet.*attaching socket programs") as info:
        plan_attachments(spec, lambda s, e: 1)
    assert info.value.code == "EK103"


def test_perf_attr_maps_names_to_the_abi() -> None:
    attr = perf_attr({"type": 1, "config": 10, "sample_freq": 4000, "freq": 1, "disabled": 1,
                      "enable_on_exec": 1, "precise_ip": 2, "bp_addr": 9})
    assert (attr.type, attr.config, attr.sample_period, attr.config1) == (1, 10, 4000, 9)
    assert attr.flags == (1 << 0) | (1 << 10) | (1 << 12) | (2 << 15)


class _RecordingKind:
    """A kind attacher that records what the dispatcher asks of it."""

    def __init__(self, kernel: object, options: object) -> None:
        self.calls: list[str] = []
        self.options = options
        self.notes = ["1 program served 2 probe points"]

    def plan(self, spec: ObjectSpec, prog: ProgramSpec, section: object) -> object:
        from evspec.loader.attach.attachment import ProbeEvent, ProgramAttach
        from evspec.loader.sections.names import AttachKind

        self.calls.append(f"plan {prog.name}")
        return ProgramAttach(prog.name, 6, (ProbeEvent("xdp:" + prog.name, {"type": 1}),), deferred=True, kind=AttachKind.XDP)

    def program_fd(self, live: object, attach: object, event: object) -> int | None:
        self.calls.append("program_fd")
        return 99

    def attach_hooks(self, live: object, attach: object) -> None:
        self.calls.append("hooks")

    def close(self) -> None:
        self.calls.append("close")
        raise OSError("qdisc busy")


def test_attacher_dispatches_to_the_kind_attacher(monkeypatch: pytest.MonkeyPatch) -> None:
    from evspec.loader.attach import attacher as attach
    from evspec.loader.attach.attachment import AttachOptions
    from evspec.loader.kernel import Kernel
    from evspec.loader.kernel.fake import FakeKernel
    from evspec.loader.sections.names import AttachKind

    made: list[_RecordingKind] = []

    def factory(kernel: object, options: object) -> _RecordingKind:
        made.append(_RecordingKind(kernel, options))
        return made[-1]

    monkeypatch.setitem(attach.KIND_ATTACHERS, AttachKind.XDP, factory)
    spec = _obj("n.o", programs=(_prog("a", "xdp"), _prog("b", "xdp"), _prog("t", "raw_syscalls:sys_enter")))
    attacher = attach.Attacher(Kernel(FakeKernel()), AttachOptions(lambda s, e: 5, dev="veth0"))
    plan = attacher.plan(spec)
    assert len(made) == 1 and made[0].options.dev == "veth0"  # type: ignore[attr-defined]
    assert [p.deferred for p in plan] == [True, True, False]
    assert attach.program_types(plan) == {"t": 5}
    assert attacher.program_fd(None, plan[0], plan[0].events[0]) == 99  # type: ignore[arg-type]
    attacher.attach_hooks(None, plan)  # type: ignore[arg-type]
    assert attacher.notes == ["1 program served 2 probe points"]
    with pytest.raises(OSError, match="qdisc busy"):
        attacher.close()
    assert made[0].calls == ["plan a", "plan b", "program_fd", "hooks", "hooks", "close"]


def test_rings_are_4_mib_unless_an_event_would_take_more_than_64_mib() -> None:
    from evspec.loader.session import default_ring_pages

    sizes = {cpus: default_ring_pages(cpus, 4096) * 4096 >> 10 for cpus in (1, 2, 16, 32, 64, 128, 1024)}
    assert sizes == {1: 4096, 2: 4096, 16: 4096, 32: 2048, 64: 1024, 128: 512, 1024: 512}  # KiB
    assert default_ring_pages(3, 16384) == 256  # 64 KiB pages: still 4 MiB, a power of two of pages
    assert default_ring_pages(24, 4096) == 512  # 64 MiB / 24 is not a power of two: the one below
