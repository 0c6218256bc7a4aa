"""Front-end speed, measured side by side in one run (issue: parse throughput and cold start).

(a) parse + AST + system-independent rules (`evspec.parser.analyze`) over every corpus string, in
    strings/s; and the same grammar under Earley over the corpus strings that parse (parse tree +
    the same AST builder), with the ratio. Targets: >= 20,000 strings/s and >= 20x Earley.
(b) cold start of `evspec check -e cycles:u` as a ratio to `python3 -c pass` (same interpreter),
    medians of interleaved runs. Target: <= 5x. The command is the `evspec` script installed next
    to the interpreter (what users run); `python -m evspec` is shown too (it also pays for runpy).
With --baseline PYTHON (the interpreter of another install, e.g. of main's wheel) both are
measured side by side in one run: (a) in subprocesses taking turns, (b) interleaved, and the
ratios of this install to the baseline are printed.
Usage: python bench/parse_bench.py [--runs N] [--baseline PYTHON]
Run it with the interpreter of an installed wheel and PYTHONDONTWRITEBYTECODE unset, or every
start compiles the package.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from _common import best_rate, corpus_strings, interleaved_wall


def throughput() -> None:
    from evspec.parser import analyze, earley_parser, parse
    from evspec.parser.builder import AstBuilder

    strings = corpus_strings()
    analyze(strings[0])  # build the parser before timing

    def lalr_all() -> int:
        for s in strings:
            analyze(s)
        return len(strings)

    valid = []
    for s in strings:
        try:
            parse(s)
            valid.append(s)
        except Exception:  # noqa: BLE001 - only strings that parse go to the Earley comparison
            pass
    earley = earley_parser()
    builder = AstBuilder()
    builder.transform(earley.parse(valid[0], start="events"))

    def lalr_valid() -> int:
        for s in valid:
            analyze(s)
        return len(valid)

    def earley_valid() -> int:
        for s in valid[:40]:
            builder.transform(earley.parse(s, start="events"))
        return 40

    all_rate = best_rate(lalr_all)
    lalr_rate = best_rate(lalr_valid)
    earley_rate = best_rate(earley_valid, seconds=3.0)
    print(f"(a) analyze() over {len(strings)} corpus strings: {all_rate:,.0f} strings/s (target >= 20,000)")
    print(f"    valid strings ({len(valid)}): LALR {lalr_rate:,.0f}/s, Earley {earley_rate:,.0f}/s, "
          f"ratio {lalr_rate / earley_rate:.1f}x (target >= 20x)")


def _rate_of(python: str) -> float:
    """analyze() strings/s over the corpus, measured by ``python`` running this script's (a)."""
    out = subprocess.run([python, __file__, "--throughput-only"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"corpus strings: ([0-9,]+) strings/s", out)
    assert m is not None, out
    return float(m.group(1).replace(",", ""))


def side_by_side(baseline: str, runs: int) -> None:
    """This install against ``baseline``'s: throughput (best of turns) and cold start (interleaved)."""
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(7):  # turns, best of each: a shared machine's load comes and goes
        ours.append(_rate_of(sys.executable))
        theirs.append(_rate_of(baseline))
    print(f"(a) analyze() strings/s: this {max(ours):,.0f}, baseline {max(theirs):,.0f}, "
          f"ratio {max(ours) / max(theirs):.3f} (target >= 0.90)")
    args = ["check", "-e", "cycles:u"]
    commands = [[sys.executable, "-c", "pass"], [str(Path(sys.executable).with_name("evspec")), *args],
                [str(Path(baseline).with_name("evspec")), *args]]
    base, mine, other = interleaved_wall(commands, runs=runs)
    print(f"(b) cold 'evspec check -e cycles:u': this {mine * 1000:.1f} ms, baseline {other * 1000:.1f} ms, "
          f"ratio {mine / other:.3f} (target <= 1.10); 'python3 -c pass' {base * 1000:.1f} ms")


def cold_start(runs: int) -> None:
    py = sys.executable
    args = ["check", "-e", "cycles:u"]
    script = Path(py).with_name("evspec")
    commands = [[py, "-c", "pass"], [py, "-m", "evspec", *args]]
    if script.exists():
        commands.append([str(script), *args])
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("    (PYTHONDONTWRITEBYTECODE is set: cold starts include compiling whatever has no .pyc)")
    base, module, *installed = interleaved_wall(commands, runs=runs)
    if installed:
        print(f"(b) cold 'evspec check -e cycles:u': {installed[0] * 1000:.0f} ms, 'python3 -c pass': "
              f"{base * 1000:.0f} ms, ratio {installed[0] / base:.2f}x (target <= 5x)")
    else:
        print(f"(b) no 'evspec' script next to {py}: only 'python -m evspec' is measured")
    print(f"    'python -m evspec check -e cycles:u': {module * 1000:.0f} ms, ratio {module / base:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--baseline", metavar="PYTHON", help="compare with the evspec installed for this interpreter")
    ap.add_argument("--throughput-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if args.baseline:
        side_by_side(args.baseline, args.runs)
        return
    throughput()
    if not args.throughput_only:
        cold_start(args.runs)


if __name__ == "__main__":
    main()
