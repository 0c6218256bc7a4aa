"""The index of a target BTF that CO-RE resolution needs: where each type record starts, and the
named types by essential name (``task_struct___x`` under ``task_struct``), kept on disk between
runs for large blobs (a kernel's: 126k types, whose walk alone costs 30-50 ms).

Names are indexed by the CRC-32 of their essential name: a sorted table of (hash, type id) pairs,
searched by bisection. A lookup checks every candidate's real name against the BTF, so a hash
collision can never answer a wrong type.

The file (``<cache>/btf/<crc>-<size>.index``, in the user's private cache, see ``user_cache``)
is plain arrays of 32-bit words behind a header; nothing in it is executed or unpickled. It is
keyed by the size and the CRC-32 of the whole BTF blob it was made from (1-2 ms for a kernel's
5 MB), and carries its own length and CRC-32: a file that is stale, truncated, corrupt, of
another format or byte order, or not safely ours is rebuilt, never trusted. Its arrays are used
where they lie in the file's bytes, not copied. The BTF reader then still checks the record
starts it is given (``Btf(data, starts=...)``), and a lookup refuses a type id past them.
"""

from __future__ import annotations

import os
import struct
import sys
import zlib
from array import array
from bisect import bisect_left
from itertools import compress, repeat
from operator import getitem, lshift, or_

from evspec.loader import user_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeAlias

    from evspec.loader.btf.reader import Btf

    Words: TypeAlias = "array[int] | memoryview"  # 32-bit words, made here or read from a file

MAGIC = b"evspec-btfidx-v1"
_HEADER = struct.Struct("=16sIQIIII")  # magic, byte-order mark, data size, data crc, starts, named, payload crc
_ORDER_MARK = 0x01020304
CACHE_DIR = "btf"
MIN_CACHED_BYTES = 1 << 20  # smaller blobs (objects, test fixtures) are indexed in memory only
KEEP_FILES = 4  # indexes kept per user: a few kernels (each ~1.5 MB)


def essential_bytes(name: bytes) -> bytes:
    """``target_btf.essential_name`` on the raw bytes of a name."""
    for i in range(len(name) - 5, -1, -1):
        if name[i] != 0x5F and name[i + 1:i + 4] == b"___" and name[i + 4] != 0x5F:
            return name[:i + 1]
    return name


def _flavoured_offsets(strings: bytes) -> set[int]:
    """Every offset at which a name holding ``___`` may start: from the start of each string
    with a ``___`` (a few dozen in a kernel) to that ``___``."""
    out: set[int] = set()
    at = strings.find(b"___")
    while at >= 0:
        out.update(range(strings.rfind(b"\0", 0, at) + 1, at + 1))
        at = strings.find(b"___", at + 1)
    return out


def _words(values: object = ()) -> array[int]:
    return array("I", values)  # type: ignore[arg-type]


