"""Release knobs of the perf dialects (evspec/dialect/versions.py) that the corpus does not
tell apart, each with a string whose verdict depends on it: 4.7's lexer has no drv-cfg (@cfg)
rule, no ',' rule in its event state (a stray comma is skipped silently) and takes a breakpoint's trailing modifiers without 6.x's trailing context; every release
reads percore as a u32 (0x100000001 is 1). 4.7's verdicts are derived from its sources (no
binary of it runs here), 6.1's are checked against the installed perf by the corpus tests.
The mutants these tests were written to kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

import pytest

from evspec.dialect import predict
from evspec.system.fixtures import corpus_system


@pytest.mark.parametrize(("text", "version", "expected"), [
    ("cpu-clock/@cfg/", "4.7", ("unknown term", 11)),       # no drv-cfg rule: '@' starts an unknown term
    ("cpu-clock/@cfg/", "6.1", ("unknown term", 10)),       # a drv-cfg term, unknown to the software PMU
    ("software/@drvcfg/", "4.7", ("unknown term 'drvcfg' for pmu 'software'", 10)),
    ("cycles,,instructions", "4.7", None),                   # no ',' rule in the event state: skipped
    (",cycles", "4.7", None),
    (",cycles", "6.1", ("parser error", 1)),
    ("mem:0x1000:rw:u", "4.7", None),
    ("mem:0x10/8:xu", "4.7", None),
    ("cpu-clock/percore=1/", "6.1", None),
    ("cpu-clock/percore=0x100000001/", "6.1", None),         # perf keeps the low 32 bits
    ("cpu-clock/percore=2/", "6.1", ("expected 0 or 1", 18)),
])  # fmt: skip
def test_release_knobs(text: str, version: str, expected: tuple[str, int] | None) -> None:
    verdict = predict(text, version, system=corpus_system())
    got = (verdict.error.message, verdict.error.column) if verdict.error else None
    assert (verdict.accepted, got) == (expected is None, expected)
