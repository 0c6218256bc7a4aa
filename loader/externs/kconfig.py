"""The values of ``__kconfig`` externs, as libbpf 1.x computes them; no syscalls.

* which BTF types a kconfig extern may have (libbpf's find_kcfg_type): ``bool`` (a 1-byte INT
  with the BOOL encoding), ``enum libbpf_tristate`` (4-byte ENUM or an ENUM64 of that name), a
  ``char`` (any 1-byte INT), an integer of 2, 4 or 8 bytes, or a non-empty ``char`` array;
* how a Kconfig value is written into one (set_kcfg_value_tri/str/num): ``y``/``n``/``m`` into a
  bool (``m`` refused), a tristate (TRI_YES 1, TRI_NO 0, TRI_MODULE 2) or a char (the letter
  itself); ``"text"`` into a char array, cut to fit with its NUL; numbers (``strtoull`` base 0:
  ``0x`` hex, leading ``0`` octal) into an integer or char they fit in;
* the Kconfig text: ``CONFIG_NAME=VALUE`` lines (the first one of a name counts), read from
  ``/boot/config-RELEASE`` and then ``/proc/config.gz``;
* ``LINUX_KERNEL_VERSION``: KERNEL_VERSION(a, b, c), c capped at 255, of the first of these that
  has three numbers (libbpf 1.2 to 1.7's get_kernel_version; 1.1 has no Debian rule): the
  ``a.b.c`` after two words of ``/proc/version_signature`` (Ubuntu: "Ubuntu 5.4.0-12.15-generic
  5.4.8"), the ``a.b.c`` after the first "Debian " of ``uname -v`` ("#1 SMP Debian 4.19.260-1
  (2022-09-29)"), the release ``a.b.c...`` (``uname -r``). The numbers are read as scanf's
  ``%u`` reads them: white space before each, a sign, decimal digits, kept modulo 2**32.
"""

from __future__ import annotations

import os
import struct
import sys
import zlib
from collections.abc import Sequence

from evspec.loader.btf.reader import INT_BOOL, INT_SIGNED, Btf, BtfKind

from evspec.span import Slotted

TRI_NO, TRI_YES, TRI_MODULE = 0, 1, 2  # enum libbpf_tristate
_NATIVE = "<" if sys.byteorder == "little" else ">"
_INT_FORMATS = {1: "B", 2: "H", 4: "I", 8: "Q"}
_U64 = (1 << 64) - 1


class KconfigError(ValueError):
    """A value that does not fit its extern's type, or Kconfig text that cannot be parsed."""


class KconfigUnreadable(OSError):
    """No Kconfig file could be read; ``tried`` lists each file and why."""

    def __init__(self, tried: Sequence[tuple[str, str]]) -> None:
        self.tried = tuple(tried)
        super().__init__("; ".join(f"{path}: {why}" for path, why in self.tried))


class KconfigType(Slotted):
    """How a kconfig extern's BTF type holds a value."""

    kind: str  # "bool", "tristate", "char", "int", "char_array"
    size: int
    signed: bool = False


def kconfig_type(btf: Btf, type_id: int) -> KconfigType | None:
    """The kconfig encoding of a BTF type, None when libbpf does not support it."""
    t = btf.resolve(type_id)
    if t.kind == BtfKind.INT:
        if t.int_encoding & INT_BOOL:
            return KconfigType("bool", 1) if t.size == 1 else None
        signed = bool(t.int_encoding & INT_SIGNED)
        if t.size == 1:
            return KconfigType("char", 1, signed)
        return KconfigType("int", t.size, signed) if t.size in (2, 4, 8) else None
    if t.kind in (BtfKind.ENUM, BtfKind.ENUM64):
        if t.name != "libbpf_tristate" or (t.kind == BtfKind.ENUM and t.size != 4):
            return None
        return KconfigType("tristate", t.size)
    if t.kind == BtfKind.ARRAY and t.array is not None and t.array.nelems > 0:
        if btf.resolve(t.array.type).kind == BtfKind.ARRAY:  # no char array, and no recursion on a loop
            return None
        element = kconfig_type(btf, t.array.type)
        if element is None or element.kind != "char":
            return None
        return KconfigType("char_array", t.array.nelems)
    return None


