"""The BTF fix-up on crafted BTF (DATASEC completion, rewrites for older kernels), the writer, the
.BTF.ext records for BPF_PROG_LOAD, and the load path on the fake kernel (BTF refused, probes,
func/line info refused, E2BIG with an older kernel's attribute size). No root needed."""

from __future__ import annotations

import ctypes
import errno as E
import struct
from pathlib import Path

import pytest
from evspec.loader.abi import bpf as abi
from evspec.loader.btf.fixup import (
    ALL_FEATURES,
    BtfFeatures,
    BtfFixupError,
    ProgramBtfInfo,
    features_from,
    fixup_btf,
    probe_blobs,
    program_btf_info,
)
from evspec.loader.btf.reader import Btf, BtfError, BtfExt, BtfKind, RawType, write_btf
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.kernel.fake import FakeKernel
from evspec.loader.load.live import load_object, probe_btf_features
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec, ProgramSpec, ProgType, SectionLayout

K = BtfKind
NONE = BtfFeatures(**{name: False for name in ALL_FEATURES.__dataclass_fields__})


class Blob:
    """Hand-assembles .BTF and .BTF.ext (struct.pack, independent of the writer under test)."""

    def __init__(self) -> None:
        self.strings = bytearray(b"\0")
        self.records: list[bytes] = []

    def s(self, text: str) -> int:
        if not text:
            return 0
        at = bytes(self.strings).find(text.encode() + b"\0")
        if at > 0 and self.strings[at - 1] == 0:
            return at
        off = len(self.strings)
        self.strings += text.encode() + b"\0"
        return off

    def add(self, kind: K, name: str = "", word: int = 0, vlen: int = 0, flag: bool = False,
            extra: bytes = b"") -> int:
        info = (int(flag) << 31) | (int(kind) << 24) | vlen
        self.records.append(struct.pack("<III", self.s(name), info, word) + extra)
        return len(self.records)

    def int_(self, name: str = "int", size: int = 4) -> int:
        return self.add(K.INT, name, size, extra=struct.pack("<I", (1 << 24) | size * 8))

    def var(self, name: str, type_id: int, linkage: int = 1) -> int:
        return self.add(K.VAR, name, type_id, extra=struct.pack("<I", linkage))

    def datasec(self, name: str, *infos: tuple[int, int, int], size: int = 0) -> int:
        extra = b"".join(struct.pack("<III", *i) for i in infos)
        return self.add(K.DATASEC, name, size, vlen=len(infos), extra=extra)

    def func(self, name: str, proto: int, linkage: int = 1) -> int:
        return self.add(K.FUNC, name, proto, vlen=linkage)

    def proto(self, ret: int, *params: tuple[str, int]) -> int:
        extra = b"".join(struct.pack("<II", self.s(n), t) for n, t in params)
        return self.add(K.FUNC_PROTO, "", ret, vlen=len(params), extra=extra)

    def blob(self) -> bytes:
        types = b"".join(self.records)
        header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(self.strings))
        return header + types + bytes(self.strings)

    def ext(self, funcs: dict[str, list[tuple[int, int]]], lines: dict[str, list[tuple[int, str, str, int, int]]]
            ) -> bytes:
        def area(rec_size: int, per_section: dict[str, list[bytes]]) -> bytes:
            out = struct.pack("<I", rec_size)
            for section, records in per_section.items():
                out += struct.pack("<II", self.s(section), len(records)) + b"".join(records)
            return out

        func_area = area(8, {s: [struct.pack("<II", o, t) for o, t in r] for s, r in funcs.items()})
        line_area = area(16, {
            s: [struct.pack("<IIII", o, self.s(f), self.s(text), (line << 10) | col) for o, f, text, line, col in r]
            for s, r in lines.items()
        })
        header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(func_area), len(func_area), len(line_area))
        return header + func_area + line_area


