"""evspec from Python: parse, check and compile event strings, describe the machine to check
against, read a BPF object. ``import evspec`` exports these names, each imported on first use;
docs/api.md shows them at work."""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    import os
    from collections.abc import Sequence

    from evspec.ast import EventList
    from evspec.check import CheckedSpec
    from evspec.compiler.compile import Plan
    from evspec.compiler.resolve import Mode
    from evspec.loader.object.spec import ObjectSpec
    from evspec.system.model import System


def parse(text: str) -> EventList:
    """The typed AST of one event string (``-e TEXT``). Raises ``EvspecError``, whose
    ``diagnostics`` say what is wrong and where, when it does not parse."""
    from evspec.parser import parse as parse_text

    return parse_text(text)


def check_strings(strings: str | Sequence[str], system: System | None = None, *, mode: Mode = "record",
          clang_opts: Sequence[str] = ()) -> list[CheckedSpec]:
    """Every finding about ``strings``, the ``-e`` of one perf command (a later string sees the
    events an earlier one defines), one ``CheckedSpec`` each, in order. Without a ``system``
    the syntax alone is checked; with one, also its PMUs, tracepoints and BPF objects (a ``.c``
    object is compiled with clang and ``clang_opts``). ``mode``: perf record's rules or perf
    stat's. Findings are returned, never raised."""
    from evspec.check import CheckOptions, check_specs
    from evspec.diagnostics import Source
    from evspec.inputs import SpecInput

    texts = [strings] if isinstance(strings, str) else list(strings)
    inputs = [SpecInput(text, Source("arg", index=i), command=0) for i, text in enumerate(texts)]
    return check_specs(inputs, CheckOptions(system=system, mode=mode, clang_opts=tuple(clang_opts)))


def compile(strings: str | Sequence[str], system: System | None = None, *, mode: Mode = "record",
            perf: str | None = None) -> Plan:
    """The ``perf_event_attr`` of every event of ``strings`` (one perf command's ``-e``) on
    ``system``, as perf release ``perf`` (default: the newest evspec knows) sets them up for
    ``mode``. Raises ``EvspecError`` with every error (a string that does not parse, an unknown
    PMU or tracepoint); warnings travel in ``Plan.warnings``. ``ValueError`` for an unknown
    release."""
    from evspec.compiler.compile import compile_events
    from evspec.compiler.releases import LATEST, release

    texts = [strings] if isinstance(strings, str) else list(strings)
    return compile_events([parse(text) for text in texts], system, mode,
                          LATEST if perf is None else release(perf))


def load_system(where: str = "live") -> System | None:
    """The machine to check against: ``"live"`` (this one, read as asked), ``"none"`` (None:
    syntax only) or the path of a snapshot that ``evspec system snapshot`` wrote. Raises
    ``SnapshotError`` (a ``ValueError``) for a file that is missing or no snapshot."""
    from evspec.system import load_system as load

    return load(where, given_by="load_system")


def read_object(path: str | os.PathLike[str], *, clang_opts: Sequence[str] = ()) -> ObjectSpec:
    """The maps, programs, BTF and externs of the BPF object at ``path``, as plain data (no
    syscall); a ``.c`` source is compiled with clang first (``clang_opts`` after evspec's own
    flags). Raises ``ObjectError`` (its ``code``, ``message`` and ``help``) for a file that
    cannot be read or compiled or is no BPF object."""
    from evspec.loader.object.user_object import read_user_object

    return read_user_object(str(path), clang_opts=clang_opts)
