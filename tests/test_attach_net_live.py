"""xdp and tc programs on a veth pair made by the test (root): records per datagram, nothing left.

Layout: a network namespace holds one end of a veth pair (PEER, 10.237.N.2); the other end (HOST,
10.237.N.1) stays in the root namespace, where evspec records. Datagrams to the test port sent from
inside the namespace arrive on HOST (XDP, tc ingress); datagrams sent to PEER leave through HOST
(tc egress). Recording is system-wide (-a): XDP and tc programs run in softirq context, which is
usually, but not always, the sending task's (the per-task bpf-output event then misses records).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from evspec.loader.attach.net import STATE_ROOT
from evspec.loader.errors import ObjectError
from evspec.loader.output.script import SampleLine

from evspec.compiler.recording import recording_plan

DATA = Path(__file__).parent / "data" / "net"
PORT = 31337
HEADERS = 14 + 20 + 8  # Ethernet, IPv4, UDP
SEND_FROM_NAMESPACE = """
import socket, sys
from pyroute2 import netns
netns.setns(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for marker in sys.argv[4:]:
    s.sendto(marker.encode(), (sys.argv[2], int(sys.argv[3])))
"""


@dataclass(frozen=True)
class Veth:
    netns: str
    host: str
    peer: str
    host_index: int
    host_ip: str
    peer_ip: str


def _hooks(index: int) -> tuple[object, list[str], list[str]]:
    """What is attached to an interface: its XDP mode, its qdisc kinds, its bpf filter names."""
    from pyroute2 import IPRoute

    with IPRoute() as ipr:
        (link,) = ipr.get_links(index)
        xdp = link.get_attr("IFLA_XDP")
        mode = xdp.get_attr("IFLA_XDP_ATTACHED") if xdp is not None else None
        qdiscs = [q.get_attr("TCA_KIND") for q in ipr.get_qdiscs(index)]
        names = [
            f.get_attr("TCA_OPTIONS").get_attr("TCA_BPF_NAME")
            for parent in (0xFFFFFFF2, 0xFFFFFFF3)
            for f in (ipr.get_filters(index=index, parent=parent) if "clsact" in qdiscs else [])
            if f.get_attr("TCA_OPTIONS") is not None
        ]
    return mode, qdiscs, names


def _assert_nothing_attached(veth: Veth) -> None:
    mode, qdiscs, filters = _hooks(veth.host_index)
    assert (mode, "clsact" in qdiscs, filters) == (None, False, [])
    assert not list(STATE_ROOT.glob(f"net-*/{os.getpid()}.*.json"))


@pytest.fixture
def veth(root_kernel: None) -> Iterator[Veth]:
    from pyroute2 import IPRoute, NetNS, netns

    pid = os.getpid()
    name, host, peer = f"evspec-test-{pid}", f"evn{pid}a", f"evn{pid}b"
    subnet = f"10.237.{pid % 250}"
    netns.create(name)
    try:
        with IPRoute() as ipr:
            ipr.link("add", ifname=host, kind="veth", peer={"ifname": peer, "net_ns_fd": name})
            index = ipr.link_lookup(ifname=host)[0]
            ipr.addr("add", index=index, address=f"{subnet}.1", prefixlen=24)
            ipr.link("set", index=index, state="up")
        with NetNS(name) as ns:
            peer_index = ns.link_lookup(ifname=peer)[0]
            ns.addr("add", index=peer_index, address=f"{subnet}.2", prefixlen=24)
            ns.link("set", index=peer_index, state="up")
        yield Veth(name, host, peer, index, f"{subnet}.1", f"{subnet}.2")
    finally:
        with IPRoute() as ipr:
            for index in ipr.link_lookup(ifname=host):
                ipr.link("del", index=index)  # the pair goes at once (the namespace goes lazily)
            assert ipr.link_lookup(ifname=host) == []
        netns.remove(name)
        assert name not in netns.listnetns()


@pytest.fixture
def sources(tmp_path: Path, veth: Veth) -> Path:
    if shutil.which("clang") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("clang is required in CI (scripts/test.sh installs it)")
        pytest.skip("clang not installed")
    for src in DATA.iterdir():
        shutil.copy(src, tmp_path)
    return tmp_path


def send_in(veth: Veth, *markers: str) -> None:
    """UDP datagrams from inside the namespace to HOST (they arrive on HOST)."""
    subprocess.run([sys.executable, "-c", SEND_FROM_NAMESPACE, veth.netns, veth.host_ip, str(PORT), *markers], check=True)


def send_out(veth: Veth, *markers: str) -> None:
    """UDP datagrams from the root namespace to PEER (they leave through HOST)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for marker in markers:
            s.sendto(marker.encode(), (veth.peer_ip, PORT))


def decode(sample: SampleLine) -> tuple[str, int, str]:
    """(hook, frame length, marker) of one net_record (tests/data/net/net_record.h)."""
    assert sample.event == "__bpf_stdout__" and sample.raw is not None
    hook, length, marker = struct.unpack_from("=4sI8s", sample.raw)
    return hook.rstrip(b"\0").decode(), length, marker.decode()


def record(source: Path, *, dev: str | None, traffic: object, expect: int) -> tuple[list[tuple[str, int, str]], list[str]]:
    """A system-wide recording session with ``source``; ``traffic()`` runs once everything is
    attached; returns the decoded records (once ``expect`` arrived) and the session's notes."""
    from evspec.loader.session import RecordOptions, RecordSession

    from evspec.parser import parse
    from evspec.system import load_system

    samples: list[SampleLine] = []
    session = RecordSession(options=RecordOptions(system_wide=True, dev=dev))
    try:
        lists, system = [parse(str(source))], load_system("live")
        session.prepare(lists, recording_plan(lists, system), system, source.parent, None)
        session.start()
        traffic()  # type: ignore[operator]
        for _ in range(100):
            session.drain(lambda r: samples.append(r) if isinstance(r, SampleLine) else None)
            if len(samples) >= expect:
                break
            time.sleep(0.05)
    finally:
        session.close()
    return sorted(decode(s) for s in samples), session.notes


def test_xdp_program_records_each_datagram(sources: Path, veth: Veth) -> None:
    got, notes = record(
        sources / "xdp_count.c", dev=veth.host, traffic=lambda: send_in(veth, "marker-1", "marker-2"), expect=2
    )
    assert got == [("xdp", HEADERS + 8, "marker-1"), ("xdp", HEADERS + 8, "marker-2")]
    assert any(n.startswith("xdp: program 'xdp_count' (id ") and f"attached to {veth.host}" in n for n in notes)
    _assert_nothing_attached(veth)


def test_xdp_interface_and_mode_from_the_section(sources: Path, veth: Veth) -> None:
    wrapper = sources / "xdp_on_dev.c"
    wrapper.write_text(f'#define XDP_SECTION "dev={veth.host};mode=skb;xdp"\n#include "xdp_count.c"\n')
    got, notes = record(wrapper, dev=None, traffic=lambda: send_in(veth, "generic!"), expect=1)
    assert got == [("xdp", HEADERS + 8, "generic!")]
    assert any(n.endswith(f"attached to {veth.host} (ifindex {veth.host_index}) in generic mode") for n in notes)
    _assert_nothing_attached(veth)


def test_tc_ingress_and_egress(sources: Path, veth: Veth) -> None:
    def traffic() -> None:
        send_in(veth, "inward-1", "inward-2")
        send_out(veth, "outward1")

    got, notes = record(sources / "tc_count.c", dev=veth.host, traffic=traffic, expect=3)
    assert got == [("tce", HEADERS + 8, "outward1"), ("tci", HEADERS + 8, "inward-1"), ("tci", HEADERS + 8, "inward-2")]
    pid = os.getpid()
    assert f"tc: program 'tc_in' attached to {veth.host} ingress as bpf filter 'evspec:{pid}:tc_in', clsact qdisc created" in notes
    assert f"tc: program 'tc_out' attached to {veth.host} egress as bpf filter 'evspec:{pid}:tc_out'" in notes
    _assert_nothing_attached(veth)


def test_a_clsact_qdisc_that_was_there_stays(sources: Path, veth: Veth) -> None:
    from pyroute2 import IPRoute

    with IPRoute() as ipr:
        ipr.tc("add", "clsact", veth.host_index)
    got, _ = record(sources / "tc_count.c", dev=veth.host, traffic=lambda: send_in(veth, "existing"), expect=1)
    assert got == [("tci", HEADERS + 8, "existing")]
    mode, qdiscs, filters = _hooks(veth.host_index)
    assert "clsact" in qdiscs and filters == []


def _foreign_xdp(source: Path, index: int) -> object:
    """Attach xdp_count as somebody else would; returns the loaded object (keep it open)."""
    from evspec.loader.load.live import load_object
    from evspec.loader.object.clang import compile_source
    from evspec.loader.object.reader import read_object
    from pyroute2 import IPRoute

    live = load_object(read_object(compile_source(source)), {"xdp_count": 6})
    with IPRoute() as ipr:
        ipr.link("set", index=index, xdp={"attrs": [("IFLA_XDP_FD", live.program("xdp_count").fd), ("IFLA_XDP_FLAGS", 2)]})
    return live


def test_somebody_elses_xdp_program_is_refused_then_forced_away(sources: Path, veth: Veth) -> None:
    foreign = _foreign_xdp(sources / "xdp_count.c", veth.host_index)
    try:
        with pytest.raises(ObjectError) as info:
            record(sources / "xdp_count.c", dev=veth.host, traffic=lambda: None, expect=0)
        assert info.value.code == "EK142"
        assert f"{veth.host} already runs XDP program" in info.value.message and "(generic mode)" in info.value.message
        assert _hooks(veth.host_index)[0] == "xdpgeneric"  # untouched

        wrapper = sources / "xdp_forced.c"
        wrapper.write_text('#define XDP_SECTION "force=yes;mode=skb;xdp"\n#include "xdp_count.c"\n')
        got, _ = record(wrapper, dev=veth.host, traffic=lambda: send_in(veth, "forced!!"), expect=1)
        assert got == [("xdp", HEADERS + 8, "forced!!")]
        _assert_nothing_attached(veth)  # replaced for good, as the section asked
    finally:
        foreign.close()  # type: ignore[attr-defined]


KILLED_RUN = """
import sys, time
from evspec.loader.attach.attacher import Attacher, program_types
from evspec.loader.attach.attachment import AttachOptions
from evspec.loader.object.clang import compile_source
from evspec.loader.kernel import Kernel
from evspec.loader.load.live import load_object
from evspec.loader.object.reader import read_object
kernel = Kernel()
attacher = Attacher(kernel, AttachOptions(lambda s, e: None, dev=sys.argv[2]))
for source in sys.argv[3:]:
    spec = read_object(compile_source(sys.argv[1] + "/" + source))
    plans = attacher.plan(spec)
    live = load_object(spec, program_types(plans), kernel=kernel)
    attacher.attach_hooks(live, plans)
print("attached", flush=True)
time.sleep(60)
"""


def test_what_a_killed_run_left_is_removed_by_the_next_run(sources: Path, veth: Veth) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN, str(sources), veth.host, "xdp_count.c", "tc_count.c"],
        stdout=subprocess.PIPE, text=True, cwd=sources,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "attached\n"
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
    mode, qdiscs, filters = _hooks(veth.host_index)
    assert mode == "xdp" and "clsact" in qdiscs
    assert sorted(filters) == [f"evspec:{proc.pid}:tc_in", f"evspec:{proc.pid}:tc_out"]
    left = list(STATE_ROOT.glob(f"net-*/{proc.pid}.*.json"))
    assert len(left) == 2  # the xdp and the tc attacher each journal their own
    kinds = sorted(e["kind"] for path in left for e in json.loads(path.read_text())["entries"])
    assert kinds == ["clsact", "filter", "filter", "xdp"]

    got, notes = record(sources / "tc_count.c", dev=veth.host, traffic=lambda: send_in(veth, "next-run"), expect=1)
    assert got == [("tci", HEADERS + 8, "next-run")]
    gone = f"(left by evspec process {proc.pid}, which is gone)"
    swept = sorted(n.removesuffix(" " + gone) for n in notes if n.endswith(gone))
    assert swept[0].startswith("detached XDP program ") and swept[0].endswith(f" from {veth.host}")
    assert swept[1:] == [
        f"removed tc filter evspec:{proc.pid}:tc_in from {veth.host}",
        f"removed tc filter evspec:{proc.pid}:tc_out from {veth.host}",
        f"removed the clsact qdisc of {veth.host}",
    ]
    assert not any(path.exists() for path in left)
    _assert_nothing_attached(veth)


