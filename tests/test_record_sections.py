"""libbpf-style sections: `evspec check` accepts what `evspec record` runs (corpus Decision 10),
refuses what record cannot attach, and `check --perf` still predicts perf's rejection."""

from __future__ import annotations

from pathlib import Path

import pytest
from record_cli import run_record as _record

from evspec.check import CheckOptions, check_specs
from evspec.compiler.recording import recording_plan
from evspec.diagnostics import Source
from evspec.inputs import SpecInput
from evspec.system.fixtures import corpus_system


def _check_one(text: str, cwd: Path) -> list[tuple[str, bool, str]]:
    spec = SpecInput(text, Source("arg", index=0), command=0)
    [checked] = check_specs([spec], CheckOptions(system=corpus_system(), cwd=cwd))
    return [(d.code, d.is_error, d.message) for d in checked.diagnostics]


def test_check_accepts_a_libbpf_tracepoint_section(bpf_fixtures: Path) -> None:
    """Decision 10: check accepts what record runs; only --perf says that perf 6.1 refuses it."""
    from evspec.dialect import predict

    assert _check_one("./lt.o", bpf_fixtures) == []
    verdict = predict("./lt.o", "6.1", system=corpus_system(), cwd=bpf_fixtures)
    assert not verdict.accepted and verdict.error is not None
    assert verdict.error.message == "Invalid config string"


def test_check_refuses_a_libbpf_kprobe_where_there_are_no_kprobes(bpf_fixtures: Path) -> None:
    [(code, is_error, message)] = _check_one("./kp2.o", bpf_fixtures)
    assert (code, is_error) == ("EB144", True)
    assert message == "section 'kprobe/do_sys_openat2': a kprobe, but this system has no kprobe_events"


def test_check_refuses_a_program_kind_record_cannot_attach(tmp_path: Path) -> None:
    """A socket filter is read fine, but record has no attacher for it: check says so."""
    import subprocess

    (tmp_path / "sock.c").write_text('#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n'
                                     'SEC("socket") int on_packet(void *ctx) { return 0; }\n'
                                     'char _license[] SEC("license") = "GPL";\n')
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c",
                    "sock.c", "-o", "sock.o"], cwd=tmp_path, check=True)
    [(code, is_error, message)] = _check_one("./sock.o", tmp_path)
    assert (code, is_error) == ("EB108", True)
    assert message == "section 'socket': evspec record cannot attach socket programs yet"


def test_record_attaches_a_libbpf_tracepoint_section(
    bpf_fixtures: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(bpf_fixtures)
    status, out, err = _record("-v", "-e", "./lt.o", "--", "sh", "-c", "echo hi >/dev/null")
    assert status == 0, err
    assert "warning" not in err and "error" not in err
    assert "syscalls:sys_enter_write" in out  # the tracepoint event's samples are printed


def test_errors_about_a_source_name_the_source(tmp_path: Path) -> None:
    """A .c event is compiled into the cache; what is said about it names the .c as written."""
    import shutil

    from evspec.loader.session import read_bpf_object

    if shutil.which("clang") is None:
        pytest.fail("clang is needed (scripts/test.sh installs it)")
    (tmp_path / "p.c").write_text('#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n'
                                  'SEC("raw_syscalls:sys_enter") int p(void *ctx) { return 0; }\n'
                                  'char _license[] SEC("license") = "GPL";\n')
    assert read_bpf_object("./p.c", True, tmp_path).path == "./p.c"




def test_check_sees_events_of_earlier_strings_without_objects(bpf_fixtures: Path) -> None:
    """An event defined by an earlier -e that names no object still counts for map:NAME.event=:
    an ARRAY map given an event is refused offline, on the option, with perf's words."""
    inputs = [SpecInput(text, Source("arg", index=i), command=0)
              for i, text in enumerate(["bpf-output/name=evt/", "./maps.o/map:arr.event=evt/"])]
    first, second = check_specs(inputs, CheckOptions(system=corpus_system(), cwd=bpf_fixtures))
    assert first.diagnostics == ()
    [d] = second.diagnostics
    assert (d.code, d.span.start, d.span.end) == ("EB129", 17, 22)
    assert d.perf_message == "Can't use this config term with this map type"


def test_record_reports_a_refused_map_term_in_its_string(
    bpf_fixtures: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(bpf_fixtures)
    status, out, err = _record("-i", "-e", "bpf-output/name=evt/", "-e", "./maps.o/map:arr.event=evt/", "--", "true")
    assert (status, out) == (1, ""), err
    assert "error[EB129]: map 'arr' is an ARRAY map, .event needs a PERF_EVENT_ARRAY\n --> -e #2, col 18\n" in err
    assert "  | ./maps.o/map:arr.event=evt/\n  |                  ^^^^^\n" in err
    assert "  = perf: Can't use this config term with this map type\n" in err


def test_a_term_refused_while_loading_keeps_its_event_string(bpf_fixtures: Path, root_kernel: None) -> None:
    """The session (no check stage in front) places what plan_map_updates refuses in its -e."""
    from evspec.loader.session import RecordSession

    from evspec.diagnostics import EvspecError
    from evspec.parser import parse

    text = "./maps.o/map:nosuch.value=1/"
    session = RecordSession()
    try:
        with pytest.raises(EvspecError) as exc:
            lists = [parse("cpu-clock"), parse(text)]
            session.prepare(lists, recording_plan(lists, None), None, bpf_fixtures, None)
    finally:
        session.close()
    [d] = exc.value.diagnostics
    assert (d.code, d.event, d.source, d.span.start, d.span.end) == ("EB123", text, Source("arg", index=1), 13, 19)


def test_compile_shows_the_events_of_an_objects_programs(
    bpf_fixtures: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What record will open, against the corpus machine: a tracepoint program's evsel with its
    id, a probe's evsel without one (record creates it), the automatic __bpf_stdout__."""
    from corpus_files import CORPUS

    from evspec.cli import main

    monkeypatch.chdir(bpf_fixtures)
    assert main(["compile", "--system", str(CORPUS / "system.json"), "-e", "./stdout1.o", "-e", "./up1.o"]) == 0
    out = capsys.readouterr().out
    assert "raw_syscalls:sys_enter  (-e #1)\n  perf_event_attr:\n    type                    2\n" in out
    assert "    config                  0x1bb\n" in out  # the corpus machine's id of raw_syscalls:sys_enter
    assert "perf_bpf_probe:probe1  (-e #2)\n" in out
    assert "    config                  (the id of the probe 'evspec record' creates)\n" in out
    assert "__bpf_stdout__  (automatic)\n" in out
    assert "  program out1 (section 'raw_syscalls:sys_enter'): on tracepoint raw_syscalls:sys_enter\n" in out
    assert (f"  program prog_up1 (section 'exec={bpf_fixtures}/target;probe1=myfn1'): on the uprobe "
            f"{bpf_fixtures}/target:myfn1 that record creates\n") in out
