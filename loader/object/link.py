"""Linking a program for BPF_PROG_LOAD, with no syscall: a copy of its instructions with map and
data references patched to the descriptors it is given, and the functions it calls (and whose
addresses it takes) appended once each, as libbpf links a program (cilium/ebpf's ``link``ing of
a ``ProgramSpec``). ``evspec check`` links every program with stand-in descriptors, so that an
object ``record`` could not link is refused without a kernel. A function the reader found a
problem in (``ProgramSpec.problem``) fails the programs that are it or call it, and no other."""

from __future__ import annotations

import errno as E
from collections.abc import Mapping

from evspec.loader import asm
from evspec.loader.abi import bpf as abi
from evspec.loader.errors import ObjectError
from evspec.loader.object.spec import LineInfo, MapSpec, ObjectSpec, ProgramSpec, replace

from evspec.codes import kernel as codes
from evspec.span import Slotted

_MAP_SECTIONS = (".maps", "maps")
_EXTERN_KINDS = ("ksym", "kfunc")  # patched by externs.resolve.apply_externs, not by linking


class LinkedProgram(Slotted):
    """A program ready for BPF_PROG_LOAD: the patched instructions with its subprograms appended."""

    insns: bytes
    line_info: tuple[LineInfo, ...]  # offsets into ``insns`` (subprograms' entries shifted)
    layout: tuple[tuple[str, int], ...]  # (function, first instruction) in load order

    def prefixed(self, front: bytes) -> LinkedProgram:
        """The program with the instructions ``front`` put before it (an argument prologue, a
        prelude): its line records shifted with it; load it with ``prologue`` = their count."""
        if not front:
            return self
        shift = asm.count(front)
        return LinkedProgram(front + self.insns,
                             tuple(replace(e, insn_offset=e.insn_offset + shift) for e in self.line_info),
                             self.layout)


def _relocation_error(prog: ProgramSpec, index: int, message: str) -> ObjectError:
    return ObjectError(codes.RELOCATION, f"program '{prog.name}', instruction {index}: {message}")


def _problem_error(prog: ProgramSpec, part: ProgramSpec) -> ObjectError:
    """The error of ``prog``, which is (or calls) ``part``, a function that cannot be linked."""
    assert part.problem is not None
    via = "" if part is prog else f", through function '{part.name}' it calls"
    return ObjectError(part.problem.code, f"program '{prog.name}' cannot be linked{via}: {part.problem.message}; "
                       "the object's other programs are not concerned", help=part.problem.help)


def _patch_ld_imm64(
    buf: bytearray, part: ProgramSpec, base: int, index: int, src_reg: int, fd: int, offset: int
) -> None:
    at = base + index
    if index < 0 or index + 1 >= part.insn_count:
        raise _relocation_error(part, index, "a ld_imm64 relocation points past the program's end")
    first, second = asm.decode(buf, at), asm.decode(buf, at + 1)
    if first.code != asm.OP_LD_IMM64 or second.code != 0:
        raise _relocation_error(
            part,
            index,
            f"expected a ld_imm64 instruction (opcode 0x18) to relocate, found opcode {first.code:#04x}",
        )
    asm.put(buf, at, first._replace(src=src_reg, imm=fd))
    asm.put(buf, at + 1, second._replace(imm=offset))


def _patch_call(buf: bytearray, part: ProgramSpec, base: int, index: int, target: int) -> None:
    at = base + index
    if not 0 <= index < part.insn_count:
        raise _relocation_error(part, index, "a call relocation points past the program's end")
    insn = asm.decode(buf, at)
    if insn.code != asm.OP_CALL or insn.src != abi.BPF_PSEUDO_CALL:
        raise _relocation_error(
            part, index, f"expected a bpf-to-bpf call (opcode 0x85, src_reg 1), found opcode {insn.code:#04x}"
        )
    asm.put(buf, at, insn._replace(imm=target - (at + 1)))


def _data_map(spec: ObjectSpec, target: str) -> MapSpec | None:
    for m in spec.maps:
        if m.name == target:
            return m
    for m in spec.maps:
        if m.section == target and m.section not in _MAP_SECTIONS:
            return m
    return None


