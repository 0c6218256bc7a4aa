"""Load commands on kernels that know a shorter ``union bpf_attr`` than evspec writes.

The bpf(2) ABI wants every byte past the kernel's own ``union bpf_attr`` to be zero, and fails
with E2BIG otherwise. Some fields of MAP_CREATE, PROG_LOAD and BTF_LOAD only name things or carry
BTF debug information: a kernel that does not know them loads the same map or program without
them. ``LoadAttrFallback.call`` clears, on E2BIG, the last run of such fields that is set and
passes the attribute only up to it, until the kernel accepts it (other fields are never left out);
the size that worked is remembered for the next call of the same command, and what was left out
is kept for ``record -v``.
"""

from __future__ import annotations

import ctypes
import errno as E
from collections.abc import Callable

from evspec.loader.abi import bpf as abi
from evspec.loader.kernel.errors import KernelError

from evspec.codes import kernel as codes

OPTIONAL_FIELDS = frozenset({
    "map_name", "btf_fd", "btf_key_type_id", "btf_value_type_id", "prog_name", "prog_btf_fd",
    "func_info_rec_size", "func_info", "func_info_cnt", "line_info_rec_size", "line_info",
    "line_info_cnt",
})
ATTR_TYPES: dict[abi.Cmd, type[ctypes.Structure]] = {
    abi.Cmd.MAP_CREATE: abi.MapCreateAttr,
    abi.Cmd.PROG_LOAD: abi.ProgLoadAttr,
    abi.Cmd.BTF_LOAD: abi.BtfLoadAttr,
}
# Where each load command's attribute ended in its first kernel: E2BIG about a field before that
# is not about the attribute's size but about a value (too many instructions, a huge value size).
FIRST_LAYOUT_END = {abi.Cmd.MAP_CREATE: 20, abi.Cmd.PROG_LOAD: 44, abi.Cmd.BTF_LOAD: 28}


def set_fields(attr: ctypes.Structure, start: int, end: int) -> list[str]:
    """The fields of ``attr`` that start in ``[start, end)`` and are not zero, in order."""
    raw = ctypes.string_at(ctypes.addressof(attr), ctypes.sizeof(attr))
    out = []
    for name, *_ in type(attr)._fields_:  # type: ignore[misc]
        field = getattr(type(attr), name)
        if start <= field.offset < end and raw[field.offset : field.offset + field.size].strip(b"\0"):
            out.append(str(name))
    return out


def optional_run_start(attr: ctypes.Structure, name: str) -> int:
    """Where the run of optional fields that ends with ``name`` starts (fields that came with
    one kernel feature, such as prog_btf_fd ... line_info_cnt, go together)."""
    names = [n for n, *_ in type(attr)._fields_]  # type: ignore[misc]
    index = names.index(name)
    while index > 0 and names[index - 1] in OPTIONAL_FIELDS:
        index -= 1
    return int(getattr(type(attr), names[index]).offset)


def clear_from(attr: ctypes.Structure, offset: int, dropped: list[str]) -> int:
    """Zero every field of ``attr`` at or past ``offset``, adding those that were set to
    ``dropped``; the attribute size to pass from now on."""
    dropped.extend(set_fields(attr, offset, ctypes.sizeof(attr)))
    ctypes.memset(ctypes.addressof(attr) + offset, 0, ctypes.sizeof(attr) - offset)
    return offset


def verifier_wrote_log(cmd: abi.Cmd, attr: ctypes.Structure) -> bool:
    """E2BIG with a verifier log is the verifier's verdict (too complex), not the attribute's size."""
    if cmd is not abi.Cmd.PROG_LOAD or not attr.log_size or not attr.log_buf:  # type: ignore[attr-defined]
        return False
    return ctypes.c_char.from_address(attr.log_buf).value != b"\0"  # type: ignore[attr-defined]


def attr_too_big(exc: KernelError, cmd: abi.Cmd, field: str | None) -> KernelError:
    """The error for an E2BIG that leaving optional fields out cannot cure: ``field`` (the last
    field set) is one the kernel does not know, or a value is too large for it."""
    where = exc.message.split(":", 1)[0]
    offset = -1 if field is None else getattr(ATTR_TYPES[cmd], field).offset
    if offset < FIRST_LAYOUT_END[cmd]:
        what = {
            abi.Cmd.MAP_CREATE: "the key, the value or max_entries is too large for this map type",
            abi.Cmd.PROG_LOAD: "the program is too large: more instructions than the kernel "
            "accepts, or more than the verifier's complexity limit",
            abi.Cmd.BTF_LOAD: "the BTF is larger than the kernel accepts",
        }[cmd]
        return KernelError(codes.ATTR_TOO_BIG, f"{where}: {what} (E2BIG)", errno=exc.errno,
                           operation=exc.operation)
    return KernelError(
        codes.ATTR_TOO_BIG,
        f"{where}: the running kernel does not know a field evspec set: {field} (E2BIG)",
        errno=exc.errno,
        operation=exc.operation,
        help=("a newer kernel is needed for this feature",),
    )


class LoadAttrFallback:
    """What the running kernel knows of the load commands' attributes, learnt from its E2BIGs.

    ``left_out`` maps an operation (``BPF_PROG_LOAD``) to the optional fields it was issued
    without; ``notes`` says so in words.
    """

    def __init__(self) -> None:
        self._known_sizes: dict[abi.Cmd, int] = {}
        self.left_out: dict[str, list[str]] = {}

    def call(self, cmd: abi.Cmd, attr: ctypes.Structure, bpf: Callable[[int], int]) -> int:
        """``bpf(size)`` issues ``cmd`` with the first ``size`` bytes of ``attr``; this calls it
        with the whole attribute, or as much of it as the kernel knows, and returns its result."""
        size = ctypes.sizeof(attr)
        known = self._known_sizes.get(cmd)
        dropped: list[str] = []
        if known is not None and OPTIONAL_FIELDS.issuperset(set_fields(attr, known, size)):
            size = clear_from(attr, known, dropped)
        while True:
            try:
                result = bpf(size)
            except KernelError as exc:
                if exc.errno == E.E2BIG and not verifier_wrote_log(cmd, attr):
                    last = (set_fields(attr, 0, size) or [None])[-1]
                    if last in OPTIONAL_FIELDS:
                        size = clear_from(attr, optional_run_start(attr, last), dropped)
                        continue
                    raise attr_too_big(exc, cmd, last) from None  # leaving fields out did not help
                self._remember(cmd, size, dropped)  # another error: E2BIG is cured
                raise
            self._remember(cmd, size, dropped)
            return result

    def _remember(self, cmd: abi.Cmd, size: int, dropped: list[str]) -> None:
        if dropped:
            self._known_sizes[cmd] = min(size, self._known_sizes.get(cmd, size))
            fields = self.left_out.setdefault(cmd.operation, [])
            fields.extend(name for name in dropped if name not in fields)

    @property
    def notes(self) -> list[str]:
        """One line per operation that was issued without fields this kernel does not know."""
        return [
            f"{op}: this kernel does not know {', '.join(fields)}; loaded without them"
            for op, fields in self.left_out.items()
        ]
