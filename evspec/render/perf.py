"""perf 6.1's own error layout, character for character.

::

    event syntax error: '..task-clock,xyz'
                                      \\___ parser error
    Run 'perf list' for a list of valid events

perf keeps a window of at most 13 bytes before the error column, replaces cut-off ends by ``..``,
and fits the quoted string into the terminal width minus 22. It keeps at most two errors
per parse and prints the last one first, the first one under ``Initial error:``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evspec.codes.bpfconfig import BPF_MAP_HINT as BPF_MAP_HINT  # the package exports it
from evspec.diagnostics import Diagnostic
from evspec.render.excerpt import clipped

PREFIX = "event syntax error: "
CONTEXT_BEFORE = 13  # characters perf keeps before the error column
MAX_TERMINAL_WIDTH = 1000
MIN_COLUMNS = 22  # below this perf 6.1 overflows its buffer
DEFAULT_COLUMNS = 80
RUN_PERF_LIST = "Run 'perf list' for a list of valid events"
INITIAL_ERROR = "Initial error:"


def window(event: bytes, column: int, columns: int = DEFAULT_COLUMNS) -> tuple[bytes, int]:
    """The bytes of ``event`` perf quotes for an error at byte ``column``, and where they start.

    ``columns`` is the terminal width; perf caps it at 1000 and uses ``columns - 22`` bytes.
    """
    if columns < MIN_COLUMNS:
        raise ValueError(f"perf cannot print errors in fewer than {MIN_COLUMNS} columns (got {columns})")
    max_len = min(columns, MAX_TERMINAL_WIDTH) - 2 - len(PREFIX)
    cut = column - CONTEXT_BEFORE if column > CONTEXT_BEFORE else 0
    # perf copies into a NUL-padded buffer and then stamps the '..' markers into it, even when
    # max_len < 2 (the markers then land past the end and are dropped by the terminator).
    buf = bytearray(event[cut : cut + max_len].ljust(max(max_len, 2) + 1, b"\0"))
    if cut:
        buf[0:2] = b".."
    if len(event) - cut > max_len:
        if max_len >= 2:
            buf[max_len - 2] = ord(".")
        if max_len >= 1:
            buf[max_len - 1] = ord(".")
        buf[max_len] = 0
    return bytes(buf).split(b"\0", 1)[0], cut


def perf_error_block(
    event: str, column: int, message: str, help: str | None, columns: int = DEFAULT_COLUMNS
) -> str:
    """One error as perf prints it: the quoted window, the ``\\___`` line and the optional help.

    ``column`` indexes ``event`` (-1 puts the backslash under the opening quote). perf counts
    bytes, so for a non-ASCII string the window and the caret indent are computed over its UTF-8
    bytes, as perf does; a multi-byte character cut in two by the window shows as U+FFFD.
    """
    if column < -1:
        raise ValueError(f"perf error column must be -1 or more (got {column})")
    raw = event.encode(errors="surrogateescape")  # undecodable argv bytes come back as they were
    byte_column = column
    if column > 0:
        byte_column += len(event[:column].encode(errors="surrogateescape")) - min(column, len(event))
    shown, cut = window(raw, byte_column, columns)
    caret = " " * (len(PREFIX) + byte_column - cut + 1)
    block = f"{PREFIX}'{shown.decode(errors='replace')}'\n{caret}\\___ {message}\n"
    if help is not None:
        block += f"\n{help}\n"
    return block


def perf_help_of(diag: Diagnostic) -> str | None:
    """The help perf would print: ``perf_help`` if set, else evspec's help lines, else none."""
    if diag.perf_help is not None:
        return diag.perf_help
    return "\n".join(diag.help) if diag.help else None


def _block(diag: Diagnostic, column: int, columns: int) -> str:
    message = diag.perf_message if diag.perf_message is not None else diag.message
    help_text = perf_help_of(diag)
    return perf_error_block(diag.event, column, clipped(message), None if help_text is None else clipped(help_text),
                            columns)


def render_perf(
    diags: Sequence[Diagnostic],
    columns: int = DEFAULT_COLUMNS,
    perf_compat_order: bool = True,
    column_of: Callable[[Diagnostic], int] | None = None,
) -> str:
    """The errors among ``diags`` in perf's layout, one report per event string.

    With ``perf_compat_order`` (perf's behaviour) only the first and the last error of a string are
    shown: the last one first and the first one under ``Initial error:``; without it every error is
    shown in the order given. ``column_of`` gives perf's column for a diagnostic when it differs
    from evspec's (the default is ``span.start``). Warnings have no perf layout and are left out.
    """
    where = column_of if column_of is not None else (lambda d: d.span.start)
    by_event: dict[str, list[Diagnostic]] = {}
    for diag in diags:
        if diag.is_error:
            by_event.setdefault(diag.event, []).append(diag)

    reports = []
    for errors in by_event.values():
        if perf_compat_order:
            report = _block(errors[-1], where(errors[-1]), columns)
            if len(errors) > 1:
                report += f"\n{INITIAL_ERROR}\n" + _block(errors[0], where(errors[0]), columns)
        else:
            report = "\n".join(_block(d, where(d), columns) for d in errors)
        reports.append(report + RUN_PERF_LIST + "\n")
    return "".join(reports)
