"""Which maps and global variables ``record`` prints, and how: a histogram or a table.

The programs decide whether a map or a ``.bss`` variable holds a result (``usage``: counted
into and never deleted from, or only written with ``bpf_map_update_elem``); its BTF decides the
shape. A histogram is a value that is an array of integer slots: a member ``slots`` of the
map's value struct (libbpf-tools' ``struct hist``, one histogram per key, the key's fields and
the value's other members as its label), an ARRAY map of a name with ``hist`` in it whose values
are integers (the key is the slot: ``--dump-maps``' rule), or a global of a name with ``hist`` in it that is an
integer array, a struct with ``slots``, or an array of such structs (one histogram per index).
Everything else is a table. ``map:NAME.hist=`` overrides the shape and the slots' scale.
"""

from __future__ import annotations

from evspec.loader.btf.reader import Btf, BtfKind, BtfType
from evspec.loader.lint.terms.print_terms import Hints
from evspec.loader.object.map_dump import is_histogram
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec
from evspec.loader.output.aggregate.usage import accumulated, last_values, object_usage

from evspec.span import Slotted, value_field

SLOTS = "slots"
_READABLE = frozenset({MapType.HASH, MapType.ARRAY, MapType.PERCPU_HASH, MapType.PERCPU_ARRAY,
                       MapType.LRU_HASH, MapType.LRU_PERCPU_HASH})
_DATA = ".bss"


class Aggregate(Slotted):
    """One thing to print: a map (``var`` None) or a global variable of a data map."""

    name: str  # what it is called in the output: the map's or the variable's name
    map: MapSpec  # the map that holds it
    var: str | None  # the variable of a data map (``map`` is its section's map)
    kind: str  # "histogram" or "table"
    scale: str = "log2"  # a histogram's: "log2" or "linear"
    unit: str = "value"
    step: int = 1
    columns: dict[int, str] = value_field(default_factory=dict)
    group: tuple[str, ...] = ()  # a table of globals: the variables that are its columns


def detect(spec: ObjectSpec, hints: dict[str, Hints]) -> list[Aggregate]:
    """What to print of ``spec``, in the order of its maps (a data map's variables in theirs)."""
    if not spec.btf:
        return []
    btf = Btf(spec.btf)
    usage = object_usage(spec)
    results = set(accumulated(usage)) | set(last_values(usage))
    out: list[Aggregate] = []
    for m in spec.maps:
        if m.type not in _READABLE or m.value_type_id is None:
            continue
        if m.section == _DATA:
            out.extend(_globals(btf, m, {n.split(":", 1)[1] for n in results if n.startswith(f"{m.name}:")},
                                hints))
        elif m.name in results:
            out.append(_shaped(m.name, m, None, _map_slots(btf, m), hints.get(m.name, Hints())))
    return out


def _shaped(name: str, m: MapSpec, var: str | None, has_slots: bool, hint: Hints,
            group: tuple[str, ...] = ()) -> Aggregate:
    histogram = hint.hist in ("log2", "linear") or (has_slots and hint.hist != "none")
    return Aggregate(name, m, var, "histogram" if histogram else "table",
                     scale=hint.hist if hint.hist in ("log2", "linear") else "log2",
                     unit=hint.unit or "value", step=hint.step, columns=dict(hint.columns), group=group)


def _map_slots(btf: Btf, m: MapSpec) -> bool:
    assert m.value_type_id is not None
    if is_histogram(m, btf):  # an array of counts, the key the slot (--dump-maps' rule)
        return True
    value = btf.resolve(m.value_type_id)
    if value.kind == BtfKind.STRUCT:
        return any(member.name == SLOTS and _int_array(btf, btf.resolve(member.type)) for member in value.members)
    return "hist" in m.name.lower() and _int_array(btf, value)


def _int_array(btf: Btf, t: BtfType) -> bool:
    return t.kind == BtfKind.ARRAY and t.array is not None and btf.resolve(t.array.type).kind == BtfKind.INT


def _hist_global(btf: Btf, name: str, t: BtfType) -> bool:
    """An integer array named *hist*, a struct with ``slots``, or an array of those structs."""
    if t.kind == BtfKind.ARRAY and t.array is not None:
        element = btf.resolve(t.array.type)
        if element.kind == BtfKind.INT:
            return "hist" in name.lower()
        t = element
    return t.kind == BtfKind.STRUCT and any(
        member.name == SLOTS and _int_array(btf, btf.resolve(member.type)) for member in t.members)


def _globals(btf: Btf, m: MapSpec, names: set[str], hints: dict[str, Hints]) -> list[Aggregate]:
    """A data map's result variables: each histogram alone; the other variables in tables of
    the variables of the same length (scalars together, arrays of N elements together), one
    row per index, one column per variable."""
    assert m.value_type_id is not None
    section = btf.resolve(m.value_type_id)
    out: list[Aggregate] = []
    tables: dict[int, list[str]] = {}
    for info in section.secinfos:
        var = btf.type(info.type)
        if var.name not in names:
            continue
        t = btf.resolve(var.type)
        hint = hints.get(var.name, Hints())
        if hint.hist in ("log2", "linear") or (_hist_global(btf, var.name, t) and hint.hist != "none"):
            out.append(_shaped(var.name, m, var.name, True, hint))
        else:
            length = t.array.nelems if t.kind == BtfKind.ARRAY and t.array is not None else 0
            tables.setdefault(length, []).append(var.name)
    for group in tables.values():
        out.append(_shaped(",".join(group), m, group[0], False, hints.get(group[0], Hints()), tuple(group)))
    return out
