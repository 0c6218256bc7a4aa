"""``evspec verify``: load every program and map of BPF objects into this kernel's verifier, attach
nothing, close everything, and say per program whether it loaded (instructions, CO-RE relocations
applied and poisoned) or why not (the verifier's summary: failing instruction and source line).

Like ``bpftool prog loadall``, but one verdict per program: the object's BTF and maps are created
once, then each program is linked and loaded on its own, so that one the verifier refuses does not
hide the others. Program types come from the section names (``parse_section``) as ``record``
decides them; no probe, tracepoint event or link is created. Maps pinned by name are pinned under
a private bpffs directory that is removed again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from evspec.loader.kernel import Kernel
    from evspec.loader.object.spec import ObjectSpec, ProgramSpec
    from evspec.loader.object.target_btf import TargetBtf

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_verify_parser(sub: Any) -> None:  # noqa: ANN401 - argparse's private subparsers action
    p = sub.add_parser("verify", help="as root: load every program and map of BPF objects into this kernel's "
                                      "verifier (attaching nothing) and report per program")
    p.add_argument("objects", nargs="+", metavar="OBJ", help="BPF objects (.o) or sources (.c, compiled with clang)")
    p.add_argument("--btf", metavar="FILE",
                   help="resolve CO-RE relocations against this BTF (default: /sys/kernel/btf/vmlinux)")
    p.add_argument("--format", choices=("text", "json"), default="text")


@dataclass
class ProgramResult:
    object: str
    name: str
    section: str
    loaded: bool = False
    insns: int = 0
    verifier: str | None = None  # the verifier's summary, when it refused the program
    error: str | None = None  # any other reason it was not loaded
    relocations: int = 0  # CO-RE relocations applied to the program and the functions it calls
    poisoned: list[dict[str, object]] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"object": self.object, "name": self.name, "section": self.section, "loaded": self.loaded,
                "insns": self.insns, "verifier": self.verifier, "error": self.error,
                "relocations": self.relocations, "poisoned": self.poisoned}


@dataclass
class MapResult:
    object: str
    name: str
    type: str
    created: bool = False
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"object": self.object, "name": self.name, "type": self.type, "created": self.created,
                "error": self.error}


@dataclass
class ObjectResult:
    path: str
    error: str | None = None  # the object could not be read or relocated at all
    programs: list[ProgramResult] = field(default_factory=list)
    maps: list[MapResult] = field(default_factory=list)


class VerifyUsageError(Exception):
    """Bad arguments or unreadable files: exit 2."""


# ------------------------------------------------------------------------------------------ model


def _map_type_name(t: int) -> str:
    from evspec.loader.object.spec import MapType

    try:
        return MapType(t).name.lower()
    except ValueError:
        return str(t)


def _program_type(section: str) -> int:
    """The program type ``record`` gives the section (``EvspecError`` when it cannot read it)."""
    from evspec.loader.object.section import parse_section

    return int(parse_section(section).program_type)


def _tracing_attach(section: str, kernel_btf: TargetBtf | None) -> tuple[int, int]:
    """(expected attach type, attach BTF id) a tp_btf program is loaded with; (0, 0) for others."""
    from evspec.codes.kernel import NO_TRACEPOINT
    from evspec.loader.abi.bpf import BPF_TRACE_RAW_TP
    from evspec.loader.errors import ObjectError
    from evspec.loader.object.core_patch import load_target
    from evspec.loader.object.section import AttachKind, RawTracepointTarget, parse_section
    from evspec.loader.object.target_btf import btf_trace_type_id

    parsed = parse_section(section)
    if parsed.attach is not AttachKind.BTF_TRACEPOINT or not isinstance(parsed.target, RawTracepointTarget):
        return 0, 0
    found = btf_trace_type_id(load_target(kernel_btf), parsed.target.event)
    if found is None:
        raise ObjectError(NO_TRACEPOINT, f"the kernel has no BTF tracepoint '{parsed.target.event}'")
    return BPF_TRACE_RAW_TP, found


def _functions_of(spec: ObjectSpec, prog: ProgramSpec) -> list[ProgramSpec]:
    """``prog`` and every function it reaches through calls (as ``link_program`` appends them)."""
    by_name = {fn.name: fn for fn in (*spec.programs, *spec.subprograms)}
    seen = {prog.name}
    out, todo = [prog], [prog]
    while todo:
        fn = todo.pop()
        for reloc in fn.relocations:
            if reloc.kind in ("call", "func"):
                target = by_name.get(reloc.target)
                if target is not None and target.name not in seen:
                    seen.add(target.name)
                    out.append(target)
                    todo.append(target)
    return out


def _count_core(functions: Sequence[ProgramSpec], result: ProgramResult) -> None:
    for fn in functions:
        for r in fn.core_relocations:
            if not r.applied:
                continue
            result.relocations += 1
            if r.poison is not None:
                result.poisoned.append({"function": fn.name, "insn": r.insn, "message": r.poison})


@contextmanager
def _pin_root(spec: ObjectSpec) -> Iterator[str]:
    """Where maps pinned by name go: a fresh directory on bpffs (a private mount when none is
    mounted at /sys/fs/bpf), removed with whatever was pinned in it."""
    import tempfile

    if not any(m.pinning for m in spec.maps):
        yield "/sys/fs/bpf/evspec-verify-unused"
        return
    mounted = None
    if _is_bpffs("/sys/fs/bpf"):
        root = tempfile.mkdtemp(prefix="evspec-verify-", dir="/sys/fs/bpf")
    else:
        root = tempfile.mkdtemp(prefix="evspec-verify-bpffs-")
        import subprocess

        subprocess.run(["mount", "-t", "bpf", "bpf", root], check=True, capture_output=True)
        mounted = root
    try:
        yield root
    finally:
        for name in os.listdir(root):
            try:
                os.unlink(os.path.join(root, name))
            except OSError:
                pass
        if mounted is not None:
            import subprocess

            subprocess.run(["umount", mounted], check=False, capture_output=True)
        os.rmdir(root)


def _is_bpffs(path: str) -> bool:
    try:
        with open("/proc/mounts", encoding="utf-8") as f:
            return any(line.split()[1:3] == [path, "bpf"] for line in f)
    except OSError:
        return False


# ------------------------------------------------------------------------------------------ verify


def verify_object(spec: ObjectSpec, kernel: Kernel, target: TargetBtf | None) -> ObjectResult:
    """Load ``spec``'s maps and programs (``spec`` read, not yet relocated) and close them again."""
    from evspec.diagnostics import EvspecError
    from evspec.loader.errors import ObjectError
    from evspec.loader.object.core_patch import load_target, relocate_object

    result = ObjectResult(spec.path)
    result.maps = [MapResult(spec.path, m.name, _map_type_name(m.type)) for m in spec.maps]
    result.programs = [ProgramResult(spec.path, p.name, p.section) for p in spec.programs]
    if any(not r.applied for _, r in spec.core_relocations()):
        try:
            spec, _ = relocate_object(spec, load_target(target))
        except ObjectError as exc:
            result.error = exc.message
            for p in result.programs:
                p.error = f"not loaded: {exc.message}"
            for m in result.maps:
                m.error = "not created: the object's CO-RE relocations cannot be applied"
            return result
    types: dict[str, int] = {}
    tracing: dict[str, tuple[int, int]] = {}
    by_name = {p.name: p for p in result.programs}
    for prog in spec.programs:
        _count_core(_functions_of(spec, prog), by_name[prog.name])
        try:
            types[prog.name] = _program_type(prog.section)
            tracing[prog.name] = _tracing_attach(prog.section, target)
        except EvspecError as exc:
            by_name[prog.name].error = f"section '{prog.section}': {exc.diagnostics[0].message}"
            types.pop(prog.name, None)
        except ObjectError as exc:
            by_name[prog.name].error = f"section '{prog.section}': {exc.message}"
            types.pop(prog.name, None)
    loadable = replace(spec, programs=tuple(p for p in spec.programs if p.name in types))
    with _pin_root(spec) as pin_root:
        _load_programs(loadable, types, kernel, result, pin_root, tracing)
    return result


