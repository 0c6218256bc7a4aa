"""Typed output maps (COMPAT 1.14, ``map:NAME.type=TYPE``): the offline checks of the term against
the object, the decoder over the object's BTF (short and long records), and record runs printing
a ring buffer's records and __bpf_stdout__'s samples as their structs, in text and JSON."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import struct
from pathlib import Path

import pytest
from bpf_build import build_bpf, build_program, copy_sources, require_tools
from corpus_files import DATA
from evspec.loader.btf.reader import Btf, BtfError, BtfKind, RawType, find_record_type, type_info, write_btf
from evspec.loader.errors import ObjectError
from evspec.loader.lint.terms.maps import check_map_terms, plan_map_updates, record_types
from evspec.loader.object.spec import ObjectSpec
from evspec.loader.output.script import (
    RingRecordLine,
    SampleLine,
    TextRenderer,
    ring_record_json,
    sample_json,
)
from evspec.loader.output.typed import RecordDecoder
from evspec.loader.session import _record_decoder, read_bpf_object
from record_cli import run_record as _record

from evspec.ast import BpfEvent
from evspec.parser import analyze
from evspec.span import Span

OBJ = "./typed.o"
TERMS = "map:events.type=event,map:__bpf_stdout__.type=out_t"
# typed.c counts the getppid() calls of the task called targ_comm only: this copy of getppid.c,
# named after this process so that no other run's workload counts either
WORKLOAD = f"typed_{os.getpid()}"
ONLY_WORKLOAD = f"var:targ_comm='{WORKLOAD}'"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tools("clang", "cc")
    out = tmp_path_factory.mktemp("typed")
    copy_sources(DATA / "typed", ("typed.c", "bytes.c"), out)
    copy_sources(DATA / "ringbuf", ("getppid.c",), out)
    build_program(out, "getppid.c", WORKLOAD)
    build_bpf(out, "typed.c", "typed.o")
    build_bpf(out, "bytes.c", "bytes.o")
    return out


def _spec(built: Path, name: str = "typed.o") -> ObjectSpec:
    return read_bpf_object(str(built / name), False, built)


def _event(text: str) -> BpfEvent:
    event = analyze(text).events.events()[0]  # the syntax stage's findings aside: the object's are tested
    assert isinstance(event, BpfEvent)
    return event


def _check(built: Path, text: str) -> list[tuple[str, str, Span, tuple[str, ...]]]:
    return [(d.code, d.message, d.span, tuple(d.help)) for d in check_map_terms(_event(text), _spec(built), {})]


# ------------------------------------------------------------------------------ offline checks


def test_the_terms_of_output_maps_are_valid_and_make_no_update(built: Path) -> None:
    text = f"{OBJ}/{TERMS}/"
    assert _check(built, text) == []
    assert plan_map_updates(_event(text), _spec(built)) == []  # nothing written into the maps
    assert record_types(_event(text), _spec(built)) == {"events": "event", "__bpf_stdout__": "out_t"}


def test_a_map_that_is_no_output_map_is_refused_on_the_option(built: Path) -> None:
    text = f"{OBJ}/map:counters.type=event/"
    (code, message, span, _), = _check(built, text)
    assert (code, message) == ("EB129", "map 'counters' is an ARRAY map, .type needs a RINGBUF or a PERF_EVENT_ARRAY")
    assert text[span.start:span.end] == "type" and span == Span(23, 27)


def test_an_unknown_type_is_refused_on_the_value_with_the_structs(built: Path) -> None:
    text = f"{OBJ}/map:events.type=evnt/"
    (code, message, span, help_), = _check(built, text)
    assert (code, message) == ("EB152", "no struct, union or typedef named 'evnt' in the object's BTF")
    assert span == Span(26, 30) and text[26:30] == "evnt"
    assert help_ == ("did you mean 'event'?", "structs in the object: event, inner, out")


def test_an_index_list_is_refused(built: Path) -> None:
    text = f"{OBJ}/map:events.type[0]=event/"
    (syntax,) = analyze(text).diagnostics  # the syntax stage (no object needed) and the object's check
    assert (syntax.code, syntax.span) == ("ES050", Span(25, 28))
    (code, message, span, _), = _check(built, text)
    assert (code, message) == ("EB151", "map:events.type takes no index list: it names the type of every "
                                        "record of the map")
    assert text[span.start:span.end] == "[0]"


def test_a_number_is_no_type_name(built: Path) -> None:
    text = f"{OBJ}/map:events.type=5/"
    (code, message, span, _), = _check(built, text)
    assert (code, span) == ("EB127", Span(26, 27))
    assert message == "'5' is a number: map:NAME.type takes the name of a BTF type"


def test_an_object_without_btf_is_an_error(built: Path) -> None:
    """A .maps section needs BTF, so the object is typed.o with its BTF taken away (a legacy
    ``maps`` section object compiled without -g is what has none)."""
    text = f"{OBJ}/map:events.type=event/"
    spec = dataclasses.replace(_spec(built), btf=None)
    ((code, message, span),) = [(d.code, d.message, d.span) for d in check_map_terms(_event(text), spec, {})]
    assert (code, message) == ("EB153", "the object has no BTF: map:events.type cannot find 'event'")
    assert text[span.start:span.end] == "event"


# ------------------------------------------------------------------------------ the decoder


def _decoder(built: Path, name: str) -> RecordDecoder:
    btf = Btf(_spec(built).btf or b"")
    found = find_record_type(btf, name)
    assert found is not None
    return RecordDecoder(btf, found)


EVENT = (1234).to_bytes(4, "little") + b"\0" * 4 + (99).to_bytes(8, "little") + b"getppid".ljust(16, b"\0") \
    + (2).to_bytes(4, "little") + b"\0" * 4


def test_a_whole_record_a_short_one_and_a_long_one(built: Path) -> None:
    decoder = _decoder(built, "event")
    assert decoder.size == 40
    whole = decoder.decode(EVENT)
    assert list(whole) == [("pid", 1234), ("ts", 99), ("comm", "getppid"), ("k", "KIND_EXIT")]
    assert (whole.size, whole.short, whole.rest) == (40, False, b"")
    short = decoder.decode(EVENT[:20])  # pid, ts, then 4 bytes of comm
    assert list(short) == [("pid", 1234), ("ts", 99), ("comm", "getp")] and short.short
    long = decoder.decode(EVENT + b"\xde\xad")
    assert long.rest == b"\xde\xad"
    width = len("events")
    render = TextRenderer(width).render
    assert render([RingRecordLine("events", EVENT, whole)]) == "events: pid=1234 ts=99 comm=getppid k=KIND_EXIT\n"
    assert render([RingRecordLine("events", EVENT[:20], short)]) == \
        "events: pid=1234 ts=99 comm=getp (short record: 20 of 40 bytes)\n"
    assert render([RingRecordLine("events", EVENT + b"\xde\xad", long)]).endswith("k=KIND_EXIT rest=de ad\n")
    assert json.loads(ring_record_json(RingRecordLine("events", EVENT[:20], short)))["short"] is True
    assert json.loads(ring_record_json(RingRecordLine("events", EVENT + b"\xde\xad", long)))["rest_hex"] == "dead"


def test_a_bpf_output_samples_kernel_padding_is_not_part_of_the_record(built: Path) -> None:
    """The kernel pads a sample's raw data so that it and its u32 size end on 8 bytes: a 40-byte
    struct comes as 44. Only zeros of exactly that length are padding; a ring buffer record, which
    the kernel does not pad, keeps them."""
    decoder = _decoder(built, "event")
    padded = decoder.decode_sample(EVENT + bytes(4))
    assert (padded.size, padded.rest, list(padded)) == (40, b"", list(decoder.decode(EVENT)))
    assert decoder.decode_sample(EVENT + b"\0\0\0\x01").rest == b"\0\0\0\x01"  # written by the program
    assert decoder.decode_sample(EVENT + bytes(12)).rest == bytes(12)  # more than padding
    assert decoder.decode(EVENT + bytes(4)).rest == bytes(4)


def test_only_char_arrays_are_text(built: Path) -> None:
    btf = Btf(_spec(built, "bytes.o").btf or b"")
    found = find_record_type(btf, "bytes")
    assert found is not None
    raw = b"ab\0\xff" + bytes([0x61, 0x62, 0, 0xFF]) + bytes([0xFF, 1]) + bytes([0x61, 0x62])
    assert list(RecordDecoder(btf, found).decode(raw)) == [
        ("name", "ab"), ("raw", [0x61, 0x62, 0, 0xFF]), ("deltas", [-1, 1]), ("mac", [0x61, 0x62])]


def test_a_typed_sample_prints_as_a_tracepoint_line(built: Path) -> None:
    decoder = _decoder(built, "out_t")
    raw = (3).to_bytes(4, "little") + bytes([7, 0, 9, 0]) + b"ok!\0"
    line = SampleLine("__bpf_stdout__", "getppid", 10, 10, 1, 2_000_001_000, 1, raw, decoder.decode(raw))
    assert TextRenderer(14).render([line]) == \
        "         getppid    10 [001]     2.000001: __bpf_stdout__: seq=3 nested={a=7, b=9} tag=ok!\n"
    record = json.loads(sample_json(line))
    assert (record["fields"], record["size"]) == ({"seq": 3, "nested": {"a": 7, "b": 9}, "tag": "ok!"}, 12)


# ------------------------------------------------------------------------------ for real


def test_record_prints_typed_records_as_text(built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(built)
    status, out, err = _record("-e", f"{OBJ}/{TERMS},{ONLY_WORKLOAD}/", "--", f"./{WORKLOAD}", "3")
    assert status == 0, err
    width = len("syscalls:sys_enter_getppid")
    rings = [line for line in out.splitlines() if line.startswith(f"{'events':>{width}}: ")]
    samples = [line for line in out.splitlines() if "__bpf_stdout__:" in line]
    assert len(rings) == 3 and len(samples) == 3
    pids = set()
    for line in rings:
        m = re.fullmatch(rf"{'events':>{width}}: pid=(\d+) ts=(\d+) comm={WORKLOAD} k=KIND_ENTER", line)
        assert m is not None, line
        pids.add(int(m.group(1)))
    (pid,) = pids
    for seq, line in enumerate(samples):
        m = re.fullmatch(rf" +{WORKLOAD} +(\d+) \[\d{{3}}\] +\d+\.\d{{6}}: +__bpf_stdout__: "
                         rf"seq={seq} nested=\{{a=7, b=9\}} tag=ok!", line)
        assert m is not None and int(m.group(1)) == pid, line


def test_record_prints_typed_records_as_json(built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(built)
    status, out, err = _record("--format", "json", "-e", f"{OBJ}/{TERMS},{ONLY_WORKLOAD}/", "--", f"./{WORKLOAD}",
                               "4")
    assert status == 0, err
    lines = [r for r in (json.loads(line) for line in out.splitlines()) if "event" in r]  # records only
    rings = [r for r in lines if r["event"] == "events"]
    samples = [r for r in lines if r["event"] == "__bpf_stdout__"]
    assert len(rings) == 4 and len(samples) == 4
    (pid,) = {s["pid"] for s in samples}  # the workload's (the program counts its getppid() only)
    for r in rings:
        assert r["ringbuf"] and r["size"] == 40 and "short" not in r
        assert {k: v for k, v in r["fields"].items() if k != "ts"} == {"pid": pid, "comm": WORKLOAD, "k": "KIND_ENTER"}
    assert [r["fields"]["ts"] for r in rings] == sorted(r["fields"]["ts"] for r in rings)
    assert [s["fields"] for s in samples] == [{"seq": n, "nested": {"a": 7, "b": 9}, "tag": "ok!"} for n in range(4)]
    assert all(s["comm"] == WORKLOAD and s["size"] == 12 for s in samples)


def test_record_refuses_a_type_the_object_lacks(built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(built)
    status, out, err = _record("-e", f"{OBJ}/map:events.type=evnt/", "--", f"./{WORKLOAD}", "1")
    assert status != 0 and out == ""
    assert "error[EB152]: no struct, union or typedef named 'evnt' in the object's BTF" in err


def test_the_samples_of_a_named_bpf_output_event_in_the_map_are_typed(
    built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """map:__bpf_stdout__.event=evt puts evt into the array instead of the automatic event: evt's
    samples are the ones decoded."""
    monkeypatch.chdir(built)
    status, out, err = _record("--format", "json", "-e", "bpf-output/no-inherit,name=evt/", "-e",
                               f"{OBJ}/map:__bpf_stdout__.event=evt,map:__bpf_stdout__.type=out_t,{ONLY_WORKLOAD}/",
                               "--", f"./{WORKLOAD}", "2")
    assert status == 0, err
    samples = [r for r in map(json.loads, out.splitlines()[:-1]) if r.get("event", "events") != "events"]
    assert [(s["event"], s["fields"]) for s in samples] == [
        ("evt", {"seq": n, "nested": {"a": 7, "b": 9}, "tag": "ok!"}) for n in range(2)]


def test_a_type_its_btf_cannot_decode_is_refused_when_the_decoder_is_made() -> None:
    """A struct that holds itself (corrupt BTF) fails as the decoder is made, before any record,
    and the session names the map and the type."""
    member = struct.pack("<III", 1, 1, 0)  # named "s", of type 1 (itself), at bit 0
    blob = write_btf([RawType(1, type_info(BtfKind.STRUCT, 1), 4, member)], b"\0s\0")
    with pytest.raises(BtfError, match="nested more than 32 levels deep"):
        RecordDecoder.named(blob, "s")
    with pytest.raises(ObjectError, match=r"^x\.o: map:events\.type=s: the object's BTF cannot decode the type: "):
        _record_decoder("x.o", blob, "events", "s")
