"""`evspec system snapshot --btf` saves the kernel's BTF inside the snapshot (compressed), read
back byte for byte, and beside it what externs are resolved against (``extern_sources``: its
checks are tests/test_check_externs.py); `evspec check --system SNAPSHOT` resolves an object's
CO-RE relocations against that BTF (a relocation that does not resolve there is reported with its
type, field and access path; one that resolves is accepted), and says "not checked" for a
snapshot without it."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from corpus_files import DATA

from evspec.check import CheckOptions, check_specs
from evspec.cli import main
from evspec.cli.system import snapshot_main
from evspec.diagnostics import Source
from evspec.inputs import SpecInput
from evspec.system.fixtures import corpus_data
from evspec.system.model import ExternFactsUnavailable
from evspec.system.snapshot import SnapshotError, SnapshotSystem, encode_btf, read_snapshot

VMLINUX = Path("/sys/kernel/btf/vmlinux")
CORE = DATA / "core"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("clang") is None:
        pytest.fail("clang is needed (scripts/test.sh installs it)")
    out = tmp_path_factory.mktemp("snapbtf")
    for name in ("kernel_poisoned", "core_read"):
        subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c",
                        str(CORE / f"{name}.c"), "-o", str(out / f"{name}.o")], check=True)
    return out


def _vmlinux() -> bytes:
    if not VMLINUX.exists():
        pytest.fail("the kernel's BTF (/sys/kernel/btf/vmlinux) is needed")
    return VMLINUX.read_bytes()


def _system(built: Path, btf: bytes | None) -> SnapshotSystem:
    """The corpus machine (its tracepoints), with or without ``btf`` as its kernel's BTF."""
    data = corpus_data(str(built))
    if btf is not None:
        data["kernel_btf"] = encode_btf(btf)
    return SnapshotSystem(data, cwd=str(built))


def _core(system: SnapshotSystem, built: Path, obj: str) -> list[tuple[str, bool, str, tuple[str, ...]]]:
    [checked] = check_specs([SpecInput(obj, Source("arg", index=0), 0)], CheckOptions(system=system, cwd=built))
    return [(d.code, d.is_error, d.message, d.notes) for d in checked.diagnostics if d.code in ("WB002", "EB015")]


def test_snapshot_with_btf_round_trip(tmp_path: Path) -> None:
    """The BTF read back from the file is /sys/kernel/btf/vmlinux, byte for byte, and compressed
    in the file (much smaller than the blob); without --btf there is none."""
    vmlinux = _vmlinux()
    path = tmp_path / "snap.json"
    assert snapshot_main(argparse.Namespace(output=str(path), btf=True)) == 0
    raw = json.loads(path.read_text())["kernel_btf"]
    assert raw["encoding"] == "zlib+base64" and raw["size"] == len(vmlinux)
    assert path.stat().st_size < len(vmlinux) * 0.8
    system = read_snapshot(path)
    assert system.has_kernel_btf()
    assert system.kernel_btf() == vmlinux
    assert system.extern_facts().release == system.features().kernel_release
    assert snapshot_main(argparse.Namespace(output=str(tmp_path / "plain.json"), btf=False)) == 0
    plain = read_snapshot(tmp_path / "plain.json")
    assert not {"kernel_btf", "extern_sources"} & set(json.loads((tmp_path / "plain.json").read_text()))
    assert not plain.has_kernel_btf() and plain.kernel_btf() is None
    with pytest.raises(ExternFactsUnavailable, match="written without --btf"):
        plain.extern_facts()


def test_a_damaged_btf_is_a_snapshot_error(built: Path) -> None:
    data = corpus_data(str(built))
    data["kernel_btf"] = {"encoding": "zlib+base64", "size": 3, "data": "bm90IHpsaWI="}
    with pytest.raises(SnapshotError, match="cannot be decoded"):
        SnapshotSystem(data).kernel_btf()


def test_check_reports_a_relocation_that_does_not_resolve_there(built: Path) -> None:
    """kernel_poisoned.c reads task_struct.no_such_field: against the snapshot's BTF it is
    reported with type, field and access path, and the snapshot's kernel named."""
    system = _system(built, _vmlinux())
    release = system.features().kernel_release
    [(code, is_error, message, _notes)] = _core(system, built, "./kernel_poisoned.o")
    assert (code, is_error) == ("WB002", False)
    assert message.startswith(f"1 CO-RE relocation(s) do not resolve against vmlinux {release}: function "
                              "'poisoned', instruction 9: field_byte_offset of struct task_struct___k (access 0:1): "
                              "field struct task_struct___k.no_such_field (access 0:1) is in none of")


def test_check_accepts_relocations_that_resolve_there(built: Path) -> None:
    assert _core(_system(built, _vmlinux()), built, "./core_read.o") == []


def test_check_against_a_snapshot_without_btf_says_not_checked(built: Path) -> None:
    assert _core(_system(built, None), built, "./kernel_poisoned.o") == [
        ("WB002", False, "2 CO-RE relocation(s) not checked: the system snapshot holds no kernel BTF to resolve "
                         "them against", ())]


def test_check_against_a_snapshot_with_btf_that_is_not_btf(built: Path) -> None:
    [(code, is_error, message, _)] = _core(_system(built, b"not BTF at all"), built, "./kernel_poisoned.o")
    assert (code, is_error) == ("WB002", False)
    assert message.startswith("2 CO-RE relocation(s) not checked: CO-RE relocations need the kernel's BTF, which "
                              "cannot be used: the snapshot's kernel_btf:")


def test_check_cli_against_a_snapshot_file(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({**corpus_data(str(built)), "kernel_btf": encode_btf(_vmlinux())}))
    monkeypatch.chdir(built)
    status = main(["check", "--system", str(path), "--format", "json", "-e", "./kernel_poisoned.o",
                   "-e", "./core_read.o"])
    diags = json.loads(capsys.readouterr().out)["diagnostics"]
    core = [d for d in diags if d["code"] == "WB002"]
    assert status == 1
    assert len(core) == 1 and "no_such_field" in core[0]["message"]
    assert core[0]["span"] == {"start": 0, "end": len("./kernel_poisoned.o")}
