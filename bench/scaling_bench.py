"""How the cost of checking grows with the input, measured side by side in one run (issue 22:
bounded cost). For strings of n and 2n items of several shapes, and for a string 10x longer, the
ratio of the parser's work (tokens and reduced values, ``LalrMachine.work``), of the best wall
time, and of the bytes of JSON that check writes. Linear: about 2.0 for work and time; bounded
output: about 1.0 for bytes (one finding per distinct problem, strings excerpted).
Usage: python bench/scaling_bench.py [--items N]
"""

from __future__ import annotations

import argparse
import io
import time
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout

SHAPES: dict[str, Callable[[int], str]] = {
    "events": lambda n: ",".join(["cpu-clock"] * n),
    "group": lambda n: "{" + ",".join(["cpu-clock/period=1,name=x/u"] * n) + "}",
    "repeated terms": lambda n: "cpu-clock/" + ",".join(["time"] * n) + "/",
    "bad characters": lambda n: ",".join(["cycles@"] * n),
    "empty items": lambda n: "x,," * n,
}


def _best(fn: Callable[[], object], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _json_bytes(text: str) -> int:
    from evspec.cli import main

    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(["check", "--format", "json", "-e", text])
    return len(out.getvalue())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=8000, help="n, the smaller number of items")
    n = ap.parse_args().items
    from evspec import parser

    machine = parser.machine()
    parser.analyze("cycles")
    print(f"{'shape':<16}{'work 2n/n':>11}{'time 2n/n':>11}{'JSON 10n/n':>12}{'time n':>10}")
    for name, make in SHAPES.items():
        small, large = make(n), make(2 * n)
        works = []
        for text in (small, large):
            before = machine.work
            parser.analyze(text)
            works.append(machine.work - before)
        t_small = _best(lambda text=small: parser.analyze(text))
        t_large = _best(lambda text=large: parser.analyze(text))
        bytes_ratio = _json_bytes(make(10 * n)) / _json_bytes(small)
        print(f"{name:<16}{works[1] / works[0]:>11.2f}{t_large / t_small:>11.2f}{bytes_ratio:>12.2f}"
              f"{t_small:>9.3f}s")


if __name__ == "__main__":
    main()
