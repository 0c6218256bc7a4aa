"""Held-out real-world BPF objects: the CO-RE objects that Debian's ``libbpf-tools`` package (bcc's
libbpf-tools, built by Debian against bcc's own ``vmlinux.h`` of another kernel) embeds in its
tools as libbpf skeletons. Nobody here wrote them; they are extracted at test time from the
installed binaries and never committed.

A missing package skips outside CI and fails in CI (scripts/test.sh installs it).
"""

from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

import pytest

PACKAGE = "libbpf-tools"
EM_BPF = 247
_ELF64_LE = b"\x7fELF\x02\x01"


def tool_binaries() -> list[Path]:
    """The package's tools (symlinked aliases such as ``ext4dist`` left out), sorted by name."""
    proc = subprocess.run(["dpkg", "-L", PACKAGE], capture_output=True, text=True)
    if proc.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Debian package {PACKAGE} is required in CI (scripts/test.sh installs it)")
        pytest.skip(f"the Debian package {PACKAGE} is not installed")
    paths = [Path(line) for line in proc.stdout.splitlines() if line.startswith("/usr/sbin/")]
    return sorted((p for p in paths if p.is_file() and not p.is_symlink()), key=lambda p: p.name)


def embedded_objects(data: bytes) -> list[bytes]:
    """Every little-endian ELF64 BPF object inside ``data``, cut at the end of its section headers
    (a skeleton embeds the object's bytes verbatim, and the section header table ends it)."""
    found: list[bytes] = []
    at = data.find(_ELF64_LE)
    while at >= 0:
        if at + 64 <= len(data) and struct.unpack_from("<H", data, at + 18)[0] == EM_BPF:
            (shoff,) = struct.unpack_from("<Q", data, at + 40)
            shentsize, shnum = struct.unpack_from("<HH", data, at + 58)
            end = at + shoff + shentsize * shnum
            if shnum and end <= len(data):
                found.append(data[at:end])
        at = data.find(_ELF64_LE, at + 1)
    return found


def extract_objects(out: Path) -> dict[str, Path]:
    """Writes each tool's embedded object to ``out/TOOL.bpf.o`` (``TOOL-N.bpf.o`` for a second one);
    returns them by that stem."""
    out.mkdir(parents=True, exist_ok=True)
    objects: dict[str, Path] = {}
    for tool in tool_binaries():
        for index, blob in enumerate(embedded_objects(tool.read_bytes())):
            stem = tool.name if index == 0 else f"{tool.name}-{index}"
            path = out / f"{stem}.bpf.o"
            path.write_bytes(blob)
            objects[stem] = path
    if not objects:
        pytest.fail(f"no BPF object found in the tools of {PACKAGE}")
    return objects
