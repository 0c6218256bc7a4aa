"""perf 6.1 emulation against the PERF61 column of the acceptance corpus (every row)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from evspec.dialect import predict
from evspec.system.fixtures import corpus_system

_ERROR = re.compile(r"error: (.*) @col (-?\d+)$")
_NOT_RUN_PREFIX = "/tmp/bpft/"  # the absolute object path the corpus machine had


def expected(perf61: str) -> tuple[str, tuple[str, int] | None, tuple[str, int] | None]:
    """("ok" | "error" | "silent" | "nothing", last error, initial error)."""
    if perf61.startswith("ok"):
        return ("ok", None, None)
    if "no message printed" in perf61:
        return ("silent", None, None)
    if "event parser found nothing" in perf61:
        return ("nothing", None, None)
    head, _, initial = perf61.partition("; Initial error: ")
    m = _ERROR.match(head)
    assert m is not None, perf61
    last = (m.group(1), int(m.group(2)))
    first = None
    if initial:
        m2 = re.match(r"(.*) @col (-?\d+)$", initial)
        assert m2 is not None
        first = (m2.group(1), int(m2.group(2)))
    return ("error", last, first)


def verdict_of(v) -> tuple[str, tuple[str, int] | None, tuple[str, int] | None]:
    if v.accepted:
        return ("ok", None, None)
    if v.error is None:
        return ("nothing" if "event parser found nothing" in v.stderr else "silent", None, None)
    first = (v.initial_error.message, v.initial_error.column) if v.initial_error else None
    return ("error", (v.error.message, v.error.column), first)


def mode_of(note: str) -> str:
    return "stat" if "PERF61 from perf stat" in note else "record"


@pytest.fixture(scope="module")
def absolute_object(bpf_fixtures: Path):
    """The corpus machine had a copy of maps.o at /tmp/bpft/maps.o; recreate it for the run."""
    target = Path(_NOT_RUN_PREFIX) / "maps.o"
    created_dir = not target.parent.exists()
    created = not target.exists()
    target.parent.mkdir(exist_ok=True)
    if created:
        shutil.copy(bpf_fixtures / "maps.o", target)
    yield
    if created:
        target.unlink()
    if created_dir:
        target.parent.rmdir()


def test_every_corpus_row_agrees_with_perf61(corpus, bpf_fixtures, absolute_object):
    system = corpus_system(str(bpf_fixtures))
    mismatches = []
    for row in corpus:
        got = verdict_of(predict(row.string, "6.1", system=system, cwd=bpf_fixtures, mode=mode_of(row.note)))
        want = expected(row.perf61)
        if got != want:
            mismatches.append(f"line {row.line} {row.string!r}: perf61 {want}, predicted {got}")
    assert not mismatches, f"{len(mismatches)} of {len(corpus)} rows differ:\n" + "\n".join(mismatches)
