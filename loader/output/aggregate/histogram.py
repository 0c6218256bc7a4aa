"""Histograms from decoded entries, and their text in the layout of libbpf-tools'
``print_log2_hist`` / ``print_linear_hist`` (bcc's and bpftrace's ``hist()`` print the same
rows): a header naming the unit, then ``low -> high : count |stars|`` per log2 slot from slot 0
to the last non-empty one (slot 0 counts 0 and 1, slot i the values 2**i to 2**(i+1) - 1), or
``value : count |stars|`` per linear slot from the first non-empty to the last.
"""

from __future__ import annotations

from collections.abc import Iterator

from evspec.loader.object.map_dump import Decoded, value_text
from evspec.loader.output.aggregate.detect import SLOTS, Aggregate

from evspec.span import Slotted

STARS = 40
_WIDE_SLOT = 32  # past this log2 slot the columns widen (64-bit values), as print_log2_hist does


class Histogram(Slotted):
    name: str  # the map or global
    labels: tuple[tuple[str, Decoded], ...]  # the key's fields, the value's other members
    unit: str
    scale: str  # "log2" or "linear"
    step: int
    counts: tuple[int, ...]

    def buckets(self) -> list[tuple[int, int, int]]:
        """``(low, high, count)`` of the printed slots (inclusive bounds); none when all are 0."""
        used = [i for i, c in enumerate(self.counts) if c]
        if not used:
            return []
        if self.scale == "linear":
            return [(i * self.step, (i + 1) * self.step - 1, self.counts[i]) for i in range(used[0], used[-1] + 1)]
        return [(*log2_bounds(i), self.counts[i]) for i in range(used[-1] + 1)]


def log2_bounds(slot: int) -> tuple[int, int]:
    low, high = (1 << (slot + 1)) >> 1, (1 << (slot + 1)) - 1
    return (low - 1 if low == high else low), high


def histograms(agg: Aggregate, entries: tuple[tuple[Decoded, Decoded], ...]) -> list[Histogram]:
    """The histograms of ``agg``'s entries: one per key of a map whose values hold slots, one
    of the whole map when its values are counts (the key is the slot), one per index of a
    global array of slot structs (and one for a global of slots)."""
    if agg.var is not None:
        return [h for _, v in entries if isinstance(v, dict) for h in _global(agg, v.get(agg.var))]
    if entries and all(_count(v) is not None for _, v in entries):
        counts: dict[int, int] = {}
        for k, v in entries:
            if isinstance(k, int) and not isinstance(k, bool) and k >= 0:
                counts[k] = counts.get(k, 0) + (_count(v) or 0)
        size = max(counts, default=-1) + 1
        return [_make(agg, (), [counts.get(i, 0) for i in range(size)])]
    out = []
    for k, v in entries:
        slots, others = split_slots(v)
        if slots is not None:
            out.append(_make(agg, (*key_labels(k), *others), slots))
    return out


def split_slots(value: Decoded) -> tuple[list[int] | None, list[tuple[str, Decoded]]]:
    """A value's slots (its ``slots`` member, or its first integer array) and its other members."""
    if isinstance(value, list):
        return _ints(value), []
    if not isinstance(value, dict):
        return None, []
    name = SLOTS if _ints(value.get(SLOTS)) is not None else next(
        (k for k, v in value.items() if _ints(v) is not None), None)
    if name is None:
        return None, list(value.items())
    return _ints(value[name]), [(k, v) for k, v in value.items() if k != name]


def key_labels(key: Decoded) -> list[tuple[str, Decoded]]:
    return list(key.items()) if isinstance(key, dict) else [("key", key)]


def _global(agg: Aggregate, value: Decoded | None) -> Iterator[Histogram]:
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i, one in enumerate(value):
            slots, others = split_slots(one)
            if slots is not None and any(slots):
                yield _make(agg, (("index", i), *others), slots)
        return
    if value is not None:
        slots, others = split_slots(value)
        if slots is not None:
            yield _make(agg, tuple(others), slots)


def _make(agg: Aggregate, labels: tuple[tuple[str, Decoded], ...] | list[tuple[str, Decoded]],
          counts: list[int]) -> Histogram:
    return Histogram(agg.name, tuple(labels), agg.unit, agg.scale, agg.step, tuple(counts))


def _ints(value: Decoded | None) -> list[int] | None:
    if not isinstance(value, list) or not value:
        return None
    out = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    return out if len(out) == len(value) else None


def _count(value: Decoded) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def render_text(h: Histogram) -> str:
    """The label line (``NAME: field = value, ...``) and the histogram; a line saying it is
    empty when no slot counted anything."""
    label = ", ".join(f"{k} = {value_text(v)}" for k, v in h.labels)
    lines = [f"{h.name}: {label}" if label else f"{h.name}:"]
    buckets = h.buckets()
    if not buckets:
        return "\n".join([*lines, "     (no counts)"]) + "\n"
    top = max(count for _, _, count in buckets)
    if h.scale == "linear":
        lines.append(f"     {h.unit:<13} : count     distribution")
        lines.extend(f"        {low:<10} : {count:<8} |{stars(count, top, STARS)}|" for low, _, count in buckets)
    else:
        wide = len(buckets) - 1 > _WIDE_SLOT
        width, bar = (20, STARS // 2) if wide else (10, STARS)
        lines.append(f"{'':{15 if wide else 5}}{h.unit:<{29 if wide else 19}} : count    distribution")
        lines.extend(f"{low:>{width}} -> {high:<{width}} : {count:<8} |{stars(count, top, bar)}|"
                     for low, high, count in buckets)
    return "\n".join(lines) + "\n"


def stars(count: int, top: int, width: int) -> str:
    """``print_stars``: ``count`` of ``top`` as a bar of ``width`` (a ``+`` past it)."""
    n = min(count, top) * width // top if top else 0
    return "*" * n + " " * (width - n) + ("+" if count > top else "")


def render_json(h: Histogram) -> dict[str, object]:
    return {"histogram": h.name, "labels": dict(h.labels), "unit": h.unit, "slots": h.scale,
            "buckets": [list(b) for b in h.buckets()]}
