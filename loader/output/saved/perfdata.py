"""The perf.data file format (tools/perf/Documentation/perf.data-file-format.txt): writer and reader.

Layout written here, as ``perf record`` lays it out::

    header (104 bytes: PERFILE2, sizes, the attrs/data sections, a 256-bit feature bitmap)
    ids    (u64 event ids of every attr, attr after attr)
    attrs  (per attr: perf_event_attr of ``attr.size`` bytes, then the (offset, size) of its ids)
    data   (the kernel's records as the ring buffers hold them, PERF_RECORD_FINISHED_ROUND
            after each round of reading; PERF_RECORD_LOST_SAMPLES at the end)
    feature index (one (offset, size) per feature bit set, in bit order), feature sections

The header's data size is rewritten after every round, so a writer killed half-way leaves a file
that is read up to its last complete round; features are written when the file is finished.
Strings in features are ``u32 len`` + the text NUL-padded to a multiple of 64 bytes (``len``
counts the padding).
"""

from __future__ import annotations

import ctypes
import errno as errno_mod
import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from enum import IntEnum
from pathlib import Path
from types import TracebackType

from evspec.loader.abi.perf import PerfEventAttr, RecordType
from evspec.loader.abi.perf_bits import SampleType
from evspec.loader.abi.perf_ids import PerfType, SwConfig
from evspec.loader.errors import ObjectError

from evspec.codes import kernel as codes
from evspec.span import Slotted, value_field

MAGIC = b"PERFILE2"
_HEADER = struct.Struct("<8sQQQQQQQQ4Q")
_SECTION = struct.Struct("<QQ")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_RECORD_HEADER = struct.Struct("<IHH")
_DATA_SIZE_OFFSET = 48  # header: magic, size, attr_size, attrs (2 x u64), data.offset, data.size
NAME_ALIGN = 64
FINISHED_ROUND = 68  # PERF_RECORD_FINISHED_ROUND: header only, written by the tool
_FINISHED_ROUND_RECORD = _RECORD_HEADER.pack(FINISHED_ROUND, 0, _RECORD_HEADER.size)
_IOV_MAX = 1024  # Linux's UIO_MAXIOV: buffers one writev() takes


class Feature(IntEnum):
    """Bits of the header's feature bitmap (``HEADER_*`` of perf's util/header.h)."""

    TRACING_DATA = 1
    BUILD_ID = 2
    HOSTNAME = 3
    OSRELEASE = 4
    VERSION = 5
    ARCH = 6
    NRCPUS = 7
    CPUDESC = 8
    CPUID = 9
    TOTAL_MEM = 10
    CMDLINE = 11
    EVENT_DESC = 12
    BPF_BTF = 26


def _corrupt(path: str | Path, message: str) -> ObjectError:
    return ObjectError(codes.PERF_DATA_CORRUPT, f"{path}: not a readable perf.data file: {message}")


# ------------------------------------------------------------------- attrs


class FileAttr(Slotted):
    """One event of the file: its name, its ``perf_event_attr`` bytes and the kernel ids of its fds."""

    name: str
    attr: bytes
    ids: tuple[int, ...]

    @staticmethod
    def of(name: str, attr: PerfEventAttr, ids: Sequence[int]) -> FileAttr:
        return FileAttr(name, ctypes.string_at(ctypes.addressof(attr), attr.size), tuple(ids))

    def parsed(self) -> PerfEventAttr:
        full = self.attr[: ctypes.sizeof(PerfEventAttr)].ljust(ctypes.sizeof(PerfEventAttr), b"\0")
        return PerfEventAttr.from_buffer_copy(full)

    @property
    def sample_type(self) -> int:
        return int(self.parsed().sample_type)


def default_event_name(attr: PerfEventAttr, tracepoints: Mapping[int, str]) -> str:
    """perf's name for an event that the file does not name (no HEADER_EVENT_DESC)."""
    if attr.type == PerfType.TRACEPOINT and attr.config in tracepoints:
        return tracepoints[attr.config]
    if attr.type == PerfType.SOFTWARE and attr.config == SwConfig.BPF_OUTPUT:
        return "bpf-output"
    if attr.type == PerfType.SOFTWARE and attr.config == SwConfig.DUMMY:
        return "dummy"
    return f"type{attr.type}/config{attr.config:#x}"


# ----------------------------------------------------------------- features


