"""Issue #15's review pass of the object reader and linker: what libbpf 1.x does without a word
with an object's odd corners, done by evspec the same way or refused, naming the feature and where
it is. Each fixture (tests/data/libbpf/*.c, or a clang-built one changed here where clang cannot
write the case) is loaded by evspec and by the libbpf runner of test_libbpf_semantics; where both
load, the outcome is compared (verdict, map attributes, global data contents, VAR linkage in the
loaded BTF).

Facts of libbpf 1.1 these tests stand on (libbpf.c, read for facts): relocation sections of
sections without code are skipped, ``.rel.maps`` and ``.rel.struct_ops`` excepted ("elf: skipping
relo section"); a call without a relocation goes to the .text function *containing* its target;
code outside FUNC symbols is never looked at; an ld_imm64 of a function outside .text is a "bad map
relo"; data maps of ``.data.*`` are named after the section alone, cut to 15 characters, with no
check that names differ; ``__hidden`` variables get a static BTF VAR before the data maps are made,
so a section of hidden variables is not mmapable; ``map_extra`` is read by ``__uint()`` only (32
bits; libbpf 1.4 added ``__ulong()``) and passed to the kernel as 64 bits.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from evspec.loader.btf.reader import Btf, BtfKind, RawType, type_info, write_btf
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, VerifierError
from evspec.loader.object.elf import BpfElf
from evspec.loader.object.inspect import inspect_report, inspect_text
from evspec.loader.object.link import link_every_program
from evspec.loader.object.reader import data_map_name, read_object, read_object_bytes
from evspec.loader.object.spec import MapType, ObjectSpec
from test_libbpf_semantics import (
    Builder,
    attributes,
    build_runner,
    evspec_load,
    evspec_view,
    libbpf_load,
    make_builder,
    same_as_libbpf,
)
from test_objects_errors import Elf

from evspec.codes import bpf as codes

VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")


@pytest.fixture(scope="module")
def builder(tmp_path_factory: pytest.TempPathFactory) -> Builder:
    return make_builder(tmp_path_factory)


@pytest.fixture(scope="module")
def runner(builder: Builder, root_kernel: None) -> Path:
    return build_runner(builder)


@pytest.fixture
def kernel(root_kernel: None) -> Kernel:
    return Kernel()


def _refused(read: Callable[[], object]) -> ObjectError:
    with pytest.raises(ObjectError) as caught:
        read()
    return caught.value


def _unlinkable(read: Callable[[], ObjectSpec]) -> ObjectError:
    """The error linking the object's programs gives: the object itself is read (one function's
    problem fails the programs that call it, not the object)."""
    spec = read()
    return _refused(lambda: link_every_program(spec))


def replace_section(data: bytes, name: str, body: bytes) -> bytes:
    """``data`` with section ``name`` holding ``body``: appended at the end of the file, the
    section header pointed at it."""
    elf = Elf(data)
    index = elf.find(name)
    offset = len(elf.data)
    elf.data += body
    elf.set_header(index, 24, "<Q", offset)
    elf.set_header(index, 32, "<Q", len(body))
    return elf.bytes()


def section_bytes(path: Path, name: str) -> bytes:
    elf = BpfElf(str(path), path.read_bytes())
    found = elf.section(name)
    assert found is not None
    return elf.contents(found)


# ------------------------------------------------- pointers in global data (.rel.data)


def test_global_data_without_pointers_loads_alike(kernel: Kernel, runner: Path, builder: Builder) -> None:
    ours, ref, live = same_as_libbpf(kernel, runner, builder, "reldata", KIND=0)
    with live:
        assert ours.maps["reldata_.data"]["value"] == "0700000008000000090000000a000000"


@pytest.mark.parametrize(("kind", "rel_section", "data_section", "where", "pointee", "file_value"), [
    (1, ".rel.data", ".data", "offset 16 of data section '.data' (variable 'es_ptr')",
     "map 'es_target' (section '.maps')", 0),
    (2, ".rel.data", ".data", "offset 16 of data section '.data' (variable 'es_ptr')",
     "variable 'es_values' (section '.data') + 8", 8),
    (3, ".rel.data", ".data", "offset 16 of data section '.data' (variable 'es_ptr')",
     "function 'es_fn' (section '.text')", 0),
    (4, ".rel.rodata", ".rodata", "offset 0 of data section '.rodata' (variable 'es_names')",
     "offset 0 of section '.rodata.str1.1' (and 1 more relocation(s) in '.rel.rodata')", 0),
])
def test_pointers_in_global_data_are_refused(
    runner: Path, builder: Builder, kind: int, rel_section: str, data_section: str, where: str,
    pointee: str, file_value: int,
) -> None:
    obj = builder.obj("reldata", KIND=kind)
    ref = libbpf_load(runner, obj)
    # libbpf loads it, writing no address: the map holds the section's bytes, where a pointer's
    # 8 bytes are the relocation's addend (0, or 8 for &es_values[2], or a string's offset)
    assert ref.ok and "elf: skipping relo section" in ref.message and f" {rel_section} for section" in ref.message
    in_file = section_bytes(obj, data_section)
    held = bytes.fromhex(ref.maps[data_map_name(str(obj), data_section)]["value"])
    assert held == in_file
    offset = 0 if kind == 4 else 16
    assert int.from_bytes(held[offset:offset + 8], "little") == file_value
    if kind == 4:  # the second string pointer: "second" is at offset 6 of .rodata.str1.1
        assert int.from_bytes(held[8:16], "little") == 6
    caught = _refused(lambda: builder.spec("reldata", KIND=kind))
    assert caught.code == codes.UNSUPPORTED
    assert (f"section '{rel_section}': the 8-byte pointer at {where} is initialised with the address "
            f"of {pointee}") in caught.message
    assert f"libbpf skips '{rel_section}', leaving the bytes as the file holds them ({file_value:#x})" in caught.message


def test_relocations_of_a_section_evspec_does_not_load_are_refused(builder: Builder) -> None:
    """A relocation section for a section of neither code, data, maps, BTF nor DWARF (here
    .rel.data re-pointed at the license section) names both sections."""
    elf = Elf(builder.obj("reldata", KIND=1).read_bytes())
    elf.set_header(elf.find(".rel.data"), 44, "<I", elf.find("license"))
    caught = _refused(lambda: read_object_bytes(elf.bytes(), "license.o"))
    assert caught.code == codes.UNSUPPORTED
    assert ("section '.rel.data' relocates section 'license' (relocation type 2 against 'es_target' at "
            "offset 16); evspec applies relocations to code and to .maps only") in caught.message


# ------------------------------------------------------ calls without a relocation


def test_a_call_without_relocation_to_a_function_start_is_linked(
    kernel: Kernel, runner: Path, builder: Builder
) -> None:
    spec = builder.spec("midcall", TARGET=0)
    caller = next(f for f in spec.subprograms if f.name == "es_caller")
    assert [(r.kind, r.target) for r in caller.relocations] == [("call", "es_callee")]
    _, _, live = same_as_libbpf(kernel, runner, builder, "midcall", TARGET=0)
    live.close()


def test_a_call_without_relocation_to_its_own_start_is_recursion_for_both(
    kernel: Kernel, runner: Path, builder: Builder
) -> None:
    ref = libbpf_load(runner, builder.obj("midcall", TARGET=2))
    assert not ref.ok and "the call stack of 8 frames is too deep" in ref.message
    with pytest.raises(VerifierError) as caught:
        evspec_load(kernel, builder.spec("midcall", TARGET=2))
    assert "the call stack of 8 frames is too deep" in (caught.value.log or "")


@pytest.mark.parametrize(("target", "libbpf_ok", "inside"), [
    (1, True, "offset 8, inside function 'es_callee' (which starts at offset 0); libbpf would call "
              "'es_callee' from its start instead"),
    (3, False, "offset 56, inside function 'es_caller' (which starts at offset 24); libbpf would call "
               "'es_caller' from its start instead"),
])
def test_a_call_without_relocation_into_a_function_is_refused(
    runner: Path, builder: Builder, target: int, libbpf_ok: bool, inside: str
) -> None:
    """libbpf calls the function holding the target from its start: es_callee (loaded, calling
    something else than the code says), or es_caller itself (a recursion the verifier refuses)."""
    ref = libbpf_load(runner, builder.obj("midcall", TARGET=target))
    assert ref.ok is libbpf_ok
    if not libbpf_ok:
        assert "the call stack of 8 frames is too deep" in ref.message
    caught = _unlinkable(lambda: builder.spec("midcall", TARGET=target))
    assert caught.code == codes.BAD_RELOCATION
    assert ("bad relocation at offset 40 of section '.text': function 'es_caller' has a bpf-to-bpf call "
            f"without a relocation that jumps to {inside}") in caught.message


def _kfunc_id(name: str) -> int:
    found = Btf(VMLINUX_BTF.read_bytes()).find(name, BtfKind.FUNC)
    assert found is not None, name
    return found.id


def test_a_kfunc_call_without_relocation_is_refused(runner: Path, builder: Builder) -> None:
    """libbpf passes the raw BTF ids on: the program loads, calling whatever these numbers name in
    this kernel's BTF."""
    lock, unlock = _kfunc_id("bpf_rcu_read_lock"), _kfunc_id("bpf_rcu_read_unlock")
    ref = libbpf_load(runner, builder.obj("rawkfunc", LOCK=lock, UNLOCK=unlock))
    assert ref.ok
    caught = _unlinkable(lambda: builder.spec("rawkfunc", LOCK=lock, UNLOCK=unlock))
    assert caught.code == codes.UNSUPPORTED
    assert (f"section 'socket', function 'rawkfunc_prog', instruction 0 (offset 0): a kfunc call (src_reg "
            f"BPF_PSEUDO_KFUNC_CALL) without a relocation: the kernel would take its imm {lock} as the BTF "
            "id of a function of whichever kernel runs it") in caught.message
    assert caught.help and "extern ... __ksym" in caught.help[0]


