"""The full check of BPF events against their objects.

Unit tests run with a fake reader returning hand-made ObjectSpecs; the corpus test runs the real
reader over the built fixtures (``bpf_fixtures``) with tracefs as the tracepoint oracle.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.lint.event import (
    SYNTAX_STAGE_CODES,
    ObjectEnvironment,
    TracefsTracepoints,
    bpf_event_facts,
    check_bpf_event,
    elf_function_symbols,
    environment_from_system,
)
from evspec.loader.lint.terms.maps import EventFacts, EventKind, facts_for_event
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec, ProgramSpec

from evspec.ast import BpfEvent, Event, EventList, Group, SymbolEvent, SymbolKind, Term, TermKind, Terms
from evspec.diagnostics import Diagnostic, Severity
from evspec.span import Span

TRACEFS = Path("/sys/kernel/tracing")
IN_CI = os.environ.get("CI") == "true"
TARGET = "/opt/app/target"  # the uprobe target of the fake environment
TARGET_SYMBOLS = frozenset({"main", "myfn1", "myfn2", "_start"})
TRACEPOINTS = {("raw_syscalls", "sys_enter"), ("raw_syscalls", "sys_exit"), ("syscalls", "sys_enter_write")}


def prog(section: str, name: str = "prog") -> ProgramSpec:
    return ProgramSpec(name, section, b"\x95" + b"\x00" * 7)


def spec(*sections: str, maps: tuple[MapSpec, ...] = ()) -> ObjectSpec:
    return ObjectSpec("x.o", "GPL", None, maps, tuple(prog(s, f"p{i}") for i, s in enumerate(sections)))


def event(path: str, terms: tuple[Term, ...] | None = None) -> BpfEvent:
    """A BPF event at the start of a string; terms with spans made up by the caller."""
    t = Terms(terms, Span(len(path), len(path) + 2)) if terms is not None else None
    return BpfEvent(path, path.endswith(".c"), t, None, Span(0, len(path)), Span(0, len(path)))


class Files:
    """A fake world: object files present in tmp_path, their specs, compile/read call logs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.specs: dict[str, ObjectSpec | ObjectError] = {}
        self.read: list[Path] = []
        self.compiled: list[Path] = []

    def add(self, name: str, content: ObjectSpec | ObjectError) -> None:
        (self.root / name).write_bytes(b"\x7fELF")
        self.specs[name] = content

    def read_object(self, path: Path) -> ObjectSpec:
        self.read.append(path)
        found = self.specs[path.name]
        if isinstance(found, ObjectError):
            raise found
        return found

    def compile_source(self, path: Path) -> Path:
        self.compiled.append(path)
        out = path.with_suffix(".o")
        self.specs[out.name] = self.specs[path.name]
        return out

    def env(self, **kw: object) -> ObjectEnvironment:
        base: dict[str, object] = dict(
            cwd=self.root,
            tracepoint_exists=lambda s, e: any(fnmatch.fnmatchcase(ts, s) and fnmatch.fnmatchcase(te, e)
                                               for ts, te in TRACEPOINTS),
            kprobe_events=False,
            uprobe_events=True,
            read_object=self.read_object,
            compile_source=self.compile_source,
            read_symbols=self.symbols,
        )
        base.update(kw)
        return ObjectEnvironment(**base)  # type: ignore[arg-type]

    @staticmethod
    def symbols(path: Path) -> frozenset[str]:
        if path == Path(TARGET):
            return TARGET_SYMBOLS
        raise ObjectError("EB145", f"'{path}' is not an ELF file")


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Files:
    real_is_file = Path.is_file

    def is_file(self: Path) -> bool:  # the fake uprobe target exists
        return str(self) == TARGET or real_is_file(self)

    monkeypatch.setattr(Path, "is_file", is_file)
    return Files(tmp_path)


def codes(diags: list[Diagnostic]) -> list[str]:
    return [d.code for d in diags]


def only(diags: list[Diagnostic]) -> Diagnostic:
    assert len(diags) == 1, [d.message for d in diags]
    return diags[0]


# --------------------------------------------------------------------------------------------
# the file and the object


