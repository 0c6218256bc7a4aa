"""Tracepoint records printed as ``perf script`` prints them: the ``print fmt:`` line of a tracefs
format file, parsed and applied as perf 6.1's libtraceevent does, its quirks included.

``PrintFormat.compile(print_fmt, fields, resolve)`` parses the line once (``parse``: the argument
grammar; ``args``: the argument nodes and their evaluation; ``pointers``: the ``%p`` family);
``render(raw)`` prints one record. ``kernel_symbols()`` names kernel addresses for ``%pS``.
"""

from __future__ import annotations

from evspec.loader.output.printfmt.format import PrintFormat
from evspec.loader.output.printfmt.symbols import kernel_symbols

__all__ = ["PrintFormat", "kernel_symbols"]
