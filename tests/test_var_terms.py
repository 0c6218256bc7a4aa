"""var:NAME=VALUE object terms (COMPAT 1.14): checked offline against the object's BTF (exact spans
and messages), written into its data maps before loading, and seen by the program in a live run."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from bpf_build import build_bpf, build_program, copy_sources, require_tools
from corpus_files import CORPUS, DATA
from evspec.loader.btf.reader import Btf
from evspec.loader.lint.terms.variables import apply_var_terms, global_variables
from evspec.loader.object.reader import read_object
from golden_files import check_golden
from record_cli import run_record as _record

from evspec.check import CheckOptions, check_specs
from evspec.compiler.recording import recording_plan
from evspec.diagnostics import Source
from evspec.inputs import SpecInput
from evspec.parser import parse
from evspec.system import read_snapshot

GOOD = ("./vars.o/var:targ_pid=42,var:delta='-5',var:verbose=true,var:mode=MODE_TRACE,"
        "var:targ_comm='bash',var:seed=3,var:calls=0x10/")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """vars.o (the globals and maps) and varswork (calls getppid() N times), built once."""
    require_tools("clang", "cc")
    out = tmp_path_factory.mktemp("vars")
    copy_sources(DATA / "vars", ("vars.c", "kinds.c", "varswork.c"), out)
    build_program(out, "varswork.c", "varswork")
    build_bpf(out, "vars.c", "vars.o")
    build_bpf(out, "kinds.c", "kinds.o")
    return out


def _check(built: Path, *strings: str) -> list[tuple[str, int, int, str]]:
    inputs = [SpecInput(s, Source("arg", index=i), command=0) for i, s in enumerate(strings)]
    checked = check_specs(inputs, CheckOptions(system=read_snapshot(CORPUS / "system.json"), cwd=built))
    return [(d.code, d.span.start, d.span.end, d.message) for c in checked for d in c.diagnostics]


def test_values_of_every_kind_are_accepted(built: Path) -> None:
    assert _check(built, GOOD) == []


GLOBALS = "global variables of the object: calls, where, seed, targ_pid, delta, verbose, mode, targ_comm, cfg"


@pytest.mark.parametrize(("string", "expected"), [
    ("./vars.o/var:targ_pdi=42/", ("EB138", 13, 21, "the object has no global variable 'targ_pdi'")),
    ("./vars.o/var:delta=300/", ("EB139", 19, 22, "300 is out of range for 'delta' (a signed 8-bit integer: -128 to 127)")),
    ("./vars.o/var:delta='-129'/", ("EB139", 19, 25, "-129 is out of range for 'delta' (a signed 8-bit integer: -128 to 127)")),
    ("./vars.o/var:targ_pid=4294967296/",
     ("EB139", 22, 32, "4294967296 is out of range for 'targ_pid' (an unsigned 32-bit integer: 0 to 4294967295)")),
    ("./vars.o/var:targ_pid=bash/",
     ("EB139", 22, 26, "'targ_pid' is an unsigned 32-bit integer: it takes an integer from 0 to 4294967295")),
    ("./vars.o/var:verbose=2/", ("EB139", 21, 22, "2 is out of range for 'verbose' (a bool: 0 or 1, or true or false)")),
    ("./vars.o/var:verbose='1'/", ("EB139", 21, 24, "'verbose' is a bool: it takes true or false (or 1 or 0)")),
    ("./vars.o/var:verbose=yes/", ("EB139", 21, 24, "'verbose' is a bool: it takes true or false (or 1 or 0)")),
    ("./vars.o/var:mode=MODE_TRACY/",
     ("EB139", 18, 28, "'mode' is an enum mode: it takes one of MODE_OFF, MODE_COUNT, MODE_TRACE "
                       "(did you mean 'MODE_TRACE'?)")),
    ("./vars.o/var:targ_comm='0123456789abcdef'/",
     ("EB139", 23, 41, "'0123456789abcdef' is 16 bytes: 'targ_comm' is a char[16] (at most 15 bytes and the NUL)")),
    ("./vars.o/var:targ_comm=7/", ("EB139", 23, 24, "'targ_comm' is a char[16]: it takes a string ('text')")),
    ("./vars.o/var:cfg=1/",
     ("EB150", 13, 16, "variable 'cfg' has type struct cfg: var: sets integers, bools, enums, floats and char arrays")),
    ("./vars.o/var:where=0/",
     ("EB150", 13, 18, "variable 'where' has type int *: var: sets integers, bools, enums, floats and char arrays")),
])
def test_bad_values_are_errors_on_the_name_or_the_value(built: Path, string: str, expected: tuple) -> None:
    assert _check(built, string) == [expected]


def test_an_unknown_variable_lists_the_globals_with_a_guess(built: Path) -> None:
    inputs = [SpecInput("./vars.o/var:targ_pdi=42/", Source("arg", index=0), command=0)]
    checked = check_specs(inputs, CheckOptions(system=read_snapshot(CORPUS / "system.json"), cwd=built))
    (diag,) = checked[0].diagnostics
    assert diag.help == ("did you mean 'targ_pid'?", GLOBALS)


@pytest.mark.parametrize(("string", "expected"), [
    ("./vars.o/var:targ_pid/", ("ES049", 9, 21, "'var:targ_pid' has no value (missing '=')")),
    ("./vars.o/var:=1/", ("ES049", 9, 13, "empty variable name")),
    ("./vars.o/var:mode.x=1/", ("ES049", 17, 19, "a variable name has no '.' part ('.x')")),
])
def test_shape_errors_come_from_the_syntax_stage_alone(built: Path, string: str, expected: tuple) -> None:
    assert _check(built, string) == [expected]


@pytest.mark.parametrize(("value", "stored"), [("1", b"\x01"), ("0", b"\x00"), ("true", b"\x01"),
                                             ("false", b"\x00"), ("0x1", b"\x01")])
def test_a_bool_takes_1_and_0_as_c_writes_them(built: Path, value: str, stored: bytes) -> None:
    string = f"./vars.o/var:verbose={value}/"
    assert _check(built, string) == []
    spec = apply_var_terms(parse(string).events()[0], read_object(built / "vars.o"))  # type: ignore[arg-type]
    var = global_variables(spec, Btf(spec.btf or b""))["verbose"]
    data = spec.map(var.map_name)
    assert data is not None and data.initial_value is not None
    assert data.initial_value[var.offset:var.offset + var.size] == stored


def test_a_variable_set_twice_warns_and_the_last_value_is_written(built: Path) -> None:
    string = "./vars.o/var:targ_pid=1,var:targ_pid=2/"
    assert _check(built, string) == [("WS003", 24, 36, "variable 'targ_pid' set twice; the last value is used")]
    spec = apply_var_terms(parse(string).events()[0], read_object(built / "vars.o"))  # type: ignore[arg-type]
    var = global_variables(spec, Btf(spec.btf or b""))["targ_pid"]
    data = spec.map(var.map_name)
    assert data is not None and data.initial_value is not None
    assert data.initial_value[var.offset:var.offset + 4] == (2).to_bytes(4, "little")


def test_the_values_land_at_the_variables_offsets(built: Path) -> None:
    """The new spec's .rodata/.data/.bss bytes hold each value at its ELF symbol's offset; the
    object read from disk is left as it was."""
    original = read_object(built / "vars.o")
    spec = apply_var_terms(parse(GOOD).events()[0], original)  # type: ignore[arg-type]
    variables = global_variables(spec, Btf(spec.btf or b""))
    expected = {"targ_pid": (42).to_bytes(4, "little"), "delta": b"\xfb", "verbose": b"\x01",
                "mode": (2).to_bytes(4, "little"), "targ_comm": b"bash".ljust(16, b"\0"),
                "seed": (3).to_bytes(4, "little"), "calls": (16).to_bytes(8, "little")}
    for name, raw in expected.items():
        var = variables[name]
        data = spec.map(var.map_name)
        assert data is not None and data.initial_value is not None
        assert data.initial_value[var.offset:var.offset + var.size] == raw, name
    assert {m.name: m.readonly for m in spec.maps} == {m.name: m.readonly for m in original.maps}
    before = original.map("vars.rodata")
    assert before is not None and before.initial_value == bytes(before.value_size)


def test_the_program_sees_the_values_set(built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kind of variable set by var: terms reaches the program, which copies them into 'seen';
    the comm filter (a char[16] in .rodata) keeps exactly the workload's 20 getppid() calls."""
    monkeypatch.chdir(built)
    status, out, err = _record("--format", "json", "--dump-maps=seen,vars.rodata", "-e",
                               "./vars.o/var:targ_comm='varswork',var:delta='-5',var:verbose=true,"
                               "var:mode=MODE_TRACE,var:seed=3/", "--", "./varswork", "20")
    assert status == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0] == {"map": "seen", "key": 0, "value": {
        "pid_filter": 0, "delta": -5, "verbose": 1, "mode": "MODE_TRACE", "comm": "varswork", "seed": 3, "pad": 0,
        "calls": 20}}
    assert lines[1]["map"] == "vars.rodata" and lines[1]["value"]["targ_comm"] == "varswork"
    assert lines[-1] == {"summary": {"samples": 0, "lost": 0}}


