"""``map:NAME.SETTER=VALUE``: what libbpf lets user space change in a map before it is created
(``bpf_map__set_max_entries``, ``set_map_flags``, ``set_key_size``, ``set_value_size``,
``set_numa_node``, ``set_pin_path``, ``set_type``), checked offline against the object and the
kernel's limits, and applied to the object's map specs before BPF_MAP_CREATE.

Also the check that every map can be created as the object (and its setters) leave it: a map with
``max_entries`` 0 that libbpf does not size itself, a stack map of 0-byte values.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from evspec.loader.abi import bpf as abi
from evspec.loader.object.map_attrs import on_bpffs
from evspec.loader.object.spec import (
    MAP_IN_MAP_TYPES,
    RING_BUFFER_TYPES,
    MapSpec,
    MapType,
    ObjectSpec,
    replace,
)

from evspec.ast import BpfEvent, MapTerm, Number, Word
from evspec.codes import bpf as codes
from evspec.codes import bpfconfig
from evspec.diagnostics import Diagnostic, EvspecError, error, warning
from evspec.lexicon import MAP_SETTERS

SETTERS = MAP_SETTERS  # the syntax stage knows the same names
_NUMBER_SETTERS = frozenset(SETTERS) - {"pin", "map_type"}

U32_MAX = (1 << 32) - 1
MAX_BPF_STACK = 512  # a hash key is copied to the BPF stack: the kernel's limit on its size
MAX_NUMNODES = 1 << 10  # the largest NODES_SHIFT of any architecture: numa_node is below it
LPM_KEY_MAX = 4 + 256  # struct bpf_lpm_trie_key: 4-byte prefix length, 256 bytes of data at most
# the flags BPF_MAP_CREATE takes in map_flags (BPF_F_PATH_FD, ..._FD ones name descriptors: not here)
_KNOWN_FLAGS: dict[int, str] = {
    1 << 0: "BPF_F_NO_PREALLOC", 1 << 1: "BPF_F_NO_COMMON_LRU", 1 << 2: "BPF_F_NUMA_NODE",
    1 << 3: "BPF_F_RDONLY", 1 << 4: "BPF_F_WRONLY", 1 << 5: "BPF_F_STACK_BUILD_ID",
    1 << 6: "BPF_F_ZERO_SEED", 1 << 7: "BPF_F_RDONLY_PROG", 1 << 8: "BPF_F_WRONLY_PROG",
    1 << 9: "BPF_F_CLONE", 1 << 10: "BPF_F_MMAPABLE", 1 << 11: "BPF_F_PRESERVE_ELEMS",
    1 << 12: "BPF_F_INNER_MAP", 1 << 17: "BPF_F_SEGV_ON_FAULT", 1 << 18: "BPF_F_NO_USER_CONV",
}
_FLAGS_MASK = sum(_KNOWN_FLAGS)

# key sizes the kernel requires of a map type (None: no fixed size)
_FIXED_KEY: dict[MapType, int] = {
    MapType.ARRAY: 4, MapType.PERCPU_ARRAY: 4, MapType.PROG_ARRAY: 4, MapType.PERF_EVENT_ARRAY: 4,
    MapType.CGROUP_ARRAY: 4, MapType.ARRAY_OF_MAPS: 4, MapType.STACK_TRACE: 4, MapType.DEVMAP: 4,
    MapType.CPUMAP: 4, MapType.XSKMAP: 4, MapType.SOCKMAP: 4, MapType.REUSEPORT_SOCKARRAY: 4,
    MapType.SK_STORAGE: 4, MapType.INODE_STORAGE: 4, MapType.TASK_STORAGE: 4, MapType.CGRP_STORAGE: 4,
    MapType.QUEUE: 0, MapType.STACK: 0, MapType.BLOOM_FILTER: 0, MapType.RINGBUF: 0,
    MapType.USER_RINGBUF: 0, MapType.ARENA: 0,
}
_FIXED_VALUE: dict[MapType, int] = {
    MapType.PROG_ARRAY: 4, MapType.PERF_EVENT_ARRAY: 4, MapType.CGROUP_ARRAY: 4, MapType.ARRAY_OF_MAPS: 4,
    MapType.HASH_OF_MAPS: 4, MapType.SOCKMAP: 4, MapType.SOCKHASH: 4, MapType.XSKMAP: 4,
    MapType.RINGBUF: 0, MapType.USER_RINGBUF: 0, MapType.ARENA: 0,
}
# map types created with max_entries 0: storage maps (one value per owner object)
_NO_ENTRIES = frozenset({MapType.SK_STORAGE, MapType.INODE_STORAGE, MapType.TASK_STORAGE, MapType.CGRP_STORAGE,
                         MapType.CGROUP_STORAGE, MapType.PERCPU_CGROUP_STORAGE})
# what the map_type= setter takes: libbpf's names (libbpf_bpf_map_type_str)
TYPE_NAMES: dict[str, MapType] = {t.name.lower(): t for t in MapType if t is not MapType.UNSPEC}


def is_internal(m: MapSpec) -> bool:
    """A map libbpf makes of a data section (.data, .rodata, .bss, .kconfig, ...)."""
    return m.section not in (".maps", "maps")


def _type_name(t: int) -> str:
    try:
        return MapType(t).name.lower()
    except ValueError:
        return f"type {t}"


def _range_error(term: MapTerm, what: str, valid: str) -> Diagnostic:
    assert term.value is not None
    return error(codes.MAP_SETTER_RANGE, f"map:{term.map_name}.{term.option}={term.value.text}: {what}",
                 term.value.span, help=(f"valid {term.option}: {valid}",))


def check_setter(term: MapTerm, m: MapSpec, spec: ObjectSpec) -> list[Diagnostic]:
    """One setter term against map ``m`` (which exists) of ``spec``; spans into the event string."""
    key = f"map:{m.name}.{term.option}"
    if term.indices is not None:
        return [error(codes.MAP_SETTER_REFUSED, f"{key} takes no index list: it sets the whole map",
                      term.indices.span, help=(f"write {key}=VALUE",))]
    refusal = _refusal(m, spec)
    if refusal is not None:
        return [error(codes.MAP_SETTER_REFUSED, f"{key}: {refusal}", term.name_span,
                      help=("setters change maps declared in SEC(\".maps\") that are not part of a "
                            "map-in-map",))]
    value = term.value
    if value is None:
        return [error(bpfconfig.NO_VALUE, f"{key} has no value (missing '=')", term.key_span,
                      help=(f"write {key}=VALUE",))]
    if term.option in _NUMBER_SETTERS:
        if not isinstance(value, Number):
            return [error(codes.MAP_SETTER_RANGE, f"{key} takes a number, not '{value.text}'", value.span,
                          help=("write a decimal or 0x-hex number",))]
        return _check_number(term, m, value.value, spec)
    if not isinstance(value, Word):
        return [error(codes.MAP_SETTER_RANGE, f"{key} takes a "
                      f"{'path' if term.option == 'pin' else 'map type name'}, not the number {value.text}",
                      value.span, help=_type_help() if term.option == "map_type" else ("quote it: pin='/sys/fs/bpf/NAME'",))]
    if term.option == "pin":
        return _check_pin(term, value.text)
    new_type = TYPE_NAMES.get(value.text)
    if new_type is None:
        return [error(codes.MAP_SETTER_RANGE, f"{key}: '{value.text}' is not a map type", value.span,
                      help=_type_help())]
    return _check_shape(term, replace(m, type=int(new_type)))


def _type_help() -> tuple[str, ...]:
    return ("map types (libbpf's names): " + ", ".join(TYPE_NAMES),)


def _refusal(m: MapSpec, spec: ObjectSpec) -> str | None:
    if is_internal(m):
        return (f"'{m.name}' is the map of the data section '{m.section}': its size is the section's "
                "(set its variables with var:NAME=VALUE)")
    if m.type in MAP_IN_MAP_TYPES or m.inner is not None:
        return f"'{m.name}' is a map-in-map ({_type_name(m.type)}): its inner map template is part of it"
    outer = next((o.name for o in spec.maps if o.inner is not None and o.inner.name == m.name), None)
    if outer is not None:
        return f"'{m.name}' is the inner map of '{outer}'"
    return None


def _check_number(term: MapTerm, m: MapSpec, n: int, spec: ObjectSpec) -> list[Diagnostic]:
    option = term.option
    if option == "numa_node":
        if n >= MAX_NUMNODES:
            return [_range_error(term, f"no kernel has NUMA node {n}", f"0...{MAX_NUMNODES - 1} (an online node)")]
        return []
    if n > U32_MAX:
        return [_range_error(term, "does not fit the kernel's 32 bits", f"0...{U32_MAX}")]
    if option == "map_flags":
        unknown = n & ~_FLAGS_MASK
        if unknown:
            return [_range_error(term, f"flag bits {unknown:#x} are not map flags",
                                 "an OR of " + ", ".join(f"{name} ({bit:#x})" for bit, name in _KNOWN_FLAGS.items()))]
        return []
    changed = replace(m, **{"max_entries" if option == "max_entries" else option: n})
    out = _check_shape(term, changed)
    if out or option == "max_entries" or not spec.btf:
        return out
    tid = m.key_type_id if option == "key_size" else m.value_type_id
    if tid is None:
        return []
    from evspec.loader.btf.reader import Btf, BtfError

    try:
        btf_size = Btf(spec.btf).size_of(tid)
    except BtfError:
        return []
    if btf_size == n:
        return []
    what = "key" if option == "key_size" else "value"
    assert term.value is not None
    return [warning(codes.MAP_SETTER_DROPS_BTF,
                    f"map:{m.name}.{option}={n}: the map's BTF {what} type is {btf_size} bytes, so the map is "
                    "created without its BTF key/value types (as libbpf does)", term.value.span,
                    help=(f"declare the {what} type of {n} bytes in the object to keep them",))]


def _check_shape(term: MapTerm, m: MapSpec) -> list[Diagnostic]:
    """What the kernel requires of the map as the setter leaves it (its type's key and value
    sizes, entries); the term's value is blamed."""
    t = m.map_type
    name = _type_name(m.type)
    option = term.option
    if t is None:
        return []
    fixed_key, fixed_value = _FIXED_KEY.get(t), _FIXED_VALUE.get(t)
    if option in ("key_size", "map_type") and fixed_key is not None and m.key_size != fixed_key:
        return [_range_error(term, f"a {name} map has {fixed_key}-byte keys (the map's are {m.key_size})",
                             f"{fixed_key} for a {name} map")]
    if option in ("key_size", "map_type") and fixed_key is None:
        if t == MapType.LPM_TRIE and not 5 <= m.key_size <= LPM_KEY_MAX:
            return [_range_error(term, f"an lpm_trie key is 5...{LPM_KEY_MAX} bytes", f"5...{LPM_KEY_MAX}")]
        if not 1 <= m.key_size <= MAX_BPF_STACK:
            return [_range_error(term, f"a {name} map's keys are 1...{MAX_BPF_STACK} bytes",
                                 f"1...{MAX_BPF_STACK} (the BPF stack)")]
    if option in ("value_size", "map_type"):
        if fixed_value is not None and m.value_size != fixed_value:
            return [_range_error(term, f"a {name} map has {fixed_value}-byte values (the map's are {m.value_size})",
                                 f"{fixed_value} for a {name} map")]
        if fixed_value is None and m.value_size == 0 and t not in _NO_ENTRIES:
            return [_range_error(term, f"a {name} map needs values of at least 1 byte", "1 or more")]
        if t == MapType.STACK_TRACE and m.value_size % 8:
            return [_range_error(term, f"a stack map's values are whole 8-byte addresses ({m.value_size} is "
                                 "not a multiple of 8)", "8 × the stack depth (127 × 8 = 1016 for perf's default)")]
        depth = max_stack_depth()
        if t == MapType.STACK_TRACE and m.value_size // 8 > depth:
            return [_range_error(term, f"{m.value_size // 8} frames are more than the kernel's "
                                 f"kernel.perf_event_max_stack ({depth})", f"8...{8 * depth}")]
    if option in ("max_entries", "map_type"):
        if t in _NO_ENTRIES and m.max_entries:
            return [_range_error(term, f"a {name} map has no max_entries (one value per owner)", "0")]
        if t not in _NO_ENTRIES and m.max_entries == 0 and t != MapType.PERF_EVENT_ARRAY and option == "max_entries":
            return [_range_error(term, f"a {name} map needs at least one entry", f"1...{U32_MAX}")]
    return []


