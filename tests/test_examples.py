"""The bundled examples the README runs: they must keep working."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _evspec(*argv: str) -> subprocess.CompletedProcess[str]:
    # run outside the source tree, so that `evspec` is the installed package
    return subprocess.run([sys.executable, "-m", "evspec", *argv], cwd="/", capture_output=True, text=True,
                          check=False)


def test_example_event_file_is_valid_and_canonical() -> None:
    proc = _evspec("check", "--fail-on", "error", str(EXAMPLES / "events.events"))
    assert proc.returncode == 0, proc.stderr
    proc = _evspec("fmt", "--check", str(EXAMPLES / "events.events"))
    assert proc.returncode == 0, proc.stdout


@pytest.mark.usefixtures("root_kernel")
def test_hello_example_records_the_seed_output(tmp_path: Path) -> None:
    if subprocess.run(["which", "clang"], capture_output=True).returncode != 0:
        pytest.fail("clang is needed for the .c example (scripts/test.sh installs it)")
    proc = _evspec("record", "--format", "json", "-e", str(EXAMPLES / "hello.c"), "--", "sleep", "0.05")
    assert proc.returncode == 0, proc.stderr
    records = [r for r in map(json.loads, proc.stdout.splitlines()) if "raw_hex" in r]  # not the summary
    assert records, proc.stderr
    assert {r["event"] for r in records} == {"__bpf_stdout__"}
    assert {r["string"] for r in records} == {"Raise a BPF event!"}
    assert all(r["comm"] == "sleep" for r in records)