def test_missing_object(files: Files) -> None:
    d = only(check_bpf_event(event("./nosuch.o"), files.env(), {}))
    assert (d.code, d.span, d.severity) == ("EB140", Span(0, 10), Severity.ERROR)
    assert d.message == "BPF object './nosuch.o' not found"
    assert d.perf_message == "Failed to load ./nosuch.o: No such file or directory"
    assert files.read == []


def test_missing_source_is_named_a_source(files: Files) -> None:
    assert only(check_bpf_event(event("prog.c"), files.env(), {})).message == "BPF source 'prog.c' not found"


def test_absolute_path_is_not_taken_from_cwd(files: Files) -> None:
    files.add("m.o", spec("raw_syscalls:sys_enter"))
    assert check_bpf_event(event(str(files.root / "m.o")), files.env(cwd=Path("/nonexistent")), {}) == []


def test_directory(files: Files) -> None:
    (files.root / "d.o").mkdir()
    d = only(check_bpf_event(event("d.o"), files.env(), {}))
    assert (d.code, d.perf_message) == ("EB141", "Failed to load d.o: Is a directory")


def test_reader_errors_pass_through_with_the_path_as_written(files: Files) -> None:
    path = files.root / "x86.o"
    err = ObjectError("EB003", f"{path}: not a BPF object: ELF machine is x86-64",
                      perf_message=f"Failed to load {path}: BPF object format invalid", detail="e_machine 62")
    files.add("x86.o", err)
    d = only(check_bpf_event(event("./x86.o"), files.env(), {}))
    assert (d.code, d.span) == ("EB003", Span(0, 7))
    assert d.message == "'./x86.o': not a BPF object: ELF machine is x86-64"
    assert d.perf_message == "Failed to load ./x86.o: BPF object format invalid" and d.notes == ("e_machine 62",)


def test_object_errors_come_before_its_terms(files: Files) -> None:
    files.add("bad.o", ObjectError("EB002", "not an ELF file"))
    term = Term(TermKind.USER, "foo", None, Span(9, 12), Span(9, 12))
    assert codes(check_bpf_event(event("./bad.o", (term,)), files.env(), {})) == ["EB002"]


def test_sources_are_compiled_then_read(files: Files) -> None:
    files.add("prog.c", spec("raw_syscalls:sys_enter"))
    assert check_bpf_event(event("prog.c"), files.env(), {}) == []
    assert files.compiled == [files.root / "prog.c"] and files.read == [files.root / "prog.o"]


def test_compile_errors_are_reported_on_the_path(files: Files) -> None:
    (files.root / "bad.c").write_text("int x(")

    def fail(path: Path) -> Path:
        raise ObjectError("EB012", "clang failed", detail="bad.c:1:7: error: expected ')'",
                          perf_message="Failed to load bad.c from source: Error when compiling BPF scriptlet")

    d = only(check_bpf_event(event("bad.c"), files.env(compile_source=fail), {}))
    assert (d.code, d.span, d.notes) == ("EB012", Span(0, 5), ("bad.c:1:7: error: expected ')'",))


def test_no_programs_and_its_terms_still_checked(files: Files) -> None:
    from evspec.ast import MapTerm, Number

    files.add("noprog.o", spec(maps=(MapSpec("onlymap", MapType.ARRAY, 4, 4, 1),)))
    text = "./noprog.o/map:onlymap.value=1,map:nosuch.value=1/"
    t1 = MapTerm("onlymap", "value", None, Number(1, "1", Span(29, 30)), Span(11, 30), Span(11, 27),
                 Span(15, 22), Span(23, 28))
    t2 = MapTerm("nosuch", "value", None, Number(1, "1", Span(49, 50)), Span(31, 50), Span(31, 46),
                 Span(35, 41), Span(42, 47))
    diags = check_bpf_event(event("./noprog.o", (t1, t2)), files.env(), {})
    assert [(d.code, d.span.text(text)) for d in diags] == [("EB142", "./noprog.o"), ("EB123", "nosuch")]
    assert diags[0].perf_message == "WARNING: event parser found nothing"


# --------------------------------------------------------------------------------------------
# sections