def maps_btf() -> tuple[Blob, dict[str, int]]:
    """An int, two global .data variables (clang's offsets: 0), one static (clang's offset 8) and a
    .maps DATASEC with two map variables listed in reverse symbol order."""
    b = Blob()
    ids = {"int": b.int_()}
    ids["a"], ids["b"] = b.var("a", 1), b.var("b", 1)
    ids["st"] = b.var("st", 1, linkage=0)
    ids["data"] = b.datasec(".data", (ids["a"], 0, 4), (ids["b"], 0, 4), (ids["st"], 8, 4))
    ids["m1"], ids["m2"] = b.var("m1", 1), b.var("m2", 1)
    ids["maps"] = b.datasec(".maps", (ids["m2"], 0, 4), (ids["m1"], 0, 4))
    return b, ids


LAYOUTS = (
    SectionLayout(".data", 12, (("b", 0), ("a", 4), ("st", 8))),
    SectionLayout(".maps", 64, (("m1", 0), ("m2", 32))),
)


def secinfos(data: bytes, name: str) -> tuple[int, list[tuple[str, int, int]]]:
    btf = Btf(data)
    sec = btf.find(name, K.DATASEC)
    assert sec is not None
    return sec.size, [(btf.type(i.type).name, i.offset, i.size) for i in sec.secinfos]


# -------------------------------------------------------------------- the writer


def test_writer_reproduces_clangs_blobs_byte_for_byte(bpf_fixtures: Path) -> None:
    from evspec.loader.object.reader import read_object

    checked = 0
    for path in sorted(bpf_fixtures.glob("*.o")):
        try:
            raw = read_object(path).btf
        except Exception:  # the fixtures that are not BPF objects
            continue
        if raw is None:
            continue
        btf = Btf(raw)
        assert write_btf([btf.raw_type(i) for i in range(1, len(btf))], btf.string_section()) == raw, path
        checked += 1
    assert checked >= 20


def test_writer_refuses_records_whose_length_does_not_match_their_kind() -> None:
    with pytest.raises(BtfError, match="needs 4 bytes after its header, not 0"):
        write_btf([RawType(0, K.INT << 24, 4)], b"\0")
    with pytest.raises(BtfError, match="start with an empty string"):
        write_btf([], b"x\0")


# -------------------------------------------------------------------- DATASECs


def test_datasec_sizes_and_offsets_come_from_the_elf_sorted_by_offset() -> None:
    b, _ = maps_btf()
    fixed = fixup_btf(b.blob(), LAYOUTS)
    assert secinfos(fixed.data, ".data") == (12, [("b", 0, 4), ("a", 4, 4), ("st", 8, 4)])
    assert secinfos(fixed.data, ".maps") == (64, [("m1", 0, 4), ("m2", 32, 4)])
    assert fixed.replaced == () and fixed.used == frozenset({"datasec"})
    # everything else is untouched: same types, same strings
    before, after = Btf(b.blob()), Btf(fixed.data)
    assert len(before) == len(after) and before.string_section() == after.string_section()
    assert [t for t in before.types() if t.kind != K.DATASEC] == [t for t in after.types() if t.kind != K.DATASEC]


def test_a_static_variable_without_symbol_keeps_clangs_offset() -> None:
    b, _ = maps_btf()
    layouts = (SectionLayout(".data", 12, (("b", 0), ("a", 4))), LAYOUTS[1])
    assert secinfos(fixup_btf(b.blob(), layouts).data, ".data")[1][2] == ("st", 8, 4)


@pytest.mark.parametrize(
    ("layouts", "message"),
    [
        ((SectionLayout(".data", 12, (("a", 4), ("st", 8))), LAYOUTS[1]), "variable 'b' has no symbol in section '.data'"),
        ((LAYOUTS[1],), "DATASEC 5 describes section '.data', which the object does not have"),
        ((SectionLayout(".data", 6, (("b", 0), ("a", 4))), LAYOUTS[1]), r"'a' \(4 bytes at offset 4\) lies past the end of section '.data' \(6 bytes\)"),
        ((SectionLayout(".data", 12, (("b", 0), ("a", 2))), LAYOUTS[1]), "variables 'b' and 'a' of section '.data' overlap"),
    ],
)
def test_datasecs_that_cannot_be_completed(layouts: tuple[SectionLayout, ...], message: str) -> None:
    b, _ = maps_btf()
    with pytest.raises(BtfFixupError, match=message):
        fixup_btf(b.blob(), layouts)


