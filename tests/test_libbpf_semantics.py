"""evspec against libbpf 1.x on the objects libbpf gives a meaning to (tests/data/libbpf/*.c, built
here): each fixture is loaded by ``load_object`` and by a tiny runner linked against libbpf
(tests/data/libbpf/runner.c), and both must end the same way: the same verdict, the same map
attributes as BPF_OBJ_GET_INFO_BY_FD reports them (type, flags, map_extra, BTF key/value types),
the same global data contents, the same prog-array and map-in-map contents, the same pinned map.
Where evspec refuses, its message names the feature and where it is.

Everything is made in the kernel by these tests is closed again; pins go to a bpffs mounted for
the test on a temporary directory, unmounted afterwards.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno as E
import inspect
import json
import os
import re
import shutil
import subprocess
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from evspec.loader import asm
from evspec.loader.abi import bpf as abi
from evspec.loader.btf.reader import Btf, BtfKind
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError, VerifierError
from evspec.loader.kernel.fake import FakeKernel
from evspec.loader.load.live import LiveObject, load_object, on_bpffs
from evspec.loader.object.inspect import inspect_report, inspect_text
from evspec.loader.object.reader import read_object
from evspec.loader.object.spec import MapType, ObjectSpec, ProgType
from evspec.loader.session import RecordSession

from evspec.codes import bpf as bpf_codes
from evspec.codes import kernel as codes

DATA = Path(__file__).parent / "data" / "libbpf"
INCLUDE = "/usr/include/x86_64-linux-gnu"
PROG_TYPES = {"socket": ProgType.SOCKET_FILTER, "xdp": ProgType.XDP}
SLOTTED = (MapType.PROG_ARRAY, MapType.ARRAY_OF_MAPS, MapType.HASH_OF_MAPS)


# ------------------------------------------------------------------ building


class Builder:
    """Builds a fixture (with -D defines) once, and the libbpf runner."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._built: dict[tuple[str, tuple[tuple[str, str], ...]], Path] = {}

    def obj(self, name: str, **defines: object) -> Path:
        key = (name, tuple(sorted((k, str(v)) for k, v in defines.items())))
        if key not in self._built:
            suffix = "".join(f"-{k}{v}" for k, v in key[1])
            out = self.root / f"{name}{suffix}.o"
            cmd = ["clang", "-target", "bpf", "-O2", "-g", f"-I{INCLUDE}", "-c", str(DATA / f"{name}.c"),
                   "-o", str(out), *(f"-D{k}={v}" for k, v in key[1])]
            subprocess.run(cmd, check=True, capture_output=True)
            self._built[key] = out
        return self._built[key]

    def spec(self, name: str, **defines: object) -> ObjectSpec:
        # the file name is the object's name in messages and in data map names
        return read_object(self.obj(name, **defines))


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is needed to compare evspec with libbpf")
    return found


def make_builder(tmp_path_factory: pytest.TempPathFactory) -> Builder:
    _tool("clang")
    return Builder(tmp_path_factory.mktemp("libbpf"))


@pytest.fixture(scope="module")
def builder(tmp_path_factory: pytest.TempPathFactory) -> Builder:
    return make_builder(tmp_path_factory)


