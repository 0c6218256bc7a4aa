"""``var:NAME=VALUE`` terms (COMPAT 1.14): the global variables of an object, the offline checks of
the terms against them, and the object with the values written into its data maps.

A global variable is a BTF ``VAR`` listed by the ``DATASEC`` of its section (``.rodata`` for a
``const volatile``, ``.data``, ``.bss``, and their ``.rodata.NAME``-style siblings); its offset is
its ELF symbol's (clang leaves the DATASEC offsets 0, libbpf fixes them the same way). The syntax
stage (evspec.rules) checks a term's shape; here: the variable exists, its type is one a term can
set (integers, bools, enums, floats, char arrays; typedefs and qualifiers looked through), and the
value fits it. Spans point into the event string.
"""

from __future__ import annotations

import difflib
import math
import struct

from evspec.loader.btf.reader import INT_BOOL, INT_SIGNED, Btf, BtfKind, BtfType
from evspec.loader.externs.resolve import type_text
from evspec.loader.object.spec import ObjectSpec

from evspec.ast import BpfEvent, Number, VarTerm, Word
from evspec.codes import bpfconfig as codes
from evspec.diagnostics import Diagnostic, EvspecError, error
from evspec.span import Slotted, replace

_HELP = ("var:NAME=VALUE takes an integer, true/false (or 1/0), an enumerator's name, a quoted string, or a "
         "number for a float ('0.25' quoted)")
_SETTABLE = "var: sets integers, bools, enums, floats and char arrays"
_FLOAT_FORMATS = {2: ("e", "a half-precision float"), 4: ("f", "a float"), 8: ("d", "a double")}


class GlobalVar(Slotted):
    """A global variable: where it lives (the data map of its section, at ``offset``) and its type."""

    name: str
    map_name: str
    offset: int
    size: int
    type_id: int


def global_variables(spec: ObjectSpec, btf: Btf) -> dict[str, GlobalVar]:
    """Every variable of the object's data sections, by name, in section and offset order."""
    offsets = {layout.name: dict(layout.symbols) for layout in spec.layouts}
    out: dict[str, GlobalVar] = {}
    for m in spec.maps:
        if m.initial_value is None or m.value_type_id is None:
            continue
        datasec = btf.type(m.value_type_id)
        if datasec.kind != BtfKind.DATASEC:
            continue
        symbols = offsets.get(m.section, {})
        for info in datasec.secinfos:
            var = btf.type(info.type)
            if var.kind != BtfKind.VAR:
                continue
            offset = symbols.get(var.name, info.offset)
            out[var.name] = GlobalVar(var.name, m.name, offset, btf.size_of(var.type), var.type)
    return dict(sorted(out.items(), key=lambda kv: (kv[1].map_name, kv[1].offset)))


def check_var_terms(event: BpfEvent, spec: ObjectSpec) -> list[Diagnostic]:
    """The problems of ``event``'s var: terms against ``spec`` (none for a term the syntax stage
    refuses already)."""
    return _plan(event, spec)[0]


def apply_var_terms(event: BpfEvent, spec: ObjectSpec) -> ObjectSpec:
    """``spec`` with the values of ``event``'s var: terms in its data maps' initial values (the last
    term for a variable wins); raises EvspecError when a term is refused."""
    problems, writes = _plan(event, spec)
    if problems:
        raise EvspecError(problems)
    if not writes:
        return spec
    contents = {m.name: bytearray(m.initial_value or bytes(m.value_size)) for m in spec.maps
                if m.name in {var.map_name for var, _ in writes}}
    for var, raw in writes:
        contents[var.map_name][var.offset:var.offset + len(raw)] = raw
    maps = tuple(replace(m, initial_value=bytes(contents[m.name])) if m.name in contents else m for m in spec.maps)
    return replace(spec, maps=maps)


def _plan(event: BpfEvent, spec: ObjectSpec) -> tuple[list[Diagnostic], list[tuple[GlobalVar, bytes]]]:
    terms = [t for t in event.var_terms if t.name and "." not in t.name and t.value is not None]
    if not terms:
        return [], []
    btf = Btf(spec.btf) if spec.btf else None
    variables = global_variables(spec, btf) if btf is not None else {}
    problems: list[Diagnostic] = []
    writes: list[tuple[GlobalVar, bytes]] = []
    for term in terms:
        var = variables.get(term.name)
        if var is None or btf is None:
            problems.append(error(codes.NO_SUCH_VARIABLE, f"the object has no global variable '{term.name}'",
                                  term.name_span, help=_globals_help(term.name, variables, btf is not None)))
            continue
        found = _encode(btf, var, term)
        if isinstance(found, Diagnostic):
            problems.append(found)
        else:
            writes.append((var, found))
    return problems, writes


def _globals_help(name: str, variables: dict[str, GlobalVar], has_btf: bool) -> tuple[str, ...]:
    if not has_btf:
        return ("the object has no BTF (build it with clang -g): its variables cannot be found",)
    if not variables:
        return ("the object has no global variables",)
    out = []
    close = difflib.get_close_matches(name, list(variables), n=1)
    if close:
        out.append(f"did you mean '{close[0]}'?")
    out.append("global variables of the object: " + ", ".join(variables))
    return tuple(out)


