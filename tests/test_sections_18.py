"""libbpf 1.8's section names in evspec's table (loader/sections/libbpf-1.8.tsv), name by name.

Offline: for every name of tests/data/libbpf_sections/libbpf-1.8.tsv (each entry alone, with a
target, and names no entry matches), what ``load_params`` gives (program type, expected attach
type, flags, whether an attach BTF id is looked up) or why it loads nothing, against what the
reference table says libbpf 1.8 sends to the kernel (tests/libbpf_section_table.py).

Live (root, clang-21, bpftool-sid, bpftrace): tests/data/libbpf_sections/sections18.c has one
program per name libbpf added since 1.1 (and ``usdt``, loaded as uprobe_multi where the kernel has
such links); bpftool 7.8 (libbpf 1.8) loads each program on its own, ``evspec verify`` the object
with all of them, while bpftrace reads every BPF_PROG_LOAD: per program the same verdict, the same
errno, and the same fields in BPF_PROG_LOAD (type, expected attach type, flags, attach BTF id).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import oracle
from evspec.loader.errors import ObjectError
from evspec.loader.object.spec import ProgType
from evspec.loader.sections.libbpf import SECTION_DEFS, BpfAttachType, find_section_def, load_params
from evspec.loader.sections.names import AttachKind, parse_section
from libbpf_parity import evspec_verdicts
from libbpf_section_table import (
    ADDED_SINCE_11,
    DATA,
    NO_MATCH,
    capture_loads,
    expected,
    load_with_bpftool,
    match,
    read_table,
    section_names,
)

from evspec.diagnostics import EvspecError

TABLE = read_table()
NAMES = section_names(TABLE)
SOURCE = DATA / "sections18.c"
# why libbpf 1.8 loads nothing (libbpf_section_table.REFUSALS) -> words of evspec's reason
REFUSED = {"unknown": None, "no_target": "libbpf refuses it too: 'no BTF-based attach target is specified'",
           "no_target_program": "'attach program FD is not set'", "unused_struct_ops": "isn't referenced anywhere"}


def _evspec(name: str, uprobe_multi: bool) -> dict[str, object]:
    """What evspec loads a program of section ``name`` with, in the reference table's terms."""
    try:
        params = load_params(name)
    except ObjectError as exc:
        refused = next(k for k, words in REFUSED.items() if words and words in exc.message)
        assert exc.errno == 22, exc.message  # EINVAL, as libbpf
        return {"refused": refused}
    if params is None:
        return {"refused": "unknown"}
    attach = params.attach_type_on(uprobe_multi)
    return {"program_type": ProgType(params.prog_type).name.lower(),
            "attach_type": attach.name.lower() if isinstance(attach, BpfAttachType) else "",
            "flags": params.prog_flags, "attach_btf": params.lookup is not None}


@pytest.mark.parametrize("uprobe_multi", [True, False], ids=["uprobe_multi", "no_uprobe_multi"])
@pytest.mark.parametrize("name", NAMES)
def test_evspec_loads_each_name_as_libbpf_18(name: str, uprobe_multi: bool) -> None:
    assert _evspec(name, uprobe_multi) == expected(TABLE, name, uprobe_multi)


def test_the_table_is_libbpf_18s_entry_by_entry() -> None:
    assert len(SECTION_DEFS) == len(TABLE) == 116
    for ours, ref in zip(SECTION_DEFS, TABLE, strict=True):
        assert (ours.name, ours.plus, ours.prog_type.name.lower()) == (ref.prefix, ref.section.endswith("+"),
                                                                       ref.program_type)
        attach = ours.attach_type
        assert (attach.name.lower() if isinstance(attach, BpfAttachType) else "") == ref.attach_type
        flags = {f for f in ("attachable", "exp_attach_opt", "attach_btf", "sleepable", "xdp_frags", "usdt")
                 if getattr(ours, f)}
        assert (flags, ours.auto_attach) == (set(ref.flags), ref.auto_attach), ref.section


def test_each_name_finds_the_entry_libbpf_finds() -> None:
    for name in NAMES:
        ours, ref = find_section_def(name), match(TABLE, name)
        assert (ours.name if ours else None) == (ref.prefix if ref else None), name
    assert all(find_section_def(n) is None for n in NO_MATCH)


def test_tc_ingress_is_tcx_and_usdt_follows_the_kernel() -> None:
    tc = load_params("tc/ingress")
    assert tc is not None and (tc.prog_type, tc.expected_attach_type) == (ProgType.SCHED_CLS, BpfAttachType.TCX_INGRESS)
    usdt = load_params("usdt//bin/true:p:n")
    assert usdt is not None and usdt.usdt
    assert (usdt.attach_type_on(True), usdt.attach_type_on(False)) == (BpfAttachType.TRACE_UPROBE_MULTI, 0)
    netfilter = load_params("netfilter")
    assert netfilter is not None and netfilter.prog_type == ProgType.NETFILTER


