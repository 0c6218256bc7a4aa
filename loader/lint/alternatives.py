"""Alternatives: programs of one object that hook the same kernel function or event by different
mechanisms (fentry/kprobe, fexit/kretprobe, tp_btf/raw_tp/tracepoint), of which a tool loads one,
the first this kernel can attach (libbpf-tools decide with ``bpf_program__set_autoload`` after
``fentry_can_attach``, ``probe_tp_btf``, ``kprobe_exists`` and ``tracepoint_exists``).

``alternatives(spec)`` derives them from the section names alone: programs hooking one function
(its entry and exit together: a tool switches fentry+fexit for kprobe+kretprobe as a pair) or one
event are joined; a kernel function a later kernel renamed, or replaced with a tracepoint, is the
same hook under its other names (``RENAMED``). Each ``Choice`` lists its variants (the programs
of one mechanism and target name) first choice first. ``choose(spec, can_attach, fixed)`` keeps
the first variant of each choice that can attach here and takes the others out of the object.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from evspec.loader.errors import ObjectError
from evspec.loader.object.spec import ObjectSpec, ProgramSpec, replace
from evspec.loader.sections.names import (
    AttachKind,
    BtfTarget,
    ProbeTarget,
    RawTracepointTarget,
    TracepointTarget,
    parse_section,
)

from evspec.codes import bpf as codes
from evspec.diagnostics import EvspecError
from evspec.span import Slotted

# mechanisms, in the order libbpf-tools prefer them: a BTF tracepoint, then a BPF trampoline,
# a raw tracepoint, a kprobe, a tracepoint through perf
FAMILY_RANK = {"tp_btf": 0, "trampoline": 1, "raw_tp": 2, "kprobe": 3, "tracepoint": 4}

# Kernel functions that later kernels renamed or replaced by a tracepoint, as the tools look for
# them: name (leading '_' and a '_noprof' suffix dropped) -> the hook they share.
RENAMED: dict[str, str] = {
    "blk_account_io_start": "event:block_io_start",  # 6.5: the block_io_start tracepoint
    "blk_account_io_done": "event:block_io_done",
    "account_page_dirtied": "event:writeback_dirty_folio",  # 5.17: folio_account_dirtied
    "folio_account_dirtied": "event:writeback_dirty_folio",  # 6.x: writeback_dirty_folio
    "event:writeback_dirty_page": "event:writeback_dirty_folio",
    "mark_page_accessed": "function:folio_mark_accessed",  # 5.16 folios
    "migrate_misplaced_page": "function:migrate_misplaced_folio",  # 6.9
    "page_cache_alloc": "function:filemap_alloc_folio",  # 5.16: filemap_alloc_folio
}


class Hook(Slotted):
    """What one program hooks: ``family`` (a FAMILY_RANK key), ``target`` (the function or event
    as the section names it) and ``key`` (the hook shared with its alternatives)."""

    program: str
    family: str
    target: str
    key: str
    is_event: bool


class Choice(Slotted):
    """Programs of which one variant is loaded: ``variants`` first choice first."""

    variants: tuple[tuple[str, ...], ...]
    hook: str  # what they hook, for messages

    @property
    def programs(self) -> tuple[str, ...]:
        return tuple(p for v in self.variants for p in v)


def _norm(function: str) -> str:
    name = function.lstrip("_")
    return name[: -len("_noprof")] if name.endswith("_noprof") else name


def _key(kind: str, name: str) -> str:
    key = f"{kind}:{name}" if kind == "event" else _norm(name)
    key = RENAMED.get(key, key)
    return key if ":" in key else f"function:{key}"


def hook_of(prog: ProgramSpec) -> Hook | None:
    """The hook of a program that has alternatives' kind of section (None for the others and for
    ``?`` sections, which are off until a term turns them on)."""
    if prog.section.startswith("?"):
        return None
    try:
        section = parse_section(prog.section)
    except EvspecError:
        return None
    target = section.target
    if section.attach is AttachKind.TRAMPOLINE and isinstance(target, BtfTarget) and target.kind in ("fentry", "fexit"):
        return Hook(prog.name, "trampoline", target.name, _key("function", target.name), False)
    if (section.attach is AttachKind.KPROBE and isinstance(target, ProbeTarget) and target.binary is None
            and target.point.function and target.point.offset in (None, 0)):
        return Hook(prog.name, "kprobe", target.point.function, _key("function", target.point.function), False)
    if section.attach in (AttachKind.BTF_TRACEPOINT, AttachKind.RAW_TRACEPOINT) and isinstance(target, RawTracepointTarget):
        family = "tp_btf" if section.attach is AttachKind.BTF_TRACEPOINT else "raw_tp"
        return Hook(prog.name, family, target.event, _key("event", target.event), True)
    if section.attach is AttachKind.TRACEPOINT and isinstance(target, TracepointTarget) and not target.load_only:
        return Hook(prog.name, "tracepoint", target.event, _key("event", target.event), True)
    return None


def alternatives(spec: ObjectSpec) -> list[Choice]:
    """The choices of ``spec``, in the order of their first program."""
    hooks = [h for h in (hook_of(p) for p in spec.programs) if h is not None]
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for h in hooks:
        parent[find(h.program)] = find(h.key)
    components: dict[str, list[Hook]] = {}
    for h in hooks:
        components.setdefault(find(h.program), []).append(h)
    out: list[Choice] = []
    for members in components.values():
        variants: dict[tuple[str, str], list[Hook]] = {}
        for h in members:
            variants.setdefault((h.family, h.target), []).append(h)
        if len(variants) < 2:
            continue
        order = sorted(variants, key=lambda v: FAMILY_RANK[v[0]])  # stable: object order among equals
        out.append(Choice(tuple(tuple(h.program for h in variants[v]) for v in order),
                          members[0].key.partition(":")[2]))
    return out


def choice_members(spec: ObjectSpec) -> frozenset[str]:
    """The programs of ``spec`` that have alternatives."""
    return frozenset(p for choice in alternatives(spec) for p in choice.programs)


class Chosen(Slotted):
    """What ``choose`` did: the object without the programs not chosen, and lines for ``-v``."""

    spec: ObjectSpec
    notes: tuple[str, ...]


def choose(
    spec: ObjectSpec,
    can_attach: Callable[[ProgramSpec], str | None],
    fixed: Collection[str] = (),
) -> Chosen:
    """Keep, of each choice of ``spec``, the first variant all of whose programs ``can_attach``
    (which answers None, or why not); choices with a program in ``fixed`` (set by a
    ``prog:NAME.autoload=`` term) are left as the terms leave them. Raises ObjectError
    ObjectError (NO_ALTERNATIVE) when no variant of a choice can attach, with each variant's reason."""
    by_name = {p.name: p for p in spec.programs}
    dropped: set[str] = set()
    notes: list[str] = []
    for choice in alternatives(spec):
        if any(p in fixed for p in choice.programs):
            notes.append(f"{spec.path}: {_describe(choice)}: chosen by prog:NAME.autoload= terms")
            continue
        reasons: list[str] = []
        picked: Sequence[str] | None = None
        for variant in choice.variants:
            why = next((w for w in (can_attach(by_name[p]) for p in variant) if w is not None), None)
            if why is None:
                picked = variant
                break
            reasons.append(f"{', '.join(variant)}: {why}")
        if picked is None:
            raise ObjectError(codes.NO_ALTERNATIVE, f"{spec.path}: no program hooking {choice.hook} can attach "
                              "on this kernel: " + "; ".join(reasons),
                              help=("leave them out with prog:NAME.autoload=0 if the object works without them",))
        dropped.update(p for p in choice.programs if p not in picked)
        notes.append(f"{spec.path}: {choice.hook}: loads {', '.join(picked)} (of {_describe(choice)})"
                     + (f"; passed over: {'; '.join(reasons)}" if reasons else ""))
    if not dropped:
        return Chosen(spec, tuple(notes))
    kept = tuple(p for p in spec.programs if p.name not in dropped)
    return Chosen(replace(spec, programs=kept), tuple(notes))


def _describe(choice: Choice) -> str:
    return " | ".join(", ".join(v) for v in choice.variants)
