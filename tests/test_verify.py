"""`evspec verify`: every program and map of an object loaded into this kernel's verifier (root),
nothing attached, everything closed. A good object: all loaded, the JSON shape, instruction and
CO-RE relocation counts. An object with one program the verifier rejects: the other still loads,
the failing one's summary names the instruction and source line, exit 1. A CO-RE object with a
poisoned relocation: the finding reported and the verifier refusing the poisoned call. No
descriptor is left open, no file pinned; without root, a clear usage error."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import oracle
from corpus_files import DATA

from evspec.cli import build_parser
from evspec.cli.verify import verify_main

CORE = DATA / "core"
TWO = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4); __type(key, int); __type(value, long); }
	counts SEC(".maps");

SEC("raw_syscalls:sys_enter")
int good(void *ctx)
{
	int key = 1;
	long *v = bpf_map_lookup_elem(&counts, &key);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

SEC("raw_syscalls:sys_exit")
int bad(void *ctx)
{
	int key = 2;
	long *v = bpf_map_lookup_elem(&counts, &key);

	return *v; /* no NULL check: the verifier refuses this */
}
char _license[] SEC("license") = "GPL";
"""


SUB_POISONED = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

struct task_struct___s { int pid; int no_such_field; } __attribute__((preserve_access_index));

static __noinline int missing(struct task_struct___s *t)
{
	return BPF_CORE_READ(t, no_such_field);
}

