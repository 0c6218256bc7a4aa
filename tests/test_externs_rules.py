"""Externs and kconfig values as libbpf collects and resolves them, case by case: the refusals
and the corner values a wrong rule would get past. The mutants these tests were written to
kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.object.externs import UndefinedSymbol, collect_externs


def test_externs_without_btf_are_refused_by_name() -> None:
    """libbpf: an extern needs the object's BTF to say what it is ("failed to find BTF for
    extern"); evspec names the first extern and how to get BTF (-g)."""
    with pytest.raises(ObjectError) as err:
        collect_externs("x.o", None, [UndefinedSymbol("CONFIG_HZ", False), UndefinedSymbol("b", True)])
    assert "x.o: extern 'CONFIG_HZ' needs BTF" in err.value.message and "-g" in err.value.message
    assert collect_externs("x.o", None, []) == ()
