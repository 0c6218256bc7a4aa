"""record's histograms and tables (loader/output/aggregate), offline: the text of libbpf-tools'
printers, byte for byte on the reference runs' own buckets, the tables' order, top and columns,
per-CPU sums, and the JSON forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evspec.loader.object.map_dump import Text
from evspec.loader.object.spec import MapSpec, MapType
from evspec.loader.output.aggregate.detect import Aggregate
from evspec.loader.output.aggregate.histogram import (
    Histogram,
    histograms,
    log2_bounds,
    render_json,
    render_text,
    stars,
)
from evspec.loader.output.aggregate.read import sum_cpus
from evspec.loader.output.aggregate.table import render_json as table_json
from evspec.loader.output.aggregate.table import render_text as table_text
from evspec.loader.output.aggregate.table import table

REFS = Path(__file__).parent / "data" / "libbpf_tools"


def _map(name: str = "hists", type_: int = MapType.HASH) -> MapSpec:
    return MapSpec(name, type_, 4, 8, 16, 0, 0, False, ".maps", 0, None, None, None, False, 0, 0, None, (), False, ())


def _agg(kind: str = "histogram", **kw: object) -> Aggregate:
    return Aggregate(kw.pop("name", "hists"), _map(), kw.pop("var", None), kind, **kw)  # type: ignore[arg-type]


def _reference(tool: str) -> dict[str, object]:
    return json.loads((REFS / f"{tool}.json").read_text())


@pytest.mark.parametrize("tool", ["runqlat", "biolatency", "bitesize", "funclatency", "runqlen"])
def test_a_reference_histogram_prints_as_the_tool_printed_it(tool: str) -> None:
    """The reference's buckets, printed: the header and every row as the tool's own binary."""
    ref = _reference(tool)
    hist = ref["histograms"][0]  # type: ignore[index]
    buckets = hist["buckets"]
    scale = hist["slots"]
    if scale == "log2":
        counts = [count for _, _, count in buckets]
        step = 1
    else:
        step = buckets[1][0] - buckets[0][0] if len(buckets) > 1 else 1
        counts = [0] * (buckets[0][0] // step) + [count for _, _, count in buckets]
    text = render_text(Histogram("hists", (), hist["unit"], scale, step, tuple(counts)))
    lines = text.splitlines()[1:]
    stdout = ref["stdout"]
    header = next(i for i, line in enumerate(stdout) if line.strip().startswith(hist["unit"] + " "))  # type: ignore[union-attr]
    assert lines == stdout[header:header + len(lines)]  # type: ignore[index]
    assert [list(b) for b in Histogram("h", (), "u", scale, step, tuple(counts)).buckets()] == buckets


def test_log2_slots_are_libbpf_tools_log2l_buckets() -> None:
    assert [log2_bounds(i) for i in range(4)] == [(0, 1), (2, 3), (4, 7), (8, 15)]
    assert log2_bounds(63) == (1 << 63, (1 << 64) - 1)


def test_wide_log2_histograms_widen_their_columns_as_print_log2_hist() -> None:
    counts = [0] * 40
    counts[39] = 1
    lines = render_text(Histogram("h", (), "nsecs", "log2", 1, tuple(counts))).splitlines()
    assert lines[1] == f"{'':15}{'nsecs':<29} : count    distribution"
    assert lines[-1] == f"{1 << 39:>20} -> {(1 << 40) - 1:<20} : 1        |{'*' * 20}|"


def test_stars_scale_to_the_largest_count() -> None:
    assert stars(37, 37, 40) == "*" * 40
    assert stars(1, 37, 40) == "*" + " " * 39
    assert stars(0, 0, 40) == " " * 40


def test_an_empty_histogram_says_so() -> None:
    assert render_text(Histogram("hists", (("key", 1),), "usecs", "log2", 1, (0, 0))) == \
        "hists: key = 1\n     (no counts)\n"


def test_one_histogram_per_key_labelled_by_key_fields_and_other_members() -> None:
    entries = (({"pid": 7, "dev": 3}, {"slots": [0, 2, 1], "comm": Text("evspec-wl")}),
               ({"pid": 9, "dev": 3}, {"slots": [1, 0, 0], "comm": Text("sh")}))
    got = histograms(_agg(unit="usecs"), entries)
    assert [h.labels for h in got] == [(("pid", 7), ("dev", 3), ("comm", "evspec-wl")),
                                       (("pid", 9), ("dev", 3), ("comm", "sh"))]
    assert got[0].counts == (0, 2, 1)
    assert render_text(got[0]).splitlines()[0] == 'hists: pid = 7, dev = 3, comm = "evspec-wl"'


def test_an_array_of_counts_is_one_histogram_keyed_by_slot() -> None:
    got = histograms(_agg(name="calls_hist"), ((0, 1), (1, 0), (2, 4)))
    assert [(h.labels, h.counts) for h in got] == [((), (1, 0, 4))]


def test_a_global_array_of_slot_structs_is_one_histogram_per_counted_index() -> None:
    value = {"hists": [{"slots": [0, 0]}, {"slots": [3, 1]}, {"slots": [0, 0]}, {"slots": [0, 5]}]}
    got = histograms(_agg(var="hists"), ((0, value),))
    assert [(h.labels, h.counts) for h in got] == [((("index", 1),), (3, 1)), ((("index", 3),), (0, 5))]
    flat = histograms(_agg(name="hist", var="hist"), ((0, {"hist": [0, 4, 2]}),))
    assert [(h.labels, h.counts) for h in flat] == [((), (0, 4, 2))]


def test_linear_histograms_print_from_the_first_counted_slot_with_their_step() -> None:
    h = Histogram("hists", (), "MHz", "linear", 200, (0, 0, 3, 0, 1))
    assert h.buckets() == [(400, 599, 3), (600, 799, 0), (800, 999, 1)]
    assert render_text(h).splitlines()[1:3] == ["     MHz           : count     distribution",
                                                f"        400        : 3        |{'*' * 40}|"]


def test_tables_sort_by_the_first_counter_and_say_what_the_top_left_out() -> None:
    entries = tuple((k, {"count": c, "total_ns": 10 * c, "comm": Text("")}) for k, c in
                    ((0, 5), (1, 0), (2, 9), (3, 7)))
    t = table(_agg("table", name="data"), entries, top=2)
    assert t.columns == ("key", "count", "total_ns", "comm")
    assert [row[:2] for row in t.rows] == [(2, 9), (3, 7)]
    assert t.left_out == 1  # 0 (count 5); key 1 counted nothing and is not a row at all
    text = table_text(t)
    assert text.splitlines() == ["data:", "key  count  total_ns  comm", "  2      9        90", "  3      7        70",
                                 "... 1 more rows left out (--top)"]
    assert table_json(t) == {"table": "data", "columns": ["key", "count", "total_ns", "comm"],
                             "rows": [[2, 9, 90, ""], [3, 7, 70, ""]], "left_out": 1}


def test_columns_are_renamed_or_left_out_by_their_index() -> None:
    entries = (({"name": Text("virtio1-req.0"), "cpu": 0}, {"count": 3, "total_time": 40, "max_time": 20,
                                                           "slots": [0] * 4}),)
    agg = _agg("table", name="infos", columns={0: "HARDIRQ", 1: "none", 2: "TOTAL_count"})
    t = table(agg, entries, top=None)
    assert t.columns == ("HARDIRQ", "TOTAL_count", "total_time", "max_time")  # slots are no column
    assert t.rows == (("virtio1-req.0", 3, 40, 20),)


def test_globals_of_one_length_are_one_table_of_rows_by_index() -> None:
    agg = Aggregate("counts,time", _map("softirqs.bss", MapType.ARRAY), "counts", "table",
                    group=("counts", "time"))
    value = {"counts": [4, 0, 9], "time": [40, 0, 90], "other": 1}
    t = table(agg, ((0, value),), top=None)
    assert t.columns == ("index", "counts", "time") and t.rows == ((2, 9, 90), (0, 4, 40))
    scalars = Aggregate("total,misses", _map("cachesta.bss", MapType.ARRAY), "total", "table",
                        group=("total", "misses"))
    assert table(scalars, ((0, {"total": 10, "misses": 2}),), top=None).rows == ((10, 2),)


def test_per_cpu_values_are_summed() -> None:
    assert sum_cpus([{"slots": [1, 2], "comm": Text("a")}, {"slots": [3, 0], "comm": Text("b")}]) == \
        {"slots": [4, 2], "comm": "a"}
    assert sum_cpus([5, 6, 7]) == 18


def test_histogram_json_schema() -> None:
    h = Histogram("hists", (("key", 4294967295), ("comm", Text("sh"))), "usecs", "log2", 1, (0, 2, 1))
    body = render_json(h)
    assert body == {"histogram": "hists", "labels": {"key": 4294967295, "comm": "sh"}, "unit": "usecs",
                    "slots": "log2", "buckets": [[0, 1, 0], [2, 3, 2], [4, 7, 1]]}
    json.dumps(body)