SEC("raw_syscalls:sys_enter")
int calls_missing(void *ctx)
{
	struct task_struct___s *t = (void *)bpf_get_current_task();

	return BPF_CORE_READ(t, pid) + missing(t);
}
char _license[] SEC("license") = "GPL";
"""


# tests/data/verify/btf_map_init.c built three ways: cilium/ebpf's shape (its programs in sections
# libbpf has no type for), with libbpf's section names, and with the program in the prog array's
# initialiser refused by the verifier
PROG_ARRAY_INITS = {"btf_map_init": (), "btf_map_init_names": ("-DLIBBPF_NAMES",),
                    "btf_map_init_refused": ("-DLIBBPF_NAMES", "-DREFUSED")}
LIBBPF_SAYS = DATA / "verify" / "bpftool_sid.json"  # what bpftool 7.8 (libbpf 1.8) prog loadall said
LIBBPF_OBJECTS = (*PROG_ARRAY_INITS, "legacy_maps")


def _clang(src: Path, out: Path, *flags: str) -> None:
    if shutil.which("clang") is None:
        pytest.fail("clang is needed (scripts/test.sh installs it)")
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", "-I/usr/include/x86_64-linux-gnu", *flags, "-c",
                    str(src), "-o", str(out)], check=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("verify")
    for name in ("core_read", "kernel_poisoned", "kernel_relocs"):
        _clang(CORE / f"{name}.c", out / f"{name}.o")
    for name in ("pin", "progarray", "mapinmap"):
        _clang(DATA / "libbpf" / f"{name}.c", out / f"{name}.o")
    for name, flags in PROG_ARRAY_INITS.items():
        _clang(DATA / "verify" / "btf_map_init.c", out / f"{name}.o", *flags)
    _clang(DATA / "corpus" / "bpf" / "legacy_maps.c", out / "legacy_maps.o")
    (out / "two.c").write_text(TWO)
    _clang(out / "two.c", out / "two.o")
    (out / "sub_poisoned.c").write_text(SUB_POISONED)
    _clang(out / "sub_poisoned.c", out / "sub_poisoned.o")
    return out


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _pins() -> list[str]:
    root = Path("/sys/fs/bpf")
    return sorted(str(p) for p in root.rglob("*")) if root.is_dir() else []


def _verify(built: Path, monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[int, str, str]:
    monkeypatch.chdir(built)
    args = build_parser("verify").parse_args(["verify", *argv])
    out, err = io.StringIO(), io.StringIO()
    before, pins = _fds(), _pins()
    status = verify_main(args, stdout=out, stderr=err)
    assert _fds() == before, "a descriptor was left open"
    assert _pins() == pins, "something was left pinned"
    return status, out.getvalue(), err.getvalue()


def test_a_good_object_loads_entirely(root_kernel: None, built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, err = _verify(built, monkeypatch, "--format", "json", "core_read.o", "kernel_relocs.o")
    assert status == 0, err
    doc = json.loads(out)
    assert set(doc) == {"programs", "maps", "notes"} and doc["notes"] == []
    progs = {p["name"]: p for p in doc["programs"]}
    assert sorted(progs) == ["bitfield", "fields", "info", "on_enter"]
    for p in progs.values():
        assert {"object", "name", "section", "loaded", "insns", "verifier", "relocations"} <= set(p)
        assert p["loaded"] is True and p["verifier"] is None and p["insns"] > 0
    assert progs["on_enter"] == {**progs["on_enter"], "object": "core_read.o", "section": "raw_syscalls:sys_enter",
                                 "relocations": 2, "poisoned": []}
    # fields calls comm_char: its relocations count for the program too
    assert progs["fields"]["relocations"] > 4
    # info's guarded read of no_such_field is poisoned yet unreachable: loaded, the finding reported
    assert progs["info"]["loaded"] and [f["insn"] for f in progs["info"]["poisoned"]] == [5]
    assert doc["maps"] == [{"object": "core_read.o", "name": "__bpf_stdout__", "type": "perf_event_array",
                            "created": True, "error": None}]


def test_one_rejected_program_does_not_stop_the_other(root_kernel: None, built: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, _ = _verify(built, monkeypatch, "--format", "json", "two.o")
    assert status == 1
    doc = json.loads(out)
    progs = {p["name"]: p for p in doc["programs"]}
    assert progs["good"]["loaded"] is True and progs["good"]["insns"] > 0
    bad = progs["bad"]
    assert bad["loaded"] is False
    assert "invalid mem access" in bad["verifier"]
    assert "at insn " in bad["verifier"]  # the failing instruction
    assert "two.c:" in bad["verifier"] and "return *v;" in bad["verifier"]  # and its source line
    assert doc["maps"] == [{"object": "two.o", "name": "counts", "type": "array", "created": True, "error": None}]


def test_text_output_names_each_program(root_kernel: None, built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, _ = _verify(built, monkeypatch, "two.c")
    assert status == 1
    assert "program good (raw_syscalls:sys_enter): loaded" in out
    assert "program bad (raw_syscalls:sys_exit): NOT loaded" in out
    assert out.endswith("1 of 2 program(s) loaded\n")


def test_a_poisoned_relocation(root_kernel: None, built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, _ = _verify(built, monkeypatch, "--format", "json", "kernel_poisoned.o")
    assert status == 1
    [prog] = json.loads(out)["programs"]
    assert prog["loaded"] is False and prog["relocations"] == 2
    [finding] = prog["poisoned"]
    assert finding["insn"] == 9
    assert "struct task_struct___k.no_such_field (access 0:1)" in finding["message"]
    assert "at insn 9 `call unknown#195896080`" in prog["verifier"]
    assert prog["verifier"].startswith(  # what the poisoned call stands for, said where the verifier stops
        "invalid func unknown#195896080 (the poisoned instruction of a CO-RE relocation this kernel cannot "
        "satisfy: field_byte_offset of struct task_struct___k (access 0:1): field "
        "struct task_struct___k.no_such_field (access 0:1) is in none of vmlinux's struct task_struct")
    assert prog["verifier"].split("; ")[0].endswith("(function 'poisoned', instruction 9))")


def test_a_poisoned_relocation_in_a_subprogram(root_kernel: None, built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verifier stops in the called function: the explanation names it, and the instruction
    counted from its own start, where the relocation is."""
    status, out, _ = _verify(built, monkeypatch, "--format", "json", "sub_poisoned.o")
    assert status == 1
    [prog] = json.loads(out)["programs"]
    [finding] = prog["poisoned"]
    assert finding["function"] == "missing"
    assert f"(function 'missing', instruction {finding['insn']}))" in prog["verifier"]
    assert "struct task_struct___s.no_such_field" in prog["verifier"].split("; ")[0]


def test_btf_file_is_the_target(root_kernel: None, built: Path, monkeypatch: pytest.MonkeyPatch,
                                tmp_path: Path) -> None:
    status, out, _ = _verify(built, monkeypatch, "--format", "json", "--btf", "/sys/kernel/btf/vmlinux",
                             "core_read.o")
    assert status == 0 and json.loads(out)["programs"][0]["relocations"] == 2
    (tmp_path / "junk").write_bytes(b"junk")
    status, _, err = _verify(built, monkeypatch, "--btf", str(tmp_path / "junk"), "core_read.o")
    assert status == 2 and "--btf" in err


