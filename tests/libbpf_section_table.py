"""libbpf 1.8's section names, name by name (tests/data/libbpf_sections/libbpf-1.8.tsv), and the
means to check them against libbpfs that run (tests/test_libbpf_section_table.py).

``match`` finds a name's entry as libbpf does (the first in table order: ``PREFIX+`` matches the
prefix alone or followed by ``/``, other entries match exactly); ``expected`` says what libbpf
then sends to the kernel in BPF_PROG_LOAD (program type, expected attach type, flags, whether an
attach BTF id is looked up), or that it loads nothing. The references: bpftool 7.8 (libbpf 1.8)
loading a one-program object per name, and tests/data/libbpf_sections/sections17.c against the
sid chroot's libbpf 1.7; what reaches the kernel is read from the BPF_PROG_LOAD calls themselves
(``capture_loads``: bpftrace on syscalls:sys_enter_bpf).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bpf_elf import one_program

DATA = Path(__file__).parent / "data" / "libbpf_sections"
TABLE = DATA / "libbpf-1.8.tsv"
DIFFERENCES = DATA / "libbpf-1.7-differences.tsv"
RUNNER = DATA / "sections17.c"

BPF_F_SLEEPABLE, BPF_F_XDP_HAS_FRAGS = 1 << 4, 1 << 5
# a target for each family of names that take one; names of this kernel's BTF where libbpf looks one up
TARGETS = {
    "kprobe": "do_nanosleep", "kretprobe": "do_nanosleep", "ksyscall": "nanosleep", "kretsyscall": "nanosleep",
    "uprobe": "/bin/true:main", "uretprobe": "/bin/true:main", "usdt": "/bin/true:provider:probe",
    "tracepoint": "syscalls/sys_enter_nanosleep", "tp": "syscalls/sys_enter_nanosleep",
    "raw_tracepoint": "sched_switch", "raw_tp": "sched_switch", "tp_btf": "sched_switch",
    "fentry": "vfs_read", "fexit": "vfs_read", "fmod_ret": "vfs_read", "fsession": "vfs_read",
    "freplace": "handler", "lsm": "file_open", "lsm_cgroup": "file_open", "iter": "task", "struct_ops": "init",
}
# names no entry matches: an exact entry with a target, a prefix without its '/'
NO_MATCH = ("xdp/x", "tc/x", "socket/x", "perf_event/x", "syscall/x", "sk_lookup/x", "cgroup/x", "kprobex",
            "tp_btfx", "lsm.x/file_open", "uprobe.multi.x", "sk_reuseport/x")

# the entries of libbpf 1.8's table that libbpf 1.1 does not have
ADDED_SINCE_11 = frozenset((
    "kprobe.session uprobe.multi uretprobe.multi uprobe.session uprobe.multi.s uretprobe.multi.s uprobe.session.s "
    "usdt.s tc/ingress tc/egress tcx/ingress tcx/egress netkit/primary netkit/peer tracepoint.s tp.s "
    "raw_tracepoint.s raw_tp.s tp_btf.s fsession fsession.s fsession.multi fsession.multi.s fentry.multi "
    "fexit.multi fentry.multi.s fexit.multi.s sk_skb/verdict cgroup/connect_unix cgroup/sendmsg_unix "
    "cgroup/recvmsg_unix cgroup/getpeername_unix cgroup/getsockname_unix struct_ops.s netfilter").split())


@dataclass(frozen=True, slots=True)
class SecDef:
    section: str  # as libbpf writes it: a trailing '+' takes '/TARGET' or nothing
    program_type: str
    attach_type: str  # '' for 0
    flags: frozenset[str]  # attachable, exp_attach_opt, attach_btf, sleepable, xdp_frags, usdt
    auto_attach: str  # the attach handler ('' for none)

    @property
    def prefix(self) -> str:
        return self.section.removesuffix("+")


def read_table(path: Path = TABLE) -> list[SecDef]:
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("#") or not line:
            continue
        cells = line.split("\t")
        if len(cells) != 5:
            raise ValueError(f"{path.name}:{number}: {len(cells)} cells, not 5: {line!r}")
        section, program_type, attach_type, flags, auto_attach = cells
        rows.append(SecDef(section, program_type, attach_type, frozenset(filter(None, flags.split(","))), auto_attach))
    return rows


def match(table: Sequence[SecDef], name: str) -> SecDef | None:
    for entry in table:
        if entry.section.endswith("+"):
            rest = name.removeprefix(entry.prefix)
            if rest != name and rest[:1] in ("", "/"):
                return entry
        elif name == entry.section:
            return entry
    return None


def _target(prefix: str) -> str:
    return TARGETS[re.split(r"[.]", prefix, maxsplit=1)[0]]


def section_names(table: Sequence[SecDef]) -> list[str]:
    """Every entry's name (alone, and with a target when it takes one), then ``NO_MATCH``."""
    names = []
    for entry in table:
        names.append(entry.prefix)
        if entry.section.endswith("+"):
            names.append(f"{entry.prefix}/{_target(entry.prefix)}")
    return [*dict.fromkeys(names), *NO_MATCH]


