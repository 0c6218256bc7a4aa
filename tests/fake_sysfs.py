"""A machine of this kind with PMUs it lacks: an Intel core PMU, or the two core PMUs of a hybrid
CPU, shown to perf through a fake /sys/bus/event_source/devices in a private mount namespace (as
tests/test_machine_without_pmu.py hides one). The kernel has no such PMU, so an open fails, but
perf prints the attr it built first (``perf stat -vv``), and runs its own parse-events tests.

``machine(name)`` is the snapshot data of that machine: this machine's PMUs and tracepoints plus
the fake ones (from evspec.system.fixtures, retyped where this machine uses their type), with
``hybrid_extended_type`` false, since perf's probe of the extended type fails on this kernel.
``devices(data, into)`` writes the folder; ``run(devices, argv)`` runs argv with it mounted.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path
from typing import Any

from evspec.system import LiveSystem, snapshot
from evspec.system.fixtures import INTEL_PT, UNCORE_IMC, core_pmu_data

DEVICES = Path("/sys/bus/event_source/devices")
MACHINES = ("intel", "hybrid")


def machine(name: str) -> dict[str, Any]:
    """This machine plus the fake PMUs of ``name`` ("intel" or "hybrid"), as snapshot data."""
    data = snapshot(LiveSystem())
    data["cwd"] = "/"
    cpus = data["cpus"]
    first, last = cpus.split("-")[0], cpus.split("-")[-1].split(",")[-1]
    if name == "intel":
        fake = {"cpu": core_pmu_data(4, None), "intel_pt": dict(copy.deepcopy(INTEL_PT), type=11),
                "uncore_imc_0": dict(copy.deepcopy(UNCORE_IMC), type=16),
                "uncore_imc_1": dict(copy.deepcopy(UNCORE_IMC), type=17)}
    elif name == "hybrid":
        fake = {"cpu_core": core_pmu_data(4, first), "cpu_atom": core_pmu_data(12, last)}
        fake["cpu_atom"]["format"]["acr_mask"] = "config2:0-63"
        data["features"]["hybrid_extended_type"] = False  # this kernel has no hybrid PMU: perf's probe fails
    else:
        raise ValueError(name)
    used = {p["type"] for p in data["pmus"].values()}
    for pmu_name, pmu in fake.items():
        while pmu["type"] in used:
            pmu["type"] += 100
        used.add(pmu["type"])
        data["pmus"][pmu_name] = pmu
    return data


def devices(data: dict[str, Any], into: Path) -> Path:
    """A devices folder: links to this machine's PMUs, folders for the others of ``data``."""
    into.mkdir(parents=True, exist_ok=True)
    for real in DEVICES.iterdir():
        (into / real.name).symlink_to(real.resolve())
    for name, pmu in data["pmus"].items():
        if (DEVICES / name).exists():
            continue
        folder = into / name
        (folder / "format").mkdir(parents=True)
        (folder / "events").mkdir()
        (folder / "type").write_text(f"{pmu['type']}\n")
        for key in ("cpus", "cpumask"):
            if pmu.get(key):
                (folder / key).write_text(f"{pmu[key]}\n")
        for term, text in pmu["format"].items():
            (folder / "format" / term).write_text(f"{text}\n")
        for event, alias in pmu["events"].items():
            (folder / "events" / event).write_text(f"{alias['definition']}\n")
            for side in ("unit", "scale"):
                if alias.get(side):
                    (folder / "events" / f"{event}.{side}").write_text(f"{alias[side]}\n")
    return into


def run(folder: Path, argv: list[str], *, timeout: int = 120, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``argv`` with ``folder`` mounted over /sys/bus/event_source/devices (root, unshare)."""
    if shutil.which("unshare") is None:
        raise RuntimeError("unshare (util-linux) is needed to show perf a fake PMU")
    script = f'mount --bind "$1" {DEVICES} && shift && exec "$@"'
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(folder), *argv],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)