def test_an_ld_imm64_with_src_reg_and_no_relocation_is_refused(builder: Builder) -> None:
    caught = _unlinkable(lambda: builder.spec("rawkfunc", MAP_FD=3))
    assert caught.code == codes.UNSUPPORTED
    assert ("section 'socket', function 'rawkfunc_prog', instruction 0 (offset 0): an ld_imm64 with "
            "src_reg 1 (BPF_PSEUDO_MAP_FD) and no relocation: the kernel would take its imm 3 as a map "
            "file descriptor of the loading process") in caught.message


# ------------------------------------------------------ code outside FUNC symbols


def test_code_of_functions_only_loads_alike(kernel: Kernel, runner: Path, builder: Builder) -> None:
    _, _, live = same_as_libbpf(kernel, runner, builder, "strays", SECTION=0)
    live.close()


@pytest.mark.parametrize(("section", "name"), [(1, "socket"), (2, ".text")])
def test_code_outside_function_symbols_is_refused(runner: Path, builder: Builder, section: int, name: str
                                                  ) -> None:
    ref = libbpf_load(runner, builder.obj("strays", SECTION=section))
    assert ref.ok  # the stray exit instruction dropped
    caught = _refused(lambda: builder.spec("strays", SECTION=section))
    assert caught.code == codes.BAD_PROGRAM
    assert (f"section '{name}': bytes 0..8 (1 instruction(s)) are code of no function (no FUNC symbol "
            "covers them); libbpf drops such code without a word") in caught.message


