"""Reading what ``detect`` found from the kernel, decoded by BTF (``map_dump.decode_map``), and
clearing it after an interval's print, as the tools do with ``-i``: a hash map's entries read
are deleted, an array map's are written with zeros, a global's bytes are zeroed in its data map.

Clearing is not atomic: what the programs count between the read and the clear of an entry is
lost (the tools lose it too), and zeroing a global rewrites its data map's whole value, so a
program's write to another global of the same section in between is undone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from evspec.loader.btf.reader import Btf
from evspec.loader.object.map_dump import Decoded, decode_map, is_per_cpu, per_cpu_stride
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec
from evspec.loader.output.aggregate.detect import Aggregate

from evspec.span import Slotted

_ARRAYS = frozenset({MapType.ARRAY, MapType.PERCPU_ARRAY})


class MapAccess(Protocol):
    """What ``read`` needs of the kernel (``evspec.loader.kernel.Kernel`` has it)."""

    def next_key(self, fd: int, key: bytes | None, key_size: int, *, what: str = "") -> bytes | None: ...
    def lookup(self, fd: int, key: bytes, value_size: int, *, what: str = "") -> bytes | None: ...
    def update_elem(self, fd: int, key: bytes, value: bytes, flags: int = ..., *, what: str = "") -> None: ...
    def delete_elem(self, fd: int, key: bytes, *, what: str = "") -> bool: ...


class Entries(Slotted):
    """A map's entries as read: raw keys (to clear them) and decoded keys and values (per-CPU
    values summed: integers added, the first CPU's other values kept)."""

    raw_keys: tuple[bytes, ...]
    decoded: tuple[tuple[Decoded, Decoded], ...]


def read_entries(kernel: MapAccess, spec: ObjectSpec, m: MapSpec, fd: int, cpus: int) -> Entries:
    what = f"map '{m.name}'"
    size = per_cpu_stride(m) * cpus if is_per_cpu(m) else m.value_size
    raw: list[tuple[bytes, bytes]] = []
    key = kernel.next_key(fd, None, m.key_size, what=what)
    while key is not None:
        value = kernel.lookup(fd, key, size, what=what)
        if value is not None:
            raw.append((key, value))
        key = kernel.next_key(fd, key, m.key_size, what=what)
    dump = decode_map(spec, m, raw, cpus)
    ordered = sorted(raw, key=lambda e: (len(e[0]), int.from_bytes(e[0], "little")))
    decoded = tuple((k, sum_cpus(v) if is_per_cpu(m) else v) for k, v in dump.entries)
    return Entries(tuple(k for k, _ in ordered), decoded)


def sum_cpus(values: Decoded) -> Decoded:
    """A per-CPU value list as one value: integers (and those of structs and arrays) summed."""
    assert isinstance(values, list)
    if not values:
        return values
    return _add_all(values)


def _add_all(values: Sequence[Decoded]) -> Decoded:
    first = values[0]
    if isinstance(first, bool) or not isinstance(first, (int, dict, list)):
        return first
    if isinstance(first, int):
        return sum(v for v in values if isinstance(v, int) and not isinstance(v, bool))
    if isinstance(first, dict):
        return {k: _add_all([v[k] for v in values if isinstance(v, dict) and k in v]) for k in first}
    return [_add_all([v[i] for v in values if isinstance(v, list) and i < len(v)]) for i in range(len(first))]


def clear(kernel: MapAccess, spec: ObjectSpec, agg: Aggregate, fd: int, keys: Sequence[bytes], cpus: int) -> None:
    """Zero what ``agg`` counted: the entries of ``keys``, or its globals' bytes."""
    m, what = agg.map, f"map '{agg.map.name}'"
    if agg.var is not None:
        _zero_globals(kernel, spec, agg, fd)
        return
    if m.type in _ARRAYS:
        zero = bytes(per_cpu_stride(m) * cpus if is_per_cpu(m) else m.value_size)
        for key in keys:
            kernel.update_elem(fd, key, zero, what=what)
        return
    for key in keys:
        kernel.delete_elem(fd, key, what=what)


def _zero_globals(kernel: MapAccess, spec: ObjectSpec, agg: Aggregate, fd: int) -> None:
    m = agg.map
    key = bytes(m.key_size)
    value = kernel.lookup(fd, key, m.value_size, what=f"map '{m.name}'")
    if value is None:
        return
    out = bytearray(value)
    for start, size in global_places(spec, m, agg.group or (agg.name,)):
        out[start:start + size] = bytes(size)
    kernel.update_elem(fd, key, bytes(out), what=f"map '{m.name}'")


def global_places(spec: ObjectSpec, m: MapSpec, names: Sequence[str]) -> list[tuple[int, int]]:
    """(offset, size) of each global of ``names`` in the data map ``m`` (the ELF symbols' offsets:
    clang leaves the BTF's 0)."""
    assert spec.btf is not None and m.value_type_id is not None
    btf = Btf(spec.btf)
    symbols = next((dict(layout.symbols) for layout in spec.layouts if layout.name == m.section), {})
    out = []
    for info in btf.resolve(m.value_type_id).secinfos:
        name = btf.type(info.type).name
        if name in names:
            out.append((symbols.get(name, info.offset), info.size))
    return out