def test_externs_are_refused() -> None:
    b = Blob()
    b.int_()
    b.var("CONFIG_HZ", 1, linkage=2)
    b.datasec(".data", (2, 0, 4))
    with pytest.raises(BtfFixupError, match="'CONFIG_HZ' in '.data' is extern"):
        fixup_btf(b.blob(), (SectionLayout(".data", 4, (("CONFIG_HZ", 0),)),))
    b = Blob()
    b.int_()
    b.func("bpf_kfunc", b.proto(1), linkage=2)
    b.datasec(".data", (3, 0, 4))
    with pytest.raises(BtfFixupError, match="lists type 3, a FUNC; the kernel accepts only VARs"):
        fixup_btf(b.blob(), (SectionLayout(".data", 4),))


# ------------------------------------------------------------ older kernels


def every_kind() -> Blob:
    b = Blob()
    b.int_()  # 1
    proto = b.proto(1, ("x", 1))  # 2
    b.func("f", proto)  # 3 (global)
    b.var("v", 1)  # 4
    b.datasec(".data.x", (4, 0, 4))  # 5
    b.add(K.FLOAT, "double", 8)  # 6
    b.add(K.DECL_TAG, "tag", 4, extra=struct.pack("<i", -1))  # 7
    b.add(K.TYPE_TAG, "user", 1)  # 8
    b.add(K.PTR, "", 8)  # 9
    b.add(K.ENUM64, "big", 8, vlen=2, extra=struct.pack("<IIIIII", b.s("A"), 1, 0, b.s("B"), 0, 1))  # 10
    b.add(K.ENUM, "neg", 4, vlen=1, flag=True, extra=struct.pack("<Ii", b.s("M"), -1))  # 11
    return b


EVERY_LAYOUT = (SectionLayout(".data.x", 4, (("v", 0),)),)


def test_kinds_used_are_reported_for_the_probes() -> None:
    fixed = fixup_btf(every_kind().blob(), EVERY_LAYOUT)
    assert fixed.used == frozenset(ALL_FEATURES.__dataclass_fields__)
    b, _ = maps_btf()
    assert fixup_btf(b.blob(), LAYOUTS).used == {"datasec"}


def test_nothing_is_rewritten_for_a_kernel_that_knows_every_kind() -> None:
    raw = every_kind().blob()
    fixed = fixup_btf(raw, EVERY_LAYOUT)
    assert [t.kind for t in Btf(fixed.data).types()] == [t.kind for t in Btf(raw).types()]


def test_every_kind_rewritten_for_the_oldest_kernel_keeps_the_type_ids() -> None:
    fixed = fixup_btf(every_kind().blob(), EVERY_LAYOUT, NONE)
    btf = Btf(fixed.data)
    kinds = [t.kind for t in btf.types()]
    assert kinds == [K.INT, K.ENUM, K.TYPEDEF, K.INT, K.STRUCT, K.STRUCT, K.INT, K.CONST, K.PTR,
                     K.UNION, K.ENUM, K.INT]
    proto, func, var, sec = btf.type(2), btf.type(3), btf.type(4), btf.type(5)
    assert [(e.name, e.value) for e in proto.enumerators] == [("x", 1)] and proto.size == 4
    assert (func.name, func.type) == ("f", 2)
    assert (var.name, var.size, var.int_bits) == ("v", 1, 8)
    assert sec.name == "_data_x" and sec.size == 4
    assert [(m.name, m.type, m.bit_offset) for m in sec.members] == [("v", 1, 0)]
    assert btf.type(6).name == "" and btf.type(6).size == 8 and not btf.type(6).members  # FLOAT
    assert btf.type(7).name == "" and btf.type(7).size == 1  # DECL_TAG
    assert btf.type(8).name == "" and btf.type(8).type == 1  # TYPE_TAG -> CONST int
    union = btf.type(10)
    assert union.size == 8 and [(m.name, m.type) for m in union.members] == [("A", 12), ("B", 12)]
    assert btf.type(12).size == 1  # the INT appended for the union's members
    assert not btf.type(11).kind_flag and btf.type(11).enumerators[0].value == 2**32 - 1
    assert fixed.replaced == (
        "FUNC_PROTO -> ENUM (1)", "FUNC -> TYPEDEF (1)", "VAR -> INT (1)", "DATASEC -> STRUCT (1)",
        "FLOAT -> STRUCT (1)", "DECL_TAG -> INT (1)", "TYPE_TAG -> CONST (1)", "ENUM64 -> UNION (1)",
        "signed ENUM -> ENUM (1)",
    )


