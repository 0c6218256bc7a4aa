"""The spool between a live recording's drain and its renderer: frames of ring bytes, in order,
in shared memory up to a bound and in a temporary file past it.

One writer (the drain, in a process of its own: ``fork`` after the spool is made) and one reader
(the renderer). The memory part is a ring in a shared anonymous mapping. A frame that does not fit
there opens a *segment* of the file: the memory ring gets a marker saying where, and the writer
goes on in the file until the memory ring is half empty again; the segment's end is then written
in the control page, and the reader, having followed the marker into the file, comes back to the
memory ring there. So the reader meets every frame in the order it was written, and memory never
holds more than the bound. The file (``$TMPDIR/evspec-spool-PID-*``, /tmp without TMPDIR) is
removed by ``close`` (or, when evspec was killed, by the next spool made in that directory); it
is written again from its start once the reader has read everything in it.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import struct
from collections.abc import Sequence
from typing import NamedTuple

from evspec.loader.output.perf_ring import Atomics

Buffer = bytes | bytearray | memoryview

# what the frames carry (the drain's and the renderer's business)
PERF = 1  # the bytes taken from perf ring ``source``
BPF = 2  # the committed records taken from BPF ring buffer ``source``, read at time ``stamp``
ROUND = 3  # every ring was read once since the last ROUND
END = 4  # the drain has finished
ERROR = 5  # the drain stopped on an error: the payload is its message
# the spool's own
_WRAP = 16  # the rest of the memory ring is empty: go on at its start
_TO_FILE = 17  # go on in the file at offset ``stamp``, segment slot ``source``

_HEADER = struct.Struct("=IHHQ")  # payload length, kind, source, stamp
HEADER_SIZE = _HEADER.size
_ALIGN = 16
_OPEN = (1 << 64) - 1  # the end of a segment the writer is still writing
MIN_MEMORY = 64 << 10
# control page words
(_W_HEAD, _R_TAIL, _F_END, _SEGMENTS, _R_ENTERED, _R_SEGMENTS, _R_POS, _SPILLED, _FILE_PEAK, _MEM_PEAK,
 _ERRNO) = range(11)
_SEG_ENDS = 16  # first of the segment-end words
_SLOTS = 256  # segments the reader may be behind by


def sweep_dead(directory: str) -> list[str]:
    """Remove the spool files in ``directory`` that a killed evspec left (its PID no longer
    runs; files of other users are theirs to remove). Returns the paths removed."""
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        parts = name.split("-")
        if len(parts) != 4 or parts[:2] != ["evspec", "spool"] or not parts[2].isdigit():
            continue
        path = os.path.join(directory, name)
        try:
            if os.lstat(path).st_uid != os.geteuid():
                continue
            os.kill(int(parts[2]), 0)
        except ProcessLookupError:
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
        except (OSError, OverflowError):
            continue
    return removed


def _new_file(directory: str) -> tuple[int, str]:
    """A new file of the spool's in ``directory``, readable by its owner only (after removing
    those of evspec processes that were killed before they could)."""
    sweep_dead(directory)
    for _ in range(100):
        path = os.path.join(directory, f"evspec-spool-{os.getpid()}-{os.urandom(4).hex()}")
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no new spool file could be made in {directory}")


def _padded(length: int) -> int:
    return (length + _ALIGN - 1) & ~(_ALIGN - 1)


class Frame(NamedTuple):
    kind: int
    source: int
    stamp: int
    payload: bytes


class SpoolStats(NamedTuple):
    """What the spool held: its memory's high-water mark, the bytes that went to ``path``, the
    file's largest size, and the errno of a write to it that failed (0: none)."""

    memory_peak: int
    spilled: int
    file_peak: int
    path: str
    errno: int


