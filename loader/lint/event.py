"""The full offline check of a BPF event against its object (corpus README, Decision 10).

Order: the file (missing, not a file), the object (compile a ``.c``, read it: ObjectError), no
program, section names evspec cannot read or record cannot attach, unknown tracepoints,
kprobes/uprobes the system cannot create (no ``kprobe_events``/``uprobe_events``, missing uprobe
target or function), the same probe created twice without ``force=yes``; what record refuses of
the object before its first system call (``libbpf_rules``, linking every program); then the object's CO-RE
relocations and its externs (``externs.findings``), resolved against the system's kernel as verify
resolves them, without a syscall; then the event's terms in order (event terms with the
tracepoint term set, object terms with perf's map rules). Errors of the object itself are
reported on the path's span; what lies inside a section name is shown in a note.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING

from evspec.loader.btf.core_patch import CORE_HELP, load_target, relocate_object
from evspec.loader.btf.reader import BtfError
from evspec.loader.errors import ObjectError
from evspec.loader.externs.findings import extern_findings
from evspec.loader.lint.alternatives import choice_members
from evspec.loader.lint.libbpf_differences import libbpf_differences
from evspec.loader.lint.libbpf_rules import check_libbpf_rules
from evspec.loader.lint.terms.bpf_stdout import name_clashes, plan_outputs
from evspec.loader.lint.terms.maps import (
    EventFacts,
    EventKind,
    check_map_terms,
    facts_for_event,
    plan_map_updates,
)
from evspec.loader.lint.terms.programs import check_prog_terms, loaded_programs, perf_event_programs
from evspec.loader.lint.terms.variables import check_var_terms
from evspec.loader.object.link import link_every_program
from evspec.loader.object.spec import ObjectSpec, ProgramSpec
from evspec.loader.sections.libbpf import LoadParams, load_params
from evspec.loader.sections.names import (
    ADD_V_HELP,
    RECORD_ATTACH_KINDS,
    AttachKind,
    BtfTarget,
    ProbeTarget,
    RawTracepointTarget,
    SectionSpec,
    SectionStyle,
    TracepointTarget,
    parse_section,
)

from evspec.ast import BpfEvent, EventList, Term, TermKind
from evspec.codes import bpf as codes_bpf
from evspec.codes import bpfconfig as codes
from evspec.diagnostics import Diagnostic, EvspecError, Severity, error, note, warning
from evspec.references import event_reference_names
from evspec.span import Slotted, Span, value_field

if TYPE_CHECKING:
    from evspec.loader.btf.target import TargetBtf

    from evspec.system.model import ExternFacts, System

# the terms a tracepoint event (and so a BPF event) takes (COMPAT 1.10)
TRACEPOINT_TERMS = (
    "call-graph",
    "stack-size",
    "inherit",
    "no-inherit",
    "max-stack",
    "nr",
    "overwrite",
    "no-overwrite",
    "aux-output",
    "aux-sample-size",
)
# Findings the syntax stage (evspec.rules, run on every string before this check) already reports
# for BPF events: term kinds, map-term structure, index lists, value types and event references.
# check_bpf_events leaves them out so that a string does not get the same finding twice.
SYNTAX_STAGE_CODES = frozenset(
    {
        codes.EMPTY_MAP_NAME,
        codes.NOT_A_MAP_TERM,
        codes.EMPTY_INDEX_LIST,
        codes.REVERSED_RANGE,
        codes.NO_VALUE,
        codes.WRONG_VALUE_TYPE,
        codes.NO_SUCH_EVENT,
        codes.BAD_EVENT_TERM,
    }
)
PROBE_CHECK_MESSAGE = "You need to check probing points in BPF file"
PROBE_EXISTS_MESSAGE = "Probe point exist. Try 'perf probe -d \"*\"' and set 'force=yes'"


class TracefsTracepoints(Slotted):
    """``tracepoint_exists`` backed by a tracefs ``events/`` folder (globs as perf matches them)."""

    events_dir: Path

    def __call__(self, system: str, event: str) -> bool:
        for sys_dir in _matching_dirs(self.events_dir, system):
            if any(True for _ in _matching_dirs(sys_dir, event)):
                return True
        return False


def _matching_dirs(parent: Path, pattern: str) -> list[Path]:
    if "*" not in pattern and "?" not in pattern:
        path = parent / pattern
        return [path] if pattern not in ("", ".", "..") and "/" not in pattern and path.is_dir() else []
    try:
        return [p for p in parent.iterdir() if p.is_dir() and fnmatch.fnmatchcase(p.name, pattern)]
    except OSError:
        return []


class ObjectEnvironment(Slotted):
    """What the object check needs of the world: files (relative to ``cwd``), how to read and
    compile objects, which tracepoints exist, whether kprobes/uprobes can be created.

    ``tracepoint_exists(system, event)`` answers None when it cannot tell (no readable tracefs).
    ``read_object``/``compile_source``/``read_symbols`` default (None) to the real implementations
    (``evspec.loader.object.reader.read_object``, ``evspec.loader.object.clang.compile_source``,
    :func:`elf_function_symbols`), imported on first use. ``truncate_values`` selects perf 6.1's
    handling of map values wider than the map's values (a warning) instead of evspec's (an error).
    """

    cwd: Path
    tracepoint_exists: Callable[[str, str], bool | None]  # None: cannot tell (no tracefs)
    kprobe_events: bool | None  # None: cannot tell (no readable tracefs: not root, not mounted)
    uprobe_events: bool | None
    read_object: Callable[[Path], ObjectSpec] | None = None
    compile_source: Callable[[Path], Path] | None = None
    read_symbols: Callable[[Path], frozenset[str]] | None = None
    truncate_values: bool = False
    clang_opts: tuple[str, ...] = ()  # passed to clang when a source is compiled
    # the BTF that CO-RE relocations are resolved against, asked for only when an object has some:
    # the running kernel's for this machine, a snapshot's saved one; None (a snapshot without the
    # kernel's BTF): they are not checked. The provider raises ObjectError (EB015) when it has none.
    # Externs' typed ksyms and kfuncs are looked for there too (and in its module BTFs, if it has).
    core_target: Callable[[], TargetBtf] | None = value_field(default=lambda: load_target(None))
    # the rest of what an object's externs are resolved against, asked for only when it has some:
    # this machine's by default; ExternFactsUnavailable when the system holds none, ObjectError
    # (EB020) when they cannot be decoded
    extern_facts: Callable[[ObjectSpec], ExternFacts] = value_field(default=lambda spec: this_machine_facts(spec))

    @classmethod
    def from_tracefs(cls, cwd: Path, tracefs: Path = Path("/sys/kernel/tracing"), **kw: object) -> ObjectEnvironment:
        """An environment for this machine's tracefs (which must be mounted)."""
        return cls(
            cwd=cwd,
            tracepoint_exists=TracefsTracepoints(tracefs / "events"),
            kprobe_events=(tracefs / "kprobe_events").exists(),
            uprobe_events=(tracefs / "uprobe_events").exists(),
            **kw,  # type: ignore[arg-type]
        )

    def load(self, path: str, is_source: bool) -> ObjectSpec:
        """The object ``path`` (as the event string writes it, relative to ``cwd``) names, a source
        compiled with ``clang_opts``; messages name ``path``."""
        from evspec.loader.object.user_object import read_user_object

        return read_user_object(path, self.cwd, source=is_source, clang_opts=self.clang_opts,
                                read=self.read_object, compile=self.compile_source)

    def symbols(self, path: Path) -> frozenset[str]:
        return (self.read_symbols or elf_function_symbols)(path)


