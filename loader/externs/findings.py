"""What ``evspec check`` says of a BPF object's ``__kconfig``/``__ksym`` externs and kfuncs,
without loading anything: each resolved with ``externs.resolve_externs`` against the facts of the
system checked against (this machine's, or a snapshot's ``extern_sources``; ``ExternFacts``) and
its kernel BTF, the findings in the words verify and record use."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from evspec.loader.errors import ObjectError
from evspec.loader.object.spec import ExternSpec, ObjectSpec

from evspec.codes import bpf as codes_bpf
from evspec.span import Slotted

if TYPE_CHECKING:
    from evspec.loader.btf.target import TargetBtf
    from evspec.loader.externs.module_ksyms import ModuleBtf
    from evspec.loader.externs.resolve import ExternValues

    from evspec.system.model import ExternFacts


class ExternFinding(Slotted):
    code: str
    is_error: bool
    message: str
    notes: tuple[str, ...] = ()
    help: tuple[str, ...] = ()


# the order resolve_externs meets externs in (and so the one verify names first): kconfig values,
# typeless ksyms, typed ksyms, kfuncs
def _resolve_order(ext: ExternSpec) -> int:
    return {"kconfig": 0, "ksym": 2 if ext.type_id else 1}.get(ext.kind, 3)


def extern_findings(spec: ObjectSpec, extern_facts: Callable[[ObjectSpec], ExternFacts],
                    core_target: Callable[[], TargetBtf] | None) -> list[ExternFinding]:
    """What check says of the object's externs against a system (its ``extern_facts`` and the BTF
    ``core_target`` gives, as ``ObjectEnvironment`` holds them): each extern
    resolved on its own (``resolve_externs`` stops at the first failure; check reports them all),
    as verify and record resolve it there, its failure an error in their words; a weak one that
    does not resolve a warning (it is 0, its calls poisoned); what the system's description does
    not hold (``NotRecorded``) a warning that says what was not checked."""
    if not spec.externs:
        return []
    from evspec.loader.externs.resolve import NotRecorded  # not for objects without externs (12 ms)

    from evspec.system.model import ExternFactsUnavailable

    try:
        facts = extern_facts(spec)
    except ExternFactsUnavailable as exc:
        return [_extern_unchecked(spec.externs, exc.reason)]
    except ObjectError as exc:
        return [ExternFinding(exc.code, True, exc.message, help=exc.help)]
    resolver = _OfflineExterns(spec, facts, core_target)
    findings: list[ExternFinding] = []
    unchecked: dict[str, list[ExternSpec]] = {}
    for ext in sorted(spec.externs, key=_resolve_order):
        try:
            values = resolver.resolve(ext)
            ambiguity = resolver.ambiguity(ext)
        except NotRecorded as exc:
            unchecked.setdefault(exc.why, []).append(ext)
            continue
        except ObjectError as exc:
            findings.append(_extern_error(spec, ext, exc))
            continue
        if ambiguity is not None:
            findings.append(ambiguity)
            continue
        findings.extend(ExternFinding(codes_bpf.EXTERN_VALUE_CUT, False, w.removeprefix(f"{spec.path}: "))
                        for w in values.warnings)
        if ext.weak:
            weak = resolver.weak_missing(ext)
            if weak is not None:
                findings.append(weak)
    if not unchecked and not any(f.is_error for f in findings):
        # each resolves, so all must together: a module of a kfunc must get an fd_array index
        try:
            resolver.resolve_all()
        except ObjectError as exc:
            findings.append(ExternFinding(exc.code, True, exc.message.removeprefix(f"{spec.path}: ")))
    findings.extend(_extern_unchecked(externs, why) for why, externs in unchecked.items())
    return findings


def _described(ext: ExternSpec) -> str:
    return f"{ext.name!r} ({ext.kind}, {ext.type_name})"


def _extern_error(spec: ObjectSpec, ext: ExternSpec, exc: ObjectError) -> ExternFinding:
    message = exc.message.removeprefix(f"{spec.path}: ")
    notes = () if f"({ext.kind}, {ext.type_name})" in message else (f"extern {_described(ext)}",)
    return ExternFinding(exc.code, True, message, notes, exc.help)


def _extern_unchecked(externs: Sequence[ExternSpec], why: str) -> ExternFinding:
    if len(externs) == 1:
        return ExternFinding(codes_bpf.EXTERN_UNCHECKED, False, f"extern {_described(externs[0])} not checked: {why}")
    return ExternFinding(codes_bpf.EXTERN_UNCHECKED, False, f"{len(externs)} externs not checked: {why}",
                          notes=tuple(f"extern {_described(e)}" for e in externs))


class _OfflineExterns:
    """One object's externs resolved against a system's ExternFacts and BTF, with no syscall;
    what several externs share (the BTF, the parsed Kconfig) is asked for once."""

    def __init__(self, spec: ObjectSpec, facts: ExternFacts, core_target: Callable[[], TargetBtf] | None) -> None:
        self.spec = spec
        self.facts = facts
        self._core_target = core_target
        self._vmlinux: TargetBtf | None = None

    def vmlinux(self) -> TargetBtf:
        from evspec.loader.externs.resolve import NotRecorded

        if self._vmlinux is None:
            if self._core_target is None:
                raise NotRecorded("the system snapshot holds no kernel BTF")
            try:
                self._vmlinux = self._core_target()
            except ObjectError as exc:  # worded for CO-RE: "CO-RE relocations need ..., which cannot be used: WHY"
                why = exc.message.rpartition("which cannot be used: ")[2]
                raise NotRecorded(f"the kernel's BTF cannot be used: {why}") from None
        return self._vmlinux

    def modules(self) -> Sequence[ModuleBtf]:
        from evspec.loader.externs.module_ksyms import unopened_modules
        from evspec.loader.externs.resolve import NotRecorded

        vmlinux = self.vmlinux()
        if vmlinux.searches_modules:
            return unopened_modules(vmlinux)
        listed = self.facts.module_btfs
        if listed == ():  # the machine has none: vmlinux's BTF is all there is
            return ()
        had = f" (the machine has {len(listed)}: {', '.join(listed[:5])}{', ...' if len(listed) > 5 else ''})" \
            if listed else ""
        raise NotRecorded(f"not in vmlinux's BTF; module BTF was not recorded{had}")

    def kconfig(self) -> tuple[Mapping[str, str], str]:
        from evspec.loader.externs import kconfig as kc
        from evspec.loader.externs.resolve import NotRecorded

        facts = self.facts
        if facts.kconfig is not None:
            return facts.kconfig
        if facts.kconfig_invalid is not None:
            raise kc.KconfigError(facts.kconfig_invalid)
        if facts.recorded:
            tried = "; ".join(f"{path}: {why}" for path, why in facts.kconfig_unreadable)
            raise NotRecorded(f"the Kconfig of the snapshot's machine could not be read when the snapshot was "
                              f"written ({tried})")
        raise kc.KconfigUnreadable(facts.kconfig_unreadable)

    def kallsyms_names(self) -> Sequence[tuple[str, str]]:
        from evspec.loader.externs.resolve import NotRecorded

        facts = self.facts
        if facts.kallsyms is not None:
            return facts.kallsyms
        if facts.recorded:
            raise NotRecorded(f"/proc/kallsyms of the snapshot's machine could not be read when the snapshot was "
                              f"written ({facts.kallsyms_unreadable})")
        raise OSError(facts.kallsyms_unreadable)

    def _resolve(self, externs: tuple[ExternSpec, ...]) -> ExternValues:
        from evspec.loader.externs.resolve import offline_sources, resolve_externs
        from evspec.loader.object.spec import replace

        spec = replace(self.spec, externs=externs)
        facts = self.facts
        sources = offline_sources(spec, release=facts.release, version=facts.version, machine=facts.machine,
                                  version_signature=facts.version_signature, kconfig=self.kconfig,
                                  kallsyms_names=self.kallsyms_names, vmlinux=self.vmlinux, modules=self.modules,
                                  kprobes=facts.kprobes)
        return resolve_externs(spec, sources)

    def resolve(self, ext: ExternSpec) -> ExternValues:
        return self._resolve((ext,))

    def resolve_all(self) -> ExternValues:
        return self._resolve(self.spec.externs)

    def ambiguity(self, ext: ExternSpec) -> ExternFinding | None:
        """A typeless ksym listed at several addresses (libbpf: "resolution is ambiguous"), which
        resolving without addresses cannot see."""
        if ext.kind != "ksym" or ext.type_id:
            return None
        from evspec.loader.externs.resolve import kallsyms_base_name

        if self.facts.ambiguous is not None:
            count = self.facts.ambiguous.get(ext.name)
            if not count:
                return None
            return ExternFinding(codes_bpf.EXTERN_UNRESOLVED, True, f"extern {ext.name!r} (ksym) is ambiguous: "
                                  f"/proc/kallsyms has it at {count} different addresses",
                                  notes=(f"extern {_described(ext)}",))
        listed = sum(1 for letter, name in self.kallsyms_names() if kallsyms_base_name(letter, name) == ext.name)
        if listed < 2:
            return None
        return _extern_unchecked((ext,), f"/proc/kallsyms lists it {listed} times, and its addresses were hidden "
                                 "(kptr_restrict) when it was read, so whether they differ cannot be told")

    def weak_missing(self, ext: ExternSpec) -> ExternFinding | None:
        """Why a weak extern that resolved is 0 (its calls poisoned): what the same extern, strong,
        fails with; None when it has a value."""
        from evspec.loader.btf.reader import Btf
        from evspec.loader.externs.resolve import POISON_KFUNC_BASE, libbpf_order
        from evspec.loader.object.spec import replace

        try:
            self.resolve(replace(ext, weak=False))
        except ObjectError as exc:
            why = exc.message.removeprefix(f"{self.spec.path}: ")
            _, sep, tail = why.partition(" cannot be resolved: ")
            why = tail if sep else re.sub(rf"^extern {re.escape(repr(ext.name))} (\([^)]*\) )?", "it ", why)
        else:
            return None
        if ext.kind == "kfunc":
            assert self.spec.btf is not None
            index = [e.name for e in libbpf_order(Btf(self.spec.btf), self.spec.externs)].index(ext.name)
            result = (f"its calls are poisoned (libbpf's call {POISON_KFUNC_BASE + index}): the verifier refuses "
                      "the program if one can be reached")
            fix = f"guard its calls: if (bpf_ksym_exists({ext.name})) ..."
        elif ext.kind == "ksym":
            result, fix = "it resolves to 0", f"test its address before use: if (&{ext.name}) ..."
        else:
            result, fix = "it resolves to 0", "0 stands for not set: test the value before use"
        return ExternFinding(codes_bpf.EXTERN_WEAK_MISSING, False,
                              f"weak extern {_described(ext)} does not resolve: {why}; {result}", help=(fix,))
