"""Generated event strings for the differential tests of ``check --perf``: a seeded mix of valid,
near-valid and hostile strings over this kind of machine (software, tool, breakpoint, msr and
uprobe PMUs, sched/syscalls tracepoints, a placeholder core PMU).

``generate()`` is deterministic for a seed; tests/data/corpus/generated.txt holds its output (one
JSON string per line) and tests/test_dialect_answers.py checks that the two agree, so the committed
answers of the real binaries always belong to these strings. Regenerate the file with
``python tests/dialect_strings.py > tests/data/corpus/generated.txt``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

SEED = 20261
COUNT = 2400
GENERATED = Path(__file__).resolve().parent / "data" / "corpus" / "generated.txt"

HARDWARE = ("cycles", "cpu-cycles", "instructions", "cache-misses", "cache-references", "branches",
            "branch-instructions", "branch-misses", "bus-cycles", "ref-cycles", "stalled-cycles-frontend",
            "idle-cycles-backend")  # fmt: skip
SOFTWARE = ("cpu-clock", "task-clock", "page-faults", "faults", "minor-faults", "major-faults", "cs",
            "context-switches", "migrations", "cpu-migrations", "alignment-faults", "emulation-faults",
            "dummy", "bpf-output", "cgroup-switches")  # fmt: skip
TOOL = ("duration_time", "user_time", "system_time", "num_cpus", "has_pmem", "smt_on", "num_cores",
        "system_tsc_freq", "core_wide", "target_cpu", "slots")  # fmt: skip
CACHE = ("L1-dcache-loads", "L1-dcache-load-misses", "L1-dcache-stores", "L1-icache-loads", "l1d",
         "l1i-load-misses", "LLC-loads", "LLC-store-misses", "L2", "dTLB-loads", "iTLB-load-misses",
         "branch-loads", "branches-loads", "bpu-misses", "node-loads", "node-prefetches", "L1-icache-stores",
         "L1-dcache-speculative-read", "d-tlb-refs", "Data-TLB-miss", "LLC-prefetch-Reference",
         "l1d-loads-misses-access", "L1-data-write-ops")  # fmt: skip
TRACEPOINTS = ("sched:sched_switch", "sched:sched_wakeup", "syscalls:sys_enter_openat",
               "syscalls:sys_exit_read", "sched:sched_s*", "sched:*switch", "sch?d:sched_switch",
               "sched:nosuch", "nosuch:sched_switch", "raw_syscalls:sys_enter", "sched:read",
               "timer:hrtimer_start", "irq:*", "sched:sched_process_*", "9p:9p_client_req",
               "sdt_foo:bar", "sched:sched_switch:sched_switch")  # fmt: skip
PMU_EVENTS = ("msr/tsc/", "msr/event=0x0/", "msr/event=0x8/", "msr/tsc,name=t/", "msr/event=1,period=9/",
              "msr//", "software/cpu-clock/", "software/config=0/", "software//", "tool/duration_time/",
              "tool/num_cpus/", "tool//", "breakpoint//", "breakpoint/config=0/", "uprobe//",
              "uprobe/retprobe/", "uprobe/ref_ctr_offset=1/", "tracepoint//", "cpu/cycles/", "cpu//",
              "cpu/event=1/", "cpu/config=1/", "cpu/L1-dcache-loads/", "cpu/instructions,name=i/",
              "default_core/cycles/", "default_core//", "cpu_core/cycles/", "cpu_atom/cycles/", "power/energy-pkg/",
              "ms*/tsc/", "m*/tsc/", "tsc", "msr/cycles/", "software/task-clock,period=1/", "software/dummy/")  # fmt: skip
TERMS = ("config=1", "config1=2", "config2=0x3", "config3=4", "config4=5", "name=x", "name=my-ev",
         "name='quoted:name,x=1'", "name=1x", "period=1000", "period=0x10", "freq=99", "branch_type=any",
         "branch_type=u,k", "branch_type=bad", "branch_type=no", "time=0", "time=1", "time=2",
         "call-graph=fp", "call-graph=dwarf", "call-graph=bogus", "stack-size=8192", "max-stack=3", "nr=4",
         "inherit", "no-inherit", "overwrite", "no-overwrite", "percore", "percore=2", "aux-output",
         "aux-output=0", "aux-action=pause", "aux-action=start-paused", "aux-action=bogus",
         "aux-sample-size=4096", "aux-sample-size=4294967296", "metric-id=m", "cpu=0", "cpu=1", "cpu=2",
         "cpu=0-1", "cpu=0,cpu=1", "cpu=msr", "cpu=cpu", "cpu=x", "ratio-to-prev=2", "ratio-to-prev=0",
         "ratio-to-prev=-1", "legacy-hardware-config=0", "legacy-hardware-config=10",
         "legacy-cache-config=0x10000", "legacy-cache-config=0x1000000", "driver-config", "raw",
         "event=1", "event=0x3c", "umask=2", "foo", "foo=1", "foo=bar", "r1a", "r0x1a", "rff", "@cfg",
         "@cfg=val", "cycles", "instructions", "L1-dcache-loads", "read", "event=cycles", "tsc",
         "retprobe", "ref_ctr_offset=7", "config=18446744073709551615", "config=18446744073709551616",
         "period=99999999999999999999", "config=0x10000000000000000", "name=", "=1", "name=a=b")  # fmt: skip
MODIFIERS = ("u", "k", "h", "I", "G", "H", "p", "pp", "ppp", "pppp", "P", "S", "D", "W", "e", "b", "R",
             "X", "uk", "ukh", "uu", "kk", "upp", "uppp", "uW", "RX", "ukhIGHpPSDWebRX", "ukhIGHpppPSDWebRX",
             "ukhIGHpppPSDWebRXu", "x", "rw", "ukx", "q", "uz")  # fmt: skip
NUMBERS = ("0", "1", "2", "4", "8", "9", "10", "0x0", "0x1", "0xff", "0x1a", "4294967295", "4294967296",
           "4294967297", "18446744073709551615", "18446744073709551616", "99999999999999999999",
           "0xffffffffffffffff", "0x10000000000000000", "0x", "00", "007", "1e3")  # fmt: skip
JUNK = (";", "#", "~", "@", "!", "$", "%", "^", "&", "|", "<", ">", "?", "\\", '"', "'", " ", "\t", "`",
        "(", ")", "[", "]", "é", "\n", "+", "*", ".", "...")  # fmt: skip
WORDS = ("foo", "bar", "nosuch", "mem", "cpu", "msr", "tool", "software", "uprobe", "breakpoint",
         "tracepoint", "sched", "r", "rZ", "reed", "read", "x1", "1x", "9p", "_", "a.b", "a[1]", "a!b",
         "cycles-ct", "topdown-retiring", "slots", "tx-start", "energy-psys", "energy-pkg", "power",
         "default_core", "cpu_core", "hwmon_x", "drm-x", "uncore_imc", "L1", "LLC", "dTLB", "node")  # fmt: skip


def _event(rng: random.Random) -> str:
    kind = rng.randrange(12)
    if kind == 0:
        head = rng.choice(HARDWARE)
    elif kind == 1:
        head = rng.choice(SOFTWARE)
    elif kind == 2:
        head = rng.choice(TOOL)
    elif kind == 3:
        head = rng.choice(CACHE)
    elif kind == 4:
        head = rng.choice(TRACEPOINTS)
    elif kind == 5:
        head = rng.choice(PMU_EVENTS)
    elif kind == 6:
        head = f"r{rng.choice(('1a', '0x1a', 'ff', '1234', 'deadbeef', '1ffffffffffffffff', 'g', ''))}"
    elif kind == 7:
        head = f"{rng.choice(NUMBERS)}:{rng.choice(NUMBERS)}"
    elif kind == 8:
        head = "mem:" + rng.choice(NUMBERS)
        if rng.random() < 0.5:
            head += "/" + rng.choice(("1", "2", "4", "8", "0", "16", "x"))
        if rng.random() < 0.6:
            head += ":" + rng.choice(("r", "w", "x", "rw", "rwx", "rr", "wx", "xw", "rwxr", "q"))
    elif kind == 9:
        head = rng.choice(WORDS)
    elif kind == 10:
        head = f"'{rng.choice(SOFTWARE + HARDWARE)}'"
    else:
        head = rng.choice(SOFTWARE)
    if rng.random() < 0.35 and not head.endswith("/"):
        terms = [rng.choice(TERMS) for _ in range(rng.choice((0, 1, 1, 1, 2, 2, 3)))]
        head += "/" + rng.choice((",", ",", ",", ", ")).join(terms) + "/"
    if rng.random() < 0.35:
        head += rng.choice((":", ":", ":", "")) + rng.choice(MODIFIERS)
    return head


def _valid_ish(rng: random.Random) -> str:
    events = [_event(rng) for _ in range(rng.choice((1, 1, 1, 2, 2, 3)))]
    if rng.random() < 0.25:
        cut = rng.randrange(len(events) + 1)
        group = "{" + ",".join(events[cut:] or [_event(rng)]) + "}"
        if rng.random() < 0.3:
            group = rng.choice(("g", "grp", "tsc", "1", "my-grp", "G")) + group
        if rng.random() < 0.4:
            group += ":" + rng.choice(MODIFIERS)
        events = events[:cut] + [group]
    return ",".join(events)


def _mutated(rng: random.Random) -> str:
    text = _valid_ish(rng)
    for _ in range(rng.randint(1, 3)):
        i = rng.randint(0, len(text))
        op = rng.randrange(5)
        if op == 0:
            text = text[:i] + rng.choice(JUNK + (",", "/", ":", "{", "}", "=")) + text[i:]
        elif op == 1 and text:
            text = text[:i] + text[i + 1 :]
        elif op == 2 and text:
            text = text[:i] + rng.choice(JUNK + (",", "/", ":", "=")) + text[i + 1 :]
        elif op == 3:
            text = text[:i] + _event(rng) + text[i:]
        else:
            text = text[:i] + rng.choice(MODIFIERS + NUMBERS) + text[i:]
    return text


def _hostile(rng: random.Random) -> str:
    pieces = WORDS + NUMBERS + MODIFIERS + JUNK + (",", "/", ":", "{", "}", "=", "-", "mem:", "r")
    text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 10)))
    if rng.random() < 0.05:  # past perf's 13-column window and the terminal width
        text = ",".join(_event(rng) for _ in range(rng.randint(8, 20))) + rng.choice(JUNK + ("/", ":", ""))
    return text


def generate(seed: int = SEED, count: int = COUNT) -> list[str]:
    """``count`` distinct strings perf can be given as one ``-e`` argument (no NUL byte, none
    starting with '-', which perf would read as an option)."""
    rng = random.Random(seed)
    out: dict[str, None] = {}
    makers = (_valid_ish, _valid_ish, _mutated, _mutated, _hostile)
    while len(out) < count:
        text = rng.choice(makers)(rng)
        if text.startswith("-") or "\0" in text:
            continue
        out[text] = None
    return list(out)


def read_generated(path: Path = GENERATED) -> list[str]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


if __name__ == "__main__":
    sys.stdout.write("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in generate()))
