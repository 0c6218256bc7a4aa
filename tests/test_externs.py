"""Externs on the spec side, without root: what the reader records for __kconfig, __ksym and
kfunc externs (fixtures in tests/data/externs/, built with clang), how they are resolved against
sources given here (a Kconfig text, a fake kallsyms, a small target BTF), how they are applied
to the instructions and the BTF, and each refusal with its message."""

from __future__ import annotations

import gzip
import os
import shutil
import struct
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest
from evspec.loader import asm
from evspec.loader.abi import bpf as abi
from evspec.loader.btf.fixup import fixup_btf
from evspec.loader.btf.reader import Btf, BtfError, BtfKind, RawType, type_info, write_btf
from evspec.loader.btf.target import TargetBtf
from evspec.loader.errors import ObjectError
from evspec.loader.externs import kconfig as kc
from evspec.loader.externs.module_ksyms import ModuleBtf
from evspec.loader.externs.resolve import (
    POISON_KFUNC_BASE,
    ExternSources,
    ExternValues,
    apply_externs,
    libbpf_order,
    resolve_externs,
    running_system,
    type_text,
)
from evspec.loader.object.inspect import inspect_report, inspect_text
from evspec.loader.object.reader import read_object
from evspec.loader.object.spec import ExternSpec, ObjectSpec

from evspec.codes import bpf as codes

DATA = Path(__file__).parent / "data" / "externs"
INCLUDE = "/usr/include/x86_64-linux-gnu"
CONFIG = """# a config
CONFIG_BPF_SYSCALL=y
CONFIG_BPF_JIT=m
# CONFIG_EVSPEC_NO_SUCH_OPTION is not set
CONFIG_HZ=0x3e8
CONFIG_LOCALVERSION="-a-long-local-version"
"""
RODATA = 0xFFFFFFFF82400000


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    if shutil.which("clang") is None:
        pytest.skip("clang builds the extern fixtures")
    root = tmp_path_factory.mktemp("externs")

    def obj(name: str, define: str | None = None) -> ObjectSpec:
        out = root / f"{name}{'-' + define if define else ''}.o"
        if not out.exists():
            cmd = ["clang", "-target", "bpf", "-O2", "-g", f"-I{INCLUDE}", "-c", str(DATA / f"{name}.c"),
                   "-o", str(out), *([f"-D{define}"] if define else [])]
            subprocess.run(cmd, check=True, capture_output=True)
        return read_object(out)

    return obj


def _int(order: str = "<") -> RawType:
    return RawType(1, type_info(BtfKind.INT), 4, struct.pack(order + "I", (1 << 24) | 32))


def small_vmlinux() -> TargetBtf:
    """int; void (void); FUNC bpf_rcu_read_lock, bpf_rcu_read_unlock; VAR bpf_prog_active int."""
    strings = b"\0int\0bpf_rcu_read_lock\0bpf_rcu_read_unlock\0bpf_prog_active\0"
    types = [
        _int(),
        RawType(0, type_info(BtfKind.FUNC_PROTO), 0),
        RawType(5, type_info(BtfKind.FUNC, 0), 2),
        RawType(23, type_info(BtfKind.FUNC, 0), 2),
        RawType(43, type_info(BtfKind.VAR), 1, struct.pack("<I", 1)),
    ]
    return TargetBtf(write_btf(types, strings), "vmlinux")


def sources(config: str | None = CONFIG, kallsyms: Iterable[tuple[int, str, str]] = (),
            release: str = "5.10.300-test", modules: Sequence[ModuleBtf] = (), version: str = "",
            version_signature: str | None = None) -> ExternSources:
    def read_config() -> tuple[dict[str, str], str]:
        if config is None:
            raise kc.KconfigUnreadable([("/boot/config-x", "No such file or directory"),
                                        ("/proc/config.gz", "No such file or directory")])
        return kc.parse_kconfig(config, "test config"), "test config"

    return ExternSources(release=release, bpf_cookie=True, syscall_wrapper=False, kconfig=read_config,
                         kallsyms=lambda: list(kallsyms), vmlinux=small_vmlinux,
                         modules=lambda: modules, version=version, version_signature=version_signature)


def _insn(spec: ObjectSpec, index: int) -> abi.BpfInsn:
    return abi.BpfInsn.from_buffer_copy(spec.programs[0].insns, index * abi.INSN_SIZE)


