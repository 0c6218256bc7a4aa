"""Objects with CO-RE relocations: read and shown; checked and loaded with the relocations
applied against the running kernel's BTF (or a target given); refused, before any syscall, when
there is no target BTF or a record cannot be applied (EB015); never loaded with clang's local
offsets."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from corpus_files import DATA
from evspec.loader.btf import target as target_btf
from evspec.loader.btf.reader import Btf, BtfExt
from evspec.loader.btf.target import TargetBtf
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel
from evspec.loader.kernel.fake import FakeKernel
from evspec.loader.load.live import load_object
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


def _check(built: Path, name: str = "./core.o", *, this_kernel: bool = True) -> list[tuple[str, bool, str]]:
    """What check says of the object, the corpus machine's tracepoints standing in for this
    machine's and the kernel's BTF (``this_kernel``: as for --system live), or as for a snapshot."""
    from dataclasses import replace

    from evspec.loader.btf.core_patch import load_target
    from evspec.loader.lint.event import check_bpf_event, environment_from_system

    from evspec.ast import BpfEvent
    from evspec.span import Span

    env = environment_from_system(corpus_system(), built)
    if this_kernel:
        env = replace(env, core_target=lambda: load_target(None))
    event = BpfEvent(name, name.endswith(".c"), None, None, Span(0, len(name)), Span(0, len(name)))
    return [(d.code, d.is_error, d.message) for d in check_bpf_event(event, env, {})]


def test_check_resolves_against_the_kernels_btf(built: Path) -> None:
    assert os.path.exists(target_btf.KERNEL_BTF)
    assert _check(built) == []


def test_check_against_a_snapshot_says_it_did_not_check(built: Path) -> None:
    """A snapshot holds no kernel BTF yet: the relocations are not resolved against this machine's."""
    [checked] = check_specs([SpecInput("./core.o", Source("arg", index=0), 0)],
                            CheckOptions(system=corpus_system(), cwd=built))
    assert [(d.code, d.is_error, d.message) for d in checked.diagnostics] == [
        ("WB002", False, "2 CO-RE relocation(s) not checked: the system snapshot holds no kernel BTF to resolve "
                         "them against")]


def test_check_without_kernel_btf_says_it_did_not_check(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(target_btf, "KERNEL_BTF", built / "no-btf")
    [(code, is_error, message)] = _check(built)
    assert (code, is_error) == ("WB002", False)
    assert message.startswith("2 CO-RE relocation(s) not checked: CO-RE relocations need the kernel's BTF")


def test_check_reports_what_does_not_resolve(built: Path) -> None:
    """A field this kernel's task_struct lacks: a warning naming type, field, path, instruction."""
    shutil.copy(DATA / "core" / "kernel_poisoned.c", built)
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c",
                    "kernel_poisoned.c", "-o", "poisoned.o"], cwd=built, check=True)
    [(code, is_error, message)] = _check(built, "./poisoned.o")
    assert (code, is_error) == ("WB002", False)
    assert message.startswith("1 CO-RE relocation(s) do not resolve against vmlinux: function 'poisoned', "
                              "instruction 9: field_byte_offset of struct task_struct___k (access 0:1): field "
                              "struct task_struct___k.no_such_field (access 0:1) is in none of vmlinux's "
                              "struct task_struct [")


def test_loading_relocates_against_the_target_given(built: Path) -> None:
    spec = read_object_bytes((built / "core.o").read_bytes(), "core.o")
    funnel = FakeKernel()
    target = TargetBtf.running_kernel()
    with load_object(spec, {"on_enter": 5}, kernel=Kernel(funnel), target_btf=target) as live:
        loaded = live.program("on_enter").insns
        assert all(r.applied and r.poison is None for _, r in live.spec.core_relocations())
    assert loaded != spec.programs[0].insns
    pid = next(m for m in target.btf.type(target.named("task_struct")[0]).members if m.name == "pid")
    assert struct.unpack_from("<i", loaded, 3 * 8 + 4)[0] == pid.bit_offset // 8


def test_loading_without_target_btf_refuses_before_any_syscall(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(target_btf, "KERNEL_BTF", built / "no-btf")
    spec = read_object_bytes((built / "core.o").read_bytes(), "core.o")
    funnel = FakeKernel()
    with pytest.raises(ObjectError) as exc:
        load_object(spec, {"on_enter": 5}, kernel=Kernel(funnel))
    assert exc.value.code == "EB015" and "need the kernel's BTF" in exc.value.message
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
    funnel = FakeKernel()
    with pytest.raises(ObjectError) as exc:
        load_object(read_object_bytes(bytes(bad), "bad.o"), {"on_enter": 5}, kernel=Kernel(funnel))
    assert exc.value.code == "EB015" and funnel.calls == []
    assert exc.value.message == ("bad.o: CO-RE relocation against vmlinux: function 'on_enter', instruction 3: "
                                 "kind 99 of struct task_struct___mine (access 0:0): unknown CO-RE relocation kind 99")
