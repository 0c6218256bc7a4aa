"""What evspec loads on purpose differently from libbpf 1.x is said, never silent (COMPAT 16): a
legacy SEC("maps") object (libbpf 1.0+ refuses it: tests/data/verify/bpftool_sid.json holds what
libbpf 1.8 said) and SEC("?...") programs get a note, WB160, in check and record (a note: never a
failing finding, whatever --fail-on says), and in inspect's report (verify's: tests/test_verify.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bpf_build import build_bpf, require_tools
from corpus_files import CORPUS, DATA
from evspec.loader.lint.libbpf_differences import LIBBPF_LEGACY_MAPS, libbpf_differences
from evspec.loader.object.inspect import inspect_report, inspect_text
from evspec.loader.object.reader import read_object
from record_cli import run_record

from evspec.cli import main

LEGACY_NOTE = ('legacy SEC("maps") map definitions (channel, chan1, arr, arr64, arr8, arr3, hmap): libbpf 1.0 and '
               f'later refuse this object ("{LIBBPF_LEGACY_MAPS}"); evspec reads them as perf 4.x did')


def test_libbpf_said_what_the_note_quotes() -> None:
    said = json.loads((DATA / "verify" / "bpftool_sid.json").read_text())["legacy_maps"]
    assert said["status"] != 0 and f"libbpf: {LIBBPF_LEGACY_MAPS}" in said["lines"]


def test_legacy_maps_and_autoload_off_are_noted(bpf_fixtures: Path, tmp_path: Path) -> None:
    assert libbpf_differences(read_object(bpf_fixtures / "legacy_maps.o")) == [LEGACY_NOTE]
    assert libbpf_differences(read_object(bpf_fixtures / "maps.o")) == []  # the same maps in .maps
    require_tools("clang")
    shutil.copy(DATA / "ringbuf" / "autoload.c", tmp_path / "autoload.c")
    spec = read_object(build_bpf(tmp_path, "autoload.c", "autoload.o"))
    assert libbpf_differences(spec) == [
        'program off: SEC("?tracepoint/syscalls/sys_enter_getppid") has autoload off, so libbpf loads it only '
        "when asked to; evspec loads it (the verifier checks it) and attaches nothing"]


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["check", "--system", str(CORPUS / "system.json"), *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_check_notes_a_legacy_object_without_failing(bpf_fixtures: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(bpf_fixtures)
    status, out, _ = _check(capsys, "--format", "json", "-e", "./legacy_maps.o/map:arr.value[1]=5/")
    assert status == 0  # --fail-on warning (the default) fails on warnings, not on notes
    doc = json.loads(out)
    assert doc["diagnostics"] == [{**doc["diagnostics"][0], "code": "WB160", "severity": "note",
                                   "message": LEGACY_NOTE, "span": {"start": 0, "end": 15}}]
    assert doc["summary"] == {"errors": 0, "warnings": 0, "notes": 1}
    status, _, err = _check(capsys, "-e", "./legacy_maps.o")
    assert status == 0
    assert err.startswith(f"note[WB160]: {LEGACY_NOTE}\n --> -e #1, col 1\n")
    assert err.endswith("0 errors, 0 warnings, 1 note\n")
    status, out, _ = _check(capsys, "--format", "github", "-e", "./legacy_maps.o")
    assert status == 0 and out.startswith("::notice title=WB160::")
    status, out, _ = _check(capsys, "--format", "sarif", "-e", "./legacy_maps.o")
    assert json.loads(out)["runs"][0]["results"][0]["level"] == "note"
    status, out, _ = _check(capsys, "--format", "json", "-e", "./maps.o")
    assert status == 0 and json.loads(out) == {"diagnostics": [], "summary": {"errors": 0, "warnings": 0}}


def test_a_note_goes_with_the_objects_findings(bpf_fixtures: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """In span order (the note is on the path): the error still fails the check, the note does not."""
    monkeypatch.chdir(bpf_fixtures)
    status, out, _ = _check(capsys, "--format", "json", "-e", "./legacy_maps.o/map:nosuch.value=1/")
    assert status == 1
    assert [(d["code"], d["severity"]) for d in json.loads(out)["diagnostics"]] == [("WB160", "note"),
                                                                                      ("EB123", "error")]
    assert json.loads(out)["summary"] == {"errors": 1, "warnings": 0, "notes": 1}


def test_inspect_notes_it(bpf_fixtures: Path) -> None:
    report = inspect_report(read_object(bpf_fixtures / "legacy_maps.o"))
    assert report["notes"] == [LEGACY_NOTE]
    assert inspect_text(report).endswith(f"\nnote: {LEGACY_NOTE}\n")
    assert inspect_report(read_object(bpf_fixtures / "maps.o"))["notes"] == []


def test_record_prints_the_note(root_kernel: None, bpf_fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(bpf_fixtures)
    status, _, err = run_record("-e", "./legacy_maps.o", "--", "true")
    assert status == 0, err
    assert err.startswith(f"note[WB160]: {LEGACY_NOTE}\n")
