"""Typed kernel operations (maps, programs, BTF, perf events, ring mappings) built on the funnel.

``Kernel`` is the one facade the rest of evspec uses, and the only code that builds ``bpf(2)`` /
``perf_event_open(2)`` arguments. Its operations live in one module per job: ``maps``,
``programs`` (programs and BTF), ``btf_objects`` (the kernel's BTF objects, module BTFs),
``perf`` (perf events and their rings), all on ``base`` (issuing a command; ``attr`` for the load
commands' E2BIG fallback). Every failure becomes a ``KernelError`` with a code from ``evspec.codes.kernel`` (``errors``); a
program the verifier rejects becomes a ``VerifierError`` that keeps the whole log.
"""

from __future__ import annotations

from evspec.loader.kernel.btf_objects import BtfDescription, BtfObjectOperations
from evspec.loader.kernel.errors import ENOTSUPP, KernelError, VerifierError
from evspec.loader.kernel.maps import MapDescription, MapOperations
from evspec.loader.kernel.perf import BpfRingMapping, PerfOperations, RingMapping
from evspec.loader.kernel.programs import FIRST_LOG_SIZE, ProgramDescription, ProgramOperations

__all__ = [
    "BpfRingMapping",
    "BtfDescription",
    "ENOTSUPP",
    "FIRST_LOG_SIZE",
    "Kernel",
    "KernelError",
    "MapDescription",
    "ProgramDescription",
    "RingMapping",
    "VerifierError",
]


class Kernel(MapOperations, ProgramOperations, PerfOperations, BtfObjectOperations):
    """The kernel operations evspec uses, each raising a coded ``KernelError`` on failure.

    ``Kernel(funnel)`` runs them through ``funnel`` (``LinuxFunnel``, the real system calls, by
    default; ``FakeKernel`` in unit tests).
    """
