"""perf record's ``__bpf_stdout__`` rules (perf's ``bpf__setup_stdout``).

Every map named ``__bpf_stdout__`` in every loaded object is either *configured* (a map term of
its own event names it) or not. With none configured, one shared
``bpf-output/no-inherit=1,name=__bpf_stdout__/`` event is created and stored at every key of every
unconfigured map; with one configured, the updates of the first configured map are cloned to
every unconfigured one and no event is created.
"""

from __future__ import annotations

from collections.abc import Sequence

from evspec.loader.lint.terms.maps import MapUpdate
from evspec.loader.object.spec import ObjectSpec

from evspec.span import Slotted, replace

STDOUT_MAP = "__bpf_stdout__"
STDOUT_EVENT = "__bpf_stdout__"
STDOUT_EVENT_STRING = f"bpf-output/no-inherit=1,name={STDOUT_EVENT}/"


class StdoutPlan(Slotted):
    """``updates[i]``: the updates of object ``i`` with the stdout rules applied (its own first);
    ``create_event``: whether the automatic ``__bpf_stdout__`` event must be created."""

    updates: tuple[tuple[MapUpdate, ...], ...]
    create_event: bool


def _all_keys(spec: ObjectSpec) -> tuple[tuple[int, int], ...]:
    m = spec.map(STDOUT_MAP)
    assert m is not None
    return ((0, m.max_entries - 1),) if m.max_entries else ()


def _covers_all(update: MapUpdate, spec: ObjectSpec) -> bool:
    return update.keys == _all_keys(spec)


def plan_stdout(objects: Sequence[tuple[ObjectSpec, Sequence[MapUpdate]]]) -> StdoutPlan:
    """Apply the rules to ``objects`` (each with the updates its own terms make), in load order."""
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
                # an empty key set means "every key of the live map" (arrays sized to the CPUs)
                extra.append(MapUpdate(STDOUT_MAP, _all_keys(spec), None, STDOUT_EVENT))
            else:
                src_spec = objects[source][0]
                for u in configured[source]:
                    keys = _all_keys(spec) if _covers_all(u, src_spec) else u.keys
                    extra.append(replace(u, keys=keys))
        out.append((*updates, *extra))
    create = source is None and any(has_map)
    return StdoutPlan(tuple(out), create)