def environment_from_system(system: System, cwd: Path, clang_opts: tuple[str, ...] = ()) -> ObjectEnvironment:
    """An ObjectEnvironment answering from a system description (live or snapshot)."""
    from evspec.system.model import TracefsUnavailable

    def tracepoint_exists(sys_name: str, event: str) -> bool | None:
        try:
            return bool(system.match_tracepoints(sys_name, event).found)
        except TracefsUnavailable:
            return None

    def readable_tracefs() -> bool:
        try:
            system.tracepoint_systems()
        except TracefsUnavailable:
            return False
        return True

    features = system.features()
    # a machine whose tracefs cannot be read (e.g. `evspec check` without root) reports no probe
    # events: that says nothing about the kernel
    known = (features.kprobe_events and features.uprobe_events) or readable_tracefs()
    return ObjectEnvironment(
        cwd=cwd,
        tracepoint_exists=tracepoint_exists,
        kprobe_events=features.kprobe_events if known else (features.kprobe_events or None),
        uprobe_events=features.uprobe_events if known else (features.uprobe_events or None),
        core_target=core_target_of(system),
        extern_facts=extern_facts_of(system),
        clang_opts=clang_opts,
    )


def core_target_of(system: System) -> Callable[[], TargetBtf] | None:
    """Where CO-RE relocations of objects checked against ``system`` are resolved: this kernel's
    BTF for the live machine, the saved BTF of a snapshot written with ``--btf`` (decoded on first
    use, once), None for a snapshot without it."""
    from evspec.system.snapshot import SnapshotSystem

    if not isinstance(system, SnapshotSystem):
        return lambda: load_target(None)
    if not system.has_kernel_btf():
        return None
    cache: list[TargetBtf] = []

    def snapshot_target() -> TargetBtf:
        if not cache:
            from evspec.loader.btf.reader import BtfError
            from evspec.loader.btf.target import TargetBtf

            from evspec.system.snapshot import SnapshotError

            release = system.features().kernel_release
            try:
                cache.append(TargetBtf(system.kernel_btf() or b"", f"vmlinux {release}".rstrip()))
            except (BtfError, SnapshotError) as exc:
                raise ObjectError(codes_bpf.CORE_RELOCATION,
                                  f"CO-RE relocations need the kernel's BTF, which cannot be used: the "
                                  f"snapshot's kernel_btf: {exc}") from None
        return cache[0]

    return snapshot_target