def test_rodata_stays_frozen_after_the_write(built: Path, root_kernel: None) -> None:
    """The .rodata map holding the values is frozen: user space cannot write it again."""
    from evspec.loader.kernel import KernelError
    from evspec.loader.session import RecordSession, Workload

    from evspec.system import load_system

    system = load_system("live")
    inputs = [SpecInput("./vars.o/var:targ_pid=7/", Source("arg", index=0), command=0)]
    lists = [c.events for c in check_specs(inputs, CheckOptions(system=system, mode="record", cwd=built))]
    workload = Workload([str(built / "varswork"), "1"])
    try:
        with RecordSession() as session:
            session.prepare(lists, recording_plan(lists, system), system, built, workload)  # type: ignore[arg-type]
            live = session.objects[0].live
            rodata = live.map("vars.rodata")
            value = session.kernel.lookup(rodata.fd, bytes(4), rodata.spec.value_size)
            assert value is not None and value[:4] == (7).to_bytes(4, "little")
            with pytest.raises(KernelError):
                session.kernel.update_elem(rodata.fd, bytes(4), bytes(rodata.spec.value_size))
    finally:
        workload.close()


# ------------------------------------------------------------------- kinds.c: the other kinds

KINDS = ("./kinds.o/var:ratio='0.25',var:scale='-1.5',var:targ_tgid='-7',"
         "var:offset_ns='-9223372036854775808',var:mask=0xffffffffffffffff,var:level=LEVEL_LOW/")
