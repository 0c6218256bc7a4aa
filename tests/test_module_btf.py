"""Module BTF, the split BTF the kernel has under /sys/kernel/btf/MOD, for CO-RE (issue #11),
offline: tests/data/modbtf/vmlinux.c built as the base BTF, nf_conntrack.c and nf_nat.c built and
re-based onto it as pahole writes a module's BTF (tests/split_btf.py).

- Split parsing: own ids continue after the base's last one, string offsets after the base's
  strings; types, strings and names found across both; every own type decoded as bpftool
  decodes it (``bpftool btf dump file SPLIT -B BASE``); the name index of a split blob finds what
  a walk over its own types finds, and is never stored.
- CO-RE (relocs.c): types vmlinux has resolve there, and the module BTFs are never read; types
  only a module has resolve in it, with their split ids (type_id_target) and sizes, through
  pointers back into vmlinux's types; a type vmlinux and a module both have is vmlinux's; one two
  modules lay out alike resolves (also when vmlinux has the name for a type of another kind:
  no candidate); one they lay out otherwise (ambiguous.c) is refused naming both; poison names
  the module, and a type nobody has names the modules searched. Without module BTFs
  (``--btf FILE``, a snapshot) the messages are vmlinux's alone, as before.
- Module BTFs are read from a directory laid out like /sys/kernel/btf, once and only when
  vmlinux lacks a candidate (an unloaded module skipped, an unreadable or corrupt one an error
  naming it); this machine's /sys/kernel/btf gives the modules it has.
- Corrupt split blobs end in ``BtfError``: another base, another byte order, references past the
  last id, strings without their NUL, and random mutations (fuzz).
- Typed ksyms and kfuncs (externs.c, ``module_ksyms``): vmlinux's first, else the first module
  that has the name; their ld_imm64s (module BTF fd) and calls (fd_array index, modules numbered
  in the order of the externs' names, index 0 never a module's, at most 32767).
- The kernel's BTF objects (``kernel.btf_objects``) on a fake kernel that serves them: module
  BTFs opened in id order, vmlinux's and programs' closed again, an unloaded one skipped, EPERM
  meaning no modules, a corrupt one an error that closes everything; and on this kernel (root):
  vmlinux's BTF object has the bytes of /sys/kernel/btf/vmlinux, nothing is left open.
"""

from __future__ import annotations

import errno
import json
import os
import random
import struct
import subprocess
from pathlib import Path

import pytest
from bpf_build import build_bpf, require_tools
from corpus_files import DATA
from evspec.loader.btf import name_index
from evspec.loader.btf import target as target_btf
from evspec.loader.btf.core import CoreError, CoreResolver, types_compat
from evspec.loader.btf.core_patch import relocate_object
from evspec.loader.btf.reader import Btf, BtfError, BtfKind, BtfType, RawType, type_info, write_btf
from evspec.loader.btf.target import TargetBtf, essential_name, read_module_blobs
from evspec.loader.errors import ObjectError
from evspec.loader.externs.module_ksyms import (
    FD_ARRAY_LIMIT,
    FdArray,
    KsymError,
    KsymFound,
    ModuleBtf,
    find_ksym,
    kfunc_calls,
    ld_imm64_values,
)
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.kernel.btf_objects import open_module_btfs
from evspec.loader.kernel.fake import FakeKernel
from evspec.loader.object.reader import read_object_bytes
from evspec.loader.object.spec import ObjectSpec
from split_btf import btf_section, split_btf

MODBTF = DATA / "modbtf"
MODULES = ("nf_conntrack", "nf_nat")
SOURCES = ("vmlinux", *MODULES, "relocs", "ambiguous", "externs")
INSN = struct.Struct("<BBhi")
# ids in the BTFs built from tests/data/modbtf (``bpftool btf dump file SPLIT -B BASE`` shows them)
BASE_IDS = 21  # vmlinux's ids 0..20: a module's first own type is 21
NF_CONN, CT_SET_MARK, CT_IN_BOTH, CT_IN_MODULES, CT_DIFFERS, CT_STATUS, CT_COUNT = 22, 27, 29, 32, 34, 36, 38
CT_LAST = 39
NAT_FLAGS, NAT_DIFFERS = 25, 28


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    require_tools("clang")
    out = tmp_path_factory.mktemp("modbtf")
    return {name: build_bpf(out, str(MODBTF / f"{name}.c"), f"{name}.o").read_bytes() for name in SOURCES}


@pytest.fixture(scope="module")
def blobs(built: dict[str, bytes]) -> dict[str, bytes]:
    """The base BTF (``vmlinux``) and each module's split BTF on it."""
    base = btf_section(built["vmlinux"], "vmlinux.o")
    return {"vmlinux": base, **{m: split_btf(btf_section(built[m], f"{m}.o"), base) for m in MODULES}}


def kernel(blobs: dict[str, bytes], reads: list[str] | None = None) -> TargetBtf:
    """vmlinux's target with the two modules beside it; each read of the modules noted in ``reads``."""
    def modules() -> list[tuple[str, bytes]]:
        if reads is not None:
            reads.append("modules")
        return [(m, blobs[m]) for m in MODULES]

    return TargetBtf(blobs["vmlinux"], "vmlinux", modules=modules)


