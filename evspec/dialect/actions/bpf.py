"""What perf 4.7-6.5 do with a BPF object or source event while parsing (spec §6.2, §6.5).

perf 6.1 splits the terms (hard-coded ones go to the created evsels, the rest configure the
object), opens the object (libbpf 1.x returns NULL for anything it cannot open, which perf prints
as an internal error), probes every program's section name in order, loads (its prologue
generator fails for a glob whose probe points share an argument list), adds one tracepoint evsel
per probe point, then applies the ``map:`` terms. Every failure before the map terms is reported at
column 0 with the help ``(add -v to see detail)``. The object is read with evspec's own reader;
nothing is loaded into the kernel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from evspec.dialect.actions.events import Evsel, Failed, PerfState
from evspec.dialect.actions.terms import NUM, STR, Term
from evspec.render.perf import BPF_MAP_HINT  # perf 6.1's, as the offline checks print it
from evspec.span import Slotted

if TYPE_CHECKING:
    from evspec.loader.object.spec import MapSpec, ObjectSpec
    from evspec.loader.sections.names import ProbeTarget

ADD_V = "(add -v to see detail)"
MAP_HINT_47 = (
    "Hint:\tValid config terms:\n"
    "     \tmap:[<arraymap>].value=[value]\n"
    "     \tmap:[<eventmap>].event=[event]\n"
    "\n"
    "     \t(add -v to see detail)"
)
PROBE_CHECK = "You need to check probing points in BPF file"
PROBE_EXISTS = "Probe point exist. Try 'perf probe -d \"*\"' and set 'force=yes'"
# what perf's probe and llvm helpers print to stderr before the error block
NO_PROBE_EVENTS = "/sys/kernel/tracing//{kind}_events does not exist.\nPlease rebuild kernel with CONFIG_{KIND}_EVENTS=y.\n"
EVENT_EXISTS = (
    "Error: event \"{event}\" already exists.\n"
    " Hint: Remove existing event by 'perf probe -d'\n"
    "       or force duplicates by 'perf probe -f'\n"
    "       or set 'force=yes' in BPF source.\n"
)
NO_KBUILD = (
    "WARNING:\tunable to get correct kernel building directory.\n"
    "Hint:\tSet correct kbuild directory using 'kbuild-dir' option in [llvm]\n"
    "     \tsection of ~/.perfconfig or set it to \"\" to suppress kbuild\n"
    "     \tdetection.\n\n"
)
COMPILE_FAILED = (
    "ERROR:\tunable to compile {path}\n"
    "Hint:\tCheck error message shown above.\n"
    "Hint:\tYou can also pre-compile it into .o using:\n"
    "     \t\tclang -target bpf -O2 -c {path}\n"
    "     \twith proper -I and -D options.\n"
)
BPF_MAP_TYPE_ARRAY = 2
BPF_MAP_TYPE_PERF_EVENT_ARRAY = 4


class _Error(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Program(Slotted):
    system: str  # tracepoint system or probe group
    events: tuple[str, ...]  # one per probe point


def load_bpf_event(state: PerfState, path: str, source: bool, terms: list[Term] | None, column: int) -> list[Evsel]:
    """parse_events_load_bpf for ``path`` (latin-1 text of its bytes) with its ``/terms/``."""
    p = state.profile
    terms = terms or []
    if p.bpf_event_terms_split:
        event_terms = [t for t in terms if t.hardcoded]
        object_terms = [t for t in terms if not t.hardcoded]
    else:
        event_terms, object_terms = [], list(terms)
    at = 0 if p.version != "4.7" else None
    try:
        spec = _open(state, path, source)
    except _Error as exc:
        state.errors.handle(at, exc.message, ADD_V)
        raise Failed from None
    if spec is None:
        state.errors.handle(at, "Internal error: load bpf obj with NULL", ADD_V)
        state.quirks.append(
            "libbpf 1.x returns NULL (not an error) for a file it cannot open as a BPF object, and perf 6.1 "
            "reports that as an internal error"
        )
        raise Failed
    try:
        programs = _probe(state, spec)
    except _Error as exc:
        state.errors.handle(at, exc.message, ADD_V)
        raise Failed from None
    evsels: list[Evsel] = []
    for program in programs:
        if program.system.startswith("!"):
            continue
        for event in program.events:
            try:
                evsels += state.add_tracepoint(program.system, event, event_terms or None, 0)
            except Failed:
                state.errors.handle(at, "Attach events in BPF object failed", ADD_V)
                raise
    _config_object(state, spec, object_terms)
    return evsels


# ---------------------------------------------------------------------------------------------
# opening


def _full_path(state: PerfState, path: str) -> Path:
    raw = path.encode("latin-1")
    base = os.fsencode(state.cwd) if state.cwd is not None else b"."
    return Path(os.fsdecode(raw if raw.startswith(b"/") else os.path.join(base, raw)))


def _open(state: PerfState, path: str, source: bool) -> ObjectSpec | None:
    """The object, or None where libbpf 1.x returns NULL; _Error for perf's own messages."""
    from evspec.loader.errors import ObjectError
    from evspec.loader.object.reader import read_object, read_object_bytes

    full = _full_path(state, path)
    shown = path.encode("latin-1").decode(errors="replace")
    if source:
        obj = _compile_like_perf(state, full)
        if obj is None:
            state.errors.printed.append(COMPILE_FAILED.format(path=shown))
            raise _Error(f"Failed to load {shown} from source: Error when compiling BPF scriptlet")
        try:
            spec = read_object_bytes(obj, str(full))
        except ObjectError:
            return None
    else:
        try:
            spec = read_object(full)
        except ObjectError as exc:
            if state.profile.libbpf_v1:
                return None
            reason = (exc.perf_message or "").rpartition(": ")[2] or "BPF object format invalid"
            raise _Error(f"Failed to load {shown}: {reason}") from None
    if state.profile.libbpf_v1 and any(m.legacy for m in spec.maps):
        state.quirks.append("libbpf 1.x refuses legacy SEC(\"maps\") map definitions")
        return None
    return spec


