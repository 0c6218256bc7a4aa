"""Externs and kconfig values as libbpf collects and resolves them, case by case: the refusals
and the corner values a wrong rule would get past. The mutants these tests were written to
kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from btf_builder import BtfBuilder
from evspec.loader.btf.reader import Btf, BtfKind
from evspec.loader.errors import ObjectError
from evspec.loader.externs.resolve import (
    UndefinedSymbol,
    apply_externs,
    collect_externs,
    extern_btf,
    resolve_externs,
)
from evspec.loader.object.reader import read_object
from evspec.loader.object.spec import ExternSpec
from test_externs import CONFIG, DATA, INCLUDE, RODATA, sources


def test_externs_without_btf_are_refused_by_name() -> None:
    """libbpf: an extern needs the object's BTF to say what it is ("failed to find BTF for
    extern"); evspec names the first extern and how to get BTF (-g)."""
    with pytest.raises(ObjectError) as err:
        collect_externs("x.o", None, [UndefinedSymbol("CONFIG_HZ", False), UndefinedSymbol("b", True)])
    assert "x.o: extern 'CONFIG_HZ' needs BTF" in err.value.message and "-g" in err.value.message
    assert collect_externs("x.o", None, []) == ()


@pytest.mark.parametrize(("length", "cut"), [(15, False), (16, True)])
def test_a_string_as_long_as_its_array_is_cut_and_said(tmp_path: Path, length: int, cut: bool) -> None:
    """libbpf (set_kcfg_value_str): a char[16] holds 15 characters and the NUL; a 16-character
    value is cut to 15, which libbpf warns about, and evspec says so too; 15 fit."""
    out = tmp_path / "values.o"
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", f"-I{INCLUDE}", "-c", str(DATA / "values.c"),
                    "-o", str(out)], check=True, capture_output=True)  # fmt: skip
    text = "v" * length
    config = CONFIG.replace('CONFIG_LOCALVERSION="-a-long-local-version"', f'CONFIG_LOCALVERSION="{text}"')
    values = resolve_externs(read_object(out), sources(config, kallsyms=[(RODATA, "D", "__start_rodata")]))
    assert values.kconfig[18:34] == (text[:15] + "\0").encode()
    assert [w for w in values.warnings if "cut to 15 bytes" in w] == ([values.warnings[0]] if cut else [])


@pytest.mark.parametrize("name", ["kfuncs", "values"])
def test_ksyms_entries_are_4_byte_variables_at_4_byte_steps(tmp_path: Path, name: str) -> None:
    """libbpf (btf_fixup_datasec of .ksyms): each entry of .ksyms (a ksym variable, or a kfunc
    through a dummy_ksym variable) is 4 bytes at offset 4 * i, and the section 4 bytes an entry."""
    out = tmp_path / f"{name}.o"
    subprocess.run(["clang", "-target", "bpf", "-O2", "-g", f"-I{INCLUDE}", "-c", str(DATA / f"{name}.c"),
                    "-o", str(out)], check=True, capture_output=True)  # fmt: skip
    spec = read_object(out)
    applied = apply_externs(spec, resolve_externs(spec, sources(kallsyms=[(RODATA, "D", "__start_rodata")])))
    ksyms = Btf(applied.btf or b"").find(".ksyms", BtfKind.DATASEC)
    assert ksyms is not None and len(ksyms.secinfos) >= 2
    assert [(i.offset, i.size) for i in ksyms.secinfos] == [(4 * n, 4) for n in range(len(ksyms.secinfos))]
    assert ksyms.size == 4 * len(ksyms.secinfos)


def test_ksyms_in_a_btf_without_a_32_bit_int_get_one() -> None:
    """libbpf makes .ksyms entries 4-byte ints; when the object's BTF has no 32-bit int, one
    named 'int' is added for them (4 bytes, signed, 32 bits) and the entry's variable uses it."""
    b = BtfBuilder()
    char = b.int_("char", 1, signed=True)
    var = b.var("jiffies", char, linkage=2)  # extern, typed char
    b.datasec(".ksyms", 0, [(var, 0, 1)])
    ext = ExternSpec("jiffies", "ksym", False, var, char, "char")
    raw, _ = extern_btf(b.blob(), [ext])
    btf = Btf(raw)
    added = btf.type(len(btf) - 1)
    assert (added.kind, added.name, added.size, added.int_bits, added.int_encoding) == (BtfKind.INT, "int", 4, 32, 1)
    assert btf.type(var).type == added.id
