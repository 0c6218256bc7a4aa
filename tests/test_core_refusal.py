"""Objects with CO-RE relocations: read and shown, and refused by check and load until evspec
applies them (loaded with clang's local offsets they would read wrong data without a word)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from corpus_files import DATA
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel
from evspec.loader.kernel.fake import FakeKernel
from evspec.loader.load.live import load_object
from evspec.loader.object.btf import Btf, BtfExt
from evspec.loader.object.inspect import inspect_report, inspect_text
from evspec.loader.object.reader import read_object_bytes

from evspec.check import CheckOptions, check_specs
from evspec.diagnostics import Source
from evspec.inputs import SpecInput
from evspec.system.fixtures import corpus_system

SOURCE = DATA / "core" / "core_read.c"
EXPECTED = [(3, "field_byte_offset", "struct task_struct___mine", "0:0"),
            (11, "field_byte_offset", "struct task_struct___mine", "0:1")]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("clang") is None:
        pytest.fail("clang is needed (scripts/test.sh installs it)")
    out = tmp_path_factory.mktemp("core")
    shutil.copy(SOURCE, out / "core.c")
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c", "core.c",
                    "-o", "core.o"], cwd=out, check=True)
    return out


def _relos(data: bytes) -> list[tuple[int, str, str, str]]:
    spec = read_object_bytes(data, "core.o")
    return [(r.insn, r.kind, r.type_name, r.access) for _, r in spec.core_relocations()]


def test_core_relocations_are_read_and_inspected(built: Path) -> None:
    data = (built / "core.o").read_bytes()
    assert _relos(data) == EXPECTED
    spec = read_object_bytes(data, "core.o")
    report = inspect_report(spec)
    assert report["programs"][0]["core_relocations"] == [
        {"insn": i, "kind": k, "type": t, "access": a} for i, k, t, a in EXPECTED]
    assert "      insn 11: CO-RE field_byte_offset struct task_struct___mine access 0:1\n" in inspect_text(report)


def test_check_refuses_an_object_with_core_relocations(built: Path) -> None:
    [checked] = check_specs([SpecInput("./core.o", Source("arg", index=0), 0)],
                            CheckOptions(system=corpus_system(), cwd=built))
    [d] = checked.diagnostics
    assert (d.code, d.is_error, d.span.start, d.span.end) == ("EB014", True, 0, 8)
    assert d.message == ("2 CO-RE relocation(s), which evspec cannot apply yet (the first: program 'on_enter', "
                         "field_byte_offset of struct task_struct___mine (access 0:0) at instruction 3); "
                         "loaded without them the programs would read wrong offsets")


def test_loading_refuses_before_any_syscall(built: Path) -> None:
    spec = read_object_bytes((built / "core.o").read_bytes(), "core.o")
    funnel = FakeKernel()
    with pytest.raises(ObjectError) as exc:
        load_object(spec, {"on_enter": 5}, kernel=Kernel(funnel))
    assert exc.value.code == "EB014" and "CO-RE relocation" in exc.value.message
    assert funnel.calls == []


def _core_record_offset(data: bytes, spec_ext: bytes) -> int:
    """Where the first core_relo record sits inside the object's bytes."""
    hdr_len = struct.unpack_from("<I", spec_ext, 4)[0]
    core_off = struct.unpack_from("<I", spec_ext, 24)[0]
    first = hdr_len + core_off + 4 + 8  # record size word, then the section's name and count
    return data.index(spec_ext) + first


def test_a_corrupt_core_record_is_a_corrupt_btf_ext(built: Path) -> None:
    data = (built / "core.o").read_bytes()
    spec = read_object_bytes(data, "core.o")
    assert spec.btf_ext is not None
    at = _core_record_offset(data, spec.btf_ext)
    bad = bytearray(data)
    struct.pack_into("<I", bad, at + 4, 0xFFFFFF)  # type_id of the first record: no such type
    with pytest.raises(ObjectError) as exc:
        read_object_bytes(bytes(bad), "bad.o")
    assert exc.value.code == "EB010"
    assert "core_relo of 'raw_syscalls:sys_enter' names type 16777215, which does not exist" in exc.value.message
    bad = bytearray(data)
    struct.pack_into("<I", bad, at, 3 * 8 + 4)  # insn_off inside an instruction
    with pytest.raises(ObjectError, match="inside an instruction"):
        read_object_bytes(bytes(bad), "bad.o")


def test_unknown_core_kinds_are_kept_by_number(built: Path) -> None:
    """A kind this evspec has no name for is still a relocation: counted and refused, never dropped."""
    data = (built / "core.o").read_bytes()
    spec = read_object_bytes(data, "core.o")
    assert spec.btf_ext is not None
    at = _core_record_offset(data, spec.btf_ext)
    bad = bytearray(data)
    struct.pack_into("<I", bad, at + 12, 99)
    relos = _relos(bytes(bad))
    assert relos[0][1] == "kind 99" and len(relos) == 2
    assert spec.btf is not None
    ext = BtfExt(spec.btf_ext, Btf(spec.btf))
    assert [r.kind for r in ext.core_relos("raw_syscalls:sys_enter")] == [0, 0]
