"""The text a perf release writes to stderr when ``-e STRING`` fails (spec §7).

Columns here count bytes, as perf's do (a caret may stand under the second byte of a UTF-8
character); bytes that do not decode are kept as surrogate escapes, so that the text encodes back
to exactly the bytes perf writes (``str.encode(errors="surrogateescape")``).
"""

from __future__ import annotations

from evspec.dialect.actions.errors import PerfError
from evspec.render.perf import (
    CONTEXT_BEFORE,
    INITIAL_ERROR,
    MAX_TERMINAL_WIDTH,
    PREFIX,
    RUN_PERF_LIST,
    window,
)

NOTHING_FOUND = "WARNING: event parser found nothing"
UNSUPPORTED = "invalid or unsupported event: "
USAGE = {
    "stat": "\n Usage: perf stat [<options>] [<command>]\n\n"
    "    -e, --event <event>   event selector. use 'perf list' to list available events\n",
    "record": "\n Usage: perf record [<options>] [<command>]\n"
    "    or: perf record [<options>] -- <command> [<options>]\n\n"
    "    -e, --event <event>   event selector. use 'perf list' to list available events\n",
}


def perf_stderr(
    text: str,
    last: PerfError | None,
    first: PerfError | None,
    *,
    nothing_found: bool,
    one_slot: bool,
    printed: tuple[str, ...] = (),
    mode: str,
    term_width: int,
    listed: tuple[PerfError, ...] | None = None,
) -> str:
    """Everything perf prints to stderr for a rejected ``-e text``, the option usage included;
    ``listed``: perf 6.12+'s list of every error, each block after a blank line. The errors'
    columns are byte offsets."""
    raw = text.encode(errors="surrogateescape")
    out = "".join(printed) + (f"{NOTHING_FOUND}\n" if nothing_found else "")
    if listed is not None:
        out += "\n".join(error_block(raw, e, term_width) for e in listed)
    elif last is not None:
        out += error_block(raw, last, term_width)
        if first is not None:
            out += f"\n{INITIAL_ERROR}\n" + error_block(raw, first, term_width)
    elif one_slot:
        out += f"{UNSUPPORTED}'{text}'\n"
    return out + RUN_PERF_LIST + "\n" + USAGE[mode]


def error_block(raw: bytes, err: PerfError, term_width: int) -> str:
    """__parse_events_error__print: the quoted window, the ``\\___`` line under byte
    ``err.column`` (-1: under the opening quote) and the help, if any."""
    shown, cut = window(raw, err.column, term_width)
    caret = " " * (len(PREFIX) + err.column - cut + 1)
    block = f"{PREFIX}'{shown.decode(errors='surrogateescape')}'\n{caret}\\___ {err.message}\n"
    if err.help is not None:
        block += f"\n{err.help}\n"
    return block


def unterminated_window(text: str, column: int, term_width: int) -> bool:
    """perf copies the shown part with strncpy and terminates it only when it cuts the end: when
    the rest of the string fills the window exactly, perf prints whatever follows in memory."""
    max_len = min(term_width, MAX_TERMINAL_WIDTH) - 2 - len(PREFIX)
    size = len(text.encode(errors="surrogateescape"))
    cut = column - CONTEXT_BEFORE if column > CONTEXT_BEFORE else 0
    return size - cut == max_len
