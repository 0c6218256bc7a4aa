"""Network hooks: xdp and tc programs attached to an interface through rtnetlink (pyroute2).

Sections (loader/sections/names.py): ``xdp``, ``tc``/``tc/ingress``, ``tc/egress``, ``classifier``, with
``dev=IFACE`` (else ``record --dev``), ``mode=skb|drv`` and ``force=yes`` for xdp. Such programs
get no perf event; ``attach_hooks`` attaches them once the session's events are set up:

* **xdp**: the interface's XDP program is set (IFLA_XDP) with the mode's flag and, unless the
  section says ``force=yes``, XDP_FLAGS_UPDATE_IF_NOEXIST, so that a program somebody else
  attached is never replaced silently (EK142 already at plan time). Removal asks the kernel to
  detach *our* program only (XDP_FLAGS_REPLACE with the expected fd, Linux 5.7+).
* **tc**: a ``clsact`` qdisc is created when the interface has none (and remembered), and a
  direct-action ``bpf`` filter named ``evspec:PID:PROGRAM`` is added on its ingress or egress
  hook. Removal deletes our filters by name, and the qdisc only if we created it and no filter of
  anybody else has been added to it since.

Everything added is first written to a ledger file (``/run/evspec/net-NETNS/PID.*.json``, before
the netlink request, so a kill at any point leaves a trace). ``close()`` removes exactly what
was added (after errors and stop signals too: the session calls it from its own ``close``); a
later evspec that attaches network hooks in the same network namespace sweeps the ledgers of
dead evspec processes (a pid counts as alive only with the same start time) and removes what
they left, checking first that it is still theirs (XDP program id, filter name).

pyroute2 is imported only when an object has a network hook (it costs ~0.2 s).
"""

from __future__ import annotations

import errno as E
import json
import os
import secrets
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TypeVar

from evspec.loader.attach.attachment import AttachOptions, ProbeEvent, ProgramAttach
from evspec.loader.attach.probe_events import process_start
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.load.live import LiveObject
from evspec.loader.object.spec import ObjectSpec, ProgramSpec
from evspec.loader.sections.names import AttachKind, NetHookTarget, SectionSpec, TcDirection, XdpMode

from evspec.codes import kernel as codes
from evspec.span import Slotted

# include/uapi/linux/if_link.h
XDP_FLAGS_UPDATE_IF_NOEXIST = 1 << 0
XDP_FLAGS_SKB_MODE = 1 << 1
XDP_FLAGS_DRV_MODE = 1 << 2
XDP_FLAGS_HW_MODE = 1 << 3
XDP_FLAGS_REPLACE = 1 << 4
# include/uapi/linux/pkt_sched.h: the clsact qdisc's parent and its two hooks
TC_H_CLSACT = 0xFFFFFFF1
TC_H_INGRESS_HOOK = 0xFFFFFFF2
TC_H_EGRESS_HOOK = 0xFFFFFFF3
TC_HOOK_PARENT = {TcDirection.INGRESS: TC_H_INGRESS_HOOK, TcDirection.EGRESS: TC_H_EGRESS_HOOK}

FILTER_PREFIX = "evspec:"
STATE_ROOT = Path("/run/evspec")  # ledgers: STATE_ROOT/net-NETNS/PID.json
_MODE_FLAG = {XdpMode.SKB: XDP_FLAGS_SKB_MODE, XdpMode.DRV: XDP_FLAGS_DRV_MODE}
_MODE_NAME = {XDP_FLAGS_SKB_MODE: "generic", XDP_FLAGS_DRV_MODE: "driver", XDP_FLAGS_HW_MODE: "offload"}
_LISTED_INTERFACES = 20
T = TypeVar("T")


# ----------------------------------------------------------------------------------- netlink


class NetlinkFailure(Exception):
    """A netlink request failed: the errno and the kernel's extended-ack text (or strerror)."""

    def __init__(self, errno: int, message: str) -> None:
        super().__init__(errno, message)
        self.errno = errno
        self.message = message