def test_section_error_on_the_path_with_the_section_in_a_note(files: Files) -> None:
    files.add("badkv.o", spec("foo=bar;func=do_sys_openat2"))
    d = only(check_bpf_event(event("./badkv.o"), files.env(), {}))
    assert (d.code, d.span) == ("EB104", Span(0, 9))
    assert d.message == "section 'foo=bar;func=do_sys_openat2': unknown program setting 'foo'"
    assert d.perf_message == "Invalid program config term in config string (add -v to see detail)"
    assert d.notes[:2] == ('program p0: SEC("foo=bar;func=do_sys_openat2")', " " * 17 + "^^^")


def test_section_warnings_become_warnings_on_the_path(files: Files) -> None:
    files.add("noval.o", spec(f"exec={TARGET};novalue;probe10=myfn2"))
    d = only(check_bpf_event(event("./noval.o"), files.env(), {}))
    assert (d.code, d.severity, d.span) == ("WB109", Severity.WARNING, Span(0, 9))
    assert d.perf_message == "WARNING: invalid config in BPF object: novalue"


@pytest.mark.parametrize(
    "section",
    [
        "tracepoint/syscalls/sys_enter_write",
        "tp/syscalls/sys_enter_write",
        "kprobe/do_sys_openat2",
        "kretprobe/do_sys_openat2",
        "xdp",
        "tc",
        "raw_tp/sys_enter",
        "raw_tracepoint/sys_exit",
        f"uprobe/{TARGET}:myfn1",
        f"uretprobe/{TARGET}:myfn2",
    ],
)
def test_libbpf_sections_record_runs_are_accepted(files: Files, section: str) -> None:
    """Decision 10: libbpf's names are evspec's language; `check --perf` predicts perf's refusal."""
    files.add("lb.o", spec(section))
    assert check_bpf_event(event("./lb.o"), files.env(kprobe_events=True), {}) == []


@pytest.mark.parametrize(("section", "kind"), [("socket", "socket")])
def test_libbpf_sections_record_cannot_attach_are_refused(files: Files, section: str, kind: str) -> None:
    files.add("lb.o", spec(section))
    d = only(check_bpf_event(event("./lb.o"), files.env(), {}))
    assert (d.code, d.span, d.perf_message) == ("EB108", Span(0, 6), None)
    assert d.message == f"section '{section}': evspec record cannot attach {kind} programs yet"


def test_libbpf_kprobe_without_kprobe_events(files: Files) -> None:
    """perf's words belong to perf's own sections only: perf refuses this one for its name."""
    files.add("kp2.o", spec("kprobe/do_sys_openat2"))
    d = only(check_bpf_event(event("./kp2.o"), files.env(), {}))
    assert (d.code, d.span, d.perf_message) == ("EB144", Span(0, 7), None)


@pytest.mark.parametrize(
    ("section", "code"),
    [("tracepoint/nosuch/event", "EB143"), ("raw_tp/nosuch_event", "EB143"), ("uprobe//opt/app/missing:myfn1", "EB145"),
     (f"uprobe/{TARGET}:nosuchfn", "EB146")],
)
def test_libbpf_sections_are_checked_like_perf_ones(files: Files, section: str, code: str) -> None:
    files.add("lb.o", spec(section))
    d = only(check_bpf_event(event("./lb.o"), files.env(), {}))
    assert (d.code, d.span, d.perf_message) == (code, Span(0, 6), None)


def test_unknown_tracepoint(files: Files) -> None:
    files.add("badtp.o", spec("nosuchsys:nosuchevent"))
    d = only(check_bpf_event(event("./badtp.o"), files.env(), {}))
    assert (d.code, d.span, d.perf_message) == ("EB143", Span(0, 9), "Attach events in BPF object failed")
    assert "unknown tracepoint 'nosuchsys:nosuchevent'" in d.message