def _compile_like_perf(state: PerfState, source: Path) -> bytes | None:
    """perf's external clang command (no built-in clang in Debian's perf): kernel headers come
    from the kbuild directory; without one the BPF target finds no ``asm/types.h``."""
    clang = shutil.which("clang")
    if clang is None or not source.is_file():
        return None
    features = state.system.features() if state.system is not None else None
    release = features.kernel_release if features is not None and features.kernel_release else os.uname().release
    cpus = len(state.system.possible_cpus()) if state.system is not None else os.cpu_count() or 1
    args = [clang, "-D__KERNEL__", f"-D__NR_CPUS__={cpus}", f"-DLINUX_VERSION_CODE={_version_code(release)}"]
    kbuild = Path("/lib/modules") / release / "build"
    if not kbuild.is_dir():
        state.errors.printed.append(NO_KBUILD)
    else:
        args += [f"-I{kbuild}/arch/x86/include", f"-I{kbuild}/arch/x86/include/generated", f"-I{kbuild}/include",
                 f"-I{kbuild}/arch/x86/include/uapi", f"-I{kbuild}/include/uapi"]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="evspec-perfcc-") as tmp:
        out = Path(tmp) / "out.o"
        path = os.path.abspath(source)
        args += ["-Wno-unused-value", "-Wno-pointer-sign", "-working-directory", os.path.dirname(path),
                 "-c", path, "-target", "bpf", "-g", "-O2", "-o", str(out)]  # fmt: skip
        proc = subprocess.run(args, capture_output=True, timeout=120)
        if proc.stderr:
            state.errors.printed.append(proc.stderr.decode(errors="replace"))
        if proc.returncode != 0 or not out.exists():
            return None
        return out.read_bytes()


def _version_code(release: str) -> int:
    parts = [int("".join(c for c in x if c.isdigit()) or 0) for x in release.split("-")[0].split(".")[:3]]
    parts += [0] * (3 - len(parts))
    return (parts[0] << 16) + (parts[1] << 8) + min(parts[2], 255)


# ---------------------------------------------------------------------------------------------
# probing


def _probe(state: PerfState, spec: ObjectSpec) -> list[_Program]:
    from evspec.diagnostics import EvspecError
    from evspec.loader.sections.names import (
        PERF_BPF_PROBE_GROUP,
        ProbeTarget,
        TracepointTarget,
        parse_section,
    )

    programs: list[_Program] = []
    features = state.system.features() if state.system is not None else None
    for program in spec.programs:
        try:
            section = parse_section(program.section)
        except EvspecError as exc:
            raise _Error(_perf_text(exc.diagnostics[0].perf_message)) from None
        target = section.target
        if not section.perf_compatible:
            raise _Error(_perf_text(section.perf_message))
        if isinstance(target, TracepointTarget):
            if not state.profile.tracepoint_sections:
                raise _Error("Invalid config string")
            system = ("!" if target.load_only else "") + target.system
            programs.append(_Program(system, (target.event,)))
            continue
        assert isinstance(target, ProbeTarget)
        if target.is_uprobe:
            points = _uprobe_points(state, target, features is not None and features.uprobe_events)
        elif features is None or not features.kprobe_events:
            state.errors.printed.append(NO_PROBE_EVENTS.format(kind="kprobe", KIND="KPROBE"))
            raise _Error(PROBE_CHECK)
        else:
            points = 1
        event = target.event_name or ""
        group = target.group or PERF_BPF_PROBE_GROUP
        names = []
        for i in range(points):
            name = event if i == 0 else f"{event}_{i}"
            key = f"{group}:{name}"
            if key in state.probes:
                if not section.force:
                    state.errors.printed.append(EVENT_EXISTS.format(event=name))
                    raise _Error(PROBE_EXISTS)
                name = f"{name}_{state.probes[key]}"
                state.probes[key] += 1
                key = f"{group}:{name}"
            state.probes[key] = 1
            names.append(name)
        if target.args and points > 1 and state.profile.libbpf_v1:
            state.quirks.append(
                "perf 6.1's prologue generator is called once per probe point with the point's index as a "
                "type number; probe points that share an argument list make it fail"
            )
            raise _Error("Failed to generate prologue")
        programs.append(_Program(group, tuple(names)))
    return programs


