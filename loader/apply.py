"""Applying the map terms of BPF events to live maps, the way ``perf record`` does after opening
its events (perf's ``bpf__apply_obj_config``).

* ``value`` updates write the value at every selected key (one BPF_MAP_UPDATE_BATCH per term);
* ``event`` updates store, at every selected key K, the descriptor of the event's instance on the
  K-th CPU slot. perf's checks come first, in its order and with its words: the event opened for
  more than one thread, an inheriting event, an event type a PERF_EVENT_ARRAY cannot hold, a key
  without a CPU slot.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel
from evspec.loader.live import LiveObject
from evspec.loader.map_terms import MapUpdate
from evspec.loader.perf_abi import PerfType, SwConfig

# Codes of the recording session (to be catalogued in evspec.codes by the integrator).
CODE_APPLY = "EK101"
CODE_NO_EVENT = "EK102"

APPLY_PREFIX = "ERROR: Apply config to BPF failed: "

# perf's bpf_loader_errno values of the apply-time failures (the exit status is -errno & 0xff)
ERRNO_MAPSIZE = 3918
ERRNO_EVTDIM = 3919
ERRNO_EVTINH = 3920
ERRNO_EVTTYPE = 3921

MSG_EVTDIM = "Cannot set event to BPF map in multi-thread tracing"
MSG_EVTINH = "Doesn't support inherit event (Hint: use -i to turn off inherit)"
MSG_EVTTYPE = "Can only put raw, hardware and BPF output event into a BPF map"
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


@dataclass(frozen=True, slots=True)
class EventInstances:
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


def _keys_bytes(keys: Sequence[int], size: int) -> bytes:
    """Keys as the kernel reads them (little-endian here); 4- and 8-byte keys at C speed, because
    a 1M-entry fill spends most of its time here otherwise."""
    code = {4: "I", 8: "Q"}.get(size)
    if code is not None and array(code).itemsize == size:
        packed = array(code, keys)
        if sys.byteorder != "little":
            packed.byteswap()
        return packed.tobytes()
    return b"".join(k.to_bytes(size, "little") for k in keys)


def _map_keys(update: MapUpdate, max_entries: int) -> Sequence[int]:
    """The keys of ``update``; a term without an index list selects every key of the live map."""
    if update.keys:
        return list(update.iter_keys())
    return range(max_entries)


def check_event_update(update: MapUpdate, event: EventInstances, keys: Sequence[int]) -> None:
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
    too_big = [k for k in keys if k >= len(event.fds)]
    if too_big:
        raise ApplyError(
            f"{where}: key {too_big[0]} has no CPU slot (the event has {len(event.fds)}); "
            "select the keys with an index list",
            MSG_MAPSIZE,
            ERRNO_MAPSIZE,
        )


def apply_updates(
    kernel: Kernel,
    live: LiveObject,
    updates: Sequence[MapUpdate],
    events: Mapping[str, EventInstances],
    *,
    map_sizes: Mapping[str, int] | None = None,
) -> int:
    """Apply ``updates`` to the maps of ``live`` in order; returns the number of elements written.

    ``events`` maps event names to their opened instances (the first event of a name, as perf);
    ``map_sizes`` gives the live size of maps whose spec says 0 entries (perf event arrays sized
    to the CPUs at creation).
    """
    written = 0
    sizes = map_sizes or {}
    for update in updates:
        lm = live.map(update.map_name)
        key_size = lm.spec.key_size
        keys = _map_keys(update, sizes.get(lm.name, lm.spec.max_entries))
        if update.event is not None:
            event = events.get(update.event)
            if event is None:
                raise ObjectError(
                    CODE_NO_EVENT, f"map '{update.map_name}': no event named '{update.event}' was opened",
                    perf_message="Event not found for map setting",
                )
            check_event_update(update, event, keys)
            values = b"".join(event.fds[k].to_bytes(lm.spec.value_size, "little") for k in keys)
        else:
            assert update.value is not None
            values = update.value * len(keys)
        written += kernel.update_batch(
            lm.fd,
            _keys_bytes(keys, key_size),
            values,
            key_size=key_size,
            value_size=lm.spec.value_size,
            what=f"map '{lm.name}'",
        )
    return written
