"""BPF ring buffer records in a perf.data file (``record -o``): the samples of a synthetic event.

Each ring buffer map of a recording is an event of the file that no kernel event stands behind: a
PERF_TYPE_SOFTWARE / PERF_COUNT_SW_BPF_OUTPUT attr (so ``perf script`` prints its samples as
bpf-output samples: hexdump, ``BPF string:``), named after the map in HEADER_EVENT_DESC, with
``config1`` = BPF_MAP_TYPE_RINGBUF (27: the mark by which ``evspec script`` knows it; the kernel's
bpf-output events are opened with 0 there, and a typed one's copy in the file has 4) and an id of
its own from ``RING_ID_BASE`` up (the kernel's event ids count up from 1 and never come near it).
The event of a typed map (``map:NAME.type=TYPE``) says which type in ``config2``, as a typed
bpf-output event's copy in the file does (``typed_capture``: the BTF type id in the low 32 bits,
in the high ones the id of the object's BTF in the file's HEADER_BPF_BTF section, one BTF object
per BPF object whatever kinds of maps it types).

Every record becomes a PERF_RECORD_SAMPLE of the sample_type the session's events sample
(``RING_SAMPLE_TYPE``: perf reads every sample's id at the same place, and refuses to print a
field some event lacks). The kernel gives a ring buffer record no task, CPU or time, so the
sample says: pid and tid -1, cpu -1 (perf's "no CPU"), ip 0, period 1, misc 0 (cpumode unknown),
and as its time the reader's reading of perf's clock (``PerfClock``) just after it took the record
from the ring: every record of one round of reading has the same time, later than the perf-ring
samples of that round. The raw data is the record's bytes exactly (the size word says its length,
zero padding after it fills the sample to 8 bytes).

No Python step is taken per record: the reader hands over a run of records of one size as the
ring's bytes (``RecordRun``), and their samples are the header repeated (the same for all of
them: one time a round) with the records' bytes copied in 4 bytes of every record at a time (a
strided memoryview copy; records longer than 64 bytes are cut out and joined instead). Records
that come one by one (sizes changing from record to record) are joined with each one's header
and padding, the three sequences zipped in C.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from itertools import chain, groupby

from evspec.loader.abi.perf import PerfEventAttr, RecordType
from evspec.loader.abi.perf_bits import AttrFlag, SampleType
from evspec.loader.abi.perf_ids import PERF_ATTR_SIZE_VER7, PerfType, SwConfig
from evspec.loader.errors import ObjectError
from evspec.loader.output.bpf_ringbuf import HEADER_SIZE, RecordRun, run_payloads
from evspec.loader.output.saved.typed_capture import RINGBUF_MAP_TYPE, config_type, type_config

from evspec.codes import kernel as codes

RING_ID_BASE = 1 << 63
RING_SAMPLE_TYPE = (
    SampleType.IDENTIFIER
    | SampleType.IP
    | SampleType.TID
    | SampleType.TIME
    | SampleType.CPU
    | SampleType.PERIOD
    | SampleType.RAW
)
NO_TASK = 0xFFFFFFFF  # pid, tid and cpu (u32) -1
_HEAD = struct.Struct("<IHHQQIIQIIQI")  # header, identifier, ip, pid, tid, time, cpu, reserved, period, raw size
_FIXED = _HEAD.size - 4 - 8  # the sample fields before the raw size word
MAX_RECORD = 0xFFFF - 8 - _FIXED - 4 - 7  # a record's size is 16 bits: the longest that fits a sample
_STRIDED_MAX = 64  # longer records of a run are cut and joined: fewer, longer copies


def ring_event_attr(btf_id: int = 0, type_id: int = 0) -> PerfEventAttr:
    """The attr of a ring buffer map's event in a capture file; a typed map's (map:NAME.type=TYPE)
    names its type: ``type_id`` in the BTF object ``btf_id`` of the file's HEADER_BPF_BTF."""
    attr = PerfEventAttr(type=PerfType.SOFTWARE, config=SwConfig.BPF_OUTPUT, sample_period=1,
                         sample_type=RING_SAMPLE_TYPE, config1=RINGBUF_MAP_TYPE,
                         config2=type_config(btf_id, type_id))
    attr.size = PERF_ATTR_SIZE_VER7
    attr.flags = AttrFlag.SAMPLE_ID_ALL
    return attr


