"""`evspec check` and `evspec inspect` need no privileges: run them as `nobody` (when the tests run
as root) against a snapshot of this machine and the built fixtures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

NOBODY = 65534


@pytest.fixture
def public_dir(bpf_fixtures: Path) -> Iterator[Path]:
    """A folder `nobody` can read, with copies of some fixture objects."""
    d = Path(tempfile.mkdtemp(prefix="evspec-unpriv-"))
    d.chmod(0o755)
    for name in ("maps.o", "legacy_maps.o", "stdout1.o"):
        shutil.copy(bpf_fixtures / name, d / name)
        (d / name).chmod(0o644)
    try:
        yield d
    finally:
        shutil.rmtree(d)


def _as_normal_user(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.fail("setpriv (util-linux) is needed to drop root for this test")
        prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "LANG": "C.UTF-8"}
    return subprocess.run([*prefix, sys.executable, "-m", "evspec", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)


def test_inspect_as_a_normal_user(public_dir: Path) -> None:
    proc = _as_normal_user(["inspect", "--format", "json", "legacy_maps.o"], public_dir)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert {m["name"] for m in report["maps"]} >= {"channel", "arr", "hmap"}
    assert all(m["legacy"] for m in report["maps"] if m["name"] == "arr")


def test_check_against_a_snapshot_as_a_normal_user(public_dir: Path) -> None:
    from evspec.system import snapshot
    from evspec.system.fixtures import corpus_system

    snap = public_dir / "machine.json"
    snap.write_text(json.dumps(snapshot(corpus_system())))
    snap.chmod(0o644)
    good = "./maps.o/map:arr.value[0,3...6]=1234/,sched:sched_switch,breakpoint/config=3,config1=0x1000,config2=8/"
    proc = _as_normal_user(["check", "--system", str(snap), "-e", good], public_dir)
    assert proc.returncode == 0, proc.stderr
    proc = _as_normal_user(["check", "--system", str(snap), "--format", "json",
                            "-e", "./maps.o/map:arr.value[ 8]=5/"], public_dir)
    assert proc.returncode == 1, proc.stderr
    (d,) = json.loads(proc.stdout)["diagnostics"]
    assert d["perf_message"] == "Index too large" and d["span"] == {"start": 24, "end": 25}


def test_check_live_as_a_normal_user(public_dir: Path) -> None:
    """tracefs is root's (mode 700): a normal user's live check says what it cannot tell instead of
    failing (no internal error), and the rest of the check still runs."""
    proc = _as_normal_user(["check", "--system", "live", "--fail-on", "error", "--format", "json",
                            "-e", "./maps.o/map:arr.value[0]=1/,cpu-clock"], public_dir)
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr
    codes = {d["code"] for d in json.loads(proc.stdout)["diagnostics"]}
    assert codes <= {"WB143", "WM001", "WM002"}, codes
    proc = _as_normal_user(["check", "--system", "live", "-e", "./maps.o/map:nosuch.value=1/"], public_dir)
    assert proc.returncode == 1 and "map 'nosuch' not in the object" in proc.stderr, proc.stderr
