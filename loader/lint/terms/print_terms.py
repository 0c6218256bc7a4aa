"""The object terms that say how a map or global prints (``map:NAME.OPTION=VALUE``):

- ``hist=log2|linear|none``: a histogram of log2 or linear slots, or (``none``) a table;
- ``unit=WORD``: the histogram's unit, as its header names it (default ``value``);
- ``step=N``: a linear histogram's slot width (default 1);
- ``column[I]=HEADING``: the heading of table column I (from 0: the key's fields, then the
  value's), ``=none`` leaves the column out.

NAME is a map of the object or a ``.bss`` global. ``check_print_term`` checks one term against
the object; ``event_hints`` collects the valid ones of an event.
"""

from __future__ import annotations

from evspec.loader.btf.reader import Btf, BtfKind
from evspec.loader.object.spec import ObjectSpec

from evspec.ast import AllIndices, BpfEvent, IndexList, MapTerm, Number, Word
from evspec.codes import bpfconfig as codes
from evspec.diagnostics import Diagnostic, error
from evspec.lexicon import PRINT_MAP_OPTIONS
from evspec.span import Slotted


class Hints(Slotted):
    """What ``map:NAME.OPTION=`` terms say about printing NAME (a map or a global)."""

    hist: str | None = None  # "log2", "linear" or "none" (a table)
    unit: str | None = None  # the histogram's unit, as its header names it
    step: int = 1  # a linear histogram's slot width
    columns: tuple[tuple[int, str], ...] = ()  # column index -> heading ("none": left out)


PRINT_OPTIONS = PRINT_MAP_OPTIONS  # the syntax stage knows the same names
SCALES = ("log2", "linear", "none")


def check_print_term(term: MapTerm, spec: ObjectSpec) -> list[Diagnostic]:
    """Problems of one ``map:NAME.hist|unit|step|column`` term (the first one only)."""
    key = f"map:{term.map_name}.{term.option}"
    if spec.map(term.map_name) is None and term.map_name not in bss_globals(spec):
        names = sorted({m.name for m in spec.maps} | set(bss_globals(spec)))
        return [error(codes.NO_SUCH_MAP, f"no map or .bss global named '{term.map_name}' in the object",
                      term.name_span, help=(f"maps and .bss globals: {', '.join(names) or 'none'}",))]
    if term.option != "column" and term.indices is not None:
        return [error(codes.BAD_PRINT_TERM, f"{key} takes no index list", term.indices.span,
                      help=(f"write {key}=...",))]
    if term.option == "column" and not isinstance(term.indices, IndexList):
        return [error(codes.BAD_PRINT_TERM, f"{key} needs the column's index: {key}[I]=HEADING",
                      term.indices.span if isinstance(term.indices, AllIndices) else term.key_span,
                      help=(f"write map:{term.map_name}.column[0]=HEADING (columns count from 0)",))]
    if term.value is None:
        return [error(codes.BAD_PRINT_TERM, f"{key} has no value (missing '=')", term.key_span,
                      help=(_WANTS[term.option],))]
    value = term.value
    if term.option == "step":
        if not isinstance(value, Number) or value.value <= 0:
            return [error(codes.BAD_PRINT_TERM, f"{key} needs a positive number, not '{value.text}'",
                          value.span, help=(_WANTS["step"],))]
        return []
    if term.option == "hist" and value.text not in SCALES:
        return [error(codes.BAD_PRINT_TERM, f"{key}={value.text}: the slots are log2, linear or none",
                      value.span, help=(_WANTS["hist"],))]
    if term.option == "column" and isinstance(term.indices, IndexList) and (
            len(term.indices.items) != 1 or term.indices.items[0].last is not None):
        return [error(codes.BAD_PRINT_TERM, f"{key} names one column at a time", term.indices.span,
                      help=(_WANTS["column"],))]
    return []


_WANTS = {
    "hist": "write hist=log2 (slot i counts 2**i to 2**(i+1)-1), hist=linear (slot i counts i*step) or "
            "hist=none (a table)",
    "unit": "write unit=WORD: the unit the histogram's header names (usecs, bytes, ...)",
    "step": "write step=N: the width of a linear histogram's slots",
    "column": "write column[I]=HEADING, or column[I]=none to leave column I out",
}


def bss_globals(spec: ObjectSpec) -> list[str]:
    """The names of the object's ``.bss`` variables."""
    if not spec.btf:
        return []
    btf = Btf(spec.btf)
    out: list[str] = []
    for m in spec.maps:
        if m.section == ".bss" and m.value_type_id is not None:
            section = btf.resolve(m.value_type_id)
            if section.kind == BtfKind.DATASEC:
                out.extend(btf.type(info.type).name for info in section.secinfos)
    return out


def event_hints(event: BpfEvent) -> dict[str, Hints]:
    """NAME → what the event's print terms say (the object checker refused the invalid ones;
    of a term given twice, the last one counts)."""
    options: dict[str, dict[str, str]] = {}
    steps: dict[str, int] = {}
    columns: dict[str, dict[int, str]] = {}
    for term in event.terms.items if event.terms else ():
        if not isinstance(term, MapTerm) or term.option not in PRINT_OPTIONS or term.value is None:
            continue
        name = term.map_name
        if term.option == "column" and isinstance(term.indices, IndexList):
            columns.setdefault(name, {})[term.indices.items[0].first.value] = term.value.text
        elif term.option == "step" and isinstance(term.value, Number):
            steps[name] = term.value.value
        elif term.option in ("hist", "unit") and isinstance(term.value, Word):
            options.setdefault(name, {})[term.option] = term.value.text
    return {name: Hints(hist=options.get(name, {}).get("hist"), unit=options.get(name, {}).get("unit"),
                        step=steps.get(name, 1), columns=tuple(sorted(columns.get(name, {}).items())))
            for name in {*options, *steps, *columns}}
