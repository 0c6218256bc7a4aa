"""The bpf-output events ``record`` creates for the objects' output maps, with no term.

perf record's ``__bpf_stdout__`` rules (perf's ``bpf__setup_stdout``): every map named
``__bpf_stdout__`` in every loaded object is either *configured* (a map term of its own event names
it) or not. With none configured, one shared ``bpf-output/no-inherit=1,name=__bpf_stdout__/`` event
is created and stored at every key of every unconfigured map; with one configured, the updates of
the first configured map are cloned to every unconfigured one and no event is created.

evspec's own rule, for today's tools: every other perf event array that a program sends to (an
output helper call names it, ``output_calls``) and that no term configures gets a bpf-output event
of its own, ``bpf-output/no-inherit=1,name=MAP/``, stored at every key (one per CPU). Two objects
with a map of the same name get ``MAP_N`` (N: the object's place among the objects, from 1). A
pinned map is left alone (another process may fill it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evspec.loader.lint.terms.maps import MapUpdate
from evspec.loader.lint.terms.output_calls import OutputCall, output_calls
from evspec.loader.lint.terms.output_types import RecordType, Untyped, record_type
from evspec.loader.object.spec import MapType, ObjectSpec

from evspec.span import Slotted, replace

STDOUT_MAP = "__bpf_stdout__"
STDOUT_EVENT = "__bpf_stdout__"


def output_event_string(name: str) -> str:
    """The event string of an automatic bpf-output event called ``name``."""
    return f"bpf-output/no-inherit=1,name={name}/"


STDOUT_EVENT_STRING = output_event_string(STDOUT_EVENT)


class AutoOutput(Slotted):
    """The bpf-output event ``event`` created for perf event array ``map_name`` of object
    ``object_index``, which ``programs`` send to; ``records``: the type of what they send, or why
    none is known."""

    object_index: int
    path: str
    map_name: str
    event: str
    programs: tuple[str, ...]
    records: RecordType | Untyped

    def describe(self) -> str:
        """What ``record -v`` and ``check`` say of it."""
        sent = ", ".join(self.programs)
        return (f"{self.path}: map '{self.map_name}' (perf event array) gets the bpf-output event "
                f"'{self.event}' (no-inherit, at every CPU's key) that record creates: program"
                f"{'s' if len(self.programs) > 1 else ''} {sent} send{'' if len(self.programs) > 1 else 's'} "
                f"to it and no term gives it an event; {typing_text(self.map_name, self.records)}")


def typing_text(map_name: str, records: RecordType | Untyped) -> str:
    """How a map's records are printed, and why."""
    if isinstance(records, RecordType):
        return f"its records are printed as {records.name} ({records.size} bytes), {records.source}"
    return (f"its records are printed as bytes: no record type is known ({records.reason}); "
            f"map:{map_name}.type=TYPE would print them as fields")


class StdoutPlan(Slotted):
    """``updates[i]``: the updates of object ``i`` with the stdout rules and the automatic output
    events applied (its own first); ``create_event``: whether the automatic ``__bpf_stdout__``
    event must be created; ``outputs``: the other automatic bpf-output events; ``records[i]``:
    the record type (or why none) of each map object ``i``'s programs send to."""

    updates: tuple[tuple[MapUpdate, ...], ...]
    create_event: bool
    outputs: tuple[AutoOutput, ...] = ()
    records: tuple[Mapping[str, RecordType | Untyped], ...] = ()


def _all_keys(spec: ObjectSpec, name: str = STDOUT_MAP) -> tuple[tuple[int, int], ...]:
    m = spec.map(name)
    assert m is not None
    # an empty key set means "every key of the live map" (arrays sized to the CPUs)
    return ((0, m.max_entries - 1),) if m.max_entries else ()


def _covers_all(update: MapUpdate, spec: ObjectSpec) -> bool:
    return update.keys == _all_keys(spec)


