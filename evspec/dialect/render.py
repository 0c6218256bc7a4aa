"""The text a perf release writes to stderr when ``-e STRING`` fails (spec §7)."""

from __future__ import annotations

from evspec.dialect.errors import PerfError
from evspec.render.perf import (
    CONTEXT_BEFORE,
    INITIAL_ERROR,
    MAX_TERMINAL_WIDTH,
    PREFIX,
    RUN_PERF_LIST,
    perf_error_block,
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
) -> str:
    """Everything perf prints to stderr for a rejected ``-e text``, the option usage included."""
    out = "".join(printed) + (f"{NOTHING_FOUND}\n" if nothing_found else "")
    if last is not None:
        out += perf_error_block(text, last.column, last.message, last.help, term_width)
        if first is not None:
            out += f"\n{INITIAL_ERROR}\n" + perf_error_block(text, first.column, first.message, first.help, term_width)
    elif one_slot:
        out += f"{UNSUPPORTED}'{text}'\n"
    return out + RUN_PERF_LIST + "\n" + USAGE[mode]


def unterminated_window(text: str, column: int, term_width: int) -> bool:
    """perf copies the shown part with strncpy and terminates it only when it cuts the end: when
    the rest of the string fills the window exactly, perf prints whatever follows in memory."""
    max_len = min(term_width, MAX_TERMINAL_WIDTH) - 2 - len(PREFIX)
    size = len(text.encode(errors="surrogateescape"))
    cut = column - CONTEXT_BEFORE if column > CONTEXT_BEFORE else 0
    return size - cut == max_len
