"""``--perf installed``: which emulated release the perf on PATH is, from ``perf --version``.

perf prints ``perf version 7.2.13`` (``6.12.95``, ``7.3.0-rc7``, ``6.1.192``); the release is its
first two numbers. A perf evspec does not emulate, or none at all, is a ``ReleaseError`` naming
what was found and the releases evspec knows.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from evspec.dialect.versions import VERSIONS

_VERSION_LINE = re.compile(r"perf version (\d+)\.(\d+)(\S*)")


class ReleaseError(Exception):
    """The installed perf cannot be emulated (missing, unreadable, or a release evspec lacks)."""


def release_of(version_output: str) -> str:
    """The emulated release ``perf --version`` printed, e.g. ``7.3`` for ``perf version 7.3.0-rc7``."""
    m = _VERSION_LINE.search(version_output)
    if m is None:
        raise ReleaseError(f"cannot read a release from 'perf --version': {version_output.strip()[:200]!r}")
    release = f"{m.group(1)}.{m.group(2)}"
    if release not in VERSIONS:
        raise ReleaseError(
            f"the installed perf is {m.group(1)}.{m.group(2)}{m.group(3)}, a release evspec does not emulate "
            f"(known: {', '.join(VERSIONS)}); name one of those with --perf"
        )
    return release


def installed_release(perf: str = "perf") -> str:
    """The release of ``perf`` (a command on PATH, or a path)."""
    found = shutil.which(perf)
    if found is None:
        raise ReleaseError(f"--perf installed: no '{perf}' on PATH (known releases: {', '.join(VERSIONS)})")
    try:
        proc = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30, errors="replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ReleaseError(f"--perf installed: cannot run '{found} --version': {exc}") from None
    if proc.returncode != 0:
        raise ReleaseError(
            f"--perf installed: '{found} --version' exited with {proc.returncode}: {proc.stderr.strip()[:200]}"
        )
    return release_of(proc.stdout)