def _uprobe_points(state: PerfState, target: ProbeTarget, uprobe_events: bool) -> int:
    import fnmatch

    from evspec.loader.errors import ObjectError
    from evspec.loader.lint.event import elf_function_symbols

    if not uprobe_events:
        state.errors.printed.append(NO_PROBE_EVENTS.format(kind="uprobe", KIND="UPROBE"))
        raise _Error(PROBE_CHECK)
    assert target.binary is not None  # a uprobe target names its binary
    binary = _full_path(state, target.binary.encode().decode("latin-1"))
    if not binary.is_file():
        raise _Error(PROBE_CHECK)
    function = target.point.function
    if function is None:
        return 1
    try:
        symbols = elf_function_symbols(binary)
    except ObjectError:
        raise _Error(PROBE_CHECK) from None
    if target.point.is_glob:
        count = sum(1 for s in symbols if fnmatch.fnmatchcase(s, function))
    else:
        count = 1 if function in symbols else 0
    if count == 0:
        raise _Error(PROBE_CHECK)
    return count


def _perf_text(message: str | None) -> str:
    return message or "Invalid config string"


# ---------------------------------------------------------------------------------------------
# map configuration terms


def _config_object(state: PerfState, spec: ObjectSpec, terms: list[Term]) -> None:
    hint = BPF_MAP_HINT if state.profile.version != "4.7" else MAP_HINT_47
    for term in terms:
        if term.hardcoded:
            state.errors.handle(term.err_term, "Invalid config term for BPF object")
            raise Failed
        failure = _config_map_term(state, spec, term)
        if failure is not None:
            message, column = failure
            state.errors.handle(column, message, hint)
            raise Failed


def _config_map_term(state: PerfState, spec: ObjectSpec, term: Term) -> tuple[str, int] | None:
    """bpf__config_obj for one term: None, or (message, column)."""
    key = term.config or ""
    if not key.startswith("map:"):
        return ("Invalid object config option", term.err_term)
    name, dot, option = key[4:].partition(".")
    at = term.err_term + 4
    if not dot or not option:
        return ("Invalid object config option", at)
    found = _find_map(spec, name)
    if found is None:
        return ("Target map doesn't exist", at)
    for start, length in term.array or ():
        if (start + length - 1) & 0xFFFFFFFF >= found.max_entries:
            state.quirks.append(
                "perf puts the caret of 'Index too large' at the term's start plus 4 plus the option's length, "
                "which lands inside the map name"
            )
            return ("Index too large", at + len(option))
    if option not in ("value", "event"):
        return ("Invalid object map config option", at)
    if term.err_val == 0:
        return ("Config value not set (missing '=')", at)
    if option == "value":
        if term.type_val != NUM:
            return ("Incorrect value type for map", term.err_val)
        if found.type != BPF_MAP_TYPE_ARRAY:
            return ("Can't use this config term with this map type", at)
        if found.key_size < 4:
            return ("Incorrect map key size", at)
        if found.value_size not in (1, 2, 4, 8):
            return ("Incorrect map value size", at)
        return None
    if term.type_val != STR:
        return ("Incorrect value type for map", term.err_val)
    if term.val not in state.earlier:
        state.quirks.append(
            "perf looks the event up among the events of earlier -e options only (by their full name), never "
            "in the same string"
        )
        return ("Event not found for map setting", at)
    if found.type != BPF_MAP_TYPE_PERF_EVENT_ARRAY:
        return ("Can't use this config term with this map type", at)
    return None


def _find_map(spec: ObjectSpec, name: str) -> MapSpec | None:
    for m in spec.maps:
        if m.name == name:
            return m
    return None
