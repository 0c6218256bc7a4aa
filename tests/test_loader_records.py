"""The records of the ``evspec verify`` path behave like the dataclasses they were.

Specs, section names, ELF pieces, kernel descriptions, live objects and verify's results are
``evspec.span.Slotted`` classes (the ``dataclass`` decorator brings ``inspect`` and compiles every
class's methods when the module is imported: 20 ms of a cold ``evspec verify``). Each is held here
to a dataclass twin made from its former definition: fields in order with their defaults and
``field(repr=False)`` / ``field(compare=False)``, frozen or not. ``[]`` and ``{}`` stand for
``field(default_factory=list)`` and ``dict``: the record takes None for "a new empty one".
"""

from __future__ import annotations

import ast
import dataclasses

import pytest
from evspec.loader.btf import fixup as btf_fixup
from evspec.loader.externs import kconfig
from evspec.loader.externs import resolve as externs
from evspec.loader.kernel import maps, perf, programs, syscalls
from evspec.loader.kernel import verifier as kernel_verifier
from evspec.loader.load import live
from evspec.loader.object import elf, link, map_attrs, reader, spec
from evspec.loader.object.spec import replace
from evspec.loader.sections import libbpf as libbpf_sections
from evspec.loader.sections import names as section
from evspec.loader.verify import objects as verify_objects
from evspec.loader.verify import results as verify_results
from record_twins import assert_like_twin, body

from evspec import codes
from evspec.span import Slotted

NO_MODULE = "<no-module>"  # ExternSources.modules's default: a function that gives none

