"""xdp and tc attachment (loader/attach/net.py) against a fake netlink and the fake kernel (no root)."""

from __future__ import annotations

import errno as E
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from evspec.loader.attach.attacher import KIND_ATTACHERS, Attacher
from evspec.loader.attach.attachment import AttachOptions, ProgramAttach
from evspec.loader.attach.net import (
    TC_H_EGRESS_HOOK,
    TC_H_INGRESS_HOOK,
    XDP_FLAGS_DRV_MODE,
    XDP_FLAGS_HW_MODE,
    XDP_FLAGS_REPLACE,
    XDP_FLAGS_SKB_MODE,
    XDP_FLAGS_UPDATE_IF_NOEXIST,
    Ledger,
    NetAttacher,
    NetHook,
    NetlinkFailure,
    TcFilter,
    XdpState,
    attached_from_json,
    process_start,
)
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.kernel.fake import FakeKernel
from evspec.loader.load.live import LiveObject, load_object
from evspec.loader.object.spec import ObjectSpec, ProgramSpec
from evspec.loader.sections.names import AttachKind

from evspec.codes import lookup

PROG = b"\xb7\x00\x00\x00\x00\x00\x00\x00" + b"\x95\x00\x00\x00\x00\x00\x00\x00"  # r0 = 0; exit
MODES = XDP_FLAGS_SKB_MODE | XDP_FLAGS_DRV_MODE | XDP_FLAGS_HW_MODE


@dataclass
class FakeNetlink:
    """rtnetlink as the kernel answers it, for a few interfaces; ``fail[op]`` scripts errnos."""

    prog_id_of: Callable[[int], int]
    interfaces_by_name: dict[str, int] = field(default_factory=lambda: {"lo": 1, "eth0": 2, "veth0": 7})
    native_xdp: frozenset[int] = frozenset({7})  # interfaces whose driver has XDP
    xdp: dict[int, dict[int, int]] = field(default_factory=dict)  # ifindex -> {mode flag: prog id}
    clsact: set[int] = field(default_factory=set)
    filters: dict[tuple[int, int], list[TcFilter]] = field(default_factory=dict)
    fail: dict[str, list[int]] = field(default_factory=dict)
    calls: list[tuple[object, ...]] = field(default_factory=list)
    on_call: Callable[[str], None] | None = None
    closed: bool = False

    def _op(self, name: str, *args: object) -> None:
        self.calls.append((name, *args))
        if self.on_call is not None:
            self.on_call(name)
        errs = self.fail.get(name)
        if errs:
            err = errs.pop(0)
            raise NetlinkFailure(err, f"scripted {os.strerror(err)}")

    def _known(self, index: int) -> None:
        if index not in self.interfaces_by_name.values():
            raise NetlinkFailure(E.ENODEV, "No such device")

    def interfaces(self) -> dict[str, int]:
        self._op("interfaces")
        return dict(self.interfaces_by_name)

    def xdp_state(self, index: int) -> XdpState:
        self._op("xdp_state", index)
        self._known(index)
        slots = self.xdp.get(index, {})
        return XdpState(slots.get(XDP_FLAGS_DRV_MODE), slots.get(XDP_FLAGS_SKB_MODE), slots.get(XDP_FLAGS_HW_MODE))

    def set_xdp(self, index: int, fd: int, flags: int, expected_fd: int | None = None) -> None:
        self._op("set_xdp", index, fd, flags, expected_fd)
        self._known(index)
        mode = flags & MODES or (XDP_FLAGS_DRV_MODE if index in self.native_xdp else XDP_FLAGS_SKB_MODE)
        if mode == XDP_FLAGS_DRV_MODE and index not in self.native_xdp:
            raise NetlinkFailure(E.EOPNOTSUPP, "Underlying driver does not support XDP in native mode")
        slots = self.xdp.setdefault(index, {})
        if any(m != mode for m in slots):
            raise NetlinkFailure(E.EEXIST, "Native and generic XDP can't be active at the same time")
        current = slots.get(mode)
        if flags & XDP_FLAGS_REPLACE and current != (self.prog_id_of(expected_fd) if expected_fd is not None else None):
            raise NetlinkFailure(E.EEXIST, "Active program does not match expected")
        if fd < 0:
            slots.pop(mode, None)
            return
        if current is not None and flags & XDP_FLAGS_UPDATE_IF_NOEXIST:
            raise NetlinkFailure(E.EBUSY, "XDP program already attached")
        slots[mode] = self.prog_id_of(fd)

    def has_clsact(self, index: int) -> bool:
        self._op("has_clsact", index)
        self._known(index)
        return index in self.clsact

    def add_clsact(self, index: int) -> None:
        self._op("add_clsact", index)
        if index in self.clsact:
            raise NetlinkFailure(E.EEXIST, "File exists")
        self.clsact.add(index)

    def del_clsact(self, index: int) -> None:
        self._op("del_clsact", index)
        self.clsact.discard(index)
        for hook in (TC_H_INGRESS_HOOK, TC_H_EGRESS_HOOK):
            self.filters.pop((index, hook), None)

    def add_bpf_filter(self, index: int, parent: int, fd: int, name: str) -> None:
        self._op("add_bpf_filter", index, parent, fd, name)
        if index not in self.clsact:
            raise NetlinkFailure(E.EINVAL, "Parent Qdisc doesn't exists")
        found = self.filters.setdefault((index, parent), [])
        found.append(TcFilter(name, 49152 - len(found), 1))

    def bpf_filters(self, index: int, parent: int) -> list[TcFilter]:
        self._op("bpf_filters", index, parent)
        self._known(index)
        return list(self.filters.get((index, parent), []))

    def del_filter(self, index: int, parent: int, filt: TcFilter) -> None:
        self._op("del_filter", index, parent, filt.name)
        self.filters[(index, parent)].remove(filt)

    def close(self) -> None:
        self.closed = True