def test_an_unknown_tracepoint_among_other_programs_names_the_autoload_term(files: Files) -> None:
    """syncsnoop's way: one program per spelling of a syscall, some missing on a given kernel;
    the tools turn those off (bpf_program__set_autoload), the help says the term that does."""
    files.add("sync.o", spec("tracepoint/syscalls/sys_enter_nosuch_sync", "raw_syscalls:sys_enter"))
    d = only(check_bpf_event(event("./sync.o"), files.env(), {}))
    assert d.code == "EB143"
    assert d.help[-1].endswith("add prog:p0.autoload=0 to the object's terms")
    files.add("alone.o", spec("tracepoint/syscalls/sys_enter_nosuch_sync"))
    assert not any("autoload" in h for h in only(check_bpf_event(event("./alone.o"), files.env(), {})).help)


def test_tracepoints_that_cannot_be_checked_warn(files: Files) -> None:
    files.add("tp.o", spec("raw_syscalls:sys_enter"))
    d = only(check_bpf_event(event("./tp.o"), files.env(tracepoint_exists=lambda s, e: None), {}))
    assert (d.code, d.severity, d.span) == ("WB143", Severity.WARNING, Span(0, 6))


def test_bang_tracepoints_are_not_looked_up(files: Files) -> None:
    files.add("tpbang.o", spec("!nosuch:event", "raw_syscalls:sys_exit"))
    assert check_bpf_event(event("./tpbang.o"), files.env(), {}) == []


def test_section_errors_come_before_tracepoint_errors(files: Files) -> None:
    files.add("two.o", spec("nosuchsys:nosuchevent", "nocolon_noequal"))
    assert codes(check_bpf_event(event("./two.o"), files.env(), {})) == ["EB100", "EB143"]


def test_kprobes_need_kprobe_events(files: Files) -> None:
    files.add("kp.o", spec("func=do_sys_openat2"))
    d = only(check_bpf_event(event("./kp.o"), files.env(kprobe_events=False), {}))
    assert (d.code, d.span, d.perf_message) == ("EB144", Span(0, 6), "You need to check probing points in BPF file")
    assert check_bpf_event(event("./kp.o"), files.env(kprobe_events=True), {}) == []


def test_uprobes_need_uprobe_events(files: Files) -> None:
    files.add("up1.o", spec(f"exec={TARGET};probe1=myfn1"))
    assert check_bpf_event(event("./up1.o"), files.env(), {}) == []
    d = only(check_bpf_event(event("./up1.o"), files.env(uprobe_events=False), {}))
    assert (d.code, d.perf_message) == ("EB144", "You need to check probing points in BPF file")


@pytest.mark.parametrize(
    ("section", "code"),
    [
        ("exec=/opt/app/missing;p=myfn1", "EB145"),  # no such binary
        (f"exec={TARGET};p=nosuchfn", "EB146"),
        (f"exec={TARGET};p=zz*", "EB146"),  # a glob matching nothing
        (f"exec={TARGET};p=myfn* a", None),  # a glob with arguments is fine (not perf 6.1's prologue bug)
        (f"exec={TARGET};p=myfn[12]%return", None),
        (f"exec={TARGET};p=myfn1:1", None),
        (f"exec={TARGET};p=target.c:12", None),  # SRC:LINE: only debug info could tell
        (f"exec={TARGET};p=0x1130", None),
    ],
)
def test_uprobe_target_and_function(files: Files, section: str, code: str | None) -> None:
    files.add("up.o", spec(section))
    diags = check_bpf_event(event("./up.o"), files.env(), {})
    assert codes(diags) == ([code] if code else [])
    if code:
        assert diags[0].span == Span(0, 6)
        assert diags[0].perf_message == "You need to check probing points in BPF file"


def test_uprobe_target_that_is_not_elf(files: Files, tmp_path: Path) -> None:
    text = tmp_path / "script"
    text.write_text("#!/bin/sh\n")
    files.add("up.o", spec(f"exec={text};p=main"))
    d = only(check_bpf_event(event("./up.o"), files.env(), {}))
    assert d.code == "EB145" and "is not an ELF file" in d.message


def test_same_probe_twice_in_one_object(files: Files) -> None:
    files.add("dup.o", spec(f"exec={TARGET};p=myfn1", f"exec={TARGET};p=myfn2"))
    d = only(check_bpf_event(event("./dup.o"), files.env(), {}))
    assert d.code == "EB147" and "another program of this object" in d.message
    assert d.perf_message == "Probe point exist. Try 'perf probe -d \"*\"' and set 'force=yes'"
    files.add("dupf.o", spec(f"exec={TARGET};p=myfn1", f"exec={TARGET};force=yes;p=myfn2"))
    assert check_bpf_event(event("./dupf.o"), files.env(), {}) == []