def max_stack_depth(path: str = "/proc/sys/kernel/perf_event_max_stack") -> int:
    """The most frames the kernel puts in a stack map value (the sysctl; its default, 127, when it
    cannot be read)."""
    try:
        with open(path, encoding="ascii") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 127


def _check_pin(term: MapTerm, path: str) -> list[Diagnostic]:
    assert term.value is not None
    key = f"map:{term.map_name}.pin"
    if not path.startswith("/"):
        return [error(codes.MAP_PIN_PATH, f"{key}='{path}': the pinning path is not absolute", term.value.span,
                      help=("write a path under a mounted BPF filesystem: pin='/sys/fs/bpf/NAME'",))]
    parent = os.path.dirname(path.rstrip("/")) or "/"
    if not os.path.isdir(parent):
        return [error(codes.MAP_PIN_PATH, f"{key}='{path}': the folder {parent} does not exist", term.value.span,
                      help=("pin under a mounted BPF filesystem (mount -t bpf bpf /sys/fs/bpf)",))]
    if not on_bpffs(parent):
        return [error(codes.MAP_PIN_PATH, f"{key}='{path}': {parent} is not on a BPF filesystem (bpffs): the "
                      "kernel pins maps only there", term.value.span,
                      help=("pin under a mounted BPF filesystem (mount -t bpf bpf /sys/fs/bpf)",))]
    return []


