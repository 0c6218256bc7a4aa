"""Objects load WITH their BTF on the running kernel (root): every corpus fixture and seed example,
checked through the kernel's own map and program info; the completed DATASECs against readelf and
bpftool; the rewrites for older kernels accepted by this one; func/line info in the verifier log
and in bpftool's dump; a program with a bpf-to-bpf call and a bpf_loop callback run for real."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import shutil
import struct
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from evspec.loader.abi.perf import PerfEventAttr
from evspec.loader.abi.perf_ids import PerfType
from evspec.loader.btf.fixup import BtfFeatures, fixup_btf
from evspec.loader.btf.reader import Btf, BtfKind, RawType, type_info, write_btf
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError, VerifierError
from evspec.loader.load.live import LiveObject, load_object
from evspec.loader.object.clang import compile_source
from evspec.loader.object.reader import read_object
from evspec.loader.object.spec import ObjectSpec, ProgType
from evspec.loader.sections.names import parse_section

from evspec.diagnostics import EvspecError

HERE = Path(__file__).parent
DATA = HERE / "data" / "btf"
SEEDS = [*sorted((HERE / "data" / "bpf").glob("*.c")), *sorted((HERE / "data" / "objects").glob("*.c")),
         HERE.parent / "examples" / "hello.c"]
TRACEFS = Path("/sys/kernel/tracing")
NOT_BPF = {"notelf.o", "empty.o", "x86.o"}
OLDEST = BtfFeatures(func=False, datasec=False, global_func=False, float=False, decl_tag=False,
                     type_tag=False, enum64=False)


def prog_types(spec: ObjectSpec) -> dict[str, int]:
    out = {}
    for prog in spec.programs:
        try:
            out[prog.name] = int(parse_section(prog.section).program_type)
        except (ObjectError, EvspecError):  # fixtures with bad section names hold loadable code
            out[prog.name] = int(ProgType.TRACEPOINT)
    return out


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.fixture
def kernel(root_kernel: None) -> Iterator[Kernel]:
    before = open_fds()
    yield Kernel()
    assert open_fds() == before, "descriptors left open"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("clang") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("clang is required in CI (scripts/test.sh installs it)")
        pytest.skip("clang not installed")
    cache = tmp_path_factory.mktemp("btf-objects")
    return {p.stem: compile_source(p, cache_dir=cache) for p in [*SEEDS, *sorted(DATA.glob("*.c"))]}


def assert_loaded_with_btf(kernel: Kernel, obj: LiveObject) -> None:
    name = obj.spec.path
    assert obj.btf_fd is not None, f"{name}: {obj.btf_error}"
    btf_ids = set()
    for m in obj.maps.values():
        info = kernel.map_info(m.fd)
        if m.with_btf:
            btf_ids.add(info.btf_id)
        else:  # only maps without types, or of a type that refuses them, go without
            assert m.spec.value_type_id is None or m.spec.type in (4, 3), (name, m.name)
            assert info.btf_id == 0
    for p in obj.programs.values():
        info = kernel.program_info(p.fd)
        assert info.nr_func_info > 0 and info.nr_line_info > 0, (name, p.name)
        btf_ids.add(info.btf_id)
    assert len(btf_ids) == 1 and 0 not in btf_ids, name  # the object's one BTF, used everywhere


def test_every_corpus_fixture_loads_with_btf(kernel: Kernel, bpf_fixtures: Path) -> None:
    loaded = 0
    for path in sorted(bpf_fixtures.glob("*.o")):
        if path.name in NOT_BPF:
            continue
        spec = read_object(path)
        with load_object(spec, prog_types(spec), kernel=kernel) as obj:
            assert_loaded_with_btf(kernel, obj)
            loaded += 1
    assert loaded >= 25


def test_every_seed_example_loads_with_btf(kernel: Kernel, built: dict[str, Path]) -> None:
    for source in SEEDS:
        spec = read_object(built[source.stem])
        with load_object(spec, prog_types(spec), kernel=kernel) as obj:
            assert_loaded_with_btf(kernel, obj)


def readelf_layout(path: Path) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """Section sizes and (section, symbol) -> value, as binutils' readelf prints them."""
    sections: dict[int, tuple[str, int]] = {}
    text = subprocess.run(["readelf", "-SW", str(path)], capture_output=True, text=True, check=True).stdout
    for m in re.finditer(r"\[\s*(\d+)\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)", text):
        sections[int(m.group(1))] = (m.group(2), int(m.group(3), 16))
    symbols = {}
    text = subprocess.run(["readelf", "-sW", str(path)], capture_output=True, text=True, check=True).stdout
    for m in re.finditer(r"^\s*\d+: ([0-9a-f]+)\s+\d+\s+OBJECT\s+\S+\s+\S+\s+(\d+)\s+(\S+)$", text, re.M):
        symbols[(sections[int(m.group(2))][0], m.group(3))] = int(m.group(1), 16)
    return {name: size for name, size in sections.values()}, symbols