class Spool:
    """A frame spool of ``memory`` bytes of shared memory (rounded up to whole pages), then a
    temporary file in ``directory`` (default: ``$TMPDIR``, else /tmp)."""

    def __init__(self, memory: int, directory: str | None = None, *, atomics: Atomics | None = None) -> None:
        if memory < MIN_MEMORY:
            raise ValueError(f"a spool needs at least {MIN_MEMORY} bytes of memory, not {memory}")
        page = mmap.PAGESIZE
        self.capacity = -(-memory // page) * page
        self.atomics = atomics or Atomics()
        self._map = mmap.mmap(-1, page + self.capacity, flags=mmap.MAP_SHARED)
        self._base = ctypes.addressof(ctypes.c_char.from_buffer(self._map))
        self._data = memoryview(self._map)[page:]
        self.fd, self.path = _new_file(directory or os.environ.get("TMPDIR") or "/tmp")
        self._owner = os.getpid()
        self.wake_fd, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._closed = False
        # the writer's state
        self._head = 0
        self._in_file = False
        self._file_end = 0
        self._segments = 0
        # the reader's state
        self._tail = 0
        self._segment: int | None = None  # the slot of the file segment being read
        self._pos = 0
        self._entered = 0
        self._read_segments = 0

    # ------------------------------------------------------------ shared words

    def _load(self, word: int) -> int:
        address = self._base + 8 * word
        if self.atomics.plain:
            return ctypes.c_uint64.from_address(address).value
        return self.atomics.load_acquire(address)

    def _store(self, word: int, value: int) -> None:
        address = self._base + 8 * word
        if self.atomics.plain:
            ctypes.c_uint64.from_address(address).value = value
        else:
            self.atomics.store_release(address, value)

    # ------------------------------------------------------------------ writer

    def put(self, kind: int, source: int, stamp: int, parts: Sequence[Buffer] = ()) -> bool:
        """Append a frame whose payload is ``parts`` joined. False when it has no room: the memory
        is full and the file cannot be written (``stats().errno`` says why) or the reader is
        ``_SLOTS`` file segments behind; nothing of it is stored then."""
        length = sum(map(len, parts))
        size = HEADER_SIZE + _padded(length)
        if self._in_file and self._room(size, self.capacity // 2):
            self._store(_SEG_ENDS + (self._segments - 1) % _SLOTS, self._file_end)
            self._in_file = False
        if not self._in_file:
            if self._room(size, self.capacity):
                self._to_memory(_HEADER.pack(length, kind, source, stamp), parts, size)
                return True
            if not self._open_segment():
                return False
        return self._to_file(_HEADER.pack(length, kind, source, stamp), parts, size)

    def _room(self, size: int, limit: int) -> bool:
        """Whether a frame of ``size`` bytes fits the memory ring with the ring's use at most
        ``limit`` after it, a file marker's room kept free."""
        at = self._head % self.capacity
        wrap = self.capacity - at if at + size > self.capacity else 0
        used = self._head - self._load(_R_TAIL)
        return used + wrap + size + HEADER_SIZE <= limit

    def _to_memory(self, header: bytes, parts: Sequence[Buffer], size: int) -> None:
        at = self._head % self.capacity
        if at + size > self.capacity:
            _HEADER.pack_into(self._data, at, 0, _WRAP, 0, 0)
            self._head += self.capacity - at
            at = 0
        data = self._data
        data[at : at + HEADER_SIZE] = header
        at += HEADER_SIZE
        for part in parts:
            data[at : at + len(part)] = part
            at += len(part)
        self._head += size
        used = self._head - self._load(_R_TAIL)
        if used > self._load(_MEM_PEAK):
            self._store(_MEM_PEAK, used)
        self._store(_W_HEAD, self._head)

    def _open_segment(self) -> bool:
        """Start a file segment (at the file's start when the reader has read all of it: it has
        left every segment, or is at the end of the last one) and mark it in the memory ring;
        False when the reader is too many segments behind."""
        behind = self._segments - self._load(_R_SEGMENTS)
        if behind >= _SLOTS:
            return False
        at_end = (self._load(_R_ENTERED) == self._segments and self._load(_R_POS) == self._file_end)
        if behind == 0 or (behind == 1 and at_end):
            self._file_end = 0
        slot = self._segments % _SLOTS
        self._store(_SEG_ENDS + slot, _OPEN)
        self._store(_F_END, self._file_end)
        self._segments += 1
        self._store(_SEGMENTS, self._segments)
        self._to_memory(_HEADER.pack(0, _TO_FILE, slot, self._file_end), (), HEADER_SIZE)
        self._in_file = True
        return True

    def _to_file(self, header: bytes, parts: Sequence[Buffer], size: int) -> bool:
        pieces = [header, *parts]
        pad = size - HEADER_SIZE - sum(map(len, parts))
        if pad:
            pieces.append(bytes(pad))
        try:
            written = os.pwritev(self.fd, pieces, self._file_end)
        except OSError as exc:
            self._store(_ERRNO, exc.errno or 0)
            return False
        if written != size:  # a short write: the disk is full; the next frame goes over it
            self._store(_ERRNO, errno.ENOSPC)
            return False
        self._file_end += size
        self._store(_F_END, self._file_end)
        self._store(_SPILLED, self._load(_SPILLED) + size)
        if self._file_end > self._load(_FILE_PEAK):
            self._store(_FILE_PEAK, self._file_end)
        return True

    def wake(self) -> None:
        """Tell a waiting reader that frames arrived (never blocks: a full pipe has said so)."""
        try:
            os.write(self._wake_w, b"\0")
        except BlockingIOError:
            pass

    # ------------------------------------------------------------------ reader

    def get(self) -> Frame | None:
        """The next frame, or None when the writer has put none since."""
        while True:
            if self._segment is not None:
                file_end = self._load(_F_END)  # before the segment's end: see _open_segment
                segment_end = self._load(_SEG_ENDS + self._segment)
                if self._pos == segment_end:
                    self._segment = None
                    self._read_segments += 1
                    self._store(_R_SEGMENTS, self._read_segments)
                    continue
                if self._pos >= min(file_end, segment_end):
                    return None
                return self._from_file()
            if self._tail == self._load(_W_HEAD):
                return None
            at = self._tail % self.capacity
            length, kind, source, stamp = _HEADER.unpack_from(self._data, at)
            if kind == _WRAP:
                self._release(self.capacity - at)
                continue
            if kind == _TO_FILE:
                self._segment, self._pos = source, stamp
                self._entered += 1
                self._store(_R_POS, stamp)
                self._store(_R_ENTERED, self._entered)
                self._release(HEADER_SIZE)
                continue
            payload = bytes(self._data[at + HEADER_SIZE : at + HEADER_SIZE + length])
            self._release(HEADER_SIZE + _padded(length))
            return Frame(kind, source, stamp, payload)

    def _release(self, size: int) -> None:
        self._tail += size
        self._store(_R_TAIL, self._tail)

    def _from_file(self) -> Frame:
        header = os.pread(self.fd, HEADER_SIZE, self._pos)
        length, kind, source, stamp = _HEADER.unpack(header)
        payload = os.pread(self.fd, length, self._pos + HEADER_SIZE) if length else b""
        if len(payload) != length:
            raise OSError(f"the spool file {self.path} ends inside a frame at {self._pos}")
        self._pos += HEADER_SIZE + _padded(length)
        self._store(_R_POS, self._pos)
        return Frame(kind, source, stamp, payload)

    def clear_wake(self) -> None:
        try:
            while os.read(self.wake_fd, 4096):
                pass
        except BlockingIOError:
            pass

    # ------------------------------------------------------------------- both

    @property
    def fds(self) -> tuple[int, ...]:
        """The descriptors the spool works with (a forked writer keeps them open)."""
        return (self.fd, self.wake_fd, self._wake_w)

    def stats(self) -> SpoolStats:
        return SpoolStats(self._load(_MEM_PEAK), self._load(_SPILLED), self._load(_FILE_PEAK), self.path,
                          self._load(_ERRNO))

    def close(self) -> None:
        """Release the memory and the descriptors; the process that made the spool also removes
        its file."""
        if self._closed:
            return
        self._closed = True
        for fd in (self.wake_fd, self._wake_w, self.fd):
            os.close(fd)
        if os.getpid() == self._owner:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
        self._data.release()
        self._map.close()

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
