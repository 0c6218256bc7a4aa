"""Issue 5 bench (c): capture mode against perf record, and live decoding speed (needs root).

A BPF object emits one 56-byte bpf-output record per getppid() call (tests/data/capture/emit.c)
and a C loop calls getppid() N times (loop.c); both are built in a temp dir. Side by side, runs
interleaved, the same ring size (-m PAGES) for both:
  perf record -q -m PAGES -o perf.data -e ./emit.o -- ./loop N
  evspec record -m PAGES -o cap.data -e ./emit.o -- ./loop N
Printed per run: records lost by each, counted the same way from each file's records (the
PERF_RECORD_LOST_SAMPLES that both write at the end; the capture's report must agree), and for
live mode (`evspec record --format text|json ... > /dev/null`) the exact loss count
(PERF_FORMAT_LOST) next to what PERF_RECORD_LOST records reported, and samples printed per second
of wall time. Then median wall times and their ratio (target <= 1.5x, evspec
losing no more than perf); live mode's code alone over the capture's data section: decoding (ring
bytes -> SampleLine, target >= 500,000 records/s), decoding + text, decoding + JSON; and perf
script's own rate printing its file.
The evspec command is the console script next to sys.executable (use an installed wheel).
With --hogs H, H CPU-bound processes (unpinned, default nice) spin alongside each recording,
started just before and killed just after it, the same way for perf and evspec: the readers then
compete for a CPU. --capture-only leaves out the live-mode runs and rates.
Usage: python bench/capture_bench.py [--calls N] [--runs R] [--pages P] [--hogs H] [--capture-only]
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "capture"
_REPORT = re.compile(r"(?:\(|: )(\d+) samples, (\d+) lost(?:, (\d+) reported by PERF_RECORD_LOST)?")


def build(folder: Path) -> None:
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", "-c",
                    str(DATA / "emit.c"), "-o", str(folder / "emit.o")], check=True)
    subprocess.run(["cc", "-O2", "-o", str(folder / "loop"), str(DATA / "loop.c")], check=True)


@contextlib.contextmanager
def hogs(count: int) -> Iterator[None]:
    """``count`` CPU-bound processes spinning until the block ends."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.05 if spinners else 0)  # running, not starting up, when the tool starts
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def timed(cmd: list[str], cwd: Path, hog_count: int = 0) -> tuple[float, str]:
    with hogs(hog_count):
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"capture_bench: {' '.join(cmd)!r} failed ({done.returncode}):\n{done.stderr}")
    return elapsed, done.stderr


def evspec_counts(stderr: str) -> tuple[int, int, int]:
    """Samples, lost (exact where the kernel counts), lost as PERF_RECORD_LOST records said."""
    m = _REPORT.search(stderr)
    if m is None:
        sys.exit(f"capture_bench: no evspec report in:\n{stderr}")
    samples, lost, reported = m.groups()
    return int(samples), int(lost), int(reported or lost)


def file_counts(path: Path) -> tuple[int, int]:
    """Samples and lost samples of a perf.data file, from its records alone: the losses are the
    PERF_RECORD_LOST_SAMPLES counts (each event instance's exact count, written at the end by
    perf record and evspec capture alike) or, in a file without them, the PERF_RECORD_LOST sums
    (which they include: adding both would count those drops twice)."""
    import struct

    from evspec.loader.abi.perf import RecordType
    from evspec.loader.output.perfdata import read_perf_data

    data = read_perf_data(path)
    samples = reported = exact = 0
    has_exact = False
    for rec in data.records():
        if rec.type == RecordType.SAMPLE:
            samples += 1
        elif rec.type == RecordType.LOST:
            reported += struct.unpack_from("<Q", data.buf, rec.offset + 16)[0]
        elif rec.type == RecordType.LOST_SAMPLES:
            exact += struct.unpack_from("<Q", data.buf, rec.offset + 8)[0]
            has_exact = True
    return samples, exact if has_exact else reported


def offline_rates(path: Path, repeats: int = 3) -> dict[str, float]:
    """Records/s of live mode's renderer over a capture's data section (best of ``repeats``):
    decoding alone (ring bytes -> SampleRun columns, RingDecoder) and decoding plus text or JSON
    rendering (the bytes live mode writes, made, not written)."""
    from evspec.loader.output.perfdata import read_perf_data
    from evspec.loader.output.samples import RingDecoder
    from evspec.loader.output.script import JsonRenderer, SampleRun, TextRenderer, paused_gc

    data = read_perf_data(path)
    chunk = bytes(data.buf[data.data_offset : data.data_offset + data.data_size])
    attr = data.attrs[-1]
    best = {"decode": 0.0, "decode+text": 0.0, "decode+json": 0.0}
    with paused_gc():
        for _ in range(repeats):
            for what in best:
                decoder = RingDecoder(attr.name, 0, attr.sample_type)
                renderer = TextRenderer(len(attr.name)) if what.endswith("text") else JsonRenderer()
                start = time.perf_counter()
                runs = [item for item in decoder.decode(chunk) if isinstance(item, SampleRun)]
                if what != "decode":
                    for run in runs:
                        run.comms = ["loop"] * len(run)
                        for _piece in renderer.pieces([run]):
                            pass
                best[what] = max(best[what], decoder.samples / (time.perf_counter() - start))
    return best


