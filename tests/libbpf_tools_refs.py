"""What each tool of Debian sid's libbpf-tools 0.37 prints on this kind of machine, as reference
data for running the same objects with ``evspec record`` (tests/data/libbpf_tools/TOOL.json).

``SPECS`` says, per tool name (aliases such as ``ext4dist`` included), the command line, the steps
of the scripted workload (tests/libbpf_tools_workload.py), what kind of output the tool prints and
how it is masked and compared. ``run_tool`` runs the tool's own binary through the chroot's
dynamic loader (paths are the host's, as the workload's are) with line-buffered stdout, starts the
workload once the tool waits for events (sleeps in poll, epoll or nanosleep), stops the tool with
SIGINT once the workload is done, and ``reference`` turns what it printed into the committed form: pids named by role
(``<W>`` the workload, ``<C1>``... its children, ``<T1>``... its threads, ``<L>`` who launched it,
``<tool>`` the tool itself, ``<pid>`` anyone else), times, latencies, counts, addresses and ports
masked, and the records, histograms, tables or stacks parsed. ``differences`` compares two
references as the spec's ``compare`` says. scripts/libbpf_tools_refs.py regenerates the files.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heldout_tools import SID_SBIN, SID_SUFFIX

DATA = Path(__file__).parent / "data" / "libbpf_tools"
WORKLOAD = Path(__file__).parent / "libbpf_tools_workload.py"
PACKAGE = "libbpf-tools 0.37.0+ds-8 (Debian sid)"

READY_SECONDS = 15.0  # a tool that does not wait for events this long is started on anyway
SETTLE_SECONDS = 0.4  # after the workload, for the tool to drain its buffers
STOP_SECONDS = 15.0  # after SIGINT, before SIGKILL

KPROBE = "kprobe"  # Spec.fails: the tool's kprobe program cannot attach (the message names it)
OUTPUTS = ("records", "table", "histogram", "stacks")
COMPARES = ("exact", "set", "shape")
WORKLOAD_COMMS = frozenset({"evspec-wl", "evspecwl-exec", "bash"})  # what the workload's tasks are called
ROLE = re.compile(r"<(W|C\d+|T\d+)>")  # the roles of the workload's own tasks


@dataclass(frozen=True, slots=True)
class Spec:
    """How one tool is run, and how what it prints is read.

    ``args`` may name ``{pid}`` (the workload) and ``{port}`` (its listening TCP port).
    ``masks`` maps a column of records or tables to what its values are: ``pid`` (named by role),
    ``comm`` (kept for the workload's tasks), ``time``, ``n`` (a number that differs from run to
    run), ``port`` (the listening port is ``<port>``, others ``<eport>``), ``addr``, ``ns``.
    ``rows="workload"`` keeps only the rows about the workload's tasks (by pid or comm).
    ``lines`` are more (pattern, replacement) masks for this tool's lines; ``frame`` matches a
    line of a stack (consecutive ones become one ``<frames>``).
    ``fails`` is ``KPROBE`` or (text of its message, reason) for a tool that cannot run here.
    """

    args: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()
    output: str | None = None
    header: str | None = None  # the first column's name, for records and tables
    masks: Mapping[str, str] = field(default_factory=dict)
    rows: str = "all"
    compare: str = "shape"
    lines: tuple[tuple[str, str], ...] = ()
    frame: str | None = None
    fails: str | tuple[str, str] | None = None
    object: str | None = None  # the object it embeds, when it is an alias of another tool
    note: str | None = None


_STACK_COUNT = ((r"^(\s+)\d+$", r"\1<n>"),)
_SNOOP_SIG = {"TIME": "time", "PID": "pid", "COMM": "comm", "TPID": "pid", "TCOMM": "comm"}
_TCP = {"PID": "pid", "COMM": "comm", "LPORT": "port", "RPORT": "port"}
_MERGE_BIO_NOTE = ("its one kprobe program, blk_account_io_merge_bio, is loaded because the symbol is in "
                   "/proc/kallsyms; the tracepoints it uses otherwise (tp_btf) attach here")
_FS_NOTE = "{fs}'s own functions need kprobes or fentry; this machine's root file system is ext4"


def _fs_alias(kind: str, fs: str) -> Spec:
    return Spec(fails=KPROBE, object=kind, note=_FS_NOTE.format(fs=fs))


SPECS: dict[str, Spec] = {
    "bashreadline": Spec(steps=("readline",), output="records", header="TIME", rows="workload",
                         masks={"TIME": "time", "PID": "pid"}, compare="exact"),
    "bindsnoop": Spec(fails=KPROBE),
    "biolatency": Spec(steps=("blockio",), output="histogram"),
    "biopattern": Spec(steps=("blockio",), output="table", header="DISK",
                       masks={"%RND": "n", "%SEQ": "n", "COUNT": "n", "KBYTES": "n"}),
    "biosnoop": Spec(fails=KPROBE, note=_MERGE_BIO_NOTE),
    "biostacks": Spec(fails=KPROBE, note=_MERGE_BIO_NOTE),
    "biotop": Spec(fails=KPROBE),
    "bitesize": Spec(args=("-c", "evspec-wl"), steps=("blockio",), output="histogram"),
    "cachestat": Spec(fails=KPROBE),
    "capable": Spec(fails=KPROBE),
    "cpudist": Spec(args=("-p", "{pid}"), steps=("spin", "sleep"), output="histogram"),
    "cpufreq": Spec(fails=("This tool depends on CPU Frequency Scaling",
                           "no CPU frequency scaling here (/sys/devices/system/cpu/cpu0/cpufreq is missing)")),
    "drsnoop": Spec(args=("-p", "{pid}"), steps=("sleep",), output="records", header="TIME",
                    masks={"TIME": "time", "TID": "pid", "LAT(ms)": "n", "PAGES": "n"},
                    note="runs; prints no record, as nothing here reclaims memory directly"),
    "execsnoop": Spec(args=("-x", "-n", "evspec"), steps=("exec",), output="records", header="PCOMM",
                      masks={"PID": "pid", "PPID": "pid"}, compare="exact"),
    "exitsnoop": Spec(steps=("exec", "exit"), output="records", header="PCOMM", rows="workload",
                      masks={"PID": "pid", "PPID": "pid", "TID": "pid", "AGE(s)": "n"}, compare="exact"),
    "filelife": Spec(fails=KPROBE),
    "filetop": Spec(fails=KPROBE),
    "fsdist": Spec(args=("-t", "ext4"), fails=KPROBE),
    "fsslower": Spec(args=("-t", "ext4"), fails=KPROBE),
    "funclatency": Spec(args=("-p", "{pid}", "c:getppid"), steps=("syscalls",), output="histogram",
                        note="a libc function (uprobes); a kernel function (kprobe or fentry) fails here"),
    "futexctn": Spec(args=("-p", "{pid}"), steps=("futex",), output="histogram",
                     lines=((r"contended \d+ times, \d+ avg usecs \[max: \d+ usecs, min \d+ usecs\]",
                             "contended <n> times, <n> avg usecs [max: <n> usecs, min <n> usecs]"),),
                     frame=r"^    (?!-$)\S"),
    "gethostlatency": Spec(args=("-p", "{pid}"), steps=("getaddrinfo",), output="records", header="TIME",
                           masks={"TIME": "time", "PID": "pid", "LATms": "n"}, compare="exact"),
    "hardirqs": Spec(steps=("blockio",), output="table", header="HARDIRQ",
                     masks={"TOTAL_count": "n", "TOTAL_usecs": "n", "MAX_usecs": "n"}),
    "javagc": Spec(args=("-p", "{pid}"), fails=("Not found libjvm.so.", "needs a Java VM (libjvm.so's USDT probes)")),
    "killsnoop": Spec(args=("-p", "{pid}"), steps=("signal",), output="records", header="TIME", masks=_SNOOP_SIG,
                      compare="exact", object="sigsnoop"),
    "klockstat": Spec(fails=KPROBE),
    "ksnoop": Spec(args=("trace", "do_nanosleep"), fails=KPROBE),
    "llcstat": Spec(fails=("failed to init perf sampling",
                           "no hardware PMU: its cache-miss and cache-reference events cannot be opened")),
    "mdflush": Spec(fails=KPROBE),
    "memleak": Spec(args=("-p", "{pid}", "-z", "40961", "-Z", "81923"), steps=("malloc",), output="stacks",
                    frame=r"^\t\d+ \[", compare="set"),
    "mountsnoop": Spec(steps=("mount",), output="records", header="COMM", rows="workload",
                       masks={"PID": "pid", "TID": "pid", "MNT_NS": "ns"}, compare="exact"),
    "numamove": Spec(fails=KPROBE),
    "offcputime": Spec(args=("-p", "{pid}"), steps=("sleep",), output="stacks", lines=_STACK_COUNT,
                       frame=r"^    (?!-  )\S"),
    "oomkill": Spec(fails=KPROBE),
    "opensnoop": Spec(args=("-p", "{pid}"), steps=("open",), output="records", header="PID",
                      masks={"PID": "pid"}, compare="exact"),
    "profile": Spec(args=("-p", "{pid}", "-F", "99"), steps=("spin",), output="stacks", lines=_STACK_COUNT,
                    frame=r"^    (?!-  )\S"),
    "readahead": Spec(fails=("failed to attach to access functions",
                             "fentry only (folio_mark_accessed, mark_page_accessed): no BPF trampolines here")),
    "runqlat": Spec(args=("-p", "{pid}"), steps=("sleep",), output="histogram"),
    "runqlen": Spec(steps=("sleep",), output="histogram"),
    "runqslower": Spec(args=("-p", "{pid}", "1"), steps=("sleep",), output="records", header="TIME",
                       masks={"TIME": "time", "TID": "pid", "LAT(us)": "n"}, compare="set"),
    "sigsnoop": Spec(args=("-p", "{pid}"), steps=("signal",), output="records", header="TIME", masks=_SNOOP_SIG,
                     compare="exact"),
    "slabratetop": Spec(fails=KPROBE),
    "softirqs": Spec(steps=("blockio",), output="table", header="SOFTIRQ", masks={"TOTAL_usecs": "n"}),
    "solisten": Spec(fails=KPROBE),
    "statsnoop": Spec(args=("-p", "{pid}"), steps=("stat",), output="records", header="PID",
                      masks={"PID": "pid"}, compare="exact"),
    "syncsnoop": Spec(steps=("sync",), output="records", header="TIME(s)", rows="workload",
                      masks={"TIME(s)": "time", "COMM": "comm"}, compare="exact"),
    "syscount": Spec(args=("-p", "{pid}"), steps=("syscalls",), output="table", header="SYSCALL",
                     masks={"COUNT": "n"}, compare="set"),
    "tcpconnect": Spec(fails=KPROBE),
    "tcpconnlat": Spec(fails=KPROBE),
    "tcplife": Spec(args=("-D", "{port}"), steps=("tcp",), output="records", header="PID",
                    masks={**_TCP, "MS": "n"}, compare="exact"),
    "tcppktlat": Spec(args=("-p", "{pid}"), steps=("tcp",), output="records", header="PID",
                      masks={**_TCP, "TID": "pid", "MS": "n"}, compare="set"),
    "tcprtt": Spec(fails=KPROBE),
    "tcpstates": Spec(args=("-L", "{port}"), steps=("tcp",), output="records", header="SKADDR",
                      masks={**_TCP, "SKADDR": "addr", "MS": "n"}, compare="set"),
    "tcpsynbl": Spec(fails=KPROBE),
    "tcptop": Spec(fails=KPROBE),
    "tcptracer": Spec(fails=KPROBE),
    "vfsstat": Spec(fails=KPROBE),
    "wakeuptime": Spec(args=("-p", "{pid}"), steps=("sleep",), output="stacks",
                       lines=((r"^\t(\s*)waker: .*", r"\t\1waker: <comm>"), (r"^\t\d+$", "\t<n>")),
                       frame=r"^\t<addr> "),
    "zfsslower": Spec(fails=("filesystem must be specified using -t option.",
                             "the tool does not know this alias of fsslower (zfs is not in its list): it asks for -t"),
                      object="fsslower"),
}
for _fs in ("bcachefs", "btrfs", "ext4", "f2fs", "fuse", "nfs", "xfs", "zfs"):
    SPECS.setdefault(f"{_fs}dist", _fs_alias("fsdist", _fs))
    SPECS.setdefault(f"{_fs}slower", _fs_alias("fsslower", _fs))
SPECS = dict(sorted(SPECS.items()))


# --- running ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    tool: str
    argv: tuple[str, ...]  # as given to the tool, placeholders filled
    stdout: str
    stderr: str
    status: int  # the exit status, or -N when signal N ended it
    running: bool  # still tracing when the workload was done (and so stopped with SIGINT)
    roles: dict[int, str]  # pid -> role
    port: int


def _loader(sid: Path) -> list[str]:
    libs = f"{sid}/usr/lib/x86_64-linux-gnu:{sid}/lib/x86_64-linux-gnu"
    return [f"{sid}/usr/lib64/ld-linux-x86-64.so.2", "--library-path", libs,
            "--preload", f"{sid}/usr/libexec/coreutils/libstdbuf.so"]


# x86-64 system calls a tool waits in once it is set up: poll, select, pause, nanosleep,
# clock_nanosleep, epoll_wait, pselect6, ppoll, epoll_pwait, epoll_pwait2
_WAITING = frozenset({7, 23, 34, 35, 230, 232, 270, 271, 281, 441})


def _wait_until_waiting(proc: subprocess.Popen[bytes], seconds: float) -> None:
    """Returns once ``proc`` sleeps in one of the system calls of ``_WAITING`` (it has attached
    and opened its buffers: a tool that prints its header first may not have), or has ended, or
    after ``seconds``."""
    deadline = time.monotonic() + seconds
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            number = Path(f"/proc/{proc.pid}/syscall").read_text().split()[0]
        except (OSError, IndexError):
            number = ""
        if number.isdigit() and int(number) in _WAITING:
            return
        time.sleep(0.01)


class _Drain(threading.Thread):
    """Reads one pipe to its end."""

    def __init__(self, fd: int) -> None:
        super().__init__(daemon=True)
        self.fd, self.data = fd, bytearray()

    def run(self) -> None:
        while chunk := os.read(self.fd, 65536):
            self.data += chunk


def run_tool(tool: str, sbin: Path = SID_SBIN, spec: Spec | None = None) -> Run:
    """Runs ``sbin/TOOL-libbpf`` with the workload of its spec, as described in the module."""
    spec = SPECS[tool] if spec is None else spec
    sid = sbin.parent.parent
    workload = subprocess.Popen([sys.executable, str(WORKLOAD), *spec.steps], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
    assert workload.stdin is not None and workload.stdout is not None
    try:
        ready = json.loads(workload.stdout.readline())
        argv = tuple(a.format(pid=ready["pid"], port=ready["port"]) for a in spec.args)
        env = dict(os.environ, _STDBUF_O="L", LC_ALL="C")
        proc = subprocess.Popen([*_loader(sid), str(sbin / f"{tool}{SID_SUFFIX}"), *argv], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd="/")
        assert proc.stdout is not None and proc.stderr is not None
        drains = [_Drain(proc.stdout.fileno()), _Drain(proc.stderr.fileno())]
        for d in drains:
            d.start()
        _wait_until_waiting(proc, READY_SECONDS)
        workload.stdin.write("go\n")
        workload.stdin.flush()
        done = json.loads(workload.stdout.readline() or "{}")
        time.sleep(SETTLE_SECONDS)
        running = proc.poll() is None
        if running:
            proc.send_signal(signal.SIGINT)
        try:
            status = proc.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            status = proc.wait()
        for d in drains:
            d.join()
    finally:
        workload.stdin.close()
        workload.wait()
    roles = {os.getpid(): "L", ready["pid"]: "W", proc.pid: "tool"}
    roles.update({pid: f"C{i}" for i, pid in enumerate(done.get("children", []), 1)})
    roles.update({tid: f"T{i}" for i, tid in enumerate(done.get("threads", []), 1)})
    text = [d.data.decode("utf-8", "replace") for d in drains]
    return Run(tool, argv, text[0], text[1], status, running, roles, ready["port"])


# --- masking and parsing ------------------------------------------------------------------------

_WLDIR = re.compile(r"/tmp/evspec-wl-[A-Za-z0-9_]+")
_CLOCK = re.compile(r"\b\d{1,2}:\d{1,2}:\d{1,2}\b")
_ADDR = re.compile(r"\b(?:0x)?[0-9a-f]{12,16}\b")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_HIST_HEAD = re.compile(r"^\s*(\S+)\s+:\s+count\s+distribution\s*$")
_LOG2 = re.compile(r"^\s*(\d+)\s+->\s+(\d+)\s+:\s+(\d+)\s+\|")
_LINEAR = re.compile(r"^\s*(\d+)\s+:\s+(\d+)\s+\|")


def mask_line(line: str, run: Run, spec: Spec) -> str:
    """The masks every line of a tool's output gets (the spec's own before pids and ports, so
    that a count it masks is never taken for a pid)."""
    line = _WLDIR.sub("<wldir>", line)
    line = _CLOCK.sub("<time>", line)
    line = _ADDR.sub("<addr>", line)
    for pattern, repl in spec.lines:
        line = re.sub(pattern, repl, line)
    if spec.frame and re.match(spec.frame, line):
        return "<frames>"
    if run.port:
        line = re.sub(rf"(?<![\d.<]){run.port}(?![\d.])", "<port>", line)
    for pid, role in run.roles.items():
        line = re.sub(rf"(?<![\d.x<]){pid}(?![\d.])", f"<{role}>", line)
    return line


def _mask_value(kind: str, value: str, run: Run) -> str:
    if kind == "pid":
        role = run.roles.get(int(value)) if value.lstrip("-").isdigit() else None
        return f"<{role}>" if role else "<pid>"
    if kind == "comm":
        return value if value in WORKLOAD_COMMS or value == "N/A" else "<comm>"
    if kind == "port":
        return "<port>" if value == str(run.port) else value if value == "0" else "<eport>"
    if kind in ("time", "n", "addr", "ns"):
        return f"<{kind}>"
    raise ValueError(f"unknown mask kind {kind!r}")


def _workload_row(row: Mapping[str, str], masks: Mapping[str, str]) -> bool:
    return any((kind == "pid" and ROLE.fullmatch(row.get(col, ""))) or (kind == "comm" and row.get(col) in WORKLOAD_COMMS)
               for col, kind in masks.items())


def _cells(line: str, count: int) -> list[tuple[int, int]]:
    """The spans of a row's ``count`` cells: blank-separated, the last one to the line's end."""
    spans = [m.span() for m in re.finditer(r"\S+", line)]
    if len(spans) > count:
        spans[count - 1:] = [(spans[count - 1][0], spans[-1][1])]
    return spans


def parse_rows(lines: Sequence[str], run: Run, spec: Spec) -> tuple[list[str], list[dict[str, str]], dict[int, str]]:
    """The header's columns and the rows below it (of the tool's unmasked lines), split on blanks
    (the last column keeps its own), masked by column; rows of other tasks dropped when the spec
    says so. Also the masked text of each row line kept, by line number (the others are dropped
    from the text too)."""
    assert spec.header is not None
    start = next((i for i, line in enumerate(lines) if line.split()[:1] == [spec.header]), None)
    if start is None:
        return [], [], {}
    columns = lines[start].split()
    unknown = set(spec.masks) - set(columns)
    if unknown:
        raise ValueError(f"masked column(s) {sorted(unknown)} are not in the header {columns}")
    rows, text = [], {}
    for number, line in enumerate(lines[start + 1:], start + 1):
        spans = _cells(line, len(columns))
        if len(spans) < len(columns) - 1:
            continue  # blank, or a line of another kind (a summary, a timestamp)
        row = {}
        for col, (begin, end) in zip(columns, spans, strict=False):
            value = line[begin:end]
            row[col] = _mask_value(spec.masks[col], value, run) if col in spec.masks else mask_line(value, run, spec)
        if spec.rows == "all" or _workload_row(row, spec.masks):
            rows.append(row)
            masked = line
            for col, (begin, end) in reversed(list(zip(columns, spans, strict=False))):
                masked = masked[:begin] + row[col] + masked[end:]
            text[number] = masked.rstrip()
        else:
            text[number] = ""
    return columns, rows, text


def parse_histograms(lines: Sequence[str], run: Run, spec: Spec) -> list[dict[str, Any]]:
    """Every histogram (of the tool's unmasked lines): the lines above it since the last one
    (labels, masked, consecutive ``<frames>`` made one), the unit of its header, log2
    (``lo -> hi``) or linear slots, and its buckets ``[lo, hi, count]`` as counted."""
    hists: list[dict[str, Any]] = []
    labels: list[str] = []
    current: dict[str, Any] | None = None
    for line in lines:
        if m := _HIST_HEAD.match(line):
            current = {"labels": labels, "unit": m.group(1), "slots": None, "buckets": []}
            hists.append(current)
            labels = []
        elif current is not None and (m := _LOG2.match(line)):
            current["slots"] = "log2"
            current["buckets"].append([int(m.group(1)), int(m.group(2)), int(m.group(3))])
        elif current is not None and (m := _LINEAR.match(line)):
            current["slots"] = "linear"
            current["buckets"].append([int(m.group(1)), int(m.group(1)), int(m.group(2))])
        elif line.strip():
            current = None
            masked = mask_line(line, run, spec)
            if not (masked == "<frames>" and labels[-1:] == ["<frames>"]):
                labels.append(masked)
    return hists


def _one_frames(lines: Sequence[str]) -> list[str]:
    """``lines`` with each run of ``<frames>`` lines made one (stack depths differ between runs)."""
    return [line for i, line in enumerate(lines) if not (line == "<frames>" and i and lines[i - 1] == "<frames>")]


def parse_stacks(lines: Sequence[str]) -> list[list[str]]:
    """Blocks of (masked) lines between blank lines."""
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    return [b for b in blocks if b]


def _reason(spec: Spec, stderr: str) -> str | None:
    if spec.fails == KPROBE:
        m = re.search(r"prog '([^']+)': failed to create kprobe '([^'+]+)", stderr)
        if m is None:
            return None
        return (f"kprobe: program {m.group(1)} cannot attach to {m.group(2)}: this kernel has no kprobes "
                "(no kprobe PMU, no kprobe_events in tracefs)")
    if isinstance(spec.fails, tuple):
        return spec.fails[1] if spec.fails[0] in stderr else None
    return None


def reference(run: Run, spec: Spec | None = None) -> dict[str, Any]:
    """The committed form of a run (see the module)."""
    spec = SPECS[run.tool] if spec is None else spec
    raw = run.stdout.splitlines()
    out = [mask_line(line, run, spec) for line in raw]
    err = [mask_line(line, run, spec) for line in run.stderr.splitlines()]
    ref: dict[str, Any] = {
        "tool": run.tool,
        "binary": f"{run.tool}{SID_SUFFIX}",
        "object": spec.object or run.tool,
        "package": PACKAGE,
        "args": list(spec.args),
        "workload": list(spec.steps),
        "runs": run.running,
        "status": run.status,
        "reason": None if run.running else _reason(spec, run.stderr),
        "output": spec.output if run.running else None,
        "compare": spec.compare,
        "note": spec.note,
        "stdout": out,
        "stderr": err,
    }
    if run.running and spec.output in ("records", "table"):
        ref["columns"], ref["rows"], text = parse_rows(raw, run, spec)
        ref["masks"] = dict(spec.masks)
        ref["stdout"] = [text.get(i, line) for i, line in enumerate(out) if text.get(i) != ""]
    elif run.running and spec.output == "histogram":
        ref["histograms"] = parse_histograms(raw, run, spec)
    elif run.running and spec.output == "stacks":
        ref["stacks"] = parse_stacks(_one_frames(out))
    ref["stdout"] = _one_frames(ref["stdout"])
    return ref


# --- comparing ----------------------------------------------------------------------------------


def _freeze(items: Sequence[Any]) -> Counter[str]:
    return Counter(json.dumps(i, sort_keys=True) for i in items)


def _histogram_problems(want: Sequence[Mapping[str, Any]], got: Sequence[Mapping[str, Any]], compare: str) -> list[str]:
    problems = []
    kinds = sorted({(h["unit"], h["slots"]) for h in want})
    if kinds != sorted({(h["unit"], h["slots"]) for h in got}):
        problems.append(f"histograms: reference {kinds}, now {sorted({(h['unit'], h['slots']) for h in got})}")
    labels, now = _freeze([h["labels"] for h in want]), _freeze([h["labels"] for h in got])
    if compare == "exact" and labels != now or compare == "set" and set(labels) != set(now):
        problems.append(f"histogram labels: reference {sorted(labels)}, now {sorted(now)}")
    counted = any(b[2] for h in want for b in h["buckets"])
    if counted != any(b[2] for h in got for b in h["buckets"]):
        problems.append(f"histograms: the reference counts {'something' if counted else 'nothing'}, now the other")
    return problems


def differences(want: Mapping[str, Any], got: Mapping[str, Any]) -> list[str]:
    """How ``got`` (a fresh run) differs from the reference ``want``, at the depth of its
    ``compare``: ``exact`` the same rows, stacks or histogram labels as often, ``set`` the same
    distinct ones, ``shape`` the same columns, histogram units and slots, and output where the
    reference has some and none where it has none."""
    problems = [f"{key}: reference {want[key]!r}, now {got[key]!r}" for key in ("runs", "reason", "output")
                if want[key] != got[key]]
    if problems or not want["runs"]:
        return problems
    compare, output = want["compare"], want["output"]
    if output == "histogram":
        return _histogram_problems(want["histograms"], got["histograms"], compare)
    items = "stacks" if output == "stacks" else "rows"
    if items == "rows" and want["columns"] != got["columns"]:
        problems.append(f"columns: reference {want['columns']}, now {got['columns']}")
    a, b = _freeze(want[items]), _freeze(got[items])
    if compare == "exact" and a != b:
        problems.append(f"{items}: only in the reference {sorted((a - b).elements())}; only now {sorted((b - a).elements())}")
    elif compare == "set" and set(a) != set(b):
        problems.append(f"{items}: only in the reference {sorted(set(a) - set(b))}; only now {sorted(set(b) - set(a))}")
    elif bool(a) != bool(b):
        problems.append(f"{items}: the reference has {sum(a.values())}, now {sum(b.values())}")
    return problems


def reference_path(tool: str, data: Path = DATA) -> Path:
    return data / f"{tool}.json"


def write_reference(ref: Mapping[str, Any], data: Path = DATA) -> Path:
    path = reference_path(ref["tool"], data)
    path.write_text(json.dumps(ref, indent=1, ensure_ascii=False) + "\n")
    return path


def read_reference(tool: str, data: Path = DATA) -> dict[str, Any]:
    return json.loads(reference_path(tool, data).read_text())
