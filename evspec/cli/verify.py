"""``evspec verify``: the command line of ``evspec.loader.verify`` — its arguments, reading the
objects named, and the text and JSON reports of what ``verify_object`` found per program and map.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from evspec.cli.object_errors import print_object_error

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from typing import Any, TextIO

    from evspec.loader.btf.target import TargetBtf
    from evspec.loader.object.spec import ObjectSpec
    from evspec.loader.verify.results import ObjectResult

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_verify_parser(sub: Any) -> None:  # noqa: ANN401 - argparse's private subparsers action
    p = sub.add_parser("verify", help="as root: load every program and map of BPF objects into this kernel's "
                                      "verifier (attaching nothing) and report per program")
    p.add_argument("objects", nargs="+", metavar="OBJ", help="BPF objects (.o) or sources (.c, compiled with clang)")
    p.add_argument("--btf", metavar="FILE",
                   help="resolve CO-RE relocations against this BTF alone (default: the running "
                        "kernel's /sys/kernel/btf/vmlinux, and its modules' BTF for types vmlinux lacks)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    from evspec.cli.app import add_clang_opt

    add_clang_opt(p)


def _read(path: str, cwd: str, clang_opts: Sequence[str]) -> ObjectSpec:
    from evspec.loader.object.user_object import read_user_object

    return read_user_object(path, cwd, clang_opts=clang_opts)


def _render_text(results: Sequence[ObjectResult], out: TextIO) -> None:
    for obj in results:
        print(f"{obj.path}:", file=out)
        for note in obj.notes:
            print(f"  note: {note}", file=out)
        if obj.error:
            print(f"  error: {obj.error}", file=out)
        for p in obj.programs:
            core = f", {p.relocations} CO-RE relocation(s)" if p.relocations else ""
            if p.poisoned:
                core += f" ({len(p.poisoned)} poisoned)"
            if p.loaded:
                target = f" for {p.attach_target}" if p.attach_target else ""
                print(f"  program {p.name} ({p.section}): loaded{target}, {p.insns} insns{core}", file=out)
            else:
                print(f"  program {p.name} ({p.section}): NOT loaded{core}: {p.verifier or p.error}", file=out)
            for f in p.poisoned:
                print(f"    poisoned: function '{f['function']}', insn {f['insn']}: {f['message']}", file=out)
        for m in obj.maps:
            state = "created" if m.created else f"NOT created: {m.error}"
            if m.created and m.error:
                state = f"created, but {m.error}"
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
    from evspec.loader.btf.reader import BtfError
    from evspec.loader.btf.target import TargetBtf

    target = None
    if args.btf is not None:
        try:
            target = TargetBtf.from_file(args.btf)  # read, and its header checked
        except BtfError as exc:
            print(f"evspec verify: error: --btf {args.btf}: {exc}", file=stderr)
            return EXIT_USAGE
    from evspec.loader.verify.pins import Terminated, stop_signals

    try:
        with stop_signals():
            return _verify_main(args, target, stdout, stderr)
    except Terminated as exc:
        import signal

        print(f"evspec verify: stopped by {signal.Signals(exc.signo).name}: what it had loaded and pinned "
              "is removed", file=stderr)
        return 128 + exc.signo


def _verify_main(args: argparse.Namespace, target: TargetBtf | None, stdout: TextIO, stderr: TextIO) -> int:
    from evspec.loader.errors import ObjectError
    from evspec.loader.kernel import Kernel
    from evspec.loader.verify.objects import KernelBtf, verify_object
    from evspec.loader.verify.pins import sweep_stale

    removed, problems = sweep_stale()
    for text in removed:
        print(f"evspec verify: removed {text}", file=stderr)
    for text in problems:
        print(f"evspec verify: warning: {text}", file=stderr)
    cwd = os.getcwd()
    specs = []
    for path in args.objects:
        try:
            specs.append(_read(path, cwd, args.clang_opts))
        except ObjectError as exc:  # the user's input cannot be read as an object: a usage error
            print_object_error("verify", exc, stderr)
            return EXIT_USAGE
    kernel = Kernel()
    kernel_btf = KernelBtf(kernel)
    try:
        results = [verify_object(spec, kernel, target, kernel_btf) for spec in specs]
    finally:
        kernel_btf.close()
    if args.format == "json":
        import json

        doc = {"programs": [p.to_json() for r in results for p in r.programs],
               "maps": [m.to_json() for r in results for m in r.maps],
               "notes": [{"object": r.path, "message": note} for r in results for note in r.notes]}
        print(json.dumps(doc, indent=2), file=stdout)
    else:
        _render_text(results, stdout)
    ok = all(p.loaded for r in results for p in r.programs) and all(m.created and not m.error
                                                                     for r in results for m in r.maps)
    ok = ok and not any(r.error for r in results)
    return EXIT_OK if ok else EXIT_FAILED