def test_overlapping_functions_are_refused(builder: Builder) -> None:
    """strays_prog's FUNC symbol moved over es_sub's bytes in .text (an alias; hand-made, clang
    never writes it): evspec would give the relocations of the shared bytes to one of the two."""
    obj = builder.obj("strays", SECTION=0)
    elf = Elf(obj.read_bytes())
    symtab, _ = elf.body(".symtab")
    size = len(section_bytes(obj, ".text"))
    struct.pack_into("<HQQ", elf.data, symtab + 24 * elf.symbol_index("strays_prog") + 6, elf.find(".text"),
                     0, size)  # st_shndx, st_value, st_size
    caught = _refused(lambda: read_object_bytes(elf.bytes(), "overlap.o"))
    assert caught.code == codes.BAD_PROGRAM
    assert "section '.text': functions " in caught.message and "overlap: not supported" in caught.message
    assert "'es_sub' (offset 0," in caught.message and "'strays_prog' (offset 0," in caught.message


# ------------------------------------------------------------------ .BTF header


def _long_btf_header(obj: Path, extra: bytes) -> bytes:
    """The object with its .BTF header grown by ``extra`` bytes (hdr_len 24 + len(extra))."""
    btf = section_bytes(obj, ".BTF")
    magic, version, flags, hdr_len, *areas = struct.unpack_from("<HBBIIIII", btf)
    header = struct.pack("<HBBIIIII", magic, version, flags, hdr_len + len(extra), *areas)
    return replace_section(obj.read_bytes(), ".BTF", header + extra + btf[hdr_len:])


