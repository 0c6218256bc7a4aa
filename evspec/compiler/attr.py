"""perf_event_attr: the numbers of the kernel ABI (include/uapi/linux/perf_event.h) and perf's
legacy event tables, and the attr value a plan carries.

The ABI's names and numbers (types, software ids, the bits of each word) are the loader's
``evspec.loader.abi.perf_ids`` and ``perf_bits``, written once for both sides; here they are plain
ints and ``(name, bit)`` tables in the order perf prints them. The tables of bits are made on first
use (module ``__getattr__``): the enums they are made of cost a semantic check, which needs none of
them, 2.5 ms. Field names are the ones ``perf stat -vv`` prints, with perf's unions split:
``sample_period`` / ``sample_freq`` (by the ``freq`` bit), ``bp_addr`` / ``config1`` and
``bp_len`` / ``config2`` (by the breakpoint type).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from evspec.loader.abi.perf_ids import PERF_ATTR_SIZE_VER7, PerfType, SwConfig

TYPE_CHECKING = False
if TYPE_CHECKING:  # made on first use by __getattr__ (below)
    SAMPLE_TYPE_BITS: tuple[tuple[str, int], ...]
    SAMPLE: dict[str, int]
    READ_FORMAT_BITS: tuple[tuple[str, int], ...]
    READ_FORMAT: dict[str, int]
    BRANCH_SAMPLE_TYPES: dict[str, int]
    BRANCH_SAMPLE_BITS: tuple[tuple[str, int], ...]
    BRANCH_PLM_ALL: int
    ATTR_FIELDS: tuple[str, ...]

# ---- perf_type_id
PERF_TYPE_HARDWARE = int(PerfType.HARDWARE)
PERF_TYPE_SOFTWARE = int(PerfType.SOFTWARE)
PERF_TYPE_TRACEPOINT = int(PerfType.TRACEPOINT)
PERF_TYPE_HW_CACHE = int(PerfType.HW_CACHE)
PERF_TYPE_RAW = int(PerfType.RAW)
PERF_TYPE_BREAKPOINT = int(PerfType.BREAKPOINT)

#: on hybrid systems the core PMU's type goes into config bits 32-63 of hardware/cache events
PERF_PMU_TYPE_SHIFT = 32

#: sizeof(struct perf_event_attr) as perf 6.1 sends it
PERF_ATTR_SIZE = PERF_ATTR_SIZE_VER7

# ---- symbolic events (perf 6.1 names; several spellings per id)
HARDWARE_EVENTS: dict[str, int] = {
    "cpu-cycles": 0,
    "cycles": 0,
    "instructions": 1,
    "cache-references": 2,
    "cache-misses": 3,
    "branch-instructions": 4,
    "branches": 4,
    "branch-misses": 5,
    "bus-cycles": 6,
    "stalled-cycles-frontend": 7,
    "idle-cycles-frontend": 7,
    "stalled-cycles-backend": 8,
    "idle-cycles-backend": 8,
    "ref-cycles": 9,
}

SOFTWARE_EVENTS: dict[str, int] = {
    name: int(sw)
    for name, sw in (
        ("cpu-clock", SwConfig.CPU_CLOCK),
        ("task-clock", SwConfig.TASK_CLOCK),
        ("page-faults", SwConfig.PAGE_FAULTS),
        ("faults", SwConfig.PAGE_FAULTS),
        ("context-switches", SwConfig.CONTEXT_SWITCHES),
        ("cs", SwConfig.CONTEXT_SWITCHES),
        ("cpu-migrations", SwConfig.CPU_MIGRATIONS),
        ("migrations", SwConfig.CPU_MIGRATIONS),
        ("minor-faults", SwConfig.PAGE_FAULTS_MIN),
        ("major-faults", SwConfig.PAGE_FAULTS_MAJ),
        ("alignment-faults", SwConfig.ALIGNMENT_FAULTS),
        ("emulation-faults", SwConfig.EMULATION_FAULTS),
        ("dummy", SwConfig.DUMMY),
        ("bpf-output", SwConfig.BPF_OUTPUT),
        ("cgroup-switches", SwConfig.CGROUP_SWITCHES),
    )
}
PERF_COUNT_SW_DUMMY = int(SwConfig.DUMMY)

#: tool events: software dummy evsels that perf reads itself
TOOL_EVENTS: tuple[str, ...] = ("duration_time", "user_time", "system_time")

HARDWARE_DESCRIPTIONS = {0: "cpu-cycles OR cycles", 4: "branch-instructions OR branches"}

# ---- hardware cache events: type | op << 8 | result << 16
CACHE_TYPES: tuple[tuple[str, ...], ...] = (
    ("L1-dcache", "l1-d", "l1d", "L1-data"),
    ("L1-icache", "l1-i", "l1i", "L1-instruction"),
    ("LLC", "L2"),
    ("dTLB", "d-tlb", "Data-TLB"),
    ("iTLB", "i-tlb", "Instruction-TLB"),
    ("branch", "branches", "bpu", "btb", "bpc"),
    ("node",),
)
CACHE_OPS: tuple[tuple[str, ...], ...] = (
    ("load", "loads", "read"),
    ("store", "stores", "write"),
    ("prefetch", "prefetches", "speculative-read", "speculative-load"),
)
CACHE_RESULTS: tuple[tuple[str, ...], ...] = (
    ("refs", "Reference", "ops", "access"),
    ("misses", "miss"),
)
CACHE_OP_READ, CACHE_OP_WRITE, CACHE_OP_PREFETCH = 0, 1, 2
CACHE_RESULT_ACCESS, CACHE_RESULT_MISS = 0, 1
#: which operations each cache type supports (bit N = op N)
CACHE_VALID_OPS: tuple[int, ...] = (0b111, 0b101, 0b111, 0b111, 0b001, 0b001, 0b111)


def match_cache_alias(word: str, table: tuple[tuple[str, ...], ...]) -> int:
    """perf's ``parse_aliases``: the index of the row with the longest alias that is a
    case-insensitive prefix of ``word``, or -1."""
    best, longest = -1, 0
    lower = word.lower()
    for index, aliases in enumerate(table):
        for alias in aliases:
            if len(alias) > longest and lower.startswith(alias.lower()):
                best, longest = index, len(alias)
    return best


def cache_config(cache_type: str, parts: tuple[str, ...]) -> int:
    """The attr config of a cache event as perf 6.1 computes it (missing op = read, missing
    result = access, a repeated op or result ignored). Raises ValueError for a combination
    perf rejects."""
    type_id = match_cache_alias(cache_type, CACHE_TYPES)
    if type_id < 0:
        raise ValueError(f"unknown cache type {cache_type!r}")
    op = result = -1
    for part in parts:
        if op == -1:
            op = match_cache_alias(part, CACHE_OPS)
            if op >= 0:
                if not CACHE_VALID_OPS[type_id] >> op & 1:
                    raise ValueError(f"{cache_type} does not support {part!r}")
                continue
        if result == -1:
            result = match_cache_alias(part, CACHE_RESULTS)
    op = CACHE_OP_READ if op == -1 else op
    result = CACHE_RESULT_ACCESS if result == -1 else result
    return type_id | op << 8 | result << 16


def cache_event_names() -> tuple[tuple[str, int], ...]:
    """Every valid cache event under perf's canonical name (``L1-dcache-loads``,
    ``L1-dcache-load-misses``), with its config."""
    out = []
    for type_id, type_aliases in enumerate(CACHE_TYPES):
        for op, op_aliases in enumerate(CACHE_OPS):
            if not CACHE_VALID_OPS[type_id] >> op & 1:
                continue
            for result in (CACHE_RESULT_ACCESS, CACHE_RESULT_MISS):
                if result == CACHE_RESULT_ACCESS:
                    name = f"{type_aliases[0]}-{op_aliases[1]}"
                else:
                    name = f"{type_aliases[0]}-{op_aliases[0]}-{CACHE_RESULTS[result][0]}"
                out.append((name, type_id | op << 8 | result << 16))
    return tuple(out)


# ---- breakpoints (include/uapi/linux/hw_breakpoint.h)
HW_BREAKPOINT_R = 1
HW_BREAKPOINT_W = 2
HW_BREAKPOINT_X = 4
HW_BREAKPOINT_LEN_4 = 4
SIZEOF_LONG = 8

_BIT_TABLES = frozenset({"SAMPLE_TYPE_BITS", "SAMPLE", "READ_FORMAT_BITS", "READ_FORMAT", "BRANCH_SAMPLE_TYPES",
                         "BRANCH_SAMPLE_BITS", "BRANCH_PLM_ALL", "ATTR_FIELDS", "_FIELD_ORDER"})
# the attr fields a plan may set, in the order perf prints them, around the flags word's
_FIELDS_BEFORE_FLAGS = ("type", "size", "config", "sample_period", "sample_freq", "sample_type", "read_format")
_FIELDS_AFTER_FLAGS = (
    "wakeup_events",
    "bp_type",
    "bp_addr",
    "config1",
    "bp_len",
    "config2",
    "branch_sample_type",
    "sample_regs_user",
    "sample_stack_user",
    "clockid",
    "sample_regs_intr",
    "aux_watermark",
    "sample_max_stack",
    "aux_sample_size",
    "sig_data",
    "aux_start_paused",
    "aux_pause",
    "aux_resume",
    "config3",
    "config4",
)


def _bit_tables() -> dict[str, object]:
    """The tables of bits: sample_type and read_format bits (in the order perf prints them), the
    branch_type= term values (perf's parse_branch_str names) and branch_sample_type bits, and the
    attr fields (the flags word bit by bit, ``precise_ip`` two bits)."""
    from evspec.loader.abi.perf_bits import AttrFlag, BranchSampleType, ReadFormat, SampleType

    sample = tuple((bit.name or "", int(bit)) for bit in SampleType)
    read_format = tuple((bit.name or "", int(bit)) for bit in ReadFormat)
    flags = dict.fromkeys("precise_ip" if name.startswith("PRECISE_IP") else name.lower()
                          for name in (flag.name or "" for flag in AttrFlag))
    fields = (*_FIELDS_BEFORE_FLAGS, *flags, *_FIELDS_AFTER_FLAGS)
    branch_terms = (
        ("u", BranchSampleType.USER),
        ("k", BranchSampleType.KERNEL),
        ("hv", BranchSampleType.HV),
        ("any", BranchSampleType.ANY),
        ("any_call", BranchSampleType.ANY_CALL),
        ("any_ret", BranchSampleType.ANY_RETURN),
        ("ind_call", BranchSampleType.IND_CALL),
        ("abort_tx", BranchSampleType.ABORT_TX),
        ("in_tx", BranchSampleType.IN_TX),
        ("no_tx", BranchSampleType.NO_TX),
        ("cond", BranchSampleType.COND),
        ("ind_jmp", BranchSampleType.IND_JUMP),
        ("call", BranchSampleType.CALL),
        ("save_type", BranchSampleType.TYPE_SAVE),
        ("stack", BranchSampleType.CALL_STACK),
        ("priv", BranchSampleType.PRIV_SAVE),
    )
    return {
        "SAMPLE_TYPE_BITS": sample,
        "SAMPLE": dict(sample),
        "READ_FORMAT_BITS": read_format,
        "READ_FORMAT": dict(read_format),
        "BRANCH_SAMPLE_TYPES": {name: int(bit) for name, bit in branch_terms},
        "BRANCH_SAMPLE_BITS": tuple((bit.name or "", int(bit)) for bit in BranchSampleType),
        # the bits that select privilege levels
        "BRANCH_PLM_ALL": int(BranchSampleType.USER | BranchSampleType.KERNEL | BranchSampleType.HV),
        "ATTR_FIELDS": fields,
        "_FIELD_ORDER": {name: i for i, name in enumerate(fields)},
    }


def __getattr__(name: str) -> object:
    """A table of bits (``_BIT_TABLES``), made the first time one is asked for."""
    if name not in _BIT_TABLES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals().update(_bit_tables())
    return globals()[name]


def _field_order() -> dict[str, int]:
    """Each attr field's place in perf's order (a table of bits: the flags word is in it)."""
    order = globals().get("_FIELD_ORDER")
    return order if order is not None else __getattr__("_FIELD_ORDER")  # type: ignore[return-value]


class Attr(Mapping[str, int]):
    """A frozen perf_event_attr: the fields that are not zero (plus ``type``, ``size`` and
    ``config``, always present). ``attr["x"]`` raises KeyError for a zero field; ``attr.get("x",
    0)`` or ``attr.value("x")`` read any field. A value: equal and hashed by its items."""

    __slots__ = ("items_",)
    items_: tuple[tuple[str, int], ...]

    def __init__(self, items_: tuple[tuple[str, int], ...]) -> None:
        object.__setattr__(self, "items_", items_)

    def __setattr__(self, name: str, value: object) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Attr:
            return NotImplemented
        return self.items_ == other.items_

    def __hash__(self) -> int:
        return hash(self.items_)

    def __repr__(self) -> str:
        return f"Attr(items_={self.items_!r})"

    def __reduce__(self) -> tuple[type, tuple[tuple[tuple[str, int], ...]]]:
        return Attr, (self.items_,)

    @staticmethod
    def build(values: Mapping[str, int]) -> Attr:
        order = _field_order()
        for name in values:
            if name not in order:
                raise KeyError(f"not a perf_event_attr field: {name!r}")
        kept = {k: v for k, v in values.items() if v or k in ("type", "size", "config")}
        return Attr(tuple(sorted(kept.items(), key=lambda kv: order[kv[0]])))

    def __getitem__(self, key: str) -> int:
        for name, value in self.items_:
            if name == key:
                return value
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.items_)

    def __len__(self) -> int:
        return len(self.items_)

    def value(self, key: str) -> int:
        if key not in _field_order():
            raise KeyError(f"not a perf_event_attr field: {key!r}")
        return self.get(key, 0)

    def to_json(self) -> dict[str, int]:
        return dict(self.items_)


def flag_names(value: int, bits: tuple[tuple[str, int], ...]) -> str:
    """``IP|TID|TIME`` for a sample_type (or read_format) value, as perf prints it."""
    names = [name for name, bit in bits if value & bit]
    rest = value & ~sum(bit for _, bit in bits)
    if rest:
        names.append(hex(rest))
    return "|".join(names)


def parse_flag_names(text: str, bits: tuple[tuple[str, int], ...]) -> int:
    """The inverse of flag_names."""
    table = dict(bits)
    value = 0
    for name in text.split("|"):
        name = name.strip()
        if name:
            value |= table[name] if name in table else int(name, 0)
    return value
