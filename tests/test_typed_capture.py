"""Typed bpf-output events (``map:NAME.type=TYPE`` on a perf event array) captured with
``record -o``: the file's copy of the event's attr names the type in the BTF object of its BPF
object (HEADER_BPF_BTF, shared with the object's typed ring buffers), ``evspec script`` decodes
the samples with the decoder live ``record`` uses, and perf 6.1 still prints them as bpf-output
hexdumps.

Without a kernel (clang for the objects' BTF): the marks themselves; a hand-made file of typed
samples — whole, short and long ones — printed by ``evspec script`` exactly as a live session
decodes and prints the same sample bytes, and by perf script as hexdumps; files naming a BTF
object, a type or raw data they lack, each an error. As root (tests/data/typed_capture): two
objects, each with a typed ring buffer and a typed perf event array (both with a `struct sample`,
laid out differently), and an untyped bpf-output event, recorded live and into a file: the attrs
the kernel got, the file's, its BTF objects, and the three printers against each other.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from bpf_build import build_bpf, build_program, copy_sources, require_tools
from corpus_files import DATA
from evspec.loader.abi.perf import PerfEventAttr, RecordType
from evspec.loader.abi.perf_bits import SampleType
from evspec.loader.abi.perf_ids import PerfType, SwConfig
from evspec.loader.btf.reader import Btf, BtfKind, find_record_type
from evspec.loader.errors import ObjectError
from evspec.loader.object.reader import read_object
from evspec.loader.output.saved import perfdata as pd
from evspec.loader.output.saved.capture import Capture, comm_record
from evspec.loader.output.saved.replay import name_width, script_lines
from evspec.loader.output.saved.ringbuf_capture import is_ring_event, ring_event_attr
from evspec.loader.output.saved.typed_capture import (
    TypedOutput,
    config_type,
    is_typed_output_event,
    output_file_attr,
    type_config,
    typed_output_attr,
)
from evspec.loader.output.script import JsonRenderer, SampleLine, TextRenderer, hexdump_text
from evspec.loader.output.typed import RecordDecoder
from evspec.loader.session import SAMPLE_TYPE, TRACKING_SAMPLE_TYPE, RecordSession, perf_attr
from record_cli import run_record, run_script

from evspec.compiler.recording import recording_plan

HOST = pd.HostInfo("box", "6.1.0", "evspec 0.1.0", "x86_64", 2, 2, ("evspec", "record", "-o", "x"))
TRACKING_ID, OUTPUT_ID, PLAIN_ID = 1, 7, 8
TRACKING = pd.FileAttr.of("dummy:tracking", perf_attr({"type": PerfType.SOFTWARE, "config": SwConfig.DUMMY,
                                                      "sample_type": TRACKING_SAMPLE_TYPE, "sample_id_all": 1}),
                          (TRACKING_ID,))
# typed_capture.c and second.c count the getppid() calls of the task of this comm only
WORKLOAD = f"tcap_{os.getpid()}"
CALLS = 7  # every case of n % 3 (whole, short, long sample) twice or more, both states


def output_attr(**values: int) -> PerfEventAttr:
    """A bpf-output event's attr as record opens it."""
    return perf_attr({"type": PerfType.SOFTWARE, "config": SwConfig.BPF_OUTPUT, "sample_period": 1,
                      "sample_type": SAMPLE_TYPE, "sample_id_all": 1, **values})


def script(path: Path, *argv: str) -> tuple[int, str, str]:
    return run_script("-i", str(path), *argv)


# ------------------------------------------------------------------------------ what the fixture writes


def sample_bytes(n: int) -> bytes:
    """typed_capture.c's n-th __bpf_stdout__ sample, exactly: struct sample (36 bytes), cut to 20
    or followed by 8 more."""
    whole = struct.pack("<IIHbxi8s4HI", n, 3 if n % 2 else 7, 1000 + n, -3, -n, b"sample!", 1, 2, n, 65535,
                        5 | 17 << 3)
    return (whole, whole[:20], whole + struct.pack("<II", 0xDEADBEEF, n))[n % 3]


