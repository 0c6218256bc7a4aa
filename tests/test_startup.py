"""What a cold `evspec check` of event strings imports: nothing heavy, nothing it does not use.

Cold start is a stated target (bench/parse_bench.py (b): at most 5x `python3 -c pass`); these
tests keep the modules that would break it off the path, without timing anything. Each run is a
fresh interpreter outside the source tree, so the installed package is what is measured.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Never on the syntax-only path: what they would cost a cold start, roughly, on the dev machine.
HEAVY = {
    "lark": "the grammar's tables are committed; Lark is only the generator and the Earley oracle (40-80 ms)",
    "elftools": "BPF objects are read only with --system",
    "pyroute2": "network interfaces are looked up only by record (300 ms)",
    "evspec.loader": "the BPF side is imported only for BPF events with a system",
    "ctypes": "syscalls are made only by the kernel layer",
}
# Not on the path of a string without findings either.
AVOIDABLE = {
    "evspec.record_cmd": "the record sub-command's parser is built only for record",
    "evspec.system": "--system none needs no machine model",
    "evspec.compiler": "--system none needs no semantic checks",
    "importlib.resources": "package data is read through the package's loader (20 ms of imports)",
    "typing": "annotations need no typing at run time (2-3 ms)",
    "hashlib": "nothing is hashed",
    "shutil": "the CLI sizes argparse's help itself; shutil brings bz2, lzma and zlib",
}


def _modules_after(argv: list[str], tmp_path: Path) -> tuple[int, set[str]]:
    code = (
        "import sys\n"
        "from evspec.cli import main\n"
        f"status = main({argv!r})\n"
        "sys.stdout.write('\\n'.join(sorted(sys.modules)) + '\\n')\n"
        "sys.stdout.write(f'status={status}')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True, capture_output=True,
                         text=True, env={**os.environ, "NO_COLOR": "1"}).stdout
    *modules, status = out.splitlines()
    return int(status.removeprefix("status=")), set(modules)


def _loaded(modules: set[str], top: str) -> list[str]:
    return sorted(m for m in modules if m == top or m.startswith(top + "."))


def test_check_of_a_valid_string_imports_only_what_it_needs(tmp_path: Path) -> None:
    status, modules = _modules_after(["check", "-e", "cycles:u"], tmp_path)
    assert status == 0
    assert "evspec.parser_lalr" in modules, "the import log did not cover the parser"
    for top, why in {**HEAVY, **AVOIDABLE}.items():
        assert not _loaded(modules, top), f"{top} imported by 'evspec check -e cycles:u': {why}"


@pytest.mark.parametrize("event", ["cycles:x", "{cycles,", "./x.o/map:m.value[1...0]=1/", "cpu/event=1/,,"])
def test_check_with_findings_stays_light(tmp_path: Path, event: str) -> None:
    status, modules = _modules_after(["check", "-e", event], tmp_path)
    assert status == 1
    for top, why in HEAVY.items():
        assert not _loaded(modules, top), f"{top} imported by 'evspec check -e {event}': {why}"


def test_parse_and_fmt_do_not_import_lark(tmp_path: Path) -> None:
    for argv in (["parse", "-e", "cycles:u,{a,b}:S"], ["fmt", "-e", "cycles:u"]):
        status, modules = _modules_after(argv, tmp_path)
        assert status == 0
        assert not _loaded(modules, "lark") and not _loaded(modules, "evspec.loader"), argv


def test_help_still_lists_every_command(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "evspec", "-h"], cwd=tmp_path, check=True,
                         capture_output=True, text=True).stdout
    for name in ("parse", "check", "fmt", "explain", "compile", "list", "system", "record", "inspect"):
        assert f"\n    {name} " in out, name
    wrong = subprocess.run([sys.executable, "-m", "evspec", "chek"], cwd=tmp_path, capture_output=True, text=True)
    assert wrong.returncode == 2 and "'record'" in wrong.stderr and "'check'" in wrong.stderr


@pytest.mark.parametrize("columns", ["50", "200", "", "junk", "-3"])
def test_help_is_sized_as_argparse_would(monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    import argparse

    from evspec.cli import _HelpFormatter

    monkeypatch.setenv("COLUMNS", columns)
    assert _HelpFormatter("evspec")._width == argparse.HelpFormatter("evspec")._width
