"""What libbpf 1.x refuses in an object before it makes a system call, refused here by name and
with no syscall: ``load_object`` applies these rules before it creates anything, and ``evspec
check`` applies them too, so that check refuses what record would (COMPAT 16)."""

from __future__ import annotations

from collections.abc import Collection

from evspec.loader.errors import ObjectError
from evspec.loader.object.spec import MAP_IN_MAP_TYPES, MapSpec, MapType, ObjectSpec

from evspec.codes import bpf as bpf_codes
from evspec.codes import kernel as codes


def check_libbpf_rules(spec: ObjectSpec, deferred: Collection[str] = ()) -> None:
    """Refuse, naming it, what libbpf 1.x refuses or what evspec would load differently from it:
    static functions in program sections, calls into another program's section and callbacks
    (function addresses) there, legacy map fields it does not implement, map-in-maps without an
    inner map or whose initial values name a map declared after them, PROG_ARRAY values that name
    a program loaded later (one of ``deferred``)."""
    path = spec.path
    for fn in spec.subprograms:
        if fn.section != ".text":
            raise ObjectError(
                bpf_codes.BAD_PROGRAM,
                f"{path}: section '{fn.section}': function '{fn.name}' is static; libbpf refuses a "
                "static function in a program section (\"program is static and not supported\")",
                help=("move it to .text (drop its section attribute) or make it a global program",),
            )
    for fn in (*spec.programs, *spec.subprograms):
        for rel in fn.relocations:
            callee = spec.function(rel.target) if rel.kind in ("call", "func") else None
            if callee is None or callee.section == ".text":
                continue
            if rel.kind == "call":
                raise ObjectError(
                    bpf_codes.BAD_RELOCATION,
                    f"{path}: function '{fn.name}' (section '{fn.section}') calls global function "
                    f"'{callee.name}' of program section '{callee.section}'; libbpf refuses it "
                    "(\"bad call relo\"): only functions in .text can be called",
                    help=("put the called function in .text (no SEC()), global or static",),
                )
            raise ObjectError(
                bpf_codes.BAD_RELOCATION,
                f"{path}: function '{fn.name}' (section '{fn.section}'), instruction "
                f"{rel.insn_index}: takes the address of '{callee.name}', a function of program "
                f"section '{callee.section}' (a callback, e.g. of bpf_loop); libbpf refuses it "
                "(\"bad map relo\"): only functions in .text can be callbacks",
                help=("put the callback in .text (no SEC()), global or static",),
            )
    for m in spec.maps:
        unsupported = [(k, v) for k, v in m.legacy_extra if k != "id"]  # id only names it for inner_id
        if unsupported:
            fields = ", ".join(f"{k} {v}" for k, v in unsupported)
            raise ObjectError(
                bpf_codes.UNSUPPORTED,
                f"{path}: legacy map '{m.name}' (section '{m.section}'): {fields}: these fields of "
                "iproute2's struct bpf_elf_map (pinning, map-in-map) are not supported",
                help=("declare the map in SEC(\".maps\") with __uint(pinning, LIBBPF_PIN_BY_NAME) "
                      "or __array(values, struct ...)",),
            )
        if m.type in MAP_IN_MAP_TYPES and m.inner is None:
            raise ObjectError(
                bpf_codes.UNSUPPORTED,
                f"{path}: map '{m.name}' ({MapType(m.type).name}) has no inner map definition; "
                "declare it with __array(values, struct { ... }) so the inner map can be made",
            )
        if m.type in MAP_IN_MAP_TYPES:
            _maps_held_come_first(spec, m)
        if m.type == MapType.PROG_ARRAY:
            late = [name for _slot, name in m.initial_slots if name in deferred]
            if late:
                raise ObjectError(
                    bpf_codes.UNSUPPORTED,
                    f"{path}: map '{m.name}': its initial values name program(s) "
                    f"{', '.join(repr(n) for n in late)}, which are loaded after the object (probe "
                    "programs with argument prologues); the prog array cannot hold them",
                )


def _maps_held_come_first(spec: ObjectSpec, m: MapSpec) -> None:
    """libbpf fills a map-in-map's ``.values`` when it creates it, in declaration order: the maps
    it holds must be declared (and so created) before it."""
    declared = [d.name for d in spec.maps]
    earlier = set(declared[:declared.index(m.name)])
    for slot, name in m.initial_slots:
        if name not in earlier:
            raise ObjectError(codes.RELOCATION, f"{spec.path}: map '{m.name}' slot [{slot}]: map "
                              f"'{name}' is declared after it; libbpf fills a map-in-map when it is "
                              "created, so the maps it holds must come first")