def test_same_probe_from_an_earlier_event(files: Files) -> None:
    files.add("up1.o", spec(f"exec={TARGET};probe1=myfn1"))
    diags, created = bpf_event_facts(event("./up1.o"), files.env(), {})
    assert diags == []
    assert created == {"perf_bpf_probe:probe1": EventFacts(EventKind.TRACEPOINT, 2, True,
                                                            frozenset({"perf_bpf_probe:probe1"}))}
    d = only(check_bpf_event(event("./up1.o"), files.env(), created))
    assert d.code == "EB147" and "an earlier BPF event" in d.message
    files.add("up1f.o", spec(f"exec={TARGET};force=yes;probe1=myfn1"))
    assert check_bpf_event(event("./up1f.o"), files.env(), created) == []
    # return probes are other events (probe1__return)
    files.add("up1r.o", spec(f"exec={TARGET};probe1=myfn1%return"))
    assert check_bpf_event(event("./up1r.o"), files.env(), created) == []


def test_created_events(files: Files) -> None:
    files.add("tp.o", spec("raw_syscalls:sys_enter", "!raw_syscalls:sys_exit", f"exec={TARGET};p=myfn1%return"))
    no_inherit = _term(TermKind.KEYWORD, "no-inherit", 7, "no-inherit")
    diags, created = bpf_event_facts(event("./tp.o", (no_inherit,)), files.env(), {})
    assert diags == []
    assert created == {
        "raw_syscalls:sys_enter": EventFacts(EventKind.TRACEPOINT, 2, False),
        "perf_bpf_probe:p__return": EventFacts(EventKind.TRACEPOINT, 2, False,
                                               frozenset({"perf_bpf_probe:p__return"})),
    }
    files.add("bad.o", spec("raw_syscalls:sys_enter", "nosuch:event"))
    assert bpf_event_facts(event("./bad.o"), files.env(), {})[1] == {}  # an object with errors: none


# --------------------------------------------------------------------------------------------
# terms


def _term(kind: TermKind, key: str, start: int, text: str) -> Term:
    return Term(kind, key, None, Span(start, start + len(text)), Span(start, start + len(key) + (kind is TermKind.DRIVER)))


def test_event_terms_take_the_tracepoint_set(files: Files) -> None:
    from evspec.ast import MapTerm, Number

    files.add("maps.o", spec("raw_syscalls:sys_enter", maps=(MapSpec("arr", MapType.ARRAY, 4, 4, 8),)))
    text = "./maps.o/call-graph=fp,name=foo,map:nosuch.value=1,@cfg,no-inherit/"
    terms = (
        _term(TermKind.KEYWORD, "call-graph", 9, "call-graph=fp"),
        _term(TermKind.KEYWORD, "name", 23, "name=foo"),
        MapTerm("nosuch", "value", None, Number(1, "1", Span(49, 50)), Span(32, 50), Span(32, 48),
                Span(36, 42), Span(43, 48)),
        _term(TermKind.DRIVER, "cfg", 51, "@cfg"),
        _term(TermKind.KEYWORD, "no-inherit", 56, "no-inherit"),
    )
    diags = check_bpf_event(event("./maps.o", terms), files.env(), {})
    assert [(d.code, d.span.text(text)) for d in diags] == [
        ("EB148", "name"), ("EB123", "nosuch"), ("EB148", "@cfg")]
    assert diags[0].perf_message == "unknown term"


def test_check_bpf_events_leaves_syntax_stage_findings_out() -> None:
    assert {"EB148", "EB128", "EB121", "EB122", "EB127", "EB126", "EB120", "EB119"} == SYNTAX_STAGE_CODES


# --------------------------------------------------------------------------------------------
# environments


