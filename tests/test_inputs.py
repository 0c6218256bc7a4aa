from __future__ import annotations

from pathlib import Path

import pytest

from evspec.diagnostics import Source
from evspec.inputs import InputError, collect, is_skipped_line


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
