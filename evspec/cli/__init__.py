"""The ``evspec`` command: ``app`` builds the argument parser and dispatches; each command that
does more than render a library result has a module of its own."""

from evspec.cli.app import main

__all__ = ["main"]