def _rel(spec: ObjectSpec, symbol: str, kind: str) -> int:
    return next(r.insn_index for r in spec.programs[0].relocations if r.symbol == symbol and r.kind == kind)


# --------------------------------------------------------------------- what the reader records


def test_externs_are_recorded_with_kind_type_weakness_and_libbpf_kconfig_layout(build) -> None:  # type: ignore[no-untyped-def]
    spec = build("values")
    got = {e.name: (e.kind, e.type_name, e.weak, e.offset) for e in spec.externs}
    # kconfig values sorted by alignment (4 first), then size, then name; each aligned
    assert got == {
        "CONFIG_BPF_JIT": ("kconfig", "enum libbpf_tristate", False, 0),
        "CONFIG_EVSPEC_NO_SUCH_OPTION": ("kconfig", "int", True, 4),
        "CONFIG_HZ": ("kconfig", "int", False, 8),
        "LINUX_KERNEL_VERSION": ("kconfig", "unsigned int", False, 12),
        "CONFIG_BPF_SYSCALL": ("kconfig", "_Bool", False, 16),
        "LINUX_HAS_BPF_COOKIE": ("kconfig", "_Bool", False, 17),
        "CONFIG_LOCALVERSION": ("kconfig", "char[16]", False, 18),
        "__start_rodata": ("ksym", "void", False, 0),
        "evspec_no_such_symbol": ("ksym", "void", True, 0),
    }
    kconfig = spec.map("values.kconfig")
    assert kconfig is not None and kconfig.value_size == 34 and kconfig.readonly and kconfig.mmapable
    assert kconfig.max_entries == 1 and kconfig.section == ".kconfig"
    rels = {(r.symbol, r.kind, r.target, r.addend) for r in spec.programs[0].relocations}
    assert ("CONFIG_HZ", "data", "values.kconfig", 8) in rels
    assert ("__start_rodata", "ksym", "__start_rodata", 0) in rels


def test_kfuncs_are_recorded_with_their_prototype(build) -> None:  # type: ignore[no-untyped-def]
    spec = build("kfuncs")
    assert [(e.name, e.kind, e.type_name, e.weak) for e in spec.externs] == [
        ("bpf_rcu_read_lock", "kfunc", "void (void)", False),
        ("bpf_rcu_read_unlock", "kfunc", "void (void)", False),
        ("evspec_no_such_kfunc", "kfunc", "void (void)", True),
    ]
    kinds = [(r.symbol, r.kind) for r in spec.programs[0].relocations]
    assert ("evspec_no_such_kfunc", "ksym") in kinds  # `if (kfunc)`: an ld_imm64 of it
    assert ("evspec_no_such_kfunc", "kfunc") in kinds
    assert spec.map("kfuncs.kconfig") is None  # no kconfig extern, no .kconfig map


def test_inspect_shows_externs(build) -> None:  # type: ignore[no-untyped-def]
    report = inspect_report(build("kfuncs"))
    assert report["externs"][2] == {"name": "evspec_no_such_kfunc", "kind": "kfunc", "type": "void (void)",
                                    "weak": True}
    text = inspect_text(inspect_report(build("values")))
    assert "externs: 9" in text
    assert "  CONFIG_HZ: kconfig  type int  .kconfig+8" in text
    assert "  evspec_no_such_symbol: ksym  type void  weak" in text


def test_an_unknown_kconfig_type_is_refused_when_read(build) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ObjectError) as err:
        build("bad", "BAD_TYPE")
    assert err.value.code == codes.EXTERN_INVALID
    assert "'CONFIG_BPF_SYSCALL' (__kconfig) has type void *" in err.value.message


# ------------------------------------------------------------------------------------- resolve


def test_kconfig_values_are_encoded_as_their_types_say(build) -> None:  # type: ignore[no-untyped-def]
    spec = build("values")
    values = resolve_externs(spec, sources(kallsyms=[(RODATA, "D", "__start_rodata")]))
    data = values.kconfig
    assert struct.unpack_from("<IiiI", data, 0) == (kc.TRI_MODULE, 0, 1000, (5 << 16) + (10 << 8) + 255)
    assert data[16:18] == b"\x01\x01"  # CONFIG_BPF_SYSCALL=y, LINUX_HAS_BPF_COOKIE (true here)
    assert data[18:34] == b"-a-long-local-v\0"  # cut to 15 characters and its NUL, as libbpf cuts it
    assert len(values.warnings) == 1  # ... and said, as libbpf warns
    assert "'CONFIG_LOCALVERSION' (char[16])" in values.warnings[0]
    assert '"-a-long-local-version", cut to 15 bytes and its NUL' in values.warnings[0]
    assert values.ksyms["__start_rodata"] == (0, RODATA & 0xFFFFFFFF, RODATA >> 32)
    assert values.ksyms["evspec_no_such_symbol"] == (0, 0, 0)  # weak, missing: 0


