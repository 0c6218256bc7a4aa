"""Externs and kconfig values as libbpf collects and resolves them, case by case: the refusals
and the corner values a wrong rule would get past. The mutants these tests were written to
kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.object.externs import UndefinedSymbol, collect_externs, resolve_externs
from evspec.loader.object.reader import read_object
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