# ---------------------------------------------------------------------------------------------
# maps that cannot be created as the object has them


def _setters(event: BpfEvent) -> Iterable[MapTerm]:
    return (t for t in event.object_terms if t.option in SETTERS)


def set_options(event: BpfEvent) -> dict[str, dict[str, MapTerm]]:
    """map name -> setter option -> its (last) term."""
    out: dict[str, dict[str, MapTerm]] = {}
    for term in _setters(event):
        out.setdefault(term.map_name, {})[term.option] = term
    return out


def unsized_problems(event: BpfEvent, spec: ObjectSpec) -> list[Diagnostic]:
    """Each map that BPF_MAP_CREATE would refuse as the object has it and no setter changes it: a
    max_entries of 0 that libbpf leaves to user space, a stack map's 0-byte values. Blamed on the
    object's path; the help names the term to add."""
    given = set_options(event)
    out: list[Diagnostic] = []
    for m in spec.maps:
        if is_internal(m):
            continue
        t = m.map_type
        terms = given.get(m.name, {})
        missing: list[str] = []
        if (m.max_entries == 0 and t not in _NO_ENTRIES and t != MapType.PERF_EVENT_ARRAY
                and "max_entries" not in terms and t not in RING_BUFFER_TYPES | {MapType.STRUCT_OPS}):
            missing.append(f"map:{m.name}.max_entries=N")
        if t == MapType.STACK_TRACE and m.value_size == 0 and "value_size" not in terms:
            missing.append(f"map:{m.name}.value_size=N")
        if t in RING_BUFFER_TYPES and m.max_entries == 0 and "max_entries" not in terms:
            missing.append(f"map:{m.name}.max_entries=N")
        if not missing:
            continue
        what = " and ".join(w for w, cond in (("max_entries 0", m.max_entries == 0),
                                             ("0-byte values", m.value_size == 0 and t == MapType.STACK_TRACE))
                            if cond)
        extra = (" (a stack map's value is 8 bytes a frame: 1016 for perf's 127 frames)"
                 if t == MapType.STACK_TRACE else "")
        out.append(error(
            codes.MAP_UNSIZED,
            f"map '{m.name}' ({_type_name(m.type)}) has {what} in the object: the kernel cannot create it "
            "as it is (the tool's user space sizes it before load)",
            event.path_span,
            help=(f"add {', '.join(missing)} to the object's terms{extra}",),
        ))
    return out