def _load_programs(spec: ObjectSpec, types: dict[str, int], kernel: Kernel, result: ObjectResult,
                   pin_root: str, tracing: dict[str, tuple[int, int]]) -> None:
    """Maps and BTF once (every program deferred), then each program on its own; where the object
    cannot be loaded that way (libbpf's rules about deferred programs), one load per program."""
    from evspec.loader.errors import ObjectError
    from evspec.loader.load.live import LiveProgram, link_program, load_linked, load_object

    names = [p.name for p in spec.programs]
    try:
        live = load_object(spec, types, kernel=kernel, deferred=names, pin_root=pin_root)
    except ObjectError as exc:
        if any(m.initial_slots for m in spec.maps) and names:
            _load_one_by_one(spec, types, kernel, result, pin_root, tracing)
        else:
            _maps_failed(spec, kernel, result, pin_root, exc)
        return
    maps = {m.name: m for m in result.maps}
    progs = {p.name: p for p in result.programs}
    with live:
        for name in live.maps:
            maps[name].created = True
        fds = {name: m.fd for name, m in live.maps.items()}
        for prog in live.spec.programs:  # relocated: CO-RE applied, externs resolved
            out = progs[prog.name]
            try:
                linked = link_program(prog, live.spec, fds)
                out.insns = len(linked.insns) // 8
                attach_type, attach_btf_id = tracing.get(prog.name, (0, 0))
                fd = load_linked(live, prog, linked, types[prog.name], attach_type, attach_btf_id=attach_btf_id)
            except ObjectError as exc:
                _failed(out, exc)
                continue
            live.programs[prog.name] = LiveProgram(prog, fd, types[prog.name], linked.insns)  # closed with live
            out.loaded = True