class XdpState(Slotted):
    """The XDP programs of an interface by mode (program ids; None: no program in that mode)."""

    drv: int | None = None
    skb: int | None = None
    hw: int | None = None

    def mode_of(self, prog_id: int) -> int | None:
        """The XDP_FLAGS_*_MODE flag of the mode ``prog_id`` runs in, or None if it is not attached."""
        for flag, attached in ((XDP_FLAGS_DRV_MODE, self.drv), (XDP_FLAGS_SKB_MODE, self.skb), (XDP_FLAGS_HW_MODE, self.hw)):
            if attached == prog_id:
                return flag
        return None

    @property
    def programs(self) -> tuple[tuple[str, int], ...]:
        """(mode name, program id) of each attached program."""
        return tuple(
            (_MODE_NAME[flag], prog)
            for flag, prog in ((XDP_FLAGS_DRV_MODE, self.drv), (XDP_FLAGS_SKB_MODE, self.skb), (XDP_FLAGS_HW_MODE, self.hw))
            if prog is not None
        )


class TcFilter(Slotted):
    """A bpf filter on a clsact hook, as the kernel lists it."""

    name: str
    prio: int
    handle: int


class Netlink(Protocol):
    """The rtnetlink requests the network hooks need; failures raise NetlinkFailure."""

    def interfaces(self) -> dict[str, int]: ...
    def xdp_state(self, index: int) -> XdpState: ...
    def set_xdp(self, index: int, fd: int, flags: int, expected_fd: int | None = None) -> None: ...
    def has_clsact(self, index: int) -> bool: ...
    def add_clsact(self, index: int) -> None: ...
    def del_clsact(self, index: int) -> None: ...
    def add_bpf_filter(self, index: int, parent: int, fd: int, name: str) -> None: ...
    def bpf_filters(self, index: int, parent: int) -> list[TcFilter]: ...
    def del_filter(self, index: int, parent: int, filt: TcFilter) -> None: ...
    def close(self) -> None: ...


class PyrouteNetlink:
    """``Netlink`` over one pyroute2 IPRoute socket (extended acks on: the kernel's own words)."""

    def __init__(self) -> None:
        from pyroute2 import IPRoute

        self._ipr = IPRoute(ext_ack=True)

    @contextmanager
    def _request(self) -> Iterator[None]:
        from pyroute2.netlink.exceptions import NetlinkError

        try:
            yield
        except NetlinkError as exc:
            text = exc.args[1] if len(exc.args) > 1 and exc.args[1] else os.strerror(exc.code)
            raise NetlinkFailure(exc.code, str(text)) from None

    def interfaces(self) -> dict[str, int]:
        with self._request():
            return {link.get_attr("IFLA_IFNAME"): link["index"] for link in self._ipr.get_links()}

    def xdp_state(self, index: int) -> XdpState:
        with self._request():
            (link,) = self._ipr.get_links(index)
        xdp = link.get_attr("IFLA_XDP")
        if xdp is None:
            return XdpState()
        mode = xdp.get_attr("IFLA_XDP_ATTACHED")
        one = xdp.get_attr("IFLA_XDP_PROG_ID")
        if mode == "xdp":
            return XdpState(drv=one)
        if mode == "xdpgeneric":
            return XdpState(skb=one)
        if mode == "xdpoffload":
            return XdpState(hw=one)
        if mode == "xdpmulti":
            return XdpState(
                drv=xdp.get_attr("IFLA_XDP_DRV_PROG_ID"),
                skb=xdp.get_attr("IFLA_XDP_SKB_PROG_ID"),
                hw=xdp.get_attr("IFLA_XDP_HW_PROG_ID"),
            )
        return XdpState()

    def set_xdp(self, index: int, fd: int, flags: int, expected_fd: int | None = None) -> None:
        attrs: list[tuple[str, int]] = [("IFLA_XDP_FD", fd), ("IFLA_XDP_FLAGS", flags)]
        if expected_fd is not None:
            attrs.append(("IFLA_XDP_EXPECTED_FD", expected_fd))
        with self._request():
            self._ipr.link("set", index=index, xdp={"attrs": attrs})

    def has_clsact(self, index: int) -> bool:
        with self._request():
            qdiscs = self._ipr.get_qdiscs(index)
        return any(q.get_attr("TCA_KIND") == "clsact" and q["parent"] == TC_H_CLSACT for q in qdiscs)

    def add_clsact(self, index: int) -> None:
        with self._request():
            self._ipr.tc("add", "clsact", index)

    def del_clsact(self, index: int) -> None:
        with self._request():
            self._ipr.tc("del", "clsact", index)

    def add_bpf_filter(self, index: int, parent: int, fd: int, name: str) -> None:
        with self._request():
            self._ipr.tc("add-filter", "bpf", index, fd=fd, name=name, parent=parent, classid=1, direct_action=True)

    def bpf_filters(self, index: int, parent: int) -> list[TcFilter]:
        with self._request():
            found = self._ipr.get_filters(index=index, parent=parent)
        out: list[TcFilter] = []
        for f in found:
            options = f.get_attr("TCA_OPTIONS")
            if f.get_attr("TCA_KIND") != "bpf" or options is None:
                continue  # the per-priority head entries carry no options
            out.append(TcFilter(options.get_attr("TCA_BPF_NAME") or "", f["info"] >> 16, f["handle"]))
        return out

    def del_filter(self, index: int, parent: int, filt: TcFilter) -> None:
        with self._request():
            self._ipr.tc("del-filter", "bpf", index, handle=filt.handle, parent=parent, prio=filt.prio)

    def close(self) -> None:
        self._ipr.close()


