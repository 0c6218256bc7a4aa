"""What a cold `evspec check` of event strings imports: nothing heavy, nothing it does not use.

Cold start is a stated target (bench/parse_bench.py (b): at most 5x `python3 -c pass`); these
tests keep the modules that would break it off the path, without timing anything. Each run is a
fresh interpreter outside the source tree, so the installed package is what is measured.
The records on that path (``evspec.span.Slotted``) are written out instead of made by the
``dataclass`` decorator; the last tests hold them to the dataclasses they stand for.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from bpf_build import BPF_FLAGS, require_tools
from evspec.grammar.tables import decode_json, read_tables_text
from record_twins import assert_like_twin

from evspec.check import CheckedSpec, CheckOptions
from evspec.diagnostics import Diagnostic, Label, Severity, Source
from evspec.inputs import SpecInput
from evspec.lexicon import CacheWord, KeywordTerm, ValueType
from evspec.parser import parse
from evspec.span import Slotted, Span

# Never on the syntax-only path: what they would cost a cold start, roughly, on the dev machine.
HEAVY = {
    "lark": "the grammar's tables are committed; Lark is only the generator and the Earley oracle (40-80 ms)",
    "elftools": "BPF objects are read only with --system",
    "pyroute2": "network interfaces are looked up only by record (300 ms)",
    "evspec.loader": "the BPF side is imported only for BPF events with a system",
    "ctypes": "syscalls are made only by the kernel layer",
}
# Not on the check path either (strings with findings included): what each would cost or bring.
AVOIDABLE = {
    "evspec.cli.record": "the record sub-command's parser is built only for record",
    "evspec.system": "--system none needs no machine model",
    "evspec.compiler": "--system none needs no semantic checks",
    "importlib.resources": "package data is read through the package's loader (20 ms of imports)",
    "typing": "annotations need no typing at run time (2-3 ms)",
    "hashlib": "nothing is hashed",
    "shutil": "the CLI sizes argparse's help itself; shutil brings bz2, lzma and zlib",
    "dataclasses": "records are evspec.span.Slotted classes; dataclasses brings inspect (8 ms with it)",
    "inspect": "it brings ast, dis, tokenize and linecache (6 ms)",
    "pathlib": "inputs are read with open(); pathlib costs 1-2 ms",
    "copy": "nothing is copied (dataclasses used to bring it)",
    "json": "the parser tables are decoded by _json's scanner; the json package compiles 6 regexes (1.5 ms)",
}


def _modules_after(argv: list[str], tmp_path: Path) -> tuple[int, set[str]]:
    # An editable install's import finder loads pathlib as the interpreter starts: forget what
    # startup loaded of the modules watched here, so that only evspec's own imports show.
    code = (
        "import sys\n"
        f"for name in {sorted({**HEAVY, **AVOIDABLE, **VERIFY_AVOIDS, **LIBBPF_NAMES_AVOID, **RECORD_AVOIDS})!r}:\n"
        "    sys.modules.pop(name, None)\n"
        "from evspec.cli import main\n"
        f"status = main({argv!r})\n"
        "sys.stdout.write('\\n'.join(sorted(sys.modules)) + '\\n')\n"
        "sys.stdout.write(f'status={status}')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True, capture_output=True,
                         text=True, env={**os.environ, "NO_COLOR": "1"}).stdout
    *modules, status = out.splitlines()
    return int(status.removeprefix("status=")), set(modules)


def _loaded(modules: set[str], top: str) -> list[str]:
    return sorted(m for m in modules if m == top or m.startswith(top + "."))


def test_check_of_a_valid_string_imports_only_what_it_needs(tmp_path: Path) -> None:
    status, modules = _modules_after(["check", "-e", "cycles:u"], tmp_path)
    assert status == 0
    assert "evspec.grammar.lalr" in modules, "the import log did not cover the parser"
    for top, why in {**HEAVY, **AVOIDABLE}.items():
        assert not _loaded(modules, top), f"{top} imported by 'evspec check -e cycles:u': {why}"


def test_check_imports_no_library_beyond_what_argparse_brings(tmp_path: Path) -> None:
    """Besides its own modules, the check path may import what argparse (with re, and gettext's
    locale) brings in a fresh interpreter, the C decoder of the parser tables, and __future__."""
    baseline_code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import argparse\n"
        "argparse.ArgumentParser(prog='x').parse_args([])\n"
        "print('\\n'.join(sorted(set(sys.modules) - before)))\n"
    )
    argparse_brings = set(subprocess.run([sys.executable, "-c", baseline_code], cwd=tmp_path, check=True,
                                         capture_output=True, text=True).stdout.split())
    startup_code = "import sys\nprint('\\n'.join(sorted(sys.modules)))\n"
    at_startup = set(subprocess.run([sys.executable, "-c", startup_code], cwd=tmp_path, check=True,
                                     capture_output=True, text=True).stdout.split())
    status, modules = _modules_after(["check", "-e", "cycles:u"], tmp_path)
    assert status == 0
    extra = sorted(m for m in modules - at_startup - argparse_brings - {"_json", "__future__"}
                   if m != "evspec" and not m.startswith("evspec."))
    assert not extra, f"'evspec check -e cycles:u' imports {extra}"


@pytest.mark.parametrize("event", ["cycles:x", "{cycles,", "./x.o/map:m.value[1...0]=1/", "cpu/event=1/,,"])
def test_check_with_findings_stays_light(tmp_path: Path, event: str) -> None:
    status, modules = _modules_after(["check", "-e", event], tmp_path)
    assert status == 1
    for top, why in {**HEAVY, **AVOIDABLE}.items():
        assert not _loaded(modules, top), f"{top} imported by 'evspec check -e {event}': {why}"


def test_parse_and_fmt_do_not_import_lark(tmp_path: Path) -> None:
    for argv in (["parse", "-e", "cycles:u,{a,b}:S"], ["fmt", "-e", "cycles:u"]):
        status, modules = _modules_after(argv, tmp_path)
        assert status == 0
        assert not _loaded(modules, "lark") and not _loaded(modules, "evspec.loader"), argv


CORE_SOURCE = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
struct task_struct___t { int pid; int tgid; } __attribute__((preserve_access_index));
SEC("tracepoint/raw_syscalls/sys_enter")
int on_enter(void *ctx)
{
	struct task_struct___t *t = (void *)bpf_get_current_task();
	return (BPF_CORE_READ(t, pid) + BPF_CORE_READ(t, tgid)) & 1;
}
char _license[] SEC("license") = "GPL";
"""
# Never on the path of `evspec verify OBJ.o`: what each would cost it.
VERIFY_AVOIDS = {
    "lark": "section names are parsed over the committed tables (sections.lalr): 40-80 ms",
    "elftools": "objects are read by evspec's own ELF reader",
    "pyroute2": "verify attaches nothing (300 ms)",
    "importlib.resources": "package data is read through the package's loader (20 ms of imports)",
    "dataclasses": "the loader's records are evspec.span.Slotted classes; the decorator, with inspect, cost "
                   "verify 20 ms",
    "inspect": "it brings ast, dis, tokenize and linecache (6 ms)",
    "typing": "annotations need no typing at run time (2-3 ms)",
    "platform": "the machine's name is asked for only by an object with LINUX_HAS_SYSCALL_WRAPPER (3 ms)",
    "gzip": "the kernel's Kconfig is read only for __kconfig externs",
    "evspec.loader.abi.perf": "verify opens no perf event; the perf ABI's enums and structures cost 3 ms",
}
# Nor, when every section name is one of libbpf's table, what only evspec's own names need.
LIBBPF_NAMES_AVOID = {
    "evspec.loader.sections.names": "libbpf's names are looked up in its table (the section grammar: 3 ms)",
    "json": "only --format json and the section grammar's tables need it (1.5 ms)",
}
PERF_STYLE_SOURCE = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("raw_syscalls:sys_enter")
int on_enter(void *ctx)
{
	return 0;
}
char _license[] SEC("license") = "GPL";
"""


def _verify_imports(tmp_path: Path, source: str) -> set[str]:
    require_tools("clang")
    (tmp_path / "obj.c").write_text(source)
    subprocess.run(["clang", *BPF_FLAGS, "-c", "obj.c", "-o", "obj.o"], cwd=tmp_path, check=True)
    status, modules = _modules_after(["verify", "obj.o"], tmp_path)
    assert status == 0
    assert "evspec.loader.load.live" in modules, "the import log did not cover loading"
    for top, why in VERIFY_AVOIDS.items():
        assert not _loaded(modules, top), f"{top} imported by 'evspec verify obj.o': {why}"
    return modules


def test_verify_of_a_core_object_stays_light(root_kernel: None, tmp_path: Path) -> None:
    """A libbpf-style section and CO-RE relocations against the kernel: the parts of verify
    that once imported Lark (the section grammar), walked all of vmlinux's BTF, or made dataclasses."""
    modules = _verify_imports(tmp_path, CORE_SOURCE)
    assert {"evspec.loader.btf.core_patch", "evspec.loader.sections.libbpf"} <= modules, (
        "the import log did not cover CO-RE or libbpf's section table")
    for top, why in LIBBPF_NAMES_AVOID.items():
        assert not _loaded(modules, top), f"{top} imported by 'evspec verify obj.o' of a libbpf section: {why}"