def _encode(btf: Btf, var: GlobalVar, term: VarTerm) -> bytes | Diagnostic:
    """The bytes ``term``'s value stores in ``var``, or why it cannot."""
    assert term.value is not None
    t = btf.resolve(var.type_id)
    if t.kind == BtfKind.INT and t.int_encoding & INT_BOOL:
        if isinstance(term.value, Word) and not term.value.quoted and term.value.text in ("true", "false"):
            return bytes([term.value.text == "true"]).ljust(var.size, b"\0")
        if isinstance(term.value, Number) and term.value.value in (0, 1):  # as C programmers write it
            return bytes([term.value.value]).ljust(var.size, b"\0")
        if isinstance(term.value, Number):
            return _bad(term, f"{term.value.value} is out of range for '{var.name}' (a bool: 0 or 1, "
                              "or true or false)")
        return _bad(term, f"'{var.name}' is a bool: it takes true or false (or 1 or 0)")
    if t.kind == BtfKind.INT:
        return _integer(var, term, t.int_bits or 8 * t.size, bool(t.int_encoding & INT_SIGNED), _type_label(t))
    if t.kind in (BtfKind.ENUM, BtfKind.ENUM64):
        return _enumerator(var, term, t)
    text_size = _char_array_size(btf, t)
    if text_size is not None:
        if not isinstance(term.value, Word):
            return _bad(term, f"'{var.name}' is a char[{text_size}]: it takes a string ('text')")
        raw = term.value.text.encode()
        if len(raw) >= text_size:
            return _bad(term, f"'{term.value.text}' is {len(raw)} bytes: '{var.name}' is a char[{text_size}] "
                              f"(at most {text_size - 1} bytes and the NUL)")
        return raw.ljust(var.size, b"\0")
    if t.kind == BtfKind.FLOAT and t.size in _FLOAT_FORMATS:
        return _float(var, term, t.size)
    return error(codes.VARIABLE_NOT_SETTABLE, f"variable '{var.name}' has type {type_text(btf, var.type_id)}: "
                 f"{_SETTABLE}", term.name_span, help=("set it in the program's source instead",))


def _float(var: GlobalVar, term: VarTerm, size: int) -> bytes | Diagnostic:
    assert term.value is not None
    code, label = _FLOAT_FORMATS[size]
    value: float | None = None
    if isinstance(term.value, Number):
        value = float(term.value.value)
    elif term.value.quoted:
        try:
            value = float(term.value.text)
        except ValueError:
            value = None
    if value is None:
        return _bad(term, f"'{var.name}' is {label}: it takes a number (quoted when it has a point, a sign or "
                          "an exponent: '0.25', '-1e3')")
    try:
        raw = struct.pack(f"<{code}", value)
    except OverflowError:
        raw = b""
    if not raw or (math.isinf(struct.unpack(f"<{code}", raw)[0]) and not math.isinf(value)):
        return _bad(term, f"{term.value.text} is out of range for '{var.name}' ({label})")
    return raw


def _integer(var: GlobalVar, term: VarTerm, bits: int, signed: bool, label: str) -> bytes | Diagnostic:
    assert term.value is not None
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    value = _integer_value(term.value)
    if value is None:
        return _bad(term, f"'{var.name}' is {label}: it takes an integer from {low} to {high}"
                          + (" (a negative one quoted: '-5')" if signed else ""))
    if not low <= value <= high:
        return _bad(term, f"{value} is out of range for '{var.name}' ({label}: {low} to {high})")
    return value.to_bytes(var.size, "little", signed=signed)


def _integer_value(value: Number | Word) -> int | None:
    """A number, or a quoted integer (the only way to write a negative one: the grammar's numbers
    have no sign)."""
    if isinstance(value, Number):
        return value.value
    if not value.quoted:
        return None
    try:
        return int(value.text, 0)
    except ValueError:
        return None


def _enumerator(var: GlobalVar, term: VarTerm, t: BtfType) -> bytes | Diagnostic:
    assert term.value is not None
    names = [e.name for e in t.enumerators]
    if isinstance(term.value, Word) and not term.value.quoted:
        found = next((e for e in t.enumerators if e.name == term.value.text), None)
        if found is not None:
            return (found.value & ((1 << (8 * var.size)) - 1)).to_bytes(var.size, "little")
    close = difflib.get_close_matches(term.value.text, names, n=1) if isinstance(term.value, Word) else []
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return _bad(term, f"'{var.name}' is an enum {t.name}: it takes one of {', '.join(names)}{hint}")


def _char_array_size(btf: Btf, t: BtfType) -> int | None:
    """The length of a ``char[N]`` (N > 0), or None for any other type."""
    if t.kind != BtfKind.ARRAY or t.array is None or t.array.nelems == 0:
        return None
    element = btf.resolve(t.array.type)
    return t.array.nelems if element.kind == BtfKind.INT and element.size == 1 else None


def _type_label(t: BtfType) -> str:
    bits = t.int_bits or 8 * t.size
    return f"a signed {bits}-bit integer" if t.int_encoding & INT_SIGNED else f"an unsigned {bits}-bit integer"


def _bad(term: VarTerm, message: str) -> Diagnostic:
    assert term.value is not None
    return error(codes.BAD_VARIABLE_VALUE, message, term.value.span, help=(_HELP,))