# ------------------------------------------------------------------------------ the plan


class NetHook(Slotted):
    """A program's network hook as planned: the interface (name and index) and the hook."""

    ifname: str
    ifindex: int
    target: NetHookTarget
    force: bool


# ---------------------------------------------------------------------- what was attached


class XdpAttached(Slotted):
    ifindex: int
    ifname: str
    prog_id: int
    prog_fd: int | None  # None for a stale entry of another process

    def to_json(self) -> dict[str, object]:
        return {"kind": "xdp", "ifindex": self.ifindex, "ifname": self.ifname, "prog_id": self.prog_id}


class FilterAttached(Slotted):
    ifindex: int
    ifname: str
    parent: int
    name: str

    def to_json(self) -> dict[str, object]:
        return {"kind": "filter", "ifindex": self.ifindex, "ifname": self.ifname, "parent": self.parent, "name": self.name}


class ClsactCreated(Slotted):
    ifindex: int
    ifname: str

    def to_json(self) -> dict[str, object]:
        return {"kind": "clsact", "ifindex": self.ifindex, "ifname": self.ifname}


Attached = XdpAttached | FilterAttached | ClsactCreated


def attached_from_json(entry: dict[str, object]) -> Attached | None:
    """A ledger entry; None for one this version does not understand."""
    try:
        kind, index, name = entry["kind"], int(entry["ifindex"]), str(entry["ifname"])  # type: ignore[call-overload]
        if kind == "xdp":
            return XdpAttached(index, name, int(entry["prog_id"]), None)  # type: ignore[call-overload]
        if kind == "filter":
            return FilterAttached(index, name, int(entry["parent"]), str(entry["name"]))  # type: ignore[call-overload]
        if kind == "clsact":
            return ClsactCreated(index, name)
    except (KeyError, TypeError, ValueError):
        pass
    return None


