"""BPF object read + check speed, measured side by side in one run (issue 4).

Objects: the corpus fixtures (tests/data/corpus/bpf built with make in a temp folder) and one
generated object with 1,000 programs and 1,000 maps (`testgen.generate_big_source`, compiled once
with `compile_source`; legacy maps keep clang fast).
For each object: `read_object` in ms, and `check_specs` on an event string naming the object with
one map term (`./X.o/map:NAME.value=1/`; plain `./X.o` when it has no map), cwd = the object's folder, system =
`corpus_system(cwd=...)`, which reads the object again) in ms, as a ratio to a syntax-only check
(no system) of the same string. Best of several runs each. Target: no number was set for these
ratios; they are printed to follow over time.
It also asserts that reading never opens /sys/kernel/btf/vmlinux (builtins.open and os.open are
patched to record every path opened while reading).
Usage: python bench/object_bench.py [--progs N] [--maps N]
"""

from __future__ import annotations

import argparse
import builtins
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import CORPUS, best_rate

VMLINUX = "/sys/kernel/btf/vmlinux"
TARGET = "target: none set"


@contextmanager
def recording_opens() -> Iterator[list[str]]:
    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(os.fsdecode(file) if isinstance(file, (str, bytes, os.PathLike)) else repr(file))
        return real_open(file, *args, **kwargs)

    def spy_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fsdecode(path))
        return real_os_open(path, *args, **kwargs)

    builtins.open, os.open = spy_open, spy_os_open
    try:
        yield opened
    finally:
        builtins.open, os.open = real_open, real_os_open


def ms_per_call(fn: Callable[[], object], seconds: float = 1.0) -> float:
    def once() -> int:
        fn()
        return 1

    return 1000 / best_rate(once, seconds=seconds)


def build_fixtures(tmp: Path) -> Path:
    folder = tmp / "bpf"
    shutil.copytree(CORPUS / "bpf", folder)
    subprocess.run(["make", "-s", "-C", str(folder)], check=True, stdout=subprocess.DEVNULL)
    return folder


def build_big(tmp: Path, progs: int, maps: int) -> Path:
    from evspec.loader.object.clang import compile_source
    from evspec.loader.object.testgen import generate_big_source

    source = tmp / "big" / "big.c"
    source.parent.mkdir()
    source.write_text(generate_big_source(progs, maps, legacy=True))
    built = compile_source(source, cache_dir=tmp / "cache")
    target = source.parent / "big.o"
    shutil.copyfile(built, target)
    return target


def measure(obj: Path) -> tuple[float, float, float, str] | None:
    from evspec.loader.errors import ObjectError
    from evspec.loader.object.reader import read_object

    from evspec.check import CheckOptions, check_specs
    from evspec.diagnostics import Source
    from evspec.inputs import SpecInput
    from evspec.system.fixtures import corpus_system

    with recording_opens() as opened:
        try:
            spec = read_object(obj)
        except ObjectError:
            return None
    assert VMLINUX not in opened, f"reading {obj} opened {VMLINUX}"
    text = f"./{obj.name}/map:{spec.maps[0].name}.value=1/" if spec.maps else f"./{obj.name}"
    inputs = [SpecInput(text, Source("arg", 0), 0)]
    full = CheckOptions(system=corpus_system(cwd=str(obj.parent)), cwd=obj.parent)
    syntax = CheckOptions(system=None, cwd=obj.parent)
    read_ms = ms_per_call(lambda: read_object(obj))
    check_ms = ms_per_call(lambda: check_specs(inputs, full))
    syntax_ms = ms_per_call(lambda: check_specs(inputs, syntax), seconds=0.3)
    return read_ms, check_ms, syntax_ms, text


def report(label: str, row: tuple[float, float, float, str]) -> None:
    read_ms, check_ms, syntax_ms, text = row
    print(f"    {label:14} read {read_ms:8.3f} ms  check {check_ms:8.3f} ms  syntax-only {syntax_ms:6.3f} ms  "
          f"check/syntax {check_ms / syntax_ms:7.1f}x  {text}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--progs", type=int, default=1000)
    ap.add_argument("--maps", type=int, default=1000)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    with tempfile.TemporaryDirectory(prefix="evspec-object-bench-") as tmp_name:
        tmp = Path(tmp_name)
        fixtures = build_fixtures(tmp)
        big = build_big(tmp, args.progs, args.maps)
        print(f"corpus fixtures ({TARGET}; /sys/kernel/btf/vmlinux never opened while reading):")
        unreadable = []
        for obj in sorted(fixtures.glob("*.o")):
            row = measure(obj)
            if row is None:
                unreadable.append(obj.name)
            else:
                report(obj.name, row)
        print(f"    not BPF objects (read_object raises ObjectError, not timed): {', '.join(unreadable)}")
        print(f"generated object, {args.progs} programs and {args.maps} maps ({TARGET}):")
        row = measure(big)
        assert row is not None, "the generated object does not read"
        report(big.name, row)


if __name__ == "__main__":
    main()
