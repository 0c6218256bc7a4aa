"""Typed output maps in a perf.data file (``record -o``): which BTF type an event's samples are.

The samples of an event are the records of a typed output map (``map:NAME.type=TYPE``) in two
cases: the synthetic event of a ring buffer map (``ringbuf_capture``), and a bpf-output event
stored in a perf event array. The file's copy of such an event's attr says so in two fields that
the kernel ignores for a software event:

- ``config1``: the type of the map the records come through, BPF_MAP_TYPE_RINGBUF (27) for a ring
  buffer map's event (untyped ones too: the mark of those events), BPF_MAP_TYPE_PERF_EVENT_ARRAY
  (4) for a typed bpf-output event (an untyped one keeps the 0 it was opened with);
- ``config2``: the BTF type id in the low 32 bits, in the high ones the id of the BTF object in
  the file's HEADER_BPF_BTF section (u32 count, then per object u32 id, u32 size and its bytes).

The ids of HEADER_BPF_BTF are the file's own: a BPF object's is its place in load order + 1, and
the section holds the BTF of every object with a typed map, once, whatever kinds of maps it types
(perf writes the kernel's BTF ids there, keeps the objects by id and prints samples without them).
The type id is TYPE's own, a typedef staying one, as ``RecordDecoder.type_id`` says.
``evspec script`` (``replay.typed_decoder``) decodes the samples with a ``RecordDecoder`` of
that type, as live ``record`` does; a BTF object or type id the file lacks, a type that is no
struct, union or typedef, or a marked event whose samples have no raw data is an error.

The kernel's attr is not touched: the events are opened as the event strings say, and a string
that sets either field of a typed bpf-output event (or config1 to a mark on an untyped one) is
refused with ``-o`` (``output_file_attr``). The kernel would take both fields of a
software event and ignore them: its ``perf_swevent_init`` reads ``type`` and ``config`` alone,
and the attr copy checks only the reserved bits (6.18 opens a bpf-output event with config1 = 4
or 27 and config2 = 2**64 - 1 as with zeros).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evspec.loader.abi.perf import PerfEventAttr
from evspec.loader.abi.perf_ids import PerfType, SwConfig
from evspec.loader.errors import ObjectError

from evspec.codes.kernel import PERF_DATA_WRITE
from evspec.span import Slotted

if TYPE_CHECKING:
    from evspec.loader.output.typed import RecordDecoder

RINGBUF_MAP_TYPE = 27  # BPF_MAP_TYPE_RINGBUF
PERF_EVENT_ARRAY_MAP_TYPE = 4  # BPF_MAP_TYPE_PERF_EVENT_ARRAY
FILE_MARKS = (RINGBUF_MAP_TYPE, PERF_EVENT_ARRAY_MAP_TYPE)  # the config1 values of marked events


def btf_file_id(object_index: int) -> int:
    """The id of the BTF of the ``object_index``-th object (load order) in HEADER_BPF_BTF."""
    return object_index + 1


def type_config(btf_id: int, type_id: int) -> int:
    """``config2`` of an event whose samples are type ``type_id`` of BTF object ``btf_id``."""
    return btf_id << 32 | type_id


def config_type(config2: int) -> tuple[int, int] | None:
    """(BTF object id, type id) that ``config2`` names; None for 0 (no type)."""
    if not config2:
        return None
    return config2 >> 32, config2 & 0xFFFFFFFF


def is_bpf_output(attr: PerfEventAttr) -> bool:
    return attr.type == PerfType.SOFTWARE and attr.config == SwConfig.BPF_OUTPUT


def typed_output_attr(attr: PerfEventAttr, btf_id: int, type_id: int) -> PerfEventAttr:
    """A copy of a typed bpf-output event's ``attr`` for the file: marked, naming its type."""
    marked = PerfEventAttr.from_buffer_copy(attr)
    marked.config1 = PERF_EVENT_ARRAY_MAP_TYPE
    marked.config2 = type_config(btf_id, type_id)
    return marked


def is_typed_output_event(attr: PerfEventAttr) -> bool:
    """Whether ``attr`` is a typed bpf-output event's, as ``typed_output_attr`` marks it."""
    return is_bpf_output(attr) and attr.config1 == PERF_EVENT_ARRAY_MAP_TYPE


class TypedOutput(Slotted):
    """The type of a bpf-output event's samples: the map:NAME.type=TYPE of map ``map_name`` of the
    ``object_index``-th object (load order), whose records the event carries."""

    object_index: int
    map_name: str
    decoder: RecordDecoder


_LEAVE_THEM_OUT = ("the kernel ignores config1 and config2 of a bpf-output event: leave them out",
                   "or record without -o, which prints the samples")


def output_file_attr(name: str, attr: PerfEventAttr, typed: TypedOutput | None) -> PerfEventAttr:
    """The attr of bpf-output event ``name`` as a capture file holds it: a typed one's marked copy
    (``typed_output_attr``), an untyped one's as opened. The event string of a typed one must
    leave config1 and config2 alone, an untyped one must not set config1 to a mark: ObjectError."""
    config1, config2 = attr.config1, attr.config2
    if typed is None:
        if config1 in FILE_MARKS:
            what = "a ring buffer map's event" if config1 == RINGBUF_MAP_TYPE else "a typed bpf-output event"
            raise ObjectError(PERF_DATA_WRITE, f"bpf-output event {name} sets config1={config1}, which marks {what} "
                                               "in a capture file", help=_LEAVE_THEM_OUT)
        return attr
    if config1 or config2:
        taken = " and ".join(f"{field}={value:#x}" for field, value in (("config1", config1), ("config2", config2))
                             if value)
        raise ObjectError(PERF_DATA_WRITE, f"bpf-output event {name} sets {taken}, where a capture file names the "
                                           f"type of its samples (map:{typed.map_name}.type={typed.decoder.name})",
                          help=_LEAVE_THEM_OUT)
    return typed_output_attr(attr, btf_file_id(typed.object_index), typed.decoder.type_id)
