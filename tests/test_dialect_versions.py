"""perf 4.7, 6.5 and 6.6 as variants of the same engine (perf-event-language.md §9, corpus NOTEs).
6.12, 7.2 and 7.3 have their own tests (test_dialect_pmu_releases.py, test_dialect_answers.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evspec.dialect import VERSIONS, predict
from evspec.system.fixtures import corpus_data, corpus_system
from evspec.system.snapshot import SnapshotSystem


def verdict(text: str, version: str, **kw) -> tuple[str, str | None, int | None]:
    v = predict(text, version, **kw)
    if v.accepted:
        return ("ok", None, None)
    if v.error is None:
        return ("silent", None, None)
    return ("error", v.error.message, v.error.column)


def test_versions_are_the_emulated_releases():
    assert VERSIONS == ("4.7", "6.1", "6.5", "6.6", "6.12", "7.2", "7.3")
    with pytest.raises(ValueError, match="unknown perf version"):
        predict("cycles", "5.4")


# ---- the corpus rows that name another release's verdict ("derived from its sources, not run")


@pytest.mark.parametrize(
    ("text", "version", "want"),
    [
        ("cycles/", "4.7", ("ok", None, None)),  # sep_slash: a single '/' ends a symbolic event
        ("cpu-clock:e", "4.7", ("error", "parser error", 9)),  # no 'e' modifier yet
        ("cpu-clock:b", "4.7", ("error", "parser error", 9)),
        ("bpf-output/no-inherit,name=evt/", "4.7", ("ok", None, None)),
        ("L1-dcache-load-misses", "6.5", ("ok", None, None)),  # one legacy-cache token
        ("mem:0x1000/8:w", "6.5", ("ok", None, None)),  # trailing-context breakpoint tokens
        ("./a.o/map:channel.value[ 3...1]=1/", "6.5", ("silent", None, None)),
        ("foo//", "6.5", ("error", "Cannot find PMU `foo'. Missing kernel support?", 0)),
        ("foo//", "6.6", ("error", "Bad event or PMU", 0)),
    ],
)
def test_release_verdicts_named_in_the_corpus(text, version, want, bpf_fixtures):
    system = corpus_system(str(bpf_fixtures))
    assert verdict(text, version, system=system, cwd=bpf_fixtures) == want


def test_66_keeps_the_pmu_error_as_initial_error():
    v = predict("foo//", "6.6", system=corpus_system())
    assert v.initial_error is not None
    assert (v.initial_error.message, v.initial_error.column) == ("Cannot find PMU `foo'. Missing kernel support?", 0)
    assert v.error is not None and v.error.help == "Unabled to find PMU or event on a PMU of 'foo'"


# ---- 6.6: BPF objects removed, index lists reverted, tracepoint errors at the event


def test_66_rejects_bpf_objects_that_65_loads(bpf_fixtures):
    system = corpus_system(str(bpf_fixtures))
    assert verdict("./a.o", "6.5", system=system, cwd=bpf_fixtures) == ("ok", None, None)
    assert verdict("./a.o", "6.6", system=system, cwd=bpf_fixtures) == ("error", "parser error", 0)
    assert verdict("./maps.o/map:arr.value[ 0]=1/", "6.6", system=system, cwd=bpf_fixtures)[0] == "error"


def test_66_reports_tracepoint_errors_at_the_tracepoint():
    system = corpus_system()
    assert verdict("cpu-clock,sched:nosuch", "6.1", system=system) == ("error", "unknown tracepoint", 0)
    assert verdict("cpu-clock,sched:nosuch", "6.6", system=system) == ("error", "unknown tracepoint", 10)


def test_66_names_an_unknown_bare_word():
    v = predict("foo", "6.6", system=corpus_system())
    assert v.error is not None and (v.error.message, v.error.column) == ("Bad event name", 0)
    assert predict("foo", "6.5", system=corpus_system()).silent  # 6.5 aborts without a message


# ---- 6.5: names with '-', no machine-dependent lexing, one cache token


@pytest.mark.parametrize(
    ("text", "v61", "v65"),
    [
        ("my-grp{cpu-clock,task-clock}", ("error", "parser error", 3), ("ok", None, None)),
        ("energy-psys/name=x/", ("error", "parser error", 7), ("ok", None, None)),
        ("tsc{cpu-clock,task-clock}", ("error", "parser error", 0), ("ok", None, None)),
        ("branches-loads", ("error", "parser error", 0), ("ok", None, None)),
        ("cycles-ct", ("silent", None, None), ("silent", None, None)),
    ],
)
def test_65_lexes_without_the_machine(text, v61, v65):
    system = corpus_system()
    assert verdict(text, "6.1", system=system) == v61
    assert verdict(text, "6.5", system=system) == v65


def test_65_has_config3_and_hardware_terms():
    assert verdict("cpu-clock/config3=1/", "6.1") == ("error", "unknown term", 10)
    assert verdict("cpu-clock/config3=1/", "6.5") == ("ok", None, None)
    v = predict("cpu-clock/cycles/", "6.5")
    assert v.error is not None and v.error.message == "unknown term"
    assert v.error.help is not None and "config3" in v.error.help


# ---- 4.7: greedy BPF paths, working index lists, one error slot


def test_47_bpf_paths_are_greedy_and_unchecked(bpf_fixtures):
    system = corpus_system(str(bpf_fixtures))
    v = predict("cycles,./a.o", "4.7", system=system, cwd=bpf_fixtures)
    assert v.error is not None
    assert v.error.message == "Failed to load cycles,./a.o: No such file or directory"
    assert verdict("nonexist.o", "6.1", system=system, cwd=bpf_fixtures) == ("error", "parser error", 0)
    assert verdict("nonexist.o", "4.7", system=system, cwd=bpf_fixtures)[1] == (
        "Failed to load nonexist.o: No such file or directory"
    )


def test_47_prints_invalid_or_unsupported_event_for_silent_failures():
    v = predict("foo", "4.7", system=corpus_system())
    assert v.silent and v.error is None
    assert v.stderr.startswith("invalid or unsupported event: 'foo'\nRun 'perf list' for a list of valid events\n")
    assert predict("foo", "6.1", system=corpus_system()).stderr.startswith("event syntax error: 'foo'\n")


def test_47_keeps_one_error():
    v = predict("software/foo/", "4.7", system=corpus_system())
    assert v.initial_error is None
    v61 = predict("software/foo/", "6.1", system=corpus_system())
    assert v61.initial_error is not None


def test_47_term_set_and_modifiers():
    assert verdict("cpu-clock/max-stack=5/", "6.1") == ("ok", None, None)
    assert verdict("cpu-clock/max-stack=5/", "4.7") == ("error", "unknown term", 10)  # no such keyword yet
    v = predict("cpu-clock/foo=1/", "4.7")
    assert v.error is not None and v.error.help == (
        "valid terms: config,config1,config2,name,period,freq,branch_type,time,call-graph,stack-size,no-inherit,inherit"
    )
    assert verdict("cpu-clock:ukhGHpppPSDI", "4.7") == ("ok", None, None)
    assert verdict("cpu-clock:W", "4.7")[0] == "error"


@pytest.fixture(scope="module")
def kprobe_object(tmp_path_factory: pytest.TempPathFactory, bpf_fixtures: Path) -> Path:
    """a.c with a 4.7-style kprobe section (4.7 knew no tracepoint programs)."""
    from evspec.loader.object.clang import compile_flags, find_clang

    folder = tmp_path_factory.mktemp("kprobe47")
    source = (bpf_fixtures / "a.c").read_text().replace('SEC("raw_syscalls:sys_enter")', 'SEC("func=do_sys_openat2")')
    (folder / "k.c").write_text(source)
    subprocess.run([find_clang(), *compile_flags(), "-c", "k.c", "-o", "k.o"], cwd=folder, check=True)
    return folder


def test_47_index_lists_work_where_61_breaks(kprobe_object):
    data = corpus_data(str(kprobe_object))
    data["features"] = {**data["features"], "kprobe_events": True}
    system = SnapshotSystem(data, cwd=str(kprobe_object))
    text = "./k.o/map:channel.value[0,3...6]=1/"
    assert verdict(text, "4.7", system=system, cwd=kprobe_object) == ("ok", None, None)
    assert verdict(text, "6.1", system=system, cwd=kprobe_object) == ("error", "parser error", 6)
    assert verdict("./k.o/map:channel.value[0,3...8]=1/", "4.7", system=system, cwd=kprobe_object) == (
        "error",
        "Index too large",
        6 + 4 + len("value"),
    )
    # 4.7: every term is an object term, so a hard-coded one is refused by the object
    assert verdict("./k.o/period=1/", "4.7", system=system, cwd=kprobe_object) == (
        "error",
        "Invalid config term for BPF object",
        6,
    )
    # and its reversed range fails without a message, printed as "invalid or unsupported event"
    v = predict("./k.o/map:channel.value[5...3]=1/", "4.7", system=system, cwd=kprobe_object)
    assert v.silent and v.stderr.startswith("invalid or unsupported event: ")


def test_47_tracepoint_sections_are_not_programs_it_knows(bpf_fixtures):
    system = corpus_system(str(bpf_fixtures))
    assert verdict("./a.o", "6.1", system=system, cwd=bpf_fixtures) == ("ok", None, None)
    assert verdict("./a.o", "4.7", system=system, cwd=bpf_fixtures) == ("error", "Invalid config string", 0)