def sample_fields(n: int) -> str:
    """How record prints sample_bytes(n) as typed_capture.c's struct sample."""
    head = f"seq={n} st={'ST_BUSY' if n % 2 else 'ST_DONE'} p={{lo={1000 + n}, delta=-3}} neg={-n} tag="
    whole = f"{head}sample! vals=[1, 2, {n}, 65535] flags=5 level=17"
    return (whole, f"{head}samp (short record: 20 of 36 bytes)", f"{whole} rest=ef be ad de {n:02x} 00 00 00")[n % 3]


def expected_fields(calls: int) -> dict[str, list[str]]:
    """The fields each typed event prints, call by call, for both objects."""
    return {
        "__bpf_stdout__": [sample_fields(n) for n in range(calls)],
        "evt2": [f"seq={n} square={n * n} cube={n ** 3}" for n in range(calls)],  # second.c's struct sample
        "ring": [f"seq={n} what=ring record" for n in range(calls)],
        "notes": [f"n={n} who=second" for n in range(calls)],
    }


# ------------------------------------------------------------------------------ no kernel


def test_a_typed_output_events_mark_is_in_a_copy_of_its_attr() -> None:
    attr = output_attr(inherit=0, disabled=1)
    opened = bytes(attr)
    marked = typed_output_attr(attr, 2, 36)
    assert bytes(attr) == opened  # what the kernel was given stays as it was
    assert (marked.config1, marked.config2) == (4, 2 << 32 | 36)
    marked.config1 = marked.config2 = 0
    assert bytes(marked) == opened  # nothing else differs
    marked = typed_output_attr(attr, 2, 36)
    assert is_typed_output_event(marked) and not is_typed_output_event(attr)
    assert not is_ring_event(marked) and not is_typed_output_event(ring_event_attr(2, 36))
    assert ring_event_attr(2, 36).config2 == marked.config2 == type_config(2, 36)  # one encoding for both
    assert config_type(marked.config2) == (2, 36) and config_type(0) is None


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tools("clang", "cc")
    out = tmp_path_factory.mktemp("typed-capture")
    copy_sources(DATA / "typed_capture", ("typed_capture.c", "second.c"), out)
    copy_sources(DATA / "ringbuf", ("getppid.c",), out)
    build_bpf(out, "typed_capture.c", "typed_capture.o")
    build_bpf(out, "second.c", "second.o")
    build_program(out, "getppid.c", WORKLOAD)
    return out


def _btf(built: Path, obj: str = "typed_capture.o") -> bytes:
    btf = read_object(built / obj).btf
    assert btf
    return btf


def _type_id(btf: bytes, name: str) -> int:
    found = find_record_type(Btf(btf), name)
    assert found is not None
    return found.id


def test_the_file_attr_of_a_bpf_output_event_marks_it_or_refuses_fields_the_marks_take(built: Path) -> None:
    decoder = RecordDecoder.named(_btf(built), "sample")
    typed = TypedOutput(1, "outs", decoder)
    marked = output_file_attr("evt2", output_attr(), typed)
    assert (marked.config1, marked.config2) == (4, 2 << 32 | decoder.type_id)  # the second object's BTF
    untyped = output_attr(config1=5, config2=9)
    assert output_file_attr("evt3", untyped, None) is untyped  # no mark: the kernel's attr as it is
    with pytest.raises(ObjectError, match=r"^bpf-output event evt2 sets config1=0x1 and config2=0x2, where a "
                                          r"capture file names the type of its samples \(map:outs.type=sample\)$"):
        output_file_attr("evt2", output_attr(config1=1, config2=2), typed)
    for mark, what in ((4, "a typed bpf-output event"), (27, "a ring buffer map's event")):
        with pytest.raises(ObjectError, match=f"^bpf-output event evt3 sets config1={mark}, which marks {what} in a "
                                              "capture file$") as refused:
            output_file_attr("evt3", output_attr(config1=mark), None)
        assert refused.value.help[0] == "the kernel ignores config1 and config2 of a bpf-output event: leave them out"


