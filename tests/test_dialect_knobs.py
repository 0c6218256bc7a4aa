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
    ("cpu-clock/aux-sample-size=0xffffffff/", "6.1", None),   # a u32 at its maximum
    ("L1-dcache-loads", "4.7", None),                          # a cache event of words, no legacy token
    ("a.o/map:x[all]/", "6.6", ("parser error", 4)),           # 6.6 reverted the index lists
    ("a.o/map:x[all]/", "6.1", ("parser error", 9)),            # 6.1 lexes [all], then fails later
    ("sched:sched_switch,sched:sched_wakeup,sched:sched_waking,sched:sched_migrate_task,sched:nosuch", "4.7",
     ("unknown tracepoint", 82)),                              # 4.7 puts the error at the event
])  # fmt: skip
def test_release_knobs(text: str, version: str, expected: tuple[str, int] | None) -> None:
    verdict = predict(text, version, system=corpus_system())
    got = (verdict.error.message, verdict.error.column) if verdict.error else None
    assert (verdict.accepted, got) == (expected is None, expected)


def test_an_unknown_pmu_in_6_1_fails_with_its_message_and_no_alias_search() -> None:
    """perf 6.1 (checked with the installed perf: `perf record -e nosuch//`) says it cannot find
    the PMU; from 6.5 on perf also looks the name up as an event on every PMU, and fails
    without a message when none has it."""
    v61 = predict("nosuch//", "6.1", system=corpus_system())
    assert v61.stderr.startswith("event syntax error: 'nosuch//'\n                     \\___ Cannot find PMU "
                                 "`nosuch'. Missing kernel support?\nRun 'perf list' for a list of valid events\n")
    assert v61.quirk is None
    v65 = predict("nosuch//", "6.5", system=corpus_system())
    assert v65.quirk == "no PMU has an alias 'nosuch': perf fails without a message"


def test_term_errors_say_what_perf_says() -> None:
    """perf 6.1 prints "unknown branch filter X, check man page" before the syntax error of a
    bad branch_type (checked with the installed perf), and lists the valid terms after an
    unknown one, a PMU's format terms first."""
    branch = predict("cpu-clock/branch_type=foo/", "6.1", system=corpus_system())
    assert branch.stderr.startswith("unknown branch filter foo, check man page\nevent syntax error: ")
    unknown = predict("software/foo=1/", "6.1", system=corpus_system())
    assert unknown.error is not None and unknown.error.help == (
        "valid terms: config,config1,config2,name,period,freq,branch_type,time,call-graph,stack-size,"
        "no-inherit,inherit,max-stack,nr,no-overwrite,overwrite,driver-config,percore,aux-output,"
        "aux-sample-size,metric-id")
    formats = predict("uprobe/foo=1/", "6.1", system=corpus_system())  # the PMU's format terms first
    assert formats.error is not None and formats.error.help is not None
    assert formats.error.help.startswith("valid terms: ref_ctr_offset,retprobe,config,config1,")