@dataclass
class World:
    kernel: Kernel
    netlink: FakeNetlink
    state: Path

    def attacher(self, dev: str | None = None) -> NetAttacher:
        return NetAttacher(self.kernel, AttachOptions(_no_tracepoints, dev=dev), netlink=self.netlink, state_root=self.state)

    def ledgers(self) -> list[dict[str, object]]:
        return [json.loads(p.read_text()) for p in sorted(self.state.glob("net-*/*.json"))]


def _no_tracepoints(system: str, event: str) -> int | None:
    return None


@pytest.fixture
def world(tmp_path: Path) -> World:
    kernel = Kernel(FakeKernel())
    netlink = FakeNetlink(lambda fd: kernel.program_info(fd).id)
    return World(kernel, netlink, tmp_path / "run")


def obj(*sections: str) -> ObjectSpec:
    programs = tuple(ProgramSpec(f"p{i}", s, PROG) for i, s in enumerate(sections))
    return ObjectSpec("net.o", "GPL", None, (), programs)


def plan_and_attach(world: World, spec: ObjectSpec, attacher: NetAttacher) -> tuple[LiveObject, tuple[ProgramAttach, ...]]:
    """Through the real dispatcher: Attacher.plan → load_object → attach_hooks."""
    from evspec.loader.attach.attacher import program_types

    registry = {AttachKind.XDP: lambda k, o: attacher, AttachKind.TC: lambda k, o: attacher}
    outer = Attacher(world.kernel, attacher.options)
    saved = dict(KIND_ATTACHERS)
    KIND_ATTACHERS.update(registry)
    try:
        plans = outer.plan(spec)
    finally:
        KIND_ATTACHERS.clear()
        KIND_ATTACHERS.update(saved)
    live = load_object(spec, program_types(plans), kernel=world.kernel)
    outer.attach_hooks(live, plans)
    return live, plans


def error_of(call: Callable[[], object]) -> ObjectError:
    with pytest.raises(ObjectError) as info:
        call()
    return info.value


# --------------------------------------------------------------------------------------- plan


