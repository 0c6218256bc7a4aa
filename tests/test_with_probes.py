"""``WithProbes``: a system where the probes ``record`` will create are tracepoints already, so
that ``compile`` plans their events; everything else is the system it wraps."""

from __future__ import annotations

from pathlib import Path

from evspec.system import read_snapshot
from evspec.system.with_probes import WithProbes

SNAPSHOT = Path(__file__).parent / "data" / "systems" / "intel.json"


def test_probes_join_the_tracepoints_with_an_unknown_id() -> None:
    base = read_snapshot(SNAPSHOT)
    group = base.tracepoint_systems()[0]
    known = base.tracepoint_events(group)[0]
    system = WithProbes(base, {"probe_app:main", f"{group}:evspec_probe"})
    assert system.tracepoint_systems() == (*base.tracepoint_systems(), "probe_app")
    assert system.tracepoint_events("probe_app") == ("main",)
    assert system.tracepoint_events(group) == (*base.tracepoint_events(group), "evspec_probe")
    assert system.tracepoint_id("probe_app", "main") == 0
    assert system.tracepoint_id(group, known) == base.tracepoint_id(group, known) != 0
    assert system.tracepoint_id("probe_app", "other") is None


def test_everything_else_is_the_wrapped_system() -> None:
    base = read_snapshot(SNAPSHOT)
    system = WithProbes(base, {"probe_app:main"})
    assert system.pmu_names() == base.pmu_names()
    assert system.pmu("cpu") is base.pmu("cpu")
    assert (system.possible_cpus(), system.features(), system.cwd) == (base.possible_cpus(), base.features(),
                                                                         base.cwd)
    assert system.file_exists("/no/such/file") == base.file_exists("/no/such/file")