def is_ring_event(attr: PerfEventAttr) -> bool:
    """Whether ``attr`` is a ring buffer map's synthetic event (``ring_event_attr``)."""
    return (attr.type == PerfType.SOFTWARE and attr.config == SwConfig.BPF_OUTPUT
            and attr.config1 == RINGBUF_MAP_TYPE)


def ring_event_type(attr: PerfEventAttr) -> tuple[int, int] | None:
    """(BTF object id, type id) of a typed ring buffer map's event, None for an untyped one."""
    return config_type(attr.config2)


def sample_size(length: int) -> int:
    """The bytes of the sample of a ``length``-byte record."""
    return 8 + _FIXED + ((4 + length + 7) & ~7)


class RingSamples:
    """The samples of the records of ring buffer map ``name``, for the event of id ``identifier``."""

    def __init__(self, name: str, identifier: int) -> None:
        self.name = name
        self.identifier = identifier

    def head(self, length: int, time: int) -> bytes:
        """Everything of a ``length``-byte record's sample before its bytes."""
        return _HEAD.pack(RecordType.SAMPLE, 0, sample_size(length), self.identifier, 0, NO_TASK, NO_TASK, time,
                          NO_TASK, 0, 1, length)

    def encode(self, records: Sequence[bytes | RecordRun], time: int) -> list[bytes | bytearray]:
        """The samples of ``records`` (what ``BpfRingReader.take_runs`` returns), in order, all
        stamped ``time``, as pieces for writev()."""
        out: list[bytes | bytearray] = []
        for kind, group in groupby(records, type):
            if kind is RecordRun:
                for run in group:
                    out.extend(self._run(run, time))  # type: ignore[arg-type]
            else:
                out.extend(self._loose(list(group), time))  # type: ignore[arg-type]
        return out

    def _too_big(self, length: int) -> ObjectError:
        return ObjectError(codes.PERF_DATA_WRITE, f"ring buffer map {self.name}: a record of {length} bytes does not "
                                                  f"fit a perf.data sample (at most {MAX_RECORD} bytes: perf's record "
                                                  "sizes are 16 bits)", help=("record without -o to print such records",))

    def _run(self, run: RecordRun, time: int) -> list[bytes | bytearray]:
        """The samples of a run of equal records: the header repeated, then the records' bytes
        copied into it column by column (a strided copy of 4 bytes of every record at a time)."""
        length, total, count = run.length, run.total, run.count
        if length > MAX_RECORD:
            raise self._too_big(length)
        if length > _STRIDED_MAX:
            return self._loose(run_payloads(run.span, length, total, count), time)
        size = sample_size(length)
        head = self.head(length, time)
        out = bytearray(head + bytes(size - len(head))) * count
        dst, src = memoryview(out), memoryview(run.span)
        words = length // 4
        if words:
            dst_words, src_words = dst.cast("I"), src.cast("I")
            for k in range(words):
                dst_words[_HEAD.size // 4 + k :: size // 4] = src_words[HEADER_SIZE // 4 + k :: total // 4]
        for k in range(4 * words, length):
            dst[_HEAD.size + k :: size] = src[HEADER_SIZE + k :: total]
        return [out]

    def _loose(self, records: Sequence[bytes], time: int) -> list[bytes | bytearray]:
        lengths = set(map(len, records))
        if max(lengths, default=0) > MAX_RECORD:
            raise self._too_big(max(lengths))
        if len(lengths) == 1:
            length = lengths.pop()
            head, pad = self.head(length, time), bytes(-(4 + length) % 8)
            return [head, (pad + head).join(records), pad]
        # each record between its own head and pad, the three sequences zipped in C
        heads = {n: self.head(n, time) for n in lengths}
        pads = {n: bytes(-(4 + n) % 8) for n in lengths}
        sizes = list(map(len, records))
        return [b"".join(chain.from_iterable(zip(map(heads.__getitem__, sizes), records,
                                                 map(pads.__getitem__, sizes), strict=True)))]