def test_completed_datasecs_agree_with_readelf(kernel: Kernel, built: dict[str, Path]) -> None:
    path = built["kinds"]
    spec = read_object(path)
    sizes, symbols = readelf_layout(path)
    btf = Btf(fixup_btf(spec.btf or b"", spec.layouts).data)
    seen = set()
    for t in btf.types():
        if t.kind == BtfKind.DATASEC:
            assert t.size == sizes[t.name], t.name
            for info in t.secinfos:
                var = btf.type(info.type).name
                assert info.offset == symbols[(t.name, var)], (t.name, var)
                seen.add(var)
    assert {"calls", "seed", "limit", "custom", "hidden_count", "kinds.local_static", "samples"} <= seen


def bpftool() -> str:
    found = shutil.which("bpftool") or next(
        (p for p in ("/usr/sbin/bpftool", "/sbin/bpftool") if os.access(p, os.X_OK)), None)
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("bpftool is required in CI for the differential test (scripts/test.sh installs it)")
        pytest.skip("bpftool not installed (apt-get install bpftool) for the differential test")
    return found


def test_bpftool_sees_the_loaded_btf_maps_and_source_lines(kernel: Kernel, built: dict[str, Path]) -> None:
    tool = bpftool()
    path = built["kinds"]
    spec = read_object(path)
    sizes, symbols = readelf_layout(path)
    with load_object(spec, prog_types(spec), kernel=kernel) as obj:
        prog = kernel.program_info(obj.program("kinds").fd)
        dump = json.loads(subprocess.run([tool, "-j", "btf", "dump", "id", str(prog.btf_id)],
                                         capture_output=True, text=True, check=True).stdout)
        names = {t["id"]: t["name"] for t in dump["types"]}
        datasecs = {t["name"]: t for t in dump["types"] if t["kind"] == "DATASEC"}
        assert {name: t["size"] for name, t in datasecs.items()} == {name: sizes[name] for name in datasecs}
        for name, t in datasecs.items():
            assert [v["offset"] for v in t["vars"]] == [symbols[(name, names[v["type_id"]])] for v in t["vars"]]
            assert [v["offset"] for v in t["vars"]] == sorted(v["offset"] for v in t["vars"])
        shown = json.loads(subprocess.run([tool, "-j", "map", "show", "id", str(kernel.map_info(obj.map("samples").fd).id)],
                                          capture_output=True, text=True, check=True).stdout)
        assert shown["btf_id"] == prog.btf_id
        xlated = subprocess.run([tool, "prog", "dump", "xlated", "id", str(prog.id), "linum"],
                                capture_output=True, text=True, check=True).stdout
        assert "calls += twice(limit);" in xlated and re.search(r"kinds\.c line_num:\d+", xlated)
        assert "static __attribute__((noinline)) int twice(int x)" in xlated  # the subprogram's line


def test_rewrites_for_older_kernels_are_accepted_by_this_kernel(
    kernel: Kernel, built: dict[str, Path], bpf_fixtures: Path
) -> None:
    paths = [built["kinds"], *(p for p in sorted(bpf_fixtures.glob("*.o")) if p.name not in NOT_BPF)]
    for path in paths:
        spec = read_object(path)
        for features in (OLDEST, BtfFeatures(global_func=False), BtfFeatures(float=False, decl_tag=False,
                                                                              type_tag=False, enum64=False)):
            fixed = fixup_btf(spec.btf or b"", spec.layouts, features)
            kernel.close(kernel.load_btf(fixed.data))
    rewritten = fixup_btf(read_object(built["kinds"]).btf or b"", read_object(built["kinds"]).layouts, OLDEST)
    assert {"FLOAT -> STRUCT (2)", "DECL_TAG -> INT (2)", "TYPE_TAG -> CONST (1)"} <= set(rewritten.replaced)