def test_tracefs_tracepoints(tmp_path: Path) -> None:
    for sys_name, ev in [("sched", "sched_switch"), ("sched", "sched_wakeup"), ("syscalls", "sys_enter_openat")]:
        (tmp_path / "events" / sys_name / ev).mkdir(parents=True)
    (tmp_path / "events" / "enable").write_text("0")
    exists = TracefsTracepoints(tmp_path / "events")
    assert exists("sched", "sched_switch") and exists("sched", "sched_*") and exists("s*", "sched_w?keup")
    assert not exists("sched", "nosuch") and not exists("nosu*", "x") and not exists("sched", "")
    assert not exists("..", "events") and not exists("enable", "x")


def test_from_tracefs_reads_features(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    (tmp_path / "uprobe_events").write_text("")
    env = ObjectEnvironment.from_tracefs(Path("/work"), tmp_path)
    assert (env.kprobe_events, env.uprobe_events, env.cwd) == (False, True, Path("/work"))


def test_environment_from_the_corpus_system() -> None:
    from evspec.system import fixtures

    env = environment_from_system(fixtures.corpus_system(), Path("/work"))
    assert (env.kprobe_events, env.uprobe_events) == (False, True)
    assert env.tracepoint_exists("raw_syscalls", "sys_enter") and env.tracepoint_exists("sched", "sched_*")
    assert not env.tracepoint_exists("nosuchsys", "nosuchevent")


def test_environment_from_a_system_without_tracefs() -> None:
    from evspec.system import model

    class NoTracefs:
        def match_tracepoints(self, system: str, event: str) -> object:
            raise model.TracefsUnavailable("tracefs is not mounted")

        def features(self) -> object:
            return model.Features(kprobe_events=True, uprobe_events=False)

        def tracepoint_systems(self) -> tuple[str, ...]:
            raise model.TracefsUnavailable("tracefs is not mounted")

    env = environment_from_system(NoTracefs(), Path("/work"))  # type: ignore[arg-type]
    assert env.tracepoint_exists("sched", "sched_switch") is None
    # no tracefs to read: a missing uprobe_events says nothing about the kernel (evspec check
    # without root on a machine with uprobes must not call its uprobe sections unusable)
    assert (env.kprobe_events, env.uprobe_events) == (True, None)


def test_probe_support_that_cannot_be_told_is_not_an_error(files: Files) -> None:
    files.add("kp.o", spec("func=do_sys_openat2"))
    assert check_bpf_event(event("./kp.o"), files.env(kprobe_events=None), {}) == []
    d = only(check_bpf_event(event("./kp.o"), files.env(kprobe_events=False), {}))
    assert d.code == "EB144"


def test_elf_function_symbols_of_a_built_binary(tmp_path: Path) -> None:
    cc = subprocess.run(["cc", "--version"], capture_output=True)
    if cc.returncode != 0:
        if IN_CI:
            pytest.fail("a C compiler is required in CI (scripts/test.sh installs gcc)")
        pytest.skip("no C compiler")
    src = tmp_path / "t.c"
    src.write_text("int myfn1(int a){return a+1;}\nstatic int hidden(void){return 0;}\n"
                   "int main(void){return myfn1(hidden());}\n")
    subprocess.run(["cc", "-O0", "-o", str(tmp_path / "t"), str(src)], check=True)
    names = elf_function_symbols(tmp_path / "t")
    assert {"myfn1", "hidden", "main"} <= names
    assert "printf" not in names  # undefined symbols are not functions of the binary


def test_elf_function_symbols_of_non_elf(tmp_path: Path) -> None:
    for content in (b"", b"hello", b"\x7fELF\x02\x01\x01" + b"\x00" * 9):
        p = tmp_path / "f"
        p.write_bytes(content)
        with pytest.raises(ObjectError) as info:
            elf_function_symbols(p)
        assert info.value.code == "EB145"
    with pytest.raises(ObjectError):
        elf_function_symbols(tmp_path / "missing")


# --------------------------------------------------------------------------------------------
# the corpus, with the real fixtures, the real reader and this machine's tracefs


@pytest.fixture(scope="module")
def tracefs() -> Path:
    if not (TRACEFS / "events").is_dir() or not any((TRACEFS / "events").iterdir()):
        if os.geteuid() != 0:
            if IN_CI:
                pytest.fail("tracefs is not mounted and mounting it needs root, which CI has")
            pytest.skip("tracefs is not mounted and mounting it needs root")
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True)
    return TRACEFS


