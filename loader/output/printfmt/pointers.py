"""libtraceevent's ``%p`` conversions: how many letters each takes (``pointer_extent``) and what
it prints (``pointer_text``): kernel symbols (``%pS``, ``%ps``, ``%pF``, ``%pf``, through a
resolver), MAC addresses, IPv4 and IPv6 addresses (``c``: compressed), socket addresses, UUIDs, hex
buffers, and glibc's plain ``%p``. The typed ones want a field of the right size, and say what is
wrong as libtraceevent says it (``INVALIDMAC``, ``ARG TYPE NOT FIELD BUT 8``).
"""

from __future__ import annotations

import sys

from evspec.loader.output.printfmt.args import DynamicArray, FieldRef, Node
from evspec.loader.output.printfmt.symbols import Resolver


def pointer_extent(fmt: str, at: int) -> int:
    """parse_arg_format_pointer(): how many letters after ``%p`` (at ``at``) belong to it."""
    kind, nxt = fmt[at : at + 1], fmt[at + 1 : at + 2]
    if kind in ("F", "S", "f", "s"):
        return 1
    if kind in ("M", "m"):
        return 2 if nxt in ("R", "F") else 1
    if kind in ("U", "h"):
        return 2 if nxt in (("L", "l", "B", "b") if kind == "U" else ("C", "D", "N")) else 1
    if kind not in ("I", "i"):
        return 0
    count, index = 0, 2
    if nxt == "S":
        while fmt[at + index : at + index + 1] in ("p", "f", "s") and at + index < len(fmt):
            count += 1
            index += 1
    if nxt in ("S", "4"):
        if fmt[at + index : at + index + 1] in ("h", "n", "l", "b"):
            count += 1
            index += 1
        if nxt == "4":
            return count + 2
    if nxt in ("S", "4", "6"):
        if fmt[at + index : at + index + 1] == "c":
            count += 1
        count += 1
    return count + 1


def _field_bytes(node: Node, raw: bytes, size: int, invalid: str) -> bytes | str:
    """The bytes of a FIELD argument of ``size`` bytes, or what libtraceevent prints instead."""
    if not isinstance(node, FieldRef):
        return f"ARG TYPE NOT FIELD BUT {node.tep_type}"
    if node.field.size != size:
        return invalid
    return raw[node.field.offset : node.field.offset + size].ljust(size, b"\0")


def _ip4(data: bytes, leading_zeros: bool, reverse: bool) -> str:
    data = data[::-1] if reverse else data
    return ".".join(f"{b:03d}" if leading_zeros else str(b) for b in data)


def _ip6(data: bytes, colons: bool) -> str:
    words = [data[i : i + 2].hex() for i in range(0, 16, 2)]
    return (":" if colons else "").join(words)


def _ip6_compressed(data: bytes) -> str:
    """print_ip6c_addr(): the longest run of zero words (more than one) as ``::``; a v4-mapped or
    ISATAP address ends in dotted IPv4."""
    words = [int.from_bytes(data[i : i + 2], "big") for i in range(0, 16, 2)]
    v4mapped = words[:5] == [0] * 5 and words[5] == 0xFFFF
    isatap = (words[4] | 0x0200) == 0x0200 and words[5] == 0x5EFE
    use_ipv4 = v4mapped or isatap
    span = 6 if use_ipv4 else 8
    runs = [next((j - i for j in range(i, span) if words[j]), span - i) for i in range(span)]
    longest, colonpos = 1, -1
    for i, run in enumerate(runs):
        if run > longest:
            longest, colonpos = run, i
    out, need_colon, i = [], False, 0
    while i < span:
        if i == colonpos:
            out.append("::" if need_colon or i == 0 else ":")
            need_colon = False
            i += longest
            continue
        if need_colon:
            out.append(":")
        out.append(f"{words[i]:x}")
        need_colon = True
        i += 1
    if use_ipv4:
        out.append((":" if need_colon else "") + _ip4(data[12:16], False, False))
    return "".join(out)


def _ip_reverse(letter: str) -> bool:
    """parse_ip4_print_args(): 'h' (host order, little-endian here) and 'l' print reversed."""
    return letter in ("h", "l")


