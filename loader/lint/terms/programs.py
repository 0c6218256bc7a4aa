"""The offline checks of ``prog:NAME.event=EVENT`` terms against the object (COMPAT 1.14), and
``prog:NAME.autoload=0|1`` (libbpf's bpf_program__set_autoload) applied to the object.

The syntax stage (evspec.rules) checks the term's shape and that EVENT is defined earlier; here:
NAME is a program of the object, in a ``perf_event`` section, and EVENT can carry it (a sampling
event: not a tracepoint, breakpoint, BPF object or tool event). Spans into the event string.
"""

from __future__ import annotations

from collections.abc import Mapping

from evspec.loader.lint.terms.maps import EventFacts, EventKind
from evspec.loader.object.spec import ObjectSpec, replace
from evspec.loader.sections.names import AttachKind, parse_section

from evspec.ast import BpfEvent, Number, Word
from evspec.codes import bpfconfig as codes
from evspec.diagnostics import Diagnostic, EvspecError, error
from evspec.references import program_event_reference

_NOT_SAMPLING = (EventKind.TRACEPOINT, EventKind.BREAKPOINT, EventKind.BPF, EventKind.TOOL)


def check_prog_terms(event: BpfEvent, spec: ObjectSpec, defined_events: Mapping[str, EventFacts]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for term in event.prog_terms:
        prog = next((p for p in spec.programs if p.name == term.prog_name), None)
        if prog is None:
            names = ", ".join(p.name for p in spec.programs) or "none"
            out.append(error(codes.NO_SUCH_PROGRAM, f"the object has no program '{term.prog_name}'",
                             term.name_span, help=(f"programs of the object: {names}",)))
            continue
        if term.option != "event":
            continue  # autoload=0|1: the syntax stage checks the value, the name is all there is
        try:
            attach = parse_section(prog.section).attach
        except EvspecError:
            continue  # the section's own error is reported on the object
        if attach is not AttachKind.PERF_EVENT:
            out.append(error(codes.NOT_A_PERF_EVENT_PROGRAM,
                             f"program '{prog.name}' is in section '{prog.section}', not a perf_event program",
                             term.name_span, help=("prog:NAME.event= puts a SEC(\"perf_event\") program on an event",)))
            continue
        facts = _event_facts(term.value.text, defined_events) if isinstance(term.value, Word) else None
        if facts is not None and facts.kind in _NOT_SAMPLING:
            assert term.value is not None
            out.append(error(codes.EVENT_CANNOT_CARRY_PROGRAM,
                             f"event '{term.value.text}' is a {facts.kind.value} event: a perf_event program "
                             "goes on a sampling event", term.value.span,
                             help=("for example -e cpu-clock/freq=99,name=tick/ and prog:NAME.event=tick",)))
    return out


def _event_facts(text: str, defined_events: Mapping[str, EventFacts]) -> EventFacts | None:
    """The event a prog: term names (by name, literal text, else bare name); None when the syntax
    stage has reported it missing or ambiguous."""
    try:
        key = program_event_reference(text, defined_events.keys())
    except ValueError:
        return None
    return None if key is None else defined_events[key]


def perf_event_programs(event: BpfEvent) -> frozenset[str]:
    """The programs the event's terms put on events."""
    return frozenset(t.prog_name for t in event.prog_terms if t.option == "event")


def apply_autoload(event: BpfEvent, spec: ObjectSpec) -> tuple[ObjectSpec, frozenset[str]]:
    """``spec`` as the event's ``prog:NAME.autoload=`` terms leave it (libbpf's
    bpf_program__set_autoload, the last term of a program winning): a program set to 0 is taken
    out (neither verified, loaded nor attached), a ``SEC("?...")`` program set to 1 loses its
    ``?`` (loaded and attached). Also the names the terms set, either way. Raises EvspecError for
    a program the object does not have."""
    wanted: dict[str, bool] = {}
    errors = []
    names = {p.name for p in spec.programs}
    for term in event.prog_terms:
        if term.option != "autoload" or not isinstance(term.value, Number):
            continue
        if term.prog_name not in names:
            errors.append(error(codes.NO_SUCH_PROGRAM, f"the object has no program '{term.prog_name}'",
                                term.name_span, help=("programs of the object: " + ", ".join(sorted(names)),)))
            continue
        wanted[term.prog_name] = bool(term.value.value)
    if errors:
        raise EvspecError(errors)
    programs = []
    for prog in spec.programs:
        load = wanted.get(prog.name)
        if load is False:
            continue
        if load and prog.section.startswith("?"):
            prog = replace(prog, section=prog.section[1:])
        programs.append(prog)
    return replace(spec, programs=tuple(programs)), frozenset(wanted)


def loaded_programs(event: BpfEvent, spec: ObjectSpec) -> ObjectSpec:
    """``spec`` with the programs the event's autoload terms leave in (``apply_autoload``; a term
    naming no program is left to ``check_prog_terms`` to report)."""
    known = {p.name for p in spec.programs}
    terms = [t for t in event.prog_terms if t.option == "autoload" and t.prog_name in known]
    if not terms or event.terms is None:
        return spec
    return apply_autoload(replace(event, terms=replace(event.terms, items=tuple(terms))), spec)[0]