def test_registered_for_xdp_and_tc() -> None:
    assert KIND_ATTACHERS[AttachKind.XDP] == KIND_ATTACHERS[AttachKind.TC] == "evspec.loader.attach.net:NetAttacher"


def test_plan_uses_the_sections_dev_before_the_command_line(world: World) -> None:
    a = world.attacher(dev="eth0")
    spec = obj("dev=veth0;mode=skb;xdp", "tc/egress")
    first, second = (a.plan(spec, p, _section(p)) for p in spec.programs)
    assert (first.kind, first.prog_type, first.events, first.deferred) == (AttachKind.XDP, 6, (), False)
    assert isinstance(first.detail, NetHook) and (first.detail.ifname, first.detail.ifindex) == ("veth0", 7)
    assert (second.kind, second.prog_type) == (AttachKind.TC, 3)
    assert isinstance(second.detail, NetHook) and (second.detail.ifname, second.detail.target.hook) == ("eth0", "tc egress")
    assert a.program_fd(None, first, None) is None  # type: ignore[arg-type]


def test_no_interface_anywhere(world: World) -> None:
    spec = obj("tc")
    exc = error_of(lambda: world.attacher().plan(spec, spec.programs[0], _section(spec.programs[0])))
    assert exc.code == "EK140"
    assert exc.message == "net.o: program 'p0' (section 'tc'): no network interface to attach the tc ingress program to"
    assert exc.help == ("give one with --dev IFACE", 'or name it in the section: SEC("dev=IFACE;tc")')


@pytest.mark.parametrize(("section", "dev", "source"), [("dev=wlan9;xdp", None, "dev="), ("xdp", "wlan9", "--dev")])
def test_unknown_interface_lists_the_others(world: World, section: str, dev: str | None, source: str) -> None:
    spec = obj(section)
    exc = error_of(lambda: world.attacher(dev).plan(spec, spec.programs[0], _section(spec.programs[0])))
    assert exc.code == "EK141"
    assert f"network interface 'wlan9' ({source}) does not exist" in exc.message
    assert exc.help == ("the interfaces are: eth0, lo, veth0",)


def test_foreign_xdp_program_is_refused_at_plan_time(world: World) -> None:
    world.netlink.xdp[7] = {XDP_FLAGS_SKB_MODE: 4242}
    spec = obj("dev=veth0;xdp")
    exc = error_of(lambda: plan_and_attach(world, spec, world.attacher()))
    assert exc.code == "EK142"
    assert "veth0 already runs XDP program 4242 (generic mode), attached by somebody else" in exc.message
    assert exc.help[1] == 'or replace it for good: SEC("force=yes;dev=veth0;xdp")'
    assert not [c for c in world.netlink.calls if c[0] == "set_xdp"]


def test_force_replaces_a_foreign_program_for_good(world: World) -> None:
    world.netlink.xdp[7] = {XDP_FLAGS_DRV_MODE: 4242}
    a = world.attacher()
    live, _ = plan_and_attach(world, obj("force=yes;dev=veth0;xdp"), a)
    ours = world.kernel.program_info(live.program("p0").fd).id
    assert world.netlink.xdp[7] == {XDP_FLAGS_DRV_MODE: ours}
    assert world.netlink.calls[-2][:4] == ("set_xdp", 7, live.program("p0").fd, 0)  # no UPDATE_IF_NOEXIST
    a.close()
    assert world.netlink.xdp[7] == {}  # the foreign program is not put back
    live.close()


def test_two_xdp_programs_on_one_interface(world: World) -> None:
    exc = error_of(lambda: plan_and_attach(world, obj("dev=veth0;xdp", "dev=eth0;xdp", "xdp"), world.attacher("veth0")))
    assert exc.code == "EK144"
    assert exc.message == "net.o: programs 'p0' and 'p2' both attach to the XDP hook of veth0"


# ------------------------------------------------------------------------------------- attach


