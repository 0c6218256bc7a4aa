"""``evspec inspect``: the report names the user's file (not the compile cache's object) and lists
the global variables ``var:`` terms set, with their C types, where they live and the values the
object gives them (zero in .bss), in text and JSON (golden files under tests/golden/inspect)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from bpf_build import BPF_FLAGS, require_tools
from corpus_files import DATA
from evspec.loader.lint.terms.variables import apply_var_terms
from evspec.loader.object.inspect import global_entries, inspect_report
from evspec.loader.object.reader import read_object
from golden_files import check_golden

from evspec.cli import main
from evspec.parser import parse

SOURCE = DATA / "inspect" / "globals.c"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    require_tools("clang")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "src").mkdir()
    shutil.copy(SOURCE, tmp_path / "src" / "globals.c")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _inspect(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    status = main(["inspect", *argv])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return captured.out


def test_text_report_of_a_source(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _inspect(capsys, "src/globals.c")
    assert text.startswith("src/globals.c: license GPL  btf\n")  # not ~/.cache/evspec/bpf/<key>/globals.o
    assert str(work / "cache") not in text
    check_golden("inspect/globals.txt", text)


def test_json_report_of_a_source(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(_inspect(capsys, "--format", "json", "src/globals.c"))
    assert report["path"] == "src/globals.c"
    values = {g["name"]: (g["type"], g["section"], g["value"]) for g in report["globals"]}
    assert values == {
        "targ_pid": ("unsigned int", ".rodata", 42), "delta": ("signed char", ".rodata", -5),
        "targ_failed": ("_Bool", ".rodata", True), "mode": ("enum mode", ".rodata", "MODE_COUNT"),
        "targ_comm": ("char[16]", ".rodata", "bash"), "limits": ("struct limits", ".rodata", {"low": -1, "high": 100}),
        "ratio": ("double", ".data", 0.25), "seed": ("unsigned int", ".data", 7),
        "calls": ("unsigned long long", ".bss", 0), "where": ("int *", ".bss", "0x0"),
    }
    check_golden("inspect/globals.json", json.dumps(report, indent=2) + "\n")


def test_the_values_are_the_objects_own(work: Path) -> None:
    """What var: terms write is what the report then shows: the values come from the data maps."""
    obj = work / "globals.o"
    subprocess.run(["clang", *BPF_FLAGS, "-c", str(work / "src" / "globals.c"), "-o", str(obj)], check=True)
    spec = read_object(obj)
    event = parse(f"{obj}/var:targ_pid=7,var:targ_failed=0,var:targ_comm='zsh',var:calls=3/").events()[0]
    changed = {g["name"]: g["value"] for g in global_entries(apply_var_terms(event, spec))}  # type: ignore[arg-type]
    assert (changed["targ_pid"], changed["targ_failed"], changed["targ_comm"], changed["calls"]) == (7, False, "zsh", 3)
    assert {g["name"]: g["value"] for g in global_entries(spec)}["targ_pid"] == 42


def test_an_object_without_btf_lists_no_globals(work: Path) -> None:
    obj = work / "nobtf.o"
    flags = [f for f in BPF_FLAGS if f != "-g"]
    subprocess.run(["clang", *flags, "-c", str(work / "src" / "globals.c"), "-o", str(obj)], check=True)
    report = inspect_report(read_object(obj))
    assert report["btf"] is False and report["globals"] == []