def extern_parts(spec: ObjectSpec) -> dict[str, bool]:
    """Which of the costly facts ``spec``'s externs need (``System.extern_facts``' flags): the
    Kconfig for CONFIG_ values, kallsyms for typeless ksyms and LINUX_HAS_SYSCALL_WRAPPER."""
    return {"kconfig": any(e.kind == "kconfig" and e.name.startswith("CONFIG_") for e in spec.externs),
            "kallsyms": any((e.kind == "ksym" and e.type_id == 0) or e.name == "LINUX_HAS_SYSCALL_WRAPPER"
                            for e in spec.externs)}


def this_machine_facts(spec: ObjectSpec) -> ExternFacts:
    """What ``spec``'s externs are resolved against on this machine (only the parts they need)."""
    from evspec.system.live import LiveSystem

    return LiveSystem().extern_facts(**extern_parts(spec))


def extern_facts_of(system: System) -> Callable[[ObjectSpec], ExternFacts]:
    """Where externs of objects checked against ``system`` are resolved: its ``extern_facts``,
    a snapshot's damaged block an ObjectError (EB020) naming the field."""

    def facts(spec: ObjectSpec) -> ExternFacts:
        from evspec.system.snapshot import SnapshotError

        try:
            return system.extern_facts(**extern_parts(spec))
        except SnapshotError as exc:
            raise ObjectError(codes_bpf.EXTERN_SOURCES_CORRUPT, f"the object's externs cannot be checked: {exc}",
                              help=("write the snapshot again: evspec system snapshot --btf -o FILE",)) from None

    return facts


def elf_function_symbols(path: Path) -> frozenset[str]:
    """The function symbols a uprobe can name in an executable or shared library: the same table
    the uprobe attacher resolves against (``elf_symbols``: IFUNC resolvers included); ObjectError if
    the file cannot be read as one."""
    from evspec.loader.object.elf_symbols import read_elf_symbols

    try:
        symbols = read_elf_symbols(path)
    except ObjectError as exc:
        raise ObjectError(codes.UPROBE_TARGET, exc.message) from None
    return frozenset(f.name for f in symbols.functions)


# ---------------------------------------------------------------------------------------------
# the checks


class _Program(Slotted):
    program: ProgramSpec
    section: SectionSpec


class _ObjectCheck(Slotted, frozen=False):
    """The state of one BPF event's check: its findings and the events (evsels) it creates."""

    event: BpfEvent
    env: ObjectEnvironment
    defined: Mapping[str, EventFacts]
    diagnostics: list[Diagnostic] = value_field(default_factory=list)
    created: dict[str, EventFacts] = value_field(default_factory=dict)

    def fail(self, code: str, message: str, **kw: object) -> None:
        self.diagnostics.append(error(code, message, self.event.path_span, **kw))

    @property
    def failed(self) -> bool:
        return any(d.is_error for d in self.diagnostics)


def check_bpf_event(
    event: BpfEvent, env: ObjectEnvironment, defined_events: Mapping[str, EventFacts]
) -> list[Diagnostic]:
    """Every finding about one BPF event (spans into its event string), the primary one first."""
    return _check(event, env, defined_events).diagnostics


