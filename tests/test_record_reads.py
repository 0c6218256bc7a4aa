"""`evspec record` checks each object, then loads it: the object's ELF is read (parsed) once."""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

import pytest
from bpf_build import build_bpf, copy_sources, require_tools
from corpus_files import DATA
from evspec.loader.object import elf as elf_reader
from evspec.loader.object import reader
from evspec.loader.session import RecordOptions, RecordSession

from evspec.cli.record import _check
from evspec.compiler.recording import recording_plan
from evspec.system import load_system


def test_an_object_checked_then_loaded_is_read_once(
    bpf_fixtures: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """record_main's two stages on one object: ``_check`` (the object check) and
    ``RecordSession.prepare`` (read_bpf_object, then the load); the ELF reader runs once."""
    monkeypatch.chdir(bpf_fixtures)  # _check reads objects relative to the working directory
    target = (bpf_fixtures / "maps.o").resolve()
    reads: list[str] = []
    real_init = elf_reader.BpfElf.__init__

    def counting_init(self: elf_reader.BpfElf, path: str, data: bytes) -> None:
        # the lowest level: every reading of an object's bytes builds one BpfElf
        if Path(path).resolve() == target:
            reads.append(path)
        real_init(self, path, data)

    monkeypatch.setattr(elf_reader.BpfElf, "__init__", counting_init)
    reader.read_object_bytes.cache_clear()  # an earlier test may have read maps.o already

    system = load_system("live")
    err = io.StringIO()
    lists = _check(argparse.Namespace(events=["./maps.o"], verbose=False, clang_opts=[]), system, err, inherit=True)
    assert lists is not None, err.getvalue()
    assert len(reads) == 1, "the check did not read the object"
    session = RecordSession(options=RecordOptions(pid=os.getpid()))
    try:
        session.prepare(lists, recording_plan(lists, system), system, Path.cwd(), None)  # type: ignore[arg-type]
        assert [Path(o.path).resolve() for o in session.objects] == [target]
    finally:
        session.close()
    assert len(reads) == 1, f"maps.o was read {len(reads)} times: {reads}"


def _warning_codes(text: str) -> set[str]:
    return {line.split("[", 1)[1].split("]", 1)[0] for line in text.splitlines() if line.startswith("warning[")}


@pytest.mark.parametrize(("inherit", "verbose", "shown"), [
    (True, False, {"WS002", "WB133"}),
    (False, False, {"WS002"}),  # -a, -C, -p, -i: the events will not inherit
    (False, True, {"WS002"}),
])
def test_record_prints_the_checks_warnings_that_concern_the_run(
    bpf_fixtures: Path, monkeypatch: pytest.MonkeyPatch, inherit: bool, verbose: bool, shown: set[str]
) -> None:
    """Warnings of the check stage are printed without -v too: a term given twice (WS002), and an
    inheriting event put into a map (WB133) only when the events will inherit."""
    monkeypatch.chdir(bpf_fixtures)
    err = io.StringIO()
    events = ["cpu-clock/period=10000,period=20000/", "bpf-output/name=evt/", "./maps.o/map:chan1.event=evt/"]
    lists = _check(argparse.Namespace(events=events, verbose=verbose, clang_opts=[]), load_system("live"), err,
                   inherit=inherit)
    assert lists is not None, err.getvalue()
    assert _warning_codes(err.getvalue()) == shown


@pytest.mark.parametrize(("verbose", "shown"), [(False, set()), (True, {"WB002"})])
def test_a_poisoned_relocation_is_said_only_with_v(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  verbose: bool, shown: set[str]) -> None:
    """libbpf substitutes an unresolvable CO-RE relocation without a word (the verifier refuses
    the program if it is reached); record says it with -v."""
    require_tools("clang")
    copy_sources(DATA / "core", ("kernel_poisoned.c",), tmp_path)
    build_bpf(tmp_path, "kernel_poisoned.c", "kernel_poisoned.o")
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    lists = _check(argparse.Namespace(events=["./kernel_poisoned.o"], verbose=verbose, clang_opts=[]), load_system("live"),
                   err, inherit=True)
    assert lists is not None, err.getvalue()
    assert _warning_codes(err.getvalue()) == shown
