"""Mutated snapshots (seeded, bounded): whatever is wrong with one, check, list and compile end in
a finding or a usage error naming it (exit 0, 1 or 2), never in an internal error (exit 3)."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evspec.cli import main
from evspec.cli.app import EXIT_INTERNAL
from evspec.system.fixtures import intel_system
from evspec.system.snapshot import snapshot

SEED = 22
CASES = 300
EVENTS = ("cycles:u,msr/tsc/,sched:sched_switch,cpu/event=0x3c,umask=0/,uncore_imc/cas_count_read/,"
          "cpu/ld_lat.any,ldlat=3/,raw_syscalls:sys_*,mem:0x1000")
ODD_VALUES: tuple[Any, ...] = (None, True, False, 0, -1, 2**70, 1.5, "", "x", "0-3", [], [1], {}, {"a": 1},
                               "config:0-7", "event=0x3c", "\udcff")


def _paths(data: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:  # noqa: ANN401 - JSON data
    yield at
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, (*at, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _paths(value, (*at, i))


def _mutated(base: dict[str, Any], rng: random.Random) -> str:
    data = copy.deepcopy(base)
    for _ in range(rng.randint(1, 3)):
        paths = [p for p in _paths(data) if p]
        path = rng.choice(paths)
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        how = rng.randrange(4)
        if how == 0:
            parent[path[-1]] = rng.choice(ODD_VALUES)
        elif how == 1 and isinstance(parent, dict):
            del parent[path[-1]]
        elif how == 2 and isinstance(parent, dict):
            parent[rng.choice(["", "x/y", "cpu", "sched", "0"])] = copy.deepcopy(parent[path[-1]])
        else:
            parent[path[-1]] = [parent[path[-1]]]
    text = json.dumps(data, ensure_ascii=False)
    if rng.random() < 0.2:  # damage the text itself
        cut = rng.randrange(len(text))
        text = text[:cut] if rng.random() < 0.5 else text[:cut] + rng.choice("{}[],:\"\\0x") + text[cut + 1:]
    return text


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    return snapshot(intel_system())


def test_mutated_snapshots_never_end_in_an_internal_error(base: dict[str, Any], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(SEED)
    path = tmp_path / "snap.json"
    statuses: dict[int, int] = {}
    for case in range(CASES):
        path.write_text(_mutated(base, rng), errors="surrogateescape")
        command = (["check", "-e", EVENTS], ["list"], ["compile", "-e", "cpu-clock,sched:sched_switch"])[case % 3]
        status = main([*command, "--system", str(path)])
        _, err = capsys.readouterr()
        assert status != EXIT_INTERNAL and "Traceback" not in err, f"case {case} ({command[0]}):\n{err}"
        if status == 2:
            assert str(path) in err, err
        statuses[status] = statuses.get(status, 0) + 1
    assert statuses.get(2, 0) >= CASES // 4 and statuses.get(0, 0) + statuses.get(1, 0) >= CASES // 6, statuses
