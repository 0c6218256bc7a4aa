"""docs/api.md's examples run as written, and the public API stays what it documents: every name
``evspec`` exports is in the documentation's table, and importing ``evspec`` imports none of them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bpf_build import require_tools

import evspec

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "api.md"
DATA = Path(__file__).parent / "data"


def _blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", DOC.read_text(encoding="utf-8"), flags=re.M | re.S)


def test_the_documentation_has_examples() -> None:
    assert len(_blocks()) >= 6


def test_the_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_tools("clang")  # read_object compiles a .c example
    shutil.copy(DATA / "systems" / "intel.json", tmp_path / "intel.json")
    shutil.copy(DATA / "inspect" / "globals.c", tmp_path / "globals.c")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for number, block in enumerate(_blocks(), start=1):
        try:
            exec(compile(block, f"docs/api.md block {number}", "exec"), namespace)  # noqa: S102
        except Exception as exc:
            raise AssertionError(f"docs/api.md block {number} fails: {exc!r}\n{block}") from exc


def test_every_export_is_documented_and_resolves() -> None:
    text = DOC.read_text(encoding="utf-8")
    for name in evspec.__all__:
        if name == "__version__":
            continue
        assert f"`{name}" in text, f"evspec.{name} is not in docs/api.md"
        assert getattr(evspec, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        evspec.nothing  # noqa: B018


def test_check_strings_is_not_shadowed_by_the_check_module() -> None:
    import evspec.check

    assert callable(evspec.check_strings) and evspec.check_strings("cycles")[0].diagnostics == ()


def test_importing_evspec_imports_none_of_its_api(tmp_path: Path) -> None:
    code = "import sys, evspec\nprint('\\n'.join(m for m in sys.modules if m.startswith('evspec')))"
    loaded = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True, capture_output=True,
                            text=True).stdout.split()
    assert loaded == ["evspec"]
