"""`evspec check` and `evspec inspect` need no privileges: run them as `nobody` (when the tests run
as root) against a snapshot of this machine and the built fixtures.

`nobody` cannot reach a checkout (or its virtual environment) inside a directory other users
cannot enter (under root's home, a `mktemp -d` folder): the tests give it a world-readable copy of
the installed package and what it imports, under a world-readable temporary directory, run by an
interpreter `nobody` can use."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from normal_user import NOBODY, copy_installed, interpreter, public_temp_dir


@pytest.fixture(scope="module")
def installed_copy() -> Iterator[Path]:
    """The installed evspec (its loader and grammar, wherever the installation put them: a wheel
    nests them, an editable install maps them from the checkout) and its third-party imports,
    copied where `nobody` can read them."""
    site = copy_installed()
    try:
        yield site
    finally:
        shutil.rmtree(site)


@pytest.fixture
def public_dir(bpf_fixtures: Path) -> Iterator[Path]:
    """A folder `nobody` can read, with copies of some fixture objects."""
    d = public_temp_dir("evspec-unpriv-")
    for name in ("maps.o", "legacy_maps.o", "stdout1.o"):
        shutil.copy(bpf_fixtures / name, d / name)
        (d / name).chmod(0o644)
    try:
        yield d
    finally:
        shutil.rmtree(d)


@pytest.fixture
def as_normal_user(installed_copy: Path):  # type: ignore[no-untyped-def]
    """``run(ARGS, cwd)``: ``python -s ARGS`` as `nobody` (when the tests run as root), importing
    the world-readable copy."""
    python = interpreter()
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.fail("setpriv (util-linux) is needed to drop root for this test")
        prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]

    def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "LANG": "C.UTF-8",
               "PYTHONPATH": str(installed_copy), "PYTHONDONTWRITEBYTECODE": "1"}
        return subprocess.run([*prefix, python, "-s", *args], cwd=cwd, env=env, capture_output=True, text=True,
                              check=False)

    return run


def test_the_copy_is_what_runs(as_normal_user, public_dir: Path, installed_copy: Path) -> None:  # type: ignore[no-untyped-def]
    proc = as_normal_user(["-c", "import os, evspec.loader.object.reader as r; print(os.getuid(), r.__file__)"],
                          public_dir)
    assert proc.returncode == 0, proc.stderr
    uid, where = proc.stdout.split()
    assert where.startswith(f"{installed_copy}/evspec/loader/object/")
    assert int(uid) == (NOBODY if os.geteuid() == 0 else os.geteuid())


def test_inspect_as_a_normal_user(as_normal_user, public_dir: Path) -> None:  # type: ignore[no-untyped-def]
    proc = as_normal_user(["-m", "evspec", "inspect", "--format", "json", "legacy_maps.o"], public_dir)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert {m["name"] for m in report["maps"]} >= {"channel", "arr", "hmap"}
    assert all(m["legacy"] for m in report["maps"] if m["name"] == "arr")


def test_check_against_a_snapshot_as_a_normal_user(as_normal_user, public_dir: Path) -> None:  # type: ignore[no-untyped-def]
    from evspec.system import snapshot
    from evspec.system.fixtures import corpus_system

    snap = public_dir / "machine.json"
    snap.write_text(json.dumps(snapshot(corpus_system())))
    snap.chmod(0o644)
    good = "./maps.o/map:arr.value[0,3...6]=1234/,sched:sched_switch,breakpoint/config=3,config1=0x1000,config2=8/"
    proc = as_normal_user(["-m", "evspec", "check", "--system", str(snap), "-e", good], public_dir)
    assert proc.returncode == 0, proc.stderr
    proc = as_normal_user(["-m", "evspec", "check", "--system", str(snap), "--format", "json",
                            "-e", "./maps.o/map:arr.value[ 8]=5/"], public_dir)
    assert proc.returncode == 1, proc.stderr
    (d,) = json.loads(proc.stdout)["diagnostics"]
    assert d["perf_message"] == "Index too large" and d["span"] == {"start": 24, "end": 25}


def test_check_live_as_a_normal_user(as_normal_user, public_dir: Path) -> None:  # type: ignore[no-untyped-def]
    """tracefs is root's (mode 700): a normal user's live check says what it cannot tell instead of
    failing (no internal error), and the rest of the check still runs."""
    proc = as_normal_user(["-m", "evspec", "check", "--system", "live", "--fail-on", "error", "--format", "json",
                            "-e", "./maps.o/map:arr.value[0]=1/,cpu-clock"], public_dir)
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr
    codes = {d["code"] for d in json.loads(proc.stdout)["diagnostics"]}
    assert codes <= {"WB143", "WM001", "WM002"}, codes
    proc = as_normal_user(["-m", "evspec", "check", "--system", "live", "-e", "./maps.o/map:nosuch.value=1/"], public_dir)
    assert proc.returncode == 1 and "map 'nosuch' not in the object" in proc.stderr, proc.stderr
