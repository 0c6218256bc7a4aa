"""How ``inspect`` and ``verify`` print a BPF object they cannot read or compile: the code and
message, clang's output when it failed, and the help lines."""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from typing import TextIO

    from evspec.loader.errors import ObjectError


def print_object_error(command: str, exc: ObjectError, out: TextIO) -> None:
    print(f"evspec {command}: error[{exc.code}]: {exc.message}", file=out)
    if exc.detail:
        print(exc.detail.rstrip(), file=out)
    for line in exc.help:
        print(f"  = help: {line}", file=out)
