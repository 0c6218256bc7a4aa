"""Externs loaded for real (root), each fixture of tests/data/externs/ also loaded by libbpf
(tests/data/externs/runner.c, linked against the installed libbpf) and both compared: what a
raw_tp program run with BPF_PROG_TEST_RUN sees of its __kconfig and __ksym externs, kfunc calls
that load, and the same refusals. tests/data/externs/insns.c, linked the same way, prints the
instructions libbpf loads and, in libbpf's debug log, its sorted extern list."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from evspec.loader import asm
from evspec.loader.abi import bpf as abi
from evspec.loader.btf.reader import Btf
from evspec.loader.btf.target import TargetBtf
from evspec.loader.errors import ObjectError
from evspec.loader.externs import kconfig as kc
from evspec.loader.externs.resolve import (
    POISON_KFUNC_BASE,
    apply_externs,
    libbpf_order,
    resolve_externs,
    running_system,
)
from evspec.loader.kernel import Kernel, VerifierError
from evspec.loader.load.live import LiveObject, load_object
from evspec.loader.load.syscall_wrapper import has_syscall_wrapper
from evspec.loader.object.reader import read_object

from evspec.codes import bpf as codes

DATA = Path(__file__).parent / "data" / "externs"
INCLUDE = "/usr/include/x86_64-linux-gnu"
RAW_TRACEPOINT = 17


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, root_kernel: None) -> Path:
    for tool in ("clang", "cc"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is needed to compare evspec with libbpf")
    root = tmp_path_factory.mktemp("externs-live")
    for stem, name, define in (("values", "values", None), ("kfuncs", "kfuncs", None), ("typed", "typed", None),
                               ("bad", "bad", "MISSING_KFUNC"), ("longstr", "longstr", None),
                               ("order", "order", None), ("reached", "order", "REACHABLE=1")):
        out = root / f"{stem}.o"
        subprocess.run(["clang", "-target", "bpf", "-O2", "-g", f"-I{INCLUDE}", "-c", str(DATA / f"{name}.c"),
                        "-o", str(out), *([f"-D{define}"] if define else [])], check=True, capture_output=True)
    for runner in ("runner", "insns"):
        proc = subprocess.run(["cc", "-O1", "-o", str(root / runner), str(DATA / f"{runner}.c"), "-lbpf"],
                              capture_output=True, text=True)
        if proc.returncode:
            pytest.fail(f"building the libbpf runner {runner}.c failed (libbpf-dev installed?):\n{proc.stderr}")
    return root


@pytest.fixture(scope="module")
def kernel(root_kernel: None) -> Kernel:
    return Kernel()


def libbpf(built: Path, name: str, prog: str, out_map: str | None = None) -> dict[str, Any]:
    args = [str(built / "runner"), str(built / f"{name}.o"), prog, *([out_map] if out_map else [])]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    result["log"] = proc.stderr
    return result


def load(kernel: Kernel, built: Path, name: str, prog: str) -> LiveObject:
    return load_object(read_object(built / f"{name}.o"), {prog: RAW_TRACEPOINT}, kernel=kernel)


def test_kconfig_and_ksym_values_are_what_libbpf_gives(kernel: Kernel, built: Path) -> None:
    ref = libbpf(built, "values", "copy_values", "out")
    assert ref["loaded"] and ref["retval"] == 1
    with load(kernel, built, "values", "copy_values") as live:
        assert kernel.run_program(live.program("copy_values").fd, ctx=bytes(8)) == 1
        out = live.map("out")
        value = kernel.lookup(out.fd, bytes(4), out.spec.value_size)
        kconfig = live.map("values.kconfig")
        assert kconfig.spec.readonly and kconfig.spec.mmapable
    assert value is not None
    version, cookie, bpf_syscall, jit, hz, missing, rodata, no_symbol = (
        int.from_bytes(value[i:i + 8], "little") for i in range(0, 64, 8))
    system, signature = os.uname(), kc.read_version_signature()
    assert version == kc.kernel_version_code(system.release, system.version, signature)
    theirs = bytes.fromhex(ref["value"])
    if signature is None and kc.debian_version_code(system.version):
        # a Debian kernel: libbpf 1.1 has no Debian rule (1.2 on has), and takes uname -r's a.b.c
        assert int.from_bytes(theirs[:8], "little") == kc.release_version_code(system.release)
        theirs = value[:8] + theirs[8:]
    assert value.hex() == theirs.hex()
    config, _ = kc.read_kconfig(system.release)
    assert (cookie, bpf_syscall, missing, no_symbol) == (1, 1, 0, 0)
    assert jit == {"y": kc.TRI_YES, "m": kc.TRI_MODULE}[config["CONFIG_BPF_JIT"]]
    assert hz == int(config["CONFIG_HZ"])
    with open("/proc/kallsyms") as f:
        assert rodata == next(int(line.split()[0], 16) for line in f if line.split()[2] == "__start_rodata")
    assert value[64:80].rstrip(b"\0").decode() == config["CONFIG_LOCALVERSION"].strip('"')[:15]


def test_kfunc_calls_load_and_run_and_a_weak_missing_one_is_dropped(kernel: Kernel, built: Path) -> None:
    ref = libbpf(built, "kfuncs", "call_kfuncs")
    assert ref["loaded"] and ref["retval"] == 1
    vmlinux = TargetBtf.running_kernel()
    lock = next(i for i in vmlinux.named("bpf_rcu_read_lock") if vmlinux.btf.type(i).name == "bpf_rcu_read_lock")
    with load(kernel, built, "kfuncs", "call_kfuncs") as live:
        assert kernel.run_program(live.program("call_kfuncs").fd, ctx=bytes(8)) == 1
        insns = live.program("call_kfuncs").insns
    calls = [abi.BpfInsn.from_buffer_copy(insns, i) for i in range(0, len(insns), abi.INSN_SIZE)]
    assert any(c.code == asm.OP_CALL and c.src_reg == abi.BPF_PSEUDO_KFUNC_CALL and c.imm == lock for c in calls)


def test_a_typed_ksym_is_a_btf_id_load_the_verifier_answers_as_for_libbpf(kernel: Kernel, built: Path) -> None:
    """bpf_prog_active is a VAR of this kernel's BTF; the verifier also wants its address from
    kallsyms, which lists no data symbols without CONFIG_KALLSYMS_ALL: libbpf's load and evspec's
    fail the same way (ENOENT), and evspec's instruction is the one libbpf writes."""
    ref = libbpf(built, "typed", "read_typed")
    spec = read_object(built / "typed.o")
    wrapper = lambda machine: has_syscall_wrapper(machine, Kernel)  # noqa: E731
    applied = apply_externs(spec, resolve_externs(spec, running_system(spec, lambda: True, syscall_wrapper=wrapper)))
    at = next(r.insn_index for r in spec.programs[0].relocations if r.symbol == "bpf_prog_active")
    insn = abi.BpfInsn.from_buffer_copy(applied.programs[0].insns, at * abi.INSN_SIZE)
    vmlinux = TargetBtf.running_kernel()
    var = next(i for i in vmlinux.named("bpf_prog_active") if vmlinux.btf.type(i).kind.name == "VAR")
    assert (insn.src_reg, insn.imm) == (abi.BPF_PSEUDO_BTF_ID, var)
    try:
        load_object(spec, {"read_typed": RAW_TRACEPOINT}, kernel=kernel).close()
    except VerifierError as exc:
        assert not ref["loaded"] and ref["errno"] == exc.errno
        assert "failed to find the address for kernel symbol 'bpf_prog_active'" in str(exc)
    else:
        assert ref["loaded"], "evspec loaded what libbpf refused"