def bpf_event_facts(
    event: BpfEvent, env: ObjectEnvironment, defined_events: Mapping[str, EventFacts]
) -> tuple[list[Diagnostic], dict[str, EventFacts]]:
    """Like :func:`check_bpf_event`, plus the events this one creates, by the names perf gives
    them: ``SYS:EVENT`` for a tracepoint program, ``perf_bpf_probe:EVENT`` for a probe (whose
    EventFacts carry it in ``probes``, so that the same probe created later is found). An object
    with errors creates none."""
    check = _check(event, env, defined_events)
    return check.diagnostics, ({} if check.failed else check.created)


def check_bpf_events(
    events: EventList,
    system: System,
    cwd: Path,
    defined_facts: MutableMapping[str, EventFacts],
    *,
    clang_opts: tuple[str, ...] = (),
) -> list[Diagnostic]:
    """Check every BPF event of one event string against ``system``, left to right (the
    ``evspec check`` stage after the syntax stage: findings in SYNTAX_STAGE_CODES are left out).

    ``defined_facts`` holds the events defined so far (by earlier strings of the same command); it
    is extended with every event of ``events`` under the names a later ``map:…event=`` may use.
    ``clang_opts`` go to clang when a BPF source is compiled.
    """
    env = environment_from_system(system, cwd, clang_opts)
    out: list[Diagnostic] = []
    for event in events.events():
        if isinstance(event, BpfEvent):
            diags, created = bpf_event_facts(event, env, defined_facts)
            out.extend(d for d in diags if d.code not in SYNTAX_STAGE_CODES)
            for name, facts in created.items():
                defined_facts.setdefault(name, facts)
            continue
        facts = facts_for_event(event)
        for name in event_reference_names(event, events.source):
            defined_facts.setdefault(name, facts)
    return out


def _check(event: BpfEvent, env: ObjectEnvironment, defined: Mapping[str, EventFacts]) -> _ObjectCheck:
    check = _ObjectCheck(event, env, defined)
    spec = _load(check)
    if spec is None:
        return check
    if not spec.programs:
        check.fail(
            codes.NO_PROGRAMS,
            f"BPF object '{event.path}' has no programs (it would add no event)",
            help=("a program is a function in a section such as SEC(\"raw_syscalls:sys_enter\")",),
            perf_message="WARNING: event parser found nothing",
        )
    else:
        programs = _check_programs(check, loaded_programs(event, spec))
        if not check.failed:
            _check_libbpf_rules(check, spec, programs)
    core = _core_check(spec, env.core_target)
    if core is not None and not check.failed:  # (code, message, is_error, notes)
        check.diagnostics.append((error if core[2] else warning)(*core[:2], event.path_span, help=CORE_HELP,
                                                                   notes=core[3]))
    for finding in extern_findings(spec, env.extern_facts, env.core_target):
        check.diagnostics.append((error if finding.is_error else warning)(
            finding.code, finding.message, event.path_span, notes=finding.notes, help=finding.help))
    term_diags = (_check_event_terms(event) + check_map_terms(event, spec, defined, truncate_values=env.truncate_values)
                  + check_prog_terms(event, spec, defined) + check_var_terms(event, spec))
    term_diags.sort(key=lambda d: d.span.start)
    check.diagnostics.extend(term_diags)
    check.diagnostics.extend(note(codes_bpf.LIBBPF_DIFFERENCE, text, event.path_span)
                             for text in libbpf_differences(spec))
    if not check.failed:
        _output_events(check, spec)
    return check


def _output_events(check: _ObjectCheck, spec: ObjectSpec) -> None:
    """The bpf-output events record creates for the object's perf event arrays (a note each), and
    an error where one would take the name of an event defined before it."""
    plan = plan_outputs([(spec, plan_map_updates(check.event, spec, truncate_values=check.env.truncate_values))])
    clashes = name_clashes(plan, {name: f"'{name}' defined before the object" for name in check.defined})
    for text in clashes:
        check.fail(codes.OUTPUT_EVENT_NAME_TAKEN, text)
    for o in plan.outputs:
        check.diagnostics.append(note(codes.OUTPUT_EVENT_CREATED, o.describe(), check.event.path_span))