def test_verify_of_a_perf_style_section_stays_light(root_kernel: None, tmp_path: Path) -> None:
    """perf's ``SYS:EVENT`` is not a libbpf name: verify parses it over the committed tables."""
    modules = _verify_imports(tmp_path, PERF_STYLE_SOURCE)
    assert "evspec.loader.sections.lalr" in modules, "the import log did not cover the section parser"


RECORD_AVOIDS = {
    "dataclasses": "the loader's records are evspec.span.Slotted classes: the decorator, with inspect, "
                   "cost a recording's start 60 ms of CPU",
    "inspect": "it brings ast, dis, tokenize and linecache (6 ms)",
}
STDOUT_SOURCE = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
struct { __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY); __uint(key_size, sizeof(int));
         __uint(value_size, sizeof(int)); } __bpf_stdout__ SEC(".maps");
SEC("syscalls:sys_enter_getppid")
int on_getppid(void *ctx)
{
	char text[] = "hello";
	bpf_perf_event_output(ctx, &__bpf_stdout__, BPF_F_CURRENT_CPU, text, sizeof(text));
	return 0;
}
char _license[] SEC("license") = "GPL";
"""


def test_record_of_an_object_stays_light(root_kernel: None, tmp_path: Path) -> None:
    """The start of ``evspec record -e ./obj.o -- true`` (issue 25 measures it against bpftrace's)."""
    require_tools("clang")
    (tmp_path / "obj.c").write_text(STDOUT_SOURCE)
    subprocess.run(["clang", *BPF_FLAGS, "-c", "obj.c", "-o", "obj.o"], cwd=tmp_path, check=True)
    status, modules = _modules_after(["record", "-e", "./obj.o", "--", "true"], tmp_path)
    assert status == 0
    assert "evspec.loader.session" in modules, "the import log did not cover recording"
    for top, why in RECORD_AVOIDS.items():
        assert not _loaded(modules, top), f"{top} imported by 'evspec record -e ./obj.o -- true': {why}"


def test_the_kernels_copy_of_perf_format_lost_is_the_abis() -> None:
    """``Kernel.PERF_FORMAT_LOST`` is written out so that verify does not import the perf ABI."""
    from evspec.loader.abi.perf_bits import ReadFormat
    from evspec.loader.kernel import Kernel

    assert Kernel.PERF_FORMAT_LOST == ReadFormat.LOST


@pytest.mark.parametrize("order", ["<", ">"])
def test_register_classes_of_the_loader_imm_scan_hold_exactly_their_bytes(monkeypatch: pytest.MonkeyPatch,
                                                                         order: str) -> None:
    """The reader's scan for loader-only immediates writes its register bytes as ranges (a class
    of single bytes took the regex compiler 1 ms at import): the same bytes, in either byte order."""
    import re

    from evspec.loader import asm
    from evspec.loader.object import reader

    monkeypatch.setattr(asm, "_LITTLE", order == "<")
    for wanted in (range(1, 3), range(1, 16), range(0, 1), range(15, 16)):
        body = reader._regs_with_src(wanted)
        matched = {b for b in range(256) if re.fullmatch(b"[" + body + b"]", bytes([b]), re.DOTALL)}
        assert matched == {b for b in range(256) if asm.src_reg(b) in wanted}, (order, wanted)


def test_help_still_lists_every_command(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "evspec", "-h"], cwd=tmp_path, check=True,
                         capture_output=True, text=True).stdout
    for name in ("parse", "check", "fmt", "explain", "compile", "list", "system", "record", "inspect"):
        assert f"\n    {name} " in out, name
    wrong = subprocess.run([sys.executable, "-m", "evspec", "chek"], cwd=tmp_path, capture_output=True, text=True)
    assert wrong.returncode == 2 and "'record'" in wrong.stderr and "'check'" in wrong.stderr


