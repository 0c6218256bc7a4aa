"""Applying the map terms of BPF events to live maps, the way ``perf record`` does after opening
its events (perf's ``bpf__apply_obj_config``).

* ``value`` updates write the value at every selected key. Key ranges stay ranges: a range of
  ``KERNEL_FILL_MIN`` keys or more is written from inside the kernel by a small program (see
  ``KernelFill``), the rest with BPF_MAP_UPDATE_BATCH, ``BATCH_CHUNK`` elements a call, their keys
  and values made as bytes in bulk;
* ``event`` updates store, at every selected key K, the descriptor of the event's instance on the
  K-th CPU slot. perf's checks come first, in its order and with its words: the event opened for
  more than one thread, an inheriting event, an event type a PERF_EVENT_ARRAY cannot hold, a key
  without a CPU slot.
"""

from __future__ import annotations

import contextlib
import struct
import sys
from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from evspec.loader import bpf_abi as abi
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.live import LiveMap, LiveObject
from evspec.loader.map_terms import KeyRange, MapUpdate
from evspec.loader.perf_abi import PerfType, SwConfig
from evspec.loader.spec import MapType, ProgType

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


BATCH_CHUNK = 1 << 16  # elements per BPF_MAP_UPDATE_BATCH: bounds the key and value buffers
KERNEL_FILL_MIN = 4096  # from this many keys on, loading the fill program costs less than a batch


def _key_ranges(update: MapUpdate, size: int) -> tuple[KeyRange, ...]:
    """The inclusive key ranges of ``update``; a term without an index list selects every key of
    the live map (``size`` entries)."""
    if update.keys:
        return update.keys
    return ((0, size - 1),) if size > 0 else ()


def _range_keys(ranges: Iterable[KeyRange]) -> Iterator[int]:
    for first, last in ranges:
        yield from range(first, last + 1)


def _chunks(first: int, last: int, chunk: int) -> Iterator[tuple[int, int]]:
    """(first key, count) pieces of the inclusive range ``first...last``, ``chunk`` keys at most."""
    for start in range(first, last + 1, chunk):
        yield start, min(chunk, last + 1 - start)


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


# ---------------------------------------------------------------------------------------------
# the kernel-side fill
#
# BPF_MAP_UPDATE_BATCH costs the kernel about 115 ns an element (two copy_from_user and an update
# call each), 0.12 s for a million keys. A program run once with BPF_PROG_TEST_RUN writes the same
# million values in about 3 ms: bpf_loop calls a callback that looks the key up (inlined for
# ARRAY maps) and stores the value. It needs bpf_loop (5.17) and BPF_PROG_TEST_RUN of raw
# tracepoint programs (5.10); where either is missing, or the map refuses program writes, the
# batch path writes the values instead.

BPF_MAX_LOOPS = 1 << 23  # the most iterations one bpf_loop call makes
FILL_PROGRAM_NAME = "evspec_fill"
FILL_LICENSE = "Dual MIT/GPL"
FILL_CTX = struct.Struct("=QQQ")  # first key, key count, value: the program's u64 arguments
STORE_SIZES = {1: 0x10, 2: 0x08, 4: 0x00, 8: 0x18}  # value size -> BPF_B/H/W/DW
FUNC_BPF_LOOP = 181
FUNC_MAP_LOOKUP_ELEM = 1
# BPF opcodes used below: class | mode | size, or class | op | source
STX_MEM, ST_MEM, LDX_MEM = 0x63, 0x62, 0x61  # BPF_STX/BPF_ST/BPF_LDX | BPF_MEM, plus a size
LDX_DW, ST_DW, STX_W, STX_DW = LDX_MEM | 0x18, ST_MEM | 0x18, STX_MEM, STX_MEM | 0x18
MOV64_X, MOV64_K, ADD64_X, ADD64_K = 0xBF, 0xB7, 0x0F, 0x07
LD_IMM64, CALL, EXIT, JEQ_K = 0x18, 0x85, 0x95, 0x15
CALLBACK_START = 15  # index of the callback's first instruction in fill_program()


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("=BBhi", code, (src << 4 | dst) if sys.byteorder == "little" else (dst << 4 | src), off, imm)