def test_only_global_funcs_missing_makes_them_static() -> None:
    fixed = fixup_btf(every_kind().blob(), EVERY_LAYOUT, BtfFeatures(global_func=False))
    btf = Btf(fixed.data)
    assert btf.type(3).kind == K.FUNC and btf.type(3).linkage == 0
    assert fixed.replaced == ("global FUNC -> static FUNC (1)",)


def test_probe_blobs_hold_the_kind_they_probe() -> None:
    blobs = probe_blobs()
    assert set(blobs) == set(ALL_FEATURES.__dataclass_fields__)
    kinds = {name: {t.kind for t in Btf(blob).types()} for name, blob in blobs.items()}
    assert K.FUNC in kinds["func"] and K.DATASEC in kinds["datasec"] and K.FLOAT in kinds["float"]
    assert K.DECL_TAG in kinds["decl_tag"] and K.TYPE_TAG in kinds["type_tag"]
    assert K.ENUM64 in kinds["enum64"]
    assert Btf(blobs["global_func"]).find("f", K.FUNC).linkage == 1  # type: ignore[union-attr]
    # each probe uses only the one feature (and what every kernel with BTF knows)
    for name, blob in blobs.items():
        assert fixup_btf(blob, (SectionLayout(".data", 4, (("x", 0),)),)).used <= {name, "func"}


def test_features_from_probe_results() -> None:
    assert features_from(["func"], ["func", "float"]) == BtfFeatures(float=False)
    assert features_from([], []) == ALL_FEATURES
    assert BtfFeatures(float=False, enum64=False).missing == ("float", "enum64")


# ------------------------------------------------------------ .BTF.ext records


def ext_object() -> tuple[Btf, BtfExt, ProgramSpec, ProgramSpec]:
    b = Blob()
    b.int_()
    proto = b.proto(1)
    main_id, helper_id = b.func("main", proto), b.func("helper", proto, linkage=0)
    ext = b.ext(
        {"tp/x": [(0, main_id)], ".text": [(0, main_id), (16, helper_id)]},
        {"tp/x": [(0, "a.c", "int main", 3, 1), (16, "a.c", "return 0;", 5, 2)],
         ".text": [(16, "a.c", "int helper", 9, 0), (24, "a.c", "return 1;", 10, 3)]},
    )
    b.func("unused", proto)
    btf = Btf(b.blob())
    main = ProgramSpec("main", "tp/x", bytes(24), offset=0)
    helper = ProgramSpec("helper", ".text", bytes(16), offset=16)
    return btf, BtfExt(ext, btf), main, helper


def test_func_and_line_records_follow_the_linked_layout() -> None:
    btf, ext, main, helper = ext_object()
    info = program_btf_info(ext, [(0, main), (3, helper)])
    assert info is not None
    assert info.func_info == ((0, 3), (3, 4))
    assert [(insn, line >> 10, line & 0x3FF) for insn, _f, _t, line in info.line_info] == [
        (0, 3, 1), (2, 5, 2), (3, 9, 0), (4, 10, 3)
    ]
    assert [btf.string(text) for _i, _f, text, _l in info.line_info] == [
        "int main", "return 0;", "int helper", "return 1;"
    ]


def test_no_func_info_for_one_function_means_none_at_all() -> None:
    _btf, ext, main, _helper = ext_object()
    lone = ProgramSpec("lone", ".text", bytes(8), offset=8)
    assert program_btf_info(ext, [(0, main), (3, lone)]) is None