@pytest.mark.parametrize("columns", ["50", "200", "", "junk", "-3"])
def test_help_is_sized_as_argparse_would(monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    import argparse

    from evspec.cli.app import HelpFormatter

    monkeypatch.setenv("COLUMNS", columns)
    assert HelpFormatter("evspec")._width == argparse.HelpFormatter("evspec")._width


JSON_DOCUMENTS = [
    ' [1, -2, 2.5e3, "a\\u00e9\\n\\"", null, true, false, {"k": {}, "l": []}] \n', "NaN", "[-Infinity]",
    "", "{", "{} x", "[1,]", '{"a" 1}', "\ufeff[]", '"\\x"', "[1e999]",
]


@pytest.mark.parametrize("without_accelerator", [False, True])
def test_tables_json_decodes_as_json_loads_does(monkeypatch: pytest.MonkeyPatch, without_accelerator: bool) -> None:
    import json

    if without_accelerator:
        monkeypatch.setitem(sys.modules, "_json", None)  # the import fails: json.loads is used
    tables = read_tables_text()
    assert decode_json(tables) == json.loads(tables)
    for text in JSON_DOCUMENTS:
        try:
            expected: object = json.loads(text)
        except json.JSONDecodeError as exc:
            with pytest.raises(json.JSONDecodeError) as got:
                decode_json(text)
            assert (got.value.msg, got.value.pos) == (exc.msg, exc.pos), text
        else:
            assert repr(decode_json(text)) == repr(expected), text


# ---------------------------------------------------------------------------------------------
# the records of the check path behave like the dataclasses they were


@dataclass(frozen=True, slots=True, order=True)
class SpanTwin:
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class LabelTwin:
    span: Span
    message: str


@dataclass(frozen=True, slots=True)
class SourceTwin:
    kind: str
    index: int | None = None
    path: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class DiagnosticTwin:
    code: str
    severity: Severity
    message: str
    span: Span
    labels: tuple[Label, ...] = ()
    help: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    perf_message: str | None = None
    perf_help: str | None = None
    event: str = ""
    source: Source | None = field(default=None, compare=False)
    repeats: tuple[Span, ...] = ()


@dataclass(frozen=True, slots=True)
class SpecInputTwin:
    text: str
    source: Source
    command: int


@dataclass(frozen=True, slots=True)
class CheckedSpecTwin:
    input: SpecInput
    events: object
    diagnostics: tuple[Diagnostic, ...]


@dataclass(frozen=True, slots=True)
class CacheWordTwin:
    cache_type: str
    parts: tuple[str, ...]
    part_offsets: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class KeywordTermTwin:
    name: str
    value_type: ValueType
    maximum: int | None = None


@dataclass(slots=True)
class CheckOptionsTwin:
    system: object = None
    mode: str = "record"
    cwd: Path | None = None
    clang_opts: tuple[str, ...] = ()


_ORIGIN = Source("file", path="a.events", line=3)
_EVENTS = parse("cycles:u")
# record class, its dataclass twin, two sets of constructor arguments that differ in compared fields
TWINS: list[tuple[type, type, tuple[object, ...], tuple[object, ...]]] = [
    (Span, SpanTwin, (1, 4), (1, 5)),
    (Label, LabelTwin, (Span(0, 2), "here"), (Span(0, 2), "there")),
    (Source, SourceTwin, ("file", None, "a.events", 3), ("arg", 0)),
    (Diagnostic, DiagnosticTwin,
     ("ES001", Severity.ERROR, "bad", Span(0, 1), (Label(Span(1, 2), "l"),), ("h",), ("n",), "perf", None, "x",
      _ORIGIN, (Span(3, 4),)),
     ("ES001", Severity.WARNING, "bad", Span(0, 1))),
    (SpecInput, SpecInputTwin, ("cycles:u", _ORIGIN, 1), ("cycles:u", _ORIGIN, 2)),
    (CheckedSpec, CheckedSpecTwin, (SpecInput("cycles:u", _ORIGIN, 1), _EVENTS, ()),
     (SpecInput("cycles:u", _ORIGIN, 1), parse("cycles:k"), ())),
    (CheckOptions, CheckOptionsTwin, (None, "stat"), (None, "record")),
    (CacheWord, CacheWordTwin, ("L1-dcache", ("load",), (10,)), ("L1-dcache", ("loads",), (10,))),
    (KeywordTerm, KeywordTermTwin, ("period", ValueType.NUMBER), ("aux-sample-size", ValueType.NUMBER, 0xFFFFFFFF)),
]


@pytest.mark.parametrize(("record", "twin", "args", "other"), TWINS, ids=[t[0].__name__ for t in TWINS])
def test_records_match_their_dataclass_twins(record: type, twin: type, args: tuple[object, ...],
                                             other: tuple[object, ...]) -> None:
    assert_like_twin(record, twin, args, other)


def test_diagnostics_ignore_their_source_in_equality_but_show_it() -> None:
    moved = Diagnostic("ES001", Severity.ERROR, "bad", Span(0, 1), source=Source("arg", index=0))
    assert moved == Diagnostic("ES001", Severity.ERROR, "bad", Span(0, 1), source=_ORIGIN)
    assert hash(moved) == hash(Diagnostic("ES001", Severity.ERROR, "bad", Span(0, 1)))
    assert repr(moved).endswith("source=Source(kind='arg', index=0, path=None, line=None), repeats=())")
    located = moved.located("xy", _ORIGIN)
    assert (located.event, located.source, located.located("z").source) == ("xy", _ORIGIN, _ORIGIN)
    shifted = Diagnostic("ES001", Severity.ERROR, "bad", Span(0, 1), (Label(Span(1, 2), "l"),), source=_ORIGIN,
                         event="e", repeats=(Span(5, 6),)).shifted(3)
    assert (shifted.span, shifted.labels, shifted.source, shifted.event, shifted.repeats) == (
        Span(3, 4), (Label(Span(4, 5), "l"),), _ORIGIN, "e", (Span(8, 9),))
    assert shifted.located("f").repeats == (Span(8, 9),)


def test_spans_order_validate_and_measure_like_before() -> None:
    spans = [Span(3, 4), Span(1, 9), Span(1, 2), Span(0, 0)]
    assert [(s.start, s.end) for s in sorted(spans)] == [(t.start, t.end) for t in sorted(
        SpanTwin(s.start, s.end) for s in spans)]
    assert Span(1, 2) < Span(1, 3) <= Span(1, 3) and Span(2, 2) > Span(1, 9) >= Span(1, 9)
    with pytest.raises(TypeError):
        Span(1, 2) < (1, 3)  # type: ignore[operator]  # noqa: B015
    for start, end in ((-1, 0), (3, 2)):
        with pytest.raises(ValueError, match="invalid span"):
            Span(start, end)
    assert (len(Span(2, 5)), Span(2, 5).shift(1), Span(2, 5).cover(Span(0, 3)), Span(1, 3).text("abcd")) == (
        3, Span(3, 6), Span(0, 5), "bc")


def test_a_record_must_annotate_its_slots_in_order_and_is_final() -> None:
    with pytest.raises(TypeError, match="annotate exactly"):
        class Broken(Slotted):
            __slots__ = ("a", "b")
            b: int
            a: int
    with pytest.raises(TypeError, match="cannot be subclassed"):
        class Wider(Span):
            __slots__ = ("width",)
            width: int