# (record class, frozen, its former dataclass fields: NAME, NAME=DEFAULT, then " hidden" / " uncompared")
FORMER_DATACLASSES: list[tuple[type, bool, list[str]]] = [
    (spec.MapSpec, True, ["name", "type", "key_size", "value_size", "max_entries", "flags=0", "pinning=0",
                          "legacy=False", "section='.maps'", "symbol_offset=0", "key_type_id=None",
                          "value_type_id=None", "initial_value=None", "readonly=False", "numa_node=0",
                          "map_extra=0", "inner=None", "initial_slots=()", "mmapable=False", "legacy_extra=()"]),
    (spec.Relocation, True, ["insn_index", "kind", "symbol", "target", "addend=0"]),
    (spec.LineInfo, True, ["insn_offset", "file", "line", "column", "source_line"]),
    (spec.CoreRelocation, True, ["insn", "kind", "type_name", "access", "type_id", "kind_id", "applied=False",
                                 "poison=None"]),
    (spec.ProgramSpec, True, ["name", "section", "insns", "offset=0", "relocations=()", "line_info=()",
                              "core_relocations=()", "global_function=False", "hidden=False", "problem=None"]),
    (spec.FunctionProblem, True, ["code", "message", "help=()"]),
    (spec.ExternSpec, True, ["name", "kind", "weak", "btf_id", "type_id", "type_name", "offset=0", "size=0"]),
    (spec.SectionLayout, True, ["name", "size", "symbols=()", "hidden=()"]),
    (spec.ObjectSpec, True, ["path", "license", "kernel_version", "maps", "programs", "subprograms=()",
                             "btf=None hidden", "btf_ext=None hidden", "layouts=() hidden", "externs=()",
                             "externs_applied=False", "struct_ops=()"]),
    (spec.StructOpsSpec, True, ["name", "section", "type_name", "members=()"]),
    (section.Setting, True, ["key", "value", "span", "key_span", "value_span"]),
    (section.TracepointTarget, True, ["system", "event", "load_only", "span", "system_span", "event_span"]),
    (section.RawTracepointTarget, True, ["event", "span"]),
    (section.ProbePoint, True, ["function", "file", "line", "offset", "retprobe", "address", "span"]),
    (section.ProbeArg, True, ["name", "fetch", "type", "span"]),
    (section.ProbeTarget, True, ["group", "event", "point", "args", "binary", "module", "span",
                                 "group_span=None", "event_span=None"]),
    (section.NetHookTarget, True, ["dev", "xdp_mode", "direction", "span", "dev_span=None"]),
    (section.BtfTarget, True, ["kind", "name", "span"]),
    (section.SectionSpec, True, ["name", "style", "program_type", "attach", "target", "main_span", "settings=()",
                                 "inlines=True", "force=False", "perf_compatible=True", "perf_reason=None",
                                 "perf_message=None", "warnings=()", "autoload=True", "note=None"]),
    (libbpf_sections.BtfLookup, True, ["prefix", "kind", "what"]),
    (libbpf_sections.SectionDef, True, ["name", "prog_type", "attach_type=0", "plus=False", "sleepable=False",
                                        "xdp_frags=False", "attach_btf=False", "usdt=False", "exp_attach_opt=False",
                                        "attachable=False", "auto_attach=''"]),
    (libbpf_sections.LoadParams, True, ["prog_type", "expected_attach_type=0", "prog_flags=0", "target=None",
                                        "lookup=None", "usdt=False"]),
    (elf.Section, True, ["index", "name", "type", "flags", "offset", "size", "link", "info", "entsize"]),
    (elf.Symbol, True, ["index", "name", "value", "size", "type", "bind", "section_index"]),
    (elf.Rel, True, ["offset", "symbol", "type"]),
    (externs.UndefinedSymbol, True, ["name", "weak"]),
    (externs.ExternSources, True, ["release", "bpf_cookie", "syscall_wrapper", "kconfig", "kallsyms", "vmlinux",
                                   f"modules={NO_MODULE}", "version=''", "version_signature=None"]),
    (externs.ExternValues, True, ["kconfig=b''", "ksyms={}", "kfuncs={}", "warnings=()", "fd_array=()"]),
    (kconfig.KconfigType, True, ["kind", "size", "signed=False"]),
    (btf_fixup.BtfFeatures, True, ["func=True", "datasec=True", "global_func=True", "float=True", "decl_tag=True",
                                   "type_tag=True", "enum64=True"]),
    (btf_fixup.FixedBtf, True, ["data", "used", "replaced=()"]),
    (btf_fixup.ProgramBtfInfo, True, ["func_info", "line_info"]),
    (reader._Function, True, ["name", "section", "offset", "size", "is_program", "is_global=False", "hidden=False"]),
    (reader._Targets, True, ["maps", "data", "functions", "externs", "kconfig"]),
    (maps.MapDescription, True, ["id", "type", "name", "key_size", "value_size", "max_entries", "flags", "btf_id",
                                 "map_extra=0", "btf_key_type_id=0", "btf_value_type_id=0"]),
    (perf.RingMapping, True, ["fd", "address", "length", "page_size"]),
    (perf.BpfRingMapping, True, ["fd", "consumer", "producer", "data_size", "page_size"]),
    (programs.ProgramDescription, True, ["id", "type", "name", "tag", "map_ids", "gpl_compatible", "xlated_len",
                                         "btf_id=0", "nr_func_info=0", "nr_line_info=0"]),
    (programs._Attempt, True, ["fd", "error", "log_true_size"]),
    (syscalls.SyscallNumbers, True, ["bpf", "perf_event_open", "ioctl", "mmap", "munmap", "close"]),
    (kernel_verifier.VerifierSummary, True, ["message", "insn_index=None", "insn_text=None", "source=None"]),
    (link.LinkedProgram, True, ["insns", "line_info", "layout"]),
    (live.LiveMap, True, ["spec", "fd", "with_btf", "pinned=None", "reused=False"]),
    (live.LiveProgram, True, ["spec", "fd", "prog_type", "insns"]),
    (map_attrs.MapAttributes, True, ["max_entries", "flags"]),
    (verify_results.ProgramResult, False, ["object", "name", "section", "loaded=False", "insns=0", "xlated=None",
                                   "verifier=None", "error=None", "errno=None", "relocations=0", "poisoned=[]",
                                   "attach_target=None"]),
    (verify_results.MapResult, False, ["object", "name", "type", "created=False", "error=None"]),
    (verify_results.ObjectResult, False, ["path", "error=None", "programs=[]", "maps=[]", "notes=[]"]),
    (verify_objects.ProgramLoad, True, ["prog_type", "expected_attach_type=0", "attach_btf_id=0", "prog_flags=0"]),
    (codes.CodeInfo, True, ["code", "title", "explanation", "example=''", "fix=''"]),
]
MODULES = (spec, section, libbpf_sections, elf, externs, kconfig, btf_fixup, reader, maps, perf, programs, syscalls,
           kernel_verifier, live, link, map_attrs, verify_objects, verify_results, codes)