def test_a_prologue_shifts_the_records_but_not_the_main_function() -> None:
    info = ProgramBtfInfo(((0, 3), (10, 4)), ((0, 1, 2, 5 << 10), (4, 1, 6, 7 << 10)))
    shifted = info.shifted(6)
    assert shifted.func_info == ((0, 3), (16, 4))
    assert shifted.line_info == ((0, 1, 2, 5 << 10), (6, 1, 2, 5 << 10), (10, 1, 6, 7 << 10))
    assert info.shifted(0) is info


# ------------------------------------------------------- load path, fake kernel


def fake_object(btf: bytes, ext: bytes | None = None) -> ObjectSpec:
    prog = ProgramSpec("main", "tp/x", struct.pack("<BBhi", 0xB7, 0, 0, 0) + struct.pack("<BBhi", 0x95, 0, 0, 0))
    maps = (
        MapSpec("m1", MapType.ARRAY, 4, 4, 1, key_type_id=1, value_type_id=1),
        MapSpec("obj.data", MapType.ARRAY, 4, 12, 1, section=".data", value_type_id=4,
                initial_value=bytes(12)),
    )
    return ObjectSpec("obj.o", "GPL", None, maps, (prog,), btf=btf, btf_ext=ext, layouts=LAYOUTS)


def with_ext() -> ObjectSpec:
    b, _ = maps_btf()
    proto = b.proto(1)
    main = b.func("main", proto)
    ext = b.ext({"tp/x": [(0, main)]}, {"tp/x": [(0, "m.c", "int main(void)", 4, 1)]})
    return fake_object(b.blob(), ext)


def test_the_completed_btf_is_loaded_and_used_by_maps_and_programs() -> None:
    fake = FakeKernel()
    spec = with_ext()
    with load_object(spec, {"main": ProgType.TRACEPOINT}, kernel=Kernel(fake), cpus=1) as obj:
        (btf_load,) = fake.calls_of("BPF_BTF_LOAD")
        assert btf_load.args["btf"] == fixup_btf(spec.btf or b"", LAYOUTS).data
        creates = {c.args["map_name"]: c.args for c in fake.calls_of("BPF_MAP_CREATE")}
        assert (creates["m1"]["btf_fd"], creates["m1"]["btf_key_type_id"], creates["m1"]["btf_value_type_id"]) == (obj.btf_fd, 1, 1)
        data = creates["obj.data"]  # a data map: no key type, its DATASEC as the value type
        assert (data["btf_fd"], data["btf_key_type_id"], data["btf_value_type_id"]) == (obj.btf_fd, 0, 4)
        (load,) = fake.calls_of("BPF_PROG_LOAD")
        assert load.args["prog_btf_fd"] == obj.btf_fd
        assert (load.args["func_info_rec_size"], load.args["func_info_cnt"]) == (8, 1)
        assert (load.args["line_info_rec_size"], load.args["line_info_cnt"]) == (16, 1)
        assert obj.notes == ["obj.o: BTF loaded (2 of 2 maps with key/value types)"]


def test_a_refused_btf_leaves_everything_without_btf_and_says_why() -> None:
    fake = FakeKernel()
    fake.script("BPF_BTF_LOAD", errno=E.EINVAL, log="[4] DATASEC .data size=0 vlen=3 size == 0", times=None)
    with load_object(with_ext(), {"main": ProgType.TRACEPOINT}, kernel=Kernel(fake), cpus=1) as obj:
        assert obj.btf_fd is None and obj.btf_error is not None and obj.btf_error.code == "EK014"
        assert len(fake.calls_of("BPF_BTF_LOAD")) == 2  # no probes: the log names no unknown kind
        assert all(c.args["btf_fd"] == 0 for c in fake.calls_of("BPF_MAP_CREATE"))
        assert fake.calls_of("BPF_PROG_LOAD")[0].args["func_info_cnt"] == 0
        assert obj.notes == ["obj.o: loaded without BTF: the kernel refused the object's BTF: "
                             "[4] DATASEC .data size=0 vlen=3 size == 0"]


