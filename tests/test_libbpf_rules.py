"""What ``record`` refuses of an object before its first system call (``lint.libbpf_rules`` and
linking every program, ``object.link``), ``evspec check`` refuses too, without a kernel: each
refusal on hand-made specs through the object check, and one object refused alike by both
commands (the record run needs root)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from bpf_build import build_bpf, copy_sources, require_tools
from evspec.loader.errors import ObjectError
from evspec.loader.lint.event import ObjectEnvironment, check_bpf_event
from evspec.loader.lint.libbpf_rules import check_libbpf_rules
from evspec.loader.object.link import link_every_program
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec, ProgramSpec, Relocation
from record_cli import run_record

from evspec.ast import BpfEvent
from evspec.cli import main
from evspec.cli.app import EXIT_FINDINGS
from evspec.diagnostics import Diagnostic, Severity
from evspec.span import Span

DATA = Path(__file__).parent / "data" / "libbpf_rules"
EXIT = b"\x95" + bytes(7)
LD_IMM64 = b"\x18\x01" + bytes(14)  # r1 = imm64 (two instructions)
CALL = b"\x85\x10" + bytes(2) + b"\xff\xff\xff\xff"  # a bpf-to-bpf call (src_reg 1)
PATH = "./x.o"


def program(name: str = "on_enter", section: str = "raw_syscalls:sys_enter", insns: bytes = EXIT,
            *relocations: Relocation) -> ProgramSpec:
    return ProgramSpec(name, section, insns, relocations=relocations)


def obj(*programs: ProgramSpec, maps: tuple[MapSpec, ...] = (), subprograms: tuple[ProgramSpec, ...] = ()
        ) -> ObjectSpec:
    return ObjectSpec(PATH, "GPL", None, maps, programs or (program(),), subprograms=subprograms)


def check(tmp_path: Path, spec: ObjectSpec, **env: object) -> list[Diagnostic]:
    """The object check of ``./x.o`` (read as ``spec``) on a system with every tracepoint."""
    (tmp_path / "x.o").write_bytes(b"\x7fELF")
    environment = ObjectEnvironment(cwd=tmp_path, tracepoint_exists=lambda s, e: True, kprobe_events=True,
                                    uprobe_events=True, read_object=lambda _path: spec, **env)  # type: ignore[arg-type]
    event = BpfEvent(PATH, False, None, None, Span(0, len(PATH)), Span(0, len(PATH)))
    return check_bpf_event(event, environment, {})


def refusal(tmp_path: Path, spec: ObjectSpec) -> Diagnostic:
    errors = [d for d in check(tmp_path, spec) if d.severity is Severity.ERROR]
    assert len(errors) == 1, [d.message for d in errors]
    assert errors[0].span == Span(0, len(PATH))
    return errors[0]


def test_a_static_function_in_a_program_section(tmp_path: Path) -> None:
    spec = obj(subprograms=(program("local_fn", "raw_syscalls:sys_exit"),))
    d = refusal(tmp_path, spec)
    assert (d.code, d.message) == ("EB006", (
        "'./x.o': section 'raw_syscalls:sys_exit': function 'local_fn' is static; libbpf refuses a static "
        "function in a program section (\"program is static and not supported\")"))
    assert d.help == ("move it to .text (drop its section attribute) or make it a global program",)


def test_calls_and_callbacks_into_a_program_section(tmp_path: Path) -> None:
    other = program("other", "raw_syscalls:sys_exit")
    caller = program("on_enter", "raw_syscalls:sys_enter", CALL + EXIT, Relocation(0, "call", "other", "other"))
    d = refusal(tmp_path, obj(caller, other))
    assert d.code == "EB007" and "calls global function 'other' of program section" in d.message
    taker = program("on_enter", "raw_syscalls:sys_enter", LD_IMM64 + EXIT, Relocation(0, "func", "other", "other"))
    d = refusal(tmp_path, obj(taker, other))
    assert d.code == "EB007" and "takes the address of 'other', a function of program section" in d.message


def test_maps_libbpf_refuses(tmp_path: Path) -> None:
    legacy = MapSpec("old", MapType.HASH, 4, 4, 8, legacy=True, section="maps", legacy_extra=(("pinning", 2),))
    assert refusal(tmp_path, obj(maps=(legacy,))).message.startswith(
        "'./x.o': legacy map 'old' (section 'maps'): pinning 2: these fields")
    outer = MapSpec("outer", MapType.ARRAY_OF_MAPS, 4, 4, 2)
    assert "map 'outer' (ARRAY_OF_MAPS) has no inner map definition" in refusal(tmp_path, obj(maps=(outer,))).message


def test_a_map_in_map_must_follow_the_maps_it_holds(tmp_path: Path) -> None:
    inner = MapSpec("outer.inner", MapType.ARRAY, 4, 4, 1)
    held = MapSpec("held", MapType.ARRAY, 4, 4, 1)
    outer = MapSpec("outer", MapType.ARRAY_OF_MAPS, 4, 4, 2, inner=inner, initial_slots=((1, "held"),))
    assert check(tmp_path, obj(maps=(held, outer))) == []
    d = refusal(tmp_path, obj(maps=(outer, held)))
    assert (d.code, d.message) == ("EK010", "'./x.o': map 'outer' slot [1]: map 'held' is declared after it; "
                                   "libbpf fills a map-in-map when it is created, so the maps it holds must come first")


def test_a_prog_array_cannot_hold_a_program_loaded_after_the_object(tmp_path: Path) -> None:
    """A probe program whose definition fetches arguments is loaded after the object, with its
    argument prologue in front: a prog array's initial values cannot name it."""
    probe = program("probe", "myprobe=do_sys_open %di")
    slots = MapSpec("jumps", MapType.PROG_ARRAY, 4, 4, 2, initial_slots=((0, "probe"),))
    d = refusal(tmp_path, obj(program(), probe, maps=(slots,)))
    assert d.code == "EB014" and "its initial values name program(s) 'probe', which are loaded after" in d.message
    plain = program("probe", "myprobe=do_sys_open")  # no arguments: loaded with the object
    assert check(tmp_path, obj(program(), plain, maps=(slots,))) == []


