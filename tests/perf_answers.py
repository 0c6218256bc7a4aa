"""Regenerate tests/data/dialect/perf-RELEASE.jsonl.gz: what the installed perf 6.12, 7.2 and 7.3
answered for every corpus string and every generated string, in record and stat mode.

    python tests/perf_answers.py                 # all three releases (about 3 minutes)
    python tests/perf_answers.py --release 7.2   # one

The binaries are those scripts/oracles.sh installs (EVSPEC_ORACLES, default /var/cache/evspec/oracles).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from perf_oracle import RELEASES, jobs, run_all, strings, write_answers  # noqa: E402

ORACLES = Path(os.environ.get("EVSPEC_ORACLES", "/var/cache/evspec/oracles"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", choices=RELEASES, action="append")
    args = ap.parse_args()
    texts = strings()
    for release in args.release or RELEASES:
        perf = str(ORACLES / "bin" / f"perf-{release}")
        version = subprocess.run([perf, "--version"], capture_output=True, text=True, check=True).stdout.strip()
        start = time.perf_counter()
        answers = run_all(perf, jobs(texts))
        write_answers(release, version, answers)
        took = time.perf_counter() - start
        print(f"{version}: {len(answers)} answers, {sum(a.rejected for a in answers)} rejections, {took:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
