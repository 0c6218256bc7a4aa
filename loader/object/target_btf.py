"""The BTF that CO-RE relocations are resolved against: the running kernel's
(``/sys/kernel/btf/vmlinux``), one saved with a system snapshot, or a ``--btf FILE``.

A kernel's BTF holds some 126k types; a CO-RE load needs a handful of them. Opening one needs to
know where each record starts (the records have variable length) and which types bear a name;
that index (``name_index``) is made by one walk over the types and, for a blob as large as a
kernel's, kept in the user's cache for the next run. Candidates are then found by name in the
index, so only the types a relocation reaches are ever decoded.
"""

from __future__ import annotations

from pathlib import Path

from evspec.loader.object import name_index
from evspec.loader.object.btf import Btf, BtfError, BtfKind

KERNEL_BTF = Path("/sys/kernel/btf/vmlinux")


def essential_name(name: str) -> str:
    """``name`` without its flavour: what follows the last ``___`` that has no underscore on
    either side (``task_struct___mine`` -> ``task_struct``; libbpf's bpf_core_essential_name_len)."""
    for i in range(len(name) - 5, -1, -1):
        if name[i] != "_" and name[i + 1:i + 4] == "___" and name[i + 4] != "_":
            return name[:i + 1]
    return name


class TargetBtf:
    """A target BTF (``name`` says which in diagnostics: ``vmlinux``, a module, a file).

    ``cache``: keep the index of a large blob in the user's cache and use it next time (see
    ``name_index``); without it, or for a small blob, the index is made in memory."""

    __slots__ = ("btf", "name", "_index", "_named")

    def __init__(self, data: bytes, name: str = "vmlinux", cache: bool = True) -> None:
        key = name_index.data_key(data) if cache and len(data) >= name_index.MIN_CACHED_BYTES else None
        index = name_index.load(data, key) if key is not None else None
        btf = None
        if index is not None:
            try:
                btf = Btf(data, starts=index.starts)
            except BtfError:  # an index that does not fit after all: made again below
                index = None
        if btf is None:
            btf = Btf(data)
        if index is None:
            index = name_index.NameIndex.build(btf)
            if key is not None:
                name_index.store(index, key)
        self.btf = btf
        self.name = name
        self._index = index
        self._named: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_file(cls, path: Path, name: str | None = None) -> TargetBtf:
        """A BTF blob from a file; ``BtfError`` if it cannot be read or is not BTF."""
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise BtfError(f"cannot read the target BTF {path}: {exc.strerror or exc}") from None
        return cls(data, name or (path.name if path != KERNEL_BTF else "vmlinux"))

    @classmethod
    def running_kernel(cls) -> TargetBtf:
        return cls.from_file(KERNEL_BTF, "vmlinux")

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
        for tid in self._index.candidates(want):
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
