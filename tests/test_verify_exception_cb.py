"""An exception callback (``btf_decl_tag("exception_callback:NAME")``) appended to its program as
libbpf 1.8 appends it (tests/data/verify/exception_cb.c), against bpftool 7.8 (libbpf 1.8) on the
same object: the program loads with the callback's instructions (xlated sizes equal), and a
callback the object lacks fails that program alone with libbpf's ENOENT. Before, evspec loaded
the program again without its func/line info after the kernel's EINVAL, silently: another
program than libbpf's."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import oracle
from libbpf_section_table import load_with_bpftool
from test_verify_isolation import _verify

DATA = Path(__file__).parent / "data" / "verify"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    clang = oracle("clang-21")
    work = tmp_path_factory.mktemp("exception_cb")  # below /tmp, which the sid chroot shares
    shutil.copyfile(DATA / "exception_cb.c", work / "exception_cb.c")
    out = {}
    for name, flags in (("global", ()), ("static", ("-DSTATIC_CB",))):
        out[name] = work / f"{name}.o"
        subprocess.run([clang, "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", *flags, "-c",
                        str(work / "exception_cb.c"), "-o", str(out[name])], check=True, capture_output=True)
    return out


def _bpftool_xlated(built: Path, work: Path) -> dict[str, int]:
    """Per program, bpftool 7.8's xlated size in instructions after ``prog loadall``."""
    bpftool = oracle("bpftool-sid")
    pins = work / "bpffs"
    pins.mkdir(exist_ok=True)
    script = ('mount -t bpf bpf "$0" || exit 1; "$1" prog loadall "$2" "$0/p" || exit 1; '
              'for p in "$0"/p/*; do echo "== ${p##*/}"; "$1" prog show pinned "$p"; done')
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(pins), bpftool,
                           str(built)], capture_output=True, text=True, check=True)
    found = re.findall(r"^== (\S+)\n.*?xlated (\d+)B", proc.stdout, re.M | re.S)
    return {name: int(size) // 8 for name, size in found}


def test_the_callback_is_appended_as_libbpf_appends_it(built: dict[str, Path], root_kernel: None,
                                                       tmp_path: Path) -> None:
    status, doc = _verify(built["global"])
    ours = {p["name"]: p for p in doc["programs"]}
    assert status == 0, ours
    theirs = _bpftool_xlated(built["global"], tmp_path)
    assert {n: p["xlated"] for n, p in ours.items()} == theirs
    assert ours["with_cb"]["insns"] > 6  # the program's own instructions and the callback's


def test_a_missing_callback_fails_its_program_with_libbpfs_enoent(built: dict[str, Path], root_kernel: None,
                                                                   tmp_path: Path) -> None:
    status, doc = _verify(built["static"])
    ours: dict[str, Any] = {p["name"]: p for p in doc["programs"]}
    assert status == 1
    assert (ours["with_cb"]["loaded"], ours["with_cb"]["errno"]) == (False, "ENOENT")
    assert "its exception callback 'exception_cb' is no function of the object" in ours["with_cb"]["error"]
    assert ours["plain"]["loaded"]
    said = load_with_bpftool(oracle("bpftool-sid"), {"static": built["static"]}, tmp_path)["static"]
    assert any("cannot find exception callback 'exception_cb'" in line for line in said), said
