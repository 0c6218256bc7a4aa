"""Tracepoint formats: parsing tracefs ``format`` files (every kind of field line), decoding raw
records with them (strings, fixed and dynamic arrays, signedness, pointers), the per-session
decoders, every format of this machine, and live samples decoded against what the kernel was
made to record (root)."""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

import pytest
from evspec.loader.errors import ObjectError
from evspec.loader.output.tracefs_format import Address, TracepointDecoders, parse_format, read_format

FORMAT = """name: demo
ID: 1234
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:short delta;\toffset:28;\tsize:2;\tsigned:1;
\tfield:u8 flag;\toffset:30;\tsize:1;\tsigned:0;
\tfield:s8 small;\toffset:31;\tsize:1;\tsigned:1;
\tfield:long state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:int dfd;\toffset:40;\tsize:8;\tsigned:0;
\tfield:const char * filename;\toffset:48;\tsize:8;\tsigned:0;
\tfield:__data_loc char[] path;\toffset:56;\tsize:4;\tsigned:0;
\tfield:__data_loc u64[] stack;\toffset:60;\tsize:4;\tsigned:0;
\tfield:u8 addr[4];\toffset:64;\tsize:4;\tsigned:0;
\tfield:s16 temps[2];\toffset:68;\tsize:4;\tsigned:1;
\tfield:__rel_loc char[] name;\toffset:72;\tsize:4;\tsigned:0;
\tfield:__data_loc s32[] deltas;\toffset:76;\tsize:4;\tsigned:0;

print fmt: "comm=%s pid=%d", REC->comm, REC->pid
"""


def record() -> bytes:
    """A record for FORMAT; the dynamic data follows the fixed part (80 bytes)."""
    path, stack, name, deltas = b"/tmp/x\0", struct.pack("=QQ", 1, 2**63), b"rel\0", struct.pack("=ii", -5, 6)
    start = 80
    loc_path = (len(path) << 16) | start
    loc_stack = (len(stack) << 16) | (start + len(path))
    rel_name = (len(name) << 16) | (start + len(path) + len(stack) - 76)  # from the field's end
    loc_deltas = (len(deltas) << 16) | (start + len(path) + len(stack) + len(name))
    fixed = struct.pack(
        "=HBBi16sihBbqQQIIBBBBhhII",
        1234, 0, 0, 4242, b"sh\0junk_after_nul", -7, -2, 200, -1, -1, 2**64 - 100, 0xFFFF8880DEADBEEF,
        loc_path, loc_stack, 10, 0, 0, 1, -3, 40, rel_name, loc_deltas,
    )
    assert len(fixed) == 80
    return fixed + path + stack + name + deltas


def test_every_kind_of_field_is_parsed() -> None:
    fmt = parse_format(FORMAT, "demo_sys", "demo")
    assert (fmt.name, fmt.id) == ("demo_sys:demo", 1234)
    assert [f.name for f in fmt.fields if f.common] == ["common_type", "common_flags", "common_preempt_count",
                                                        "common_pid"]
    by_name = {f.name: f for f in fmt.fields}
    assert by_name["comm"].array_len == 16 and by_name["comm"].is_string
    assert by_name["path"].dynamic == "data_loc" and by_name["path"].is_string
    assert by_name["stack"].dynamic == "data_loc" and by_name["stack"].element_size == 8
    assert by_name["name"].dynamic == "rel_loc"
    assert by_name["addr"].array_len == 4 and not by_name["addr"].is_string
    assert by_name["filename"].is_pointer and by_name["filename"].type == "const char *"
    assert by_name["temps"].element_size == 2 and by_name["temps"].element_signed


def test_a_record_is_decoded_by_size_signedness_and_kind() -> None:
    fields = parse_format(FORMAT, "demo_sys", "demo").decode(record())
    assert fields == {
        "comm": "sh", "pid": -7, "delta": -2, "flag": 200, "small": -1, "state": -1,
        "dfd": 2**64 - 100, "filename": 0xFFFF8880DEADBEEF, "path": "/tmp/x", "stack": (1, 2**63),
        "addr": (10, 0, 0, 1), "temps": (-3, 40), "name": "rel", "deltas": (-5, 6),
    }
    assert isinstance(fields["filename"], Address) and str(fields["filename"]) == "0xffff8880deadbeef"
    common = parse_format(FORMAT).decode(record(), common=True)
    assert common["common_pid"] == 4242 and common["common_type"] == 1234


