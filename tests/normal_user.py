"""Running ``python -m evspec`` as a normal user (``nobody``) from a test that runs as root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NOBODY = 65534


def run_as_normal_user(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``evspec ARGV`` in ``cwd`` as ``nobody`` (as the user running the tests when not root),
    with a minimal environment whose HOME is ``cwd``."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.fail("setpriv (util-linux) is needed to drop root for this test")
        prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "LANG": "C.UTF-8"}
    return subprocess.run([*prefix, sys.executable, "-m", "evspec", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)