def encode_string(text: str) -> bytes:
    raw = text.encode() + b"\0"
    padded = raw.ljust(-(-len(raw) // NAME_ALIGN) * NAME_ALIGN, b"\0")
    return _U32.pack(len(padded)) + padded


def decode_string(data: bytes, pos: int) -> tuple[str, int]:
    """The string at ``pos`` and the position after it."""
    if pos + 4 > len(data):
        raise ValueError("string length runs past the section")
    (length,) = _U32.unpack_from(data, pos)
    end = pos + 4 + length
    if end > len(data):
        raise ValueError(f"string of {length} bytes runs past the section")
    raw = data[pos + 4 : end]
    return raw.split(b"\0", 1)[0].decode(errors="replace"), end


def encode_strings(items: Sequence[str]) -> bytes:
    return _U32.pack(len(items)) + b"".join(encode_string(s) for s in items)


def decode_strings(data: bytes) -> tuple[str, ...]:
    (count,) = _U32.unpack_from(data, 0)
    pos, out = 4, []
    for _ in range(count):
        text, pos = decode_string(data, pos)
        out.append(text)
    return tuple(out)


def encode_event_desc(attrs: Sequence[FileAttr]) -> bytes:
    size = len(attrs[0].attr) if attrs else ctypes.sizeof(PerfEventAttr)
    parts = [struct.pack("<II", len(attrs), size)]
    for a in attrs:
        parts.append(a.attr.ljust(size, b"\0")[:size])
        parts.append(_U32.pack(len(a.ids)))
        parts.append(encode_string(a.name))
        parts.append(struct.pack(f"<{len(a.ids)}Q", *a.ids))
    return b"".join(parts)


def decode_event_desc(data: bytes) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """(name, ids) of every event HEADER_EVENT_DESC describes."""
    count, size = struct.unpack_from("<II", data, 0)
    pos, out = 8, []
    for _ in range(count):
        pos += size
        (nr_ids,) = _U32.unpack_from(data, pos)
        name, pos = decode_string(data, pos + 4)
        ids = struct.unpack_from(f"<{nr_ids}Q", data, pos)
        pos += 8 * nr_ids
        out.append((name, tuple(ids)))
    return tuple(out)


def encode_bpf_btf(blobs: Mapping[int, bytes]) -> bytes:
    """HEADER_BPF_BTF: u32 count, then per BTF object u32 id, u32 size and its bytes."""
    return _U32.pack(len(blobs)) + b"".join(struct.pack("<II", i, len(b)) + b for i, b in sorted(blobs.items()))


def decode_bpf_btf(data: bytes) -> dict[int, bytes]:
    (count,) = _U32.unpack_from(data, 0)
    pos, out = 4, {}
    for _ in range(count):
        ident, size = struct.unpack_from("<II", data, pos)
        if pos + 8 + size > len(data):
            raise ValueError(f"BTF {ident} of {size} bytes runs past the section")
        out[ident] = data[pos + 8 : pos + 8 + size]
        pos += 8 + size
    return out


class HostInfo(Slotted):
    """What ``perf report --header-only`` shows about the recording machine and command."""

    hostname: str
    osrelease: str
    version: str
    arch: str
    cpus_available: int
    cpus_online: int
    cmdline: tuple[str, ...]

    @staticmethod
    def current(cmdline: Sequence[str], version: str) -> HostInfo:
        online = os.sysconf("SC_NPROCESSORS_ONLN")
        available = os.sysconf("SC_NPROCESSORS_CONF")
        host = os.uname()  # what gethostname() and platform report, without importing socket
        return HostInfo(host.nodename, host.release, version, host.machine, available, online, tuple(cmdline))

    def features(self) -> dict[int, bytes]:
        return {
            Feature.HOSTNAME: encode_string(self.hostname),
            Feature.OSRELEASE: encode_string(self.osrelease),
            Feature.VERSION: encode_string(self.version),
            Feature.ARCH: encode_string(self.arch),
            Feature.NRCPUS: struct.pack("<II", self.cpus_available, self.cpus_online),
            Feature.CMDLINE: encode_strings(self.cmdline),
        }

    @staticmethod
    def from_features(features: Mapping[int, bytes]) -> HostInfo:
        def text(feat: Feature) -> str:
            data = features.get(feat)
            return decode_string(data, 0)[0] if data else ""

        nr = features.get(Feature.NRCPUS)
        available, online = struct.unpack_from("<II", nr, 0) if nr and len(nr) >= 8 else (0, 0)
        cmd = features.get(Feature.CMDLINE)
        return HostInfo(
            text(Feature.HOSTNAME),
            text(Feature.OSRELEASE),
            text(Feature.VERSION),
            text(Feature.ARCH),
            available,
            online,
            decode_strings(cmd) if cmd else (),
        )


# ------------------------------------------------------------ tracing data

_TRACING_MAGIC = b"\x17\x08\x44tracing"
TRACING_VERSION = "0.6"


class TraceFormat(Slotted):
    """A tracepoint's tracefs ``format`` file as the file's tracing data carries it."""

    system: str
    name: str
    id: int
    text: str


def _format_id(text: str) -> int:
    for line in text.splitlines():
        if line.startswith("ID:"):
            return int(line[3:].strip())
    raise ValueError("a tracepoint format without an ID line")


def build_tracing_data(events_dir: Path, tracepoints: Sequence[tuple[str, str]], page_size: int) -> bytes:
    """HEADER_TRACING_DATA for ``tracepoints`` ((system, event) pairs) from tracefs ``events_dir``.

    Carries the ring-buffer header formats, one format file per tracepoint and the kernel's
    printk formats (``printk_formats``: the strings a ``const char *`` field may point at, which
    perf script prints in its place), as perf record writes them; kallsyms and saved command lines
    are left empty (perf 6.1 resolves kernel addresses with the machine's symbols, and names
    tasks from COMM records).
    """
    parts = [_TRACING_MAGIC, TRACING_VERSION.encode() + b"\0", b"\0", b"\x08", _U32.pack(page_size)]
    for name in ("header_page", "header_event"):
        content = (events_dir / name).read_bytes()
        parts += [name.encode() + b"\0", _U64.pack(len(content)), content]
    parts.append(_U32.pack(0))  # ftrace's own events
    systems: dict[str, list[bytes]] = {}
    for system, event in dict.fromkeys(tracepoints):
        systems.setdefault(system, []).append((events_dir / system / event / "format").read_bytes())
    parts.append(_U32.pack(len(systems)))
    for system, formats in systems.items():
        parts += [system.encode() + b"\0", _U32.pack(len(formats))]
        for content in formats:
            parts += [_U64.pack(len(content)), content]
    try:
        printk = (events_dir.parent / "printk_formats").read_bytes()
    except OSError:
        printk = b""
    parts += [_U32.pack(0), _U32.pack(len(printk)), printk, _U64.pack(0)]  # kallsyms, printk, cmdlines
    return b"".join(parts)


def parse_printk_formats(text: str) -> dict[int, str]:
    """tracefs ``printk_formats`` (``0xADDR : "text"`` lines) as libtraceevent keeps them: by
    address, the quotes and a trailing ``\\n`` dropped."""
    out: dict[int, str] = {}
    for line in text.splitlines():
        address, sep, fmt = line.partition(":")
        if not sep:
            continue
        try:
            addr = int(address.strip(), 16)
        except ValueError:
            continue
        fmt = fmt[1:].removeprefix('"')
        fmt = fmt[:-1] if fmt.endswith('"') else fmt
        out[addr] = fmt.removesuffix("\\n")
    return out


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError(f"tracing data ends at {len(self.data)}, {n} bytes needed at {self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def cstring(self) -> str:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise ValueError("unterminated string in tracing data")
        text = self.data[self.pos : end].decode(errors="replace")
        self.pos = end + 1
        return text

    def u32(self) -> int:
        return int(_U32.unpack(self.take(4))[0])

    def u64(self) -> int:
        return int(_U64.unpack(self.take(8))[0])


def parse_tracing_data(data: bytes) -> dict[int, TraceFormat]:
    """The tracepoint formats in HEADER_TRACING_DATA, by tracepoint id."""
    return read_tracing_data(data)[0]


def read_tracing_data(data: bytes) -> tuple[dict[int, TraceFormat], dict[int, str]]:
    """The tracepoint formats in HEADER_TRACING_DATA, by tracepoint id, and its printk formats
    (``parse_printk_formats``; none when the section ends before them)."""
    cur = _Cursor(data)
    if cur.take(len(_TRACING_MAGIC)) != _TRACING_MAGIC:
        raise ValueError("tracing data does not start with its magic")
    cur.cstring()  # version
    big_endian, _long_size = cur.take(2)
    if big_endian:
        raise ValueError("big-endian tracing data")
    cur.u32()  # page size
    for expected in ("header_page", "header_event"):
        if cur.cstring() != expected:
            raise ValueError(f"tracing data lacks {expected}")
        cur.take(cur.u64())
    for _ in range(cur.u32()):
        cur.take(cur.u64())
    out: dict[int, TraceFormat] = {}
    for _ in range(cur.u32()):
        system = cur.cstring()
        for _ in range(cur.u32()):
            text = cur.take(cur.u64()).decode(errors="replace")
            name = next((ln[5:].strip() for ln in text.splitlines() if ln.startswith("name:")), "")
            tp_id = _format_id(text)
            out[tp_id] = TraceFormat(system, name, tp_id, text)
    printk: dict[int, str] = {}
    if cur.pos + 4 <= len(data):
        cur.take(cur.u32())  # kallsyms
        if cur.pos + 4 <= len(data):
            printk = parse_printk_formats(cur.take(cur.u32()).decode(errors="replace"))
    return out, printk


# ------------------------------------------------------------ sample ids

# The sample_id_all trailer of non-sample records: these fields of the event's sample_type, in
# this order (include/uapi/linux/perf_event.h, struct sample_id).
_SAMPLE_ID_FIELDS = (
    (SampleType.TID, "II", ("pid", "tid")),
    (SampleType.TIME, "Q", ("time",)),
    (SampleType.ID, "Q", ("id",)),
    (SampleType.STREAM_ID, "Q", ("stream_id",)),
    (SampleType.CPU, "II", ("cpu", "_reserved")),
    (SampleType.IDENTIFIER, "Q", ("identifier",)),
)


class SampleIdTrailer:
    """The sample_id_all trailer of an event's non-sample records (LOST, COMM, LOST_SAMPLES...)."""

    def __init__(self, sample_type: int) -> None:
        codes_, names = "<", []
        for bit, code, field_names in _SAMPLE_ID_FIELDS:
            if sample_type & bit:
                codes_ += code
                names.extend(field_names)
        self.struct = struct.Struct(codes_)
        self.names = tuple(names)

    def pack(self, **values: int) -> bytes:
        """The trailer with ``values`` by field name (pid, tid, time, id, stream_id, cpu,
        identifier); fields not given are 0."""
        return self.struct.pack(*(values.get(name, 0) for name in self.names))

    def read(self, buf: bytes, end: int, body_start: int) -> dict[str, int]:
        """The trailer fields of the record ending at ``end`` whose body starts at ``body_start``
        (empty when the event has none or the record is too short to hold them)."""
        if not self.names or end - self.struct.size < body_start:
            return {}
        return dict(zip(self.names, self.struct.unpack_from(buf, end - self.struct.size), strict=True))


def lost_samples_record(lost: int, trailer: bytes) -> bytes:
    """PERF_RECORD_LOST_SAMPLES as perf record writes it at the end of a run, from the count an
    event's read() gave (PERF_FORMAT_LOST): header, u64 lost, the event's sample_id trailer."""
    return _RECORD_HEADER.pack(RecordType.LOST_SAMPLES, 0, 16 + len(trailer)) + _U64.pack(lost) + trailer


# ------------------------------------------------------------------- writer


class PerfDataWriter:
    """Writes a perf.data file: header, ids and attrs at once, then data, features on ``finish``."""

    def __init__(
        self,
        path: str | Path,
        attrs: Sequence[FileAttr],
        *,
        features: Mapping[int, bytes] | None = None,
    ) -> None:
        if not attrs:
            raise ValueError("a perf.data file needs at least one event")
        size = max(len(a.attr) for a in attrs)
        self.path = Path(path)
        self.attrs = tuple(_with_size(a, size) for a in attrs)
        self.features: dict[int, bytes] = dict(features or {})
        self.data_size = 0
        self.finished = False
        try:
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise _write_error(self.path, exc) from None
        try:
            self._attr_size = size + _SECTION.size
            ids_at = _HEADER.size
            ids = b"".join(struct.pack(f"<{len(a.ids)}Q", *a.ids) for a in self.attrs)
            self._attrs_at = ids_at + len(ids)
            table, offset = [], ids_at
            for a in self.attrs:
                table.append(a.attr + _SECTION.pack(offset, 8 * len(a.ids)))
                offset += 8 * len(a.ids)
            self.data_offset = self._attrs_at + self._attr_size * len(self.attrs)
            self._write(self._header(0, ()) + ids + b"".join(table))
        except BaseException as exc:
            os.close(self.fd)
            try:  # a file without its header is no perf.data file: nothing of it is kept
                os.unlink(self.path)
            except OSError:
                pass
            if isinstance(exc, WriteError):
                raise WriteError(self.path, exc.cause, "the file is removed: not even its header fits") from None
            raise

    def _header(self, data_size: int, features: Sequence[int]) -> bytes:
        bits = [0, 0, 0, 0]
        for feat in features:
            bits[feat // 64] |= 1 << (feat % 64)
        return _HEADER.pack(
            MAGIC,
            _HEADER.size,
            self._attr_size,
            self._attrs_at,
            self._attr_size * len(self.attrs),
            self.data_offset,
            data_size,
            0,
            0,
            *bits,
        )

    def _write(self, data: bytes | memoryview) -> None:
        self._writev((data,))

    def _writev(self, buffers: Sequence[bytes | memoryview]) -> None:
        """Write ``buffers`` in order, with as few writev() calls as the kernel lets us."""
        views = [memoryview(b) for b in buffers if len(b)]
        first = 0
        try:
            while first < len(views):
                written = os.writev(self.fd, views[first : first + _IOV_MAX])
                while written and written >= len(views[first]):
                    written -= len(views[first])
                    first += 1
                if written:
                    views[first] = views[first][written:]
        except OSError as exc:
            raise _write_error(self.path, exc) from None

    def write(self, data: bytes | memoryview) -> None:
        """Append kernel records (whole records, as a ring buffer holds them) to the data section."""
        self._write(data)
        self.data_size += len(data)

    def write_round(self, chunks: Sequence[bytes | memoryview]) -> None:
        """Append a round of reading (``chunks``: whole records, e.g. slices of the ring buffers
        themselves) and its PERF_RECORD_FINISHED_ROUND in one writev(), then publish the size.
        ``data_size`` counts only what was written whole: a round that fails counts not at all."""
        self._writev([*chunks, _FINISHED_ROUND_RECORD])
        self.data_size += sum(len(c) for c in chunks) + len(_FINISHED_ROUND_RECORD)
        self._publish_size()

    def cut_data(self, size: int) -> None:
        """Keep the first ``size`` bytes of the data section (a record boundary) and drop
        whatever the file holds past them (a round that failed half-way)."""
        try:
            os.ftruncate(self.fd, self.data_offset + size)
            os.lseek(self.fd, self.data_offset + size, os.SEEK_SET)  # the next write goes there
        except OSError as exc:
            raise _write_error(self.path, exc) from None
        self.data_size = size

    def end_round(self) -> None:
        """Mark the end of a round of reading every ring (perf's FINISHED_ROUND) and publish the
        data size in the header, so that what was written so far is readable even if we die."""
        self.write_round(())

    def _publish_size(self) -> None:
        try:
            os.pwrite(self.fd, _U64.pack(self.data_size), _DATA_SIZE_OFFSET)
        except OSError as exc:
            raise _write_error(self.path, exc) from None

    def feature_bytes(self) -> int:
        """How many bytes ``finish`` appends after the data section."""
        feats = {**self.features, Feature.EVENT_DESC: encode_event_desc(self.attrs)}
        return sum(_SECTION.size + len(body) for body in feats.values())

    def finish(self) -> None:
        """Write the features and the final header; the file is complete afterwards. A failure
        leaves it unfinished (``finish`` may be tried again, after ``cut_data``)."""
        if self.finished:
            return
        feats = {**self.features, Feature.EVENT_DESC: encode_event_desc(self.attrs)}
        order = sorted(feats)
        index_at = self.data_offset + self.data_size
        offset = index_at + _SECTION.size * len(order)
        index, bodies = [], []
        for feat in order:
            index.append(_SECTION.pack(offset, len(feats[feat])))
            bodies.append(feats[feat])
            offset += len(feats[feat])
        self._write(b"".join(index) + b"".join(bodies))
        try:
            os.pwrite(self.fd, self._header(self.data_size, order), 0)
        except OSError as exc:
            raise _write_error(self.path, exc) from None
        self.finished = True

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> PerfDataWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.finish()
        finally:
            self.close()


def _with_size(a: FileAttr, size: int) -> FileAttr:
    raw = bytearray(a.attr.ljust(size, b"\0"))
    struct.pack_into("<I", raw, 4, size)
    return FileAttr(a.name, bytes(raw), a.ids)


class WriteError(ObjectError):
    """A write to a perf.data file failed: ``errno`` says why (ENOSPC: the file system is full);
    ``outcome`` what became of the file, when that is decided already."""

    def __init__(self, path: Path, exc: OSError, outcome: str | None = None) -> None:
        name = errno_mod.errorcode.get(exc.errno or 0, str(exc.errno))
        tail = f"; {outcome}" if outcome else ""
        super().__init__(codes.PERF_DATA_WRITE, f"cannot write {path}: {exc.strerror} ({name}){tail}")
        self.path = path
        self.errno = exc.errno
        self.cause = exc


def _write_error(path: Path, exc: OSError) -> WriteError:
    return WriteError(path, exc)


# ------------------------------------------------------------------- reader


class RecordRef(Slotted):
    """A record of the data section: its type, misc, and where its bytes are in ``PerfData.buf``."""

    type: int
    misc: int
    offset: int
    size: int


class PerfData(Slotted):
    """A perf.data file read into memory."""

    path: str
    buf: bytes
    attrs: tuple[FileAttr, ...]
    data_offset: int
    data_size: int
    features: Mapping[int, bytes]
    truncated: bool  # the writer did not finish: data read up to the last complete record
    tracepoints: Mapping[int, TraceFormat] = value_field(default_factory=dict)
    printk: Mapping[int, str] = value_field(default_factory=dict)  # the tracing data's printk formats

    @property
    def host(self) -> HostInfo:
        return HostInfo.from_features(self.features)

    def btfs(self) -> dict[int, bytes]:
        """The BTF objects of HEADER_BPF_BTF, by id (none when the file has no such section)."""
        data = self.features.get(Feature.BPF_BTF)
        if not data:
            return {}
        try:
            return decode_bpf_btf(data)
        except (ValueError, struct.error) as exc:
            raise _corrupt(self.path, f"HEADER_BPF_BTF: {exc}") from None

    def records(self) -> Iterator[RecordRef]:
        """Every complete record of the data section, in file order."""
        buf, pos, end = self.buf, self.data_offset, self.data_offset + self.data_size
        unpack = _RECORD_HEADER.unpack_from
        while pos + 8 <= end:
            rtype, misc, size = unpack(buf, pos)
            if size < 8:
                raise _corrupt(self.path, f"a record at byte {pos} claims {size} bytes")
            if pos + size > end:
                if self.truncated:
                    return
                raise _corrupt(self.path, f"the record at byte {pos} runs past the data section")
            yield RecordRef(rtype, misc, pos, size)
            pos += size

    def id_map(self) -> dict[int, FileAttr]:
        return {i: a for a in self.attrs for i in a.ids}


def read_perf_data(path: str | Path) -> PerfData:
    """Read a perf.data file (ours or perf's); ObjectError EK150/EK151 when it cannot be read."""
    try:
        buf = Path(path).read_bytes()
    except OSError as exc:
        raise ObjectError(codes.PERF_DATA_CORRUPT, f"cannot read {path}: {exc.strerror}") from None
    if len(buf) < 8:
        raise _corrupt(path, f"{len(buf)} bytes, shorter than the magic")
    magic = buf[:8]
    if magic != MAGIC:
        what = {
            b"PERFFILE": "the old PERFFILE format",
            MAGIC[::-1]: "a byte-swapped file (written on a machine of the other endianness)",
        }.get(magic)
        if what is not None:
            raise ObjectError(codes.PERF_DATA_UNSUPPORTED, f"{path}: {what} is not supported")
        raise _corrupt(path, "it does not start with PERFILE2")
    if len(buf) >= 16 and _U64.unpack_from(buf, 8)[0] == 16:
        raise ObjectError(codes.PERF_DATA_UNSUPPORTED, f"{path}: pipe-mode perf data is not supported")
    if len(buf) < _HEADER.size:
        raise _corrupt(path, f"{len(buf)} bytes, shorter than the {_HEADER.size}-byte header")
    (_, size, attr_size, attrs_at, attrs_size, data_at, data_size, _et, _es, *bits) = _HEADER.unpack_from(buf, 0)
    if size != _HEADER.size or attr_size <= _SECTION.size or attrs_at + attrs_size > len(buf):
        raise _corrupt(path, f"header sizes (header {size}, attr {attr_size}) do not fit the file")
    if data_at > len(buf):
        raise _corrupt(path, f"the data section starts at {data_at}, past the end ({len(buf)})")
    truncated = not any(bits)  # a writer that finished set its feature bits (EVENT_DESC at least)
    if truncated:
        # a writer that died: the data runs to the last complete record in the file
        data_size = len(buf) - data_at
    elif data_at + data_size > len(buf):
        raise _corrupt(path, f"the data section ({data_size} bytes at {data_at}) runs past the end")
    attrs = _read_attrs(path, buf, attrs_at, attrs_size, attr_size)
    features = {} if truncated else _read_features(path, buf, data_at + data_size, bits)
    tracepoints: dict[int, TraceFormat] = {}
    printk: dict[int, str] = {}
    if Feature.TRACING_DATA in features:
        try:
            tracepoints, printk = read_tracing_data(features[Feature.TRACING_DATA])
        except ValueError as exc:
            raise _corrupt(path, f"HEADER_TRACING_DATA: {exc}") from None
    names: dict[int, str] = {}
    if Feature.EVENT_DESC in features:
        try:
            described = decode_event_desc(features[Feature.EVENT_DESC])
        except (ValueError, struct.error) as exc:
            raise _corrupt(path, f"HEADER_EVENT_DESC: {exc}") from None
        for i, (name, _ids) in enumerate(described):
            names[i] = name
    tp_names = {tp_id: f"{f.system}:{f.name}" for tp_id, f in tracepoints.items()}
    attrs = tuple(
        FileAttr(names.get(i) or default_event_name(a.parsed(), tp_names), a.attr, a.ids)
        for i, a in enumerate(attrs)
    )
    return PerfData(str(path), buf, attrs, data_at, data_size, features, truncated, tracepoints, printk)


def _read_attrs(path: str | Path, buf: bytes, at: int, total: int, attr_size: int) -> list[FileAttr]:
    out = []
    for pos in range(at, at + total - attr_size + 1, attr_size):
        (size,) = _U32.unpack_from(buf, pos + 4)
        size = size or 64  # PERF_ATTR_SIZE_VER0
        if size + _SECTION.size != attr_size:
            raise _corrupt(path, f"an attr of {size} bytes in a table of {attr_size}-byte entries")
        ids_at, ids_size = _SECTION.unpack_from(buf, pos + size)
        if ids_at + ids_size > len(buf) or ids_size % 8:
            raise _corrupt(path, f"the ids of attr {len(out)} run past the end of the file")
        ids = struct.unpack_from(f"<{ids_size // 8}Q", buf, ids_at)
        out.append(FileAttr("", buf[pos : pos + size], tuple(ids)))
    return out


def _read_features(path: str | Path, buf: bytes, index_at: int, bits: Sequence[int]) -> dict[int, bytes]:
    feats = [i for i in range(256) if bits[i // 64] >> (i % 64) & 1]
    out: dict[int, bytes] = {}
    for n, feat in enumerate(feats):
        pos = index_at + n * _SECTION.size
        if pos + _SECTION.size > len(buf):
            raise _corrupt(path, "the feature index runs past the end of the file")
        offset, size = _SECTION.unpack_from(buf, pos)
        if offset + size > len(buf):
            raise _corrupt(path, f"feature {feat} runs past the end of the file")
        out[feat] = buf[offset : offset + size]
    return out


def sample_id_position(attrs: Sequence[FileAttr]) -> int | None:
    """Byte offset (after the header) of the event id in every sample, or None if one attr only.

    PERF_SAMPLE_IDENTIFIER puts it first; PERF_SAMPLE_ID puts it after the fixed fields before it,
    which must then be the same for every event of the file.
    """
    if len(attrs) == 1:
        return None
    positions = set()
    for a in attrs:
        st = a.sample_type
        if st & SampleType.IDENTIFIER:
            positions.add(0)
        elif st & SampleType.ID:
            before = (SampleType.IP, SampleType.TID, SampleType.TIME, SampleType.ADDR)
            positions.add(8 * sum(1 for bit in before if st & bit))
        else:
            positions.add(-1)
    if len(positions) != 1 or -1 in positions:
        return -1
    return positions.pop()