def _sent_to(calls: Sequence[OutputCall]) -> dict[str, list[str]]:
    """map name -> the programs whose output calls may name it, in order."""
    out: dict[str, list[str]] = {}
    for c in calls:
        for name in (c.map_name,) if c.map_name is not None else c.candidates:
            if c.program not in out.setdefault(name, []):
                out[name].append(c.program)
    return out


def plan_outputs(objects: Sequence[tuple[ObjectSpec, Sequence[MapUpdate]]]) -> StdoutPlan:
    """Apply the rules to ``objects`` (each with the updates its own terms make), in load order."""
    stdout = _plan_stdout(objects)
    updates = [list(u) for u in stdout.updates]
    found: list[tuple[int, ObjectSpec, str, list[str], RecordType | Untyped]] = []
    records: list[dict[str, RecordType | Untyped]] = []
    for index, (spec, _) in enumerate(objects):
        calls = output_calls(spec)
        sent = _sent_to(calls)
        records.append({m.name: record_type(spec, m.name, calls) for m in spec.maps
                        if m.type == MapType.RINGBUF or (m.type == MapType.PERF_EVENT_ARRAY and m.name in sent)})
        configured = {u.map_name for u in updates[index]}
        for m in spec.maps:
            if (m.type == MapType.PERF_EVENT_ARRAY and m.name in sent and m.name != STDOUT_MAP
                    and m.name not in configured and not m.pinning):
                found.append((index, spec, m.name, sent[m.name], records[index][m.name]))
    counts: dict[str, int] = {}
    for _, _, name, _, _ in found:
        counts[name] = counts.get(name, 0) + 1
    outputs: list[AutoOutput] = []
    for index, spec, name, programs, typed in found:
        event = name if counts[name] == 1 else f"{name}_{index + 1}"
        updates[index].append(MapUpdate(name, _all_keys(spec, name), None, event))
        outputs.append(AutoOutput(index, spec.path, name, event, tuple(programs), typed))
    return StdoutPlan(tuple(tuple(u) for u in updates), stdout.create_event, tuple(outputs), tuple(records))


def name_clashes(plan: StdoutPlan, events: Mapping[str, str]) -> list[str]:
    """The automatic events whose name an event of the command (``events``: name -> where it is
    defined) or an earlier automatic event has too, one message each naming both."""
    out: list[str] = []
    earlier: dict[str, str] = {}
    for o in plan.outputs:
        where = events.get(o.event) or earlier.get(o.event)
        if where is not None:
            out.append(f"the bpf-output event '{o.event}' that record creates for map '{o.map_name}' of {o.path} "
                       f"has the name of the event {where}: rename that event (name=...), or give the map an "
                       f"event of your own with map:{o.map_name}.event=NAME")
        earlier.setdefault(o.event, f"'{o.event}' record creates for map '{o.map_name}' of {o.path}")
    return out


def _plan_stdout(objects: Sequence[tuple[ObjectSpec, Sequence[MapUpdate]]]) -> StdoutPlan:
    """perf's ``__bpf_stdout__`` rules alone."""
    has_map = [spec.map(STDOUT_MAP) is not None for spec, _ in objects]
    configured = [
        [u for u in updates if u.map_name == STDOUT_MAP] if has else []
        for (spec, updates), has in zip(objects, has_map, strict=True)
    ]
    source = next((i for i, ups in enumerate(configured) if ups), None)
    out: list[tuple[MapUpdate, ...]] = []
    for i, ((spec, updates), has) in enumerate(zip(objects, has_map, strict=True)):
        extra: list[MapUpdate] = []
        if has and not configured[i]:
            if source is None:
                extra.append(MapUpdate(STDOUT_MAP, _all_keys(spec), None, STDOUT_EVENT))
            else:
                src_spec = objects[source][0]
                for u in configured[source]:
                    keys = _all_keys(spec) if _covers_all(u, src_spec) else u.keys
                    extra.append(replace(u, keys=keys))
        out.append((*updates, *extra))
    create = source is None and any(has_map)
    return StdoutPlan(tuple(out), create)


