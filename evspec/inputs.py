"""Where event strings come from: ``-e`` arguments, files with one string per line, or stdin."""

from __future__ import annotations

import io
import sys

from evspec.diagnostics import Source
from evspec.span import Slotted

TYPE_CHECKING = False  # imports for annotations only: a cold start does not pay for them
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import BinaryIO


class SpecInput(Slotted):
    """One event string and its origin. ``command`` groups the strings that form one perf command
    line (all ``-e`` arguments together; each line of a file on its own), which matters for
    ``map:NAME.event=EVT`` references to earlier events."""

    text: str
    source: Source
    command: int


class InputError(Exception):
    """A file could not be read (reported as a usage/I-O error, exit status 2)."""


#: the longest line of an events file read (a longer one is an input error, not a string)
MAX_LINE_BYTES = 16 << 20


def _open(name: str) -> BinaryIO:
    if name == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream put in place of stdin
            return io.BytesIO(sys.stdin.read().encode("utf-8", "surrogateescape"))
        return stream  # type: ignore[no-any-return]
    try:
        return open(name, "rb")  # not pathlib: it costs the check path's cold start
    except OSError as exc:
        raise InputError(f"cannot read {name}: {exc.strerror}") from exc


def _file_lines(name: str, f: BinaryIO) -> Iterator[tuple[int, str]]:
    """The lines of an open file, read as they are needed: split at '\n' only (a '\r' before it
    dropped), since '\v', '\f', U+2028 and the other characters ``str.splitlines`` breaks at are
    characters of the line, which the parser then reports where they stand."""
    number = 0
    try:
        for number, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), start=1):  # noqa: B007
            if raw.endswith(b"\n"):
                raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
            elif len(raw) > MAX_LINE_BYTES:
                raise InputError(f"cannot read {_shown(name)}: line {number} is longer than {MAX_LINE_BYTES} bytes")
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"cannot read {_shown(name)}: line {number} is not UTF-8 text "
                                 f"(byte {exc.start + 1})") from None
    except OSError as exc:
        raise InputError(f"cannot read {_shown(name)} after line {number}: {exc.strerror or exc}") from exc
    finally:
        if f is not getattr(sys.stdin, "buffer", None):
            f.close()


def _shown(name: str) -> str:
    return "<stdin>" if name == "-" else name


def is_skipped_line(line: str) -> bool:
    """Blank lines and ``#`` comments in event files carry no event string."""
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def split_comment(line: str) -> tuple[str, str]:
    """A file line as its event string and its trailing comment (with the blanks before it): a
    ``#`` after a blank, outside quotes, starts one (``cycles:u  # user cycles``); a ``#``
    anywhere else is part of the string (and an error there)."""
    quoted = False
    for i, char in enumerate(line):
        if char == "'":
            quoted = not quoted
        elif char == "#" and not quoted and i > 0 and line[i - 1] in " \t":
            text = line[:i].rstrip(" \t")
            return text, line[len(text):]
    return line, ""


def without_comment(line: str) -> str:
    """A file line without its trailing comment (``split_comment``)."""
    return split_comment(line)[0]


def split_lines(data: str) -> list[str]:
    """The lines of a file's text, split at '\n' only (a '\r' before it dropped), as
    ``iter_inputs`` reads them."""
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def iter_inputs(event_args: Sequence[str], files: Sequence[str]) -> Iterator[SpecInput]:
    """All ``-e`` strings first (one command), then every line of every file that holds an event
    string (a command of its own), read as they are consumed. Every file is opened first: one
    that cannot be is an ``InputError`` before any string is read."""
    opened = [(name, _open(name)) for name in files]
    return _inputs(event_args, opened)


def _inputs(event_args: Sequence[str], opened: list[tuple[str, BinaryIO]]) -> Iterator[SpecInput]:
    for i, text in enumerate(event_args):
        yield SpecInput(text, Source("arg", index=i), command=0)
    command = 1
    for name, f in opened:
        display = _shown(name)
        for number, line in _file_lines(name, f):
            if is_skipped_line(line):
                continue
            yield SpecInput(without_comment(line), Source("file", path=display, line=number), command=command)
            command += 1


def collect(event_args: Sequence[str], files: Sequence[str]) -> list[SpecInput]:
    """``iter_inputs`` as a list."""
    return list(iter_inputs(event_args, files))
