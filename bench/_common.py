"""Helpers shared by the bench scripts: side-by-side timing and the corpus strings."""

from __future__ import annotations

import csv
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: the tests' copy of the acceptance corpus (tests/data/corpus: events.tsv and the BPF fixture sources)
CORPUS = REPO / "tests" / "data" / "corpus"


def corpus_strings() -> list[str]:
    with (CORPUS / "events.tsv").open(newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(reader)
        return [row[0] for row in reader]


def best_rate(fn: Callable[[], int], seconds: float = 1.5, rounds: int = 5) -> float:
    """Items per second: the best of ``rounds`` runs of ``fn`` (which returns how many it did)."""
    rates = []
    for _ in range(rounds):
        done, start = 0, time.perf_counter()
        while True:
            done += fn()
            elapsed = time.perf_counter() - start
            if elapsed >= seconds / rounds:
                break
        rates.append(done / elapsed)
    return max(rates)


def interleaved_wall(commands: Sequence[Sequence[str]], runs: int = 15, cwd: str = "/tmp") -> list[float]:
    """Median wall time of each command, runs interleaved so that machine noise hits all alike."""
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for i, cmd in enumerate(commands):
            start = time.perf_counter()
            subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]