def link_program(prog: ProgramSpec, spec: ObjectSpec, map_fds: Mapping[str, int]) -> LinkedProgram:
    """Patch a copy of ``prog``'s instructions for loading; no system call is made.

    * ``map``: the ld_imm64 gets ``src_reg = BPF_PSEUDO_MAP_FD`` and the map's fd;
    * ``data``: ``src_reg = BPF_PSEUDO_MAP_VALUE``, the data map's fd, and ``addend`` (the offset
      into the data section) in the second half;
    * ``call``: the called function (from ``spec.subprograms``, else ``spec.programs``) is appended
      once, its own relocations applied, and the call's ``imm`` set to the relative distance to its
      first instruction (plus ``addend`` bytes);
    * ``func`` (a callback's address): the function is appended the same way and the ld_imm64 gets
      ``src_reg = BPF_PSEUDO_FUNC`` and the same relative distance.
    """
    buf = bytearray(prog.insns)
    parts: list[tuple[int, ProgramSpec]] = [(0, prog)]
    starts: dict[str, int] = {prog.name: 0}
    done = 0
    callback = exception_callback(spec, prog)
    while done < len(parts) or (callback is not None and callback.name not in starts):
        if done == len(parts):  # libbpf appends the exception callback after the calls
            assert callback is not None
            starts[callback.name] = len(buf) // abi.INSN_SIZE
            parts.append((starts[callback.name], callback))
            buf += callback.insns
        base, part = parts[done]
        done += 1
        if part.problem is not None:
            raise _problem_error(prog, part)
        for rel in part.relocations:
            if rel.kind in ("call", "func"):
                if rel.target not in starts:
                    callee = spec.function(rel.target)
                    if callee is None:
                        raise _relocation_error(
                            part, rel.insn_index, f"calls '{rel.target}', which the object lacks"
                        )
                    starts[rel.target] = len(buf) // abi.INSN_SIZE
                    parts.append((starts[rel.target], callee))
                    buf += callee.insns
                target = starts[rel.target] + rel.addend // abi.INSN_SIZE
                if rel.kind == "call":
                    _patch_call(buf, part, base, rel.insn_index, target)
                else:
                    at = base + rel.insn_index
                    _patch_ld_imm64(
                        buf, part, base, rel.insn_index, abi.BPF_PSEUDO_FUNC, target - (at + 1), 0
                    )
            elif rel.kind in ("map", "data"):
                fd = map_fds.get(rel.target)
                if fd is None and rel.kind == "data":
                    data = _data_map(spec, rel.target)
                    fd = map_fds.get(data.name) if data is not None else None
                if fd is None:
                    what = "map" if rel.kind == "map" else "data section"
                    raise _relocation_error(
                        part, rel.insn_index, f"refers to {what} '{rel.target}', which the object lacks"
                    )
                if rel.kind == "map":
                    _patch_ld_imm64(buf, part, base, rel.insn_index, abi.BPF_PSEUDO_MAP_FD, fd, 0)
                else:
                    _patch_ld_imm64(buf, part, base, rel.insn_index, abi.BPF_PSEUDO_MAP_VALUE, fd, rel.addend)
            elif rel.kind in ("ksym", "kfunc"):
                raise _relocation_error(
                    part, rel.insn_index, f"extern '{rel.target}' is not resolved (externs.apply_externs)"
                )
            else:
                raise _relocation_error(part, rel.insn_index, f"unknown relocation kind {rel.kind!r}")
    line_info = tuple(
        replace(entry, insn_offset=entry.insn_offset + base)
        for base, part in parts
        for entry in part.line_info
    )
    layout = tuple((part.name, base) for base, part in parts)
    return LinkedProgram(bytes(buf), line_info, layout)


_EXCEPTION_TAG = "exception_callback:"


def exception_callback(spec: ObjectSpec, prog: ProgramSpec) -> ProgramSpec | None:
    """The function a ``btf_decl_tag("exception_callback:NAME")`` on ``prog`` names, which libbpf
    1.8 appends to the program though nothing calls it (bpf_prog_assign_exc_cb): a global,
    not hidden subprogram. ObjectError as libbpf fails: a tag on anything but a global function
    (EINVAL), an empty name (EINVAL), no such function (ENOENT), a hidden or static one (EINVAL).
    Two tags on one program: none is appended (the verifier refuses it)."""
    if spec.btf is None or _EXCEPTION_TAG.encode() not in spec.btf:
        return None
    from evspec.loader.btf.reader import FUNC_GLOBAL, Btf, BtfKind

    btf = Btf(spec.btf)
    found: list[str] = []
    for tag in btf.types():
        if tag.kind != BtfKind.DECL_TAG or tag.component_idx != -1 or not tag.name.startswith(_EXCEPTION_TAG):
            continue
        target = btf.type(tag.type)
        if target.kind != BtfKind.FUNC or target.linkage != FUNC_GLOBAL:
            raise ObjectError(codes.RELOCATION, f"program '{prog.name}': an {_EXCEPTION_TAG}<value> decl tag is "
                              "not on a program's global function (libbpf refuses the object: EINVAL)", errno=E.EINVAL)
        if target.name == prog.name:
            found.append(tag.name[len(_EXCEPTION_TAG):])
    if len(found) != 1:
        return None
    name = found[0]
    if not name:
        raise ObjectError(codes.RELOCATION, f"program '{prog.name}': its {_EXCEPTION_TAG} decl tag names no "
                          "function (libbpf: EINVAL)", errno=E.EINVAL)
    callback = next((f for f in spec.subprograms if f.name == name), None)
    if callback is None:
        raise ObjectError(codes.RELOCATION, f"program '{prog.name}': its exception callback '{name}' is no "
                          "function of the object (libbpf: ENOENT)", errno=E.ENOENT)
    if not callback.global_function or callback.hidden:
        raise ObjectError(codes.RELOCATION, f"program '{prog.name}': its exception callback '{name}' must be a "
                          "global function, not static or __hidden (libbpf: EINVAL)", errno=E.EINVAL)
    return callback


def link_every_program(spec: ObjectSpec) -> None:
    """Link each program of ``spec`` as ``record`` would, with stand-in descriptors: ObjectError
    where that fails. The relocations of ``__ksym`` externs and kfuncs, which ``externs.resolve``
    patches (with the running kernel's ids) before anything is linked, are left out until then."""
    if not spec.externs_applied:
        spec = replace(spec, programs=tuple(map(_without_externs, spec.programs)),
                       subprograms=tuple(map(_without_externs, spec.subprograms)))
    stand_in = {m.name: 0 for m in spec.maps}
    for prog in spec.programs:
        link_program(prog, spec, stand_in)


def _without_externs(fn: ProgramSpec) -> ProgramSpec:
    return replace(fn, relocations=tuple(r for r in fn.relocations if r.kind not in _EXTERN_KINDS))