def build_runner(builder: Builder) -> Path:
    out = builder.root / "runner"
    proc = subprocess.run([_tool("cc"), "-O1", "-o", str(out), str(DATA / "runner.c"), "-lbpf"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"building the libbpf runner failed (libbpf-dev installed?):\n{proc.stderr}")
    return out


@pytest.fixture(scope="module")
def runner(builder: Builder, root_kernel: None) -> Path:
    return build_runner(builder)


@pytest.fixture
def pin_root(tmp_path: Path, root_kernel: None) -> Iterator[Path]:
    """A private bpffs: maps pinned by name go here, and all of it goes with the unmount."""
    root = tmp_path / "bpffs"
    root.mkdir()
    subprocess.run(["mount", "-t", "bpf", "bpf", str(root)], check=True)
    before = set(os.listdir(root))  # the kernel's own iterators (maps.debug, progs.debug)
    try:
        yield root
    finally:
        for name in set(os.listdir(root)) - before:
            os.unlink(root / name)
        subprocess.run(["umount", str(root)], check=True)


@pytest.fixture
def kernel(root_kernel: None) -> Kernel:
    return Kernel()


# ------------------------------------------------------------ the two loaders


@dataclasses.dataclass
class Outcome:
    ok: bool
    maps: dict[str, dict[str, Any]]  # global data maps with their "value" (hex)
    progs: dict[str, dict[str, Any]]
    message: str  # libbpf's stderr, or evspec's error message
    map_names: list[str] = dataclasses.field(default_factory=list)  # in order, repeated names kept
    linkage: dict[str, int] = dataclasses.field(default_factory=dict)  # DATASEC VARs in the loaded BTF


def libbpf_load(runner: Path, obj: Path, pin_root: Path | None = None, map_extra: dict[str, int] | None = None
                ) -> Outcome:
    args = [str(runner), str(obj)] + ([str(pin_root)] if pin_root is not None else [])
    args += [f"{name}={value:#x}" for name, value in (map_extra or {}).items()]
    proc = subprocess.run(args, capture_output=True, text=True, check=True)
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    names = [d["map"] for d in lines[1:] if "map" in d]
    maps = {d.pop("map"): d for d in lines[1:] if "map" in d}
    progs = {d.pop("prog"): d for d in lines[1:] if "prog" in d}
    for m in maps.values():
        if "slots" in m:
            m["slots"] = {slot: name for slot, name in m["slots"]}
    linkage = {d["var"]: d["linkage"] for d in lines[1:] if "var" in d}
    return Outcome(lines[0]["ok"], maps, progs, proc.stderr, names, linkage)


def evspec_view(kernel: Kernel, live: LiveObject) -> Outcome:
    """What the runner prints, for an object evspec loaded."""
    progs = {}
    names: dict[tuple[str, int], str] = {}
    for p in live.programs.values():
        info = kernel.program_info(p.fd)
        progs[info.name] = {"id": info.id, "type": info.type, "btf_id": info.btf_id}
        names["prog", info.id] = info.name
    maps = {}
    for lm in live.maps.values():
        d = kernel.map_info(lm.fd)
        names["map", d.id] = d.name
    for lm in live.maps.values():
        d = kernel.map_info(lm.fd)
        entry: dict[str, Any] = {
            "id": d.id, "type": d.type, "key_size": d.key_size, "value_size": d.value_size,
            "max_entries": d.max_entries, "flags": d.flags, "map_extra": d.map_extra,
            "btf_key": d.btf_key_type_id, "btf_value": d.btf_value_type_id,
        }
        if d.type in SLOTTED:
            held = "prog" if d.type == MapType.PROG_ARRAY else "map"
            slots = {}
            for slot in range(min(d.max_entries, 64)):
                value = kernel.lookup(lm.fd, slot.to_bytes(4, "little"), 4)
                if value is not None:
                    slots[slot] = names.get((held, int.from_bytes(value, "little")), "?")
            entry["slots"] = slots
        if lm.spec.initial_value is not None:
            data = kernel.lookup(lm.fd, bytes(4), d.value_size)
            assert data is not None
            entry["value"] = data.hex()
        maps[d.name] = entry
    linkage = {}
    if live.btf is not None:
        btf = Btf(live.btf.data)
        linkage = {btf.type(v.type).name: btf.type(v.type).linkage
                   for t in btf.types() if t.kind == BtfKind.DATASEC for v in t.secinfos
                   if btf.type(v.type).kind == BtfKind.VAR}
    return Outcome(True, maps, progs, "", [lm.name for lm in live.maps.values()], linkage)


def evspec_load(kernel: Kernel, spec: ObjectSpec, pin_root: Path | None = None) -> LiveObject:
    types_ = {p.name: PROG_TYPES[p.section] for p in spec.programs}
    if pin_root is None:
        return load_object(spec, types_, kernel=kernel)
    return load_object(spec, types_, kernel=kernel, pin_root=str(pin_root))


def attributes(outcome: Outcome) -> dict[str, dict[str, Any]]:
    """The map attributes both loaders must agree on: ids and BTF type ids are the kernel's
    numbering, so only whether BTF types were given is compared."""
    out = {}
    for name, m in outcome.maps.items():
        a = {k: v for k, v in m.items() if k not in ("id", "btf_key", "btf_value")}
        a["btf_key"], a["btf_value"] = bool(m["btf_key"]), bool(m["btf_value"])
        out[name] = a
    return out


def same_as_libbpf(kernel: Kernel, runner: Path, builder: Builder, name: str, **defines: object
                   ) -> tuple[Outcome, Outcome, LiveObject]:
    """Load fixture ``name`` both ways; the caller closes the returned LiveObject."""
    ref = libbpf_load(runner, builder.obj(name, **defines))
    assert ref.ok, ref.message
    live = evspec_load(kernel, builder.spec(name, **defines))
    try:
        ours = evspec_view(kernel, live)
        assert attributes(ours) == attributes(ref)
        assert {n: p["type"] for n, p in ours.progs.items()} == {n: p["type"] for n, p in ref.progs.items()}
    except BaseException:
        live.close()
        raise
    return ours, ref, live


# ------------------------------------------------------------- 1. pinning


def test_pin_root_defaults_to_libbpfs() -> None:
    assert inspect.signature(load_object).parameters["pin_root"].default == "/sys/fs/bpf"


def test_obj_attr_matches_the_uapi_layout() -> None:
    assert ctypes.sizeof(abi.ObjAttr) == 24
    assert [(n, getattr(abi.ObjAttr, n).offset) for n in ("pathname", "bpf_fd", "file_flags", "path_fd")] == [
        ("pathname", 0), ("bpf_fd", 8), ("file_flags", 12), ("path_fd", 16)]


def test_a_map_evspec_pins_by_name_is_reused_by_libbpf(
    kernel: Kernel, runner: Path, builder: Builder, pin_root: Path
) -> None:
    with evspec_load(kernel, builder.spec("pin"), pin_root) as live:
        lm = live.map("es_pinned")
        assert lm.pinned == str(pin_root / "es_pinned") and not lm.reused
        pinned_id = kernel.map_info(lm.fd).id
    assert (pin_root / "es_pinned").exists()  # the pin outlives the object
    ref = libbpf_load(runner, builder.obj("pin"), pin_root)
    assert ref.ok and ref.maps["es_pinned"]["id"] == pinned_id


def test_a_map_libbpf_pins_by_name_is_reused_by_evspec(
    kernel: Kernel, runner: Path, builder: Builder, pin_root: Path
) -> None:
    ref = libbpf_load(runner, builder.obj("pin"), pin_root)
    assert ref.ok and (pin_root / "es_pinned").exists()
    with evspec_load(kernel, builder.spec("pin"), pin_root) as live:
        lm = live.map("es_pinned")
        assert lm.reused and kernel.map_info(lm.fd).id == ref.maps["es_pinned"]["id"]
        assert any("reused the map pinned at" in n for n in live.notes)
        assert attributes(evspec_view(kernel, live)) == attributes(ref)


def test_a_pinned_map_that_differs_is_refused_by_both(
    kernel: Kernel, runner: Path, builder: Builder, pin_root: Path
) -> None:
    with evspec_load(kernel, builder.spec("pin"), pin_root) as live:
        pinned_id = kernel.map_info(live.map("es_pinned").fd).id
    ref = libbpf_load(runner, builder.obj("pin", PIN_MAX_ENTRIES=32), pin_root)
    assert not ref.ok and "parameter mismatch" in ref.message
    with pytest.raises(KernelError) as caught:
        evspec_load(kernel, builder.spec("pin", PIN_MAX_ENTRIES=32), pin_root)
    assert caught.value.code == codes.PINNED_MAP
    assert "map 'es_pinned'" in caught.value.message and "max_entries 16 pinned, 32 declared" in caught.value.message
    fd = kernel.pinned(str(pin_root / "es_pinned"))  # the pin is left as it was
    assert fd is not None
    try:
        assert kernel.map_info(fd).id == pinned_id
    finally:
        kernel.close(fd)


def test_a_failed_load_removes_the_pins_it_made(kernel: Kernel, builder: Builder, pin_root: Path) -> None:
    spec = builder.spec("pin")
    broken = dataclasses.replace(spec, programs=tuple(
        dataclasses.replace(p, insns=asm.encode(asm.OP_EXIT), relocations=(), line_info=())
        for p in spec.programs))
    with pytest.raises(VerifierError):  # r0 is never set
        evspec_load(kernel, broken, pin_root)
    assert not (pin_root / "es_pinned").exists()


def test_an_invalid_pinning_value_is_refused_by_both(runner: Path, builder: Builder, pin_root: Path) -> None:
    ref = libbpf_load(runner, builder.obj("pin", PIN_VALUE=2), pin_root)
    assert not ref.ok and "invalid pinning value 2" in ref.message
    with pytest.raises(ObjectError) as caught:
        builder.spec("pin", PIN_VALUE=2)
    assert caught.value.code == bpf_codes.BAD_MAP
    assert "map 'es_pinned': invalid pinning value 2" in caught.value.message


# ------------------------------------------------------ 2. map_extra, 11. keyless BTF


def test_bloom_filter_gets_map_extra_and_its_value_type(kernel: Kernel, runner: Path, builder: Builder) -> None:
    ours, _, live = same_as_libbpf(kernel, runner, builder, "bloom")
    with live:
        bloom = ours.maps["es_bloom"]
        assert bloom["map_extra"] == 3 and bloom["btf_value"] and not bloom["btf_key"]


# -------------------------------------------------------------------- 3. numa


def test_an_existing_numa_node_is_passed(kernel: Kernel, runner: Path, builder: Builder) -> None:
    ours, _, live = same_as_libbpf(kernel, runner, builder, "numa", NODE=0)
    with live:
        assert ours.maps["es_numa"]["flags"] & abi.MapFlag.NUMA_NODE


def test_a_missing_numa_node_is_refused_by_both(kernel: Kernel, runner: Path, builder: Builder) -> None:
    assert not Path("/sys/devices/system/node/node63").exists()
    ref = libbpf_load(runner, builder.obj("numa", NODE=63))
    assert not ref.ok
    with pytest.raises(KernelError) as caught:
        evspec_load(kernel, builder.spec("numa", NODE=63))
    assert caught.value.code == codes.NUMA_NODE
    assert "map 'es_numa': numa_node 63" in caught.value.message and "online NUMA nodes" in caught.value.message


# ---------------------------------------------------------- 4. prog-array values


def test_prog_array_initial_values_are_filled_after_loading(kernel: Kernel, runner: Path, builder: Builder) -> None:
    ours, ref, live = same_as_libbpf(kernel, runner, builder, "progarray")
    with live:
        assert ours.maps["es_jump"]["slots"] == ref.maps["es_jump"]["slots"] == {1: "tail_a", 3: "tail_b"}


def test_prog_array_values_naming_a_program_loaded_later_are_refused(kernel: Kernel, builder: Builder) -> None:
    spec = builder.spec("progarray")
    with pytest.raises(ObjectError) as caught:
        load_object(spec, {p.name: ProgType.SOCKET_FILTER for p in spec.programs}, kernel=kernel,
                    deferred={"tail_b"})
    assert "map 'es_jump'" in caught.value.message and "'tail_b'" in caught.value.message


# ------------------------------------------------------------- 5. map-in-map


def test_map_in_map_inner_definition_and_initial_values(kernel: Kernel, runner: Path, builder: Builder) -> None:
    spec = builder.spec("mapinmap")
    outer = spec.map("es_outer")
    assert outer is not None and outer.inner is not None
    assert (outer.inner.name, outer.inner.type, outer.inner.max_entries) == ("es_outer.inner", MapType.ARRAY, 2)
    assert outer.initial_slots == ((0, "es_in_a"), (2, "es_in_b"))
    ours, ref, live = same_as_libbpf(kernel, runner, builder, "mapinmap")
    with live:
        assert ours.maps["es_outer"]["slots"] == ref.maps["es_outer"]["slots"] == {0: "es_in_a", 2: "es_in_b"}
        assert ours.maps["es_outer_hash"]["slots"] == ref.maps["es_outer_hash"]["slots"] == {1: "es_in_b"}


def test_a_map_in_map_without_inner_definition_is_refused_by_name(kernel: Kernel, builder: Builder) -> None:
    spec = builder.spec("mapinmap")
    maps = tuple(dataclasses.replace(m, inner=None) if m.name == "es_outer" else m for m in spec.maps)
    with pytest.raises(ObjectError) as caught:
        evspec_load(kernel, dataclasses.replace(spec, maps=maps))
    assert "map 'es_outer' (ARRAY_OF_MAPS) has no inner map definition" in caught.value.message


# ------------------------------------------------------ 6. static program functions


def test_a_static_function_in_a_program_section_is_refused_by_both(
    kernel: Kernel, runner: Path, builder: Builder
) -> None:
    ref = libbpf_load(runner, builder.obj("static_prog"))
    assert not ref.ok and "program 'local_fn' is static and not supported" in ref.message
    with pytest.raises(ObjectError) as caught:
        evspec_load(kernel, builder.spec("static_prog"))
    assert caught.value.code == bpf_codes.BAD_PROGRAM
    assert "section 'socket': function 'local_fn' is static" in caught.value.message


# -------------------------------------------------------------------- 7. __hidden


def _func_linkage(btf_id: int, name: str) -> str:
    out = subprocess.run([_tool("bpftool"), "btf", "dump", "id", str(btf_id)], capture_output=True,
                         text=True, check=True).stdout
    found = re.search(rf"FUNC '{name}' type_id=\d+ linkage=(\w+)", out)
    assert found is not None, out
    return found.group(1)


def test_a_hidden_function_is_static_in_the_loaded_btf(kernel: Kernel, runner: Path, builder: Builder) -> None:
    spec = builder.spec("hidden")
    assert [(f.name, f.global_function, f.hidden) for f in spec.subprograms] == [("hidden_fn", True, True)]
    ref = libbpf_load(runner, builder.obj("hidden"))
    assert ref.ok
    # libbpf's BTF object is gone with its runner; what it loaded was static: the verifier
    # accepted *p, which it refuses in a global function (below)
    with evspec_load(kernel, spec) as live:
        info = kernel.program_info(live.program("hidden_prog").fd)
        assert _func_linkage(info.btf_id, "hidden_fn") == "static"
    as_global = dataclasses.replace(spec, subprograms=tuple(
        dataclasses.replace(f, hidden=False) for f in spec.subprograms))
    with pytest.raises(VerifierError, match="mem_or_null"):
        evspec_load(kernel, as_global)


# --------------------------------------------------------------- 8. fallbacks


def test_a_program_with_a_global_function_loads_with_its_func_info(
    kernel: Kernel, runner: Path, builder: Builder
) -> None:
    _, _, live = same_as_libbpf(kernel, runner, builder, "globalfn")
    with live:
        info = kernel.program_info(live.program("global_prog").fd)
        assert info.nr_func_info == 2 and _func_linkage(info.btf_id, "global_fn") == "global"
        assert live.warnings == []


def _func_info_refused(fake: FakeKernel) -> None:
    fake.script("BPF_PROG_LOAD", errno=E.EINVAL, log="Invalid func_info", match=lambda a: a["func_info_cnt"] > 0,
                times=None)


def test_func_info_refused_with_global_functions_is_the_kernels_refusal(builder: Builder) -> None:
    fake = FakeKernel()
    _func_info_refused(fake)
    spec = builder.spec("globalfn")
    with pytest.raises(KernelError) as caught:
        load_object(spec, {"global_prog": ProgType.SOCKET_FILTER}, kernel=Kernel(fake), cpus=1)
    assert caught.value.errno == E.EINVAL and caught.value.code != codes.FUNC_INFO_NEEDED
    assert all(c.args["func_info_cnt"] > 0 for c in fake.calls_of("BPF_PROG_LOAD"))
    assert fake.open_fds == {}


def test_func_info_refused_without_global_functions_is_refused_as_libbpf_refuses_it(builder: Builder) -> None:
    """libbpf 1.8 loads a program with its func/line info whenever the object's BTF is loaded, and
    never again without it: the kernel's EINVAL is the program's."""
    fake = FakeKernel()
    _func_info_refused(fake)
    unpinned = builder.spec("pin", PIN_VALUE=0)
    with pytest.raises(KernelError) as caught:
        load_object(unpinned, {"pin_prog": ProgType.SOCKET_FILTER}, kernel=Kernel(fake), cpus=1)
    assert caught.value.errno == E.EINVAL and "Invalid func_info" in str(caught.value.detail or caught.value.message)
    assert all(c.args["func_info_cnt"] > 0 for c in fake.calls_of("BPF_PROG_LOAD"))
    assert fake.open_fds == {}


def test_refused_btf_is_a_warning_or_a_refusal(builder: Builder) -> None:
    fake = FakeKernel()
    fake.script("BPF_BTF_LOAD", errno=E.EINVAL, log="[3] some reason", times=None)
    with load_object(builder.spec("pin", PIN_VALUE=0), {"pin_prog": ProgType.SOCKET_FILTER}, kernel=Kernel(fake),
                     cpus=1) as live:
        (warning,) = live.warnings
        assert warning.startswith(f"{live.spec.path}: loaded without BTF (maps without key/value types, programs "
                                  "without func/line info)")
    fake = FakeKernel()
    fake.script("BPF_BTF_LOAD", errno=E.EINVAL, log="[3] some reason", times=None)
    with pytest.raises(KernelError) as caught:
        load_object(builder.spec("globalfn"), {"global_prog": ProgType.SOCKET_FILTER}, kernel=Kernel(fake), cpus=1)
    assert caught.value.code == codes.FUNC_INFO_NEEDED and "BTF was not loaded" in caught.value.message
    assert not fake.calls_of("BPF_PROG_LOAD")


def test_map_btf_types_refused_is_a_warning_shown_by_record(builder: Builder) -> None:
    fake = FakeKernel()
    fake.script("BPF_MAP_CREATE", errno=E.EINVAL, match=lambda a: a["btf_key_type_id"] > 0)
    kernel = Kernel(fake)
    with load_object(builder.spec("numa"), {"numa_prog": ProgType.SOCKET_FILTER}, kernel=kernel, cpus=1) as live:
        (warning,) = live.warnings
        assert "map 'es_numa' created without its BTF key/value types: the kernel refused them" in warning
        session = RecordSession(kernel)
        session.objects.append(types.SimpleNamespace(live=live))  # type: ignore[arg-type]
        assert session.warnings == [warning]


# ------------------------------------------------------ 9. legacy bpf_elf_map


def test_legacy_elf_map_fields(kernel: Kernel, runner: Path, builder: Builder) -> None:
    for pinning in (0, 2):  # libbpf 1.x refuses SEC("maps") altogether
        ref = libbpf_load(runner, builder.obj("legacy", PINNING=pinning))
        assert not ref.ok and "legacy map definitions in 'maps' section are not supported" in ref.message
    spec = builder.spec("legacy", PINNING=2)
    assert spec.map("es_legacy").legacy_extra == (("pinning", 2),)  # type: ignore[union-attr]
    with pytest.raises(ObjectError) as caught:
        evspec_load(kernel, spec)
    assert caught.value.code == bpf_codes.UNSUPPORTED
    assert "legacy map 'es_legacy' (section 'maps'): pinning 2" in caught.value.message
    # all extra fields zero: what perf loads, evspec loads too (libbpf's refusal is of the section)
    with evspec_load(kernel, builder.spec("legacy", PINNING=0)) as live:
        assert kernel.map_info(live.map("es_legacy").fd).max_entries == 4


# ---------------------------------------------------- 10. calls into other sections


def test_a_call_into_another_program_section_is_refused_by_both(
    kernel: Kernel, runner: Path, builder: Builder
) -> None:
    ref = libbpf_load(runner, builder.obj("crosscall"))
    assert not ref.ok and "bad call relo against 'other_prog' in section 'xdp'" in ref.message
    with pytest.raises(ObjectError) as caught:
        evspec_load(kernel, builder.spec("crosscall"))
    assert caught.value.code == bpf_codes.BAD_RELOCATION
    assert ("function 'cross_caller' (section 'socket') calls global function 'other_prog' of program "
            "section 'xdp'") in caught.value.message


# ----------------------------------------- 11. ring size, mmapable data, keyless maps


def test_map_kinds_are_created_as_libbpf_creates_them(kernel: Kernel, runner: Path, builder: Builder) -> None:
    ours, _, live = same_as_libbpf(kernel, runner, builder, "mapkinds")
    with live:
        assert ours.maps["es_ring"]["max_entries"] == ringbuf_expected(5000)
        assert any("ring buffer 'es_ring': max_entries 5000 rounded up" in n for n in live.notes)
        mmapable = abi.MapFlag.MMAPABLE
        assert ours.maps["mapkinds.data"]["flags"] == ours.maps["mapkinds.bss"]["flags"] == mmapable
        assert ours.maps["mapkinds.rodata"]["flags"] == mmapable | abi.MapFlag.RDONLY_PROG
        assert not ours.maps["es_queue"]["btf_value"] and not ours.maps["es_stack"]["btf_value"]


def ringbuf_expected(size: int) -> int:
    page = os.sysconf("SC_PAGE_SIZE")
    n = page
    while n <= size:
        n *= 2
    return n


# ----------------------------------------------------------------------- inspect


def test_inspect_shows_what_libbpf_gives_a_meaning_to(builder: Builder) -> None:
    report = {name: inspect_report(builder.spec(name, **d))
              for name, d in (("pin", {}), ("bloom", {}), ("numa", {"NODE": 1}), ("mapinmap", {}),
                              ("progarray", {}))}
    for r in report.values():
        assert json.loads(json.dumps(r)) == r
    maps = {m["name"]: m for r in report.values() for m in r["maps"]}
    assert maps["es_pinned"]["pinning"] == 1 and maps["es_bloom"]["map_extra"] == 3
    assert maps["es_numa"]["numa_node"] == 1
    assert maps["es_outer"]["inner"]["name"] == "es_outer.inner"
    assert maps["es_jump"]["initial_values"] == [{"slot": 1, "target": "tail_a"}, {"slot": 3, "target": "tail_b"}]
    text = "".join(inspect_text(r) for r in report.values())
    assert "es_pinned: hash  key 4B  value 8B  max_entries 16  pinning by_name" in text
    assert "es_bloom: bloom_filter  key 0B  value 4B  max_entries 64  map_extra 3" in text
    assert "flags 0x4  numa_node 1" in text
    assert "      inner es_outer.inner: array  key 4B  value 4B  max_entries 2" in text
    assert "      [0] = es_in_a\n      [2] = es_in_b\n" in text
    assert "      [1] = tail_a\n      [3] = tail_b\n" in text


def test_a_pin_root_off_bpffs_is_said_with_the_failure(kernel: Kernel, builder: Builder, tmp_path: Path) -> None:
    """BPF_OBJ_PIN fails outside a BPF filesystem (libbpf fails the same way); the error says so."""
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(KernelError) as caught:
        evspec_load(kernel, builder.spec("pin"), plain)
    assert caught.value.code == "EK015" and "cannot pin it at" in caught.value.message
    assert caught.value.help == (f"{plain} is not on a BPF filesystem: mount one there (mount -t bpf bpf {plain}), "
                                 "or declare the map without pinning",)


def test_on_bpffs_is_the_type_of_the_mount_that_holds_the_path(tmp_path: Path, pin_root: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text("sysfs /sys sysfs rw 0 0\nbpf /sys/fs/bpf bpf rw 0 0\n/dev/vda / ext4 rw 0 0\n"
                      "bpf /mnt/with\\040space bpf rw 0 0\n")
    assert on_bpffs("/sys/fs/bpf", str(mounts)) and on_bpffs("/sys/fs/bpf/deep/er", str(mounts))
    assert not on_bpffs("/sys/fs", str(mounts)) and not on_bpffs("/sys/fs/bpfx", str(mounts))
    assert on_bpffs("/mnt/with space/x", str(mounts)) and not on_bpffs("/tmp", str(mounts))
    assert not on_bpffs("/sys/fs/bpf", str(tmp_path / "none"))
    assert on_bpffs(str(pin_root)) and not on_bpffs(str(tmp_path))  # this machine's mounts