def fill_program(map_fd: int, value_size: int) -> bytes:
    """The fill program for the ARRAY map ``map_fd``: its context holds the first key, the key
    count and the value; it stores the value's low ``value_size`` bytes at each key and returns
    how many it stored.

    The main function keeps (first, value, stored) on its stack at r10-24 and passes their address
    to bpf_loop, which calls the callback with the iteration index and that address.
    """
    if value_size not in STORE_SIZES:
        raise ValueError(f"a fill program stores 1, 2, 4 or 8 bytes, not {value_size}")
    main = [
        _insn(LDX_DW, 2, 1, 0),  # r2 = first
        _insn(LDX_DW, 3, 1, 8),  # r3 = count
        _insn(LDX_DW, 4, 1, 16),  # r4 = value
        _insn(STX_DW, 10, 2, -24),
        _insn(STX_DW, 10, 4, -16),
        _insn(ST_DW, 10, 0, -8, 0),  # stored = 0
        _insn(MOV64_X, 1, 3),  # r1 = count
        _insn(LD_IMM64, 2, abi.BPF_PSEUDO_FUNC, 0, CALLBACK_START - 7 - 1),  # r2 = &callback
        _insn(0),
        _insn(MOV64_X, 3, 10),
        _insn(ADD64_K, 3, 0, 0, -24),  # r3 = &(first, value, stored)
        _insn(MOV64_K, 4, 0, 0, 0),  # flags
        _insn(CALL, imm=FUNC_BPF_LOOP),
        _insn(LDX_DW, 0, 10, -8),  # return stored
        _insn(EXIT),
    ]
    assert len(main) == CALLBACK_START
    callback = [  # (r1 = index, r2 = &(first, value, stored))
        _insn(MOV64_X, 6, 2),
        _insn(LDX_DW, 3, 6, 0),
        _insn(ADD64_X, 3, 1),  # key = first + index
        _insn(STX_W, 10, 3, -4),
        _insn(LD_IMM64, 1, abi.BPF_PSEUDO_MAP_FD, 0, map_fd),
        _insn(0),
        _insn(MOV64_X, 2, 10),
        _insn(ADD64_K, 2, 0, 0, -4),
        _insn(CALL, imm=FUNC_MAP_LOOKUP_ELEM),
        _insn(JEQ_K, 0, 0, 7, 0),  # no element: stop the loop
        _insn(LDX_DW, 1, 6, 8),
        _insn(STX_MEM | STORE_SIZES[value_size], 0, 1, 0),  # *value = r1
        _insn(LDX_DW, 1, 6, 16),
        _insn(ADD64_K, 1, 0, 0, 1),
        _insn(STX_DW, 6, 1, 16),  # stored += 1
        _insn(MOV64_K, 0, 0, 0, 0),
        _insn(EXIT),
        _insn(MOV64_K, 0, 0, 0, 1),
        _insn(EXIT),
    ]
    return b"".join(main + callback)


