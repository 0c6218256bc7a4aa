"""libbpf 1.1's section table as data (loader/sections/libbpf.py) at the edges the corpus
leaves: the attach type numbers against the kernel's UAPI header (/usr/include/linux/bpf.h,
from linux-libc-dev), the attach name (everything after the first '/', slashes included), and
a program with no BTF target. The mutants these tests were written to kill are listed in
tools/mutation/pins.toml."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from evspec.loader.btf.reader import BtfKind
from evspec.loader.sections.libbpf import BpfAttachType, BtfLookup, LoadParams, attach_target


def test_attach_types_are_the_kernels() -> None:
    header = Path("/usr/include/linux/bpf.h")
    if not header.is_file():
        pytest.fail(f"{header} is missing (apt-get install linux-libc-dev)")
    body = re.search(r"enum bpf_attach_type \{(.*?)\};", header.read_text(), re.S)
    assert body is not None
    names = re.findall(r"^\s*BPF_(\w+),", body.group(1), re.M)
    kernel = {name: i for i, name in enumerate(names)}
    ours = {t.name: t.value for t in BpfAttachType}
    shared = set(ours) & set(kernel)
    assert len(shared) >= 40
    assert {n: ours[n] for n in shared} == {n: kernel[n] for n in shared}


def test_the_attach_name_is_everything_after_the_first_slash() -> None:
    """libbpf: the name after the section's prefix; a path keeps its own slashes."""
    assert attach_target("uprobe//usr/lib/libc.so.6:malloc") == "/usr/lib/libc.so.6:malloc"
    assert attach_target("iter/bpf_map_elem") == "bpf_map_elem"
    assert attach_target("xdp") is None


def test_a_program_without_a_btf_target_has_no_btf_name() -> None:
    lookup = BtfLookup("btf_trace_", BtfKind.TYPEDEF, "a BTF tracepoint")
    assert LoadParams(26, target="sched_switch", lookup=lookup).btf_name == "btf_trace_sched_switch"
    assert LoadParams(26, target=None, lookup=lookup).btf_name is None
    assert LoadParams(26, target="sched_switch", lookup=None).btf_name is None
