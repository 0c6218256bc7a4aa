"""What semantic checks know about a machine: PMUs, tracepoints, CPUs, kernel features, files.

A ``System`` answers questions lazily; the data classes here are plain values (``ExternFacts``:
what BPF objects' externs are resolved against). Two kinds of system implement it:
``LiveSystem`` (sysfs/tracefs of this machine) and ``SnapshotSystem`` (a saved description of some
machine). Checks run without a system at all when the caller passes ``None``.
"""

from __future__ import annotations

import fnmatch
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping

from evspec.span import Slotted, value_field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evspec.ast import Terms

#: perf_event_attr fields a sysfs ``format/`` file may place bits in.
CONFIG_FIELDS = ("config", "config1", "config2", "config3")

#: entries of a tracefs ``events/`` folder that are files, not trace systems
TRACEFS_NON_SYSTEMS = frozenset({"enable", "header_event", "header_page", "filter"})
#: entries of a trace system's folder that are files, not events
TRACEFS_NON_EVENTS = frozenset({"enable", "filter"})

# --------------------------------------------------------------------------------------------
# PMU format files: ``config:0-7,21``, ``config1:0-15`` (perf's util/pmu.y grammar)

_FORMAT_TOKEN = re.compile(r"(config[0-9]*)\s*:|(\d+)\s*-\s*(\d+)|(\d+)|,")


class FormatField(Slotted):
    """One ``format/NAME`` file: where the value of term NAME goes in the attr.

    ``bits`` are inclusive ``(low, high)`` bit ranges in the order written; the value's bit 0 goes
    to the lowest listed bit, bit 1 to the next, and so on (perf's ``pmu_format_value``).
    """

    name: str
    field: str  # one of CONFIG_FIELDS
    bits: tuple[tuple[int, int], ...]

    @property
    def positions(self) -> tuple[int, ...]:
        return tuple(sorted({b for lo, hi in self.bits for b in range(lo, hi + 1)}))

    @property
    def width(self) -> int:
        return len(self.positions)

    @property
    def max_value(self) -> int:
        return (1 << 64) - 1 if self.width >= 64 else (1 << self.width) - 1

    def encode(self, value: int) -> int:
        """The bits of ``value`` scattered to this field's positions (bits beyond the width dropped)."""
        out = 0
        for i, bit in enumerate(self.positions):
            if value >> i & 1:
                out |= 1 << bit
        return out

    def text(self) -> str:
        ranges = ",".join(f"{lo}-{hi}" if hi != lo else f"{lo}" for lo, hi in self.bits)
        return f"{self.field}:{ranges}"


def parse_format(name: str, text: str) -> FormatField:
    """Parse the body of a sysfs ``format/NAME`` file (``config:0-7,21``, ``config1:0-15``).

    Like perf's format lexer, characters outside the grammar are ignored; a file that names no
    config field, several fields, a field beyond ``config3``, no bits, a reversed range or a bit
    above 63 is rejected with ValueError.
    """
    fields: list[str] = []
    bits: list[tuple[int, int]] = []
    for m in _FORMAT_TOKEN.finditer(text):
        cfg, lo, hi, single = m.groups()
        if cfg is not None:
            fields.append(cfg)
        elif lo is not None:
            bits.append((int(lo), int(hi)))
        elif single is not None:
            bits.append((int(single), int(single)))
    if len(fields) != 1:
        raise ValueError(f"format {name!r}: expected one 'configN:' prefix in {text.strip()!r}")
    if fields[0] not in CONFIG_FIELDS:
        raise ValueError(f"format {name!r}: unknown attr field {fields[0]!r}")
    if not bits:
        raise ValueError(f"format {name!r}: no bits in {text.strip()!r}")
    for lo, hi in bits:
        if lo > hi or hi > 63:
            raise ValueError(f"format {name!r}: bad bit range {lo}-{hi}")
    return FormatField(name, fields[0], tuple(bits))


# --------------------------------------------------------------------------------------------
# PMU aliases (``events/NAME`` with their side files)


class PmuAlias(Slotted):
    """``events/NAME``: a term list such as ``event=0x3c,umask=?`` plus its side files."""

    name: str
    definition: str
    unit: str | None = None
    scale: str | None = None
    per_pkg: bool = False
    snapshot: bool = False

    def terms(self) -> Terms:
        """The definition parsed as a term list (the parser is imported on first use)."""
        from evspec.parser import parse_terms

        return parse_terms(self.definition.strip())

    def parameters(self) -> tuple[str, ...]:
        """Names of the terms whose value is ``?``: the user must supply them as ``NAME=VALUE``."""
        from evspec.ast import Term

        out = []
        for term in self.terms().items:
            if isinstance(term, Term) and term.value is not None and getattr(term.value, "text", None) == "?":
                out.append(term.key)
        return tuple(out)

    @property
    def has_side_info(self) -> bool:
        return bool(self.unit or self.scale or self.per_pkg or self.snapshot)


