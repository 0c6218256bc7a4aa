"""Every section name of libbpf 1.1's table (and the 1.8 names 1.1 lacks), as evspec reads, verifies, checks and records it.

* The table (loader/sections/libbpf-1.8.tsv) against the installed libbpf (1.1) itself: the
  program type and expected attach type ``libbpf_prog_type_by_name`` gives each name 1.1 has;
  the names it lacks are the 35 libbpf added by 1.8 (tests/test_sections_18.py checks those).
* ``evspec verify`` against libbpf (tests/libbpf_parity.py, the runner tests/data/heldout/load_one.c)
  on this folder's fixtures (tests/data/progtypes/*.c: every family of section names, with and
  without a target, and names libbpf does not have), program by program.
* ``parse_section``: what record does with each family (attach kinds, the note of a section that
  names no target), and the errors naming what is missing.
* ``evspec check`` (Decision 10: check checks what record runs) and ``evspec record``: trampoline
  programs refused by record, before the object is loaded, with the kernel feature named when the
  kernel cannot attach them (decided by what the kernel says, here compared with libbpf's verdict);
  programs libbpf would not attach are loaded and not attached, with a note.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import subprocess
from pathlib import Path

import pytest
from bpf_build import BPF_FLAGS, require_tools
from evspec.loader.errors import ObjectError
from evspec.loader.object.spec import ProgType
from evspec.loader.sections.libbpf import (
    BPF_F_SLEEPABLE,
    BPF_F_XDP_HAS_FRAGS,
    SECTION_DEFS,
    BpfAttachType,
    find_section_def,
    load_params,
    section_prog_flags,
)
from evspec.loader.sections.names import AttachKind, BtfTarget, parse_section
from libbpf_parity import Row, build_runner, compare, evspec_verdicts, libbpf_verdicts, table
from libbpf_section_table import ADDED_SINCE_11
from record_cli import run_record as _record

from evspec.cli import main as evspec_main
from evspec.diagnostics import EvspecError

DATA = Path(__file__).parent / "data" / "progtypes"
FIXTURES = ("tracing", "sockets", "probes")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tools("clang")
    out = tmp_path_factory.mktemp("progtypes")
    for name in FIXTURES:
        subprocess.run(["clang", *BPF_FLAGS, "-c", str(DATA / f"{name}.c"), "-o", str(out / f"{name}.o")],
                       check=True)
    return out


# ------------------------------------------------------------------ the table, against libbpf


def _libbpf() -> ctypes.CDLL:
    found = ctypes.util.find_library("bpf")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("libbpf (libbpf1) is required in CI")
        pytest.skip("libbpf is not installed")
    lib = ctypes.CDLL(found)
    lib.libbpf_prog_type_by_name.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int),
                                             ctypes.POINTER(ctypes.c_int)]
    return lib


NAMES = sorted({d.name for d in SECTION_DEFS} | {f"{d.name}/some_target" for d in SECTION_DEFS if d.plus} | {
    "kprobe_evspec", "xdp_evspec", "cgroup/evspec", "tc/ingress", "tc/egress", "sk_skb/other", "socket/x",
    "xdp.frags/devmap", "fentry.s/f", "lsm_cgroup/x", "kprobe.multi/x*", "raw_tp.w/x", "?kprobe/x",
})


@pytest.mark.parametrize("name", NAMES)
def test_the_table_gives_what_libbpf_gives(name: str) -> None:
    lib = _libbpf()
    prog_type, attach_type = ctypes.c_int(-1), ctypes.c_int(-1)
    known = lib.libbpf_prog_type_by_name(name.lstrip("?").encode(), ctypes.byref(prog_type),
                                         ctypes.byref(attach_type)) == 0
    found = find_section_def(name)
    if found is not None and found.name in ADDED_SINCE_11:
        assert not known  # libbpf 1.1 has no such entry (nor one that an earlier entry shadows)
        return
    assert (found is not None) == known
    if found is not None:
        assert (int(found.prog_type), found.attach_type) == (prog_type.value, attach_type.value)


def test_the_first_matching_definition_wins() -> None:
    frags = find_section_def("xdp.frags/devmap")
    assert frags is not None and (frags.attach_type, frags.xdp_frags) == (BpfAttachType.XDP_DEVMAP, True)
    assert find_section_def("kprobe/do_unlinkat") == find_section_def("kprobe")
    assert find_section_def("kprobe_evspec") is None  # 'kprobe+' takes 'kprobe' and 'kprobe/...' only
    assert find_section_def("socket/x") is None  # 'socket' is exact


def test_load_params_are_libbpfs() -> None:
    lsm = load_params("lsm.s/bprm_committed_creds")
    assert lsm is not None
    assert (lsm.prog_type, lsm.expected_attach_type, lsm.prog_flags, lsm.btf_name) == (
        ProgType.LSM, BpfAttachType.LSM_MAC, BPF_F_SLEEPABLE, "bpf_lsm_bprm_committed_creds")
    it = load_params("iter/task")
    assert it is not None and it.btf_name == "bpf_iter_task"
    tp = load_params("tp_btf/sched_switch")
    assert tp is not None and tp.btf_name == "btf_trace_sched_switch"
    fentry = load_params("fentry/do_unlinkat")
    assert fentry is not None and (fentry.expected_attach_type, fentry.btf_name) == (BpfAttachType.TRACE_FENTRY,
                                                                                    "do_unlinkat")
    assert load_params("tracepoint/sched") is not None  # the target only matters for attaching
    assert load_params("evspec_unknown") is None


@pytest.mark.parametrize(
    ("section", "words"),
    [
        ("fentry", "no BTF-based attach target is specified"),
        ("lsm", "no LSM hook is named"),
        ("freplace/f", "attach program FD is not set"),
        ("struct_ops/op", "no struct_ops map uses it"),
        ("fentry/" + "x" * 128, "ENAMETOOLONG"),
    ],
)
def test_what_libbpf_cannot_load_from_the_name_is_refused_saying_why(section: str, words: str) -> None:
    with pytest.raises(ObjectError) as info:
        load_params(section)
    assert words in info.value.message


def test_load_flags_come_from_the_section_name() -> None:
    assert section_prog_flags("uprobe.s//bin/true:main") == BPF_F_SLEEPABLE
    assert section_prog_flags("syscall") == BPF_F_SLEEPABLE
    assert section_prog_flags("dev=eth0;xdp.frags") == BPF_F_XDP_HAS_FRAGS
    assert section_prog_flags("?xdp.frags/cpumap") == BPF_F_XDP_HAS_FRAGS
    assert section_prog_flags("uprobe//bin/true:main") == 0


# ------------------------------------------------------------------ verify against libbpf


@pytest.fixture(scope="module")
def rows(built: Path, root_kernel: None) -> list[Row]:
    objects = {name: built / f"{name}.o" for name in FIXTURES}
    return compare(libbpf_verdicts(build_runner(built), objects), evspec_verdicts(objects))


def test_every_program_ends_as_it_ends_under_libbpf(rows: list[Row]) -> None:
    wrong = [r for r in rows if r.problem is not None and r.program != "on_struct_ops"]
    assert not wrong, f"{len(wrong)} of {len(rows)} program(s) differ from libbpf:\n{table(wrong)}"


def test_the_fixtures_cover_every_name_of_the_table(rows: list[Row]) -> None:
    sections = {r.section for r in rows}
    for d in SECTION_DEFS:
        if d.name not in ADDED_SINCE_11:  # libbpf 1.1, the runner's, has none of those
            assert any(s == d.name or s.startswith(d.name + "/") for s in sections), d.name


def test_a_struct_ops_program_no_map_uses_is_refused_as_libbpf_18_refuses_it(rows: list[Row]) -> None:
    """libbpf 1.1 (the runner's) sends it to the kernel (ENOTSUPP); 1.8 refuses it before: 'program
    isn't referenced anywhere' (EINVAL), as tests/test_libbpf_section_table.py sees bpftool 7.8 do."""
    [row] = [r for r in rows if r.program == "on_struct_ops"]
    assert row.libbpf is not None and row.libbpf["errno"] == "ENOTSUPP", table([row])
    assert row.evspec is not None and row.evspec["errno"] == "EINVAL" and row.evspec["verifier"] is None, table([row])
    assert "no struct_ops map uses it" in row.evspec["error"]


def test_a_sleepable_program_is_loaded_sleepable(rows: list[Row]) -> None:
    """on_uprobe_s calls bpf_copy_from_user, which the verifier allows only with BPF_F_SLEEPABLE."""
    [row] = [r for r in rows if r.program == "on_uprobe_s"]
    assert row.libbpf is not None and row.libbpf["loaded"], table([row])
    assert row.evspec is not None and row.evspec["loaded"], table([row])


def test_kernel_refusals_carry_the_kernels_errno(rows: list[Row]) -> None:
    refused = [r for r in rows if r.libbpf is not None and r.libbpf["in_kernel"] and r.program != "on_struct_ops"]
    assert refused  # lirc_mode2 on a kernel without CONFIG_BPF_LIRC_MODE2, fentry on one without trampolines
    assert all(r.evspec is not None and r.evspec["errno"] == r.libbpf["errno"] for r in refused), table(refused)


# ------------------------------------------------------------------ what record does with each family


@pytest.mark.parametrize(
    ("section", "attach"),
    [
        ("fentry/do_unlinkat", AttachKind.TRAMPOLINE),
        ("fmod_ret.s/f", AttachKind.TRAMPOLINE),
        ("lsm.s/file_open", AttachKind.TRAMPOLINE),
        ("lsm_cgroup/socket_bind", AttachKind.CGROUP),
        ("iter/task", AttachKind.ITERATOR),
        ("freplace/f", AttachKind.FREPLACE),
        ("cgroup/connect4", AttachKind.CGROUP),
        ("cgroup_skb/egress", AttachKind.CGROUP),
        ("sockops", AttachKind.CGROUP),
        ("sk_skb/stream_verdict", AttachKind.SOCKMAP),
        ("sk_msg", AttachKind.SOCKMAP),
        ("sk_lookup", AttachKind.NETNS),
        ("sk_reuseport/migrate", AttachKind.SK_REUSEPORT),
        ("xdp.frags", AttachKind.XDP),
        ("xdp/cpumap", AttachKind.XDP_MAP),
        ("usdt//bin/true:p:n", AttachKind.USDT),
        ("ksyscall/getpgid", AttachKind.KSYSCALL),
        ("kprobe.multi/do_*", AttachKind.KPROBE_MULTI),
        ("raw_tp.w/sched_switch", AttachKind.RAW_TRACEPOINT),
        ("uprobe.s//bin/true:main", AttachKind.UPROBE),
        ("syscall", AttachKind.SYSCALL),
        ("action", AttachKind.TC_ACTION),
        ("lwt_xmit", AttachKind.LWT),
    ],
)
def test_each_family_has_its_attach_kind(section: str, attach: AttachKind) -> None:
    s = parse_section(section)
    found = find_section_def(section)
    assert s.attach is attach and found is not None and int(s.program_type) == int(found.prog_type)


def test_a_btf_target_is_read() -> None:
    target = parse_section("lsm.s/file_open").target
    assert isinstance(target, BtfTarget) and (target.kind, target.name) == ("lsm.s", "file_open")


@pytest.mark.parametrize("section", ["kprobe", "kretprobe", "uprobe", "uretprobe.s", "usdt", "tracepoint", "tp",
                                     "raw_tp", "raw_tracepoint.w", "ksyscall", "kprobe.multi"])
def test_a_section_without_target_is_loaded_and_not_attached(section: str) -> None:
    s = parse_section(section)
    assert s.attach is AttachKind.NONE and s.autoload
    assert s.note is not None and f'SEC("{section}")' in s.note and "not attached" in s.note


@pytest.mark.parametrize(
    ("section", "words"),
    [
        ("fentry", "'fentry' names no kernel function (write fentry/NAME)"),
        ("iter", "'iter' names no iterator (write iter/NAME)"),
        ("uretprobe/readline", "a uprobe names the binary and its function"),
        ("cgroup/evspec", "libbpf has no section named 'cgroup/evspec'"),
    ],
)
def test_what_record_cannot_read_is_an_error_naming_it(section: str, words: str) -> None:
    with pytest.raises(EvspecError) as info:
        parse_section(section)
    [d] = info.value.diagnostics
    assert d.code == "EB107" and words in d.message


# ------------------------------------------------------------------ check and record


MIXED = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("tp/syscalls/sys_enter_getppid") int on_getppid(void *ctx) { return 0; }
SEC("kprobe") int by_hand(void *ctx) { return 0; }
SEC("usdt") int usdt_by_hand(void *ctx) { return 0; }
char LICENSE[] SEC("license") = "GPL";
"""
TRAMPOLINE = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("tp/syscalls/sys_enter_getppid") int on_getppid(void *ctx) { return 0; }
SEC("fentry/do_unlinkat") int on_unlinkat(void *ctx) { return 0; }
char LICENSE[] SEC("license") = "GPL";
"""
UNRUNNABLE = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("fentry/do_unlinkat") int on_unlinkat(void *ctx) { return 0; }
SEC("fentry/evspec_no_such_function") int on_nothing(void *ctx) { return 0; }
SEC("cgroup/connect4") int on_connect(void *ctx) { return 1; }
SEC("iter/task") int on_task(void *ctx) { return 0; }
SEC("kprobe") int by_hand(void *ctx) { return 0; }
char LICENSE[] SEC("license") = "GPL";
"""


def _object(folder: Path, name: str, source: str) -> str:
    (folder / f"{name}.c").write_text(source)
    subprocess.run(["clang", *BPF_FLAGS, "-c", f"{name}.c", "-o", f"{name}.o"], cwd=folder, check=True)
    return f"./{name}.o"


def test_check_accepts_what_record_runs_and_names_what_it_cannot(
    built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(built)
    obj = _object(built, "unrunnable", UNRUNNABLE)
    evspec_main(["check", "--system", "live", "--format", "json", "-e", obj])
    found = {(d["code"], d["message"]) for d in json.loads(capsys.readouterr().out)["diagnostics"]}
    assert found == {
        ("EB108", "section 'fentry/evspec_no_such_function': the kernel has no function 'evspec_no_such_function' "
                  "in its BTF; libbpf fails the same way (ESRCH)"),
        ("EB108", "section 'cgroup/connect4': evspec record cannot attach cgroup programs yet"),
        ("EB108", "section 'iter/task': evspec record cannot attach iterator programs yet"),
    }


def test_record_loads_a_section_without_target_and_attaches_nothing(
    built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(built)
    obj = _object(built, "mixed", MIXED)
    status, out, err = _record("-v", "-e", obj, "--", "sh", "-c", "true")
    assert status == 0, err
    assert "error" not in err
    assert ("program 'by_hand' (section 'kprobe'): libbpf attaches a SEC(\"kprobe\") program only by hand (the "
            "section names no target): it is loaded and not attached") in err
    assert "program 'usdt_by_hand' (section 'usdt')" in err


def test_record_refuses_a_trampoline_program_the_kernel_cannot_attach(
    built: Path, rows: list[Row], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether this kernel has trampolines is what libbpf's load of fentry/do_unlinkat says here;
    record must agree: refuse naming the feature and the kernel's answer, or run."""
    monkeypatch.chdir(built)
    [lib] = [r.libbpf for r in rows if r.program == "on_fentry"]
    assert lib is not None
    obj = _object(built, "trampoline", TRAMPOLINE)
    status, _, err = _record("-e", obj, "--", "sh", "-c", "true")
    if lib["loaded"]:
        assert status == 0, err
        return
    assert status != 0
    assert ("trampoline.o: program 'on_unlinkat' (section 'fentry/do_unlinkat'): BPF trampolines "
            "(fentry/fexit/fmod_ret/lsm) are not available on this kernel: loading a minimal fentry program for "
            f"'do_unlinkat' failed with {lib['errno']}") in err, err
