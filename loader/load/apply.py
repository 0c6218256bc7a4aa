"""Applying the map terms of BPF events to live maps, the way ``perf record`` does after opening
its events (perf's ``bpf__apply_obj_config``).

* ``value`` updates write the value at every selected key. Key ranges stay ranges: a range of
  ``KERNEL_FILL_MIN`` keys or more is written from inside the kernel by a small program (see
  ``array_fill``), the rest with BPF_MAP_UPDATE_BATCH, ``BATCH_CHUNK`` elements a call, their keys
  and values made as bytes in bulk;
* ``event`` updates store, at every selected key K, the descriptor of the event's instance on the
  K-th CPU slot. perf's checks come first, in its order and with its words: the event opened for
  more than one thread, an inheriting event, an event type a PERF_EVENT_ARRAY cannot hold, a key
  without a CPU slot.
"""

from __future__ import annotations

import contextlib
import sys
from array import array
from collections.abc import Iterable, Iterator, Mapping

from evspec.loader.abi.perf_ids import PerfType, SwConfig
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.lint.terms.maps import (
    MSG_EVTINH,
    MSG_EVTTYPE,
    MSG_NO_EVENT,
    KeyRange,
    MapUpdate,
    range_keys,
)
from evspec.loader.load.array_fill import KernelFill
from evspec.loader.load.live import LiveMap, LiveObject

from evspec.codes import kernel as codes
from evspec.span import Slotted

# Codes of applying map terms (catalogued in evspec.codes.kernel).
CODE_APPLY = codes.APPLY_FAILED
CODE_NO_EVENT = codes.NO_EVENT_FOR_MAP

APPLY_PREFIX = "ERROR: Apply config to BPF failed: "

# perf's bpf_loader_errno values of the apply-time failures (the exit status is -errno & 0xff)
ERRNO_MAPSIZE = 3918
ERRNO_EVTDIM = 3919
ERRNO_EVTINH = 3920
ERRNO_EVTTYPE = 3921

MSG_EVTDIM = "Cannot set event to BPF map in multi-thread tracing"  # MSG_EVTINH, MSG_EVTTYPE: object/terms/maps.py
MSG_MAPSIZE = "Invalid map size for event setting"


class ApplyError(ObjectError):
    """A map term cannot be applied; ``perf_message`` is what perf prints after ``APPLY_PREFIX``
    and ``perf_errno`` perf's error number (``exit_status`` is perf's exit status for it)."""

    def __init__(self, message: str, perf_message: str, perf_errno: int) -> None:
        super().__init__(CODE_APPLY, message, perf_message=perf_message)
        self.perf_errno = perf_errno

    @property
    def exit_status(self) -> int:
        return -self.perf_errno & 0xFF


class EventInstances(Slotted):
    """An opened event as the map terms see it: one descriptor per CPU slot (of its first thread)."""

    name: str
    perf_type: int
    config: int
    inherit: bool
    threads: int
    fds: tuple[int, ...]

    @property
    def is_bpf_output(self) -> bool:
        return self.perf_type == PerfType.SOFTWARE and self.config == SwConfig.BPF_OUTPUT

    @property
    def storable(self) -> bool:
        return self.is_bpf_output or self.perf_type in (PerfType.HARDWARE, PerfType.RAW)


BATCH_CHUNK = 1 << 16  # elements per BPF_MAP_UPDATE_BATCH: bounds the key and value buffers
KERNEL_FILL_MIN = 4096  # from this many keys on, loading the fill program costs less than a batch


def _live_ranges(update: MapUpdate, size: int) -> tuple[KeyRange, ...]:
    """The inclusive key ranges of ``update`` in the live map of ``size`` entries: the plan names
    no keys for a term over every key of a map sized at creation (a PERF_EVENT_ARRAY declared
    with 0 entries gets one per possible CPU), so those are all ``size`` keys."""
    if update.keys:
        return update.keys
    return ((0, size - 1),) if size > 0 else ()


def _batches(ranges: Iterable[KeyRange], chunk: int) -> Iterator[list[tuple[int, int]]]:
    """The keys of ``ranges`` in groups of (first key, count) pieces, ``chunk`` keys a group at
    most: one BPF_MAP_UPDATE_BATCH each, however many small ranges a group gathers."""
    group: list[tuple[int, int]] = []
    size = 0
    for first, last in ranges:
        start = first
        while start <= last:
            count = min(last + 1 - start, chunk - size)
            group.append((start, count))
            size += count
            start += count
            if size == chunk:
                yield group
                group, size = [], 0
    if group:
        yield group