def perf_script_rate(path: Path, samples: int) -> float:
    """Records/s of ``perf script`` printing a perf.data file to /dev/null."""
    start = time.perf_counter()
    subprocess.run(["perf", "script", "-i", str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return samples / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pages", type=int, default=128)
    ap.add_argument("--hogs", type=int, default=0, help="CPU-bound processes running alongside each recording")
    ap.add_argument("--capture-only", action="store_true", help="no live-mode runs or rates")
    opts = ap.parse_args()
    evspec = str(Path(sys.executable).with_name("evspec"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build(folder)
        n, m = str(opts.calls), str(opts.pages)
        perf_cmd = ["perf", "record", "-q", "-m", m, "-o", "perf.data", "-e", "./emit.o", "--", "./loop", n]
        cap_cmd = [evspec, "record", "-m", m, "-o", "cap.data", "-e", "./emit.o", "--", "./loop", n]
        live = {fmt: [evspec, "record", "-m", m, "--format", fmt, "-e", "./emit.o", "--", "./loop", n]
                for fmt in ("text", "json") if not opts.capture_only}
        times: dict[str, list[float]] = {"perf": [], "capture": [], "text": [], "json": []}
        print(f"{opts.calls} getppid calls, {opts.pages} ring pages, {opts.runs} interleaved runs, "
              f"{opts.hogs} CPU hogs alongside")
        print("lost: perf's and capture's from their files' records (PERF_RECORD_LOST_SAMPLES); live: exact "
              "count (PERF_FORMAT_LOST) / reported by PERF_RECORD_LOST; rec/s: samples printed / wall time")
        print(f"{'run':>3} {'perf lost':>10} {'capture lost':>13} {'text lost':>15} {'text rec/s':>11} "
              f"{'json lost':>15} {'json rec/s':>11}")
        perf_samples = 0
        losses: dict[str, list[int]] = {"perf": [], "capture": []}
        for run in range(opts.runs):
            t, _ = timed(perf_cmd, folder, opts.hogs)
            times["perf"].append(t)
            perf_samples, perf_lost = file_counts(folder / "perf.data")
            t, err = timed(cap_cmd, folder, opts.hogs)
            times["capture"].append(t)
            cap_samples, cap_lost = file_counts(folder / "cap.data")
            if (cap_samples, cap_lost) != evspec_counts(err)[:2]:
                sys.exit(f"capture_bench: the capture's report disagrees with its file ({cap_samples} samples, "
                         f"{cap_lost} lost):\n{err}")
            losses["perf"].append(perf_lost)
            losses["capture"].append(cap_lost)
            row = f"{run:3d} {perf_lost:10d} {cap_lost:13d}"
            for fmt, cmd in live.items():
                t, err = timed(cmd, folder, opts.hogs)
                times[fmt].append(t)
                samples, lost, reported = evspec_counts(err)
                row += f" {f'{lost}/{reported}':>15} {samples / t:11,.0f}"
            print(row, flush=True)
        no_more = sum(c <= p for p, c in zip(losses["perf"], losses["capture"], strict=True))
        print(f"lost in all runs: perf {sum(losses['perf'])}, capture {sum(losses['capture'])}; "
              f"capture lost no more than perf in {no_more} of {opts.runs} runs (target: all)")
        med = {k: statistics.median(v) for k, v in times.items() if v}
        print(f"wall time median: perf {med['perf']:.3f} s, evspec capture {med['capture']:.3f} s, "
              f"ratio {med['capture'] / med['perf']:.2f}x (target <= 1.5x)")
        if opts.capture_only:
            return
        print(f"live mode wall time median: text {med['text']:.3f} s, json {med['json']:.3f} s (to /dev/null)")
        rates = offline_rates(folder / "cap.data")
        print("live mode's code over the capture (records/s, best of 3): "
              + ", ".join(f"{what} {rate:,.0f}" for what, rate in rates.items()) + " (target: decode >= 500,000)")
        print(f"perf script over its own file (text to /dev/null): {perf_script_rate(folder / 'perf.data', perf_samples):,.0f} records/s")
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
