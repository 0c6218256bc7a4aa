"""Tracepoint samples in perf-script text and in JSON lines: the lines are perf 6.1's own output
for the same samples (captured with `perf record -e sched:sched_process_exec -e
syscalls:sys_enter_getppid -e sched:sched_switch` + `perf script`), where perf's print fmt is the
plain ``name=value`` list."""

from __future__ import annotations

import json
import struct

import pytest
from evspec.loader.output import script as script_output
from evspec.loader.output.script import (
    JsonRenderer,
    LostLine,
    SampleLine,
    TextRenderer,
    lost_json,
    lost_text,
    sample_json,
    sample_text,
    summary_json,
)
from evspec.loader.output.tracefs_format import Address, parse_format
from hypothesis import given, settings
from hypothesis import strategies as st

WIDTH = len("syscalls:sys_enter_getppid")  # the longest event name of that session
EXEC_FORMAT = """name: sched_process_exec
ID: 365
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:pid_t old_pid;\toffset:16;\tsize:4;\tsigned:1;

print fmt: "filename=%s pid=%d old_pid=%d", __get_str(filename), REC->pid, REC->old_pid
"""


def exec_raw() -> bytes:
    path = b"/usr/bin/sh\0"
    return struct.pack("=HBBiIii", 365, 0, 0, 6152, (len(path) << 16) | 20, 6152, 6152) + path


def line(event: str, time_ns: int, fields: tuple[tuple[str, object], ...], raw: bytes = b"") -> SampleLine:
    return SampleLine(event, "sh", 6152, 6152, 0, time_ns, 1, raw, fields)  # type: ignore[arg-type]


def test_a_decoded_tracepoint_sample_prints_like_perf_script() -> None:
    fields = tuple(parse_format(EXEC_FORMAT, "sched", "sched_process_exec").decode(exec_raw()).items())
    text = sample_text(line("sched:sched_process_exec", 3662_144282_123, fields, exec_raw()), WIDTH)
    assert text == (
        "              sh  6152 [000]  3662.144282:   sched:sched_process_exec: "
        "filename=/usr/bin/sh pid=6152 old_pid=6152\n"
    )


def test_a_tracepoint_without_fields_keeps_perfs_trailing_blank() -> None:
    text = sample_text(line("syscalls:sys_enter_getppid", 3662_144870_999, ()), WIDTH)
    assert text == "              sh  6152 [000]  3662.144870: syscalls:sys_enter_getppid: \n"


def test_strings_arrays_signed_numbers_and_pointers_in_text() -> None:
    fields = (("comm", "a b"), ("delta", -3), ("addr", (10, 0, 0, 1)), ("where", Address(0xFFFF8880DEADBEEF)))
    text = sample_text(line("x:y", 1_000_000_000, fields), 3)
    assert text.endswith("x:y: comm=a b delta=-3 addr=[10, 0, 0, 1] where=0xffff8880deadbeef\n")


def test_undecoded_samples_keep_the_bpf_output_layout() -> None:
    text = sample_text(line("x:y", 0, None, b"hi\0"), 3)  # type: ignore[arg-type]
    assert "BPF output: 0000: 68 69 00" in text and text.endswith('BPF string: "hi"\n\n')


def test_json_lines_carry_the_fields() -> None:
    fields = (("filename", "/usr/bin/sh"), ("pid", -1), ("stack", (1, 2)), ("ptr", Address(255)))
    record = json.loads(sample_json(line("sched:sched_process_exec", 5, fields, exec_raw())))
    assert record["fields"] == {"filename": "/usr/bin/sh", "pid": -1, "stack": [1, 2], "ptr": 255}
    assert record["raw_hex"] == exec_raw().hex() and record["event"] == "sched:sched_process_exec"
    assert "fields" not in json.loads(sample_json(line("e", 5, None)))  # type: ignore[arg-type]


# ------------------------------------------------- batch renderers, byte for byte

_payloads = st.one_of(
    st.none(),
    st.binary(max_size=40),
    st.text(alphabet="ab %\t\"\\\n", max_size=12).map(lambda t: t.encode() + b"\0"),
)
_samples = st.builds(
    SampleLine,
    event=st.sampled_from(["__bpf_stdout__", "evt", 'q"ote']),
    comm=st.text(alphabet="lop%s é\"", min_size=1, max_size=17),
    pid=st.integers(0, 1 << 22),
    tid=st.integers(0, 1 << 22),
    cpu=st.integers(0, 300),
    time_ns=st.integers(0, 1 << 50),
    period=st.integers(0, 1 << 33),
    raw=_payloads,
)
_lines = st.lists(st.one_of(_samples, st.builds(LostLine, st.just("evt"), st.integers(0, 8), st.integers(1, 99))),
                  max_size=30)


@settings(max_examples=150, deadline=None)
@given(_lines)
def test_batch_renderers_print_what_the_per_line_functions_print(lines: list[SampleLine | LostLine]) -> None:
    width = 16
    text = "".join(lost_text(x) if isinstance(x, LostLine) else sample_text(x, width) for x in lines)
    as_json = "".join(lost_json(x) if isinstance(x, LostLine) else sample_json(x) for x in lines)
    text_renderer, json_renderer = TextRenderer(width), JsonRenderer()
    assert text_renderer.render(lines) == text
    assert json_renderer.render(lines) == as_json
    assert text_renderer.render(lines) == text and json_renderer.render(lines) == as_json  # from the caches


def test_renderers_print_decoded_tracepoints_and_forget_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    fields = tuple(parse_format(EXEC_FORMAT, "sched", "sched_process_exec").decode(exec_raw()).items())
    tp = line("sched:sched_process_exec", 3662144282000, fields, exec_raw())
    assert TextRenderer(WIDTH).render([tp]) == sample_text(tp, WIDTH)
    assert JsonRenderer().render([tp]) == sample_json(tp)
    monkeypatch.setattr(script_output, "_CACHE_LIMIT", 2)
    renderer = TextRenderer(8)
    many = [SampleLine("e", "c", 1, 1, 0, 5, 1, bytes([i]), None) for i in range(5)]
    assert renderer.render(many) == "".join(sample_text(x, 8) for x in many)
    assert len(renderer._tails) <= 2


def test_summary_line() -> None:
    assert json.loads(summary_json({"samples": 3, "lost": 1, "lost_reported": 0})) == {
        "summary": {"samples": 3, "lost": 1, "lost_reported": 0}
    }