_SAMPLE_HEAD = struct.Struct("<IHHQQIIQIIQI")  # SAMPLE_TYPE's fields up to the raw size word


def sample_record(identifier: int, pid: int, time: int, raw: bytes) -> bytes:
    """A PERF_RECORD_SAMPLE of SAMPLE_TYPE on CPU 1, as the kernel writes one (user mode, period 1)."""
    assert (4 + len(raw)) % 8 == 0  # the kernel pads raw data to that: this raw needs none
    return _SAMPLE_HEAD.pack(RecordType.SAMPLE, 2, _SAMPLE_HEAD.size + len(raw), identifier, 0x401000, pid, pid,
                             time, 1, 0, 1, len(raw)) + raw


def hand_capture(path: Path, attrs: list[pd.FileAttr], records: bytes, btfs: dict[int, bytes]) -> Path:
    capture = Capture(path, [TRACKING, *attrs], [], HOST, btfs=btfs)
    capture.writer.write(records)
    capture.writer.end_round()
    capture.finish()
    return capture.path


def _this_task() -> tuple[int, str]:
    """This process's pid and name: a live session names the task of a sample from /proc."""
    return os.getpid(), Path("/proc/self/comm").read_text().rstrip("\n")


def typed_file(tmp_path: Path, built: Path) -> tuple[Path, list[bytes], bytes]:
    """A file of CALLS typed __bpf_stdout__ samples of this process (each followed by an untyped
    sample of ``plain``), their raw data, and the samples' bytes as a perf ring held them."""
    btf = _btf(built)
    pid, comm = _this_task()
    attrs = [pd.FileAttr.of("__bpf_stdout__", typed_output_attr(output_attr(), 1, _type_id(btf, "sample")),
                            (OUTPUT_ID,)),
             pd.FileAttr.of("plain", output_attr(), (PLAIN_ID,))]
    raws = [sample_bytes(n) for n in range(CALLS)]
    samples = b"".join(sample_record(OUTPUT_ID, pid, 5_000_000_000 + 1000 * n, raw)
                       + sample_record(PLAIN_ID, pid, 5_000_000_500 + 1000 * n, b"plain!\0\0\0\0\0\0")
                       for n, raw in enumerate(raws))
    path = hand_capture(tmp_path / "typed.data", attrs, comm_record(pid, pid, comm, TRACKING_ID) + samples, {1: btf})
    return path, raws, samples


def live_lines(built: Path, samples: bytes) -> list[SampleLine]:
    """What live record's renderer gets from ``samples`` as taken from the perf rings on CPU 1
    (one per event), with __bpf_stdout__ typed as record types it (map:__bpf_stdout__.type=sample)."""
    from functools import partial

    from evspec.loader.output.live.follow import Follower
    from evspec.loader.output.live.samples import RingDecoder
    from evspec.loader.output.live.spool import PERF, Frame
    from evspec.loader.output.script import SampleRun
    from evspec.loader.output.typed import TypedDecoders

    typed = TypedDecoders()
    typed.add("__bpf_stdout__", RecordDecoder.named(_btf(built), "sample"))
    decoders = [RingDecoder("__bpf_stdout__", 1, int(SAMPLE_TYPE), partial(typed.fields, "__bpf_stdout__")),
                RingDecoder("plain", 1, int(SAMPLE_TYPE))]
    lines: list[SampleLine] = []

    def collect(batch: list[object]) -> tuple[()]:
        lines.extend(line for run in batch if isinstance(run, SampleRun) for line in run.lines())
        return ()

    follower = Follower(decoders, [], collect, lambda _: None)
    pos = 0
    while pos < len(samples):  # each sample to its event's ring, as the kernel writes them
        size = struct.unpack_from("<H", samples, pos + 6)[0]
        ring = 0 if struct.unpack_from("<Q", samples, pos + 8)[0] == OUTPUT_ID else 1
        follower.take(Frame(PERF, ring, 0, samples[pos:pos + size]))
        pos += size
    follower.finish()
    return lines


