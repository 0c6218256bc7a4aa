"""The catalogue of diagnostic codes, for ``evspec explain CODE``.

Codes are stable: ``ES…`` syntax and system-independent rules, ``EM…`` semantic checks against a
system, ``EB…`` BPF objects and map terms, ``EK…`` the kernel runtime, ``EP…`` where the perf
release chosen with ``--perf`` disagrees; a ``W`` in place of the ``E`` marks a warning.
Each area keeps its entries in its own module.
"""

from __future__ import annotations

import importlib

from evspec.span import Slotted

_AREAS = ("syntax", "semantic", "bpf", "bpfconfig", "kernel", "perf")


class CodeInfo(Slotted):
    code: str
    title: str  # one line
    explanation: str  # what it means; may span lines
    example: str = ""  # an event string that triggers it
    fix: str = ""  # how to fix it


def catalogue() -> dict[str, CodeInfo]:
    out: dict[str, CodeInfo] = {}
    for area in _AREAS:
        try:
            module = importlib.import_module(f"evspec.codes.{area}")
        except ModuleNotFoundError as exc:
            if exc.name != f"evspec.codes.{area}":
                raise
            continue
        for info in module.CODES:
            if info.code in out:
                raise RuntimeError(f"diagnostic code {info.code} defined twice")
            out[info.code] = info
    return out


def lookup(code: str) -> CodeInfo | None:
    return catalogue().get(code.upper())