def test_a_short_record_leaves_out_what_it_does_not_hold() -> None:
    fmt = parse_format(FORMAT)
    assert list(fmt.decode(record()[:30])) == ["comm", "pid", "delta"]
    broken = bytearray(record())
    broken[56:60] = struct.pack("=I", (500 << 16) | 80)  # the string would run past the record
    assert "path" not in fmt.decode(bytes(broken))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\nID: 1\n", "no 'format:' section"),
        ("format:\n\tfield:int x;\toffset:zero;\tsize:4;\tsigned:1;\n", "cannot read the field line"),
        ("format:\n\tfield:;\toffset:0;\tsize:4;\tsigned:1;\n", "cannot read the field line"),
    ],
)
def test_malformed_formats_raise_ek161(text: str, message: str) -> None:
    with pytest.raises(ObjectError, match=message) as info:
        parse_format(text, "s", "e")
    assert info.value.code == "EK161"


def test_decoders_read_each_format_once_and_note_what_is_missing(tmp_path: Path) -> None:
    events = tmp_path / "events" / "demo_sys" / "demo"
    events.mkdir(parents=True)
    (events / "format").write_text(FORMAT)
    decoders = TracepointDecoders(tmp_path)
    assert decoders.fields("demo_sys:demo", record())[:2] == (("comm", "sh"), ("pid", -7))  # type: ignore[index]
    (events / "format").unlink()
    assert decoders.format("demo_sys/demo") is not None and decoders.fields("demo_sys:demo", None) is None
    assert decoders.fields("demo_sys:demo", record()) is not None  # still cached
    assert decoders.fields("nope:gone", record()) is None and decoders.fields("__bpf_stdout__", b"x") is None
    assert len(decoders.notes) == 1 and decoders.notes[0].startswith("nope:gone: samples printed undecoded: cannot read")


# ----------------------------------------------------------------------- live


def test_every_format_of_this_machine_parses(tracefs: Path) -> None:
    formats = sorted((tracefs / "events").glob("*/*/format"))
    assert len(formats) > 500
    dynamic = 0
    for path in formats:
        fmt = parse_format(path.read_text(), path.parent.parent.name, path.parent.name)
        if (path.parent / "id").exists():  # ftrace's own events have none
            assert fmt.id == int((path.parent / "id").read_text())
        assert [f.name for f in fmt.fields if f.common][:1] == ["common_type"]
        dynamic += sum(f.dynamic is not None for f in fmt.fields)
    assert dynamic > 100


def _samples(event: str, argv: list[str]) -> list[tuple[int, bytes]]:
    """(pid, raw) of every sample of ``event`` while ``argv`` runs (opened for that child only)."""
    from evspec.loader.abi.perf import AttrFlag, PerfEventAttr, PerfType, SampleType
    from evspec.loader.kernel import Kernel
    from evspec.loader.output.perf_ring import PerfRing, Sample

    system, name = event.split(":")
    kernel = Kernel()
    sample_type = SampleType.TID | SampleType.RAW
    attr = PerfEventAttr(type=PerfType.TRACEPOINT, config=read_format(system, name).id or 0, sample_period=1,
                         sample_type=sample_type, wakeup_events=1)
    attr.flags = AttrFlag.DISABLED | AttrFlag.ENABLE_ON_EXEC
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.read(go_r, 1)
        os.execv(argv[0], argv)
    os.close(go_r)
    fd = kernel.perf_event_open(attr, pid=pid, cpu=-1)
    ring = kernel.mmap_ring(fd, 8)
    try:
        os.write(go_w, b"g")
        os.waitpid(pid, 0)
        return [(r.pid or 0, r.raw or b"") for r in PerfRing(ring, int(sample_type)).records() if isinstance(r, Sample)]
    finally:
        os.close(go_w)
        kernel.munmap(ring)
        kernel.close(fd)


def test_live_exec_and_openat_samples_decode_to_what_happened(tracefs: Path) -> None:
    true = "/bin/true"
    (pid, raw), = _samples("sched:sched_process_exec", [true])
    fields = read_format("sched", "sched_process_exec").decode(raw)
    assert fields == {"filename": true, "pid": pid, "old_pid": pid}

    target = "/etc/hostname"
    opened = _samples("syscalls:sys_enter_openat", [sys.executable, "-S", "-c", f"open({target!r}).close()"])
    fmt = read_format("syscalls", "sys_enter_openat")
    decoded = [fmt.decode(raw) for _pid, raw in opened]
    assert decoded and all(d["__syscall_nr"] == decoded[0]["__syscall_nr"] for d in decoded)
    # AT_FDCWD: the int -100 as the syscall saw it in a 64-bit register (perf prints 0xffffff9c)
    assert any(d["dfd"] == 2**32 - 100 for d in decoded)
    assert all(isinstance(d["filename"], Address) and d["filename"] > 0 for d in decoded)
    assert any(d["flags"] & os.O_ACCMODE == os.O_RDONLY for d in decoded)