def test_evspec_script_prints_typed_samples_as_a_live_session_decodes_them(tmp_path: Path, built: Path) -> None:
    path, raws, samples = typed_file(tmp_path, built)
    data = pd.read_perf_data(path)
    lines = list(script_lines(data))
    live = live_lines(built, samples)
    assert lines == live  # the same task, CPU, time, period, raw data and decoded fields, sample by sample
    typed = [line for line in lines if line.event == "__bpf_stdout__"]
    assert [line.raw for line in typed] == raws
    width = name_width(data)
    assert width == len("__bpf_stdout__")
    status, text, err = script(path)
    assert (status, err) == (0, "")
    assert text == TextRenderer(width).render(live)
    _, comm = _this_task()
    want = [f"{comm:>16} {os.getpid():5d} [001]     5.{n:06d}: __bpf_stdout__: {sample_fields(n)}" for n in range(CALLS)]
    assert [line for line in text.splitlines() if "__bpf_stdout__:" in line] == want
    assert text.count('BPF string: "plain!"') == CALLS  # the untyped event's samples as ever
    status, text, err = script(path, "--format", "json")
    assert (status, err) == (0, "")
    assert text == JsonRenderer().render(live) + f'{{"summary": {{"samples": {2 * CALLS}, "lost": 0}}}}\n'
    rows = [json.loads(line) for line in text.splitlines() if '"event": "__bpf_stdout__"' in line]
    assert [(r["size"], r.get("short", False), r.get("rest_hex")) for r in rows[:3]] == [
        (36, False, None), (20, True, None), (44, False, "efbeadde02000000")]
    assert rows[0]["fields"] == {"seq": 0, "st": "ST_DONE", "p": {"lo": 1000, "delta": -3}, "neg": 0, "tag": "sample!",
                                 "vals": [1, 2, 0, 65535], "flags": 5, "level": 17}
    assert rows[1]["fields"] == {"seq": 1, "st": "ST_BUSY", "p": {"lo": 1001, "delta": -3}, "neg": -1, "tag": "samp"}


_PERF_HEAD = re.compile(r"^\s*\S+\s+-?\d+\s+\[-?\d+\]\s+\d+\.\d{6}:\s+\d+\s+(\S+):")
_DUMP = re.compile(r"^\s*(?:BPF output:)?\s*[0-9a-f]{4}:((?: [0-9a-f]{2})+)")


def perf_payloads(perf: str, path: Path) -> dict[str, list[bytes]]:
    """The payload of every sample perf script prints, by event (from its ``BPF output:`` lines)."""
    done = subprocess.run([perf, "script", "-i", str(path)], capture_output=True, encoding="latin-1",
                          env={**os.environ, "LC_ALL": "C"})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    out: dict[str, list[bytes]] = {}
    current: list[bytes] | None = None
    for line in done.stdout.split("\n"):
        head = _PERF_HEAD.match(line)
        if head is not None:
            current = out.setdefault(head.group(1), [])
            current.append(b"")
        elif current is not None and (dump := _DUMP.match(line)) is not None:
            current[-1] += bytes.fromhex(dump.group(1))
    return out


def test_perf_script_prints_typed_samples_as_bpf_output(tmp_path: Path, built: Path, perf_binary: str) -> None:
    path, raws, _ = typed_file(tmp_path, built)
    assert perf_payloads(perf_binary, path) == {"__bpf_stdout__": raws, "plain": [b"plain!\0\0\0\0\0\0"] * CALLS}


def _marked(config2: int, **values: int) -> PerfEventAttr:
    attr = typed_output_attr(output_attr(**values), 0, 0)
    attr.config2 = config2
    return attr