def _load(check: _ObjectCheck) -> ObjectSpec | None:
    event = check.event
    path = check.env.cwd / event.path
    what = "BPF source" if event.is_source else "BPF object"
    if not path.exists():
        check.fail(
            codes.OBJECT_NOT_FOUND,
            f"{what} '{event.path}' not found",
            help=(f"paths are relative to {check.env.cwd}",) if not Path(event.path).is_absolute() else (),
            perf_message=f"Failed to load {event.path}: No such file or directory",
            perf_help=ADD_V_HELP,
        )
        return None
    if not path.is_file():
        check.fail(
            codes.OBJECT_NOT_A_FILE,
            f"{what} '{event.path}' is not a regular file",
            perf_message=f"Failed to load {event.path}: Is a directory" if path.is_dir() else None,
            perf_help=ADD_V_HELP,
        )
        return None
    try:
        return check.env.load(event.path, event.is_source)
    except ObjectError as exc:
        _object_failed(check, exc)
        return None


def _object_failed(check: _ObjectCheck, exc: ObjectError) -> None:
    """An error of the object itself, on the path's span (its path quoted as the string writes it)."""
    path = check.event.path
    message = exc.message
    if message.startswith(f"{path}:"):
        message = f"'{path}':{message[len(path) + 1:]}"
    check.fail(
        exc.code,
        message,
        help=exc.help,
        notes=(exc.detail,) if exc.detail else (),
        perf_message=exc.perf_message,
        perf_help=ADD_V_HELP if exc.perf_message else None,
    )


def _check_libbpf_rules(check: _ObjectCheck, spec: ObjectSpec, programs: list[_Program]) -> None:
    """What ``record`` refuses of the object before its first system call: libbpf's rules (with
    the probe programs that fetch arguments loaded after the object, as record loads them), then
    the linking of every program."""
    deferred = {p.program.name for p in programs
                if isinstance(p.section.target, ProbeTarget) and p.section.target.args}
    try:
        check_libbpf_rules(spec, deferred)
        link_every_program(spec)
    except ObjectError as exc:
        _object_failed(check, exc)


def _core_check(spec: ObjectSpec, target: Callable[[], TargetBtf] | None,
                ) -> tuple[str, str, bool, tuple[str, ...]] | None:
    """What check says of the object's CO-RE relocations against ``target``'s BTF: (code, message,
    is_error, notes: every relocation that does not resolve), or None when there is nothing to say."""
    pending = sum(1 for _, r in spec.core_relocations() if not r.applied)
    if not pending:
        return None
    if target is None:
        return _core_unchecked(pending, "the system snapshot holds no kernel BTF to resolve them against")
    try:
        btf = target()
    except ObjectError as exc:
        return _core_unchecked(pending, exc.message)
    try:
        _, findings = relocate_object(spec, btf)
    except ObjectError as exc:
        return exc.code, exc.message.removeprefix(f"{spec.path}: "), True, ()
    if not findings:
        return None
    shown = "; ".join(str(f) for f in findings[:3])
    more = f" (and {len(findings) - 3} more)" if len(findings) > 3 else ""
    notes = tuple(str(f) for f in findings) if len(findings) > 1 else ()
    return (codes_bpf.CORE_UNRESOLVED,
            f"{len(findings)} CO-RE relocation(s) do not resolve against {btf.name}: {shown}{more}", False, notes)


def _core_unchecked(pending: int, why: str) -> tuple[str, str, bool, tuple[str, ...]]:
    return codes_bpf.CORE_UNRESOLVED, f"{pending} CO-RE relocation(s) not checked: {why}", False, ()


def _section_note(program: ProgramSpec, span: Span | None = None) -> tuple[str, ...]:
    head = f'program {program.name}: SEC("'
    note = f'{head}{program.section}")'
    if span is None:
        return (note,)
    return (note, " " * (len(head) + span.start) + "^" * max(len(span), 1))


def _check_programs(check: _ObjectCheck, spec: ObjectSpec) -> list[_Program]:
    """Section names, then tracepoints, kprobes, uprobes and duplicate probes (Decision 10); the
    programs whose section names could be read."""
    programs: list[_Program] = []
    for program in spec.programs:
        section = _parse_program_section(check, program)
        if section is not None:
            programs.append(_Program(program, section))
    optional = choice_members(spec)  # record loads another alternative where one cannot attach
    for p in programs:
        if p.program.name not in optional:
            _check_tracepoint(check, p, others=len(spec.programs) > 1)
            _check_raw_tracepoint(check, p)
            _check_trampoline_target(check, p, spec)
    for p in programs:
        if (p.section.attach is AttachKind.KPROBE and check.env.kprobe_events is False
                and p.program.name not in optional):
            check.fail(
                codes.NO_PROBE_SUPPORT,
                f"section '{p.section.name}': a kprobe, but this system has no kprobe_events",
                notes=_section_note(p.program),
                help=("the kernel needs CONFIG_KPROBE_EVENTS=y (tracefs kprobe_events)",),
                **_perf_probe_words(p.section),
            )
    for p in programs:
        if p.section.attach is AttachKind.UPROBE:
            _check_uprobe(check, p)
    if not check.failed:
        _check_duplicate_probes(check, programs)
        _record_created_events(check, programs)
    return programs