def test_a_longer_btf_header_of_zeros_is_read_as_the_kernel_reads_it(
    kernel: Kernel, runner: Path, builder: Builder, tmp_path: Path
) -> None:
    obj = tmp_path / "bloom.o"
    obj.write_bytes(_long_btf_header(builder.obj("bloom"), bytes(8)))
    ref = libbpf_load(runner, obj)
    assert ref.ok and ref.maps["es_bloom"]["btf_value"]
    with evspec_load(kernel, read_object(obj)) as live:
        ours = evspec_view(kernel, live)
        assert attributes(ours) == attributes(ref) and live.btf_fd is not None and not live.warnings


def test_unknown_btf_header_fields_are_refused(runner: Path, builder: Builder, tmp_path: Path) -> None:
    obj = tmp_path / "bloom.o"
    obj.write_bytes(_long_btf_header(builder.obj("bloom"), b"\0\0\0\0\x05\0\0\0"))
    ref = libbpf_load(runner, obj)  # the kernel refuses the BTF; libbpf goes on without it
    assert ref.ok and "Error loading .BTF into kernel" in ref.message and "BTF is optional, ignoring" in ref.message
    assert not ref.maps["es_bloom"]["btf_value"]
    caught = _refused(lambda: read_object(obj))
    assert caught.code == codes.UNSUPPORTED
    assert ("the .BTF header is 32 bytes, and its bytes 24..32 after the 24 of struct btf_header hold fields "
            "evspec does not know (byte 28 is 0x05); the kernel refuses such BTF") in caught.message


# ------------------------------------------------ function addresses outside .text


def test_a_callback_in_text_loads_alike(kernel: Kernel, runner: Path, builder: Builder) -> None:
    _, _, live = same_as_libbpf(kernel, runner, builder, "fnaddr", CALLBACK_IN_XDP=0)
    live.close()


def test_a_callback_in_a_program_section_is_refused_by_both(
    kernel: Kernel, runner: Path, builder: Builder
) -> None:
    ref = libbpf_load(runner, builder.obj("fnaddr", CALLBACK_IN_XDP=1))
    assert not ref.ok and "bad map relo against 'es_callback' in section 'xdp'" in ref.message
    spec = builder.spec("fnaddr", CALLBACK_IN_XDP=1)
    with pytest.raises(ObjectError) as caught:
        evspec_load(kernel, spec)
    assert caught.value.code == codes.BAD_RELOCATION
    assert ("function 'fnaddr_prog' (section 'socket'), instruction 1: takes the address of 'es_callback', a "
            "function of program section 'xdp'") in caught.value.message


# ------------------------------------------------ data map names cut to the same 15


def test_data_sections_with_distinct_names_load_alike(kernel: Kernel, runner: Path, builder: Builder) -> None:
    ours, _, live = same_as_libbpf(kernel, runner, builder, "dupnames", SAME=0)
    with live:
        assert ours.map_names == [".data.es_a", ".data.es_b"]


def test_data_sections_cut_to_one_name_are_refused(runner: Path, builder: Builder) -> None:
    ref = libbpf_load(runner, builder.obj("dupnames", SAME=1))
    assert ref.ok and ref.map_names == [".data.es_trunca", ".data.es_trunca"]  # two maps, one name
    caught = _refused(lambda: builder.spec("dupnames", SAME=1))
    assert caught.code == codes.BAD_MAP
    assert ("data sections '.data.es_truncated_a' and '.data.es_truncated_b' both make a map named "
            "'.data.es_trunca'") in caught.message
    assert caught.help == ("rename the sections so that their first 15 characters differ",)


# ---------------------------------------------------------- __hidden variables


