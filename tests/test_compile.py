"""compile_source: perf's flags, clang errors, and the private compile cache."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.object import clang as compile_mod
from evspec.loader.object.clang import (
    cache_refusal,
    compile_flags,
    compile_source,
    default_cache_dir,
    linux_version_code,
    parse_depfile,
    possible_cpus,
    target_arch,
)
from evspec.loader.object.reader import read_object

PROGRAM = """\
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "shared.h"

SEC("raw_syscalls:sys_enter")
int prog(void *ctx)
{
	return ANSWER + __NR_CPUS__;
}

char _license[] SEC("license") = "GPL";
int _version SEC("version") = LINUX_VERSION_CODE;
"""


@pytest.fixture
def clang() -> str:
    found = shutil.which("clang")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("clang is required in CI")
        pytest.skip("clang not installed")
    return found


@pytest.fixture
def source(tmp_path: Path) -> Path:
    (tmp_path / "shared.h").write_text("#define ANSWER 40\n")
    path = tmp_path / "prog.c"
    path.write_text(PROGRAM)
    return path


class ClangCalls:
    """Counts the clang runs that compile (``-c``), passing every call through."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.compiles: list[list[str]] = []
        real = compile_mod._run_clang

        def run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
            if "-c" in argv:
                self.compiles.append(list(argv))
            return real(argv)

        monkeypatch.setattr(compile_mod, "_run_clang", run)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> ClangCalls:
    return ClangCalls(monkeypatch)


def _return_value(path: Path) -> int:
    """The immediate of the program's first ``r0 = imm`` (what ANSWER + __NR_CPUS__ became)."""
    (prog,) = read_object(path).programs
    assert prog.insns[0] == 0xB7  # BPF_ALU64 | BPF_MOV | BPF_K
    return int.from_bytes(prog.insns[4:8], "little", signed=True)


# -- flags -----------------------------------------------------------------------------------


def test_flags_are_perfs() -> None:
    flags = compile_flags(["-DEXTRA=1"])
    assert flags[:5] == ["-target", "bpf", "-O2", "-g", "-D__KERNEL__"]
    assert f"-D__NR_CPUS__={possible_cpus()}" in flags
    assert f"-DLINUX_VERSION_CODE={linux_version_code()}" in flags
    assert "-Wno-unused-value" in flags and "-Wno-pointer-sign" in flags
    includes = [f for f in flags if f.startswith("-I")]
    assert Path(includes[-1][2:], "uapi", "linux", "bpf.h").is_file()
    assert flags[-1] == "-DEXTRA=1"


def test_flags_define_the_target_arch_as_libbpf_bootstrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """bpf_tracing.h's PT_REGS macros need __TARGET_ARCH_<arch>: defined from the machine, before
    the user's flags, and not when they define one themselves."""
    monkeypatch.setattr(compile_mod.platform, "machine", lambda: "x86_64")
    flags = compile_flags()
    assert "-D__TARGET_ARCH_x86" in flags
    assert flags.index("-D__TARGET_ARCH_x86") < flags.index(next(f for f in flags if f.startswith("-I")))
    for own in (["-D__TARGET_ARCH_arm64"], ["-D", "__TARGET_ARCH_arm64"]):
        flags = compile_flags(own)
        assert not [f for f in flags if f.startswith("-D__TARGET_ARCH_x86")] and flags[-len(own):] == own
    assert "-D__TARGET_ARCH_x86" in compile_flags(["-DTARGET=1", "-D", "X"])  # other defines do not count
    monkeypatch.setattr(compile_mod.platform, "machine", lambda: "vax")
    assert not [f for f in compile_flags() if "__TARGET_ARCH_" in f]


@pytest.mark.parametrize(("machine", "arch"), [
    ("x86_64", "x86"), ("i686", "x86"), ("aarch64", "arm64"), ("armv7l", "arm"), ("s390x", "s390"),
    ("ppc64le", "powerpc"), ("mips64", "mips"), ("riscv64", "riscv"), ("loongarch64", "loongarch"),
    ("sparc64", "sparc"), ("vax", None),
])
def test_target_arch_names_the_kernels_architecture(machine: str, arch: str | None) -> None:
    assert target_arch(machine) == arch