def remove(netlink: Netlink, item: Attached) -> str | None:
    """Remove ``item`` if it is still there and still ours; a line saying what was removed, or None.

    An interface that is gone took its attachments with it. A clsact qdisc that holds filters of
    somebody else is left alone.
    """
    try:
        if isinstance(item, XdpAttached):
            mode = netlink.xdp_state(item.ifindex).mode_of(item.prog_id)
            if mode is None:
                return None  # detached or replaced by somebody else meanwhile
            if item.prog_fd is None:
                netlink.set_xdp(item.ifindex, -1, mode)
            else:
                netlink.set_xdp(item.ifindex, -1, mode | XDP_FLAGS_REPLACE, expected_fd=item.prog_fd)
            return f"detached XDP program {item.prog_id} from {item.ifname}"
        if isinstance(item, FilterAttached):
            ours = [f for f in netlink.bpf_filters(item.ifindex, item.parent) if f.name == item.name]
            for filt in ours:
                netlink.del_filter(item.ifindex, item.parent, filt)
            return f"removed tc filter {item.name} from {item.ifname}" if ours else None
        if not netlink.has_clsact(item.ifindex):
            return None
        if netlink.bpf_filters(item.ifindex, TC_H_INGRESS_HOOK) or netlink.bpf_filters(item.ifindex, TC_H_EGRESS_HOOK):
            return f"left the clsact qdisc of {item.ifname}: it holds filters evspec did not add"
        netlink.del_clsact(item.ifindex)
        return f"removed the clsact qdisc of {item.ifname}"
    except NetlinkFailure as exc:
        if exc.errno in (E.ENODEV, E.ENOENT):
            return None
        raise


# --------------------------------------------------------------------------------- ledger


class Ledger:
    """What one attacher of an evspec process attached, kept in ``ROOT/net-NETNS/PID.TAG.json``
    while it is attached (the xdp and the tc attacher of a session each have their own).

    There is one folder per network namespace (interface indexes mean nothing elsewhere). It must
    be owned by this user and writable by nobody else (its entries make evspec detach programs);
    otherwise nothing is journalled and ``problem`` says why. Empty folders are removed again.
    """

    def __init__(self, root: Path, pid: int | None = None) -> None:
        self.root = root
        self.directory = root / f"net-{os.stat('/proc/self/ns/net').st_ino}"
        self.pid = os.getpid() if pid is None else pid
        self.path = self.directory / f"{self.pid}.{secrets.token_hex(4)}.json"
        self.problem: str | None = None
        self._entries: list[Attached] = []
        self._start = process_start(self.pid)

    def _usable(self) -> bool:
        for folder in (self.root, self.directory):
            try:
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                st = folder.lstat()
            except OSError as exc:
                self.problem = f"cannot create {folder}: {exc.strerror}"
                return False
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
                self.problem = f"{folder} is not a private directory of this user"
                return False
        return True

    def add(self, item: Attached) -> None:
        self._entries.append(item)
        self._write()

    def discard(self, item: Attached) -> None:
        if item in self._entries:
            self._entries.remove(item)
            self._write()

    def _write(self) -> None:
        if not self._entries:
            self.forget(self.path)
            return
        if self.problem is not None or not self._usable():
            return
        record = {"pid": self.pid, "start": self._start, "entries": [e.to_json() for e in self._entries]}
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            json.dump(record, f)
        os.replace(tmp, self.path)

    def forget(self, path: Path) -> None:
        """Remove a ledger file, and the folders when they are empty (another evspec may use them)."""
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        for folder in (self.directory, self.root):
            try:
                folder.rmdir()
            except OSError:
                break

    def stale(self) -> Iterator[tuple[int, Path, list[Attached]]]:
        """(pid, ledger, entries) of every evspec process that is gone but left entries here."""
        if not self.directory.is_dir() or not self._usable():
            return
        for path in sorted(self.directory.glob("*.json")):
            try:
                record = json.loads(path.read_text())
                pid, start = int(record["pid"]), record.get("start")
                entries = [e for e in map(attached_from_json, record["entries"]) if e is not None]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            running = process_start(pid)
            if running is None or running != start:  # gone, or the pid is another process's now
                yield pid, path, entries


# ------------------------------------------------------------------------------ attacher


