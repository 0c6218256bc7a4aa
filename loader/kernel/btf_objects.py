"""The kernel's BTF objects, an operation group of ``Kernel`` like ``maps`` and ``programs``:
their ids (``BPF_BTF_GET_NEXT_ID``), a descriptor on one (``BPF_BTF_GET_FD_BY_ID``), what it is
and its bytes (``BPF_OBJ_GET_INFO_BY_FD`` into a ``struct bpf_btf_info``); and the module BTFs
among them, opened as libbpf's ``load_module_btfs`` opens them (``open_module_btfs``), for the
kfuncs and typed ksyms that live in modules (``externs.module_ksyms``).
"""

from __future__ import annotations

import ctypes
import errno as E
from collections.abc import Iterator

from evspec.loader.abi import bpf as abi
from evspec.loader.btf.reader import BtfError
from evspec.loader.btf.target import TargetBtf
from evspec.loader.externs.module_ksyms import ModuleBtf
from evspec.loader.kernel.base import KernelBase
from evspec.loader.kernel.errors import KernelError

from evspec.codes import kernel as codes
from evspec.span import Slotted

NAME_LEN = 64  # the name buffer libbpf gives; a module's name is at most 56 bytes (MODULE_NAME_LEN)
VMLINUX = "vmlinux"


class BtfInfo(ctypes.Structure):
    """``struct bpf_btf_info`` (include/uapi/linux/bpf.h), 8-byte aligned."""

    _fields_ = [
        ("btf", abi.u64),
        ("btf_size", abi.u32),
        ("id", abi.u32),
        ("name", abi.u64),
        ("name_len", abi.u32),
        ("kernel_btf", abi.u32),
    ]


class BtfDescription(Slotted):
    """A BTF object as BPF_OBJ_GET_INFO_BY_FD describes it."""

    id: int
    name: str  # "vmlinux", a module's name; "" for a BTF a program loaded
    kernel_btf: bool  # the kernel's own (vmlinux's or a module's)
    size: int  # of its raw bytes


class BtfObjectOperations(KernelBase):
    def btf_ids(self) -> Iterator[int]:
        """The ids of the kernel's BTF objects, in order."""
        return self._next_ids(abi.Cmd.BTF_GET_NEXT_ID)

    def btf_fd_by_id(self, btf_id: int) -> int | None:
        """A descriptor on BTF object ``btf_id``; None when it is gone (its module unloaded)."""
        try:
            attr = abi.GetNextIdAttr(start_id=btf_id)  # the union's btf_id
            return self._bpf(abi.Cmd.BTF_GET_FD_BY_ID, attr, f"BTF object {btf_id}")
        except KernelError as exc:
            if exc.errno == E.ENOENT:
                return None
            raise

    def describe_btf(self, fd: int) -> BtfDescription:
        name = ctypes.create_string_buffer(NAME_LEN)
        info = BtfInfo(name=ctypes.addressof(name), name_len=NAME_LEN)
        self._info(fd, info, f"BTF fd {fd}")
        text = name.value.decode("utf-8", "replace")
        return BtfDescription(info.id, text, bool(info.kernel_btf), info.btf_size)

    def btf_data(self, fd: int, size: int) -> bytes:
        """The raw bytes of the BTF object of ``fd``, ``size`` of them (``describe_btf``)."""
        buf = ctypes.create_string_buffer(max(size, 1))
        info = BtfInfo(btf=ctypes.addressof(buf), btf_size=size)
        self._info(fd, info, f"BTF fd {fd}")
        if info.btf_size != size:
            raise KernelError(codes.SYSCALL_FAILED, f"BPF_OBJ_GET_INFO_BY_FD for BTF fd {fd}: the kernel has "
                              f"{info.btf_size} bytes of BTF, not the {size} it said before",
                              operation="BPF_OBJ_GET_INFO_BY_FD")
        return buf.raw[:size]


def open_module_btfs(kernel: BtfObjectOperations, vmlinux: TargetBtf) -> tuple[ModuleBtf, ...]:
    """Every module BTF of the kernel, in the order of its BTF object ids, each with a
    descriptor open on it (the caller closes them) and its types split on ``vmlinux``'s, as
    libbpf's load_module_btfs: a BTF gone meanwhile (its module unloaded) is skipped, BTFs that
    are not the kernel's and vmlinux's own are closed again, and a process that may not list BTF
    objects (EPERM) has no module BTFs. ``KernelError`` or ``BtfError`` (naming the module) for
    anything else; the descriptors opened so far are closed then."""
    out: list[ModuleBtf] = []
    ids = kernel.btf_ids()
    try:
        while True:
            try:
                btf_id = next(ids)
            except StopIteration:
                break
            except KernelError as exc:
                if exc.errno == E.EPERM:  # libbpf goes on without (more) module BTFs
                    return tuple(out)
                raise
            fd = kernel.btf_fd_by_id(btf_id)
            if fd is None:
                continue
            try:
                module = _module(kernel, btf_id, fd, vmlinux)
            except BaseException:
                kernel.close(fd)
                raise
            if module is None:
                kernel.close(fd)
            else:
                out.append(module)
    except BaseException:
        kernel.close_all(m.fd for m in out)
        raise
    return tuple(out)


def _module(kernel: BtfObjectOperations, btf_id: int, fd: int, vmlinux: TargetBtf) -> ModuleBtf | None:
    """The module BTF of ``fd``; None when it is a program's BTF or vmlinux's."""
    about = kernel.describe_btf(fd)
    if not about.kernel_btf or about.name == VMLINUX:
        return None
    data = kernel.btf_data(fd, about.size)
    try:
        target = TargetBtf(data, f"module {about.name}", base=vmlinux)
    except BtfError as exc:
        raise BtfError(f"the BTF of module {about.name} (BTF object {btf_id}): {exc}") from None
    return ModuleBtf(about.name, btf_id, fd, target)