def test_applied_externs_patch_the_code_the_kconfig_map_and_the_btf(build) -> None:  # type: ignore[no-untyped-def]
    spec = build("values")
    applied = apply_externs(spec, resolve_externs(spec, sources(kallsyms=[(RODATA, "D", "__start_rodata")])))
    at = _rel(spec, "__start_rodata", "ksym")
    first, second = _insn(applied, at), _insn(applied, at + 1)
    assert first.src_reg == 0 and first.imm & 0xFFFFFFFF == RODATA & 0xFFFFFFFF
    assert second.imm & 0xFFFFFFFF == RODATA >> 32
    assert all(r.kind not in ("ksym", "kfunc") for r in applied.programs[0].relocations)
    kconfig = applied.map("values.kconfig")
    assert kconfig is not None and kconfig.initial_value is not None and kconfig.initial_value[8:12] == struct.pack("<i", 1000)
    fixed = Btf(fixup_btf(applied.btf or b"", applied.layouts).data)  # the DATASEC completion accepts it
    sec = fixed.find(".kconfig", BtfKind.DATASEC)
    assert sec is not None and sec.size == 34
    assert {fixed.type(i.type).name: i.offset for i in sec.secinfos}["CONFIG_HZ"] == 8
    assert all(fixed.type(i.type).linkage == 1 for i in sec.secinfos)  # allocated, not extern
    ksyms = fixed.find(".ksyms", BtfKind.DATASEC)
    assert ksyms is not None and ksyms.size == 8 and [i.offset for i in ksyms.secinfos] == [0, 4]
    assert apply_externs(applied, ExternValues()) is applied  # applied once


def test_kfuncs_get_their_btf_ids_and_a_weak_missing_one_is_poisoned(build) -> None:  # type: ignore[no-untyped-def]
    spec = build("kfuncs")
    applied = apply_externs(spec, resolve_externs(spec, sources()))
    lock = _insn(applied, _rel(spec, "bpf_rcu_read_lock", "kfunc"))
    assert (lock.code, lock.src_reg, lock.imm, lock.off) == (asm.OP_CALL, abi.BPF_PSEUDO_KFUNC_CALL, 3, 0)
    assert _insn(applied, _rel(spec, "bpf_rcu_read_unlock", "kfunc")).imm == 4
    poisoned = _insn(applied, _rel(spec, "evspec_no_such_kfunc", "kfunc"))
    assert (poisoned.src_reg, poisoned.imm) == (0, POISON_KFUNC_BASE + 2)
    address = _insn(applied, _rel(spec, "evspec_no_such_kfunc", "ksym"))
    assert (address.src_reg, address.imm) == (0, 0)  # `if (kfunc)` sees 0: the call is dead code
    fixed = Btf(fixup_btf(applied.btf or b"", applied.layouts).data)
    ksyms = fixed.find(".ksyms", BtfKind.DATASEC)
    assert ksyms is not None and {fixed.type(i.type).name for i in ksyms.secinfos} == {"dummy_ksym"}
    assert fixed.find("bpf_rcu_read_lock", BtfKind.FUNC).vlen == 1  # type: ignore[union-attr]  # global


# libbpf 1.1.2's extern list for order.c, as its debug log gives it ("extern (kcfg) #0: symbol 20, off 0,
# name CONFIG_EVSPEC_NO_SUCH_U64" ...); tests/test_externs_live.py reads it from the installed libbpf
ORDER_C_LIBBPF = ["CONFIG_EVSPEC_NO_SUCH_U64", "CONFIG_HZ", "LINUX_KERNEL_VERSION", "LINUX_HAS_BPF_COOKIE",
                  "CONFIG_LOCALVERSION", "__start_rodata", "aa_evspec_missing", "bpf_rcu_read_lock",
                  "bpf_rcu_read_unlock", "evspec_no_such_var", "zz_evspec_missing"]


