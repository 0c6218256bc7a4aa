"""BPF ring buffer (BPF_MAP_TYPE_RINGBUF) drain rate, and the ring buffer against the perf ring on
the same producer, measured side by side in one run (needs root for (c)).

(a) BpfRingReader.take() alone over a hand-made ring (the kernel's layout in ctypes memory, as the
    tests' FakeRing): a 4 MiB ring full of 16-byte records, then a ring of mixed sizes (16, 24 and
    40 bytes in turn, every fourth record discarded). records/s, best of 5.
(b) live mode's code in this process over the same full ring: the drain's copy of the committed
    bytes (BpfRingReader.committed) and the renderer's cut into RingRecordLines (Follower), then
    + JsonRenderer / TextRenderer (the bytes `record` writes, made, not written). records/s, best
    of 5. Target: decoded to JSON >= 1,000,000/s.
    With -o, also capture mode's code: Capture.drain() writing the same ring's records as
    perf.data samples into a file (a new file each time), records/s (target: >= 3,000,000).
(c) end to end: `evspec record --format json --dump-maps counters -e ./X.o -- ./getppid N` to a
    file, for one producer (tests/data/ringbuf/same16.c: the same 16-byte record per getppid()
    call) built three ways: bpf_perf_event_output to __bpf_stdout__ (perf ring, -m PAGES per CPU),
    bpf_ringbuf_output and bpf_ringbuf_reserve + submit (a ring buffer map of as many bytes as the
    perf rings of all CPUs together). Per run: records written (the program's count in its
    `counters` map) and failed (full ring), records read (JSON lines printed), and records read
    per second of wall time; then the medians and the ring buffer / perf ring ratio. With -o, each
    run is followed by the same command with `-o cap.data` (records read: the samples its report
    counts in the file), and the medians of both modes are printed side by side.
The evspec command is the console script next to sys.executable.
Usage: python bench/ringbuf_bench.py [-o] [--calls N] [--runs R] [--pages P] [--no-record]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_rate  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "ringbuf"
PAGE = 4096
DISCARD_BIT = 1 << 30


class HandRing:
    """A ring buffer map's memory as the kernel maps it: consumer page, producer page, the data
    twice; filled once with records, read again and again by moving consumer_pos back."""

    def __init__(self, size: int) -> None:
        from evspec.loader.kernel import BpfRingMapping

        self.size = size
        self.consumer = ctypes.create_string_buffer(PAGE)
        self.producer = ctypes.create_string_buffer(PAGE + 2 * size)
        self.mapping = BpfRingMapping(-1, ctypes.addressof(self.consumer), ctypes.addressof(self.producer), size, PAGE)

    def fill(self, payloads: list[tuple[bytes, int]]) -> int:
        """Records (payload, header flags) from offset 0 while they fit; how many were written."""
        parts, pos, count = [], 0, 0
        for payload, flags in payloads:
            total = (len(payload) + 8 + 7) & ~7
            if pos + total > self.size:
                break
            parts.append(struct.pack("=II", len(payload) | flags, 0) + payload + b"\0" * (total - 8 - len(payload)))
            pos += total
            count += 1
        data = b"".join(parts)
        ctypes.memmove(ctypes.addressof(self.producer) + PAGE, data, len(data))
        ctypes.memmove(ctypes.addressof(self.producer) + PAGE + self.size, data, len(data))
        struct.pack_into("=Q", self.producer, 0, pos)
        return count

    def rewind(self) -> None:
        struct.pack_into("=Q", self.consumer, 0, 0)


def reader_rates() -> None:
    from evspec.loader.output.bpf_ringbuf import BpfRingReader

    size = 4 << 20
    equal = HandRing(size)
    n_equal = equal.fill([(struct.pack("=Q", 0x1234_0000_1234) + b"ring!\0\0\0", 0)] * (size // 24))
    sizes = (16, 24, 40)
    mixed = HandRing(size)
    n_mixed = mixed.fill([(bytes([i & 0xFF]) * sizes[i % 3], DISCARD_BIT if i % 4 == 3 else 0)
                          for i in range(size // 24)])
    kept_mixed = sum(1 for i in range(n_mixed) if i % 4 != 3)
    for what, ring, n, kept in (("16-byte records", equal, n_equal, n_equal),
                                ("mixed sizes, 1/4 discarded", mixed, n_mixed, kept_mixed)):
        reader = BpfRingReader("events", ring.mapping)

        def once(reader: BpfRingReader = reader, ring: HandRing = ring, n: int = n, kept: int = kept) -> int:
            ring.rewind()
            got = len(reader.take())
            if got != kept:
                sys.exit(f"ringbuf_bench: the reader took {got} records, not {kept}")
            return n
        print(f"(a) BpfRingReader.take(), {what} ({n} a ring): {best_rate(once):,.0f} records/s")


def pipeline_rates(capture: bool) -> None:
    size = 4 << 20
    for payloads in ("the same", "unique"):
        ring = HandRing(size)
        n = ring.fill([(struct.pack("=Q", 0x1234_0000_1234 if payloads == "the same" else i) + b"ring!\0\0\0", 0)
                       for i in range(size // 24)])
        _pipeline(ring, n, payloads, capture)
    if capture:
        sizes = (16, 24, 40)
        ring = HandRing(size)
        n = ring.fill([(bytes([i & 0xFF]) * sizes[i % 3], 0) for i in range(size // 24)])
        print(f"(b) capture (-o) of a full 4 MiB ring of 16, 24 and 40-byte records in turn: "
              f"{_capture_rate(ring, n):,.0f} records/s")


def _capture_rate(ring: HandRing, n: int, rounds: int = 15) -> float:
    """Capture.drain() of the whole ring into a perf.data file: records/s, the best of ``rounds``
    (each into a new file; opening it, and truncating the last one, are not timed)."""
    from evspec.loader.output import perfdata as pd
    from evspec.loader.output.bpf_ringbuf import BpfRingReader
    from evspec.loader.output.capture import Capture
    from evspec.loader.output.ringbuf_capture import RING_ID_BASE, ring_event_attr

    host = pd.HostInfo("bench", "", "", "x86_64", 1, 1, ("bench",))
    attrs = [pd.FileAttr.of("events", ring_event_attr(), (RING_ID_BASE,))]
    reader = BpfRingReader("events", ring.mapping)
    best = 0.0
    with tempfile.TemporaryDirectory(prefix="evspec-ringbuf-bench-") as tmp:
        for i in range(rounds):
            path = Path(tmp) / f"cap{i % 2}.data"
            path.unlink(missing_ok=True)
            ring.rewind()
            capture = Capture(path, attrs, [], host, bpf_rings=[(reader, RING_ID_BASE)], clock=time.monotonic_ns)
            start = time.perf_counter()
            capture.drain()
            elapsed = time.perf_counter() - start
            capture.finish()
            if capture.samples != n:
                sys.exit(f"ringbuf_bench: the capture holds {capture.samples} samples of {n} records")
            best = max(best, n / elapsed)
    return best


def _pipeline(ring: HandRing, n: int, payloads: str, capture: bool) -> None:
    from evspec.loader.output.bpf_ringbuf import BpfRingReader
    from evspec.loader.output.follow import BpfSource, Follower
    from evspec.loader.output.script import JsonRenderer, TextRenderer, paused_gc
    from evspec.loader.output.spool import BPF, Frame

    rates = {}
    with paused_gc():
        for what in ("copy+cut", "+json", "+text"):
            reader = BpfRingReader("events", ring.mapping)
            renderer = JsonRenderer() if what == "+json" else TextRenderer(len("events"))

            def once(reader: BpfRingReader = reader, renderer: JsonRenderer | TextRenderer = renderer,
                     what: str = what) -> int:
                """As a live recording does: the drain copies the committed bytes, the renderer
                cuts them into records and prints them (to nothing) a batch at a time."""
                ring.rewind()
                render = (lambda batch: ()) if what == "copy+cut" else renderer.pieces
                follower = Follower([], [BpfSource("events")], render, lambda _: None)
                span, position = reader.committed()
                follower.take(Frame(BPF, 0, 1, bytes(span)))
                reader.release(position)
                follower.finish()
                if follower.counts.samples != n:
                    sys.exit(f"ringbuf_bench: decoded {follower.counts.samples} of {n} records")
                return n
            rates[what] = best_rate(once)
    if capture:
        rates["capture (-o)"] = _capture_rate(ring, n)
    print(f"(b) live mode's code over a full 4 MiB ring of 16-byte records, {payloads} payloads (records/s): "
          + ", ".join(f"{what} {rate:,.0f}" for what, rate in rates.items()) + " (target: +json >= 1,000,000"
          + (", capture >= 3,000,000; capture / +json "
             f"{rates['capture (-o)'] / rates['+json']:.2f}x)" if capture else ")"))


def build(folder: Path, pages: int) -> dict[str, str]:
    shutil.copy(DATA / "same16.c", folder / "same16.c")
    shutil.copy(DATA / "getppid.c", folder / "getppid.c")
    subprocess.run(["cc", "-O2", "-o", "getppid", "getppid.c"], cwd=folder, check=True)
    ring_bytes = pages * PAGE * (os.cpu_count() or 1)  # the perf rings of every CPU together
    objects = {"perf ring (bpf_perf_event_output)": "perf", "ring buffer (bpf_ringbuf_output)": "output",
               "ring buffer (reserve + submit)": "reserve"}
    for name in objects.values():
        subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu",
                        f"-DVIA_{name.upper()}", f"-DRINGBUF_BYTES={ring_bytes}", "-c", "same16.c",
                        "-o", f"{name}.o"], cwd=folder, check=True)
    return objects


_REPORT = re.compile(r"\((\d+) samples, \d+ lost")


def record_once(evspec: str, folder: Path, obj: str, calls: int, pages: int,
                capture: bool = False) -> tuple[float, int, int, int]:
    """Wall time, records written, writes failed, records read of one `record --format json`
    (with ``capture``: `record -o`, records read being the samples its report counts)."""
    cmd = [evspec, "record", "-m", str(pages), "--format", "json", "--dump-maps", "counters",
           *(("-o", "cap.data") if capture else ()), "-e", f"./{obj}.o", "--", "./getppid", str(calls)]
    with (folder / "out.json").open("wb") as out:  # a file: no reader of a pipe competing for the CPUs
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=folder, stdout=out, stderr=subprocess.PIPE, check=False)
        elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"ringbuf_bench: {' '.join(cmd)!r} failed ({done.returncode}):\n{done.stderr.decode()}")
    read, counters = 0, {}
    for line in (folder / "out.json").read_bytes().splitlines():
        if line.startswith(b'{"event": '):
            read += 1
        elif line.startswith(b'{"map": "counters"'):
            entry = json.loads(line)
            counters[entry["key"]] = entry["value"]
    if capture:
        m = _REPORT.search(done.stderr.decode())
        if m is None:
            sys.exit(f"ringbuf_bench: no capture report in:\n{done.stderr.decode()}")
        read = int(m.group(1))
    return elapsed, counters.get(0, 0), counters.get(1, 0), read


def record_rates(calls: int, runs: int, pages: int, capture: bool) -> None:
    evspec = str(Path(sys.executable).with_name("evspec"))
    modes = ("json", "-o") if capture else ("json",)
    with tempfile.TemporaryDirectory(prefix="evspec-ringbuf-bench-") as tmp:
        folder = Path(tmp)
        objects = build(folder, pages)
        print(f"(c) evspec record --format json{' and -o' if capture else ''}, {calls:,} getppid calls, {runs} "
              f"interleaved runs, perf rings {pages} pages per CPU, ring buffers "
              f"{pages * PAGE * (os.cpu_count() or 1) >> 10} KiB")
        print("    read/s: records read / wall time; net: / (wall - the median wall of the same command with 0 calls)")
        print(f"    {'producer':<34} {'mode':>4} {'run':>3} {'written':>9} {'failed':>8} {'read':>9} {'wall s':>7} "
              f"{'read/s':>11}")
        keys = [(name, mode) for name in objects for mode in modes]
        walls: dict[tuple[str, str], list[float]] = {key: [] for key in keys}
        idle: dict[tuple[str, str], list[float]] = {key: [] for key in keys}
        reads: dict[tuple[str, str], list[int]] = {key: [] for key in keys}
        for run in range(runs):
            for name, mode in keys:
                obj = objects[name]
                idle[name, mode].append(record_once(evspec, folder, obj, 0, pages, mode == "-o")[0])
                wall, written, failed, read = record_once(evspec, folder, obj, calls, pages, mode == "-o")
                if read != written:
                    print(f"    warning: {name} {mode}: {written} written, {read} read")
                walls[name, mode].append(wall)
                reads[name, mode].append(read)
                print(f"    {name:<34} {mode:>4} {run:3d} {written:9d} {failed:8d} {read:9d} {wall:7.3f} "
                      f"{read / wall:11,.0f}", flush=True)
        med = {key: statistics.median(r / w for r, w in zip(reads[key], walls[key], strict=True)) for key in keys}
        net = {key: statistics.median(r / max(w - statistics.median(idle[key]), 1e-3)
                                      for r, w in zip(reads[key], walls[key], strict=True)) for key in keys}
        perf = "perf ring (bpf_perf_event_output)"
        for name, mode in keys:
            key = (name, mode)
            print(f"    median {name:<34} {mode:>4} {med[key]:11,.0f} read/s ({med[key] / med[perf, mode]:.2f}x the perf "
                  f"ring's), net {net[key]:11,.0f} read/s ({net[key] / net[perf, mode]:.2f}x), wall "
                  f"{statistics.median(walls[key]):.3f} s, 0 calls {statistics.median(idle[key]):.3f} s")
        if capture:
            for name in objects:
                print(f"    {name}: -o / json, net read/s {net[name, '-o'] / net[name, 'json']:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--capture", action="store_true",
                    help="also capture mode (record -o): in process in (b), end to end in (c)")
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pages", type=int, default=128)
    ap.add_argument("--no-record", action="store_true", help="(a) and (b) only: no root needed")
    opts = ap.parse_args()
    reader_rates()
    pipeline_rates(opts.capture)
    if opts.no_record:
        return
    if os.geteuid() != 0:
        sys.exit("ringbuf_bench: (c) needs root (it loads BPF programs with evspec record)")
    if shutil.which("clang") is None or shutil.which("cc") is None:
        sys.exit("ringbuf_bench: (c) needs clang and cc on PATH")
    record_rates(opts.calls, opts.runs, opts.pages, opts.capture)


if __name__ == "__main__":
    main()