@pytest.mark.parametrize(("release", "code"), [
    ("6.18.44-fc-v657", (6 << 16) + (18 << 8) + 44),
    ("4.7.0", 0x040700),
    ("5.4.300-lts", (5 << 16) + (4 << 8) + 255),
    ("6.1", 0x060100),
])
def test_linux_version_code(release: str, code: int) -> None:
    assert linux_version_code(release) == code


def test_linux_version_code_rejects_garbage() -> None:
    with pytest.raises(ObjectError) as info:
        linux_version_code("unknown")
    assert info.value.code == "EB012"


@pytest.mark.parametrize(("text", "count"), [("0-1\n", 2), ("0", 1), ("0-3,8-11", 8), ("0,2,4-5", 4)])
def test_possible_cpus(tmp_path: Path, text: str, count: int) -> None:
    (tmp_path / "possible").write_text(text)
    assert possible_cpus(tmp_path / "possible") == count


def test_parse_depfile() -> None:
    text = ("/tmp/x.o: /src/prog.c /usr/include/linux/bpf.h \\\n"
            "  /src/dir\\ with\\ blanks/h.h /src/cost$$.h \\\n  rel/other.h\n")
    assert parse_depfile(text) == ["/src/prog.c", "/usr/include/linux/bpf.h",
                                   "/src/dir with blanks/h.h", "/src/cost$.h", "rel/other.h"]
    assert parse_depfile("") == []


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "evspec" / "bpf"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/is/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "evspec" / "bpf"


# -- compiling -------------------------------------------------------------------------------


def test_compiles_with_perfs_macros(clang: str, source: Path, tmp_path: Path) -> None:
    obj = compile_source(source, cache_dir=tmp_path / "cache")
    assert obj.name == "prog.o"
    assert _return_value(obj) == 40 + possible_cpus()
    assert read_object(obj).kernel_version == linux_version_code()


def test_cache_hit_does_not_run_clang(clang: str, source: Path, tmp_path: Path,
                                      calls: ClangCalls) -> None:
    cache = tmp_path / "cache"
    first = compile_source(source, cache_dir=cache)
    assert len(calls.compiles) == 1
    assert "-MD" in calls.compiles[0]
    second = compile_source(source, cache_dir=cache)
    assert second == first
    assert len(calls.compiles) == 1
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert not [p for p in cache.rglob("*") if p.name.startswith(".tmp-")]


def test_changed_source_flags_or_header_miss(clang: str, source: Path, tmp_path: Path,
                                             calls: ClangCalls) -> None:
    cache = tmp_path / "cache"
    first = compile_source(source, cache_dir=cache)
    (source.parent / "shared.h").write_text("#define ANSWER 41\n")
    after_header = compile_source(source, cache_dir=cache)
    assert len(calls.compiles) == 2 and after_header != first
    assert _return_value(after_header) == 41 + possible_cpus()
    with_flag = compile_source(source, cache_dir=cache, extra_flags=["-DUNUSED=1"])
    assert len(calls.compiles) == 3 and with_flag != after_header
    source.write_text(PROGRAM + "\n/* edited */\n")
    compile_source(source, cache_dir=cache)
    assert len(calls.compiles) == 4
    # going back to the first source and header finds the first object again, without clang
    (source.parent / "shared.h").write_text("#define ANSWER 40\n")
    source.write_text(PROGRAM)
    assert compile_source(source, cache_dir=cache) == first
    assert len(calls.compiles) == 4