def test_a_weak_missing_kfunc_is_poisoned_with_its_index_in_libbpfs_extern_list(build) -> None:  # type: ignore[no-untyped-def]
    """order.c declares its externs out of order (zz_evspec_missing is symbol 1 of 11,
    aa_evspec_missing symbol 9); libbpf sorts them: kconfig ones first (alignment 8, 4, 4, then 1
    by size), then ksyms and kfuncs by name, '_' before 'a'."""
    spec = build("order")
    assert [e.name for e in spec.externs].index("zz_evspec_missing") == 1  # what the old index was
    assert [e.name for e in libbpf_order(Btf(spec.btf or b""), spec.externs)] == ORDER_C_LIBBPF
    srcs = sources(config=CONFIG + "CONFIG_EVSPEC_NO_SUCH_U64=7\n", kallsyms=[(RODATA, "D", "__start_rodata")])
    applied = apply_externs(spec, resolve_externs(spec, srcs))
    for name in ("aa_evspec_missing", "zz_evspec_missing"):
        call = _insn(applied, _rel(spec, name, "kfunc"))
        assert (call.code, call.src_reg, call.dst_reg, call.off, call.imm) == (
            asm.OP_CALL, 0, 0, 0, POISON_KFUNC_BASE + ORDER_C_LIBBPF.index(name))
    assert _insn(applied, _rel(spec, "bpf_rcu_read_unlock", "kfunc")).imm == 4
    offsets = {e.name: e.offset for e in spec.externs if e.kind == "kconfig"}
    assert offsets == {"CONFIG_EVSPEC_NO_SUCH_U64": 0, "CONFIG_HZ": 8, "LINUX_KERNEL_VERSION": 12,
                       "LINUX_HAS_BPF_COOKIE": 16, "CONFIG_LOCALVERSION": 17}  # libbpf's offsets too


def test_libbpf_order_compares_names_as_bytes() -> None:
    """strcmp order: 'Z' (0x5a) before '_' before 'a', and a UTF-8 name after every ASCII one."""
    ksyms = [ExternSpec(name, "ksym", False, 1, 0, "void") for name in ("é_sym", "a_sym", "_sym", "Z_sym")]
    btf = Btf(write_btf([_int()], b"\0int\0"))
    assert [e.name for e in libbpf_order(btf, ksyms)] == ["Z_sym", "_sym", "a_sym", "é_sym"]


def test_a_typed_ksym_becomes_a_btf_id_load(build) -> None:  # type: ignore[no-untyped-def]
    spec = build("typed")
    applied = apply_externs(spec, resolve_externs(spec, sources()))
    insn = _insn(applied, _rel(spec, "bpf_prog_active", "ksym"))
    assert (insn.src_reg, insn.imm, _insn(applied, _rel(spec, "bpf_prog_active", "ksym") + 1).imm) == (
        abi.BPF_PSEUDO_BTF_ID, 5, 0)
    weak = _insn(applied, _rel(spec, "evspec_no_such_var", "ksym"))
    assert (weak.src_reg, weak.imm) == (0, 0)