def _fill_btf() -> bytes:
    """BTF describing the fill program's two functions (the verifier wants a FUNC for each
    function whose address is taken): ``int evspec_fill(void)`` and ``int evspec_fill_cb(void)``,
    both static."""
    strings = b"\0int\0evspec_fill\0evspec_fill_cb\0"
    t = struct.Struct("=III")
    kind_int, kind_func, kind_proto = 1, 12, 13
    types = b"".join((
        t.pack(strings.index(b"int"), kind_int << 24, 4) + struct.pack("=I", 1 << 24 | 32),  # signed 32 bits
        t.pack(0, kind_proto << 24, 1),  # int (void)
        t.pack(strings.index(b"evspec_fill\0"), kind_func << 24, 2),
        t.pack(strings.index(b"evspec_fill_cb"), kind_func << 24, 2),
    ))
    header = struct.pack("=HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
    return header + types + strings


FILL_BTF = _fill_btf()
FILL_FUNC_INFO = ((0, 3), (CALLBACK_START, 4))  # (instruction, BTF FUNC id)


class KernelFill:
    """Writes one value over a key range of an ARRAY map with the fill program, loaded once per
    map; ``fill`` returns False when the kernel-side fill is not available for that map (the
    caller then writes with batches). ``close`` releases the programs and the BTF."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._btf_fd: int | None = None
        self._available = True
        self._programs: dict[int, int | None] = {}  # map fd -> fill program fd (None: not usable)

    def _program(self, lm: LiveMap) -> int | None:
        if lm.fd in self._programs:
            return self._programs[lm.fd]
        prog: int | None = None
        writable = not lm.spec.readonly and not lm.spec.flags & abi.MapFlag.RDONLY_PROG
        if self._available and writable and lm.spec.type == MapType.ARRAY and lm.spec.value_size in STORE_SIZES:
            try:
                if self._btf_fd is None:
                    self._btf_fd = self.kernel.load_btf(FILL_BTF)
                prog = self.kernel.load_program(
                    ProgType.RAW_TRACEPOINT,
                    fill_program(lm.fd, lm.spec.value_size),
                    FILL_LICENSE,
                    name=FILL_PROGRAM_NAME,
                    btf_fd=self._btf_fd,
                    func_info=FILL_FUNC_INFO,
                )
            except KernelError:
                self._available = self._btf_fd is not None  # no BTF: no fill program for any map
        self._programs[lm.fd] = prog
        return prog

    def fill(self, lm: LiveMap, first: int, count: int, value: bytes) -> bool:
        """Store ``value`` at keys ``first`` ... ``first + count - 1``; False if it was not done
        (then some of those keys may hold the value already)."""
        prog = self._program(lm) if self._available else None
        if prog is None:
            return False
        number = int.from_bytes(value, sys.byteorder)
        for start, n in _chunks(first, first + count - 1, BPF_MAX_LOOPS):
            try:
                stored = self.kernel.run_program(prog, ctx=FILL_CTX.pack(start, n, number), what=f"map '{lm.name}'")
            except KernelError:
                self._available = False  # the kernel cannot run such programs: batches from now on
                return False
            if stored != n:
                return False
        return True

    def close(self) -> None:
        fds = [fd for fd in self._programs.values() if fd is not None]
        if self._btf_fd is not None:
            fds.append(self._btf_fd)
        self._programs.clear()
        self._btf_fd = None
        first: KernelError | None = None
        for fd in fds:
            try:
                self.kernel.close(fd)
            except KernelError as exc:
                first = first or exc
        if first is not None:
            raise first


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
    key_size, value_size = lm.spec.key_size, lm.spec.value_size
    written = 0
    rest: list[KeyRange] = []  # for batches
    for first, last in ranges:
        if last + 1 - first >= KERNEL_FILL_MIN and filler.fill(lm, first, last + 1 - first, value):
            written += last + 1 - first
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
    assert update.event is not None
    event = events.get(update.event)
    if event is None:
        raise ObjectError(
            CODE_NO_EVENT, f"map '{update.map_name}': no event named '{update.event}' was opened",
            perf_message="Event not found for map setting",
        )
    check_event_update(update, event, _range_keys(ranges))
    keys = list(_range_keys(ranges))  # each below the event's CPU slot count (checked above)
    value_size = lm.spec.value_size
    return kernel.update_batch(
        lm.fd,
        b"".join(k.to_bytes(lm.spec.key_size, sys.byteorder) for k in keys),
        b"".join(event.fds[k].to_bytes(value_size, sys.byteorder) for k in keys),
        key_size=lm.spec.key_size,
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
    to the CPUs at creation).
    """
    written = 0
    sizes = map_sizes or {}
    filler = KernelFill(kernel)
    try:
        for update in updates:
            lm = live.map(update.map_name)
            ranges = _key_ranges(update, sizes.get(lm.name, lm.spec.max_entries))
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