def align_of(btf: Btf, type_id: int) -> int:
    """The alignment of a kconfig extern's type (btf__align_of for the kinds kconfig allows)."""
    t = btf.resolve(type_id)
    if t.kind == BtfKind.ARRAY and t.array is not None:
        return align_of(btf, t.array.type)
    return max(1, min(t.size, 8))


def encode_letter(name: str, ktype: KconfigType, type_name: str, letter: str) -> bytes:
    """``y``, ``n`` or ``m`` as ``ktype`` holds it."""
    if ktype.kind == "bool" and letter != "m":
        return bytes([letter == "y"])
    if ktype.kind == "tristate":
        value = {"y": TRI_YES, "n": TRI_NO, "m": TRI_MODULE}[letter]
        return struct.pack(_NATIVE + _INT_FORMATS[ktype.size], value)
    if ktype.kind == "char":
        return letter.encode()
    wants = "tristate or char" if letter == "m" else "bool, tristate or char"
    raise KconfigError(f"extern {name!r} is a {type_name}, but its value {letter!r} needs a {wants}")


def encode_string(name: str, ktype: KconfigType, type_name: str, value: str) -> bytes:
    """A quoted Kconfig string into a char array (cut to leave room for its NUL, as libbpf does)."""
    if ktype.kind != "char_array":
        raise KconfigError(f"extern {name!r} is a {type_name}, but its value {value} needs a char array")
    if len(value) < 2 or not value.endswith('"'):
        raise KconfigError(f"extern {name!r}: invalid string value {value}")
    raw = value[1:-1].encode()[:ktype.size - 1]
    return raw + bytes(ktype.size - len(raw))


def encode_number(name: str, ktype: KconfigType, type_name: str, value: int, *, virtual: bool = False
                  ) -> bytes:
    """An integer into an int or char (and, for libbpf's LINUX_* values, a bool) it fits in."""
    kinds = ("int", "char", "bool") if virtual else ("int", "char")
    if ktype.kind not in kinds:
        raise KconfigError(f"extern {name!r} is a {type_name}, but its value {value} needs an integer "
                           "type")
    if ktype.kind == "bool" and value > 1:
        raise KconfigError(f"extern {name!r} is a {type_name}, but its value {value} is not 0 or 1")
    value &= _U64
    bits = ktype.size * 8
    if bits < 64:
        fits = (value + (1 << (bits - 1))) & _U64 < (1 << bits) if ktype.signed else value >> bits == 0
        if not fits:
            raise KconfigError(f"extern {name!r} is a {type_name} ({ktype.size} bytes), too small for "
                               f"its value {value}")
    return struct.pack(_NATIVE + _INT_FORMATS[ktype.size], value & ((1 << bits) - 1))


def parse_number(text: str) -> int:
    """``strtoull(text, &end, 0)`` with the whole text consumed: ``0x`` hex, ``0`` octal, a sign."""
    body = text.strip(" \t")
    sign = -1 if body.startswith("-") else 1
    body = body.lstrip("+-")
    if body[:2].lower() == "0x":
        base, digits = 16, body[2:]
    elif body.startswith("0") and len(body) > 1:
        base, digits = 8, body[1:]
    else:
        base, digits = 10, body
    try:
        value = int(digits, base) if digits and digits.isalnum() else None
    except ValueError:
        value = None
    if value is None or value > _U64:
        raise KconfigError(f"{text!r} is not an integer")
    return (sign * value) & _U64


def encode_config(name: str, ktype: KconfigType, type_name: str, value: str) -> bytes:
    """A Kconfig value (the text after ``=``) as ``ktype`` holds it."""
    if value[0] in "ynm":
        return encode_letter(name, ktype, type_name, value[0])
    if value[0] == '"':
        return encode_string(name, ktype, type_name, value)
    try:
        number = parse_number(value)
    except KconfigError:
        raise KconfigError(f"extern {name!r}: its value {value!r} is not an integer") from None
    return encode_number(name, ktype, type_name, number)


