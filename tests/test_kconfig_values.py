"""Kconfig values as libbpf writes them into the .kconfig map, and kernel versions as libbpf
scans them, at the edges a wrong bound would get past: the empty string, a string cut to its
array, an unterminated string, a number at strtoul's limit. The mutants these tests were written
to kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

import struct

import pytest
from btf_builder import BtfBuilder
from evspec.loader.externs.kconfig import (
    KconfigError,
    KconfigType,
    encode_letter,
    encode_number,
    encode_string,
    kconfig_type,
    parse_number,
    release_version_code,
)


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


def test_tristate_letters_are_libbpfs_enum() -> None:
    """enum libbpf_tristate: TRI_NO 0, TRI_YES 1, TRI_MODULE 2, as 4 bytes."""
    tri = KconfigType("tristate", 4)
    assert [encode_letter("CONFIG_X", tri, "enum libbpf_tristate", c) for c in "nym"] == [
        struct.pack("=I", v) for v in (0, 1, 2)]


@pytest.mark.parametrize(("size", "signed", "value", "encoded"), [
    (1, True, 127, b"\x7f"), (1, True, -128 & (2**64 - 1), b"\x80"), (2, False, 0x1234, struct.pack("=H", 0x1234)),
    (8, False, 2**64 - 1, b"\xff" * 8),
])  # fmt: skip
def test_numbers_fit_their_ints(size: int, signed: bool, value: int, encoded: bytes) -> None:
    assert encode_number("CONFIG_X", KconfigType("int" if size > 1 else "char", size, signed), "t", value) == encoded


@pytest.mark.parametrize(("signed", "value"), [(True, 128), (True, -129 & (2**64 - 1)), (False, 256)])
def test_numbers_past_their_ints_are_refused(signed: bool, value: int) -> None:
    """libbpf (set_kcfg_value_num): a value must fit the extern's size, signed or not."""
    with pytest.raises(KconfigError, match="too small for its value"):
        encode_number("CONFIG_X", KconfigType("char", 1, signed), "char", value)


def test_numbers_are_read_up_to_u64_max() -> None:
    """strtoull: 18446744073709551615 is read, one more is not an integer."""
    assert parse_number("18446744073709551615") == 2**64 - 1
    assert parse_number("-1") == 2**64 - 1
    with pytest.raises(KconfigError, match="not an integer"):
        parse_number("18446744073709551616")


def test_a_one_byte_int_is_a_char_and_an_array_of_them_a_string() -> None:
    b = BtfBuilder()
    char, u8, u16 = b.int_("char", 1, signed=True), b.int_("unsigned char", 1), b.int_("short", 2)
    array = b.array(char, 16)
    btf = b.btf()
    assert kconfig_type(btf, char) == KconfigType("char", 1, True)
    assert kconfig_type(btf, u8) == KconfigType("char", 1, False)
    assert kconfig_type(btf, u16) == KconfigType("int", 2, False)
    assert kconfig_type(btf, array) == KconfigType("char_array", 16)