def test_linux_values_alone_need_no_kconfig(build, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = build("bad", "UNKNOWN_LINUX")
    with pytest.raises(ObjectError) as err:
        resolve_externs(spec, sources(config=None))
    assert err.value.code == codes.EXTERN_UNRESOLVED  # not KCONFIG_UNREADABLE: it was not read
    assert "'LINUX_EVSPEC_NOPE' (__kconfig) is neither a CONFIG_ value" in err.value.message


def test_a_kfunc_and_a_ksym_of_a_module_name_its_btf(build) -> None:  # type: ignore[no-untyped-def]
    """kfuncs.c's weak evspec_no_such_kfunc, which vmlinux lacks, found in a module's split BTF:
    the call's imm is the module's FUNC id and its off the module's fd_array index (1); the
    `if (kfunc)` ld_imm64 holds that id and the module BTF's fd."""
    vmlinux = small_vmlinux()
    name = b"evspec_no_such_kfunc"
    split = write_btf([RawType(len(vmlinux.btf.string_section()) + 1, type_info(BtfKind.FUNC, 1), 2)],
                      b"\0" + name + b"\0")
    module = ModuleBtf("nf_nat", 7, 77, TargetBtf(split, "module nf_nat", base=vmlinux))
    spec = build("kfuncs")
    values = resolve_externs(spec, sources(modules=[module]))
    assert values.kfuncs["evspec_no_such_kfunc"] == (6, 1) and values.kfuncs["bpf_rcu_read_lock"] == (3, 0)
    assert values.fd_array == (0, 77)
    applied = apply_externs(spec, values)
    call = _insn(applied, _rel(spec, "evspec_no_such_kfunc", "kfunc"))
    assert (call.src_reg, call.imm, call.off) == (abi.BPF_PSEUDO_KFUNC_CALL, 6, 1)
    address = _insn(applied, _rel(spec, "evspec_no_such_kfunc", "ksym"))
    second = _insn(applied, _rel(spec, "evspec_no_such_kfunc", "ksym") + 1)
    assert (address.src_reg, address.imm, second.imm) == (abi.BPF_PSEUDO_BTF_ID, 6, 77)


@pytest.mark.parametrize(("define", "srcs", "code", "words"), [
    ("MISSING_CONFIG", sources(), codes.EXTERN_UNRESOLVED,
     ("'CONFIG_EVSPEC_NO_SUCH_OPTION' (kconfig, int) is strong", "test config does not set it")),
    ("MISSING_CONFIG", sources(config=None), codes.KCONFIG_UNREADABLE,
     ("needs the kernel's Kconfig", "/boot/config-x: No such file", "/proc/config.gz: No such file")),
    ("NOT_BOOL", sources(), codes.EXTERN_TYPE, ("'CONFIG_HZ' is a _Bool", "1000 needs an integer type")),
    ("MISSING_KSYM", sources(), codes.EXTERN_UNRESOLVED,
     ("'evspec_no_such_symbol' (ksym, void) is strong", "/proc/kallsyms has no such symbol")),
    ("MISSING_KSYM", sources(kallsyms=[(0, "T", "evspec_no_such_symbol")]), codes.EXTERN_UNRESOLVED,
     ("gives its address as 0", "load as root")),
    ("MISSING_KSYM", sources(kallsyms=[(1, "d", "evspec_no_such_symbol.llvm.1"), (2, "T", "evspec_no_such_symbol")]),
     codes.EXTERN_UNRESOLVED, ("is ambiguous", "0x1", "0x2")),
    ("MISSING_KFUNC", sources(), codes.EXTERN_UNRESOLVED,
     ("'evspec_no_such_kfunc' (kfunc, void (void)) is strong",
      "has no function 'evspec_no_such_kfunc', nor has any module's")),
    ("BAD_PROTO", sources(), codes.EXTERN_TYPE,
     ("'bpf_rcu_read_lock' (kfunc) is declared as int (int)", "kernel's function [3] is void (void)")),
])
def test_bad_externs_are_refused_naming_them(build, define: str, srcs: ExternSources, code: str,  # type: ignore[no-untyped-def]
                                             words: tuple[str, ...]) -> None:
    spec = build("bad", define)
    with pytest.raises(ObjectError) as err:
        resolve_externs(spec, srcs)
    assert err.value.code == code
    for w in words:
        assert w in err.value.message


# ------------------------------------------------------------------------------------- kconfig


def test_kconfig_numbers_parse_as_strtoull_base_0() -> None:
    assert [kc.parse_number(t) for t in ("250", "0x3e8", "010", "0", "-1")] == [250, 1000, 8, 0, (1 << 64) - 1]
    with pytest.raises(kc.KconfigError):
        kc.parse_number("12abc")


def test_kconfig_values_fit_their_types_or_are_refused() -> None:
    i8 = kc.KconfigType("char", 1, signed=True)
    u16 = kc.KconfigType("int", 2)
    assert kc.encode_config("CONFIG_X", kc.KconfigType("tristate", 4), "t", "y") == struct.pack("=I", 1)
    assert kc.encode_config("CONFIG_X", kc.KconfigType("tristate", 4), "t", "n") == bytes(4)
    assert kc.encode_config("CONFIG_X", kc.KconfigType("bool", 1), "bool", "n") == b"\0"
    assert kc.encode_config("CONFIG_X", i8, "char", "m") == b"m"
    assert kc.encode_config("CONFIG_X", i8, "char", "-128") == b"\x80"
    with pytest.raises(kc.KconfigError, match="'CONFIG_X' is a bool, but its value 'm' needs a tristate or char"):
        kc.encode_config("CONFIG_X", kc.KconfigType("bool", 1), "bool", "m")
    with pytest.raises(kc.KconfigError, match="'CONFIG_X' is a unsigned short .2 bytes., too small for its value 65536"):
        kc.encode_config("CONFIG_X", u16, "unsigned short", "65536")
    with pytest.raises(kc.KconfigError, match="needs a char array"):
        kc.encode_config("CONFIG_X", u16, "unsigned short", '"text"')
    with pytest.raises(kc.KconfigError, match="line 2: 'CONFIG_Y=' has no value"):
        kc.parse_kconfig("CONFIG_X=y\nCONFIG_Y=\n", "f")


def _version(major: int, minor: int, patch: int) -> int:
    return (major << 16) + (minor << 8) + min(patch, 255)


UBUNTU_FOCAL = "Ubuntu 5.4.0-100.113-generic 5.4.166\n"
DEBIAN_BUSTER = "#1 SMP Debian 4.19.260-1 (2022-09-29)"


@pytest.mark.parametrize(("release", "version", "signature", "code"), [
    ("6.18.44-fc-v657", "#1 SMP PREEMPT_DYNAMIC @0", None, _version(6, 18, 44)),
    ("4.19.300", "", None, _version(4, 19, 255)),  # patch capped at 255
    ("6.18-rc1", "", None, 0),  # no a.b.c: the load fails, as libbpf's does
    ("6.18.x", "", None, 0),
    ("6.+18.-1", "", None, _version(6, 18, 255)),  # %u takes a sign: -1 is 2**32 - 1, capped
    (" 6. 18.  7-x", "", None, _version(6, 18, 7)),  # and white space before the digits
    ("6.18. 7", "", None, _version(6, 18, 7)),
    ("6 .18.7", "", None, 0),  # but not before a '.'
    (f"6.18.{1 << 64}", "", None, _version(6, 18, 255)),  # strtoul saturates
    # Ubuntu: the third word of /proc/version_signature, whatever uname says
    ("5.4.0-100-generic", "#113-Ubuntu SMP Thu Feb 3 18:43:29 UTC 2022", UBUNTU_FOCAL, _version(5, 4, 166)),
    ("5.4.0-100-generic", "", "Ubuntu  5.4.0-100.113-generic\t 5.4.300", _version(5, 4, 255)),
    ("5.4.0-100-generic", "", "Ubuntu 5.4.0-100.113-generic", _version(5, 4, 0)),  # no third word: uname
    ("5.4.0-100-generic", "", "Ubuntu 5.4.0-100.113-generic 5.4", _version(5, 4, 0)),
    ("5.4.0-100-generic", "", "", _version(5, 4, 0)),
    # Debian: the a.b.c after the first "Debian " of uname -v, when there is no Ubuntu signature
    ("4.19.0-22-amd64", DEBIAN_BUSTER, None, _version(4, 19, 255)),
    ("6.1.0-18-amd64", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)", None, _version(6, 1, 76)),
    ("6.1.0-18-amd64", "#1 SMP Debian 6.1.76-1", UBUNTU_FOCAL, _version(5, 4, 166)),  # Ubuntu first
    ("6.1.0-18-amd64", "#1 SMP Debian  6.1.76-1", None, _version(6, 1, 76)),  # " " matches any white space
    ("6.1.0-18-amd64", "#1 SMP Debian 6.1 Debian 6.1.76", None, _version(6, 1, 0)),  # only the first counts
    ("6.1.0-18-amd64", "#1 SMP Debian-6.1.76", None, _version(6, 1, 0)),  # "Debian " with its space
    ("6.1-amd64", "#1 SMP Debian", None, 0),
])
def test_kernel_version_is_computed_as_libbpf_does(release: str, version: str, signature: str | None,
                                                    code: int) -> None:
    """libbpf 1.2 to 1.7's get_kernel_version (libbpf 1.1 has the Ubuntu rule and not the Debian one)."""
    assert kc.kernel_version_code(release, version, signature) == code


def test_linux_kernel_version_comes_from_the_sources_release_version_and_signature(build) -> None:  # type: ignore[no-untyped-def]
    spec = build("values")
    at = next(e.offset for e in spec.externs if e.name == "LINUX_KERNEL_VERSION")

    def version_of(release: str, version: str = "", signature: str | None = None) -> int:
        srcs = sources(kallsyms=[(RODATA, "D", "__start_rodata")], release=release, version=version,
                       version_signature=signature)
        return int.from_bytes(resolve_externs(spec, srcs).kconfig[at:at + 4], "little")

    assert version_of("5.4.0-100-generic", signature=UBUNTU_FOCAL) == _version(5, 4, 166)
    assert version_of("4.19.0-22-amd64", version=DEBIAN_BUSTER) == _version(4, 19, 255)
    assert version_of("4.19.0-22-amd64") == _version(4, 19, 0)
    with pytest.raises(ObjectError) as err:
        version_of("6.18-rc1", "#1 SMP", "Ubuntu x")
    assert err.value.code == codes.EXTERN_UNRESOLVED
    assert err.value.message.endswith("extern 'LINUX_KERNEL_VERSION': no kernel version a.b.c in the release "
                                      "'6.18-rc1', nor after 'Debian ' in the version '#1 SMP', nor as the "
                                      "third word of /proc/version_signature ('Ubuntu x')")


def test_the_running_system_reads_uname_and_the_signature_only_for_the_kernel_version(build, tmp_path: Path  # type: ignore[no-untyped-def]
                                                                                      ) -> None:
    signature = tmp_path / "version_signature"
    signature.write_text(UBUNTU_FOCAL)
    uname = os.uname_result(("Linux", "box", "5.4.0-100-generic", "#113-Ubuntu SMP", "x86_64"))
    srcs = running_system(build("values"), lambda: True, syscall_wrapper=lambda m: False, uname=lambda: uname,
                          version_signature=signature)
    assert (srcs.release, srcs.version, srcs.version_signature) == ("5.4.0-100-generic", "#113-Ubuntu SMP",
                                                                    UBUNTU_FOCAL)
    assert kc.kernel_version_code(srcs.release, srcs.version, srcs.version_signature) == _version(5, 4, 166)
    unreadable = running_system(build("values"), lambda: True, syscall_wrapper=lambda m: False, uname=lambda: uname,
                                version_signature=tmp_path / "none")
    assert unreadable.version_signature is None
    kfuncs = running_system(build("kfuncs"), lambda: True, syscall_wrapper=lambda m: False, uname=lambda: uname,
                            version_signature=signature)
    assert kfuncs.version_signature is None  # no LINUX_KERNEL_VERSION: the file is not read


def test_kconfig_is_read_from_boot_then_proc_gzipped_or_plain(tmp_path: Path) -> None:
    boot, proc = tmp_path / "config-x", tmp_path / "config.gz"
    proc.write_bytes(gzip.compress(b"CONFIG_HZ=100\n"))
    assert kc.read_kconfig("x", [boot, proc]) == ({"CONFIG_HZ": "100"}, str(proc))
    boot.write_text("CONFIG_HZ=300\n")
    assert kc.read_kconfig("x", [boot, proc])[0] == {"CONFIG_HZ": "300"}
    boot.unlink()
    proc.write_bytes(b"\x1f\x8bnot gzip")
    with pytest.raises(kc.KconfigUnreadable) as err:
        kc.read_kconfig("x", [boot, proc])
    assert [path for path, _ in err.value.tried] == [str(boot), str(proc)]
    assert "not a readable gzip file" in str(err.value)


def _looped(kind: BtfKind) -> Btf:
    """Two types of ``kind`` (PTR or ARRAY) that refer to each other: a loop no C type has."""
    int_type = RawType(1, type_info(BtfKind.INT), 4, struct.pack("<I", 32))
    if kind == BtfKind.PTR:
        return Btf(write_btf([int_type, RawType(0, type_info(kind), 3), RawType(0, type_info(kind), 2)], b"\0int\0"))
    arrays = [RawType(0, type_info(kind), 0, struct.pack("<III", element, 1, 2)) for element in (3, 2)]
    return Btf(write_btf([int_type, *arrays], b"\0int\0"))


def test_a_type_loop_is_refused_by_name_not_by_recursion() -> None:
    """Corrupt BTF can make an extern's type a loop: messages and the kconfig check stop on it."""
    with pytest.raises(BtfError, match=r"BTF type [23] is nested more than 32 levels deep"):
        type_text(_looped(BtfKind.PTR), 2)
    assert kc.kconfig_type(_looped(BtfKind.ARRAY), 2) is None
