"""``evspec record`` as a normal user: what it cannot do is said in words that name the privilege
missing (tracefs is root's, mode 0700 on Debian; loading needs CAP_BPF, attaching CAP_PERFMON),
with exit status 2, never a traceback."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from bpf_build import build_bpf, copy_sources, libc_path, require_tools
from normal_user import public_temp_dir, run_as_normal_user

DATA = Path(__file__).parent / "data" / "unprivileged"
TRACEFS = Path("/sys/kernel/tracing")


@pytest.fixture(scope="module")
def public_dir() -> Iterator[Path]:
    """A folder `nobody` can enter, with the two objects built in it."""
    require_tools("clang")
    d = public_temp_dir("evspec-record-unpriv-")
    copy_sources(DATA, ("tracepoint.c", "uprobe.c"), d)
    build_bpf(d, "tracepoint.c", "tracepoint.o")
    build_bpf(d, "uprobe.c", "uprobe.o", f'-DLIBC="{libc_path()}"')
    for f in d.iterdir():
        f.chmod(0o644)
    try:
        yield d
    finally:
        for f in d.iterdir():
            f.unlink()
        d.rmdir()


def _tracefs_hidden() -> bool:
    """Whether tracefs is closed to others here (Debian mounts it mode 0700)."""
    return TRACEFS.is_dir() and not TRACEFS.stat().st_mode & 0o005


@pytest.mark.parametrize("obj", ["tracepoint.o", "uprobe.o"])
def test_record_says_which_privilege_is_missing(public_dir: Path, obj: str) -> None:
    if os.geteuid() == 0:
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True, check=False)
    proc = run_as_normal_user(["record", "-e", f"./{obj}", "--", "true"], public_dir)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert "CAP_BPF" in proc.stderr and "help: run evspec" in proc.stderr, proc.stderr
    if obj == "tracepoint.o" and _tracefs_hidden():
        assert re.search(r"program 'on_getppid': cannot look up tracepoint 'syscalls:sys_enter_getppid': "
                         r"tracefs cannot be read by this user \(/sys/kernel/tracing is mode 0700, owned by "
                         r"root; this process runs as uid \d+\); it also lacks CAP_BPF and CAP_PERFMON",
                         proc.stderr), proc.stderr