def test_a_strong_missing_kfunc_is_refused_as_libbpf_refuses_it(kernel: Kernel, built: Path) -> None:
    ref = libbpf(built, "bad", "bad")
    assert not ref["loaded"] and "evspec_no_such_kfunc" in ref["log"]
    with pytest.raises(ObjectError) as err:
        load(kernel, built, "bad", "bad")
    assert err.value.code == codes.EXTERN_UNRESOLVED and "'evspec_no_such_kfunc'" in err.value.message


def test_a_kconfig_string_too_long_for_its_array_is_cut_as_libbpf_cuts_it_and_said(kernel: Kernel, built: Path
                                                                                   ) -> None:
    ref = libbpf(built, "longstr", "copy_text", "out")
    assert ref["loaded"] and ref["retval"] == 1
    assert "truncated" in ref["log"]  # libbpf warns of it too
    with load(kernel, built, "longstr", "copy_text") as live:
        assert kernel.run_program(live.program("copy_text").fd, ctx=bytes(8)) == 1
        out = live.map("out")
        value = kernel.lookup(out.fd, bytes(4), 4)
        warnings = list(live.warnings)
    assert value is not None and value.hex() == ref["value"] and value[3] == 0
    config, source = kc.read_kconfig(os.uname().release)
    assert value[:3] == config["CONFIG_CC_VERSION_TEXT"][1:4].encode()
    assert warnings == [f"{built / 'longstr.o'}: extern 'CONFIG_CC_VERSION_TEXT' (char[4]): {source} sets it to "
                        f"{config['CONFIG_CC_VERSION_TEXT']}, cut to 3 bytes and its NUL"]