def test_world_writable_cache_is_refused(clang: str, source: Path, tmp_path: Path,
                                         calls: ClangCalls, caplog: pytest.LogCaptureFixture) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    assert "writable by group or others (mode 0777)" in (cache_refusal(cache) or "")
    with caplog.at_level(logging.WARNING, logger="evspec.loader.object.clang"):
        first = compile_source(source, cache_dir=cache)
        second = compile_source(source, cache_dir=cache)
    assert len(calls.compiles) == 2  # no cache: clang ran twice
    assert cache not in first.parents and first != second
    assert stat.S_IMODE(first.parent.stat().st_mode) == 0o700
    assert list(cache.iterdir()) == []
    assert "WB001" in caplog.text and "mode 0777" in caplog.text
    assert _return_value(first) == 40 + possible_cpus()


def test_an_object_made_without_the_cache_goes_when_the_process_ends(clang: str, source: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    code = ("import sys; from pathlib import Path; from evspec.loader.object.clang import compile_source; "
            "obj = compile_source(Path(sys.argv[1]), cache_dir=Path(sys.argv[2])); print(obj); "
            "assert obj.exists()")
    proc = subprocess.run([sys.executable, "-c", code, str(source), str(cache)], capture_output=True, text=True,
                          check=False, cwd=tmp_path)  # (not the checkout, whose evspec/ would shadow the install)
    assert proc.returncode == 0, proc.stderr
    made = Path(proc.stdout.strip())
    assert made.name == source.stem + ".o" and made.parent.name.startswith("evspec-bpf-")
    assert not made.parent.exists()


def test_cache_owned_by_another_user_is_refused(clang: str, source: Path, tmp_path: Path,
                                                calls: ClangCalls) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("CI runs as root: only root can give a directory to another user")
        pytest.skip("only root can give a directory to another user")
    os.chown(cache, 54321, 54321)
    assert "owned by uid 54321" in (cache_refusal(cache) or "")
    obj = compile_source(source, cache_dir=cache)
    assert cache not in obj.parents and len(calls.compiles) == 1


def test_symlinked_or_file_cache_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    assert "symbolic link" in (cache_refusal(link) or "")
    plain = tmp_path / "file"
    plain.write_text("")
    assert "not a directory" in (cache_refusal(plain) or "")
    assert cache_refusal(real) is None


def test_planted_object_is_not_used(clang: str, source: Path, tmp_path: Path, calls: ClangCalls) -> None:
    cache = tmp_path / "cache"
    first = compile_source(source, cache_dir=cache)
    first.chmod(0o666)  # an object others could have rewritten is not trusted
    again = compile_source(source, cache_dir=cache)
    assert len(calls.compiles) == 2
    assert again == first and stat.S_IMODE(again.stat().st_mode) & 0o022 == 0


def test_clang_error_keeps_its_messages(clang: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.c"
    bad.write_text("int prog(void *ctx) { return undefined_thing; }\n")
    with pytest.raises(ObjectError) as info:
        compile_source(bad, cache_dir=tmp_path / "cache")
    err = info.value
    assert err.code == "EB012"
    assert "undefined_thing" in (err.detail or "")
    assert "clang failed (exit 1)" in err.message and "error" in err.message
    assert err.perf_message == f"Failed to load {bad} from source: Error when compiling BPF scriptlet"


def test_missing_clang_and_source(tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ObjectError) as info:
        compile_source(source, clang=str(tmp_path / "no-clang"), cache_dir=tmp_path / "cache")
    assert info.value.code == "EB013"
    monkeypatch.setenv("EVSPEC_CLANG", "no-such-clang-anywhere")
    with pytest.raises(ObjectError) as info:
        compile_source(source, cache_dir=tmp_path / "cache")
    assert info.value.code == "EB013" and "no-such-clang-anywhere" in info.value.message
    with pytest.raises(ObjectError) as info:
        compile_source(tmp_path / "absent.c", cache_dir=tmp_path / "cache")
    assert info.value.code == "EB001"


def test_evspec_clang_is_used(clang: str, source: Path, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch, calls: ClangCalls) -> None:
    wrapper = tmp_path / "my-clang"
    wrapper.write_text(f'#!/bin/sh\nexec {clang} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("EVSPEC_CLANG", str(wrapper))
    compile_source(source, cache_dir=tmp_path / "cache")
    assert calls.compiles[0][0] == str(wrapper)
