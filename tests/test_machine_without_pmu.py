"""The live tests on a machine of this kind with one PMU fewer.

Machines of this kind differ in their PMUs (some have ``power``, some do not), and tests that
compare evspec with perf on the live machine must hold on all of them. This test makes such a
machine out of this one: in a private mount namespace, ``/sys/bus/event_source/devices`` is
replaced by a folder of links to every PMU but one (``power`` where there is one, else ``msr``), so
that perf, evspec and tracefs-reading code all see a machine without it, and the live
differential tests run again there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DEVICES = Path("/sys/bus/event_source/devices")
TESTS = Path(__file__).resolve().parent
# the tests whose expectations come from the live machine
LIVE_TESTS = (
    "test_perf_stat_diff.py::test_against_live_perf",
    "test_dialect_live.py",
    "test_dialect_live_releases.py::test_a_sample_follows_the_machine",
    "test_semantic_corpus.py::test_snapshot_of_this_machine_gives_the_same_verdicts",
    "test_system_live.py",
)


def _hidden_pmu() -> str:
    for name in ("power", "msr"):
        if (DEVICES / name).exists():
            return name
    pytest.fail(f"neither a power nor an msr PMU in {DEVICES}: nothing to hide on this machine")


def test_live_tests_hold_without_a_pmu(root_kernel: None, perf_binary: str, tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed to make a machine without a PMU")
    hidden = _hidden_pmu()
    devices = tmp_path / "devices"
    devices.mkdir()
    for pmu in DEVICES.iterdir():
        if pmu.name != hidden:
            (devices / pmu.name).symlink_to(pmu.resolve())
    pytest_bin = Path(sys.executable).with_name("pytest")  # the console script: the installed evspec
    inner = [str(pytest_bin), "-q", "-p", "no:cacheprovider", "--rootdir", str(TESTS.parent),
             *(str(TESTS / t) for t in LIVE_TESTS)]
    script = f'mount --bind "$1" {DEVICES} && shift && test ! -e {DEVICES}/{hidden} && exec "$@"'
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(devices), *inner],
        capture_output=True, text=True, timeout=900, cwd=tmp_path,
    )
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
    assert proc.returncode == 0, f"without the {hidden} PMU:\n{tail}"
    assert " passed" in proc.stdout and " skipped" not in proc.stdout, tail
    assert (DEVICES / hidden).exists(), "the PMU must still be there outside the namespace"
