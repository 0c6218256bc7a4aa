"""Which BTF features an object's BTF uses (what the fix-up must rewrite for an older kernel):
a signed enum needs the kernel's ENUM64 support (libbpf's btf_sanitize: kind_flag on an enum came
with ENUM64); an unsigned one, or another type with kind_flag set (a struct of bitfields, a
union's fwd), does not. The mutants these tests were written to kill are listed in
tools/mutation/pins.toml."""

from __future__ import annotations

from btf_builder import BtfBuilder
from evspec.loader.btf.fixup import fixup_btf


def _used(build) -> frozenset[str]:  # noqa: ANN001 - a function of a BtfBuilder
    b = BtfBuilder()
    build(b)
    return fixup_btf(b.blob(), ()).used


def test_only_signed_enums_and_enum64s_need_enum64() -> None:
    def plain(b: BtfBuilder) -> None:
        i = b.int_("int", 4)
        b.struct("bits", 4, [("a", i, 0, 3), ("b", i, 3, 5)])
        b.fwd("u", union=True)
        b.enum("e", 4, [("A", 1)])

    assert "enum64" not in _used(plain)
    assert "enum64" in _used(lambda b: b.enum("e", 4, [("A", -1)], signed=True))
    assert "enum64" in _used(lambda b: b.enum64("e", [("A", 1 << 40)]))
