"""Test runners in C built with the sid chroot's clang 21 against its libbpf (1.7), the way the
tests that compare with libbpf build them: the source and tests/data/include copied below ``out``
(which must be below /tmp, the folder the chroot shares with the host), then linked with -lbpf."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

INCLUDE = Path(__file__).parent / "data" / "include"


def build_runner(clang: str, source: Path, out: Path) -> Path:
    """``out/NAME`` from ``source`` (``NAME.c``); ``clang`` is scripts/oracles.sh's ``clang-21``."""
    shutil.copyfile(source, out / source.name)
    shutil.copytree(INCLUDE, out / "include", dirs_exist_ok=True)
    binary = out / source.stem
    proc = subprocess.run([clang, "-O1", "-Wall", "-Werror", "-I", str(out / "include"), "-o", str(binary),
                           str(out / source.name), "-lbpf"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building {source.name} failed:\n{proc.stderr}")
    return binary