def test_programs_that_do_not_link(tmp_path: Path) -> None:
    lost = program("on_enter", "raw_syscalls:sys_enter", LD_IMM64 + EXIT, Relocation(0, "map", "gone", "gone"))
    d = refusal(tmp_path, obj(lost))
    assert (d.code, d.message) == ("EK010", "program 'on_enter', instruction 0: refers to map 'gone', which the "
                                   "object lacks")
    wrong = program("on_enter", "raw_syscalls:sys_enter", EXIT + EXIT, Relocation(0, "call", "sub", "sub"))
    d = refusal(tmp_path, obj(wrong, subprograms=(program("sub", ".text"),)))
    assert "expected a bpf-to-bpf call (opcode 0x85, src_reg 1), found opcode 0x95" in d.message


def test_extern_relocations_wait_for_the_externs(tmp_path: Path) -> None:
    """A kfunc call and a typed ksym are patched when the externs are resolved (on the target
    system), before anything is linked: linking leaves them out until then."""
    kfunc = program("on_enter", "raw_syscalls:sys_enter", CALL + LD_IMM64 + EXIT,
                    Relocation(0, "kfunc", "bpf_rcu_read_lock", "bpf_rcu_read_lock"),
                    Relocation(1, "ksym", "bpf_prog_active", "bpf_prog_active"))
    link_every_program(obj(kfunc))
    with pytest.raises(ObjectError, match="extern 'bpf_rcu_read_lock' is not resolved"):
        link_every_program(replace(obj(kfunc), externs_applied=True))


def test_the_rules_come_after_the_section_names(tmp_path: Path) -> None:
    """A section name evspec cannot read is the primary error; what the loader would refuse of
    such an object is not said on top of it."""
    spec = obj(program("on_enter", "raw_syscalls:"), subprograms=(program("local_fn", "raw_syscalls:sys_exit"),))
    assert [d.code for d in check(tmp_path, spec) if d.severity is Severity.ERROR] != ["EB006"]
    with pytest.raises(ObjectError, match="is static"):
        check_libbpf_rules(spec)


def test_check_refuses_what_record_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str], root_kernel: None) -> None:
    """The same object, the same refusal: ``record`` says it before loading anything, ``check``
    without a kernel."""
    require_tools("clang")
    copy_sources(DATA, ("static_in_section.c",), tmp_path)
    build_bpf(tmp_path, "static_in_section.c", "static_in_section.o")
    monkeypatch.chdir(tmp_path)
    words = ("section 'raw_syscalls:sys_exit': function 'local_fn' is static; libbpf refuses a static function "
             "in a program section")
    status, out, err = run_record("-e", "./static_in_section.o", "--", "true")
    assert status != 0 and out == "" and words in err, err
    assert main(["check", "--system", "live", "-e", "./static_in_section.o"]) == EXIT_FINDINGS
    report = capsys.readouterr().err
    assert "error[EB006]: './static_in_section.o': " + words in report, report