def apply_map_setters(event: BpfEvent, spec: ObjectSpec) -> tuple[ObjectSpec, dict[str, str]]:
    """``spec`` with the event's setters applied to its maps, and map name -> pinning path of the
    ``pin=`` setters; raises EvspecError for an invalid setter or a map that still cannot be
    created (nothing is loaded before that)."""
    errors: list[Diagnostic] = []
    maps = {m.name: m for m in spec.maps}
    pins: dict[str, str] = {}
    for name, terms in set_options(event).items():
        m = maps.get(name)
        if m is None:
            continue  # check_map_terms reports it (NO_SUCH_MAP)
        changes: dict[str, object] = {}
        for option, term in terms.items():
            found = [d for d in check_setter(term, m, spec) if d.is_error]
            if found:
                errors.extend(found)
                continue
            value = term.value
            assert value is not None
            if option == "pin":
                pins[name] = value.text
            elif option == "map_type":
                changes["type"] = int(TYPE_NAMES[value.text])
            elif option == "numa_node":
                changes["numa_node"] = value.value if isinstance(value, Number) else 0
            else:
                changes["flags" if option == "map_flags" else option] = value.value if isinstance(value, Number) else 0
        if "numa_node" in changes:
            changes["flags"] = int(changes.get("flags", m.flags)) | int(abi.MapFlag.NUMA_NODE)  # type: ignore[call-overload]
        key_off = m.key_type_id is not None and _btf_size(spec, m.key_type_id) != changes.get("key_size", m.key_size)
        value_off = (m.value_type_id is not None
                     and _btf_size(spec, m.value_type_id) != changes.get("value_size", m.value_size))
        if key_off or value_off:  # the kernel takes both BTF types or none (libbpf retries without)
            changes["key_type_id"] = changes["value_type_id"] = None
        maps[name] = replace(m, **changes)
    if errors:
        raise EvspecError(errors)
    changed = replace(spec, maps=tuple(maps[m.name] for m in spec.maps))
    unsized = unsized_problems(event, changed)
    if unsized:
        raise EvspecError(unsized)
    return changed, pins


def _btf_size(spec: ObjectSpec, tid: int) -> int | None:
    from evspec.loader.btf.reader import Btf, BtfError

    if not spec.btf:
        return None
    try:
        return Btf(spec.btf).size_of(tid)
    except BtfError:
        return None