@pytest.mark.parametrize(("make_attr", "message"), [
    (lambda btf: _marked(type_config(2, _type_id(btf, "sample"))),
     "bpf-output event __bpf_stdout__ is typed by BTF object 2, which HEADER_BPF_BTF does not hold"),
    (lambda btf: _marked(type_config(1, 99_999)),
     "the type 99999 of bpf-output event __bpf_stdout__ in BTF object 1: BTF type id 99999 is out of range"),
    (lambda btf: _marked(0), "bpf-output event __bpf_stdout__ is marked typed (config1 = 4) but names no type "
                             "(config2 = 0)"),
    (lambda btf: _marked(type_config(1, _type_id(btf, "sample")), sample_type=int(SAMPLE_TYPE & ~SampleType.RAW)),
     "bpf-output event __bpf_stdout__ is typed, but its samples carry no raw data (sample_type 0x"),
])
def test_a_typed_event_the_file_cannot_decode_is_an_error(
    tmp_path: Path, built: Path, make_attr: Callable[[bytes], PerfEventAttr], message: str
) -> None:
    btf = _btf(built)
    pid, comm = _this_task()
    attrs = [pd.FileAttr.of("__bpf_stdout__", make_attr(btf), (OUTPUT_ID,))]
    path = hand_capture(tmp_path / "bad.data", attrs, comm_record(pid, pid, comm, TRACKING_ID), {1: btf})
    status, out, err = script(path)
    assert (status, out) == (2, "")
    assert err.startswith(f"evspec script: error: {path}: ") and message in err, err


def test_a_type_that_map_type_would_not_take_is_an_error(tmp_path: Path, built: Path) -> None:
    """A type id of the file's BTF that is no struct, union or typedef (here an INT): its kind and
    name, and what map:NAME.type takes."""
    btf = _btf(built)
    int_type = next(t for t in Btf(btf).types() if t.kind == BtfKind.INT)
    attrs = [pd.FileAttr.of("__bpf_stdout__", _marked(type_config(1, int_type.id)), (OUTPUT_ID,))]
    path = hand_capture(tmp_path / "int.data", attrs, b"", {1: btf})
    status, _, err = script(path)
    assert status == 2
    assert err == (f"evspec script: error: {path}: the type {int_type.id} of bpf-output event __bpf_stdout__ in "
                   f"BTF object 1 is INT '{int_type.name}', not a struct, union or typedef\n")


# ------------------------------------------------------------------------------ for real


ONLY_WORKLOAD = f"var:targ_comm='{WORKLOAD}'"


def event_strings(*, notes_typed: bool = True) -> list[str]:
    notes = ",map:notes.type=note" if notes_typed else ""
    return ["bpf-output/no-inherit,name=evt2/", "bpf-output/no-inherit,name=evt3/",
            f"./typed_capture.o/map:__bpf_stdout__.type=sample,map:ring.type=ring_rec,{ONLY_WORKLOAD}/",
            f"./second.o/map:outs.event=evt2,map:outs.type=sample,map:plain.event=evt3{notes},{ONLY_WORKLOAD}/"]


@pytest.fixture(scope="module")
def recorded(built: Path, root_kernel: None) -> dict[str, tuple[str, str]]:
    """One capture and one live run of each format, of CALLS calls: (stdout, stderr) of each."""
    events = [arg for text in event_strings() for arg in ("-e", text)]
    cwd = os.getcwd()
    os.chdir(built)
    try:
        results = {}
        for name, argv in (("capture", ("-o", "cap.data")), ("text", ()), ("json", ("--format", "json"))):
            status, out, err = run_record(*argv, *events, "--", f"./{WORKLOAD}",
                                   str(CALLS))
            assert status == 0, err
            results[name] = (out, err)
    finally:
        os.chdir(cwd)
    return results