@pytest.mark.parametrize(
    ("section", "flags", "mode_note"),
    [
        ("dev=veth0;xdp", XDP_FLAGS_UPDATE_IF_NOEXIST, "driver"),
        ("dev=veth0;mode=skb;xdp", XDP_FLAGS_UPDATE_IF_NOEXIST | XDP_FLAGS_SKB_MODE, "generic"),
        ("dev=veth0;mode=drv;xdp", XDP_FLAGS_UPDATE_IF_NOEXIST | XDP_FLAGS_DRV_MODE, "driver"),
        ("dev=eth0;xdp", XDP_FLAGS_UPDATE_IF_NOEXIST, "generic"),
    ],
)
def test_xdp_attach_and_detach(world: World, section: str, flags: int, mode_note: str) -> None:
    a = world.attacher()
    live, _ = plan_and_attach(world, obj(section), a)
    fd = live.program("p0").fd
    prog_id = world.kernel.program_info(fd).id
    index = 7 if "veth0" in section else 2
    (attach_call,) = [c for c in world.netlink.calls if c[0] == "set_xdp"]
    assert attach_call == ("set_xdp", index, fd, flags, None)
    assert a.notes == [
        f"xdp: program 'p0' (id {prog_id}) attached to {section.split(';')[0][4:]} (ifindex {index}) in {mode_note} mode"
    ]
    world.netlink.calls.clear()
    a.close()
    mode = XDP_FLAGS_SKB_MODE if mode_note == "generic" else XDP_FLAGS_DRV_MODE
    assert world.netlink.calls[-1] == ("set_xdp", index, -1, mode | XDP_FLAGS_REPLACE, fd)
    assert world.netlink.xdp[index] == {} and world.netlink.closed
    assert a.notes[-1] == f"detached XDP program {prog_id} from {section.split(';')[0][4:]}"
    live.close()


@pytest.mark.parametrize(
    ("errno", "code", "section"),
    [
        (E.EBUSY, "EK142", "dev=veth0;xdp"),
        (E.EEXIST, "EK143", "dev=veth0;mode=skb;xdp"),
        (E.EOPNOTSUPP, "EK143", "dev=eth0;mode=drv;xdp"),
        (E.EPERM, "EK145", "dev=veth0;xdp"),
    ],
)
def test_xdp_attach_failures(world: World, errno: int, code: str, section: str) -> None:
    if errno == E.EEXIST:
        world.netlink.xdp[7] = {}
        world.netlink.on_call = lambda op: world.netlink.xdp[7].update({XDP_FLAGS_DRV_MODE: 99}) if op == "set_xdp" else None
    elif errno == E.EOPNOTSUPP:
        pass  # the fake refuses driver mode on eth0 itself
    else:
        world.netlink.fail["set_xdp"] = [errno]
    a = world.attacher()
    exc = error_of(lambda: plan_and_attach(world, obj(section), a))
    assert exc.code == code
    assert exc.message.startswith("program 'p0': attaching XDP to ")
    assert isinstance(exc, KernelError) == (code == "EK145")
    if isinstance(exc, KernelError):
        assert (exc.errno, exc.operation) == (E.EPERM, "RTM_SETLINK IFLA_XDP")
    assert world.ledgers() == []  # the intent was taken back
    a.close()
    assert lookup(code) is not None


def test_program_replaced_by_somebody_else_is_left_alone(world: World) -> None:
    a = world.attacher()
    live, _ = plan_and_attach(world, obj("dev=veth0;xdp"), a)
    world.netlink.xdp[7] = {XDP_FLAGS_DRV_MODE: 5151}
    a.close()
    assert world.netlink.xdp[7] == {XDP_FLAGS_DRV_MODE: 5151}
    assert not [c for c in world.netlink.calls if c[:3] == ("set_xdp", 7, -1)]
    assert world.ledgers() == []
    live.close()