def _perf_probe_words(section: SectionSpec) -> dict[str, str | None]:
    """perf's wording for a probe it cannot create, where perf reads the section as a probe at
    all (a libbpf-style section is refused by perf before that: ``check --perf`` says so)."""
    if section.style is SectionStyle.PERF:
        return {"perf_message": PROBE_CHECK_MESSAGE, "perf_help": ADD_V_HELP}
    return {"perf_message": None, "perf_help": None}


def _parse_program_section(check: _ObjectCheck, program: ProgramSpec) -> SectionSpec | None:
    try:
        section = parse_section(program.section)
    except EvspecError as exc:
        try:
            params = load_params(program.section)
        except ObjectError:
            params = None
        refusal = params.module_form_refusal() if params is not None else None
        more = () if refusal is None else (refusal.message,)  # what verify says of libbpf 1.5's form
        for d in exc.diagnostics:
            check.diagnostics.append(
                Diagnostic(
                    d.code,
                    d.severity,
                    f"section '{program.section}': {d.message}",
                    check.event.path_span,
                    help=(*d.help, *more),
                    notes=(*_section_note(program, d.span), *d.notes),
                    perf_message=d.perf_message,
                    perf_help=d.perf_help,
                )
            )
        return None
    for w in section.warnings:
        check.diagnostics.append(
            Diagnostic(
                w.code,
                Severity.WARNING,
                f"section '{program.section}': {w.message}",
                check.event.path_span,
                help=w.help,
                notes=_section_note(program, w.span),
                perf_message=w.perf_message,
                perf_help=w.perf_help,
            )
        )
    if section.attach is AttachKind.PERF_EVENT:
        if program.name not in perf_event_programs(check.event):
            check.fail(
                codes.SECTION_NOT_RUNNABLE,
                f"section '{program.section}': perf_event program '{program.name}' goes on no event",
                notes=_section_note(program, section.main_span),
                help=(f"name the event it runs on: -e cpu-clock/freq=99,name=tick/ -e "
                      f"{check.event.path}/prog:{program.name}.event=tick/",),
            )
    elif section.attach not in RECORD_ATTACH_KINDS:
        check.fail(
            codes.SECTION_NOT_RUNNABLE,
            f"section '{program.section}': evspec record cannot attach {section.attach.value} "
            "programs yet",
            notes=_section_note(program, section.main_span),
            help=("`evspec inspect` shows the program; attach it with its own loader for now",),
        )
    return section


def _check_tracepoint(check: _ObjectCheck, p: _Program, *, others: bool = False) -> None:
    """``others``: the object has other programs, which could run without this one."""
    target = p.section.target
    if not isinstance(target, TracepointTarget) or target.load_only:
        return
    exists = check.env.tracepoint_exists(target.system, target.event)
    if exists is None:
        check.diagnostics.append(
            warning(
                codes.TRACEPOINT_UNCHECKED,
                f"section '{p.section.name}': tracepoint '{target.name}' not checked: the system's "
                "tracefs cannot be read",
                check.event.path_span,
                notes=_section_note(p.program, target.span),
                help=("as root, mount it: mount -t tracefs nodev /sys/kernel/tracing",),
            )
        )
        return
    if exists:
        return
    check.fail(
        codes.UNKNOWN_TRACEPOINT,
        f"section '{p.section.name}': unknown tracepoint '{target.name}'",
        help=("see the tracepoints with: evspec list tracepoint",
              *((f"or leave the program out (as the tools do where a kernel lacks the tracepoint): "
                 f"add prog:{p.program.name}.autoload=0 to the object's terms",) if others else ())),
        **_perf_tracepoint_words(p.program, p.section, target),
    )


