"""Kconfig values as libbpf writes them into the .kconfig map, and kernel versions as libbpf
scans them, at the edges a wrong bound would get past: the empty string, a string cut to its
array, an unterminated string, a number at strtoul's limit. The mutants these tests were written
to kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

import pytest
from evspec.loader.object.kconfig import KconfigError, KconfigType, encode_string, release_version_code


def test_strings_fill_their_char_array_cut_to_leave_room_for_the_nul() -> None:
    """libbpf (set_kcfg_value_str): the text between the quotes, cut to the array's size - 1,
    then zeros; the empty string "" is all zeros."""
    four = KconfigType("char_array", 4)
    assert encode_string("CONFIG_X", four, "char[4]", '"ab"') == b"ab\0\0"
    assert encode_string("CONFIG_X", four, "char[4]", '"abcdef"') == b"abc\0"
    assert encode_string("CONFIG_X", four, "char[4]", '""') == b"\0\0\0\0"


@pytest.mark.parametrize("value", ['"abc', '"'])
def test_an_unterminated_string_is_refused(value: str) -> None:
    """libbpf: a string value must end with its closing quote ("invalid string config")."""
    with pytest.raises(KconfigError, match=f"extern 'CONFIG_X': invalid string value {value}"):
        encode_string("CONFIG_X", KconfigType("char_array", 8), "char[8]", value)


def test_version_numbers_wrap_as_strtoul_reads_them() -> None:
    """libbpf scans a release with sscanf's %u: a negative number is its negation modulo 2**32,
    18446744073709551615 (ULONG_MAX) negated is 1, a number past ULONG_MAX is ULONG_MAX."""
    assert release_version_code("6.-18446744073709551615.3") == (6 << 16) + (1 << 8) + 3
    assert release_version_code("6.-1.3") == ((6 << 16) + (0xFFFFFFFF << 8) + 3) & 0xFFFFFFFF
    assert release_version_code("6.18446744073709551616.3") == ((6 << 16) + (0xFFFFFFFF << 8) + 3) & 0xFFFFFFFF
