"""Diagnostics as GitHub Actions workflow commands (annotations on the run and the pull request).

``::error file=events.txt,line=3,col=8,endColumn=10,title=ES012::bad modifier…``; columns are
1-based and ``endColumn`` is exclusive, as in the SARIF output. Strings given with ``-e`` have no
file: their annotation names the argument in the message instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from evspec.diagnostics import Diagnostic, Severity
from evspec.render.excerpt import clipped, clipped_all, excerpt, repeats_note
from evspec.render.text import describe_source


def escape_data(text: str) -> str:
    """Escape a command's message the way the Actions runner unescapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value (``file=``, ``title=``): also ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _message(diag: Diagnostic) -> str:
    message = clipped(diag.message)
    lines = [message]
    source = diag.source
    if source is not None and source.kind == "arg":
        part = excerpt(diag.event, diag.span)
        shown = ("…" if part.cut_before else "") + part.text + ("…" if part.cut_after else "")
        lines = [f"{describe_source(source)}: {message}", f"in '{shown}' at col {diag.span.start + 1}"]
    lines += [f"help: {h}" for h in clipped_all(diag.help)]
    lines += [f"note: {n}" for n in clipped_all(diag.notes)]
    if diag.repeats:
        lines.append(f"note: {repeats_note(diag.repeats)}")
    return "\n".join(lines)


def render_annotation(diag: Diagnostic) -> str:
    """One workflow command line, with its newline."""
    props: list[tuple[str, str]] = []
    source = diag.source
    if source is not None and source.kind == "file":
        props += [
            ("file", source.path or ""),
            ("line", str(source.line)),
            ("col", str(diag.span.start + 1)),
            ("endColumn", str(diag.span.end + 1)),
        ]
    props.append(("title", diag.code))
    joined = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    command = "notice" if diag.severity is Severity.NOTE else diag.severity.value  # GitHub's word for a note
    return f"::{command} {joined}::{escape_data(_message(diag))}\n"


def render_github(diags: Sequence[Diagnostic]) -> str:
    """One workflow command per diagnostic."""
    return "".join(render_annotation(d) for d in diags)
