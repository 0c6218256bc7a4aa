"""Where event strings come from: ``-e`` arguments, files with one string per line, or stdin."""

from __future__ import annotations

import sys

from evspec.diagnostics import Source
from evspec.span import Slotted, set_field

TYPE_CHECKING = False  # imports for annotations only: a cold start does not pay for them
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence


class SpecInput(Slotted):
    """One event string and its origin. ``command`` groups the strings that form one perf command
    line (all ``-e`` arguments together; each line of a file on its own), which matters for
    ``map:NAME.event=EVT`` references to earlier events."""

    __slots__ = ("text", "source", "command")
    text: str
    source: Source
    command: int

    def __init__(self, text: str, source: Source, command: int) -> None:
        set_field(self, "text", text)
        set_field(self, "source", source)
        set_field(self, "command", command)


class InputError(Exception):
    """A file could not be read (reported as a usage/I-O error, exit status 2)."""


def _file_lines(name: str) -> Iterator[tuple[int, str]]:
    if name == "-":
        data = sys.stdin.read()
    else:
        try:
            with open(name, encoding="utf-8") as f:  # not pathlib: it costs the check path's cold start
                data = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read {name}: {exc.strerror if isinstance(exc, OSError) else exc}") from exc
    yield from enumerate(data.splitlines(), start=1)


def is_skipped_line(line: str) -> bool:
    """Blank lines and ``#`` comments in event files carry no event string."""
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def collect(event_args: Sequence[str], files: Sequence[str]) -> list[SpecInput]:
    """All ``-e`` strings first (one command), then every non-comment line of every file."""
    out = [SpecInput(text, Source("arg", index=i), command=0) for i, text in enumerate(event_args)]
    command = 1
    for name in files:
        display = "<stdin>" if name == "-" else name
        for number, line in _file_lines(name):
            if is_skipped_line(line):
                continue
            out.append(SpecInput(line, Source("file", path=display, line=number), command=command))
            command += 1
    return out
