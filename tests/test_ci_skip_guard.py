"""The CI skip guard (tests/ci_skip_guard.py): a skip fails a CI run and is named; outside CI it
stays a skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _run(tmp_path: Path, ci: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_some.py").write_text(
        "import pytest\n\n"
        "def test_skips():\n    pytest.skip('no such tool')\n\n"
        "def test_passes():\n    assert True\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"
    env["PYTHONPATH"] = str(TESTS)
    pytest_bin = Path(sys.executable).with_name("pytest")
    return subprocess.run([str(pytest_bin), "-q", "-p", "no:cacheprovider", "-p", "ci_skip_guard",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_some.py")],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)


def test_a_skip_fails_a_ci_run_and_is_listed(tmp_path: Path) -> None:
    proc = _run(tmp_path, ci=True)
    assert proc.returncode == 1, proc.stdout
    assert "1 test(s) skipped in CI, where nothing may skip" in proc.stdout
    assert "SKIPPED IN CI test_some.py::test_skips: Skipped: no such tool" in proc.stdout


def test_outside_ci_a_skip_is_a_skip(tmp_path: Path) -> None:
    proc = _run(tmp_path, ci=False)
    assert proc.returncode == 0, proc.stdout
    assert "1 passed, 1 skipped" in proc.stdout and "SKIPPED IN CI" not in proc.stdout
