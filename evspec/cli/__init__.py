"""The ``evspec`` command: ``app`` builds the argument parser and dispatches; each command that
does more than render a library result has a module of its own."""

from evspec.cli.app import main

__all__ = ["console_main", "main"]


def console_main() -> int:
    """The installed command (and ``python -m evspec``): ``main``, then every object it made is
    frozen out of the collector, so that the interpreter's exit does not walk them again (a few ms
    of each short run). Not for in-process callers: they keep using ``main``.

    argparse passes each of its own texts through gettext, which looks for a catalogue on disk
    every time (1-3 ms of a start); Python ships none for argparse, so the command asks for none."""
    import argparse

    argparse._ = str  # type: ignore[attr-defined]
    status = main()
    import gc

    gc.freeze()
    return status