# --------------------------------------------------------------------------------------------
# PMUs


class Pmu(Slotted):
    """One ``/sys/bus/event_source/devices/NAME``.

    ``cpus`` is the text of the ``cpus`` file (core PMUs, hybrid ones in particular) and
    ``cpumask`` that of ``cpumask`` (uncore PMUs); each is None when the file is absent.
    """

    name: str
    type: int
    formats: Mapping[str, FormatField] = value_field(default_factory=dict)
    aliases: Mapping[str, PmuAlias] = value_field(default_factory=dict)  # key: lower-case name
    cpus: str | None = None
    cpumask: str | None = None

    def alias(self, name: str) -> PmuAlias | None:
        return self.aliases.get(name.lower())

    def format(self, name: str) -> FormatField | None:
        return self.formats.get(name)

    @property
    def is_core(self) -> bool:
        """A CPU PMU: the raw-type PMU (``cpu``) or a hybrid core PMU (``cpu_core``, ``cpu_atom``)."""
        return self.type == 4 or (self.cpus is not None and self.name.startswith("cpu"))

    @property
    def is_hybrid(self) -> bool:
        return self.name.startswith("cpu_") and self.cpus is not None


def pmu_suffix_matches(pmu_name: str, token: str) -> bool:
    """perf 6.1's PMU wildcard rule: ``token`` names ``pmu_name`` if the name is the token followed
    by nothing, digits, or ``_`` and digits (``uncore_`` is stripped from the PMU name unless the
    token starts with it). ``uncore_imc`` names ``uncore_imc_0``; ``ms`` does not name ``msr``."""
    name = pmu_name
    if name.startswith("uncore_") and not token.startswith("uncore_"):
        name = name[len("uncore_") :]
    if not name.startswith(token):
        return False
    rest = name[len(token) :]
    if rest.startswith("_"):
        rest = rest[1:]
        return rest.isdigit()
    return rest == "" or rest.isdigit()


# --------------------------------------------------------------------------------------------
# features


class Features(Slotted):
    """``hybrid_extended_type``: on a machine with several core PMUs, whether the kernel takes a
    hardware or cache event with the PMU's type in config bits 32-63 (perf probes it with one
    perf_event_open; a live system assumes so, a snapshot may say otherwise)."""

    kernel_release: str = ""
    kprobe_events: bool = False
    uprobe_events: bool = False
    btf_vmlinux: bool = False
    hybrid_extended_type: bool = True


class ExternFacts(Slotted):
    """What a BPF object's ``__kconfig`` and ``__ksym`` externs are resolved against, besides the
    kernel's BTF: ``uname -r``, ``-v`` and ``-m``, ``/proc/version_signature``, the Kconfig values
    and the names of ``/proc/kallsyms``, without their addresses. What was not read says why.

    ``recorded``: read from a record of the machine (a snapshot), not from the machine itself: what
    could not be read there was not checked, where on the machine itself the load would fail."""

    release: str
    version: str
    machine: str
    version_signature: str | None  # None: the machine has none (not an Ubuntu kernel)
    kconfig: tuple[Mapping[str, str], str] | None  # (CONFIG_NAME -> its value text, the file read)
    kconfig_unreadable: tuple[tuple[str, str], ...]  # when kconfig is None: each file tried, and why
    kconfig_invalid: str | None  # when kconfig is None: the file read does not parse (KconfigError)
    kallsyms: tuple[tuple[str, str], ...] | None  # (type letter, name) of each line, in order
    kallsyms_unreadable: str  # when kallsyms is None: why
    # names (a data symbol's ``.llvm.N`` dropped) listed at two addresses or more, with how many;
    # None: the addresses were hidden (kptr_restrict), so that cannot be told
    ambiguous: Mapping[str, int] | None
    # the modules with a BTF (/sys/kernel/btf/MODULE), by name; None: not known. A snapshot
    # records their names, not their BTF: an extern in none of vmlinux's is then not checked,
    # unless the machine had no module BTF at all
    module_btfs: tuple[str, ...] | None = None
    recorded: bool = False
    # whether the kernel makes kprobes (kprobe_events): libbpf's probe of LINUX_HAS_SYSCALL_WRAPPER
    # is a kprobe on __<arch>_sys_bpf; None: not known
    kprobes: bool | None = None


