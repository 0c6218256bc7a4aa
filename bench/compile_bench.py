"""Compiler speed, measured side by side in one run (issue 3: compile throughput and cold check).

(a) `compile_events([parse(s)], system, "record")` over every corpus string that parses and
    compiles without error, with a warm system: the synthetic corpus machine
    (`evspec.system.fixtures.corpus_system()`) and the live one (`load_system("live")`), in
    strings/s, each as a ratio to the syntax-only path (`evspec.parser.analyze`) over the same
    strings. Target: no number was set for this ratio; it is printed to follow over time.
(b) cold `evspec check --system live -e cycles` against the syntax-only `evspec check --system none
    -e cycles`, medians of interleaved subprocess runs from /tmp, as a ratio. Target: no number was
    set either; printed to follow over time.
Usage: python bench/compile_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from _common import best_rate, corpus_strings, interleaved_wall

TARGET = "target: none set"


def compilable(strings: list[str], system: object) -> list[str]:
    from evspec.compiler.compile import compile_events
    from evspec.parser import parse

    ok = []
    for s in strings:
        try:
            compile_events([parse(s)], system, "record")  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - only strings that compile without error are timed
            continue
        ok.append(s)
    return ok


def throughput() -> None:
    from evspec.compiler.compile import compile_events
    from evspec.parser import analyze, parse
    from evspec.system import load_system
    from evspec.system.fixtures import corpus_system

    strings = corpus_strings()
    analyze(strings[0])  # build the parser before timing
    print(f"(a) compile_events(mode=record) over corpus strings that compile ({len(strings)} in the corpus); "
          f"{TARGET}")
    for label, system in (("corpus_system()", corpus_system()), ("live", load_system("live"))):
        valid = compilable(strings, system)
        if not valid:
            print(f"    {label}: no corpus string compiles")
            continue

        def compile_all(valid: list[str] = valid, system: object = system) -> int:
            for s in valid:
                compile_events([parse(s)], system, "record")  # type: ignore[arg-type]
            return len(valid)

        def analyze_all(valid: list[str] = valid) -> int:
            for s in valid:
                analyze(s)
            return len(valid)

        compile_rate = best_rate(compile_all)
        syntax_rate = best_rate(analyze_all)
        print(f"    {label:16} {len(valid):4} strings: compile {compile_rate:9,.0f}/s, analyze {syntax_rate:9,.0f}/s, "
              f"compile costs {syntax_rate / compile_rate:.2f}x the syntax-only path")


def cold_check(runs: int) -> None:
    py = sys.executable
    live, syntax = interleaved_wall([[py, "-m", "evspec", "check", "--system", "live", "-e", "cycles"],
                                     [py, "-m", "evspec", "check", "--system", "none", "-e", "cycles"]],
                                    runs=runs)
    print(f"(b) cold 'evspec check --system live -e cycles': {live * 1000:.0f} ms, syntax only: "
          f"{syntax * 1000:.0f} ms, ratio {live / syntax:.2f}x ({TARGET})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    throughput()
    cold_check(args.runs)


if __name__ == "__main__":
    main()