def _fixture_sections() -> list[str]:
    return re.findall(r'^SEC\("([^"]+)"\) int NAME\(\d+\)', SOURCE.read_text(), re.M)


def test_the_fixture_has_a_program_per_name_added_since_11() -> None:
    sections = _fixture_sections()
    entries = [match(TABLE, s) for s in sections]
    assert all(e is not None for e in entries)
    assert {e.prefix for e in entries if e is not None} == ADDED_SINCE_11 | {"usdt"}
    assert "usdt" in sections  # the target-less form too


# --- live -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(root_kernel: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    clang, bpftool, bpftrace = (oracle(t) for t in ("clang-21", "bpftool-sid", "bpftrace"))
    work = tmp_path_factory.mktemp("sections18")  # below /tmp, which the sid chroot shares
    shutil.copyfile(SOURCE, work / SOURCE.name)
    sections = _fixture_sections()

    def build(out: Path, *defines: str) -> Path:
        subprocess.run([clang, "-target", "bpf", "-O2", "-g", *defines, "-c", str(work / SOURCE.name), "-o", str(out)],
                       check=True, capture_output=True)
        return out

    every = build(work / "e18.o", "-DALL", "-DPFX=e18_")
    ones = {f"{n:02d}": build(work / f"b18_{n:02d}.o", f"-DONLY={n}", "-DPFX=b18_") for n in range(len(sections))}
    with capture_loads(bpftrace, work) as capture:
        said = load_with_bpftool(bpftool, ones, work)
        verdicts = evspec_verdicts({"e18": every})
    return {"sections": sections, "said": said, "verdicts": verdicts, "b": capture.by_name("b18_"),
            "e": capture.by_name("e18_")}


def _libbpf_errno(said: list[str]) -> str | None:
    """The errno of libbpf's 'failed to load' line (None: it loaded)."""
    found = [m.group(1) for line in said if (m := re.search(r"failed to load: -(E[A-Z0-9]+)", line))]
    return found[0] if found else None


def _sent(load: Any) -> tuple[int, int, int, int] | None:
    return None if load is None else (load.program_type, load.attach_type, load.flags, load.attach_btf_id)


@pytest.mark.parametrize("number", range(len(_fixture_sections())), ids=_fixture_sections())
def test_evspec_verify_loads_it_as_bpftool_78(runs: dict[str, Any], number: int) -> None:
    key = f"{number:02d}"
    said = runs["said"][key]
    ours = runs["verdicts"][("e18", f"e18_{key}")]
    assert ours["loaded"] == (not said), (said, ours)
    assert ours["errno"] == _libbpf_errno(said), (said, ours)
    assert _sent(runs["e"].get(f"e18_{key}")) == _sent(runs["b"].get(f"b18_{key}")), (said, ours)


def test_some_load_and_some_are_refused_here(runs: dict[str, Any]) -> None:
    """The comparison covers both verdicts and programs that reach the kernel."""
    verdicts = runs["verdicts"].values()
    assert any(v["loaded"] for v in verdicts) and any(not v["loaded"] for v in verdicts)
    assert len(runs["b"]) >= len(runs["sections"]) - 1  # all but the unused struct_ops program reach the kernel


# --- check and record read every name of the table ---------------------------------------------


@pytest.mark.parametrize("name", [n for n in NAMES if match(TABLE, n) is not None])
def test_check_reads_each_name_with_libbpf_18s_program_type(name: str) -> None:
    entry = match(TABLE, name)
    assert entry is not None
    if "attach_btf" in entry.flags and "/" not in name:  # libbpf cannot load it: refused by name
        with pytest.raises(EvspecError, match="no .* is named|target"):
            parse_section(name)
        return
    parsed = parse_section(name)
    assert ProgType(parsed.program_type).name.lower() == entry.program_type


@pytest.mark.parametrize(("name", "attach"), [
    ("tcx/ingress", AttachKind.TCX), ("netkit/peer", AttachKind.NETKIT), ("netfilter", AttachKind.NETFILTER),
    ("uprobe.multi//bin/true:main", AttachKind.UPROBE_MULTI), ("uprobe.session.s//bin/true:f", AttachKind.UPROBE_MULTI),
    ("fentry.multi/vfs_*", AttachKind.TRACING_MULTI), ("fsession/vfs_read", AttachKind.TRAMPOLINE),
    ("kprobe.session/do_*", AttachKind.KPROBE_MULTI), ("tp.s/syscalls/sys_enter_read", AttachKind.TRACEPOINT),
    ("tp_btf.s/sched_switch", AttachKind.BTF_TRACEPOINT), ("usdt.s//bin/true:p:n", AttachKind.USDT),
    ("cgroup/connect_unix", AttachKind.CGROUP), ("sk_skb/verdict", AttachKind.SOCKMAP),
])
def test_the_names_added_since_11_have_their_attach_kind(name: str, attach: AttachKind) -> None:
    assert parse_section(name).attach is attach
