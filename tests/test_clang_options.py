"""A libbpf-style source (vmlinux.h, BPF_KPROBE/BPF_UPROBE, bpf_tracing.h's PT_REGS macros)
compiles as libbpf-bootstrap builds it: ``-D__TARGET_ARCH_<arch>`` by default, and the user's
``--clang-opt`` (an include directory, a define) in inspect, check, verify and record, part of the
compile cache's key. Live, the uprobe reads the right registers: add_them(40000, 2) stores 40002."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from bpf_build import build_program, require_tools
from corpus_files import DATA
from record_cli import run_record

from evspec.cli import main

SOURCE = DATA / "clang" / "tracing_args.c"


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source, the workload, and ``inc/vmlinux.h`` dumped from this kernel's BTF by bpftool
    (where libbpf-bootstrap keeps it: a folder of its own, named with -I)."""
    require_tools("clang", "cc", "bpftool")
    out = tmp_path_factory.mktemp("clang_opts")
    shutil.copy(SOURCE, out / SOURCE.name)
    shutil.copy(DATA / "clang" / "add_them.c", out / "add_them.c")
    build_program(out, "add_them.c", "add_them")
    (out / "inc").mkdir()
    with open(out / "inc" / "vmlinux.h", "w") as f:
        subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"], stdout=f,
                       check=True)
    return out


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _run(work: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
         *argv: str) -> tuple[int, str, str]:
    monkeypatch.chdir(work)
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _include(work: Path) -> str:
    return f"--clang-opt=-I{work / 'inc'}"


def test_inspect_passes_the_options_to_clang(work: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _run(work, monkeypatch, capsys, "inspect", "tracing_args.c")
    assert status == 2 and "'vmlinux.h' file not found" in err
    status, out, err = _run(work, monkeypatch, capsys, "inspect", "--format", "json", _include(work),
                            "tracing_args.c")
    assert status == 0, err
    report = json.loads(out)
    assert report["path"] == "tracing_args.c"  # the user's file, not the compile cache's object
    sections = {p["name"]: p["section"] for p in report["programs"]}
    assert sections == {"on_add": "uprobe//bin/true:add_them", "on_nanosleep": "kprobe"}
    # a define reaches the source too (the uprobe's target)
    status, out, err = _run(work, monkeypatch, capsys, "inspect", "--format", "json", _include(work),
                            f"--clang-opt=-DWORKLOAD=\"{work / 'add_them'}\"", "tracing_args.c")
    assert status == 0, err
    assert json.loads(out)["programs"][0]["section"] == f"uprobe/{work / 'add_them'}:add_them"


def test_without_the_target_arch_the_pt_regs_macros_do_not_compile(work: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The default define is what makes the source build: undefined again, clang fails as it did
    before evspec defined it."""
    status, _, err = _run(work, monkeypatch, capsys, "inspect", _include(work), "--clang-opt=-U__TARGET_ARCH_x86",
                          "--clang-opt=-U__TARGET_ARCH_arm64", "tracing_args.c")
    assert status == 2 and "error[EB012]" in err
    assert "Must specify a BPF target arch via __TARGET_ARCH_xxx" in err


def test_the_options_are_part_of_the_cache_key(work: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str], private_cache: Path) -> None:
    for target in ("/bin/true", "/bin/false", "/bin/true"):
        status, out, err = _run(work, monkeypatch, capsys, "inspect", "--format", "json", _include(work),
                                f"--clang-opt=-DWORKLOAD=\"{target}\"", "tracing_args.c")
        assert status == 0, err
        assert json.loads(out)["programs"][0]["section"] == f"uprobe/{target}:add_them"
    assert len(list((private_cache / "evspec" / "bpf").glob("*/tracing_args.o"))) == 2


def test_check_passes_the_options_to_clang(work: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _run(work, monkeypatch, capsys, "check", "--system", "live", "--format", "json",
                            "-e", "./tracing_args.c")
    assert status == 1 and json.loads(out)["diagnostics"][0]["code"] == "EB012"
    status, out, err = _run(work, monkeypatch, capsys, "check", "--system", "live", "--format", "json",
                            _include(work), f"--clang-opt=-DWORKLOAD=\"{work / 'add_them'}\"", "-e",
                            "./tracing_args.c")
    codes = {d["code"] for d in json.loads(out)["diagnostics"]}
    assert "EB012" not in codes and not [d for d in json.loads(out)["diagnostics"] if d["severity"] == "error"], out


def test_verify_loads_both_probes(root_kernel: None, work: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _run(work, monkeypatch, capsys, "verify", "--format", "json", _include(work),
                            "tracing_args.c")
    assert status == 0, out + err
    programs = {p["name"]: p for p in json.loads(out)["programs"]}
    assert {n: p["loaded"] for n, p in programs.items()} == {"on_add": True, "on_nanosleep": True}
    assert programs["on_add"]["relocations"] == 2  # PT_REGS_PARM1 and 2: CO-RE reads of struct pt_regs


def test_record_reads_the_uprobes_arguments(root_kernel: None, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(work)
    status, out, err = run_record("--format", "json", "--dump-maps=seen", _include(work),
                                  f"--clang-opt=-DWORKLOAD=\"{work / 'add_them'}\"", "-e", "./tracing_args.c",
                                  "--", "./add_them")
    assert status == 0, err
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert {"map": "seen", "key": 0, "value": 40002} in lines, out
