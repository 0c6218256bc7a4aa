"""Held-out real-world BPF objects: the CO-RE objects that Debian's ``libbpf-tools`` packages (bcc's
libbpf-tools, built by Debian against bcc's own ``vmlinux.h`` of another kernel) embed in their
tools as libbpf skeletons. Nobody here wrote them; they are extracted at test time from the
installed binaries and never committed.

Two packages: bookworm's (bcc 0.26, installed on the host: ``extract_objects``) and sid's (bcc 0.37,
built with today's clang and libbpf, in the chroot that scripts/oracles.sh makes:
``extract_sid_objects``). A missing package skips outside CI and fails in CI (scripts/test.sh and
scripts/oracles.sh install them).
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


#: where scripts/oracles.sh makes the sid chroot, whose libbpf-tools 0.37 names its tools TOOL-libbpf
SID_SBIN = Path(os.environ.get("EVSPEC_ORACLES", "/var/cache/evspec/oracles")) / "sid" / "usr" / "sbin"
SID_SUFFIX = "-libbpf"


def _missing(what: str, how: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required in CI ({how} installs it)")
    pytest.skip(f"{what} is not installed")


def tool_binaries() -> list[Path]:
    """The package's tools (symlinked aliases such as ``ext4dist`` left out), sorted by name."""
    proc = subprocess.run(["dpkg", "-L", PACKAGE], capture_output=True, text=True)
    if proc.returncode != 0:
        _missing(f"the Debian package {PACKAGE}", "scripts/test.sh")
    paths = [Path(line) for line in proc.stdout.splitlines() if line.startswith("/usr/sbin/")]
    return sorted((p for p in paths if p.is_file() and not p.is_symlink()), key=lambda p: p.name)


def sid_tool_paths(sbin: Path = SID_SBIN) -> list[Path]:
    """Every tool name of sid's package, aliases (symlinks such as ``ext4dist-libbpf``) included,
    sorted by name."""
    paths = sorted(sbin.glob(f"*{SID_SUFFIX}"), key=lambda p: p.name)
    if not paths:
        _missing(f"sid's {PACKAGE} (in {sbin})", "scripts/oracles.sh")
    return paths


def sid_tool_binaries(sbin: Path = SID_SBIN) -> list[Path]:
    """sid's tools that are files of their own (aliases left out), sorted by name."""
    return [p for p in sid_tool_paths(sbin) if not p.is_symlink()]


def tool_stem(path: Path) -> str:
    """``execsnoop`` for sid's ``execsnoop-libbpf`` and bookworm's ``execsnoop``."""
    return path.name.removesuffix(SID_SUFFIX)


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


def extract_objects(out: Path, binaries: list[Path] | None = None) -> dict[str, Path]:
    """Writes each tool's embedded object to ``out/TOOL.bpf.o`` (``TOOL-N.bpf.o`` for a second one);
    returns them by that stem. The tools are bookworm's unless ``binaries`` names others."""
    out.mkdir(parents=True, exist_ok=True)
    objects: dict[str, Path] = {}
    for tool in tool_binaries() if binaries is None else binaries:
        for index, blob in enumerate(embedded_objects(tool.read_bytes())):
            stem = tool_stem(tool) if index == 0 else f"{tool_stem(tool)}-{index}"
            path = out / f"{stem}.bpf.o"
            path.write_bytes(blob)
            objects[stem] = path
    if not objects:
        pytest.fail(f"no BPF object found in the tools of {PACKAGE}")
    return objects


def extract_sid_objects(out: Path, sbin: Path = SID_SBIN) -> dict[str, Path]:
    """The objects of sid's libbpf-tools 0.37, as ``out/TOOL.bpf.o`` by tool stem (``execsnoop``)."""
    return extract_objects(out, sid_tool_binaries(sbin))