def test_tc_creates_clsact_and_removes_exactly_what_it_added(world: World) -> None:
    a = world.attacher(dev="veth0")
    live, _ = plan_and_attach(world, obj("tc", "tc/egress", "classifier"), a)
    pid = os.getpid()
    names = [f"evspec:{pid}:p0", f"evspec:{pid}:p1", f"evspec:{pid}:p2"]
    assert world.netlink.clsact == {7}
    assert [f.name for f in world.netlink.filters[(7, TC_H_INGRESS_HOOK)]] == [names[0], names[2]]
    assert [f.name for f in world.netlink.filters[(7, TC_H_EGRESS_HOOK)]] == [names[1]]
    adds = [c for c in world.netlink.calls if c[0] in ("add_clsact", "add_bpf_filter")]
    assert adds == [
        ("add_clsact", 7),
        ("add_bpf_filter", 7, TC_H_INGRESS_HOOK, live.program("p0").fd, names[0]),
        ("add_bpf_filter", 7, TC_H_EGRESS_HOOK, live.program("p1").fd, names[1]),
        ("add_bpf_filter", 7, TC_H_INGRESS_HOOK, live.program("p2").fd, names[2]),
    ]
    assert a.notes[0] == f"tc: program 'p0' attached to veth0 ingress as bpf filter '{names[0]}', clsact qdisc created"
    assert a.notes[1] == f"tc: program 'p1' attached to veth0 egress as bpf filter '{names[1]}'"
    (ledger,) = world.ledgers()
    assert ledger["pid"] == pid and ledger["start"] == process_start(pid)
    assert [e["kind"] for e in ledger["entries"]] == ["clsact", "filter", "filter", "filter"]  # type: ignore[union-attr]
    world.netlink.calls.clear()
    a.close()
    removals = [c for c in world.netlink.calls if c[0] in ("del_filter", "del_clsact")]
    assert removals == [
        ("del_filter", 7, TC_H_INGRESS_HOOK, names[2]),
        ("del_filter", 7, TC_H_EGRESS_HOOK, names[1]),
        ("del_filter", 7, TC_H_INGRESS_HOOK, names[0]),
        ("del_clsact", 7),
    ]
    assert world.netlink.clsact == set() and world.ledgers() == [] and not world.state.exists()
    live.close()


def test_existing_clsact_and_other_filters_stay(world: World) -> None:
    world.netlink.clsact.add(7)
    theirs = TcFilter("cilium", 1, 1)
    world.netlink.filters[(7, TC_H_INGRESS_HOOK)] = [theirs]
    a = world.attacher()
    live, _ = plan_and_attach(world, obj("dev=veth0;tc"), a)
    assert not [c for c in world.netlink.calls if c[0] == "add_clsact"]
    a.close()
    assert world.netlink.clsact == {7} and world.netlink.filters[(7, TC_H_INGRESS_HOOK)] == [theirs]
    live.close()


def test_clsact_we_created_stays_when_somebody_else_added_a_filter(world: World) -> None:
    a = world.attacher()
    live, _ = plan_and_attach(world, obj("dev=veth0;tc/egress"), a)
    world.netlink.filters[(7, TC_H_INGRESS_HOOK)] = [TcFilter("late", 2, 1)]
    a.close()
    assert world.netlink.clsact == {7}
    assert a.notes[-1] == "left the clsact qdisc of veth0: it holds filters evspec did not add"
    assert world.ledgers() == []
    live.close()


def test_clsact_created_concurrently_is_not_ours(world: World) -> None:
    world.netlink.on_call = lambda op: world.netlink.clsact.add(7) if op == "add_clsact" else None
    a = world.attacher()
    live, _ = plan_and_attach(world, obj("dev=veth0;tc"), a)
    a.close()
    assert world.netlink.clsact == {7} and world.netlink.filters[(7, TC_H_INGRESS_HOOK)] == []
    live.close()


@pytest.mark.parametrize(("op", "what"), [("add_clsact", "creating the clsact qdisc"), ("add_bpf_filter", "adding a bpf filter")])
def test_tc_attach_failures_undo_what_was_added(world: World, op: str, what: str) -> None:
    world.netlink.fail[op] = [E.EOPNOTSUPP]
    a = world.attacher()
    exc = error_of(lambda: plan_and_attach(world, obj("dev=veth0;tc"), a))
    assert isinstance(exc, KernelError) and exc.code == "EK145" and exc.errno == E.EOPNOTSUPP
    assert f"program 'p0': {what}" in exc.message and "CONFIG_NET_" in exc.help[0]
    a.close()
    assert world.netlink.clsact == set() and world.ledgers() == []


