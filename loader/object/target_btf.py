"""The BTF that CO-RE relocations are resolved against: the running kernel's
(``/sys/kernel/btf/vmlinux``), one saved with a system snapshot, or a ``--btf FILE``.

A kernel's BTF holds some 126k types; a CO-RE load needs a handful of them. Opening one walks the
type section once to learn where each record starts (``Btf``); candidates are then found by name
in the string section and their records located by their name offset, so only the types a
relocation reaches are ever decoded.
"""

from __future__ import annotations

from pathlib import Path

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
    """A target BTF (``name`` says which in diagnostics: ``vmlinux``, a module, a file)."""

    __slots__ = ("btf", "name", "_strings", "_named")

    def __init__(self, data: bytes, name: str = "vmlinux") -> None:
        self.btf = Btf(data)
        self.name = name
        self._strings = self.btf.string_section()
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
            cached = tuple(self.btf.ids_named_at(self._name_offsets(essential))) if essential else ()
            self._named[essential] = cached
        return cached

    def _name_offsets(self, essential: str) -> list[int]:
        """Offsets of the strings that are ``essential`` or a flavour of it. A match may start
        inside a longer string: its tail is a string of its own, which a type may name.
        (``bytes.find`` loops: a regex scan of the 3 MB of vmlinux strings costs ten times more.)"""
        strings, word = self._strings, essential.encode()
        out = []
        for tail in (b"\0", b"___"):
            needle = word + tail
            at = strings.find(needle)
            while at >= 0:
                end = strings.index(b"\0", at)
                if tail == b"\0" or essential_name(strings[at:end].decode(errors="replace")) == essential:
                    out.append(at)
                at = strings.find(needle, at + 1)
        return sorted(out)


def btf_trace_type_id(target: TargetBtf, event: str) -> int | None:
    """The id of the ``btf_trace_EVENT`` typedef, which a tp_btf program of the raw tracepoint
    EVENT is loaded for (its attach_btf_id); None if the kernel has no such tracepoint."""
    btf, name = target.btf, f"btf_trace_{event}"
    return next((i for i in target.named(name) if btf.type(i).name == name and btf.type(i).kind == BtfKind.TYPEDEF),
                None)
