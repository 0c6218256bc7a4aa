from __future__ import annotations

from pathlib import Path

import pytest

from evspec.diagnostics import Source
from evspec.inputs import InputError, collect, is_skipped_line, iter_inputs, split_comment


def test_event_args_form_one_command_and_keep_their_index() -> None:
    got = collect(["cycles", " instructions "], [])
    assert [(s.text, s.source, s.command) for s in got] == [
        ("cycles", Source("arg", index=0), 0),
        (" instructions ", Source("arg", index=1), 0),
    ]


def test_file_lines_skip_blanks_and_comments_and_keep_line_numbers(tmp_path: Path) -> None:
    f = tmp_path / "a.events"
    f.write_text("# header\n\ncycles:u\n   # indented comment\n  cpu-clock \n")
    got = collect([], [str(f)])
    assert [(s.text, s.source.line) for s in got] == [("cycles:u", 3), ("  cpu-clock ", 5)]
    assert all(s.source.path == str(f) for s in got)
    assert len({s.command for s in got}) == 2, "each file line is a command of its own"


def test_stdin_is_named_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("cycles\n"))
    (only,) = collect([], ["-"])
    assert only.source == Source("file", path="<stdin>", line=1)


def test_unreadable_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        collect([], [str(tmp_path / "missing.events")])


@pytest.mark.parametrize("line, skipped", [("", True), ("   ", True), ("#x", True), (" # x", True),
                                           ("cycles # x", False), ("cycles", False)])
def test_is_skipped_line(line: str, skipped: bool) -> None:
    assert is_skipped_line(line) is skipped


def test_a_comment_may_follow_a_string(tmp_path: Path) -> None:
    """`# comment` after a string was ES003 'white space not allowed here'."""
    f = tmp_path / "a.events"
    f.write_text("cycles:u  # user cycles\ncpu-clock/name='a #b'/\t# a quoted '#' stays\ncycles#u\n")
    got = collect([], [str(f)])
    assert [s.text for s in got] == ["cycles:u", "cpu-clock/name='a #b'/", "cycles#u"]


@pytest.mark.parametrize(("line", "text", "comment"), [
    ("cycles # c", "cycles", " # c"), ("cycles#c", "cycles#c", ""), ("a='#x' #y", "a='#x'", " #y"),
    ("cycles\t#\t", "cycles", "\t#\t"), ("cycles", "cycles", ""),
])
def test_split_comment(line: str, text: str, comment: str) -> None:
    assert split_comment(line) == (text, comment)


@pytest.mark.parametrize("breaker", ["\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_only_newline_ends_a_line(tmp_path: Path, breaker: str) -> None:
    """str.splitlines() broke lines at these too, and every later line number was off."""
    f = tmp_path / "a.events"
    f.write_bytes(f"cycles{breaker}x\r\ncpu-clock\ncycles:uu\n".encode())
    got = collect([], [str(f)])
    assert [(s.text, s.source.line) for s in got] == [(f"cycles{breaker}x", 1), ("cpu-clock", 2), ("cycles:uu", 3)]


def test_a_line_that_is_not_utf8_names_its_line(tmp_path: Path) -> None:
    f = tmp_path / "a.events"
    f.write_bytes(b"cycles\ncpu-clock\xff\n")
    with pytest.raises(InputError, match=r"cannot read .*a.events: line 2 is not UTF-8 text \(byte 10\)"):
        collect([], [str(f)])


def test_a_line_past_the_limit_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("evspec.inputs.MAX_LINE_BYTES", 100)
    f = tmp_path / "a.events"
    f.write_text("cycles\n" + "x" * 200)
    with pytest.raises(InputError, match="line 2 is longer than 100 bytes"):
        collect([], [str(f)])


def test_every_file_is_opened_before_a_string_is_read(tmp_path: Path) -> None:
    good = tmp_path / "a.events"
    good.write_text("cycles\n")
    with pytest.raises(InputError, match="cannot read .*missing.events"):
        iter_inputs(["cycles"], [str(good), str(tmp_path / "missing.events")])