def spec_of(built: dict[str, bytes], name: str) -> ObjectSpec:
    return read_object_bytes(built[name], f"{name}.o")


def own(split: Btf) -> list[BtfType]:
    return [split.type(i) for i in range(split.first_id, len(split))]


# -- parsing ---------------------------------------------------------------------------------


def test_split_ids_strings_and_lookups(blobs: dict[str, bytes]) -> None:
    base = Btf(blobs["vmlinux"])
    split = Btf(blobs["nf_conntrack"], base=base)
    assert split.base is base and base.base is None and base.first_id == 1
    assert split.first_id == len(base) == BASE_IDS and len(split) == CT_LAST + 1
    assert [t.id for t in split.types()] == list(range(1, len(split)))
    assert split.type(2) is base.type(2) and split.type(2).name == "task_struct"
    nf_conn = split.find("nf_conn", BtfKind.STRUCT)
    assert nf_conn is not None and nf_conn.id == NF_CONN and base.find("nf_conn") is None
    members = {m.name: m for m in nf_conn.members}
    owner = split.type(members["owner"].type)
    assert owner.kind == BtfKind.PTR and owner.id >= split.first_id and owner.type == 2  # into the base
    assert split.type(members["node"].type) is base.find("list_head")
    assert split.size_of(nf_conn.id) == 40 and split.size_of(owner.type) == 40
    assert split.find("task_struct") is base.find("task_struct")  # the base's first, as libbpf
    assert split.find("int") is base.find("int")
    # names: own strings past the base's, shared ones at the base's offsets
    assert split.strings_start == len(base.string_section())
    assert split.name_offset(nf_conn.id) >= split.strings_start
    assert split.string(split.name_offset(nf_conn.id)) == "nf_conn"
    in_both = split.type(CT_IN_BOTH)  # the module's own, not found by name: vmlinux's comes first
    assert in_both.name == "in_both" and split.find("in_both") is base.find("in_both")
    assert split.name_offset(CT_IN_BOTH) < split.strings_start  # "in_both", "x": the base's strings
    assert [m.name for m in in_both.members] == ["pad", "x"]
    assert split.raw_string(split.name_offset(2)) == b"task_struct" and split.name_offset(2) < split.strings_start
    assert split.string_section().startswith(b"\0") and b"task_struct" not in split.string_section()
    # the blob's own records
    names = split.name_offsets()
    assert len(names) == CT_LAST - BASE_IDS + 2 and names[NF_CONN - BASE_IDS + 1] == split.name_offset(NF_CONN)
    assert split.ids_named_at([split.name_offset(NF_CONN)]) == [NF_CONN]
    assert split.ids_named_at([split.name_offset(2)]) == []  # task_struct is no own type
    raws = [split.raw_type(i) for i in range(split.first_id, len(split))]
    assert write_btf(raws, split.string_section()) == blobs["nf_conntrack"]
    with pytest.raises(BtfError, match=rf"type id 2 is out of range \({BASE_IDS}\.\.{CT_LAST}\)"):
        split.raw_type(2)
    with pytest.raises(BtfError, match=rf"out of range \({BASE_IDS}\.\.{CT_LAST}\)"):
        split.type(CT_LAST + 1)


def _as_bpftool(btf: Btf, t: BtfType) -> dict[str, object]:
    """The fields of bpftool's JSON dump that say what ``t`` is."""
    out: dict[str, object] = {"id": t.id, "kind": t.kind.name, "name": t.name or "(anon)"}
    if t.kind == BtfKind.FUNC_PROTO:
        out["ret_type_id"] = t.type
        out["params"] = [{"name": p.name or "(anon)", "type_id": p.type} for p in t.params]
    elif t.kind in (BtfKind.PTR, BtfKind.FUNC, BtfKind.VAR, BtfKind.TYPEDEF, BtfKind.CONST, BtfKind.VOLATILE):
        out["type_id"] = t.type
    if t.kind in (BtfKind.INT, BtfKind.STRUCT, BtfKind.UNION, BtfKind.ENUM, BtfKind.DATASEC):
        out["size"] = t.size
    if t.kind == BtfKind.INT:
        out["nr_bits"] = t.int_bits
    if t.members:
        out["members"] = [{"name": m.name or "(anon)", "type_id": m.type, "bits_offset": m.bit_offset}
                          for m in t.members]
    if t.enumerators:
        out["values"] = [{"name": e.name, "val": e.value} for e in t.enumerators]
    if t.kind == BtfKind.DATASEC:
        out["vars"] = [{"type_id": i.type, "offset": i.offset, "size": i.size} for i in t.secinfos]
    if t.array is not None:
        out.update(type_id=t.array.type, index_type_id=t.array.index_type, nr_elems=t.array.nelems)
    return out


