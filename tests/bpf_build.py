"""Building the tests' C fixtures: BPF objects with clang as perf built them, workloads with cc.

A missing tool skips the test outside CI and fails it in CI (where scripts/test.sh installs them).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest

INCLUDE = Path(__file__).parent / "data" / "include"  # headers the fixtures share (workload.h)
BPF_FLAGS = ("-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", f"-I{INCLUDE}")


def require_tools(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            if os.environ.get("CI") == "true":
                pytest.fail(f"{tool} is required in CI")
            pytest.skip(f"{tool} not installed")


def copy_sources(folder: Path, names: Iterable[str], out: Path) -> None:
    for name in names:
        shutil.copy(folder / name, out / name)


def build_bpf(out: Path, source: str, obj: str, *flags: str) -> Path:
    """``clang -target bpf -O2 -g ... -c SOURCE -o OBJ`` in ``out``."""
    subprocess.run(["clang", *BPF_FLAGS, *flags, "-c", source, "-o", obj], cwd=out, check=True)
    return out / obj


def build_program(out: Path, source: str, program: str) -> Path:
    """A host workload: ``cc -O1 -o PROGRAM SOURCE`` in ``out``."""
    subprocess.run(["cc", "-O1", "-o", program, source], cwd=out, check=True)
    return out / program


def libc_path() -> str:
    """The real path of the C library the machine's programs run with (``ldd /bin/true``)."""
    ldd = subprocess.run(["ldd", "/bin/true"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"libc\.so\.6 => (\S+)", ldd)
    if found is None:
        raise RuntimeError(f"no libc.so.6 in ldd's answer: {ldd}")
    return os.path.realpath(found.group(1))