def pointer_text(kind: str, node: Node, raw: bytes, plen: int | None, resolve: Resolver | None) -> str:
    """print_arg_pointer() for the conversion ``%p`` + ``kind``."""
    first, rest = kind[:1], kind[1:]
    if first in ("F", "f", "S", "s"):
        value = node.num(raw)
        found = resolve(value) if resolve is not None else None
        if found is None:
            return f"0x{value:x}"
        name, start = found
        return f"{name}+0x{value - start:x}" if first in ("F", "S") else name
    if first in ("M", "m"):
        data = _field_bytes(node, raw, 6, "INVALIDMAC")
        if isinstance(data, str):
            return data
        data = data[::-1] if rest[-1:] == "R" else data
        sep = "" if first == "m" else "-" if rest[:1] == "F" else ":"
        return sep.join(f"{b:02x}" for b in data)
    if first in ("I", "i") and rest[:1] == "4":
        data = _field_bytes(node, raw, 4, "INVALIDIPv4")
        return data if isinstance(data, str) else _ip4(data, first == "i", _ip_reverse(rest[1:2]))
    if first in ("I", "i") and rest[:1] == "6":
        data = _field_bytes(node, raw, 16, "INVALIDIPv6")
        if isinstance(data, str):
            return data
        return _ip6_compressed(data) if first == "I" and rest[1:2] == "c" else _ip6(data, first == "I")
    if first in ("I", "i") and rest[:1] == "S":
        return _sockaddr_text(first, rest[1:], node, raw)
    if first == "U":
        data = _field_bytes(node, raw, 16, "INVALIDUUID")
        if isinstance(data, str):
            return data
        order = (3, 2, 1, 0, 5, 4, 7, 6, *range(8, 16)) if rest[:1] in ("L", "l") else tuple(range(16))
        hexes = [f"{data[i]:02X}" if rest[:1] in ("L", "B") else f"{data[i]:02x}" for i in order]
        return "".join(h + ("-" if n in (3, 5, 7, 9) else "") for n, h in enumerate(hexes))
    if first == "h":
        if not isinstance(node, DynamicArray):
            return f"ARG TYPE NOT FIELD BUT {node.tep_type}"
        word = int.from_bytes(raw[node.field.offset : node.field.offset + 4], sys.byteorder)
        start, length = word & 0xFFFF, word >> 16  # not made relative for __rel_loc, as there
        count = min(length, plen if plen is not None else 1)
        sep = {"C": ":", "D": "-", "N": ""}.get(rest[:1], " ")
        return sep.join(f"{b:02x}" for b in raw[start : start + max(count, 0)])
    value = node.num(raw)
    return f"0x{value:x}" if value else "(nil)"  # glibc's %p


def _sockaddr_text(first: str, letters: str, node: Node, raw: bytes) -> str:
    """print_ipsa_arg(): a ``struct sockaddr_storage`` field (``%pISpc``: port, compressed)."""
    port = first == "I" and letters[:1] == "p"
    letters = letters[1:] if port else letters
    compressed = first == "I" and letters[:1] == "c"
    letters = letters[1:] if compressed else letters
    if not isinstance(node, FieldRef):
        return f"ARG TYPE NOT FIELD BUT {node.tep_type}"
    f = node.field
    data = raw[f.offset : f.offset + f.size]
    family = int.from_bytes(data[:2], sys.byteorder) if len(data) >= 2 else 0
    if family == 2:  # AF_INET: family, port, address
        if f.size < 16:
            return "INVALIDIPv4"
        text = _ip4(data[4:8], first == "i", _ip_reverse(letters[:1]))
        return text + (f":{int.from_bytes(data[2:4], 'big')}" if port else "")
    if family == 10:  # AF_INET6: family, port, flowinfo, address
        if f.size < 28:
            return "INVALIDIPv6"
        address = data[8:24]
        text = _ip6_compressed(address) if compressed else _ip6(address, first == "I")
        return f"[{text}]:{int.from_bytes(data[2:4], 'big')}" if port else text
    return ""
