"""Integers read the way C's strtoull reads them, in bounded time whatever the length."""

U64_MAX = (1 << 64) - 1
TOO_BIG = U64_MAX + 1


def read_unsigned(digits: str, base: int) -> int:
    """The value of ``digits`` (no sign; ``0x`` allowed in base 16) in ``base``; ``TOO_BIG`` past 64 bits.

    Python refuses to convert more than 4,300 decimal digits, and a long run of digits costs
    quadratic time; neither may reach the user, so anything longer than a 64-bit value can be is
    answered without converting it.
    """
    if base == 16 and digits[:2] in ("0x", "0X"):
        digits = digits[2:]
    significant = digits.lstrip("0") or "0"
    if len(significant) > _MAX_DIGITS.get(base, 64):
        return TOO_BIG
    value = int(significant, base)
    return value if value <= U64_MAX else TOO_BIG


_MAX_DIGITS = {2: 64, 8: 22, 10: 20, 16: 16}
