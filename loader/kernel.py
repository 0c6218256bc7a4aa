"""Typed kernel operations (maps, programs, BTF, perf events, ring mappings) built on the funnel.

``Kernel`` is the one facade the rest of evspec uses, and the only code that builds ``bpf(2)`` /
``perf_event_open(2)`` arguments. Its operations live in one module per job: ``kernel_maps``,
``kernel_programs`` (programs and BTF), ``kernel_perf`` (perf events and their rings), all on
``kernel_core`` (issuing a command; ``kernel_attr`` for the load commands' E2BIG fallback). Every
failure becomes a ``KernelError`` with a code from ``evspec.codes.kernel`` (``kernel_errors``); a
program the verifier rejects becomes a ``VerifierError`` that keeps the whole log.
"""

from __future__ import annotations

from evspec.loader.kernel_errors import ENOTSUPP, KernelError, VerifierError
from evspec.loader.kernel_maps import MapDescription, MapOperations
from evspec.loader.kernel_perf import PerfOperations, RingMapping
from evspec.loader.kernel_programs import FIRST_LOG_SIZE, ProgramDescription, ProgramOperations

__all__ = [
    "ENOTSUPP",
    "FIRST_LOG_SIZE",
    "Kernel",
    "KernelError",
    "MapDescription",
    "ProgramDescription",
    "RingMapping",
    "VerifierError",
]


class Kernel(MapOperations, ProgramOperations, PerfOperations):
    """The kernel operations evspec uses, each raising a coded ``KernelError`` on failure.

    ``Kernel(funnel)`` runs them through ``funnel`` (``LinuxFunnel``, the real system calls, by
    default; ``FakeKernel`` in unit tests).
    """