def test_a_btf_that_cannot_be_completed_is_not_offered_to_the_kernel() -> None:
    b, _ = maps_btf()
    spec = fake_object(b.blob())
    spec = ObjectSpec(spec.path, spec.license, None, spec.maps, spec.programs, btf=spec.btf, layouts=LAYOUTS[1:])
    fake = FakeKernel()
    with load_object(spec, {"main": ProgType.TRACEPOINT}, kernel=Kernel(fake), cpus=1) as obj:
        assert not fake.calls_of("BPF_BTF_LOAD")
        assert obj.btf_error is not None and obj.btf_error.code == "EK160"
        assert "which the object does not have" in obj.notes[0]


def test_unknown_kinds_are_probed_and_the_btf_rewritten() -> None:
    """A kernel without FLOAT: the object's BTF and the float probe are refused, the rest loads."""
    b, _ = maps_btf()
    b.add(K.FLOAT, "float", 4)
    spec = fake_object(b.blob())
    fake = FakeKernel()
    has_float = lambda a: any(t.kind == K.FLOAT for t in Btf(a["btf"]).types())  # noqa: E731
    fake.script("BPF_BTF_LOAD", errno=E.EINVAL, log="[8] Invalid kind:16", match=has_float, times=None)
    with load_object(spec, {"main": ProgType.TRACEPOINT}, kernel=Kernel(fake), cpus=1) as obj:
        assert obj.btf_fd is not None and obj.btf_error is None
        assert obj.btf is not None and obj.btf.replaced == ("FLOAT -> STRUCT (1)",)
        loaded = [Btf(c.args["btf"]) for c in fake.calls_of("BPF_BTF_LOAD") if c.errno is None]
        # the datasec probe (loaded, closed again) and the rewritten object BTF
        assert len(loaded) == 2 and loaded[-1].type(9).kind == K.STRUCT
        assert obj.notes[1] == "obj.o: BTF rewritten for this kernel: FLOAT -> STRUCT (1)"
        assert set(fake.open_fds.values()) == {"btf", "map", "prog"} and list(fake.open_fds.values()).count("btf") == 1


def test_probe_btf_features_asks_only_what_is_wanted() -> None:
    fake = FakeKernel()
    fake.script("BPF_BTF_LOAD", errno=E.EINVAL, match=lambda a: a["btf"] == probe_blobs()["enum64"], times=None)
    assert probe_btf_features(Kernel(fake), ["enum64", "float"]) == BtfFeatures(enum64=False)
    assert fake.open_fds == {}
    probed = {bytes(c.args["btf"]) for c in fake.calls_of("BPF_BTF_LOAD")}
    assert probed == {probe_blobs()["enum64"], probe_blobs()["float"]}


def test_a_program_whose_btf_info_is_refused_is_refused() -> None:
    """No second load without func/line info: libbpf 1.8 has none."""
    fake = FakeKernel()
    fake.script("BPF_PROG_LOAD", errno=E.EINVAL, log="missing bpf_line_info for func#0",
                match=lambda a: a["func_info_cnt"] > 0, times=None)
    with pytest.raises(KernelError, match="missing bpf_line_info for func#0") as caught:
        load_object(with_ext(), {"main": ProgType.TRACEPOINT}, kernel=Kernel(fake), cpus=1)
    assert caught.value.errno == E.EINVAL
    assert [c.args["func_info_cnt"] for c in fake.calls_of("BPF_PROG_LOAD")] == [1, 1]  # fast try, try with log
    assert fake.open_fds == {}


# ----------------------------------------------------------------------- E2BIG


def field_offset(struct_type: type[ctypes.Structure], name: str) -> int:
    return int(getattr(struct_type, name).offset)