def keys_bytes(first: int, count: int, size: int) -> bytes:
    """Keys ``first`` ... ``first + count - 1`` as the kernel reads them (host byte order, ``size``
    bytes each), packed at C speed for 4- and 8-byte keys."""
    code = {4: "I", 8: "Q"}.get(size)
    if code is not None and array(code).itemsize == size:
        return array(code, range(first, first + count)).tobytes()
    return b"".join(k.to_bytes(size, sys.byteorder) for k in range(first, first + count))


def check_event_update(update: MapUpdate, event: EventInstances, keys: Iterable[int]) -> None:
    """perf's apply-time checks of ``map:NAME.event=EVT``; raises ApplyError."""
    where = f"map '{update.map_name}', event '{event.name}'"
    if event.threads != 1:
        raise ApplyError(
            f"{where}: the event is opened for {event.threads} threads; a PERF_EVENT_ARRAY slot "
            "holds one descriptor per CPU", MSG_EVTDIM, ERRNO_EVTDIM
        )
    if event.inherit:
        raise ApplyError(
            f"{where}: the event inherits to child tasks; define it with no-inherit or record with -i",
            MSG_EVTINH,
            ERRNO_EVTINH,
        )
    if not event.storable:
        raise ApplyError(
            f"{where}: a PERF_EVENT_ARRAY can hold only raw, hardware and bpf-output events, "
            f"not perf type {event.perf_type}",
            MSG_EVTTYPE,
            ERRNO_EVTTYPE,
        )
    too_big = next((k for k in keys if k >= len(event.fds)), None)
    if too_big is not None:
        raise ApplyError(
            f"{where}: key {too_big} has no CPU slot (the event has {len(event.fds)}); "
            "select the keys with an index list",
            MSG_MAPSIZE,
            ERRNO_MAPSIZE,
        )


def _write_value(kernel: Kernel, filler: KernelFill, lm: LiveMap, value: bytes, ranges: Iterable[KeyRange]) -> int:
    """Store ``value`` at the keys of ``ranges``: long ranges with the fill program, the rest (and
    any the fill program could not do) with batches; returns the number of keys written."""
    key_size, value_size = lm.spec.key_size, lm.spec.value_size
    written = 0
    rest: list[KeyRange] = []
    for first, last in ranges:
        count = last + 1 - first
        if count >= KERNEL_FILL_MIN and filler.fill(lm, first, count, value):
            written += count
        else:
            rest.append((first, last))
    for group in _batches(rest, BATCH_CHUNK):
        count = sum(n for _, n in group)
        written += kernel.update_batch(
            lm.fd,
            b"".join(keys_bytes(start, n, key_size) for start, n in group),
            value * count,
            key_size=key_size,
            value_size=value_size,
            what=f"map '{lm.name}'",
        )
    return written


def _write_event(
    kernel: Kernel, lm: LiveMap, update: MapUpdate, events: Mapping[str, EventInstances], ranges: tuple[KeyRange, ...]
) -> int:
    """Store the descriptors of ``update.event``'s CPU slots at the keys of ``ranges`` after
    perf's checks; returns the number of keys written."""
    assert update.event is not None
    event = events.get(update.event)
    if event is None:
        raise ObjectError(
            CODE_NO_EVENT, f"map '{update.map_name}': no event named '{update.event}' was opened",
            perf_message=MSG_NO_EVENT,
        )
    check_event_update(update, event, range_keys(ranges))
    key_size, value_size = lm.spec.key_size, lm.spec.value_size
    return kernel.update_batch(
        lm.fd,
        b"".join(keys_bytes(first, last + 1 - first, key_size) for first, last in ranges),
        b"".join(event.fds[k].to_bytes(value_size, sys.byteorder) for k in range_keys(ranges)),
        key_size=key_size,
        value_size=value_size,
        what=f"map '{lm.name}'",
    )


def apply_updates(
    kernel: Kernel,
    live: LiveObject,
    updates: Iterable[MapUpdate],
    events: Mapping[str, EventInstances],
    *,
    map_sizes: Mapping[str, int] | None = None,
) -> int:
    """Apply ``updates`` to the maps of ``live`` in order; returns the number of elements written.

    ``events`` maps event names to their opened instances (the first event of a name, as perf);
    ``map_sizes`` gives the live size of maps whose spec says 0 entries (perf event arrays sized
    to the CPUs at creation). The fill programs loaded on the way are closed before returning.
    """
    written = 0
    sizes = map_sizes or {}
    filler = KernelFill(kernel)
    try:
        for update in updates:
            lm = live.map(update.map_name)
            ranges = _live_ranges(update, sizes.get(lm.name, lm.spec.max_entries))
            if update.event is not None:
                written += _write_event(kernel, lm, update, events, ranges)
            else:
                assert update.value is not None
                written += _write_value(kernel, filler, lm, update.value, ranges)
    except BaseException:
        with contextlib.suppress(KernelError):  # the first failure is the one to report
            filler.close()
        raise
    filler.close()
    return written
