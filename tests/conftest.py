"""Shared fixtures: the acceptance corpus, the built BPF fixtures, and privilege gates."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EVSPEC_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
IN_CI = os.environ.get("CI") == "true"


@dataclass(frozen=True)
class CorpusRow:
    line: int  # line number in events.tsv
    string: str
    syntax: str  # "ok" or "error@S-E: reason"
    full: str
    perf_message: str | None
    perf61: str
    note: str

    @staticmethod
    def verdict(field: str) -> tuple[str, int | None, int | None]:
        """("ok", None, None) or ("error", start, end)."""
        if field == "ok":
            return ("ok", None, None)
        head = field.split(":", 1)[0]
        start, end = head.removeprefix("error@").split("-")
        return ("error", int(start), int(end))


def load_corpus() -> list[CorpusRow]:
    path = CORPUS / "events.tsv"
    if not path.exists():
        if IN_CI:
            raise RuntimeError(f"the shared corpus is missing: {path}")
        pytest.skip(f"shared corpus not found at {path} (set EVSPEC_SHARED)")
    rows = []
    with path.open(newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(reader)
        for n, rec in enumerate(reader, start=2):
            string, syntax, full, pmsg, perf61, note = rec
            rows.append(CorpusRow(n, string, syntax, full, None if pmsg == "-" else pmsg, perf61, note))
    return rows


@pytest.fixture(scope="session")
def corpus() -> list[CorpusRow]:
    return load_corpus()


def _require(tool: str, why: str) -> str:
    found = shutil.which(tool)
    if found is None:
        if IN_CI:
            raise RuntimeError(f"{tool} is required in CI ({why}); .ci/run installs it")
        pytest.skip(f"{tool} not installed ({why})")
    return found


@pytest.fixture(scope="session")
def bpf_fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus BPF fixtures, built once per session in a private copy (shared/ is read-only)."""
    _require("clang", "building the BPF fixtures")
    src = CORPUS / "bpf"
    if not src.is_dir():
        if IN_CI:
            raise RuntimeError(f"BPF fixture sources missing: {src}")
        pytest.skip(f"BPF fixture sources not found at {src}")
    dest = tmp_path_factory.mktemp("bpf")
    shutil.copytree(src, dest, dirs_exist_ok=True)
    for p in dest.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    proc = subprocess.run(["make", "-s", "-C", str(dest)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the BPF fixtures failed:\n{proc.stdout}\n{proc.stderr}")
    return dest


@pytest.fixture(scope="session")
def root_kernel() -> None:
    """Gate for tests that make real bpf(2)/perf_event_open(2) calls."""
    if os.geteuid() != 0:
        if IN_CI:
            raise RuntimeError("kernel tests must run as root in CI")
        pytest.skip("needs root: loads BPF programs and opens perf events")


@pytest.fixture(scope="session")
def perf_binary() -> str:
    return _require("perf", "differential tests against perf 6.1")