class NameIndex:
    """Record starts (32-bit words from the start of the type section, by type id) and the named
    types as (CRC-32 of the essential name, id) pairs sorted by hash, then id.

    Of a split BTF (a module's) the index holds its own records only, and ids are record
    numbers: record i is type ``i + btf.first_id - 1``. Its names may be its base's strings, so
    its index depends on the base too, and is never stored (``target_btf`` makes it in memory)."""

    __slots__ = ("starts", "_hashes", "_ids")

    def __init__(self, starts: Words, hashes: Words, ids: Words) -> None:
        self.starts = starts
        self._hashes = hashes
        self._ids = ids

    @classmethod
    def build(cls, btf: Btf) -> NameIndex:
        """The index of ``btf``: each named type's (hash, id), sorted. Every step is a C loop of
        ``map``, ``compress`` or ``sort``: a Python loop over a kernel's 71k names would take
        twice as long."""
        names = btf.name_offsets()
        offsets = list(filter(None, names))
        ids = list(compress(range(len(names)), names))
        if btf.base is None:
            strings = btf.string_section()
            ends = map(strings.index, repeat(0), offsets)
            raws = list(map(getitem, repeat(strings), map(slice, offsets, ends)))
            flavoured = _flavoured_offsets(strings)
            for i in compress(range(len(raws)), map(flavoured.__contains__, offsets)):
                raws[i] = essential_bytes(raws[i])
        else:  # a module's few thousand names, in its own strings or its base's
            raws = [essential_bytes(raw) if b"___" in raw else raw for raw in map(btf.raw_string, offsets)]
        keys = array("Q", sorted(map(or_, map(lshift, map(zlib.crc32, raws), repeat(32)), ids)))  # type: ignore[arg-type]
        halves = memoryview(keys).cast("B").cast("I")  # each key's 32-bit halves, in the host's order
        high, low = (1, 0) if sys.byteorder == "little" else (0, 1)
        return cls(_words(btf.starts), _words(halves[high::2]), _words(halves[low::2]))

    def candidates(self, essential: bytes) -> list[int]:
        """The ids, in id order, of the named types whose essential name has the hash of
        ``essential``: every type named so, perhaps some others (the caller checks names)."""
        h = zlib.crc32(essential)
        hashes, ids = self._hashes, self._ids
        i = bisect_left(hashes, h)
        out = []
        while i < len(hashes) and hashes[i] == h:
            out.append(ids[i])
            i += 1
        return out

    # -- the file ----------------------------------------------------------------------------

    def to_bytes(self, data_size: int, data_crc: int) -> bytes:
        payload = self.starts.tobytes() + self._hashes.tobytes() + self._ids.tobytes()
        head = _HEADER.pack(MAGIC, _ORDER_MARK, data_size, data_crc, len(self.starts), len(self._ids),
                            zlib.crc32(payload))
        return head + payload

    @classmethod
    def from_bytes(cls, blob: bytes, data_size: int, data_crc: int) -> NameIndex | None:
        """The index stored in ``blob`` if it is whole, consistent and was made from the data of
        this size and CRC-32; None otherwise."""
        if len(blob) < _HEADER.size or _words().itemsize != 4:
            return None
        magic, mark, size, crc, n_starts, n_named, payload_crc = _HEADER.unpack_from(blob)
        if (magic, mark, size, crc) != (MAGIC, _ORDER_MARK, data_size, data_crc):
            return None
        payload = memoryview(blob)[_HEADER.size:]
        if len(payload) != 4 * (n_starts + 2 * n_named) or zlib.crc32(payload) != payload_crc:
            return None
        words = payload.cast("I")  # no copy: the index is 1-2 MB and read on every run
        starts, hashes, ids = words[:n_starts], words[n_starts:n_starts + n_named], words[n_starts + n_named:]
        # An id past the record starts (a file that is whole but not ours) is refused where it is
        # used: ``Btf`` raises on a type id it does not have.
        return cls(starts, hashes, ids)


def data_key(data: bytes) -> tuple[int, int]:
    """What an index file is keyed by: the size and CRC-32 of the BTF blob."""
    return len(data), zlib.crc32(data)


def cache_location() -> str:
    """Where indexes are stored, for messages."""
    return os.path.join(user_cache.cache_root(), CACHE_DIR)


def _path(directory: str, key: tuple[int, int]) -> str:
    return os.path.join(directory, f"{key[1]:08x}-{key[0]}.index")


def load(data: bytes, key: tuple[int, int]) -> NameIndex | None:
    """The stored index of ``data`` (``key = data_key(data)``), or None: none stored, no safe
    cache directory, or a file that does not hold the index of exactly this data."""
    directory = user_cache.private_dir(CACHE_DIR)
    if directory is None:
        return None
    path = _path(directory, key)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not user_cache.usable_stat(st):
            return None
        try:
            blob = f.read()
        except OSError:
            return None
    return NameIndex.from_bytes(blob, *key)


def store(index: NameIndex, key: tuple[int, int]) -> None:
    """Keep ``index`` for later runs (best effort: a cache that cannot be written is no error),
    and remove all but the ``KEEP_FILES`` newest indexes."""
    directory = user_cache.private_dir(CACHE_DIR)
    if directory is None:
        return
    path = _path(directory, key)
    temp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(index.to_bytes(*key))
        os.replace(temp, path)
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            pass
        return
    _prune(directory)


def _prune(directory: str) -> None:
    try:
        entries = [e for e in os.scandir(directory) if e.name.endswith(".index") and e.is_file(follow_symlinks=False)]
        entries.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime, reverse=True)
        for old in entries[KEEP_FILES:]:
            os.unlink(old.path)
    except OSError:
        pass
