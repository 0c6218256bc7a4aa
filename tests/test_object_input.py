"""The BPF objects and sources a user names are read with bounded cost: only regular files, of at
most MAX_INPUT_BYTES (256 MiB), a special file refused before it is opened for reading (a FIFO
would block, /dev/zero never ends) and a huge file before a byte of it is read. Every command
that reads one says so and exits as the README says: inspect and verify, whose operand the
object is, with 2 (the user's input error); check and record, where an event string names it,
with an error finding on the path (1). Never a hang, a traceback or exit 3."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.object import clang as compile_module
from evspec.loader.object import input_file
from evspec.loader.object.clang import compile_source
from evspec.loader.object.input_file import MAX_INPUT_BYTES, read_input
from evspec.loader.object.reader import read_object

TIMEOUT = 60  # seconds: a command that blocks on a FIFO fails the test instead of hanging it


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A folder of what is not a BPF object: a FIFO, a link to /dev/zero, a sparse file one byte
    over the limit, a text file, each under a .o and a .c name."""
    for suffix in (".o", ".c"):
        os.mkfifo(tmp_path / f"fifo{suffix}")
        (tmp_path / f"zero{suffix}").symlink_to("/dev/zero")
        with open(tmp_path / f"big{suffix}", "wb") as f:
            f.truncate(MAX_INPUT_BYTES + 1)
        (tmp_path / f"text{suffix}").write_text("root:x:0:0:root:/root:/bin/bash\n")
    return tmp_path


def _code(path: Path) -> str:
    with pytest.raises(ObjectError) as info:
        read_object(path)
    return info.value.code


def test_special_files_are_refused_by_kind(hostile: Path, tmp_path: Path) -> None:
    with pytest.raises(ObjectError) as info:
        read_object(hostile / "fifo.o")
    assert info.value.code == "EB141"
    assert info.value.message == f"{hostile}/fifo.o: is a FIFO (named pipe), not a regular file: a BPF object is " \
                                 "read only from one"
    with pytest.raises(ObjectError) as info:
        read_object(hostile / "zero.o")
    assert info.value.code == "EB141" and "is a character device" in info.value.message
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "sock.o"))
        assert _code(tmp_path / "sock.o") == "EB141"
    finally:
        sock.close()
    (tmp_path / "dir.o").mkdir()
    assert _code(tmp_path / "dir.o") == "EB001"


def test_a_file_over_the_limit_is_refused_before_it_is_read(hostile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_read(*_args: object) -> bytes:
        raise AssertionError("the file was read")

    monkeypatch.setattr(input_file.os, "read", no_read)
    with pytest.raises(ObjectError) as info:
        read_object(hostile / "big.o")
    assert info.value.code == "EB170"
    assert info.value.message == (f"{hostile}/big.o: is {MAX_INPUT_BYTES + 1} bytes: evspec reads a BPF object of "
                                  f"at most {MAX_INPUT_BYTES} bytes (256 MiB, MAX_INPUT_BYTES)")
    assert MAX_INPUT_BYTES == 256 << 20


def test_a_file_holding_more_than_its_size_says_is_cut_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """/proc files say they are empty: the limit holds while reading, not only by the size."""
    monkeypatch.setattr(input_file, "MAX_INPUT_BYTES", 64)
    with pytest.raises(ObjectError) as info:
        read_input("/proc/self/maps")
    assert info.value.code == "EB170" and "holds more bytes than its size said" in info.value.message


def test_a_file_at_the_limit_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(input_file, "MAX_INPUT_BYTES", 64)
    (tmp_path / "ok.o").write_bytes(b"x" * 64)
    assert read_input(tmp_path / "ok.o") == b"x" * 64
    (tmp_path / "over.o").write_bytes(b"x" * 65)
    with pytest.raises(ObjectError):
        read_input(tmp_path / "over.o")


@pytest.mark.parametrize("name", ["fifo.c", "zero.c", "big.c"])
def test_sources_are_bounded_before_clang_runs(hostile: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_clang(argv: object) -> object:
        raise AssertionError("clang ran")

    monkeypatch.setattr(compile_module, "_run_clang", no_clang)
    with pytest.raises(ObjectError) as info:
        compile_source(hostile / name)
    assert info.value.code in ("EB141", "EB170")
    assert "BPF source" in info.value.message and info.value.message.startswith(f"{hostile}/{name}: ")


def _evspec(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evspec", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)


# what each file is refused as: its code, and words of the message
KINDS = {
    "fifo": ("EB141", "is a FIFO (named pipe), not a regular file"),
    "zero": ("EB141", "is a character device, not a regular file"),
    "big": ("EB170", f"at most {MAX_INPUT_BYTES} bytes (256 MiB, MAX_INPUT_BYTES)"),
    "text": ("EB002", "not an ELF object file"),
    "missing": ("EB001", "no such file"),
}


@pytest.mark.parametrize(("kind", "suffix"), [(k, s) for k in sorted(KINDS) for s in (".o", ".c")
                                               if (k, s) != ("text", ".c")])  # a source clang refuses: below
def test_inspect_refuses_with_exit_2(hostile: Path, kind: str, suffix: str) -> None:
    proc = _evspec(hostile, "inspect", f"{kind}{suffix}")
    code, words = KINDS[kind]
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"evspec inspect: error[{code}]: {kind}{suffix}: ") and words in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_verify_refuses_with_exit_2(root_kernel: None, hostile: Path, kind: str) -> None:
    proc = _evspec(hostile, "verify", f"{kind}.o")
    code, words = KINDS[kind]
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"evspec verify: error[{code}]: {kind}.o: ") and words in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_source_clang_refuses_is_an_input_error_of_inspect(hostile: Path) -> None:
    proc = _evspec(hostile, "inspect", "text.c")
    assert proc.returncode == 2 and proc.stderr.startswith("evspec inspect: error[EB012]: text.c: clang failed")


@pytest.mark.parametrize("kind", ["fifo", "zero", "big"])
def test_check_reports_a_finding_on_the_path(hostile: Path, kind: str) -> None:
    proc = _evspec(hostile, "check", "--system", "live", "--format", "json", "-e", f"./{kind}.o")
    assert proc.returncode == 1, proc.stderr
    (diag,) = json.loads(proc.stdout)["diagnostics"]
    assert diag["code"] == KINDS[kind][0] and diag["span"] == {"start": 0, "end": len(kind) + 4}


@pytest.mark.parametrize("kind", ["fifo", "big"])
def test_record_stops_at_the_check(root_kernel: None, hostile: Path, kind: str) -> None:
    proc = _evspec(hostile, "record", "-e", f"./{kind}.o", "--", "true")
    assert proc.returncode == 1, proc.stderr
    assert f"error[{KINDS[kind][0]}]" in proc.stderr and "Traceback" not in proc.stderr