KINDS_BYTES = {"ratio": struct.pack("<d", 0.25), "scale": struct.pack("<f", -1.5),
               "targ_tgid": (-7).to_bytes(4, "little", signed=True),
               "offset_ns": (-1 << 63).to_bytes(8, "little", signed=True), "mask": b"\xff" * 8,
               "level": (-1).to_bytes(4, "little", signed=True)}


def test_floats_64_bit_and_typedef_integers_and_signed_enums_are_set(built: Path) -> None:
    assert _check(built, KINDS) == []
    spec = apply_var_terms(parse(KINDS).events()[0], read_object(built / "kinds.o"))  # type: ignore[arg-type]
    variables = global_variables(spec, Btf(spec.btf or b""))
    rodata = spec.map("kinds.rodata")
    assert rodata is not None and rodata.initial_value is not None
    for name, raw in KINDS_BYTES.items():
        var = variables[name]
        assert rodata.initial_value[var.offset:var.offset + var.size] == raw, name
    integer = apply_var_terms(parse("./kinds.o/var:ratio=3/").events()[0], read_object(built / "kinds.o"))  # type: ignore[arg-type]
    data = integer.map("kinds.rodata")
    assert data is not None and data.initial_value is not None
    assert data.initial_value[variables["ratio"].offset:][:8] == struct.pack("<d", 3.0)  # an integer for a double