# ------------------------------------------------------------- weak kfuncs: libbpf's extern order


def libbpf_insns(built: Path, name: str) -> tuple[dict[str, Any], list[str]]:
    """insns.c's line for the one program of NAME.o, and libbpf's extern list from its debug log."""
    proc = subprocess.run([str(built / "insns"), str(built / f"{name}.o")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    [line] = proc.stdout.splitlines()
    listed = {int(n): ext for n, ext in
              re.findall(r"extern \((?:kcfg|ksym)\) #(\d+): symbol \d+, (?:off \d+, )?name (\S+)", proc.stderr)}
    assert sorted(listed) == list(range(len(listed))), proc.stderr
    result: dict[str, Any] = json.loads(line)
    result["log"] = proc.stderr
    return result, [listed[i] for i in range(len(listed))]


def _map_fds_masked(insns: bytes) -> list[abi.BpfInsn]:
    """The instructions with the map fds of ld_imm64s zeroed (each loader has its own fds)."""
    out = [abi.BpfInsn.from_buffer_copy(insns, at) for at in range(0, len(insns), abi.INSN_SIZE)]
    for insn in out:
        if insn.code == asm.OP_LD_IMM64 and insn.src_reg in (abi.BPF_PSEUDO_MAP_FD, abi.BPF_PSEUDO_MAP_VALUE):
            insn.imm = 0
    return out


def _fields(insn: abi.BpfInsn) -> tuple[int, int, int, int, int]:
    return (insn.code, insn.dst_reg, insn.src_reg, insn.off, insn.imm)


def test_weak_missing_kfuncs_are_poisoned_with_their_index_in_libbpfs_extern_list(kernel: Kernel, built: Path
                                                                                  ) -> None:
    """order.c's two weak kfuncs that this kernel lacks: evspec writes libbpf 1.2's poison, a
    helper call of 2002000000 + the extern's index in libbpf's sorted extern list, which libbpf
    1.1 (installed here) lists in its debug log; libbpf 1.1 itself leaves a kfunc call of id 0.
    Every other instruction is the one libbpf loads, and the kernel drops the same dead code."""
    ref, order = libbpf_insns(built, "order")
    assert ref["loaded"], ref["log"]
    spec = read_object(built / "order.o")
    assert [e.name for e in libbpf_order(Btf(spec.btf or b""), spec.externs)] == order
    with load(kernel, built, "order", "call_in_order") as live:
        program = live.program("call_in_order")
        ours, xlated = program.insns, kernel.program_info(program.fd).xlated_len // abi.INSN_SIZE
    assert xlated == ref["xlated"]
    theirs = _map_fds_masked(bytes.fromhex(ref["insns"]))
    mine = _map_fds_masked(ours)
    assert len(mine) == len(theirs)
    poisoned = {r.insn_index: r.target for r in spec.programs[0].relocations
                if r.kind == "kfunc" and r.target in ("aa_evspec_missing", "zz_evspec_missing")}
    assert len(poisoned) == 2
    for at, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        if at in poisoned:
            assert _fields(b) == (asm.OP_CALL, 0, abi.BPF_PSEUDO_KFUNC_CALL, 0, 0)  # libbpf 1.1's call #0
            assert _fields(a) == (asm.OP_CALL, 0, 0, 0, POISON_KFUNC_BASE + order.index(poisoned[at]))
        else:
            assert _fields(a) == _fields(b), f"instruction {at}"


def test_a_reached_poisoned_kfunc_call_is_refused_with_libbpfs_index(kernel: Kernel, built: Path) -> None:
    """With REACHABLE=1 the verifier reaches zz_evspec_missing's call first: it refuses the
    unknown helper 2002000010, 10 being the kfunc's index in libbpf's list. libbpf 1.1's call #0
    is refused too, with the same errno ("invalid kernel function call not eliminated")."""
    ref, order = libbpf_insns(built, "reached")
    assert not ref["loaded"] and "not eliminated in verifier pass" in ref["log"]
    with pytest.raises(VerifierError) as err:
        load(kernel, built, "reached", "call_in_order")
    index = order.index("zz_evspec_missing")
    assert index == 10 and err.value.errno == ref["errno"]
    assert f"invalid func unknown#{POISON_KFUNC_BASE + index}" in str(err.value)
    assert err.value.summary.message.endswith(
        "(the poisoned call of the weak kfunc 'zz_evspec_missing', which this kernel does not have: guard it "
        "with bpf_ksym_exists(zz_evspec_missing))")