def test_e2big_leaves_out_btf_info_then_remembers_the_kernels_size() -> None:
    """A kernel whose union bpf_attr ends before prog_btf_fd (4.x): programs load without func/line
    info and names stay; the second load passes the short size at once."""
    known = field_offset(abi.ProgLoadAttr, "prog_btf_fd")
    fake = FakeKernel(bpf_attr_size=known)
    kernel = Kernel(fake)
    with load_object(with_ext(), {"main": ProgType.TRACEPOINT}, kernel=kernel, cpus=1):
        loads = fake.calls_of("BPF_PROG_LOAD")
        assert [(c.errno, c.args["size"]) for c in loads] == [(E.E2BIG, ctypes.sizeof(abi.ProgLoadAttr)), (None, known)]
        assert loads[-1].args["prog_name"] == "main" and loads[-1].args["func_info_cnt"] == 0
        kernel.load_program(ProgType.TRACEPOINT, bytes(loads[-1].args["insns"]), "GPL", name="again",
                            btf_fd=5, func_info=((0, 1),))
        assert [(c.errno, c.args["size"]) for c in fake.calls_of("BPF_PROG_LOAD")][-1] == (None, known)
    assert kernel.left_out["BPF_PROG_LOAD"] == ["prog_btf_fd", "func_info_rec_size", "func_info",
                                                "func_info_cnt", "line_info_rec_size", "line_info",
                                                "line_info_cnt"]
    assert kernel.notes[0].startswith("BPF_PROG_LOAD: this kernel does not know prog_btf_fd, ")
    assert "BPF_MAP_CREATE" not in kernel.left_out  # its BTF fields end before that size


def test_e2big_on_an_older_kernel_creates_maps_without_btf_types() -> None:
    fake = FakeKernel(bpf_attr_size=field_offset(abi.MapCreateAttr, "btf_fd"))
    kernel = Kernel(fake)
    with load_object(with_ext(), {"main": ProgType.TRACEPOINT}, kernel=kernel, cpus=1) as obj:
        creates = [(c.args["map_name"], c.errno) for c in fake.calls_of("BPF_MAP_CREATE")]
        assert creates == [("m1", E.E2BIG), ("m1", None), ("obj.data", None)]  # learnt once
        assert not obj.map("m1").with_btf and not obj.map("obj.data").with_btf
    assert kernel.left_out["BPF_MAP_CREATE"] == ["btf_fd", "btf_key_type_id", "btf_value_type_id"]


def test_e2big_for_a_field_that_matters_is_an_error_naming_it() -> None:
    fake = FakeKernel(bpf_attr_size=field_offset(abi.MapCreateAttr, "map_extra"))
    kernel = Kernel(fake)
    with pytest.raises(KernelError) as info:
        kernel.create_map(MapType.BLOOM_FILTER, 0, 4, 1, map_extra=3, name="bloom")
    assert info.value.code == "EK003"
    assert info.value.message == (
        "BPF_MAP_CREATE for map 'bloom': the running kernel does not know a field evspec set: map_extra (E2BIG)"
    )
    assert kernel.left_out == {}


def test_e2big_that_no_field_explains_is_about_the_program() -> None:
    fake = FakeKernel()
    fake.script("BPF_PROG_LOAD", errno=E.E2BIG, times=None)
    kernel = Kernel(fake)
    with pytest.raises(KernelError) as info:
        kernel.load_program(ProgType.TRACEPOINT, bytes(16), "GPL", name="big", btf_fd=3, func_info=((0, 1),))
    assert info.value.message == (
        "BPF_PROG_LOAD for program 'big': the program is too large: more instructions than the "
        "kernel accepts, or more than the verifier's complexity limit (E2BIG)"
    )
    assert kernel.left_out == {} and kernel.notes == []
    sizes = [c.args["size"] for c in fake.calls_of("BPF_PROG_LOAD")]
    # per try: the whole attr, without the BTF fields, without the name; the same with a log
    assert sizes == [ctypes.sizeof(abi.ProgLoadAttr), field_offset(abi.ProgLoadAttr, "prog_btf_fd"),
                     field_offset(abi.ProgLoadAttr, "prog_name")] * 2


def test_e2big_with_a_verifier_log_is_the_verifiers_verdict() -> None:
    fake = FakeKernel()
    fake.script("BPF_PROG_LOAD", errno=E.E2BIG, log="BPF program is too large. Processed 1000001 insn",
                times=None)
    with pytest.raises(KernelError) as info:
        Kernel(fake).load_program(ProgType.TRACEPOINT, bytes(16), "GPL", name="deep")
    assert info.value.code == "EK007" and "BPF program is too large" in info.value.message
    assert [c.args["log_level"] for c in fake.calls_of("BPF_PROG_LOAD")] == [0, 0, 1]
