"""The reference tools scripts/oracles.sh installs are the releases the differential tests name."""

from __future__ import annotations

import subprocess

import pytest
from conftest import oracle


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("perf-6.12", "perf version 6.12."),
        ("perf-7.2", "perf version 7.2."),
        ("perf-7.3", "perf version 7.3."),
        ("bpftool-sid", "using libbpf v1.8"),
        ("bpftrace", "bpftrace v0."),
        ("clang-21", "clang version 21."),
    ],
)
def test_oracle_is_the_release_it_is_named_after(name: str, expected: str) -> None:
    done = subprocess.run([oracle(name), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
