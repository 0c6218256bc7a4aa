"""`evspec record` checks each object, then loads it: the object's ELF is read (parsed) once."""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

import pytest
from evspec.loader.object import elf as elf_reader
from evspec.loader.object import reader
from evspec.loader.session import RecordOptions, RecordSession

from evspec.cli.record import _check
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
    lists = _check(argparse.Namespace(events=["./maps.o"], verbose=False), system, err)
    assert lists is not None, err.getvalue()
    assert len(reads) == 1, "the check did not read the object"
    session = RecordSession(options=RecordOptions(pid=os.getpid()))
    try:
        session.prepare(lists, system, Path.cwd(), None)  # type: ignore[arg-type]
        assert [Path(o.path).resolve() for o in session.objects] == [target]
    finally:
        session.close()
    assert len(reads) == 1, f"maps.o was read {len(reads)} times: {reads}"
