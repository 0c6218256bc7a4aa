"""perf dialect emulation: prediction speed, and agreement with the installed perf on mutated strings.

    .venv/bin/python bench/dialect_bench.py                 # predictions per second (corpus strings)
    .venv/bin/python bench/dialect_bench.py --agree 2000    # run perf on 2000 mutated strings, compare
    .venv/bin/python bench/dialect_bench.py --agree 2000 --release 7.2 --perf /var/cache/evspec/oracles/bin/perf-7.2

The speed run measures every release side by side on the corpus strings against the corpus
machine and prints each one's rate and its ratio to 6.1's (the releases' share of the engine is
the same; what differs is how each resolves names).

The agreement run mutates corpus strings (character inserts, deletions, replacements, splices of
two strings), runs ``perf stat -e S -- true`` or ``perf record -q -o F -e S -- true`` in a
temporary folder with COLUMNS fixed, and compares accept/reject and, for rejections, perf's whole
stderr with ``predict(...).stderr``. Disagreements are printed.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import corpus_strings  # noqa: E402

from evspec.dialect import predict  # noqa: E402

ALPHABET = ",{}/:;=-_.[]@'* \tupkx0123456789abcdefrmsMt"


def mutate(rng: random.Random, pool: list[str]) -> str:
    text = rng.choice(pool)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(4)
        i = rng.randint(0, len(text))
        if op == 0:
            text = text[:i] + rng.choice(ALPHABET) + text[i:]
        elif op == 1 and text:
            text = text[:i] + text[i + 1 :]
        elif op == 2 and text:
            text = text[:i] + rng.choice(ALPHABET) + text[i + 1 :]
        else:
            other = rng.choice(pool)
            text = text[:i] + other[rng.randint(0, len(other)) :]
    return text


def run_perf(perf: str, mode: str, text: str, cwd: str) -> tuple[bool, str]:
    """(perf rejected the -e string, its stderr)."""
    env = {**os.environ, "COLUMNS": "80", "LINES": "24"}
    if mode == "stat":
        argv = [perf, "stat", "-e", text, "--", "true"]
    else:
        argv = [perf, "record", "-q", "-o", os.path.join(cwd, "perf.data"), "-e", text, "--", "true"]
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=60)
    stderr = proc.stderr.decode(errors="surrogateescape")
    return proc.returncode == 129 and "Run 'perf list'" in stderr, stderr


def agreement(n: int, seed: int, release: str = "6.1", perf: str = "/usr/bin/perf") -> int:
    from evspec.system import load_system

    system = load_system("live")
    rng = random.Random(seed)
    pool = [s for s in corpus_strings() if ".o" not in s and ".c" not in s and "*" not in s]
    disagree = 0
    with tempfile.TemporaryDirectory(prefix="evspec-dialect-") as cwd:
        for i in range(n):
            text = mutate(rng, pool)
            if "\0" in text or text.startswith("-"):
                continue
            mode = "stat" if i % 2 else "record"
            rejected, stderr = run_perf(perf, mode, text, cwd)
            v = predict(text, release, system=system, cwd=Path(cwd), mode=mode)
            if rejected != (not v.accepted) or rejected and stderr != v.stderr:
                disagree += 1
                print(f"DIFF {mode} {text!r}: perf rejected={rejected} predicted accepted={v.accepted}")
                if rejected:
                    print("  perf:     " + stderr.split("\nRun 'perf list'")[0].replace("\n", "\n            "))
                    print("  predicted " + v.stderr.split("\nRun 'perf list'")[0].replace("\n", "\n            "))
    print(f"agreement: {n - disagree}/{n} strings ({100 * (n - disagree) / n:.1f}%)")
    return disagree


def speed() -> None:
    from evspec.system.fixtures import corpus_system

    system = corpus_system()
    strings = [s for s in corpus_strings() if ".o" not in s and ".c" not in s]
    start = time.perf_counter()
    for version in ("4.7", "6.5", "6.6", "6.12", "7.2", "7.3"):
        predict("cycles", version, system=system)
    print(f"first use of the 4.7, 6.5, 6.6, 6.12, 7.2 and 7.3 tables: {time.perf_counter() - start:.3f} s")
    versions = ("6.1", "6.12", "7.2", "7.3")
    print(f"predict, corpus strings without BPF objects ({len(strings)}), best of 7 interleaved rounds:")
    best = dict.fromkeys(versions, 0.0)
    for _ in range(7):  # interleaved, so that the machine's load hits every release alike
        for version in versions:
            start = time.perf_counter()
            for s in strings:
                predict(s, version, system=system)
            best[version] = max(best[version], len(strings) / (time.perf_counter() - start))
    for version in versions:
        rate = best[version]
        print(f"  perf {version:5s} {rate:9,.0f} strings/s   {best['6.1'] / rate:5.2f}x 6.1's time per string")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agree", type=int, metavar="N", help="compare with /usr/bin/perf on N mutated strings")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--release", default="6.1", help="the release to predict (default 6.1)")
    ap.add_argument("--perf", default="/usr/bin/perf", help="the binary of that release (default /usr/bin/perf)")
    args = ap.parse_args()
    if args.agree:
        return 1 if agreement(args.agree, args.seed, args.release, args.perf) else 0
    speed()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
