"""Argument prologues on the real kernel (root): uprobes opened through the uprobe PMU on a target
built from tests/data/prologue/target.c, programs from tests/data/prologue/fetch.c that store
what they were passed in a hash map (key: the first argument)."""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from evspec.loader.abi.perf import PerfEventAttr
from evspec.loader.attach.prologue import PrologueCache, build_prologue
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.load.live import LiveObject, load_object
from evspec.loader.object.clang import compile_source
from evspec.loader.object.elf_symbols import read_elf_symbols, uprobe_sites
from evspec.loader.object.reader import read_object
from evspec.loader.object.spec import ProgType
from evspec.loader.sections.names import ProbeArg, ProbeTarget, parse_section
from evspec.loader.sections.probe_args import body_address

from evspec.span import Span

DATA = Path(__file__).parent / "data" / "prologue"
UPROBE_PMU = Path("/sys/bus/event_source/devices/uprobe/type")
MASK = (1 << 64) - 1


@dataclass(frozen=True)
class Setup:
    kernel: Kernel
    live: LiveObject
    targets: dict[str, Path]


@pytest.fixture(scope="module")
def setup(root_kernel: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    if shutil.which("clang") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("clang is required in CI (scripts/test.sh installs it)")
        pytest.skip("clang not installed")
    if not UPROBE_PMU.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"the CI kernel has a uprobe PMU, but {UPROBE_PMU} is missing")
        pytest.skip("the kernel has no uprobe PMU")
    d = tmp_path_factory.mktemp("prologue-live")
    targets = {}
    for opt in ("-O2", "-O0"):
        targets[opt] = d / f"target{opt}"
        subprocess.run(["cc", opt, "-g", "-o", str(targets[opt]), str(DATA / "target.c")], check=True)
    spec = read_object(compile_source(DATA / "fetch.c", cache_dir=d / "cache"))
    kernel = Kernel()
    live = load_object(spec, {}, kernel=kernel, deferred=[p.name for p in spec.programs])
    yield Setup(kernel, live, targets)
    live.close()


def _args(live: LiveObject, program: str) -> tuple[ProbeArg, ...]:
    """The fetch arguments of a (deferred) program's section."""
    target = parse_section(next(p.section for p in live.spec.programs if p.name == program)).target
    assert isinstance(target, ProbeTarget)
    return target.args


def arg(fetch: str) -> ProbeArg:
    return ProbeArg(None, fetch, None, Span(0, len(fetch)))


def _symbol_and_offset(binary: Path, name: str) -> tuple[int, int]:
    """The symbol's virtual address and the file offset the uprobe PMU wants."""
    (site,) = uprobe_sites(read_elf_symbols(binary), name)
    return site.address, site.file_offset


def _file_offset(binary: Path, vaddr: int) -> int:
    return read_elf_symbols(binary).file_offset(vaddr)


class Uprobes:
    """uprobe PMU events carrying a program; closes them all.

    One event per probe point: every uprobe PMU event is its own trace_uprobe, and its program runs
    for every hit of every task on every CPU before perf's CPU filter applies, so an event per CPU
    would run the program once per CPU for each hit.
    """

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.fds: list[int] = []
        self._paths: list[ctypes.Array[ctypes.c_char]] = []

    def add(self, binary: Path, offset: int, prog_fd: int) -> None:
        path = ctypes.create_string_buffer(os.fsencode(binary))
        self._paths.append(path)
        attr = PerfEventAttr(type=int(UPROBE_PMU.read_text()), config=0)
        attr.config1 = ctypes.addressof(path)
        attr.config2 = offset
        fd = self.kernel.perf_event_open(attr, pid=-1, cpu=min(os.sched_getaffinity(0)))
        self.fds.append(fd)
        self.kernel.set_bpf(fd, prog_fd)

    def close(self) -> None:
        for fd in self.fds:
            self.kernel.close(fd)
        self.fds.clear()


def _hits(setup: Setup, key: int) -> tuple[int, tuple[int, int, int], int] | None:
    m = setup.live.map("seen")
    raw = setup.kernel.lookup(m.fd, struct.pack("<Q", key & MASK), m.spec.value_size)
    if raw is None:
        return None
    err, a, b, c, count = struct.unpack("<5Q", raw)
    return err, (a, b, c), count


def _prog_ids_held() -> set[int]:
    """The ids of the BPF programs this process holds a descriptor of (from /proc/self/fdinfo)."""
    ids = set()
    for entry in Path("/proc/self/fdinfo").iterdir():
        try:
            text = entry.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("prog_id:"):
                ids.add(int(line.split()[1]))
    return ids


def _run(binary: Path, n: int) -> None:
    out = subprocess.run([str(binary), str(n)], check=True, capture_output=True, text=True).stdout
    assert out.split()[1] == "1234567"


