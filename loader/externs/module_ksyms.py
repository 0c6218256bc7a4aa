"""Typed ``__ksym`` variables and kfuncs that live in kernel modules, found as libbpf finds them
(libbpf.c ``find_ksym_btf_id`` and its callers); no system call (the module BTFs come in as
``ModuleBtf``, opened by the kernel layer, ``kernel.btf_objects.open_module_btfs``).

* ``unopened_modules``: the module BTFs of a ``TargetBtf`` as ModuleBtf without descriptors,
  for resolving without loading (``evspec check``).
* ``find_ksym``: the VAR or FUNC of that name in vmlinux's BTF; only when vmlinux has none, in
  each module's own types, module by module in the kernel's order of BTF object ids: the first
  module that has one. The modules are asked for only then.
* What a program then holds: a typed ksym's ld_imm64 (and a kfunc's, taking its address) has
  src_reg ``BPF_PSEUDO_BTF_ID``, imm the VAR's (FUNC's) id in its BTF, and the second imm that
  BTF's fd, 0 for vmlinux (``ld_imm64_values``). A kfunc call has imm the FUNC's id and off an
  index into the ``fd_array`` given with ``BPF_PROG_LOAD`` (``FdArray``): 0 for vmlinux; a
  module takes the next index the first time one of its kfuncs is resolved (index 0 is never
  a module's), and the index must fit the instruction's signed 16-bit offset. libbpf resolves
  the externs sorted by name, so that is the order modules get their indexes in
  (``kfunc_calls``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from evspec.loader.abi import bpf as abi
from evspec.loader.btf.reader import BtfKind
from evspec.loader.btf.target import TargetBtf, essential_name

from evspec.span import Slotted

FD_ARRAY_LIMIT = 0x7FFF  # a kfunc call's off is signed 16-bit: indexes 1 .. 32767
NO_FD = -1  # the fd of a ModuleBtf read from its file (``unopened_modules``): never loaded with


class KsymError(ValueError):
    """A module kfunc that cannot be given an fd_array index."""


class ModuleBtf(Slotted):
    """A kernel module's BTF object: the module's name, the kernel's id of the object, a
    descriptor open on it (held until the programs that use it are loaded) and its types, split
    on vmlinux's."""

    name: str
    btf_id: int
    fd: int
    target: TargetBtf


def unopened_modules(vmlinux: TargetBtf) -> tuple[ModuleBtf, ...]:
    """``vmlinux``'s module BTFs (``TargetBtf.modules()``: the files of /sys/kernel/btf, read, not
    opened through bpf(2)) as ModuleBtf, for resolving externs without loading them (``evspec
    check``): fd ``NO_FD``, btf_id the module's place in that list, 1 on (the kernel's ids and fds
    would need syscalls; the fd_array made of them only says which modules a load would name).
    They are in file-name order, where libbpf goes in BTF object id order: that decides only which
    of two modules having the same name wins. ``BtfError`` if a module BTF does not parse."""
    return tuple(ModuleBtf(target.name.removeprefix("module "), at, NO_FD, target)
                 for at, target in enumerate(vmlinux.modules(), 1))


class KsymFound(Slotted):
    """Where a ksym or kfunc is: the id of its VAR or FUNC in ``target``, and the module whose
    BTF that is (None: vmlinux)."""

    type_id: int
    target: TargetBtf
    module: ModuleBtf | None = None

    @property
    def where(self) -> str:
        """``vmlinux`` or ``module MOD``, for messages."""
        return "vmlinux" if self.module is None else f"module {self.module.name}"


def _own_named(target: TargetBtf, name: str, kind: BtfKind) -> int | None:
    btf = target.btf
    return next((i for i in target.named(essential_name(name))
                 if btf.type(i).kind == kind and btf.type(i).name == name), None)


def find_ksym(vmlinux: TargetBtf, modules: Callable[[], Sequence[ModuleBtf]], name: str,
              kind: BtfKind) -> KsymFound | None:
    """The VAR (``kind`` VAR) or FUNC named ``name``: vmlinux's, else the first module's that has
    one; None when none has. ``modules`` is called only when vmlinux has none."""
    found = _own_named(vmlinux, name, kind)
    if found is not None:
        return KsymFound(found, vmlinux)
    for module in modules():
        found = _own_named(module.target, name, kind)
        if found is not None:
            return KsymFound(found, module.target, module)
    return None


def ld_imm64_values(found: KsymFound | None) -> tuple[int, int, int]:
    """(src_reg, imm, second imm) of the ld_imm64 of a typed ksym or of a kfunc's address; a weak
    one that was not found is 0."""
    if found is None:
        return 0, 0, 0
    return abi.BPF_PSEUDO_BTF_ID, found.type_id, 0 if found.module is None else found.module.fd


class FdArray:
    """The ``fd_array`` of one object's program loads: the module BTF fds its kfunc calls name by
    index. Empty while no module's kfunc is called (vmlinux's need none)."""

    __slots__ = ("_fds", "_index")

    def __init__(self) -> None:
        self._fds: list[int] = []
        self._index: dict[int, int] = {}  # module BTF object id -> its index

    def index(self, found: KsymFound, extern: str) -> int:
        """The kfunc call's ``off`` for ``found`` (0 for vmlinux), its module given an index on
        first use; ``KsymError`` past the last index an instruction can hold."""
        module = found.module
        if module is None:
            return 0
        at = self._index.get(module.btf_id)
        if at is None:
            if not self._fds:
                self._fds.append(0)  # index 0 stands for vmlinux: never a module's
            if len(self._fds) > FD_ARRAY_LIMIT:
                raise KsymError(f"kfunc {extern!r} of module {module.name}: a program can name the BTF of "
                                f"{FD_ARRAY_LIMIT} modules at most (a call's 16-bit offset indexes fd_array)")
            at = self._index[module.btf_id] = len(self._fds)
            self._fds.append(module.fd)
        return at

    @property
    def fds(self) -> tuple[int, ...]:
        """What BPF_PROG_LOAD's ``fd_array`` points to (() when no module's kfunc is called)."""
        return tuple(self._fds)


def kfunc_calls(found: Mapping[str, KsymFound | None]
                ) -> tuple[dict[str, tuple[int, int] | None], tuple[int, ...]]:
    """Per kfunc extern (name -> where it was found, None: a weak one that was not): the (imm,
    off) of its calls, None where it was not found; and the ``fd_array`` the programs are loaded
    with, its modules numbered as libbpf numbers them, in the order of the externs' names."""
    fd_array = FdArray()
    calls: dict[str, tuple[int, int] | None] = {}
    for name in sorted(found):
        where = found[name]
        calls[name] = None if where is None else (where.type_id, fd_array.index(where, name))
    return calls, fd_array.fds
