"""libbpf's SEC("?...") (autoload off): the section is the name after the '?', with spans still
into the whole name, and autoload off; without the '?' the same section loads and attaches.
The mutants these tests were written to kill are listed in tools/mutation/pins.toml."""

from __future__ import annotations

from evspec.loader.sections.names import parse_section


def test_a_question_mark_turns_autoload_off_and_keeps_the_spans_in_the_name() -> None:
    off, on = parse_section("?tp/syscalls/sys_enter_openat"), parse_section("tp/syscalls/sys_enter_openat")
    assert (off.autoload, on.autoload) == (False, True)
    assert off.program_type == on.program_type
    assert (off.target.system, off.target.event) == ("syscalls", "sys_enter_openat")
    assert (off.main_span.start, off.main_span.end) == (1, 29)
    assert (off.target.system_span.start, off.target.event_span.start) == (4, 13)
    assert (on.main_span.start, on.target.system_span.start) == (0, 3)