class ExternFactsUnavailable(Exception):
    """Raised by ``System.extern_facts`` when the system description holds none."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --------------------------------------------------------------------------------------------
# the System interface


class TracefsUnavailable(Exception):
    """Raised by tracepoint lookups when the system's tracefs cannot be read. ``denied`` is the
    tracefs mount point when it is there but this user may not read it (Debian mounts it mode
    0700): then what it holds is unknown, not absent."""

    def __init__(self, reason: str, help: tuple[str, ...] = (), denied: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.help = help
        self.denied = denied


class System(ABC):
    """A machine description. Every lookup is lazy; implementations cache what they read."""

    #: things the system did while being read (e.g. mounting tracefs), for ``-v`` output
    notes: list[str]

    # ---- PMUs

    @abstractmethod
    def pmu_names(self) -> tuple[str, ...]:
        """Every PMU name, sorted."""

    @abstractmethod
    def pmu(self, name: str) -> Pmu | None:
        """The PMU named exactly ``name``."""

    def pmus(self) -> tuple[Pmu, ...]:
        return tuple(p for p in (self.pmu(n) for n in self.pmu_names()) if p is not None)

    def pmus_matching(self, token: str) -> tuple[Pmu, ...]:
        """PMUs named by ``token`` through perf's wildcard rule (not the literal name)."""
        return tuple(p for p in self.pmus() if pmu_suffix_matches(p.name, token))

    def pmus_with_alias(self, name: str) -> tuple[tuple[Pmu, PmuAlias], ...]:
        """Every PMU that has an alias ``name`` (case-insensitive), with that alias."""
        out = []
        for pmu in self.pmus():
            alias = pmu.alias(name)
            if alias is not None:
                out.append((pmu, alias))
        return tuple(out)

    def core_pmus(self) -> tuple[Pmu, ...]:
        return tuple(p for p in self.pmus() if p.is_core)

    def hybrid_pmus(self) -> tuple[Pmu, ...]:
        return tuple(p for p in self.pmus() if p.is_hybrid)

    # ---- tracepoints (may raise TracefsUnavailable)

    @abstractmethod
    def tracepoint_systems(self) -> tuple[str, ...]:
        """Every trace system name, in the system's own order (tracefs directory order: the order
        perf walks them in, so that globs expand as perf expands them)."""

    @abstractmethod
    def tracepoint_events(self, system: str) -> tuple[str, ...]:
        """Every event of ``system``, in directory order; empty if there is no such system."""

    @abstractmethod
    def tracepoint_id(self, system: str, event: str) -> int | None:
        """The id of ``system:event``, or None if there is no such tracepoint."""

    def has_tracepoint_system(self, system: str) -> bool:
        return system in self.tracepoint_systems()

    def match_tracepoints(self, system: str, event: str) -> TracepointMatch:
        """Resolve ``system:event``, either part possibly a glob (Decision 7)."""
        if is_glob(system):
            systems = tuple(s for s in self.tracepoint_systems() if fnmatch.fnmatchcase(s, system))
            if not systems:
                return TracepointMatch((), no_system=True)
        elif is_glob(event):
            systems = (system,) if self.has_tracepoint_system(system) else ()
        else:
            tp_id = self.tracepoint_id(system, event)
            return TracepointMatch(((system, event, tp_id),) if tp_id is not None else ())
        found: list[tuple[str, str, int]] = []
        for sys_name in systems:
            if is_glob(event):
                names = tuple(e for e in self.tracepoint_events(sys_name) if fnmatch.fnmatchcase(e, event))
            else:
                names = (event,)
            for ev in names:
                tp_id = self.tracepoint_id(sys_name, ev)
                if tp_id is not None:
                    found.append((sys_name, ev, tp_id))
        return TracepointMatch(tuple(found))

    # ---- CPUs, features, files

    @abstractmethod
    def possible_cpus(self) -> tuple[int, ...]: ...

    @abstractmethod
    def features(self) -> Features: ...

    @property
    @abstractmethod
    def cwd(self) -> str:
        """The working directory relative paths in event strings are resolved against."""

    @abstractmethod
    def file_exists(self, path: str) -> bool: ...

    # ---- what BPF externs are resolved against

    def extern_facts(self, *, kconfig: bool = True, kallsyms: bool = True) -> ExternFacts:
        """The facts externs are resolved against; ``kconfig``/``kallsyms`` False: those need not
        be read (a system that has them at hand may give them anyway). ``ExternFactsUnavailable``
        when this description holds none."""
        raise ExternFactsUnavailable("this system description holds no extern sources")


class TracepointMatch(Slotted):
    """The tracepoints a ``system:event`` pattern names: (system, event, id) in order."""

    found: tuple[tuple[str, str, int], ...]
    no_system: bool = False  # a system glob matched no system at all


def is_glob(text: str) -> bool:
    """perf globs a tracepoint part only if it has ``*`` or ``?``; ``[...]`` alone is literal."""
    return "*" in text or "?" in text