def _event_kinds_ok(events: tuple[Event, ...]) -> bool:
    """Only BPF events plus bpf-output/software events (a FULL-ok row this test may judge)."""
    return all(
        isinstance(e, BpfEvent) or (isinstance(e, SymbolEvent) and e.kind is SymbolKind.SOFTWARE)
        for e in events
    )


def _run_full(analyze: Callable, references: object, text: str, env: ObjectEnvironment) -> tuple[list, list[Diagnostic]]:
    result = analyze(text)
    events = result.events.events()
    defined: dict[str, EventFacts] = {}
    found: list[Diagnostic] = []
    for ev in events:
        if isinstance(ev, BpfEvent):
            diags, created = bpf_event_facts(ev, env, defined)
            found.extend(diags)
            for name, facts in created.items():
                defined.setdefault(name, facts)
            continue
        for name in references.event_reference_names(ev, text):  # type: ignore[attr-defined]
            defined.setdefault(name, facts_for_event(ev))
    return list(events), found


def test_full_corpus_rows_with_bpf_objects(corpus: list, bpf_fixtures: Path, tracefs: Path) -> None:
    """Covered: every row whose STRING names a BPF object and whose FULL verdict is decided by the
    BPF events: the first FULL error lies inside a BPF event's span (errors from a non-BPF part —
    a syntax error that leaves no BPF event, say — are out of scope), or the row is FULL-ok and
    holds only BPF events and software (bpf-output) events. For these, the first error of the BPF
    checks (object, sections, probes, terms) must have the FULL span and perf's message."""
    from evspec import parser, references
    env = ObjectEnvironment.from_tracefs(bpf_fixtures, tracefs)
    covered: list[int] = []
    failures: list[str] = []
    for row in corpus:
        if not any(s in row.string for s in (".o", ".c", ".obj")):
            continue
        events, found = _run_full(parser.analyze, references, row.string, env)
        bpf = [e for e in events if isinstance(e, BpfEvent)]
        if not bpf:
            continue  # the object never became an event (syntax error, no BPF suffix)
        verdict, start, end = row.verdict(row.full)
        errors = [d for d in found if d.is_error]
        if verdict == "error":
            assert start is not None and end is not None
            if not any(e.span.start <= start and end <= e.span.end for e in bpf):
                continue
            covered.append(row.line)
            if not errors:
                failures.append(f"line {row.line} {row.string!r}: expected error@{start}-{end}, got none")
                continue
            d = errors[0]
            if (d.span.start, d.span.end) != (start, end):
                failures.append(f"line {row.line} {row.string!r}: {d.code} at {d.span} != {start}-{end}: {d.message}")
            elif row.perf_message is not None and d.perf_message != row.perf_message:
                failures.append(f"line {row.line} {row.string!r}: perf {d.perf_message!r} != {row.perf_message!r}")
        else:
            if not _event_kinds_ok(tuple(events)):
                continue
            covered.append(row.line)
            if errors:
                failures.append(f"line {row.line} {row.string!r}: expected ok, got {errors[0].code} {errors[0].message}")
    assert not failures, "\n".join(failures)
    # 69 rows name an object; 62 are covered today. The others never become a BPF event: './up1.o:u',
    # './maps.o:u', './a.o:u' (':' after an object), './maps.bpf', './maps.o.1' (suffix),
    # 'map:arr.value=-1' and 'map:arr.value[ ]=5' (syntax errors inside the term list).
    assert len(covered) >= 60, covered


def test_full_same_object_twice(bpf_fixtures: Path, tracefs: Path) -> None:
    env = ObjectEnvironment.from_tracefs(bpf_fixtures, tracefs)
    first = event("./up1.o")
    diags, created = bpf_event_facts(first, env, {})
    assert diags == [] and list(created) == ["perf_bpf_probe:probe1"]
    second = replace(first, span=Span(8, 15), path_span=Span(8, 15))
    d = only(check_bpf_event(second, env, created))
    assert (d.code, d.span) == ("EB147", Span(8, 15))
    # semi.o sets force=yes: loading it twice is fine
    diags, created = bpf_event_facts(event("./semi.o"), env, {})
    assert diags == [] and check_bpf_event(event("./semi.o"), env, created) == []


