"""Module kfuncs and typed ksyms loaded end to end on the fake kernel (issue #11, wired): the
module BTFs opened through BPF_BTF_GET_NEXT_ID/GET_FD_BY_ID/GET_INFO_BY_FD only because vmlinux
lacks names, each kfunc call's imm and off, the fd_array passed with BPF_PROG_LOAD, the module
ksym's ld_imm64 holding the module BTF's fd, every module fd closed with the object."""

from __future__ import annotations

from pathlib import Path

import pytest
from evspec.loader.abi import bpf as abi
from evspec.loader.btf import target as target_btf
from evspec.loader.kernel import Kernel
from evspec.loader.kernel.fake import FakeKernel
from evspec.loader.load.live import load_object
from evspec.loader.object.reader import read_object_bytes
from evspec.loader.object.spec import ProgType
from test_module_btf import CT_COUNT, CT_SET_MARK, NAT_FLAGS, blobs, built  # noqa: F401  (fixtures)


def test_module_kfuncs_and_ksyms_load_with_their_btf_fds(
        built: dict[str, bytes], blobs: dict[str, bytes], tmp_path: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "vmlinux").write_bytes(blobs["vmlinux"])
    monkeypatch.setattr(target_btf, "KERNEL_BTF", tmp_path / "vmlinux")
    fake = FakeKernel(btf_objects={1: ("vmlinux", True, blobs["vmlinux"]),
                                   4: ("nf_conntrack", True, blobs["nf_conntrack"]),
                                   9: ("nf_nat", True, blobs["nf_nat"])})
    spec = read_object_bytes(built["externs"], "externs.o")
    live = load_object(spec, {"externs": int(ProgType.TRACEPOINT)}, kernel=Kernel(fake), use_btf=False)
    ct_fd, nat_fd = sorted(fd for fd, btf_id in fake.btf_fds.items() if btf_id in (4, 9))
    assert {fake.btf_fds[ct_fd], fake.btf_fds[nat_fd]} == {4, 9} and fake.btf_fds[ct_fd] == 4
    [load] = fake.calls_of("BPF_PROG_LOAD")
    assert load.args["fd_array_fds"] == (0, ct_fd, nat_fd)  # bpf_ct_set_mark < bpf_nat_flags
    insns = load.args["insns"]
    calls = [abi.BpfInsn.from_buffer_copy(insns, r.insn_index * 8) for r in spec.programs[0].relocations
             if r.kind == "kfunc"]
    assert [(c.src_reg, c.imm, c.off) for c in calls] == [
        (2, 10, 0),  # bpf_vm_kfunc, vmlinux's
        (2, NAT_FLAGS, 2),  # bpf_nat_flags, nf_nat's
        (2, CT_SET_MARK, 1), (2, CT_SET_MARK, 1),  # bpf_ct_set_mark, nf_conntrack's
        (0, 2002000000 + 2, 0)]  # bpf_nowhere, weak and nobody's: poisoned (libbpf's extern order: #2)
    ksym = next(r.insn_index for r in spec.programs[0].relocations if r.target == "nf_conntrack_count")
    first, second = (abi.BpfInsn.from_buffer_copy(insns, (ksym + i) * 8) for i in (0, 1))
    assert (first.src_reg, first.imm, second.imm) == (abi.BPF_PSEUDO_BTF_ID, CT_COUNT, ct_fd)
    live.close()
    assert fake.btf_fds == {}
