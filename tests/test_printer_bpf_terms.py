"""The printer on a BPF object's prog: and var: terms: each prints back as written, with and
without option and value. The mutants these tests were written to kill are listed in
tools/mutation/pins.toml."""

from __future__ import annotations

import pytest

from evspec.parser import analyze
from evspec.printer import print_events


@pytest.mark.parametrize("text", [
    "cpu-clock,./a.o/prog:on_tick.event=cpu-clock/",
    "./a.o/prog:on_tick/",
    "./a.o/prog:on_tick.event/",
    "./a.o/var:x=1/",
    "./a.o/var:flag/",
    "./a.o/var:comm='bash',map:m.value=2/",
])  # fmt: skip
def test_prog_and_var_terms_print_as_written(text: str) -> None:
    assert print_events(analyze(text).events) == text