def _perf_tracepoint_words(program: ProgramSpec, section: SectionSpec, target: TracepointTarget) -> dict[str, object]:
    notes = _section_note(program, target.span)
    if section.style is not SectionStyle.PERF:
        return {"notes": notes}
    return {
        "notes": (*notes, "perf 6.1 reports first 'Attach events in BPF object failed', then 'unknown tracepoint'"),
        "perf_message": "Attach events in BPF object failed",
        "perf_help": ADD_V_HELP,
    }


def _check_raw_tracepoint(check: _ObjectCheck, p: _Program) -> None:
    """A raw tracepoint is named by its event alone: some trace system must have it."""
    target = p.section.target
    if not isinstance(target, RawTracepointTarget):
        return
    exists = check.env.tracepoint_exists("*", target.event)
    if exists is False:
        check.fail(
            codes.UNKNOWN_TRACEPOINT,
            f"section '{p.section.name}': no tracepoint is named '{target.event}'",
            notes=_section_note(p.program, target.span),
            help=("a raw tracepoint is named by its event alone (raw_tp/sched_switch); see: evspec list tracepoint",),
        )


def _check_trampoline_target(check: _ObjectCheck, p: _Program, spec: ObjectSpec) -> None:
    """The kernel function or LSM hook of a trampoline program (fentry/, lsm/, ...) must be in the
    system's kernel BTF, which record looks it up in: vmlinux's, else its modules' (this machine's
    /sys/kernel/btf/MOD; a snapshot records vmlinux's BTF alone, and the names of the module BTFs:
    a target vmlinux lacks is then missing for certain only where there were none); whether the
    kernel has trampolines at all only record can ask (it loads and attaches a probe program)."""
    target = p.section.target
    if p.section.attach is not AttachKind.TRAMPOLINE or not isinstance(target, BtfTarget):
        return
    params = load_params(p.section.main_span.text(p.section.name))
    btf = check.env.core_target
    why = "the system snapshot holds no kernel BTF" if btf is None else None
    if btf is not None and params is not None:
        try:
            kernel = btf()
            missing = _trampoline_target_missing(params, kernel)
        except ObjectError as exc:
            missing, why = None, exc.message
        except BtfError as exc:
            missing, why = None, f"it is not in vmlinux's BTF, and the module BTFs cannot be read: {exc}"
        if missing is not None and not kernel.searches_modules:
            modules = _recorded_module_btfs(check, spec)
            if modules == ():
                missing = params.missing(0)  # the machine had no module BTF to look in
            else:
                missing, why = None, (f"it is not in vmlinux's BTF, and the snapshot does not hold the BTF of "
                                      f"the machine's modules ({', '.join(modules) if modules else 'not listed'}), "
                                      "where libbpf looks next: check on the machine itself")
        if missing is not None:
            check.fail(
                codes.SECTION_NOT_RUNNABLE,
                f"section '{p.section.name}': {missing.message}",
                notes=_section_note(p.program, target.span),
                help=("name a function of the kernel's BTF (bpftool btf dump file /sys/kernel/btf/vmlinux)",),
            )
            return
        if why is None:
            return
    check.diagnostics.append(
        warning(
            codes.TRACEPOINT_UNCHECKED,
            f"section '{p.section.name}': {target.kind} target '{target.name}' not checked: {why}",
            check.event.path_span,
            notes=_section_note(p.program, target.span),
        )
    )


def _recorded_module_btfs(check: _ObjectCheck, spec: ObjectSpec) -> tuple[str, ...] | None:
    """The names of the module BTFs a snapshot's machine had; None when it does not say."""
    from evspec.system.model import ExternFactsUnavailable

    try:
        return check.env.extern_facts(spec).module_btfs
    except (ExternFactsUnavailable, ObjectError):
        return None


def _trampoline_target_missing(params: LoadParams, kernel: TargetBtf) -> ObjectError | None:
    """Why ``params``' target is in none of ``kernel``'s BTFs (vmlinux's, then its modules' when
    it has them, as libbpf looks), None when one has it. ``BtfError`` if a module's does not parse."""
    if not params.btf_name or params.btf_id_in(kernel) is not None:
        return None
    if not kernel.searches_modules:
        return params.missing(None)
    modules = kernel.modules()
    if any(params.btf_id_in(module) is not None for module in modules):
        return None
    return params.missing(len(modules))


