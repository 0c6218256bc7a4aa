"""The hook ``record`` calls: what the objects' programs counted, printed at exit and every
``--interval`` (then cleared, as the tools clear with ``-i``)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from evspec.loader.lint.terms.print_terms import Hints
from evspec.loader.load.live import LiveObject
from evspec.loader.object.map_dump import Decoded
from evspec.loader.output.aggregate import histogram, table
from evspec.loader.output.aggregate.detect import Aggregate, detect
from evspec.loader.output.aggregate.read import MapAccess, clear, read_entries

from evspec.cpus import possible_cpus
from evspec.span import Slotted

DEFAULT_TOP = 20


class _Source(Slotted):
    live: LiveObject
    aggregates: tuple[Aggregate, ...]


class AggregatePrinter:
    """Reads the aggregates of ``objects`` (each with the hints of its event's terms)."""

    def __init__(self, kernel: MapAccess, objects: Sequence[tuple[LiveObject, dict[str, Hints]]],
                 top: int | None = DEFAULT_TOP) -> None:
        self.kernel = kernel
        self.top = top
        self.sources = [_Source(live, tuple(detect(live.spec, hints))) for live, hints in objects]
        self.cpus = possible_cpus()

    def __bool__(self) -> bool:
        return any(s.aggregates for s in self.sources)

    def snapshot(self, *, reset: bool) -> list[histogram.Histogram | table.Table]:
        """Every aggregate as it is now; ``reset`` clears each after reading it."""
        out: list[histogram.Histogram | table.Table] = []
        for source in self.sources:
            spec = source.live.spec
            for agg in source.aggregates:
                fd = source.live.map(agg.map.name).fd
                entries = read_entries(self.kernel, spec, agg.map, fd, self.cpus)
                out.extend(_shape(agg, entries.decoded, self.top))
                if reset:
                    clear(self.kernel, spec, agg, fd, entries.raw_keys, self.cpus)
        return out

    def text(self, *, reset: bool, stamp: bool = False) -> str:
        parts = [f"[{time.strftime('%H:%M:%S')}]\n"] if stamp else []
        for item in self.snapshot(reset=reset):
            parts.append("\n")
            parts.append(histogram.render_text(item) if isinstance(item, histogram.Histogram)
                         else table.render_text(item))
        return "".join(parts)

    def json(self, *, reset: bool, at: str) -> str:
        lines = []
        for item in self.snapshot(reset=reset):
            body = histogram.render_json(item) if isinstance(item, histogram.Histogram) else table.render_json(item)
            lines.append(json.dumps({**body, "at": at}) + "\n")
        return "".join(lines)


def _shape(agg: Aggregate, entries: tuple[tuple[Decoded, Decoded], ...],
           top: int | None) -> list[histogram.Histogram | table.Table]:
    """A histogram map whose slots counted nothing but whose values count other things
    (hardirqs without -d) prints as the table of those."""
    if agg.kind == "histogram":
        hists = histogram.histograms(agg, entries)
        if agg.var is None and entries and not any(any(h.counts) for h in hists) and any(
                any(isinstance(v, int) and not isinstance(v, bool) for _, v in histogram.split_slots(value)[1])
                for _, value in entries):
            return [table.table(agg, entries, top)]
        return list(hists) or [histogram.Histogram(agg.name, (), agg.unit, agg.scale, agg.step, ())]
    return [table.table(agg, entries, top)]