def _load_one_by_one(spec: ObjectSpec, types: dict[str, int], kernel: Kernel, result: ObjectResult,
                     pin_root: str, tracing: dict[str, tuple[int, int]]) -> None:
    from evspec.loader.errors import ObjectError
    from evspec.loader.load.live import load_object

    progs = {p.name: p for p in result.programs}
    created: set[str] = set()
    first_map_error: ObjectError | None = None
    for prog in spec.programs:
        one = replace(spec, programs=(prog,))
        try:
            attach_type, attach_btf_id = tracing.get(prog.name, (0, 0))
            with load_object(one, {prog.name: types[prog.name]}, kernel=kernel, pin_root=pin_root,
                             expected_attach_types={prog.name: attach_type},
                             attach_btf_ids={prog.name: attach_btf_id}) as live:
                created.update(live.maps)
                progs[prog.name].loaded = True
                progs[prog.name].insns = len(live.program(prog.name).insns) // 8
        except ObjectError as exc:
            _failed(progs[prog.name], exc)
            if first_map_error is None and getattr(exc, "operation", None) == "BPF_MAP_CREATE":
                first_map_error = exc
    for m in result.maps:
        m.created = m.name in created
        if not m.created and first_map_error is not None:
            m.error = first_map_error.message


def _maps_failed(spec: ObjectSpec, kernel: Kernel, result: ObjectResult, pin_root: str, exc: Exception) -> None:
    """The object's maps (or BTF) could not be created: which map failed, each tried on its own;
    no program can load without them."""
    from evspec.loader.errors import ObjectError
    from evspec.loader.load.live import load_object

    why = getattr(exc, "message", str(exc))
    for m in result.maps:
        alone = replace(spec, programs=(), subprograms=(), maps=tuple(x for x in spec.maps if x.name == m.name))
        try:
            with load_object(alone, {}, kernel=kernel, pin_root=pin_root):
                m.created = True
        except ObjectError as one:
            m.error = one.message
    for p in result.programs:
        if p.error is None:
            p.error = f"not loaded: the object's maps could not be created: {why}"


def _failed(out: ProgramResult, exc: Exception) -> None:
    from evspec.loader.kernel import VerifierError

    if isinstance(exc, VerifierError):
        out.verifier = exc.summary.render()
    else:
        out.error = getattr(exc, "message", str(exc))


# ------------------------------------------------------------------------------------------ CLI


def _read(path: str, cwd: Path) -> ObjectSpec:
    from evspec.loader.object.reader import read_object

    full = cwd / path
    if path.endswith(".c"):
        from evspec.loader.object.compile import compile_source

        full = compile_source(full)
    return replace(read_object(full), path=path)


def _render_text(results: Sequence[ObjectResult], out: TextIO) -> None:
    for obj in results:
        print(f"{obj.path}:", file=out)
        if obj.error:
            print(f"  error: {obj.error}", file=out)
        for p in obj.programs:
            core = f", {p.relocations} CO-RE relocation(s)" if p.relocations else ""
            if p.poisoned:
                core += f" ({len(p.poisoned)} poisoned)"
            if p.loaded:
                print(f"  program {p.name} ({p.section}): loaded, {p.insns} insns{core}", file=out)
            else:
                print(f"  program {p.name} ({p.section}): NOT loaded{core}: {p.verifier or p.error}", file=out)
            for f in p.poisoned:
                print(f"    poisoned: function '{f['function']}', insn {f['insn']}: {f['message']}", file=out)
        for m in obj.maps:
            state = "created" if m.created else f"NOT created: {m.error}"
            print(f"  map {m.name} ({m.type}): {state}", file=out)
    programs = [p for obj in results for p in obj.programs]
    loaded = sum(p.loaded for p in programs)
    print(f"{loaded} of {len(programs)} program(s) loaded", file=out)


def verify_main(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if os.geteuid() != 0:
        print("evspec verify: error: verify needs root: it loads programs and creates maps in this kernel "
              "(run it with sudo)", file=stderr)
        return EXIT_USAGE
    from evspec.loader.errors import ObjectError
    from evspec.loader.kernel import Kernel
    from evspec.loader.object.btf import BtfError
    from evspec.loader.object.target_btf import TargetBtf

    target = None
    if args.btf is not None:
        try:
            target = TargetBtf.from_file(Path(args.btf))  # read, and its header checked
        except BtfError as exc:
            print(f"evspec verify: error: --btf {args.btf}: {exc}", file=stderr)
            return EXIT_USAGE
    cwd = Path.cwd()
    specs = []
    for path in args.objects:
        if not (cwd / path).is_file():
            print(f"evspec verify: error: {path}: no such file", file=stderr)
            return EXIT_USAGE
        try:
            specs.append(_read(path, cwd))
        except ObjectError as exc:
            print(f"evspec verify: error[{exc.code}]: {exc.message}", file=stderr)
            return EXIT_USAGE
    kernel = Kernel()
    results = [verify_object(spec, kernel, target) for spec in specs]
    if args.format == "json":
        doc = {"programs": [p.to_json() for r in results for p in r.programs],
               "maps": [m.to_json() for r in results for m in r.maps]}
        print(json.dumps(doc, indent=2), file=stdout)
    else:
        _render_text(results, stdout)
    ok = all(p.loaded for r in results for p in r.programs) and all(m.created for r in results for m in r.maps)
    ok = ok and not any(r.error for r in results)
    return EXIT_OK if ok else EXIT_FAILED
