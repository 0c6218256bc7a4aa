"""Running evspec as a normal user (``nobody``) from a test that runs as root.

``nobody`` cannot reach a checkout (or its virtual environment) inside a directory other users
cannot enter (under root's home, a ``mktemp -d`` folder): it is given a world-readable copy of the
installed package and what it imports, under a world-readable temporary directory, run by an
interpreter ``nobody`` can use."""

from __future__ import annotations

import atexit
import functools
import importlib.util
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

NOBODY = 65534
# what the commands run as nobody import, besides the standard library
PACKAGES = ("evspec", "evspec.loader", "evspec.grammar", "elftools", "lark")


def world_usable(path: str) -> bool:
    """Whether another user can reach ``path`` (every directory above it searchable by others)
    and read it (and run it, for a file that is executable)."""
    real = os.path.realpath(path)
    parts = Path(real).parents
    if not all(os.stat(d).st_mode & stat.S_IXOTH for d in parts):
        return False
    mode = os.stat(real).st_mode
    return bool(mode & stat.S_IROTH) and (not mode & stat.S_IXUSR or bool(mode & stat.S_IXOTH))


def public_temp_dir(prefix: str) -> Path:
    """A new directory that other users can read, in the first temporary place they can reach."""
    for parent in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
        if os.path.isdir(parent) and world_usable(parent):
            d = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
            d.chmod(0o755)
            return d
    pytest.fail("no temporary directory that other users can enter (TMPDIR, /tmp, /var/tmp, /dev/shm)")


@functools.lru_cache(maxsize=1)
def interpreter() -> str:
    """A Python (3.10 or later) that `nobody` can run with its standard library: this one's base
    interpreter when others can reach it, else the system's."""
    for candidate in (getattr(sys, "_base_executable", sys.executable), "/usr/bin/python3", "/usr/local/bin/python3"):
        if not os.path.exists(candidate) or not world_usable(candidate):
            continue
        probe = subprocess.run([candidate, "-c", "import sys; print(sys.version_info >= (3, 10), sys.prefix)"],
                               capture_output=True, text=True, check=False)
        ok, _, prefix = probe.stdout.strip().partition(" ")
        if probe.returncode == 0 and ok == "True" and world_usable(prefix):
            return candidate
    pytest.fail("no Python 3.10+ interpreter that other users can run (this one's lives where they cannot enter)")


def copy_installed() -> Path:
    """The installed evspec (its loader and grammar, wherever the installation put them: a wheel
    nests them, an editable install maps them from the checkout) and its third-party imports,
    copied where `nobody` can read them. The caller removes the copy."""
    site = public_temp_dir("evspec-site-")
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            shutil.rmtree(site)
            pytest.fail(f"{name} is not installed as a package")
        dest = site.joinpath(*name.split("."))
        if not dest.exists():  # a wheel's evspec/ holds loader/ and grammar/ already
            shutil.copytree(list(spec.submodule_search_locations)[0], dest,
                            ignore=shutil.ignore_patterns("__pycache__"))
    for p in site.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return site


@functools.lru_cache(maxsize=1)
def shared_copy() -> Path:
    """One world-readable copy for the whole test run, removed when it ends."""
    site = copy_installed()
    atexit.register(shutil.rmtree, site, True)
    return site


def run_as_normal_user(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``evspec ARGV`` in ``cwd`` as ``nobody`` (as the user running the tests when not root),
    with a minimal environment whose HOME is ``cwd``, importing the world-readable copy."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.fail("setpriv (util-linux) is needed to drop root for this test")
        prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "LANG": "C.UTF-8",
           "PYTHONPATH": str(shared_copy()), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([*prefix, interpreter(), "-s", "-m", "evspec", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)