def test_check_bpf_events_with_the_corpus_system(bpf_fixtures: Path) -> None:
    from evspec.loader.lint.event import check_bpf_events

    from evspec import parser
    from evspec.system import fixtures

    system = fixtures.corpus_system(str(bpf_fixtures))
    defined: dict[str, EventFacts] = {}
    text = "bpf-output/no-inherit,name=evt/,./badtp.o,./maps.o/map:chan1.event=evt,map:hmap.value=1/"
    result = parser.analyze(text)
    diags = check_bpf_events(result.events, system, bpf_fixtures, defined)
    assert [(d.code, d.span.text(text)) for d in diags] == [("EB143", "./badtp.o"), ("EB129", "value")]
    assert defined["evt"].kind is EventKind.BPF_OUTPUT and not defined["evt"].inherit
    assert "raw_syscalls:sys_enter" not in defined  # maps.o had errors: it creates no event
    assert check_bpf_events(parser.analyze("./tpbang.o").events, system, bpf_fixtures, defined) == []
    assert "raw_syscalls:sys_exit" in defined and "raw_syscalls:sys_enter" not in defined  # '!' section
    # the same probe in a later string of the same command
    text = "./up1.o"
    assert check_bpf_events(parser.analyze(text).events, system, bpf_fixtures, defined) == []
    diags = check_bpf_events(parser.analyze(text).events, system, bpf_fixtures, defined)
    assert [d.code for d in diags] == ["EB147"]
    # syntax-stage findings are left to evspec.rules
    text = "./maps.o/map:arr.value[ 3...1]=1,name=x/"
    assert check_bpf_events(parser.analyze(text).events, system, bpf_fixtures, {}) == []


def test_group_members_are_checked(files: Files) -> None:
    files.add("badsec.o", spec("nocolon_noequal"))
    member = replace(event("./badsec.o"), span=Span(11, 21), path_span=Span(11, 21))
    cpu = SymbolEvent(SymbolKind.SOFTWARE, "cpu-clock", None, None, Span(1, 10), Span(1, 10))
    events = EventList((Group(None, (cpu, member), None, Span(0, 22)),), "{cpu-clock,./badsec.o}")
    bpf = [e for e in events.events() if isinstance(e, BpfEvent)]
    d = only(check_bpf_event(bpf[0], files.env(), {}))
    assert (d.code, d.span) == ("EB100", Span(11, 21))


def test_uprobe_targets_include_ifunc_resolvers() -> None:
    """libc's strlen is an STT_GNU_IFUNC symbol: a uprobe may name it (check and attach agree)."""
    import ctypes.util

    from evspec.loader.lint.event import elf_function_symbols

    libc = next((p for p in (Path("/lib/x86_64-linux-gnu/libc.so.6"), Path("/lib/aarch64-linux-gnu/libc.so.6"))
                 if p.exists()), None)
    if libc is None:
        if IN_CI:
            pytest.fail(f"no glibc at the Debian multiarch paths (ctypes finds {ctypes.util.find_library('c')})")
        pytest.skip(f"no glibc at the Debian multiarch paths (ctypes finds {ctypes.util.find_library('c')})")
    names = elf_function_symbols(libc)
    assert {"strlen", "getpid", "malloc"} <= names


def test_what_is_said_about_a_compiled_source_names_the_source(files: Files) -> None:
    """The object read from the compile cache is the user's .c: messages never show the cache."""
    files.add("prog.c", ObjectError("EB014", f"{files.root}/prog.o: at offset 8 of section 'x': symbol 'memcmp' "
                                    "is not defined", perf_message=f"Failed to load {files.root}/prog.o: Relocation failed"))
    d = only(check_bpf_event(event("./prog.c"), files.env(), {}))
    assert d.message == "'./prog.c': at offset 8 of section 'x': symbol 'memcmp' is not defined"
    assert d.perf_message == "Failed to load ./prog.c: Relocation failed"