def test_the_verifier_needs_the_prologue(setup: Setup) -> None:
    cache = PrologueCache(setup.kernel)
    with pytest.raises(KernelError) as info:
        cache.program_fd(setup.live, "h6b_fetch3", int(ProgType.KPROBE), b"")
    assert info.value.code == "EK139"
    assert "reads R3 (argument 1), but its probe definition fetches 0 argument(s)" in info.value.message
    prologue = build_prologue([arg("%di")], binary=None, function=None, address=None, user=True)
    with pytest.raises(KernelError) as info:  # one fetched value, the program reads three
        cache.program_fd(setup.live, "h6b_fetch3", int(ProgType.KPROBE), prologue)
    assert info.value.code == "EK139" and "fetches 1 argument(s)" in info.value.message
    assert cache.stats() == (0, 0)


def test_a_glob_over_identical_signatures_shares_one_program(setup: Setup) -> None:
    binary = setup.targets["-O2"]
    args = _args(setup.live, "h6b_fetch3")  # add3* a b c
    assert [a.fetch for a in args] == ["a", "b", "c"]
    cache = PrologueCache(setup.kernel)
    probes = Uprobes(setup.kernel)
    held_before = _prog_ids_held()
    listed_before = set(setup.kernel.program_ids())
    try:
        fds = []
        for function in ("add3", "add3_twin"):  # what the glob add3* matches
            vaddr, offset = _symbol_and_offset(binary, function)
            prologue = build_prologue(args, binary=str(binary), function=function, address=vaddr, user=True)
            fd = cache.program_fd(setup.live, "h6b_fetch3", int(ProgType.KPROBE), prologue)
            probes.add(binary, offset, fd)
            fds.append(fd)
        assert fds[0] == fds[1]
        assert cache.stats() == (1, 2)
        new_ids = _prog_ids_held() - held_before
        assert len(new_ids) == 1  # one program in the kernel serves both probe points
        assert new_ids <= set(setup.kernel.program_ids()) - listed_before
        info = setup.kernel.program_info(fds[0])
        assert info.id in new_ids
        # loaded with the object's BTF: func/line info shifted past the prologue, as the kernel
        # accepts only when each record points at the right instruction
        assert info.nr_func_info > 0 and info.nr_line_info > 0

        _run(binary, 5)  # add3(5, 6, 7), add3_twin(50, 51, 52)
        _run(binary, 9)
        assert _hits(setup, 5) == (0, (5, 6, 7), 1)
        assert _hits(setup, 50) == (0, (50, 51, 52), 1)
        assert _hits(setup, 90) == (0, (90, 91, 92), 1)
    finally:
        probes.close()
        cache.close()
    assert _prog_ids_held() == held_before


def test_members_symbols_narrow_types_and_failed_reads(setup: Setup) -> None:
    binary = setup.targets["-O2"]
    cache = PrologueCache(setup.kernel)
    probes = Uprobes(setup.kernel)
    plan = [  # (function, program, fetches)
        ("scaled", "h6b_fetch3", ("p->x", "@counter", "p->tag[2]")),
        ("narrow", "h6b_fetch3", ("c", "u", "neg")),
        ("ignores", "h6b_fetch1", ("+0(%si)",)),  # %si holds n: not an address
    ]
    try:
        for function, program, fetches in plan:
            vaddr, offset = _symbol_and_offset(binary, function)
            prologue = build_prologue([arg(f) for f in fetches], binary=str(binary), function=function,
                                      address=vaddr, user=True)
            probes.add(binary, offset, cache.program_fd(setup.live, program, int(ProgType.KPROBE), prologue))
        assert cache.stats() == (3, 3)
        _run(binary, 3)
        assert _hits(setup, 43) == (0, (43, 1234567, 77), 1)  # pt.x = 40 + n; PIE: @counter ip-relative
        assert _hits(setup, -7) == (0, ((-7) & MASK, 65000, (-3) & MASK), 1)  # s8, u16, s32
        assert _hits(setup, 0) == (1, (0, 0, 0), 1)  # the read failed: error flag, values zeroed
    finally:
        probes.close()
        cache.close()


def test_unoptimised_target_after_its_prologue(setup: Setup) -> None:
    binary = setup.targets["-O0"]
    cache = PrologueCache(setup.kernel)
    probes = Uprobes(setup.kernel)
    try:
        for function in ("add3", "scaled"):
            body = body_address(str(binary), function)
            assert body is not None
            fetches = ("a", "b", "c") if function == "add3" else ("p->x", "scale", "p->z")
            prologue = build_prologue([arg(f) for f in fetches], binary=str(binary), function=function,
                                      address=body, user=True)
            fd = cache.program_fd(setup.live, "h6b_fetch3", int(ProgType.KPROBE), prologue)
            probes.add(binary, _file_offset(binary, body), fd)
        _run(binary, 1000)
        assert _hits(setup, 1000) == (0, (1000, 1001, 1002), 1)
        assert _hits(setup, 1040) == (0, (1040, 2, 9), 1)
    finally:
        probes.close()
        cache.close()
