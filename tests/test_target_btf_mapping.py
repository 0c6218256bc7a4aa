"""How the target BTF is read: the kernel's mapped once per process (sysfs serves a read 4 KB a
call), any other file read; a kernel that refuses the mapping is read instead."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import pytest
from evspec.loader.btf import target as target_btf
from evspec.loader.btf.reader import BtfError
from evspec.loader.btf.target import KERNEL_BTF, TargetBtf, kernel_blob


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_the_kernel_btf_is_mapped_once() -> None:
    if not os.path.isfile(KERNEL_BTF):
        pytest.skip(f"the kernel has no BTF ({KERNEL_BTF})")
    first = kernel_blob(KERNEL_BTF)
    before = _fds()
    again = TargetBtf.running_kernel()
    assert kernel_blob(KERNEL_BTF) is first
    assert _fds() == before, "a second look at the kernel's BTF opened a descriptor it kept"
    if isinstance(first, mmap.mmap):  # 6.16 and later
        assert again.btf.type(again.named("task_struct")[0]).name == "task_struct"
    assert bytes(first[:4]) == Path(KERNEL_BTF).read_bytes()[:4]


def test_other_files_are_read(tmp_path: Path) -> None:
    blob = tmp_path / "vmlinux"
    blob.write_bytes(b"not btf")
    before = _fds()
    assert kernel_blob(blob) == b"not btf"
    assert _fds() == before
    with pytest.raises(BtfError, match="cannot read the target BTF .*missing"):
        kernel_blob(tmp_path / "missing")


@pytest.fixture
def sysfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory standing in for /sys/kernel/btf, with a small ``vmlinux``; nothing mapped yet."""
    stand_in = tmp_path / "btf"
    stand_in.mkdir()
    (stand_in / "vmlinux").write_bytes(b"\x9f\xeb" + bytes(30))
    monkeypatch.setattr(target_btf, "_SYSFS_BTF", f"{stand_in}/")
    monkeypatch.setattr(target_btf, "_MAPPED", {})
    return stand_in


def test_a_kernel_that_refuses_the_mapping_is_read(sysfs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> mmap.mmap:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(mmap, "mmap", refuse)
    before = _fds()
    assert kernel_blob(sysfs / "vmlinux") == b"\x9f\xeb" + bytes(30)
    assert _fds() == before and target_btf._MAPPED == {}


def test_a_mapped_stand_in_is_kept(sysfs: Path) -> None:
    mapped = kernel_blob(sysfs / "vmlinux")
    assert isinstance(mapped, mmap.mmap) and mapped[:] == b"\x9f\xeb" + bytes(30)
    assert kernel_blob(sysfs / "vmlinux") is mapped
    mapped.close()