@pytest.mark.parametrize(("string", "expected"), [
    ("./kinds.o/var:ratio=half/",
     ("EB139", 20, 24, "'ratio' is a double: it takes a number (quoted when it has a point, a sign or an "
                       "exponent: '0.25', '-1e3')")),
    ("./kinds.o/var:scale='1e39'/", ("EB139", 20, 26, "1e39 is out of range for 'scale' (a float)")),
    ("./kinds.o/var:ratio='0.2.5'/",
     ("EB139", 20, 27, "'ratio' is a double: it takes a number (quoted when it has a point, a sign or an "
                       "exponent: '0.25', '-1e3')")),
    ("./kinds.o/var:targ_tgid=2147483648/",
     ("EB139", 24, 34, "2147483648 is out of range for 'targ_tgid' (a signed 32-bit integer: -2147483648 to "
                       "2147483647)")),
    ("./kinds.o/var:mask='-1'/",
     ("EB139", 19, 23, "-1 is out of range for 'mask' (an unsigned 64-bit integer: 0 to 18446744073709551615)")),
    ("./kinds.o/var:level=LEVEL_MID/",
     ("EB139", 20, 29, "'level' is an enum level: it takes one of LEVEL_LOW, LEVEL_HIGH (did you mean "
                       "'LEVEL_HIGH'?)")),
    ("./kinds.o/var:cpus=1/",
     ("EB150", 14, 18, "variable 'cpus' has type unsigned int[4]: var: sets integers, bools, enums, floats and char arrays")),
    ("./kinds.o/var:either=1/",
     ("EB150", 14, 20, "variable 'either' has type union either: var: sets integers, bools, enums, floats and "
                       "char arrays")),
])
def test_the_other_kinds_bad_values_are_errors_with_exact_spans(built: Path, string: str, expected: tuple) -> None:
    assert _check(built, string) == [expected]


def test_the_program_sees_floats_and_64_bit_values(built: Path, root_kernel: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(built)
    status, out, err = _record("--format", "json", "--dump-maps=seen", "-e", KINDS, "--", "./varswork", "3")
    assert status == 0, err
    seen = json.loads(out.splitlines()[0])
    assert seen["map"] == "seen"
    assert seen["value"] == {
        "ratio_bits": int.from_bytes(KINDS_BYTES["ratio"], "little"),
        "scale_bits": int.from_bytes(KINDS_BYTES["scale"], "little"), "targ_tgid": -7,
        "offset_ns": -1 << 63, "mask": (1 << 64) - 1, "level": -1, "cpu0": 0}


def test_the_bad_cases_as_check_prints_them(built: Path) -> None:
    """Every refused var: term of both fixtures, rendered as `evspec check` prints it (golden)."""
    from evspec.render.text import render_text

    strings = [
        "./vars.o/var:targ_pdi=42/", "./vars.o/var:delta=300/", "./vars.o/var:delta='-129'/",
        "./vars.o/var:delta=-5/", "./vars.o/var:verbose=2/", "./vars.o/var:mode=MODE_TRACY/",
        "./vars.o/var:targ_comm='0123456789abcdef'/", "./vars.o/var:targ_comm=7/", "./vars.o/var:cfg=1/",
        "./vars.o/var:where=0/", "./vars.o/var:x.y=1/", "./vars.o/var:targ_pid=1,var:targ_pid=2/",
        "./kinds.o/var:ratio=half/", "./kinds.o/var:scale='1e39'/", "./kinds.o/var:mask='-1'/",
        "./kinds.o/var:level=LEVEL_MID/", "./kinds.o/var:cpus=1/", "./kinds.o/var:either=1/",
    ]
    inputs = [SpecInput(s, Source("arg", index=i), command=i) for i, s in enumerate(strings)]
    checked = check_specs(inputs, CheckOptions(system=read_snapshot(CORPUS / "system.json"), cwd=built))
    check_golden("var_terms/bad.txt", render_text([d for c in checked for d in c.diagnostics]))
