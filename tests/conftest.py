"""Shared fixtures: the acceptance corpus, the built BPF fixtures, and privilege gates."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from corpus_files import CORPUS_BPF, CORPUS_TSV, CorpusRow, read_corpus

pytest_plugins = ["ci_skip_guard"]  # in CI, a skipped test fails the run

IN_CI = os.environ.get("CI") == "true"


@pytest.fixture(scope="session", autouse=True)
def kernel_btf_mapped() -> None:
    """The kernel's BTF is mapped once per process and kept (``target_btf.kernel_blob``): mapped
    here, before any test counts its open descriptors, so that a test's first CO-RE load does not
    look like a leak."""
    from evspec.loader.btf.reader import BtfError
    from evspec.loader.btf.target import KERNEL_BTF, kernel_blob

    try:
        kernel_blob(KERNEL_BTF)
    except BtfError:  # no kernel BTF here: the tests that need it say so
        pass


def load_corpus() -> list[CorpusRow]:
    if not CORPUS_TSV.exists():
        raise RuntimeError(f"the test corpus is missing: {CORPUS_TSV} (scripts/refresh_test_data.sh copies it)")
    return read_corpus()


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
    src = CORPUS_BPF
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


ORACLES = Path(os.environ.get("EVSPEC_ORACLES", "/var/cache/evspec/oracles"))


def oracle(name: str) -> str:
    """A reference tool that scripts/oracles.sh installs (``perf-6.12``, ``perf-7.2``, ``perf-7.3``,
    ``bpftool-sid``, ``bpftrace``, ``clang-21``, ``sid-run``): its wrapper's path. Required in CI;
    skipped elsewhere when the script has not been run."""
    path = ORACLES / "bin" / name
    if not os.access(path, os.X_OK):
        if IN_CI:
            raise RuntimeError(f"{name} is required in CI; scripts/oracles.sh installs it into {ORACLES}")
        pytest.skip(f"{name} not installed (run scripts/oracles.sh as root)")
    return str(path)


@pytest.fixture(scope="session")
def perf_binary() -> str:
    return _require("perf", "differential tests against perf 6.1")


TRACEFS = Path("/sys/kernel/tracing")


@pytest.fixture(scope="module")
def tracefs(root_kernel: None) -> Path:
    """This machine's tracefs, mounted first if it is not."""
    if not (TRACEFS / "events").is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True)
    return TRACEFS