@pytest.mark.parametrize("notes_typed", [True, False])
def test_the_kernel_opens_the_events_as_their_strings_say_and_the_file_names_their_types(
    built: Path, root_kernel: None, notes_typed: bool
) -> None:
    """The session's own attrs (what perf_event_open got) have config1 = config2 = 0; the file's
    copies of the typed bpf-output events differ from them in those two fields alone, naming the
    type in the BTF of their own object; one BTF object per BPF object, its ids shared by ring
    buffer and bpf-output events (and there for an object whose only typed map is a perf event
    array: second.o without map:notes.type)."""
    from evspec.loader.session import Workload

    from evspec.check import CheckOptions, check_specs
    from evspec.diagnostics import Source
    from evspec.inputs import SpecInput
    from evspec.system import load_system

    system = load_system("live")
    inputs = [SpecInput(text, Source("arg", index=i), command=0)
              for i, text in enumerate(event_strings(notes_typed=notes_typed))]
    lists = [c.events for c in check_specs(inputs, CheckOptions(system=system, mode="record", cwd=built))]
    workload = Workload([str(built / WORKLOAD), "1"])
    try:
        with RecordSession() as session:
            session.prepare(lists, recording_plan(lists, system), system, built, workload)  # type: ignore[arg-type]
            opened = {ev.name: bytes(ev.attr) for ev in session.events}
            files = {a.name: a for a in session.file_attrs()}
            btfs = session.file_btfs()
            assert {ev.name: bytes(ev.attr) for ev in session.events} == opened  # untouched
            assert {(ev.attr.config1, ev.attr.config2) for ev in session.events} == {(0, 0)}
    finally:
        workload.close()
    first, second = _btf(built), _btf(built, "second.o")
    assert btfs == {1: first, 2: second}
    assert Btf(first).size_of(_type_id(first, "sample")) == 36 and Btf(second).size_of(_type_id(second, "sample")) == 12
    marks = {name: (a.parsed().config1, a.parsed().config2) for name, a in files.items()}
    assert marks == {
        "dummy:tracking": (0, 0), "syscalls:sys_enter_getppid": (0, 0), "evt3": (0, 0),
        "__bpf_stdout__": (4, 1 << 32 | _type_id(first, "sample")),
        "evt2": (4, 2 << 32 | _type_id(second, "sample")),
        "ring": (27, 1 << 32 | _type_id(first, "ring_rec")),
        "notes": (27, 2 << 32 | _type_id(second, "note") if notes_typed else 0),
    }
    for name in ("__bpf_stdout__", "evt2"):
        copy = files[name].parsed()
        copy.config1 = copy.config2 = 0
        assert bytes(copy) == opened[name]


def test_the_capture_file_names_each_type_in_its_objects_btf(built: Path, recorded: dict[str, tuple[str, str]]) -> None:
    data = pd.read_perf_data(built / "cap.data")
    assert data.btfs() == {1: _btf(built), 2: _btf(built, "second.o")}
    typed = {a.name for a in data.attrs if is_typed_output_event(a.parsed())}
    assert typed == {"__bpf_stdout__", "evt2"}
    assert f"({5 * CALLS} samples, 0 lost) ]" in recorded["capture"][1]


_TASK = re.compile(r"^( *\S+) +(\d+) \[(\d{3})\] +(\d+\.\d{6}):")