def test_close_tries_everything_and_raises_the_first_failure(world: World) -> None:
    a = world.attacher(dev="veth0")
    live, _ = plan_and_attach(world, obj("xdp", "tc"), a)
    world.netlink.fail["del_filter"] = [E.EPERM]
    with pytest.raises(KernelError) as info:
        a.close()
    assert info.value.code == "EK146" and info.value.errno == E.EPERM
    assert info.value.message == f"tc filter 'evspec:{os.getpid()}:p1' on veth0 could not be removed: scripted Operation not permitted"
    assert world.netlink.xdp[7] == {} and world.netlink.closed  # the rest was removed
    (ledger,) = world.ledgers()  # what is left is journalled for the next run
    assert [e["kind"] for e in ledger["entries"]] == ["clsact", "filter"]  # type: ignore[union-attr]
    live.close()


def test_an_interface_gone_took_its_hooks_along(world: World) -> None:
    a = world.attacher(dev="veth0")
    live, _ = plan_and_attach(world, obj("xdp", "tc"), a)
    del world.netlink.interfaces_by_name["veth0"]
    a.close()
    assert world.ledgers() == []
    live.close()


def test_the_intent_is_journalled_before_the_request(world: World) -> None:
    seen: list[list[str]] = []

    def spy(op: str) -> None:
        if op in ("set_xdp", "add_clsact", "add_bpf_filter"):
            seen.append([str(e["kind"]) for ledger in world.ledgers() for e in ledger["entries"]])  # type: ignore[union-attr]

    world.netlink.on_call = spy
    a = world.attacher(dev="veth0")
    live, _ = plan_and_attach(world, obj("xdp", "tc"), a)
    assert seen == [["xdp"], ["xdp", "clsact"], ["xdp", "clsact", "filter"]]
    assert len(list(world.state.glob("net-*/*.json"))) == 1
    directory = next(world.state.glob("net-*"))
    assert directory.stat().st_mode & 0o777 == 0o700
    a.close()
    live.close()


# -------------------------------------------------------------------------------------- sweep


def _stale_ledger(world: World, pid: int, start: int | None, entries: list[dict[str, object]]) -> Path:
    ledger = Ledger(world.state)
    ledger.directory.mkdir(mode=0o700, parents=True)
    world.state.chmod(0o700)
    path = ledger.directory / f"{pid}.dead.json"
    path.write_text(json.dumps({"pid": pid, "start": start, "entries": entries}))
    return path


def test_stale_attachments_of_a_dead_evspec_are_removed(world: World) -> None:
    ppid = os.getppid()
    nl = world.netlink
    nl.xdp[7] = {XDP_FLAGS_SKB_MODE: 77}
    nl.clsact.add(7)
    nl.filters[(7, TC_H_EGRESS_HOOK)] = [TcFilter(f"evspec:{ppid}:old", 49152, 1)]
    entries = [
        {"kind": "xdp", "ifindex": 7, "ifname": "veth0", "prog_id": 77},
        {"kind": "clsact", "ifindex": 7, "ifname": "veth0"},
        {"kind": "filter", "ifindex": 7, "ifname": "veth0", "parent": TC_H_EGRESS_HOOK, "name": f"evspec:{ppid}:old"},
        {"kind": "future", "ifindex": 7, "ifname": "veth0"},
    ]
    path = _stale_ledger(world, ppid, 0, entries)  # the parent's pid with another start time: a reused pid
    a = world.attacher(dev="eth0")
    spec = obj("tc")
    a.plan(spec, spec.programs[0], _section(spec.programs[0]))
    assert nl.xdp[7] == {} and nl.clsact == set() and (7, TC_H_EGRESS_HOOK) not in nl.filters
    assert ("set_xdp", 7, -1, XDP_FLAGS_SKB_MODE, None) in nl.calls  # no program fd to expect: by id
    assert a.notes == [
        f"removed tc filter evspec:{ppid}:old from veth0 (left by evspec process {ppid}, which is gone)",
        f"removed the clsact qdisc of veth0 (left by evspec process {ppid}, which is gone)",
        f"detached XDP program 77 from veth0 (left by evspec process {ppid}, which is gone)",
    ]
    assert not path.exists()
    a.close()


