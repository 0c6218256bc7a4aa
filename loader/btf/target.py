"""The BTF that CO-RE relocations are resolved against: the running kernel's
(``/sys/kernel/btf/vmlinux``), one saved with a system snapshot, or a ``--btf FILE``.

A kernel's BTF holds some 126k types; a CO-RE load needs a handful of them. Opening one needs to
know where each record starts (the records have variable length) and which types bear a name;
that index (``name_index``) is made by one walk over the types and, for a blob as large as a
kernel's, kept in the user's cache for the next run. Candidates are then found by name in the
index, so only the types a relocation reaches are ever decoded.

The running kernel's modules have BTF of their own (``/sys/kernel/btf/MOD``), split on vmlinux's.
As libbpf does, CO-RE looks there only for a type vmlinux has no candidate for: the module BTFs
are read then, once, and parsed on top of vmlinux's (``TargetBtf.modules``). A ``--btf FILE`` or
a snapshot's BTF comes without modules, as libbpf searches none when vmlinux's BTF is overridden.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterable

from evspec.loader.btf import name_index
from evspec.loader.btf.reader import Btf, BtfError, BtfKind

KERNEL_BTF = "/sys/kernel/btf/vmlinux"  # a str: pathlib costs a cold start 3-5 ms (urllib, ipaddress)
_SYSFS_BTF = "/sys/kernel/btf/"


def essential_name(name: str) -> str:
    """``name`` without its flavour: what follows the last ``___`` that has no underscore on
    either side (``task_struct___mine`` -> ``task_struct``; libbpf's bpf_core_essential_name_len)."""
    for i in range(len(name) - 5, -1, -1):
        if name[i] != "_" and name[i + 1:i + 4] == "___" and name[i + 4] != "_":
            return name[:i + 1]
    return name


_MAPPED: dict[str, mmap.mmap] = {}  # the kernel's BTFs mapped so far, by path: one mapping per process


def kernel_blob(path: str | os.PathLike[str]) -> bytes | mmap.mmap:
    """The kernel's BTF, mapped read-only where the kernel allows it (6.16 and later), else read.

    Read, a sysfs file comes 4 KB a call (1,400 calls for vmlinux) into 5 MB of fresh memory, 5-10 ms
    of every run; mapped, only the pages a lookup touches are. The kernel's BTF does not change while
    it runs, so a process maps each file once and keeps it (and the descriptor the mapping holds)
    until it exits. Other files (a test's stand-in for sysfs) are read."""
    where = os.fspath(path)
    mapped = _MAPPED.get(where)
    if mapped is not None:
        return mapped
    try:
        fd = os.open(where, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise BtfError(f"cannot read the target BTF {path}: {exc.strerror or exc}") from None
    try:
        if where.startswith(_SYSFS_BTF):
            try:
                mapped = _MAPPED[where] = mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
                return mapped
            except (OSError, ValueError):  # an older kernel: EACCES or ENODEV
                pass
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    except OSError as exc:
        raise BtfError(f"cannot read the target BTF {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


ModuleBlobs = Callable[[], Iterable[tuple[str, bytes]]]  # (module name, its split BTF blob), in order


def read_module_blobs(directory: str | os.PathLike[str]) -> list[tuple[str, bytes]]:
    """The module BTFs of a directory laid out like ``/sys/kernel/btf`` (every file but
    ``vmlinux``), by module name; none when there is no such directory. ``BtfError`` if one
    cannot be read (a module unloaded meanwhile is skipped, as libbpf skips it)."""
    try:
        entries = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise BtfError(f"cannot list the module BTFs in {directory}: {exc.strerror or exc}") from None
    out = []
    for entry in entries:
        if entry == os.path.basename(KERNEL_BTF):
            continue
        path = os.path.join(directory, entry)
        try:
            with open(path, "rb") as f:
                out.append((entry, f.read()))
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise BtfError(f"cannot read the BTF of module {entry} ({path}): {exc.strerror or exc}") from None
    return out


class TargetBtf:
    """A target BTF (``name`` says which in diagnostics: ``vmlinux``, ``module MOD``, a file).

    ``cache``: keep the index of a large blob in the user's cache and use it next time (see
    ``name_index``); without it, or for a small blob, the index is made in memory. ``base``: the
    target this one is split from (a module's BTF on vmlinux's; its index is made in memory,
    never stored: it depends on the base). ``modules``: the kernel's module BTFs, asked for the
    first time ``modules()`` is."""

    __slots__ = ("btf", "name", "base", "_index", "_named", "_shift", "_module_blobs", "_modules")

    def __init__(self, data: bytes | mmap.mmap, name: str = "vmlinux", cache: bool = True, *, base: TargetBtf | None = None,
                 modules: ModuleBlobs | None = None) -> None:
        if base is not None:
            cache = False
        key = name_index.data_key(data) if cache and len(data) >= name_index.MIN_CACHED_BYTES else None
        index = name_index.load(data, key) if key is not None else None
        btf = None
        if index is not None:
            try:
                btf = Btf(data, starts=index.starts)
            except BtfError:  # an index that does not fit after all: made again below
                index = None
        if btf is None:
            btf = Btf(data, base=None if base is None else base.btf)
        if index is None:
            index = name_index.NameIndex.build(btf)
            if key is not None:
                name_index.store(index, key)
        self.btf = btf
        self.name = name
        self.base = base
        self._index = index
        self._named: dict[str, tuple[int, ...]] = {}
        self._shift = btf.first_id - 1  # the index numbers a split BTF's own records from 1
        self._module_blobs = modules
        self._modules: tuple[TargetBtf, ...] | None = None

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], name: str | None = None,
                  modules: ModuleBlobs | None = None) -> TargetBtf:
        """A BTF blob from a file; ``BtfError`` if it cannot be read or is not BTF."""
        where = os.fspath(path)
        try:
            with open(where, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise BtfError(f"cannot read the target BTF {where}: {exc.strerror or exc}") from None
        return cls(data, name or (os.path.basename(where) if where != os.fspath(KERNEL_BTF) else "vmlinux"),
                   modules=modules)

    @classmethod
    def running_kernel(cls) -> TargetBtf:
        """vmlinux's BTF, with the module BTFs beside it (read when first needed)."""
        directory = os.path.dirname(KERNEL_BTF)
        return cls(kernel_blob(KERNEL_BTF), "vmlinux", modules=lambda: read_module_blobs(directory))

    @property
    def owner(self) -> str:
        """How a message names where a type is, before the type: ``""`` for vmlinux (or any
        target that is not split), ``"module MOD's "`` for a module."""
        return "" if self.base is None else f"{self.name}'s "

    @property
    def searches_modules(self) -> bool:
        """Whether module BTFs were given to look in (then ``modules()`` may still be empty)."""
        return self._module_blobs is not None

    def modules(self) -> tuple[TargetBtf, ...]:
        """The module BTFs, each split on this one; read and parsed on the first call (``BtfError``
        naming the module if one does not parse); () when none were given."""
        if self._modules is None:
            blobs = () if self._module_blobs is None else self._module_blobs()
            self._modules = tuple(self._module(module, data) for module, data in blobs)
        return self._modules

    def _module(self, module: str, data: bytes) -> TargetBtf:
        try:
            return TargetBtf(data, f"module {module}", base=self)
        except BtfError as exc:
            raise BtfError(f"the BTF of module {module}: {exc}") from None

    def named(self, essential: str) -> tuple[int, ...]:
        """The ids of the named types whose essential name is ``essential`` (every flavour), in
        id order."""
        cached = self._named.get(essential)
        if cached is None:
            cached = self._lookup(essential) if essential else ()
            self._named[essential] = cached
        return cached

    def _lookup(self, essential: str) -> tuple[int, ...]:
        want = essential.encode()
        btf = self.btf
        out = []
        records = len(self._index.starts)
        for record in self._index.candidates(want):
            if not 0 < record < records:  # checked here, not for all 71k names as the file is read
                raise BtfError(f"the name index of {self.name}'s BTF names record {record} of {records - 1}: "
                               f"the index stored in {name_index.cache_location()} is damaged; remove it")
            tid = record + self._shift
            raw = btf.raw_string(btf.name_offset(tid))
            if (name_index.essential_bytes(raw) if b"___" in raw else raw) == want:
                out.append(tid)
        return tuple(out)


def btf_trace_type_id(target: TargetBtf, event: str) -> int | None:
    """The id of the ``btf_trace_EVENT`` typedef, which a tp_btf program of the raw tracepoint
    EVENT is loaded for (its attach_btf_id); None if the kernel has no such tracepoint."""
    btf, name = target.btf, f"btf_trace_{event}"
    return next((i for i in target.named(name) if btf.type(i).name == name and btf.type(i).kind == BtfKind.TYPEDEF),
                None)