def _project(mine: object, theirs: object) -> object:
    """``theirs`` cut down to the keys ``mine`` has."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        return {k: _project(v, theirs.get(k)) for k, v in mine.items()}
    if isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
        return [_project(a, b) for a, b in zip(mine, theirs, strict=True)]
    return theirs


@pytest.mark.parametrize("module", MODULES)
def test_split_types_decode_as_bpftool_decodes_them(blobs: dict[str, bytes], tmp_path: Path, module: str) -> None:
    require_tools("bpftool")
    (tmp_path / "vmlinux").write_bytes(blobs["vmlinux"])
    (tmp_path / module).write_bytes(blobs[module])
    dump = subprocess.run(["bpftool", "-j", "btf", "dump", "file", str(tmp_path / module), "-B",
                           str(tmp_path / "vmlinux")], check=True, capture_output=True, text=True).stdout
    theirs = json.loads(dump)["types"]
    split = Btf(blobs[module], base=Btf(blobs["vmlinux"]))
    mine = [_as_bpftool(split, t) for t in own(split)]
    assert [t["id"] for t in theirs] == list(range(split.first_id, len(split)))
    assert [_project(a, b) for a, b in zip(mine, theirs, strict=True)] == mine


def _blob(types: list[RawType], strings: bytes) -> bytes:
    """A little-endian BTF blob with any string section, even an empty one (``write_btf`` wants
    the empty string first)."""
    body = b"".join(t.encode("<") for t in types)
    return struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(body), len(body), len(strings)) + body + strings


def test_a_split_blob_may_keep_every_string_in_its_base() -> None:
    """pahole writes an own string section that starts with its empty string; libbpf and the
    kernel also take an empty one (every name the base's) and one that starts with a name."""
    base = Btf(_blob([RawType(1, type_info(BtfKind.INT), 4, struct.pack("<I", 32))], b"\0int\0point\0"))
    point = RawType(5, type_info(BtfKind.STRUCT, 1), 4, struct.pack("<III", 1, 1, 0))  # { int int; }
    for strings in (b"", b"\0"):
        split = Btf(_blob([point], strings), base=base)
        assert split.type(2).name == "point" and split.type(2).members[0].name == "int"
    fwd = RawType(11, type_info(BtfKind.FWD), 0)  # the first own string, at the base's 11 bytes
    assert Btf(_blob([point, fwd], b"fwd\0"), base=base).type(3).name == "fwd"
    with pytest.raises(BtfError, match="does not start with an empty string"):
        Btf(_blob([fwd], b"fwd\0"))


# -- the name index of a split blob ------------------------------------------------------------


def _named_split() -> tuple[bytes, bytes]:
    """A base and a split whose names are in the base's strings or its own, some flavoured."""
    base_names = b"\0int\0task_struct\0task_struct___v1\0sched\0my_file\0"
    at = {n: base_names.index(b"\0" + n.encode() + b"\0") + 1 for n in ("int", "task_struct", "task_struct___v1",
                                                                       "sched", "my_file")}
    base = write_btf([RawType(at["int"], type_info(BtfKind.INT), 4, struct.pack("<I", 32)),
                      RawType(at["task_struct"], type_info(BtfKind.STRUCT), 8)], base_names)
    own_names = b"\0task_struct___mod\0file___x\0nf_conn\0"
    start = len(base_names)

    def mine(name: str) -> int:
        return start + own_names.index(b"\0" + name.encode() + b"\0") + 1

    structs = [at["task_struct___v1"], mine("task_struct___mod"), at["sched"], mine("file___x"),
               at["my_file"] + 3, mine("nf_conn"), at["task_struct"], 0]
    types = []
    for name_off in structs:
        types.append(RawType(0, type_info(BtfKind.PTR), 1))
        types.append(RawType(name_off, type_info(BtfKind.STRUCT), 8))
    return base, write_btf(types, own_names)


def test_the_index_of_a_split_finds_what_a_walk_of_its_own_types_finds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(name_index, "MIN_CACHED_BYTES", 0)
    base_data, split_data = _named_split()
    vmlinux = TargetBtf(base_data, "vmlinux", cache=False)
    module = TargetBtf(split_data, "module m", base=vmlinux)
    assert module.btf.first_id == 3 and module.base is vmlinux and module.owner == "module m's "
    for essential in ("task_struct", "sched", "file", "my_file", "nf_conn", "int", "nothing"):
        walk = tuple(t.id for t in own(module.btf) if t.name and essential_name(t.name) == essential)
        assert module.named(essential) == walk, essential
    assert module.named("task_struct") == (4, 6, 16)  # ___v1 (a base string), ___mod, and the plain one
    assert module.named("int") == ()  # the base's type: no candidate of the module
    assert vmlinux.named("task_struct") == (2,)
    assert not (tmp_path / "evspec" / name_index.CACHE_DIR).exists() or not os.listdir(
        tmp_path / "evspec" / name_index.CACHE_DIR)  # a split blob's index is never stored


# -- CO-RE -----------------------------------------------------------------------------------


def _resolved(spec: ObjectSpec, target: TargetBtf, programs: set[str] | None = None
              ) -> dict[tuple[str, str, str, str], tuple[int, int, str]]:
    """(local value, target value, where it came from or why it is poisoned) by (program, kind,
    local type, access)."""
    assert spec.btf is not None
    resolver = CoreResolver(Btf(spec.btf), target)
    out = {}
    for prog, r in spec.core_relocations():
        if programs is None or prog.name in programs:
            res = resolver.resolve(r.type_id, r.access, r.kind_id)
            out[(prog.name, r.kind, r.type_name, r.access)] = (res.orig, res.new, res.poison or res.target)
    return out


def test_types_vmlinux_has_never_read_the_modules(built: dict[str, bytes], blobs: dict[str, bytes]) -> None:
    reads: list[str] = []
    got = _resolved(spec_of(built, "relocs"), kernel(blobs, reads), {"vmlinux"})
    task = "struct task_struct___l"
    assert got == {("vmlinux", "field_byte_offset", task, "0:0"): (0, 4, "struct task_struct [2].tgid"),
                   ("vmlinux", "field_byte_offset", task, "0:1:1"): (5, 25, "struct task_struct [2].comm[1]")}
    assert reads == []  # the module search costs nothing when vmlinux has the candidates


def test_types_only_a_module_has_resolve_in_it(built: dict[str, bytes], blobs: dict[str, bytes]) -> None:
    reads: list[str] = []
    target = kernel(blobs, reads)
    got = _resolved(spec_of(built, "relocs"), target, {"module", "types", "enums", "both"})
    ct = "module nf_conntrack's"
    nf_conn, local = f"{ct} struct nf_conn [{NF_CONN}]", "struct nf_conn___l"
    status = "enum ip_conntrack_status___l"
    assert got == {
        ("module", "field_byte_offset", local, "0:0"): (0, 16, f"{nf_conn}.mark"),
        ("module", "field_byte_offset", local, "0:1"): (8, 0, f"{nf_conn}.status"),
        ("module", "field_byte_offset", local, "0:2"): (16, 8, f"{nf_conn}.owner"),
        # owner points into vmlinux's task_struct: tgid is found there
        ("module", "field_byte_offset", "struct task_struct___l", "0:0"): (0, 4, "struct task_struct [2].tgid"),
        ("types", "type_exists", local, "0"): (1, 1, nf_conn),
        ("types", "type_size", local, "0"): (24, 40, nf_conn),
        ("types", "type_id_target", local, "0"): (10, NF_CONN, nf_conn),  # the module's split id
        ("types", "type_exists", "struct nowhere___l", "0"): (1, 0, ""),
        ("enums", "enumval_value", status, "0"): (0, 8, f"{ct} enum ip_conntrack_status [{CT_STATUS}].IPS_CONFIRMED"),
        ("enums", "enumval_exists", status, "1"): (1, 0, ""),
        ("both", "field_byte_offset", "struct in_both___l", "0:0"): (0, 0, "struct in_both [12].x"),
        # vmlinux has a typedef in_modules, of no kind a struct may match: no candidate there, so
        # the modules are searched; both have it alike: one answer, the first module's
        ("both", "field_byte_offset", "struct in_modules___l", "0:0"): (
            0, 4, f"{ct} struct in_modules [{CT_IN_MODULES}].y"),
    }
    assert reads == ["modules"]  # read once, for the first type vmlinux lacks
    assert [target.btf.type(i).kind for i in target.named("in_modules")] == [BtfKind.TYPEDEF]
    assert [m.name for m in target.modules()] == ["module nf_conntrack", "module nf_nat"]
    module = target.modules()[0]
    assert module.btf.type(NF_CONN).name == "nf_conn" and module.btf.base is target.btf


def test_every_relocation_of_the_module_program(built: dict[str, bytes], blobs: dict[str, bytes]) -> None:
    """The program reading nf_conn fields and, through its owner pointer, vmlinux's task_struct:
    the instructions patched to the module's offsets (and vmlinux's for tgid)."""
    spec = spec_of(built, "relocs")
    relocated, findings = relocate_object(spec, kernel(blobs))
    prog = next(p for p in relocated.programs if p.name == "module")
    offsets = {r.insn: INSN.unpack_from(prog.insns, 8 * r.insn)[2] for r in prog.core_relocations}
    by_access = {(r.type_name, r.access): offsets[r.insn] for r in prog.core_relocations}
    assert by_access == {("struct nf_conn___l", "0:0"): 16, ("struct nf_conn___l", "0:1"): 0,
                         ("struct nf_conn___l", "0:2"): 8, ("struct task_struct___l", "0:0"): 4}
    assert all(r.applied and r.poison is None for r in prog.core_relocations)
    assert {f.function for f in findings} == {"missing"}


def test_poison_names_the_module_and_the_modules_searched(built: dict[str, bytes], blobs: dict[str, bytes]) -> None:
    _, findings = relocate_object(spec_of(built, "relocs"), kernel(blobs))
    assert [f.message for f in findings] == [
        "field_byte_offset of struct nf_conn___old (access 0:0): field struct nf_conn___old.gone (access 0:0) is in "
        f"none of module nf_conntrack's struct nf_conn [{NF_CONN}]",
        "field_byte_offset of struct nowhere___l (access 0:0): vmlinux has no type named 'nowhere', nor has any of "
        "its module BTFs (nf_conntrack, nf_nat)"]
    assert f"module nf_conntrack's struct nf_conn [{NF_CONN}]" in str(findings[0])


def test_two_modules_that_disagree_are_refused(built: dict[str, bytes], blobs: dict[str, bytes]) -> None:
    with pytest.raises(ObjectError) as err:
        relocate_object(spec_of(built, "ambiguous"), kernel(blobs))
    assert err.value.message == (
        "ambiguous.o: CO-RE relocation against vmlinux: function 'differs', instruction 0: field_byte_offset of "
        "struct differs___l (access 0:0): field_byte_offset of struct differs___l.z is ambiguous in the module "
        f"BTFs: module nf_conntrack's struct differs [{CT_DIFFERS}].z gives 0, module nf_nat's struct differs "
        f"[{NAT_DIFFERS}].z gives 8")


def test_without_module_btfs_vmlinux_alone(built: dict[str, bytes], blobs: dict[str, bytes]) -> None:
    """``--btf FILE`` and a snapshot give no module BTF (libbpf searches none when vmlinux's BTF is
    overridden): what only a module has is poisoned, in vmlinux's words alone."""
    target = TargetBtf(blobs["vmlinux"], "vmlinux")
    assert not target.searches_modules and target.modules() == ()
    got = _resolved(spec_of(built, "relocs"), target, {"module", "both"})
    assert got[("module", "field_byte_offset", "struct nf_conn___l", "0:2")] == (
        16, 0, "vmlinux has no type named 'nf_conn'")
    assert got[("both", "field_byte_offset", "struct in_modules___l", "0:0")] == (
        0, 0, "vmlinux has no type named 'in_modules'")
    assert got[("both", "field_byte_offset", "struct in_both___l", "0:0")] == (0, 0, "struct in_both [12].x")


# -- module BTFs from a directory like /sys/kernel/btf ----------------------------------------------


@pytest.fixture
def sysfs(blobs: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory laid out like /sys/kernel/btf, where the running kernel's BTF is looked for."""
    root = tmp_path / "btf"
    root.mkdir()
    for name, data in blobs.items():
        (root / name).write_bytes(data)
    monkeypatch.setattr(target_btf, "KERNEL_BTF", root / "vmlinux")
    return root


def test_the_running_kernels_modules_are_read_when_first_needed(
        built: dict[str, bytes], sysfs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[Path] = []

    def counted(directory: Path) -> list[tuple[str, bytes]]:
        reads.append(directory)
        return read_module_blobs(directory)

    monkeypatch.setattr(target_btf, "read_module_blobs", counted)
    (sysfs / "gone").symlink_to(sysfs / "unloaded")  # a module unloaded between listing and reading
    target = TargetBtf.running_kernel()
    assert target.searches_modules and reads == []
    spec = spec_of(built, "relocs")
    _resolved(spec, target, {"vmlinux"})
    assert reads == []
    relocated, findings = relocate_object(spec, target)
    assert reads == [str(sysfs)] and len(findings) == 2
    assert [m.name for m in target.modules()] == ["module nf_conntrack", "module nf_nat"]


def test_an_unreadable_or_corrupt_module_is_an_error_naming_it(built: dict[str, bytes], sysfs: Path) -> None:
    spec = spec_of(built, "relocs")
    (sysfs / "broken").write_bytes(b"\x9f\xeb\x01\0" + bytes(20))
    with pytest.raises(ObjectError, match="corrupt BTF: the BTF of module broken: "):
        relocate_object(spec, TargetBtf.running_kernel())
    (sysfs / "broken").unlink()
    (sysfs / "busy").mkdir()
    with pytest.raises(BtfError, match=r"cannot read the BTF of module busy \(.*/btf/busy\): Is a directory"):
        read_module_blobs(sysfs)
    assert read_module_blobs(sysfs / "none") == []  # a kernel without /sys/kernel/btf: no modules
    # vmlinux's own candidates still need no module at all
    assert _resolved(spec, TargetBtf.running_kernel(), {"vmlinux"})


def test_this_machines_module_btfs() -> None:
    """Whatever modules this kernel has BTF for (none on this kind of machine) are each read as
    split BTF on vmlinux's, named after their files."""
    root = Path(target_btf.KERNEL_BTF).parent
    if not os.path.isfile(target_btf.KERNEL_BTF):
        pytest.skip(f"the kernel has no BTF ({target_btf.KERNEL_BTF})")
    files = sorted(name for name in os.listdir(root) if name != "vmlinux")
    target = TargetBtf.running_kernel()
    modules = target.modules()
    assert [m.name for m in modules] == [f"module {name}" for name in files]
    for module in modules:
        assert module.btf.first_id == len(target.btf)
        assert all(t.id >= module.btf.first_id for t in own(module.btf))


# -- corrupt split blobs ---------------------------------------------------------------------


def test_a_split_blob_on_another_base_is_refused(blobs: dict[str, bytes]) -> None:
    small = write_btf([RawType(1, type_info(BtfKind.INT), 4, struct.pack("<I", 32))], b"\0int\0")
    with pytest.raises(BtfError, match=r"split BTF type 3 is named at string offset \d+, past the 5 bytes of its "
                       r"base's strings and its own \d+: the blob does not fit this base"):
        Btf(blobs["nf_conntrack"], base=Btf(small))
    with pytest.raises(BtfError, match="have different byte orders"):
        Btf(blobs["nf_conntrack"], base=Btf(write_btf([], b"\0", ">")))


def test_references_and_strings_past_the_end_are_refused(blobs: dict[str, bytes]) -> None:
    base = Btf(blobs["vmlinux"])
    split = Btf(blobs["nf_conntrack"], base=base)
    raws = [split.raw_type(i) for i in range(split.first_id, len(split))]
    ptr = raws[0]
    assert ptr.kind == BtfKind.PTR
    past = write_btf([RawType(ptr.name_off, ptr.info, len(split)), *raws[1:]], split.string_section())
    with pytest.raises(BtfError, match=rf"BTF type {BASE_IDS} refers to type {CT_LAST + 1}, but the last type "
                       rf"id is {CT_LAST}"):
        Btf(past, base=base).type(BASE_IDS)
    member = raws[1]
    bad_name = member.extra[:12] + struct.pack("<I", 1 << 20) + member.extra[16:]
    wrong = write_btf([ptr, RawType(member.name_off, member.info, member.word, bad_name), *raws[2:]],
                      split.string_section())
    with pytest.raises(BtfError, match=r"string offset 1048576 is outside the strings of the split BTF and its "
                       r"base \(\d+ bytes in the base, \d+ of its own\)"):
        Btf(wrong, base=base).type(NF_CONN)
    unterminated = blobs["nf_conntrack"][:-1] + b"x"
    with pytest.raises(BtfError, match="does not end with a NUL"):
        Btf(unterminated, base=base)


def test_mutated_split_blobs_end_in_btf_errors(built: dict[str, bytes], blobs: dict[str, bytes]) -> None:
    """Random bytes of a module's split BTF changed (header, records, strings): parsing it on the
    base, decoding every type and resolving relocs.c against it either works or raises the
    reader's own errors."""
    spec = spec_of(built, "relocs")
    assert spec.btf is not None
    local = Btf(spec.btf)
    relocations = [(r.type_id, r.access, r.kind_id) for _, r in spec.core_relocations()]
    original = blobs["nf_conntrack"]
    rng = random.Random(1111)
    outcomes = {"parsed": 0, "refused": 0}
    for _ in range(300):
        data = bytearray(original)
        for _ in range(rng.choice((1, 1, 2, 4))):
            at = rng.randrange(len(data)) if rng.random() < 0.7 else rng.randrange(24)
            data[at] = rng.choice((0, 0xFF, rng.randrange(256), data[at] ^ (1 << rng.randrange(8))))
        mutated = bytes(data)
        try:
            target = TargetBtf(blobs["vmlinux"], "vmlinux", modules=lambda: [("m", mutated)])  # noqa: B023
            module = target.modules()[0].btf
            for t in own(module):
                if t.kind in (BtfKind.STRUCT, BtfKind.UNION, BtfKind.INT):
                    module.size_of(t.id)
            resolver = CoreResolver(local, target)
            for rel in relocations:
                try:
                    resolver.resolve(*rel)
                except CoreError:
                    pass
            outcomes["parsed"] += 1
        except BtfError:
            outcomes["refused"] += 1
    assert outcomes["parsed"] > 20 and outcomes["refused"] > 20, outcomes


# -- phase 2: typed ksyms and kfuncs in module BTFs ----------------------------------------------


@pytest.fixture(scope="module")
def module_btfs(blobs: dict[str, bytes]) -> tuple[TargetBtf, tuple[ModuleBtf, ...]]:
    """vmlinux's target and the two modules as the kernel layer opens them (BTF object ids 4 and
    9, descriptors 40 and 41)."""
    vmlinux = TargetBtf(blobs["vmlinux"], "vmlinux")
    return vmlinux, tuple(ModuleBtf(name, btf_id, fd, TargetBtf(blobs[name], f"module {name}", base=vmlinux))
                          for name, btf_id, fd in (("nf_conntrack", 4, 40), ("nf_nat", 9, 41)))


def test_ksyms_and_kfuncs_are_found_as_libbpf_finds_them(
        built: dict[str, bytes], module_btfs: tuple[TargetBtf, tuple[ModuleBtf, ...]]) -> None:
    """externs.c: vmlinux's own first (the modules not asked for), else the first module that
    has one; the local types agree with the targets' (bpf_core_types_are_compat)."""
    vmlinux, modules = module_btfs
    asked: list[str] = []

    def listed() -> tuple[ModuleBtf, ...]:
        asked.append("modules")
        return modules

    spec = spec_of(built, "externs")
    assert spec.btf is not None
    local = Btf(spec.btf)
    found = {}
    for ext in spec.externs:
        kind = BtfKind.FUNC if ext.kind == "kfunc" else BtfKind.VAR
        found[ext.name] = where = find_ksym(vmlinux, listed, ext.name, kind)
        if where is not None:
            tbtf = where.target.btf
            assert types_compat(local, ext.type_id, tbtf, tbtf.resolve(tbtf.type(where.type_id).type).id), ext.name
    ct, nat = modules
    assert {name: (f.where, f.type_id) for name, f in found.items() if f is not None} == {
        "vmlinux_counter": ("vmlinux", 16), "bpf_vm_kfunc": ("vmlinux", 10),
        "nf_conntrack_count": ("module nf_conntrack", CT_COUNT),
        "bpf_ct_set_mark": ("module nf_conntrack", CT_SET_MARK),
        "bpf_nat_flags": ("module nf_nat", NAT_FLAGS)}
    assert found["bpf_nowhere"] is None
    assert found["bpf_ct_set_mark"].module is ct  # type: ignore[union-attr]
    assert ld_imm64_values(found["vmlinux_counter"]) == (3, 16, 0)  # BPF_PSEUDO_BTF_ID, fd 0: vmlinux
    assert ld_imm64_values(found["nf_conntrack_count"]) == (3, CT_COUNT, 40)  # the module BTF's fd
    assert ld_imm64_values(found["bpf_nowhere"]) == (0, 0, 0)
    # the modules are asked for once per name vmlinux lacks, never for vmlinux's own
    asked.clear()
    assert find_ksym(vmlinux, listed, "bpf_vm_kfunc", BtfKind.FUNC) is not None and asked == []
    # two modules with a VAR of that name: the first module's
    both = find_ksym(vmlinux, listed, "in_modules", BtfKind.VAR)
    assert both is not None and both.module is ct and asked == ["modules"]
    # a name of the other kind is no match
    assert find_ksym(vmlinux, listed, "nf_conntrack_count", BtfKind.FUNC) is None


def test_the_fd_array_numbers_modules_as_libbpf_does(
        module_btfs: tuple[TargetBtf, tuple[ModuleBtf, ...]]) -> None:
    """Externs sorted by name; index 0 never a module's; a module keeps its index; vmlinux's
    kfuncs need no entry; no module kfunc, no fd_array."""
    vmlinux, (ct, nat) = module_btfs

    def at(module: ModuleBtf, name: str) -> KsymFound:
        found = module.target.btf.find(name, BtfKind.FUNC)
        assert found is not None
        return KsymFound(found.id, module.target, module)

    vm = KsymFound(10, vmlinux)
    calls, fds = kfunc_calls({"bpf_vm_kfunc": vm, "bpf_nat_flags": at(nat, "bpf_nat_flags"),
                              "bpf_ct_set_mark": at(ct, "bpf_ct_set_mark"), "bpf_nowhere": None,
                              "bpf_ct_other": at(ct, "bpf_ct_set_mark")})
    assert calls == {"bpf_ct_other": (CT_SET_MARK, 1), "bpf_ct_set_mark": (CT_SET_MARK, 1),
                     "bpf_nat_flags": (NAT_FLAGS, 2),
                     "bpf_nowhere": None, "bpf_vm_kfunc": (10, 0)}
    assert fds == (0, 40, 41)
    assert kfunc_calls({"bpf_vm_kfunc": vm}) == ({"bpf_vm_kfunc": (10, 0)}, ())
    fd_array = FdArray()
    for i in range(FD_ARRAY_LIMIT):
        module = ModuleBtf(f"m{i}", 100 + i, 1000 + i, ct.target)
        assert fd_array.index(KsymFound(CT_SET_MARK, ct.target, module), f"k{i}") == i + 1
    last = ModuleBtf("one_too_many", 1, 2, ct.target)
    with pytest.raises(KsymError, match="kfunc 'k' of module one_too_many: a program can name the BTF of 32767 "):
        fd_array.index(KsymFound(CT_SET_MARK, ct.target, last), "k")
    assert len(fd_array.fds) == FD_ARRAY_LIMIT + 1


# -- phase 2: the kernel's BTF objects ------------------------------------------------------------


def _fake(blobs: dict[str, bytes], **extra: tuple[str, bool, bytes]) -> FakeKernel:
    """vmlinux (id 1), a program's BTF (id 3), the two modules (ids 4 and 9), in the kernel's order."""
    btfs = {1: ("vmlinux", True, blobs["vmlinux"]), 3: ("", False, blobs["vmlinux"]),
            4: ("nf_conntrack", True, blobs["nf_conntrack"]), 9: ("nf_nat", True, blobs["nf_nat"])}
    btfs.update({int(k.removeprefix("id")): v for k, v in extra.items()})
    return FakeKernel(btf_objects=btfs)


def test_module_btfs_are_opened_as_libbpf_opens_them(blobs: dict[str, bytes]) -> None:
    fake = _fake(blobs)
    fake.btf_gone.add(9)  # nf_nat unloaded between the listing and the open
    fake.btf_objects[7] = ("nf_nat", True, blobs["nf_nat"])  # and loaded again under a new id
    kernel = Kernel(fake)
    vmlinux = TargetBtf(blobs["vmlinux"], "vmlinux")
    modules = open_module_btfs(kernel, vmlinux)
    assert [(m.name, m.btf_id) for m in modules] == [("nf_conntrack", 4), ("nf_nat", 7)]
    assert all(m.target.base is vmlinux and m.target.name == f"module {m.name}" for m in modules)
    assert modules[0].target.btf.find("nf_conn", BtfKind.STRUCT).id == NF_CONN  # type: ignore[union-attr]
    assert sorted(fake.btf_fds) == sorted(m.fd for m in modules)  # vmlinux's and the program's closed
    assert [c.args["start_id"] for c in fake.calls_of("BPF_BTF_GET_NEXT_ID")] == [0, 1, 3, 4, 7, 9]
    assert [(c.args["start_id"], c.errno) for c in fake.calls_of("BPF_BTF_GET_FD_BY_ID")] == [
        (1, None), (3, None), (4, None), (7, None), (9, errno.ENOENT)]
    kernel.close_all(m.fd for m in modules)
    assert fake.btf_fds == {}


def test_btf_objects_described_and_read(blobs: dict[str, bytes]) -> None:
    fake = _fake(blobs)
    kernel = Kernel(fake)
    assert list(kernel.btf_ids()) == [1, 3, 4, 9]
    fd = kernel.btf_fd_by_id(4)
    assert fd is not None and kernel.btf_fd_by_id(5) is None
    about = kernel.describe_btf(fd)
    assert (about.id, about.name, about.kernel_btf) == (4, "nf_conntrack", True)
    assert about.size == len(blobs["nf_conntrack"])
    assert kernel.btf_data(fd, about.size) == blobs["nf_conntrack"]
    fake.btf_objects[4] = ("nf_conntrack", True, blobs["nf_nat"])  # another size than it said
    with pytest.raises(KernelError, match="the kernel has \\d+ bytes of BTF, not the \\d+ it said before"):
        kernel.btf_data(fd, about.size)
    kernel.close(fd)


def test_no_permission_to_list_btf_objects_means_no_modules(blobs: dict[str, bytes]) -> None:
    fake = _fake(blobs)
    fake.script("BPF_BTF_GET_NEXT_ID", errno=errno.EPERM)
    assert open_module_btfs(Kernel(fake), TargetBtf(blobs["vmlinux"])) == ()
    fake.script("BPF_BTF_GET_NEXT_ID", errno=errno.EINVAL)
    with pytest.raises(KernelError, match="BPF_BTF_GET_NEXT_ID"):
        open_module_btfs(Kernel(fake), TargetBtf(blobs["vmlinux"]))


def test_a_corrupt_module_btf_closes_what_was_opened(blobs: dict[str, bytes]) -> None:
    fake = _fake(blobs, id12=("broken", True, blobs["nf_conntrack"][:40]))
    with pytest.raises(BtfError, match=r"the BTF of module broken \(BTF object 12\): "):
        open_module_btfs(Kernel(fake), TargetBtf(blobs["vmlinux"]))
    assert fake.btf_fds == {} and set(fake.open_fds.values()) <= {"map", "prog"}


def test_this_kernels_btf_objects(root_kernel: None) -> None:
    """The running kernel: vmlinux's BTF object is the kernel's own, named so, with the bytes of
    /sys/kernel/btf/vmlinux; a BTF a program loads is not the kernel's; the module BTFs opened are
    those /sys/kernel/btf lists (none on this kind of machine); nothing is left open."""
    kernel = Kernel()
    before = set(os.listdir("/proc/self/fd"))
    loaded = kernel.load_btf(write_btf([RawType(1, type_info(BtfKind.INT), 4, struct.pack("<I", 32))], b"\0int\0"))
    seen = {}
    for btf_id in kernel.btf_ids():
        fd = kernel.btf_fd_by_id(btf_id)
        if fd is None:
            continue
        about = kernel.describe_btf(fd)
        seen[about.name or f"#{btf_id}"] = about
        if about.name == "vmlinux":
            assert kernel.btf_data(fd, about.size) == Path(target_btf.KERNEL_BTF).read_bytes()
        kernel.close(fd)
    mine = kernel.describe_btf(loaded)
    assert seen["vmlinux"].kernel_btf and not mine.kernel_btf and mine.name == ""
    kernel.close(loaded)
    modules = open_module_btfs(kernel, TargetBtf.running_kernel())
    assert sorted(m.name for m in modules) == sorted(n for n in os.listdir(os.path.dirname(target_btf.KERNEL_BTF))
                                                     if n != "vmlinux")
    kernel.close_all(m.fd for m in modules)
    assert set(os.listdir("/proc/self/fd")) == before