def test_a_running_evspecs_ledger_is_left_alone(world: World) -> None:
    ppid = os.getppid()
    world.netlink.xdp[7] = {XDP_FLAGS_SKB_MODE: 77}
    path = _stale_ledger(world, ppid, process_start(ppid), [{"kind": "xdp", "ifindex": 7, "ifname": "veth0", "prog_id": 77}])
    a = world.attacher(dev="eth0")
    spec = obj("tc")
    a.plan(spec, spec.programs[0], _section(spec.programs[0]))
    assert world.netlink.xdp[7] == {XDP_FLAGS_SKB_MODE: 77} and path.exists() and a.notes == []
    a.close()


def test_stale_entries_of_an_interface_now_named_otherwise_are_dropped(world: World) -> None:
    world.netlink.xdp[7] = {XDP_FLAGS_SKB_MODE: 77}
    path = _stale_ledger(world, os.getppid(), 0, [{"kind": "xdp", "ifindex": 7, "ifname": "old0", "prog_id": 77}])
    a = world.attacher(dev="eth0")
    spec = obj("tc")
    a.plan(spec, spec.programs[0], _section(spec.programs[0]))
    assert world.netlink.xdp[7] == {XDP_FLAGS_SKB_MODE: 77} and not path.exists()
    a.close()


def test_stale_entries_that_cannot_be_removed_are_kept(world: World) -> None:
    world.netlink.xdp[7] = {XDP_FLAGS_SKB_MODE: 77}
    path = _stale_ledger(world, os.getppid(), 0, [{"kind": "xdp", "ifindex": 7, "ifname": "veth0", "prog_id": 77}])
    world.netlink.fail["set_xdp"] = [E.EPERM]
    a = world.attacher(dev="eth0")
    spec = obj("tc")
    a.plan(spec, spec.programs[0], _section(spec.programs[0]))
    assert path.exists()
    # what could not be undone is a warning (record prints it without -v), not a note
    assert a.warnings == [f"could not remove what evspec process {os.getppid()} left: XDP program 77 on veth0: "
                          "scripted Operation not permitted"]
    assert not any("could not remove" in n for n in a.notes)
    a.close()


def test_a_state_folder_others_can_write_is_not_used(world: World) -> None:
    world.state.mkdir(mode=0o777)
    world.state.chmod(0o777)
    a = world.attacher(dev="veth0")
    live, _ = plan_and_attach(world, obj("xdp"), a)
    assert a.notes[0] == f"network hooks are not journalled: {world.state} is not a private directory of this user"
    assert list(world.state.iterdir()) == []
    a.close()
    assert world.netlink.xdp[7] == {}
    live.close()


def test_ledger_entries_from_json() -> None:
    assert attached_from_json({"kind": "future", "ifindex": 1, "ifname": "x"}) is None
    assert attached_from_json({"kind": "xdp", "ifindex": "x", "ifname": "y", "prog_id": 1}) is None
    assert attached_from_json({"kind": "filter", "ifindex": 3}) is None


def test_process_start_of_a_missing_process() -> None:
    assert process_start(os.getpid()) is not None
    assert process_start(2**22 + 1) is None  # above pid_max


# ------------------------------------------------------------------------------------ helpers


def _section(prog: ProgramSpec):  # type: ignore[no-untyped-def]
    from evspec.loader.sections.names import parse_section

    return parse_section(prog.section)


@pytest.fixture(autouse=True)
def _no_leaked_state(world: World) -> Iterator[None]:
    yield
    assert not any(world.state.glob("net-*/.tmp-*"))