def test_hidden_variables_are_static_and_their_sections_not_mmapable(
    kernel: Kernel, runner: Path, builder: Builder
) -> None:
    spec = builder.spec("hiddenvar")
    assert {m.section: m.mmapable for m in spec.maps} == {".data.es_hid": False, ".data": True, ".bss": False}
    ours, ref, live = same_as_libbpf(kernel, runner, builder, "hiddenvar")
    with live:
        assert ours.linkage == ref.linkage
        assert {v: ours.linkage[v] for v in ("es_hidden_data", "es_hidden_bss", "es_hidden_too", "es_visible")} == {
            "es_hidden_data": 0, "es_hidden_bss": 0, "es_hidden_too": 0, "es_visible": 1}


# ------------------------------------------------------------- 64-bit map_extra


ARENA_ADDRESS = 0x7F00_0000_0000  # above 4 GiB: a 64-bit map_extra


def _as_enum64(obj: Path, value: int) -> bytes:
    """The object with the 8-byte ENUM clang 14 writes for ``__ulong(map_extra, value)`` made the
    ENUM64 clang 15 writes, holding all 64 bits of ``value``."""
    btf = Btf(section_bytes(obj, ".BTF"))
    types = [btf.raw_type(tid) for tid in range(1, len(btf))]
    (i,) = [i for i, t in enumerate(types) if t.kind == BtfKind.ENUM and t.word == 8]
    name_off = struct.unpack_from("<I", types[i].extra)[0]
    types[i] = RawType(types[i].name_off, type_info(BtfKind.ENUM64, 1, False), 8,
                       struct.pack("<III", name_off, value & 0xFFFFFFFF, value >> 32))
    return replace_section(obj.read_bytes(), ".BTF", write_btf(types, btf.string_section()))


def test_a_64_bit_map_extra_cut_by_the_compiler_is_refused(runner: Path, builder: Builder) -> None:
    obj = builder.obj("arena", EXTRA=f"{ARENA_ADDRESS:#x}ULL")
    ref = libbpf_load(runner, obj)  # libbpf 1.1 reads __uint() only
    assert not ref.ok and "attr 'map_extra': expected PTR, got enum" in ref.message
    caught = _refused(lambda: read_object(obj))
    assert caught.code == codes.BAD_MAP
    assert ("map 'es_arena': field 'map_extra' is an 8-byte enum (__ulong) whose BTF ENUM record holds 32 bits "
            "of its value only (0x0); the compiler cut the value") in caught.message


def test_a_64_bit_map_extra_is_read_shown_and_passed_whole(
    kernel: Kernel, runner: Path, builder: Builder, tmp_path: Path
) -> None:
    obj = tmp_path / "arena.o"
    obj.write_bytes(_as_enum64(builder.obj("arena", EXTRA=f"{ARENA_ADDRESS:#x}ULL"), ARENA_ADDRESS))
    spec = read_object(obj)
    arena = spec.map("es_arena")
    assert arena is not None and (arena.type, arena.map_extra) == (MapType.ARENA, ARENA_ADDRESS)
    report = inspect_report(spec)
    assert report["maps"][0]["map_extra"] == ARENA_ADDRESS and report["maps"][0]["type"] == "arena"
    assert "es_arena: arena  key 0B  value 0B  max_entries 4  flags 0x400  map_extra 0x7f0000000000" in inspect_text(report)
    # libbpf 1.1 refuses __ulong() (evspec reads it as libbpf 1.4 does) and passes a 64-bit
    # map_extra only when told (bpf_map__set_map_extra): then it makes the same map
    assert "attr 'map_extra': expected PTR, got enum64" in libbpf_load(runner, obj).message
    ref = libbpf_load(runner, builder.obj("arena"), map_extra={"es_arena": ARENA_ADDRESS})
    assert ref.ok and ref.maps["es_arena"]["map_extra"] == ARENA_ADDRESS
    with evspec_load(kernel, spec) as live:
        ours = evspec_view(kernel, live)
        assert attributes(ours) == attributes(ref)
        assert kernel.map_info(live.map("es_arena").fd).map_extra == ARENA_ADDRESS


def test_a_32_bit_ulong_map_extra_is_read(builder: Builder) -> None:
    spec = builder.spec("arena", EXTRA=4096)  # fits in 32 bits: a 4-byte ENUM, its value whole
    btf = Btf(spec.btf or b"")
    assert [t.size for t in btf.types() if t.kind == BtfKind.ENUM] == [4]
    arena = spec.map("es_arena")
    assert arena is not None and arena.map_extra == 4096
