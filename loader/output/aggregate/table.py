"""Tables from decoded entries: one row per key (or per index of a group of globals), the key's
fields then the value's members as columns (named by BTF; nested structs flattened as
``outer.inner``), sorted by the first counter (integer column of the value) descending, the
first ``top`` rows kept and the rest counted; rows whose counters are all 0 are left out. ``map:NAME.column[I]=HEADING`` renames column I,
``=none`` leaves it out.
"""

from __future__ import annotations

from collections.abc import Sequence

from evspec.loader.object.map_dump import Decoded, Text, value_text
from evspec.loader.output.aggregate.detect import SLOTS, Aggregate

from evspec.span import Slotted

HIDDEN = "none"


class Table(Slotted):
    name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Decoded, ...], ...]
    left_out: int  # rows past the top


def table(agg: Aggregate, entries: tuple[tuple[Decoded, Decoded], ...], top: int | None) -> Table:
    if agg.group:
        columns, rows, first = _global_rows(agg, entries)
    else:
        columns, rows, first = _map_rows(entries)
    if first is not None:  # rows that counted nothing (an array's untouched entries) are left out
        rows = [row for row in rows if any(_is_int(v) and v for v in row[first:])]
        rows.sort(key=lambda row: -_number(row[first]))
    left_out = max(0, len(rows) - top) if top is not None else 0
    rows = rows[:len(rows) - left_out]
    keep = [i for i in range(len(columns)) if agg.columns.get(i) != HIDDEN]
    return Table(agg.name, tuple(agg.columns.get(i, columns[i]) for i in keep),
                 tuple(tuple(row[i] for i in keep) for row in rows), left_out)


def _map_rows(entries: tuple[tuple[Decoded, Decoded], ...]) -> tuple[list[str], list[list[Decoded]], int | None]:
    columns: list[str] = []
    rows: list[list[Decoded]] = []
    first: int | None = None
    for k, v in entries:
        keys = _flat("key", k)
        values = [(n, x) for n, x in _flat("value", v) if n != SLOTS]
        if not columns:
            columns = [n for n, _ in keys] + [n for n, _ in values]
            first = next((len(keys) + i for i, (_, x) in enumerate(values) if _is_int(x)), None)
        rows.append([x for _, x in keys] + [x for _, x in values])
    return columns, rows, first


def _global_rows(agg: Aggregate, entries: tuple[tuple[Decoded, Decoded], ...]) -> tuple[list[str], list[list[Decoded]], int | None]:
    value = entries[0][1] if entries else {}
    assert isinstance(value, dict)
    cells = [value.get(name) for name in agg.group]
    if all(isinstance(c, list) for c in cells):
        length = max((len(c) for c in cells if isinstance(c, list)), default=0)
        rows: list[list[Decoded]] = [[i, *(c[i] if isinstance(c, list) and i < len(c) else 0 for c in cells)]
                                     for i in range(length)]
        return ["index", *agg.group], rows, 1
    return list(agg.group), [[c if c is not None else 0 for c in cells]], None


def _flat(name: str, value: Decoded) -> list[tuple[str, Decoded]]:
    if isinstance(value, dict):
        return [(f"{name}.{n}" if name not in ("key", "value") else n, x)
                for k, v in value.items() for n, x in _flat(k, v)] if value else [(name, "")]
    return [(name, value)]


def _is_int(value: Decoded) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Decoded) -> int:
    return value if _is_int(value) else 0  # type: ignore[return-value]


def render_text(t: Table) -> str:
    cells = [[_cell(v) for v in row] for row in t.rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(t.columns)]
    numeric = [all(_is_int(row[i]) for row in t.rows) and bool(t.rows) for i in range(len(t.columns))]
    out = [f"{t.name}:", _line(list(t.columns), widths, numeric)]
    out.extend(_line(row, widths, numeric) for row in cells)
    if not t.rows:
        out.append("(no entries)")
    if t.left_out:
        out.append(f"... {t.left_out} more rows left out (--top)")
    return "\n".join(out) + "\n"


def _line(cells: Sequence[str], widths: Sequence[int], numeric: Sequence[bool]) -> str:
    return "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric, strict=True)).rstrip()


def _cell(value: Decoded) -> str:
    return str(value) if isinstance(value, Text) else value_text(value)


def render_json(t: Table) -> dict[str, object]:
    return {"table": t.name, "columns": list(t.columns), "rows": [list(row) for row in t.rows],
            "left_out": t.left_out}