def records_by_event(text: str, events: set[str]) -> dict[str, list[str]]:
    """The records of record's or script's text, by event: each one's lines joined, the tid, CPU
    and time of its task columns replaced by TID, CPU and TIME (what two runs cannot share)."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.split("\n"):
        masked = _TASK.sub(r"\1 TID [CPU] TIME:", line)
        head = re.match(r"^ *(?:\S+ TID \[CPU\] TIME: +(?:\d+ +)?)?(\S+): ", masked + " ")
        if head is not None and head.group(1) in events:
            current = out.setdefault(head.group(1), [])
            current.append(masked)
        elif re.fullmatch(r"[\w.,]+:", line):  # record's tables of counted maps, at exit: no record's
            current = None
        elif line and current:
            current[-1] += "\n" + line
    return out


EVENTS = {"__bpf_stdout__", "evt2", "evt3", "ring", "notes"}


def test_evspec_script_prints_the_capture_as_live_record_prints_it(
    built: Path, recorded: dict[str, tuple[str, str]]
) -> None:
    """For each event, the same records in the same order and the same text; what two runs cannot
    share is the workload's tid, the CPUs and the times (and the order of lines of different
    events: live record prints what each read of the rings brought, ring buffer maps first, and
    script prints in time order, as perf script)."""
    live_text = recorded["text"][0]
    status, text, err = script(built / "cap.data")
    assert (status, err) == (0, "")
    live, ours = records_by_event(live_text, EVENTS), records_by_event(text, EVENTS)
    assert ours == live
    width = len("syscalls:sys_enter_getppid")  # both align the names to the longest event's
    for event, fields in expected_fields(CALLS).items():
        if event in ("ring", "notes"):  # no task columns: the lines themselves are equal
            assert ours[event] == [f"{event:>{width}}: {f}" for f in fields]
        else:
            assert ours[event] == [f"{WORKLOAD:>16} TID [CPU] TIME: {event:>{width}}: {f}" for f in fields]
    assert [record.split("\n", 1)[1] for record in ours["evt3"]] == [hexdump_text(bytes([n, 7, 6, 5]))
                                                                     for n in range(CALLS)]
    tids = {m.group(2) for m in map(_TASK.match, text.split("\n")) if m}
    assert len(tids) == 1  # the workload's, which typed_capture.c and second.c count alone


def test_evspec_script_prints_the_capture_as_live_record_prints_it_as_json(
    built: Path, recorded: dict[str, tuple[str, str]]
) -> None:
    status, text, err = script(built / "cap.data", "--format", "json")
    assert (status, err) == (0, "")

    def by_event(output: str) -> dict[str, list[dict[str, object]]]:
        out: dict[str, list[dict[str, object]]] = {}
        for row in map(json.loads, output.splitlines()):
            if "event" in row:
                for what_two_runs_differ_in in ("pid", "tid", "cpu", "time_ns"):
                    row.pop(what_two_runs_differ_in, None)
                out.setdefault(row["event"], []).append(row)
        return out

    ours, live = by_event(text), by_event(recorded["json"][0])
    assert ours == live
    assert text.splitlines()[-1] == recorded["json"][0].splitlines()[-1] == (
        f'{{"summary": {{"samples": {5 * CALLS}, "lost": 0}}}}')
    assert [r["raw_hex"] for r in ours["__bpf_stdout__"]] == [sample_bytes(n).hex() for n in range(CALLS)]
    assert [r["fields"] for r in ours["evt2"]] == [{"seq": n, "square": n * n, "cube": n ** 3} for n in range(CALLS)]
    assert all("fields" not in r and r["comm"] == WORKLOAD for r in ours["evt3"])


def test_perf_script_reads_the_capture_and_prints_the_typed_samples_as_bpf_output(
    built: Path, recorded: dict[str, tuple[str, str]], perf_binary: str
) -> None:
    payloads = perf_payloads(perf_binary, built / "cap.data")
    assert payloads["__bpf_stdout__"] == [sample_bytes(n) for n in range(CALLS)]
    assert payloads["evt2"] == [struct.pack("<III", n, n * n, n ** 3) for n in range(CALLS)]
    assert payloads["evt3"] == [bytes([n, 7, 6, 5]) for n in range(CALLS)]
    assert payloads["ring"] == [struct.pack("<I12s", n, b"ring record") for n in range(CALLS)]
    assert payloads["notes"] == [struct.pack("<Q8s", n, b"second") for n in range(CALLS)]


def _record(built: Path, monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[int, str, str]:
    monkeypatch.chdir(built)
    return run_record(*argv, "--", f"./{WORKLOAD}", "2")


@pytest.mark.parametrize(("second_terms", "second_said", "why"), [
    # both typed `sample`, of two layouts: its samples could be either
    ("map:outs.type=sample,", " (map:outs.type=sample)", "its samples cannot be decoded as both types"),
    # second.o's outs untyped: its samples would be decoded as typed_capture.o's type
    ("", ", which has no type", "its samples cannot be told apart"),
])
def test_one_event_in_maps_typed_differently_is_an_error(
    built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch, second_terms: str, second_said: str, why: str,
) -> None:
    """evt2 in __bpf_stdout__ of typed_capture.o and in outs of second.o: live as in a file, its
    samples do not say which map they came through."""
    status, out, err = _record(
        built, monkeypatch, "-e", "bpf-output/no-inherit,name=evt2/",
        "-e", f"./typed_capture.o/map:__bpf_stdout__.event=evt2,map:__bpf_stdout__.type=sample,{ONLY_WORKLOAD}/",
        "-e", f"./second.o/map:outs.event=evt2,{second_terms}{ONLY_WORKLOAD}/")
    assert (status, out) == (2, "")
    assert (f"evspec record: error: event evt2 carries the records of map __bpf_stdout__ of {built}/typed_capture.o "
            f"(map:__bpf_stdout__.type=sample) and of map outs of {built}/second.o{second_said}: {why}\n"
            "  help: give each typed map a bpf-output event of its own "
            "(bpf-output/no-inherit,name=NAME/ and map:MAP.event=NAME)\n") in err


def test_one_event_in_maps_of_one_type_names_the_first_objects_btf(
    built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """second.o twice, evt2 in both copies' outs: one type of one BTF, named once."""
    status, _, err = _record(built, monkeypatch, "-o", "twice.data", "-e", "bpf-output/no-inherit,name=evt2/",
                             *(arg for _ in range(2)
                               for arg in ("-e", f"./second.o/map:outs.event=evt2,map:outs.type=sample,{ONLY_WORKLOAD}/")))
    assert status == 0, err
    data = pd.read_perf_data(built / "twice.data")
    second = _btf(built, "second.o")
    (evt2,) = [a.parsed() for a in data.attrs if a.name == "evt2"]
    assert (evt2.config1, evt2.config2) == (4, 1 << 32 | _type_id(second, "sample")) and data.btfs() == {1: second}
    status, text, _ = script(built / "twice.data", "--format", "json")
    assert status == 0
    fields = [r["fields"] for r in map(json.loads, text.splitlines()) if r.get("event") == "evt2"]
    assert fields == [{"seq": n, "square": n * n, "cube": n ** 3} for n in (0, 0, 1, 1)]  # each copy's calls