def parse_kconfig(text: str, source: str) -> dict[str, str]:
    """``CONFIG_NAME`` -> its value text, from Kconfig lines (comments and others skipped)."""
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("CONFIG_"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not value:
            raise KconfigError(f"{source}, line {number}: {line!r} has no value")
        out.setdefault(key, value)
    return out


def read_kconfig(
    release: str, paths: Sequence[str | os.PathLike[str]] | None = None,
) -> tuple[dict[str, str], str]:
    """The running kernel's Kconfig and the file it came from (``/boot/config-RELEASE``, then
    ``/proc/config.gz``, either one plain or gzipped); ``KconfigUnreadable`` if neither can be read."""
    import gzip  # only for objects with a __kconfig extern

    tried = []
    for path in paths or (f"/boot/config-{release}", "/proc/config.gz"):
        try:
            with open(path, "rb") as f:
                raw = f.read()
            text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8", "replace")
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:  # BadGzipFile is an OSError: first
            tried.append((str(path), f"not a readable gzip file ({exc})"))
            continue
        except OSError as exc:
            tried.append((str(path), exc.strerror or str(exc)))
            continue
        return parse_kconfig(text, str(path)), str(path)
    raise KconfigUnreadable(tried)


VERSION_SIGNATURE = "/proc/version_signature"
_C_SPACE = " \t\n\v\f\r"
_U32 = (1 << 32) - 1


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in _C_SPACE:
        at += 1
    return at


def _scan_u32(text: str, at: int) -> tuple[int, int] | None:
    """scanf's ``%u`` at ``at``: (the value modulo 2**32, where it ends), None if no digits."""
    at = _skip_space(text, at)
    negative = at < len(text) and text[at] == "-"
    if at < len(text) and text[at] in "+-":
        at += 1
    end = at
    while end < len(text) and text[end] in "0123456789":
        end += 1
    if end == at:
        return None
    value = int(text[at:end])
    if value > _U64:
        return _U32, end  # strtoul's ULONG_MAX, whatever the sign
    return (-value if negative else value) & _U32, end


def _scan_version(text: str, at: int = 0) -> int:
    """KERNEL_VERSION of scanf's ``%u.%u.%u`` at ``at``; 0 unless all three numbers are there."""
    numbers = []
    for i in range(3):
        if i:
            if not text.startswith(".", at):
                return 0
            at += 1
        scanned = _scan_u32(text, at)
        if scanned is None:
            return 0
        value, at = scanned
        numbers.append(value)
    major, minor, patch = numbers
    return ((major << 16) + (minor << 8) + min(patch, 255)) & _U32


def release_version_code(release: str) -> int:
    """KERNEL_VERSION(a, b, c) of a release ``a.b.c...`` (``uname -r``), 0 without three numbers."""
    return _scan_version(release)


def ubuntu_version_code(signature: str) -> int:
    """KERNEL_VERSION of the ``a.b.c`` after the first two words of Ubuntu's
    ``/proc/version_signature`` ("Ubuntu 5.4.0-100.113-generic 5.4.166"), 0 without one."""
    at = 0
    for _word in range(2):
        at = _skip_space(signature, at)
        end = at
        while end < len(signature) and signature[end] not in _C_SPACE:
            end += 1
        if end == at:
            return 0
        at = end
    return _scan_version(signature, at)


def debian_version_code(uname_version: str) -> int:
    """KERNEL_VERSION of the ``a.b.c`` after the first "Debian " of ``uname -v`` ("#1 SMP Debian
    4.19.260-1 (2022-09-29)"), 0 when there is none or it has no three numbers."""
    at = uname_version.find("Debian ")
    return 0 if at < 0 else _scan_version(uname_version, at + len("Debian "))


def kernel_version_code(release: str, uname_version: str = "", version_signature: str | None = None) -> int:
    """LINUX_KERNEL_VERSION (see the module docstring): Ubuntu's signature, else Debian's
    ``uname -v``, else the release; 0 when none has a version (libbpf then fails the load)."""
    return ((ubuntu_version_code(version_signature) if version_signature is not None else 0)
            or debian_version_code(uname_version) or release_version_code(release))


def read_version_signature(path: str | os.PathLike[str] = VERSION_SIGNATURE) -> str | None:
    """The text of ``/proc/version_signature`` (Ubuntu kernels have it), None if it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None