def test_the_verifier_log_names_the_source_line(kernel: Kernel, built: dict[str, Path]) -> None:
    spec = read_object(built["bad"])
    with pytest.raises(VerifierError) as info:
        load_object(spec, prog_types(spec), kernel=kernel)
    assert "; return *value > 0; @ bad.c:" in info.value.log  # the kernel's own line_info print
    assert "R0 invalid mem access 'map_value_or_null'" in info.value.log


def tracepoint_id(system: str, event: str) -> int:
    if not (TRACEFS / "events").is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True)
    return int((TRACEFS / "events" / system / event / "id").read_text())


def test_a_program_with_a_call_and_a_callback_runs(kernel: Kernel, built: dict[str, Path]) -> None:
    """kinds: calls += twice(limit) = 2*3 + 7 + 9 = 22; bpf_loop(4, step) adds 0+1+2+3 = 6."""
    spec = read_object(built["kinds"])
    with load_object(spec, prog_types(spec), kernel=kernel) as obj:
        prog = obj.program("kinds")
        assert kernel.program_info(prog.fd).nr_func_info == 3  # kinds, twice, step
        out = obj.map("out")
        assert not out.with_btf and kernel.map_info(out.fd).btf_id == 0  # the kernel refuses it BTF
        attr = PerfEventAttr(type=PerfType.TRACEPOINT, config=tracepoint_id("syscalls", "sys_enter_getppid"),
                             sample_period=1)
        tp = kernel.perf_event_open(attr, pid=os.getpid(), cpu=-1)
        try:
            kernel.set_bpf(tp, prog.fd)
            kernel.enable(tp)
            ctypes.CDLL(None).syscall(110 if os.uname().machine == "x86_64" else 173)
        finally:
            kernel.close(tp)
        data = kernel.lookup(obj.map("kinds.data").fd, bytes(4), obj.map("kinds.data").spec.value_size)
        bss = kernel.lookup(obj.map("kinds.bss").fd, bytes(4), obj.map("kinds.bss").spec.value_size)
        assert data is not None and bss is not None
        btf = Btf(obj.btf.data if obj.btf else b"")
        offsets = {btf.type(i.type).name: i.offset for t in btf.types() if t.kind == BtfKind.DATASEC
                   for i in t.secinfos}
        (calls,) = struct.unpack_from("=i", bss, offsets["calls"])
        (hidden,) = struct.unpack_from("=i", bss, offsets["hidden_count"])
        assert calls >= 22 and calls % 22 == 0 and hidden * 22 == calls * 6
        assert struct.unpack_from("=i", data, offsets["seed"]) == (7,)


@pytest.mark.parametrize(("blob", "says"), [
    (lambda: _btf_with_header(32, b"\x01" + bytes(7)), "the BTF header is 32 bytes with non-zero bytes past the 24"),
    (lambda: bytes(17 << 20), "the BTF is 17825792 bytes, more than the kernel's limit of 16777216"),
])
def test_btf_the_kernel_finds_too_big_says_why(root_kernel: None, blob: Callable[[], bytes], says: str) -> None:
    with pytest.raises(KernelError) as caught:
        Kernel().load_btf(blob())
    assert caught.value.errno == errno.E2BIG
    assert caught.value.message.startswith(f"BPF_BTF_LOAD: {says}") and caught.value.message.endswith("(E2BIG)")


def test_a_longer_header_of_zeros_is_taken(root_kernel: None) -> None:
    kernel = Kernel()
    kernel.close(kernel.load_btf(_btf_with_header(32, bytes(8))))


def _btf_with_header(hdr_len: int, extra: bytes) -> bytes:
    """A one-type BTF whose header is ``hdr_len`` bytes: the usual 24, then ``extra``."""
    plain = write_btf([RawType(1, type_info(BtfKind.INT), 4, struct.pack("<I", 32))], b"\0int\0")
    magic, version, flags, _len, *areas = struct.unpack_from("<HBBIIIII", plain)
    return struct.pack("<HBBIIIII", magic, version, flags, hdr_len, *areas) + extra + plain[24:]