# why libbpf loads nothing for a program, and the words of its warning (1.8's, 1.7's)
REFUSALS = {
    "unknown": ("failed to guess program type from ELF section", "missing BPF prog type, check ELF section name"),
    "no_target": ("no BTF-based attach target is specified",),
    "no_target_program": ("attach program FD is not set",),
    "unused_struct_ops": ("program isn't referenced anywhere",),
}


def expected(table: Sequence[SecDef], name: str, uprobe_multi: bool = True) -> dict[str, object]:
    """What libbpf sends to the kernel for a program in section ``name``, or why it loads
    nothing (``refused``: a key of ``REFUSALS``). ``uprobe_multi``: the kernel has uprobe_multi
    links (then a ``usdt`` program is loaded with that attach type)."""
    entry = match(table, name)
    if entry is None:
        return {"refused": "unknown"}
    if entry.program_type == "struct_ops":  # loaded only when a struct_ops map names it
        return {"refused": "unused_struct_ops"}
    if "attach_btf" in entry.flags and "/" not in name:
        return {"refused": "no_target"}
    if entry.program_type == "ext":  # its target is a program, given at run time
        return {"refused": "no_target_program"}
    attach = "trace_uprobe_multi" if "usdt" in entry.flags and uprobe_multi else entry.attach_type
    flags = (BPF_F_SLEEPABLE if "sleepable" in entry.flags else 0) | (
        BPF_F_XDP_HAS_FRAGS if "xdp_frags" in entry.flags and entry.program_type == "xdp" else 0)
    return {"program_type": entry.program_type, "attach_type": attach, "flags": flags,
            "attach_btf": "attach_btf" in entry.flags}


def write_objects(out: Path, names: Sequence[str], prefix: str) -> dict[str, Path]:
    """One object per section name, its program named ``PREFIX`` and its number."""
    out.mkdir(parents=True, exist_ok=True)
    objects = {}
    for number, name in enumerate(names):
        path = out / f"{prefix}{number:03d}.o"
        path.write_bytes(one_program(name, f"{prefix}{number:03d}"))
        objects[name] = path
    return objects


# --- the references that run --------------------------------------------------------------------

_CAPTURE = """tracepoint:syscalls:sys_enter_bpf /args.cmd == 5/ {
  $a = (uint8 *)args.uattr;
  printf("LOAD %s %u %u %u %u\\n", str(uptr($a + 48), 16), *uptr((uint32 *)$a), *uptr((uint32 *)($a + 68)),
         *uptr((uint32 *)($a + 44)), *uptr((uint32 *)($a + 108)));
}
"""
_LOAD = re.compile(r"^LOAD (\S+) (\d+) (\d+) (\d+) (\d+)$")


@dataclass(frozen=True, slots=True)
class Load:
    """The fields of a BPF_PROG_LOAD call (union bpf_attr: prog_type at 0, prog_flags at 44,
    prog_name at 48, expected_attach_type at 68, attach_btf_id at 108)."""

    name: str
    program_type: int
    attach_type: int
    flags: int
    attach_btf_id: int


class Capture:
    def __init__(self) -> None:
        self.loads: list[Load] = []

    def by_name(self, prefix: str) -> dict[str, Load]:
        """The first load of each program whose name starts with ``prefix`` (libbpf may retry one)."""
        found: dict[str, Load] = {}
        for load in self.loads:
            if load.name.startswith(prefix):
                found.setdefault(load.name, load)
        return found