@pytest.mark.parametrize(("event", "terms", "message"), [
    ("bpf-output/no-inherit,name=evt2,config2=5/", "map:outs.event=evt2,map:outs.type=sample",
     "bpf-output event evt2 sets config2=0x5, where a capture file names the type of its samples "
     "(map:outs.type=sample)"),
    ("bpf-output/no-inherit,name=evt2,config1=4/", "map:outs.event=evt2",
     "bpf-output event evt2 sets config1=4, which marks a typed bpf-output event in a capture file"),
    ("bpf-output/no-inherit,name=evt2,config1=27/", "map:outs.event=evt2",
     "bpf-output event evt2 sets config1=27, which marks a ring buffer map's event in a capture file"),
])
def test_a_bpf_output_event_setting_the_fields_of_the_files_marks_is_refused_with_o(
    built: Path, root_kernel: None, monkeypatch: pytest.MonkeyPatch, event: str, terms: str, message: str
) -> None:
    """The kernel would take them (and ignore them): the event opens, and without -o it records."""
    objects = ("-e", event, "-e", f"./second.o/{terms},{ONLY_WORKLOAD}/")
    status, out, err = _record(built, monkeypatch, "-o", "marks.data", *objects)
    assert (status, out) == (2, "")
    assert f"evspec record: error: {message}\n  help: the kernel ignores config1 and config2 of a bpf-output " \
           "event: leave them out\n  help: or record without -o, which prints the samples\n" in err
    status, out, err = _record(built, monkeypatch, "--format", "json", *objects)
    assert status == 0, err
    # (and second.o's ring buffer's records, read with no term); second.o's perf event array 'plain'
    # gets the bpf-output event record creates for it
    assert sorted(r["event"] for r in map(json.loads, out.splitlines()) if r.get("event", "notes") != "notes") == [
        "evt2", "evt2", "plain", "plain"]