MISSING = dataclasses.MISSING


def _no_module() -> tuple[()]:
    return ()


def _parse(text: str) -> tuple[str, object, object, bool, bool]:
    """(name, default, default_factory, repr, compare) of one former field."""
    words = text.split(" ")
    name, _, value = words[0].partition("=")
    default: object = MISSING
    factory: object = MISSING
    if value == NO_MODULE:
        default = _no_module
    elif value:
        parsed = ast.literal_eval(value)
        if parsed == [] or parsed == {}:  # a mutable default: dataclasses took only a factory for it
            factory = type(parsed)
        else:
            default = parsed
    return name, default, factory, "hidden" not in words, "uncompared" not in words


def _twin(cls: type, frozen: bool, former: list[str]) -> type:
    fields = []
    for text in former:
        name, default, factory, shown, compared = _parse(text)
        if default is _no_module:  # the record's own function, so that the reprs can be compared
            default = next(f.default for f in dataclasses.fields(cls) if f.name == name)
            assert default is not _no_module and default() == ()  # type: ignore[operator]
        fields.append((name, object, dataclasses.field(default=default, default_factory=factory,  # type: ignore[call-overload]
                                                       repr=shown, compare=compared)))
    return dataclasses.make_dataclass(f"{cls.__name__}Twin", fields, frozen=frozen)


def _arguments(cls: type, salt: str) -> tuple[object, ...]:
    """A value for every field (hashable ones, different from the defaults)."""
    return tuple(f"{salt}:{f.name}" for f in dataclasses.fields(cls))


def test_every_record_of_the_verify_path_has_its_former_dataclass_here() -> None:
    records = {cls for module in MODULES for cls in vars(module).values()
               if isinstance(cls, type) and issubclass(cls, Slotted) and cls.__module__ == module.__name__}
    assert records == {cls for cls, _, _ in FORMER_DATACLASSES}


@pytest.mark.parametrize(("record", "frozen", "former"), FORMER_DATACLASSES,
                         ids=[f"{c.__module__.rsplit('.', 1)[-1]}.{c.__name__}" for c, _, _ in FORMER_DATACLASSES])
def test_records_behave_like_their_former_dataclasses(record: type, frozen: bool, former: list[str]) -> None:
    twin = _twin(record, frozen, former)
    args, other = _arguments(record, "a"), _arguments(record, "b")

    def more(a: object, c: object) -> None:
        assert replace(c, **{f.name: getattr(a, f.name) for f in dataclasses.fields(a)}) == a  # type: ignore[arg-type]
        required = [name for name, default, factory, *_ in map(_parse, former)
                    if default is MISSING and factory is MISSING]
        bare, bare_twin = record(*args[:len(required)]), twin(*args[:len(required)])
        assert body(repr(bare)) == body(repr(bare_twin)) and dataclasses.asdict(bare) == dataclasses.asdict(bare_twin)
        for f in dataclasses.fields(twin):
            if f.default_factory is not MISSING:  # a new empty one each time, as the factory made
                assert getattr(bare, f.name) is not getattr(record(*args[:len(required)]), f.name)

    assert (twin.__hash__ is None) == (not frozen)
    assert_like_twin(record, twin, args, other, more=more)


def test_replace_refuses_what_dataclasses_replace_refuses() -> None:
    relocation = spec.Relocation(3, "map", "m", "m")
    assert replace(relocation, addend=8) == dataclasses.replace(relocation, addend=8) == spec.Relocation(
        3, "map", "m", "m", 8)
    assert replace(relocation) == relocation and replace(relocation) is not relocation
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        replace(relocation, nope=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        dataclasses.replace(relocation, nope=1)


def test_btf_features_name_what_is_missing_in_field_order() -> None:
    features = btf_fixup.BtfFeatures(datasec=False, enum64=False, func=False)
    assert features.missing == ("func", "datasec", "enum64")
    assert btf_fixup.ALL_FEATURES.missing == ()