@contextmanager
def capture_loads(bpftrace: str, workdir: Path, ready_seconds: float = 60.0) -> Iterator[Capture]:
    """Every BPF_PROG_LOAD of the machine while the block runs (bpftrace attached before it
    starts; what it printed is read once it is stopped)."""
    script = workdir / "capture.bt"
    script.write_text(_CAPTURE)
    log = workdir / "capture.out"
    with log.open("w") as out:
        proc = subprocess.Popen([bpftrace, "-B", "line", str(script)], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    capture = Capture()
    try:
        deadline = time.monotonic() + ready_seconds
        while "Attached" not in log.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"bpftrace did not attach ({proc.poll()}):\n{log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield capture
        time.sleep(0.5)  # what is in flight is printed
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    for line in log.read_text().splitlines():
        if m := _LOAD.match(line):
            capture.loads.append(Load(m.group(1), *(int(g) for g in m.groups()[1:])))


def load_with_bpftool(bpftool: str, objects: Mapping[str, Path], workdir: Path) -> dict[str, list[str]]:
    """``bpftool prog load`` of each object, pinned in a bpffs of a private mount namespace (so
    that nothing is mounted on the host); per name, what bpftool and its libbpf said (nothing
    when the load succeeded)."""
    pins = workdir / "bpffs"
    pins.mkdir(exist_ok=True)
    script = ('mount -t bpf bpf "$0" || exit 1; b=$1; shift; '
              'for f; do echo "== $f" >&2; "$b" prog load "$f" "$0/p" && echo "== ok" >&2; rm -f "$0/p"; done')
    paths = {str(p): name for name, p in objects.items()}
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(pins), bpftool,
                           *paths], capture_output=True, text=True)
    said: dict[str, list[str]] = {}
    current = None
    for line in proc.stderr.splitlines():
        if line.startswith("== ") and line[3:] in paths:
            current = paths[line[3:]]
            said[current] = []
        elif line == "== ok":
            current = None
        elif current is not None and line.strip():
            said[current].append(line.strip())
    missing = set(objects) - set(said)
    if proc.returncode != 0 and missing:
        raise RuntimeError(f"bpftool did not run on {len(missing)} object(s): {proc.stderr[-2000:]}")
    return said


def run_runner(sid_run: str, binary: Path, objects: Mapping[str, Path]) -> dict[str, dict[str, object]]:
    paths = {str(p): name for name, p in objects.items()}
    proc = subprocess.run([sid_run, str(binary), *paths], capture_output=True, text=True)
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    if proc.returncode != 0 or len(lines) != len(paths):
        raise RuntimeError(f"{RUNNER.name} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return {paths[d["object"]]: d for d in lines}


def builtin_names(bpftool: str, kind: str) -> list[str]:
    """libbpf 1.8's names of program types or attach types, by number (bpftool lists them in
    enum order)."""
    proc = subprocess.run([bpftool, "feature", "list_builtins", kind], capture_output=True, text=True, check=True)
    return proc.stdout.split()


def read_differences(path: Path = DIFFERENCES) -> dict[str, str]:
    """Entry of libbpf 1.8's table -> what libbpf 1.7 does with its names (only ``unknown`` today:
    1.7 has no such entry), for the entries where the two differ."""
    rows = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line and not line.startswith("#"):
            section, what, *_ = line.split("\t")
            if what not in REFUSALS:
                raise ValueError(f"{path.name}:{number}: {what!r} is none of {sorted(REFUSALS)}")
            rows[section] = what
    return rows


def expected_17(table: Sequence[SecDef], differences: Mapping[str, str], name: str) -> dict[str, object]:
    """``expected`` for libbpf 1.7: as 1.8 but for the entries of ``differences``."""
    entry = match(table, name)
    if entry is not None and entry.section in differences:
        return {"refused": differences[entry.section]}
    return expected(table, name)


def listed_names(said: str) -> list[str]:
    """The section names of libbpf's ``supported section(type) names are: ...`` line."""
    _, found, names = said.partition("supported section(type) names are:")
    if not found:
        raise ValueError(f"not libbpf's list of section names: {said[:200]!r}")
    return names.split()