def _check_uprobe(check: _ObjectCheck, p: _Program) -> None:
    target = p.section.target
    assert isinstance(target, ProbeTarget) and target.binary is not None
    if check.env.uprobe_events is False:
        check.fail(
            codes.NO_PROBE_SUPPORT,
            f"section '{p.section.name}' is a uprobe, but this system has no uprobe_events",
            notes=_section_note(p.program),
            help=("the kernel needs CONFIG_UPROBE_EVENTS=y (tracefs uprobe_events)",),
            **_perf_probe_words(p.section),
        )
        return
    binary = check.env.cwd / target.binary
    if not binary.is_file():
        check.fail(
            codes.UPROBE_TARGET,
            f"section '{p.section.name}': uprobe target '{target.binary}' not found",
            notes=_section_note(p.program),
            help=(
                "exec= takes the full path of the probed binary"
                if p.section.style is SectionStyle.PERF
                else "uprobe/PATH:FUNC takes the path of the probed binary",
            ),
            **_perf_probe_words(p.section),
        )
        return
    function = target.point.function
    if function is None:
        return  # SRC:LINE or an address: only debug info could tell
    try:
        symbols = check.env.symbols(binary)
    except ObjectError as exc:
        check.fail(
            codes.UPROBE_TARGET,
            f"section '{p.section.name}': uprobe target: {exc.message}",
            notes=_section_note(p.program),
            **_perf_probe_words(p.section),
        )
        return
    if target.point.is_glob:
        found = any(fnmatch.fnmatchcase(s, function) for s in symbols)
    else:
        found = function in symbols
    if not found:
        check.fail(
            codes.UPROBE_FUNCTION,
            f"section '{p.section.name}': no function "
            f"{'matches' if target.point.is_glob else 'named'} '{function}' in '{target.binary}'",
            notes=_section_note(p.program),
            **_perf_probe_words(p.section),
        )


def _check_duplicate_probes(check: _ObjectCheck, programs: list[_Program]) -> None:
    # probe name -> created by another program of this object (False: by an earlier event)
    earlier: dict[str, bool] = {probe: False for facts in check.defined.values() for probe in facts.probes}
    for p in programs:
        target = p.section.target
        if p.section.style is not SectionStyle.PERF or not isinstance(target, ProbeTarget):
            continue
        probe = target.probe_name
        assert probe is not None
        if probe in earlier and not p.section.force:
            check.fail(
                codes.PROBE_EXISTS,
                f"section '{p.section.name}': probe {probe} is already created by "
                + ("another program of this object" if earlier[probe] else "an earlier BPF event"),
                notes=_section_note(p.program),
                help=("add 'force=yes;' to the section to create it again under a new name, or "
                      "load the object once",),
                perf_message=PROBE_EXISTS_MESSAGE,
                perf_help=ADD_V_HELP,
            )
        earlier.setdefault(probe, True)


def _record_created_events(check: _ObjectCheck, programs: list[_Program]) -> None:
    inherit = facts_for_event(check.event).inherit
    for p in programs:
        target = p.section.target
        if p.section.attach is AttachKind.NONE:
            continue  # loaded only ('!SYS:EVENT', libbpf's '?' sections): no event
        if isinstance(target, TracepointTarget) and not target.load_only:
            check.created.setdefault(target.name, EventFacts(EventKind.TRACEPOINT, 2, inherit))
        elif isinstance(target, ProbeTarget) and target.probe_name is not None:
            check.created.setdefault(
                target.probe_name, EventFacts(EventKind.TRACEPOINT, 2, inherit, frozenset({target.probe_name}))
            )


def _check_event_terms(event: BpfEvent) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for term in event.terms.items if event.terms else ():
        if not isinstance(term, Term) or term.kind is TermKind.USER:
            continue  # object terms: check_map_terms
        if term.kind is TermKind.KEYWORD and term.key in TRACEPOINT_TERMS:
            continue
        span = term.key_span if term.kind is TermKind.KEYWORD else term.span
        kind = {TermKind.RAW: "a raw config term", TermKind.DRIVER: "a driver-config term"}.get(term.kind)
        out.append(
            error(
                codes.BAD_EVENT_TERM,
                f"term '{term.key}' not valid for BPF events" if kind is None else f"{kind} is not valid for BPF events",
                span,
                help=("BPF events take the tracepoint terms: " + ", ".join(TRACEPOINT_TERMS),),
                notes=("perf 6.1 reports 'Attach events in BPF object failed', then 'unknown term'",),
                perf_message="unknown term",
            )
        )
    return out
