"""`evspec record` runs sections perf cannot use (libbpf-style), which `evspec check` rejects."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from evspec.check import CheckOptions, check_specs
from evspec.diagnostics import Source
from evspec.inputs import SpecInput
from evspec.record_cmd import add_record_parser, record_main
from evspec.system.fixtures import corpus_system


def _record(*argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    add_record_parser(parser.add_subparsers(dest="cmd"))
    out, err = io.StringIO(), io.StringIO()
    status = record_main(parser.parse_args(["record", *argv]), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_check_rejects_a_libbpf_tracepoint_section(bpf_fixtures: Path) -> None:
    spec = SpecInput("./lt.o", Source("arg", index=0), command=0)
    [checked] = check_specs([spec], CheckOptions(system=corpus_system(), cwd=bpf_fixtures))
    assert [(d.code, d.is_error) for d in checked.diagnostics] == [("EB108", True)]


def test_record_attaches_a_libbpf_tracepoint_section(
    bpf_fixtures: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(bpf_fixtures)
    status, out, err = _record("-v", "-e", "./lt.o", "--", "sh", "-c", "echo hi >/dev/null")
    assert status == 0, err
    assert "EB108" in err and "evspec record attaches it; perf cannot" in err
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


def test_an_object_checked_then_loaded_is_read_once(bpf_fixtures: Path) -> None:
    from evspec.loader.reader import read_object

    assert read_object(bpf_fixtures / "maps.o") is read_object(bpf_fixtures / "maps.o")