def _error(code: str, message: str, *help_lines: str) -> ObjectError:
    return ObjectError(code, message, help=tuple(help_lines))


class NetAttacher:
    """The KindAttacher of xdp and tc programs (one per recording session).

    ``netlink`` and ``state_root`` (the ledgers' folder) are for tests; by default pyroute2 and
    /run/evspec.
    """

    def __init__(
        self,
        kernel: Kernel,
        options: AttachOptions,
        *,
        netlink: Netlink | None = None,
        state_root: Path = STATE_ROOT,
    ) -> None:
        self.kernel = kernel
        self.options = options
        self.notes: list[str] = []
        self.warnings: list[str] = []
        self._netlink = netlink
        self._state_root = state_root
        self._ledger: Ledger | None = None
        self._interfaces: dict[str, int] | None = None
        self._xdp_planned: dict[int, str] = {}  # ifindex -> program
        self._attached: list[Attached] = []

    @property
    def netlink(self) -> Netlink:
        if self._netlink is None:
            self._netlink = PyrouteNetlink()
        return self._netlink

    def _ask(self, request: Callable[[], T], what: str) -> T:
        try:
            return request()
        except NetlinkFailure as exc:
            raise KernelError(
                codes.NET_ATTACH_FAILED, f"{what} failed: {exc.message}", errno=exc.errno, operation="rtnetlink"
            ) from None

    # ------------------------------------------------------------------ plan

    def _start(self) -> Ledger:
        """The ledger; the first call sweeps what dead evspec processes left in this namespace."""
        if self._ledger is None:
            self._ledger = Ledger(self._state_root)
            self._sweep(self._ledger)
        return self._ledger

    def _sweep(self, ledger: Ledger) -> None:
        for pid, path, entries in ledger.stale():
            interfaces = self._ask(self.netlink.interfaces, "listing the network interfaces")
            kept: list[str] = []
            for item in reversed(entries):
                if interfaces.get(item.ifname) != item.ifindex:
                    continue  # the interface is gone (and its hooks with it), or is another one now
                try:
                    done = remove(self.netlink, item)
                except NetlinkFailure as exc:
                    kept.append(f"{_describe(item)}: {exc.message}")
                    continue
                if done is not None:
                    self.notes.append(f"{done} (left by evspec process {pid}, which is gone)")
            if kept:
                self.warnings.append(f"could not remove what evspec process {pid} left: {'; '.join(kept)}")
            else:
                ledger.forget(path)
        self._note_ledger_problem(ledger)

    def _note_ledger_problem(self, ledger: Ledger) -> None:
        note = f"network hooks are not journalled: {ledger.problem}"
        if ledger.problem is not None and note not in self.notes:
            self.notes.append(note)

    def plan(self, spec: ObjectSpec, prog: ProgramSpec, section: SectionSpec) -> ProgramAttach:
        target = section.target
        assert isinstance(target, NetHookTarget) and section.attach in (AttachKind.XDP, AttachKind.TC)
        self._start()
        ifname, ifindex = self._interface(spec, prog, target)
        if section.attach is AttachKind.XDP:
            self._check_xdp_free(spec, prog, ifname, ifindex, section.force)
        hook = NetHook(ifname, ifindex, target, section.force)
        return ProgramAttach(prog.name, int(section.program_type), kind=section.attach, detail=hook)

    def _interface(self, spec: ObjectSpec, prog: ProgramSpec, target: NetHookTarget) -> tuple[str, int]:
        name = target.dev if target.dev is not None else self.options.dev
        what = f"{spec.path}: program '{prog.name}' (section '{prog.section}')"
        if name is None:
            raise _error(
                codes.NET_NO_DEVICE,
                f"{what}: no network interface to attach the {target.hook} program to",
                "give one with --dev IFACE",
                f"or name it in the section: SEC(\"dev=IFACE;{prog.section}\")",
            )
        if self._interfaces is None:
            self._interfaces = self._ask(self.netlink.interfaces, "listing the network interfaces")
        index = self._interfaces.get(name)
        if index is None:
            names = sorted(self._interfaces)
            listed = ", ".join(names[:_LISTED_INTERFACES]) + (", ..." if len(names) > _LISTED_INTERFACES else "")
            raise _error(
                codes.NET_UNKNOWN_DEVICE,
                f"{what}: network interface '{name}' ({'dev=' if target.dev else '--dev'}) does not exist",
                f"the interfaces are: {listed}",
            )
        return name, index

    def _check_xdp_free(self, spec: ObjectSpec, prog: ProgramSpec, ifname: str, ifindex: int, force: bool) -> None:
        other = self._xdp_planned.get(ifindex)
        if other is not None:
            raise _error(
                codes.NET_HOOK_TWICE,
                f"{spec.path}: programs '{other}' and '{prog.name}' both attach to the XDP hook of {ifname}",
                "an interface runs one XDP program: attach them to different interfaces",
            )
        self._xdp_planned[ifindex] = prog.name
        state = self._ask(lambda: self.netlink.xdp_state(ifindex), f"reading the XDP state of {ifname}")
        if state.programs and not force:
            running = ", ".join(f"program {prog_id} ({mode} mode)" for mode, prog_id in state.programs)
            raise _error(
                codes.NET_XDP_BUSY,
                f"{spec.path}: program '{prog.name}': {ifname} already runs XDP {running}, attached by "
                "somebody else; evspec does not replace it",
                f"detach it first (ip link set dev {ifname} xdp off)",
                f"or replace it for good: SEC(\"force=yes;{prog.section}\")",
            )

    def program_fd(self, live: LiveObject, attach: ProgramAttach, event: ProbeEvent) -> int | None:
        return None  # network programs go on no perf event

    # ---------------------------------------------------------------- attach

    def attach_hooks(self, live: LiveObject, attach: ProgramAttach) -> None:
        hook = attach.detail
        assert isinstance(hook, NetHook)
        fd = live.program(attach.program).fd
        if attach.kind is AttachKind.XDP:
            self._attach_xdp(attach.program, hook, fd)
        else:
            self._attach_tc(attach.program, hook, fd)

    def _journal(self, item: Attached, request: Callable[[], None], fail: Callable[[NetlinkFailure], ObjectError | None]) -> bool:
        """Write ``item`` to the ledger, make the request, keep ``item`` if it worked. ``fail``
        turns a failure into the error to raise (None: nothing was added, carry on)."""
        ledger = self._start()
        ledger.add(item)
        self._note_ledger_problem(ledger)
        try:
            request()
        except NetlinkFailure as exc:
            ledger.discard(item)
            error = fail(exc)
            if error is None:
                return False
            raise error from None
        self._attached.append(item)
        return True

    def _attach_xdp(self, program: str, hook: NetHook, fd: int) -> None:
        prog_id = self.kernel.program_info(fd).id
        mode = hook.target.xdp_mode
        flags = (_MODE_FLAG[mode] if mode is not None else 0) | (0 if hook.force else XDP_FLAGS_UPDATE_IF_NOEXIST)
        head = f"program '{program}': attaching XDP to {hook.ifname}" + (f" in mode={mode.value}" if mode else "")

        def fail(exc: NetlinkFailure) -> ObjectError:
            if exc.errno == E.EBUSY:
                return _error(codes.NET_XDP_BUSY, f"{head}: {exc.message}",
                              f"detach it first (ip link set dev {hook.ifname} xdp off)")
            if exc.errno in (E.EEXIST, E.EOPNOTSUPP):
                return _error(codes.NET_XDP_MODE, f"{head}: {exc.message}",
                              "mode=skb (generic XDP) works on every interface")
            return KernelError(codes.NET_ATTACH_FAILED, f"{head}: {exc.message}", errno=exc.errno,
                               operation="RTM_SETLINK IFLA_XDP")

        item = XdpAttached(hook.ifindex, hook.ifname, prog_id, fd)
        self._journal(item, lambda: self.netlink.set_xdp(hook.ifindex, fd, flags), fail)
        state = self._ask(lambda: self.netlink.xdp_state(hook.ifindex), f"reading the XDP state of {hook.ifname}")
        running = state.mode_of(prog_id)
        self.notes.append(
            f"xdp: program '{program}' (id {prog_id}) attached to {hook.ifname} (ifindex {hook.ifindex})"
            + (f" in {_MODE_NAME[running]} mode" if running is not None else "")
        )

    def _attach_tc(self, program: str, hook: NetHook, fd: int) -> None:
        direction = hook.target.direction or TcDirection.INGRESS
        created = ""
        if not self._ask(lambda: self.netlink.has_clsact(hook.ifindex), f"listing the qdiscs of {hook.ifname}"):

            def qdisc_failed(exc: NetlinkFailure) -> ObjectError | None:
                if exc.errno == E.EEXIST:
                    return None  # somebody else created it just now: it is not ours
                return KernelError(
                    codes.NET_ATTACH_FAILED,
                    f"program '{program}': creating the clsact qdisc of {hook.ifname}: {exc.message}",
                    errno=exc.errno,
                    operation="RTM_NEWQDISC clsact",
                    help=("the kernel needs CONFIG_NET_SCH_INGRESS (clsact)",),
                )

            qdisc = ClsactCreated(hook.ifindex, hook.ifname)
            if self._journal(qdisc, lambda: self.netlink.add_clsact(hook.ifindex), qdisc_failed):
                created = ", clsact qdisc created"
        name = f"{FILTER_PREFIX}{self._start().pid}:{program}"
        parent = TC_HOOK_PARENT[direction]

        def filter_failed(exc: NetlinkFailure) -> ObjectError:
            return KernelError(
                codes.NET_ATTACH_FAILED,
                f"program '{program}': adding a bpf filter on {hook.ifname} {direction.value}: {exc.message}",
                errno=exc.errno,
                operation="RTM_NEWTFILTER bpf",
                help=("the kernel needs CONFIG_NET_CLS_BPF (the bpf classifier)",),
            )

        item = FilterAttached(hook.ifindex, hook.ifname, parent, name)
        self._journal(item, lambda: self.netlink.add_bpf_filter(hook.ifindex, parent, fd, name), filter_failed)
        self.notes.append(f"tc: program '{program}' attached to {hook.ifname} {direction.value} as bpf filter '{name}'{created}")

    # --------------------------------------------------------------- teardown

    def close(self) -> None:
        """Remove everything attached, newest first; the first failure is raised after trying all."""
        first: KernelError | None = None
        failed_on: set[int] = set()  # interfaces where something could not be removed
        try:
            while self._attached:
                item = self._attached.pop()
                if isinstance(item, ClsactCreated) and item.ifindex in failed_on:
                    continue  # it still holds our filter: both stay journalled for the next run
                try:
                    done = remove(self.netlink, item)
                except NetlinkFailure as exc:
                    failed_on.add(item.ifindex)
                    first = first or KernelError(
                        codes.NET_DETACH_FAILED,
                        f"{_describe(item)} could not be removed: {exc.message}",
                        errno=exc.errno,
                        operation="rtnetlink",
                        help=("evspec removes it at its next start, or remove it by hand (evspec explain EK146)",),
                    )
                    continue
                if done is not None:
                    self.notes.append(done)
                if self._ledger is not None:
                    self._ledger.discard(item)
        finally:
            if self._netlink is not None:
                self._netlink.close()
                self._netlink = None
        if first is not None:
            raise first


def _describe(item: Attached) -> str:
    if isinstance(item, XdpAttached):
        return f"XDP program {item.prog_id} on {item.ifname}"
    if isinstance(item, FilterAttached):
        return f"tc filter '{item.name}' on {item.ifname}"
    return f"the clsact qdisc of {item.ifname}"