def test_usage_errors(root_kernel: None, built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status, _, err = _verify(built, monkeypatch, "missing.o")
    assert (status, err) == (2, "evspec verify: error[EB001]: missing.o: no such file\n")
    (built / "adir.o").mkdir(exist_ok=True)
    status, _, err = _verify(built, monkeypatch, "adir.o")
    assert (status, err) == (2, "evspec verify: error[EB001]: adir.o: is a directory, not a BPF object\n")


def test_not_root_is_a_clear_error(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    status, out, err = _verify(built, monkeypatch, "core_read.o")
    assert (status, out) == (2, "")
    assert "verify needs root" in err


def test_program_types_that_need_an_attach_target(root_kernel: None, built: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A tp_btf program is loaded as a tracing program for the kernel's btf_trace_sys_enter (the
    verifier refuses it without that); a tp_btf name the kernel lacks is reported on the program."""
    shutil.copy(CORE.parent / "ringbuf" / "btf_getppid.c", built / "btf.c")
    (built / "nosuch.c").write_text((built / "btf.c").read_text().replace("tp_btf/sys_enter", "tp_btf/no_such_tp"))
    status, out, err = _verify(built, monkeypatch, "--format", "json", "btf.c", "nosuch.c")
    assert status == 1, err
    programs = {(p["object"], p["name"]): p for p in json.loads(out)["programs"]}
    assert programs[("btf.c", "on_sys_enter")]["loaded"] is True
    bad = programs[("nosuch.c", "on_sys_enter")]
    assert bad["loaded"] is False and "the kernel has no BTF tracepoint 'no_such_tp'" in bad["error"]


@pytest.mark.parametrize("bpffs_mounted", [True, False])
def test_maps_pinned_by_name_go_to_a_private_directory(root_kernel: None, built: Path,
                                                       monkeypatch: pytest.MonkeyPatch, bpffs_mounted: bool) -> None:
    """A LIBBPF_PIN_BY_NAME map is pinned in a fresh directory (on /sys/fs/bpf when bpffs is
    mounted there, else on a private bpffs mount), never where another pin of that name could be
    reused, and nothing is left behind (_verify checks pins and descriptors)."""
    from evspec.loader.load import live as live_module

    mounted = live_module.on_bpffs("/sys/fs/bpf")
    if bpffs_mounted and not mounted:
        subprocess.run(["mount", "-t", "bpf", "bpf", "/sys/fs/bpf"], check=True)
    if not bpffs_mounted:
        monkeypatch.setattr(live_module, "on_bpffs", lambda path, mounts="": False)
    try:
        status, out, err = _verify(built, monkeypatch, "--format", "json", "pin.o")
    finally:
        if bpffs_mounted and not mounted:
            subprocess.run(["umount", "/sys/fs/bpf"], check=True)
    assert status == 0, err
    doc = json.loads(out)
    assert [(p["name"], p["loaded"]) for p in doc["programs"]] == [("pin_prog", True)]
    assert [(m["name"], m["created"]) for m in doc["maps"]] == [("es_pinned", True)]
    if not bpffs_mounted:
        with open("/proc/mounts", encoding="utf-8") as f:
            assert "evspec-verify-bpffs-" not in f.read()  # the private mount is gone


def test_prog_array_values_load_each_program_on_its_own(root_kernel: None, built: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A prog array whose values name the object's programs cannot take them deferred: each program
    is loaded with the object on its own (its own slots filled), and all three load, as libbpf's
    bpftool prog loadall loads them."""
    status, out, err = _verify(built, monkeypatch, "--format", "json", "progarray.o", "mapinmap.o")
    assert status == 0, err
    doc = json.loads(out)
    assert {p["name"]: p["loaded"] for p in doc["programs"]} == {
        "tail_a": True, "tail_b": True, "entry": True, "mim_prog": True}
    assert all(m["created"] for m in doc["maps"]) and {m["name"] for m in doc["maps"]} >= {"es_jump", "es_outer"}


def test_a_prog_array_naming_a_program_verify_does_not_load(root_kernel: None, built: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """cilium/ebpf's btf_map_init: tail_1, which the prog array's initialiser names, has a section
    libbpf has no program type for; verify said KeyError (exit 3). Now: each program's verdict, and
    the map created with the slot it cannot fill said, exit 1."""
    status, out, err = _verify(built, monkeypatch, "--format", "json", "btf_map_init.o")
    assert status == 1, err
    doc = json.loads(out)
    programs = {p["name"]: p for p in doc["programs"]}
    assert {n: p["loaded"] for n, p in programs.items()} == {"tail_1": False, "tail_main": False}
    assert programs["tail_1"]["error"].startswith("section 'socket/tail': malformed libbpf-style section")
    maps = {m["name"]: m for m in doc["maps"]}
    assert maps["prog_array_init"] == {
        "object": "btf_map_init.o", "name": "prog_array_init", "type": "prog_array", "created": True,
        "error": "slot [1] (program 'tail_1' did not load) not filled: libbpf fails the whole object's load then"}
    assert maps["outer_map_init"]["created"] and maps["outer_map_init"]["error"] is None
    status, out, _ = _verify(built, monkeypatch, "btf_map_init.o")
    assert "  map prog_array_init (prog_array): created, but slot [1] (program 'tail_1' did not load) not filled" in out


def test_a_prog_array_naming_a_refused_program(root_kernel: None, built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, err = _verify(built, monkeypatch, "--format", "json", "btf_map_init_refused.o", "btf_map_init_names.o")
    assert status == 1, err
    doc = json.loads(out)
    loaded = {(p["object"], p["name"]): p["loaded"] for p in doc["programs"]}
    assert loaded == {("btf_map_init_refused.o", "tail_1"): False, ("btf_map_init_refused.o", "tail_main"): True,
                      ("btf_map_init_names.o", "tail_1"): True, ("btf_map_init_names.o", "tail_main"): True}
    errors = {(m["object"], m["name"]): m["error"] for m in doc["maps"] if m["error"]}
    assert list(errors) == [("btf_map_init_refused.o", "prog_array_init")]


def _libbpf_verdicts() -> dict[str, dict[str, object]]:
    return json.loads(LIBBPF_SAYS.read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", sorted(PROG_ARRAY_INITS))
def test_verify_agrees_with_libbpf_on_the_prog_array_objects(root_kernel: None, built: Path,
                                                             monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """What libbpf 1.8 said of each object (committed: bpftool_sid.json): it loads the object
    exactly when verify finds nothing wrong, and each program it names as failing, verify does not
    load."""
    said = _libbpf_verdicts()[name]
    status, out, err = _verify(built, monkeypatch, "--format", "json", f"{name}.o")
    assert (status == 0) == (said["status"] == 0), (out, said)
    failing = set()
    for line in said["lines"]:  # type: ignore[attr-defined]
        if m := re.search(r"failed to guess program type from ELF section '([^']+)'", line):
            failing |= {p["name"] for p in json.loads(out)["programs"] if p["section"] == m[1]}
        elif m := re.search(r"prog '([^']+)': failed to load", line):
            failing.add(m[1])
    assert failing <= {p["name"] for p in json.loads(out)["programs"] if not p["loaded"]}
    assert bool(failing) == (said["status"] != 0)


LIBBPF_LINE = re.compile(r"failed to guess program type|failed to load|failed to initialize|not supported|^Error:")


@pytest.mark.parametrize("name", sorted(LIBBPF_OBJECTS))
def test_libbpf_still_says_what_was_committed(root_kernel: None, built: Path, tmp_path: Path, name: str) -> None:
    """bpftool 7.8 (libbpf 1.8) prog loadall on each object: its exit status and the lines that
    say why match bpftool_sid.json (EVSPEC_BLESS=1 rewrites it)."""
    bpftool = oracle("bpftool-sid")
    pins = tmp_path / "bpffs"
    pins.mkdir()
    subprocess.run(["mount", "-t", "bpf", "bpf", str(pins)], check=True)
    try:
        proc = subprocess.run([bpftool, "prog", "loadall", f"{name}.o", str(pins / "progs")], cwd=built,
                              capture_output=True, text=True, check=False)
    finally:
        subprocess.run(["umount", str(pins)], check=True)
    lines = sorted({line for line in (proc.stdout + proc.stderr).splitlines() if LIBBPF_LINE.search(line)})
    now = {"status": proc.returncode, "lines": lines}
    if os.environ.get("EVSPEC_BLESS") == "1":
        saved = _libbpf_verdicts() if LIBBPF_SAYS.exists() else {}
        saved[name] = now
        LIBBPF_SAYS.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
    assert now == _libbpf_verdicts()[name]


def test_a_legacy_maps_object_loads_with_a_note_quoting_libbpf(root_kernel: None, built: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """libbpf 1.8 refuses the object (bpftool_sid.json); verify loads it and says so in libbpf's words."""
    from evspec.loader.lint.libbpf_differences import LIBBPF_LEGACY_MAPS

    said = _libbpf_verdicts()["legacy_maps"]
    assert said["status"] != 0 and f"libbpf: {LIBBPF_LEGACY_MAPS}" in said["lines"]  # type: ignore[operator]
    status, out, err = _verify(built, monkeypatch, "--format", "json", "legacy_maps.o", "core_read.o")
    assert status == 0, err
    (note,) = json.loads(out)["notes"]
    assert note["object"] == "legacy_maps.o"
    assert note["message"].startswith('legacy SEC("maps") map definitions (channel, chan1, arr, arr64, arr8, arr3, '
                                      f'hmap): libbpf 1.0 and later refuse this object ("{LIBBPF_LEGACY_MAPS}")')
    status, out, err = _verify(built, monkeypatch, "legacy_maps.o")
    assert out.splitlines()[1] == f"  note: {note['message']}"