def test_unknown_interface_is_named(sources: Path, veth: Veth) -> None:
    with pytest.raises(ObjectError) as info:
        record(sources / "xdp_count.c", dev="nosuch0", traffic=lambda: None, expect=0)
    assert info.value.code == "EK141" and "'nosuch0' (--dev) does not exist" in info.value.message
    assert veth.host in info.value.help[0]


# ---------------------------------------------------------------------------------------------
# through `evspec record`



def _record_cli(*argv: str) -> tuple[int, str, str]:
    from evspec.cli.record import add_record_parser, record_main

    parser = argparse.ArgumentParser()
    add_record_parser(parser.add_subparsers(dest="cmd"))
    out, err = io.StringIO(), io.StringIO()
    status = record_main(parser.parse_args(["record", *argv]), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_evspec_record_xdp_and_tc(sources: Path, veth: Veth, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(sources)
    before = set(os.listdir("/proc/self/fd"))
    sender = [sys.executable, "-c", SEND_FROM_NAMESPACE + "import time; time.sleep(0.3)\n",
              veth.netns, veth.host_ip, str(PORT), "via-cli!"]
    status, out, err = _record_cli("-a", "--dev", veth.host, "--format", "json", "-e", "./xdp_count.c,./tc_count.c",
                                   "--", *sender)
    assert status == 0, err
    assert set(os.listdir("/proc/self/fd")) == before
    samples = [r for r in map(json.loads, out.splitlines()) if "raw_hex" in r]  # not the summary line
    hooks = sorted(bytes.fromhex(r["raw_hex"])[:3].decode() for r in samples)
    assert hooks == ["tci", "xdp"]
    _assert_nothing_attached(veth)


def test_sigterm_to_evspec_record_detaches(sources: Path, veth: Veth) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "evspec", "record", "-a", "--dev", veth.host, "-e", "./xdp_count.c,./tc_count.c",
         "--", "sleep", "30"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=sources,
    )
    try:
        for _ in range(200):
            mode, qdiscs, filters = _hooks(veth.host_index)
            if mode is not None and filters:
                break
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        send_in(veth, "sigterm!")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "evspec record: 2 samples" in err
    mode, qdiscs, filters = _hooks(veth.host_index)
    assert (mode, "clsact" in qdiscs, filters) == (None, False, [])
    assert not list(STATE_ROOT.glob(f"net-*/{proc.pid}.*.json"))
