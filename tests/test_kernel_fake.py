"""The typed kernel layer and the live-object builder, run against the fake funnel (no root)."""

from __future__ import annotations

import ctypes
import errno as E
import struct

import pytest
from evspec.loader import asm
from evspec.loader.abi import bpf as abi
from evspec.loader.abi.perf import PerfEventAttr
from evspec.loader.abi.perf_bits import AttrFlag
from evspec.loader.abi.perf_ids import PerfType, SwConfig
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import ENOTSUPP, FIRST_LOG_SIZE, Kernel, KernelError, VerifierError
from evspec.loader.kernel.fake import ALL_CAPABILITIES, FakeKernel
from evspec.loader.kernel.syscalls import CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_SYS_RESOURCE, RLIM_INFINITY
from evspec.loader.load.live import load_object
from evspec.loader.object.link import link_program
from evspec.loader.object.spec import (
    LineInfo,
    MapSpec,
    MapType,
    ObjectSpec,
    ProgramSpec,
    ProgType,
    Relocation,
)

from evspec.codes import lookup

insn = asm.encode


def decode(insns: bytes, index: int) -> tuple[int, int, int, int, int]:
    i = abi.BpfInsn.from_buffer_copy(insns, index * abi.INSN_SIZE)
    return i.code, i.dst_reg, i.src_reg, i.off, i.imm


LD_IMM64 = insn(0x18, 1) + insn(0)
CALL_LOCAL = insn(0x85, src=1, imm=-1)
EXIT = insn(0x95)
MOV0 = insn(0xB7)


def fake_and_kernel(**kw: object) -> tuple[FakeKernel, Kernel]:
    fake = FakeKernel(**kw)  # type: ignore[arg-type]
    return fake, Kernel(fake)


def object_spec() -> ObjectSpec:
    """Legacy and BTF maps, global data, and a program that calls a subprogram calling another."""
    main = ProgramSpec(
        "main",
        "syscalls:sys_enter_getppid",
        LD_IMM64 + LD_IMM64 + LD_IMM64 + CALL_LOCAL + MOV0 + EXIT,  # insns 0-1, 2-3, 4-5, 6, 7, 8
        relocations=(
            Relocation(0, "map", "legacy", "legacy"),
            Relocation(2, "map", "typed", "typed"),
            Relocation(4, "data", ".rodata", ".rodata", addend=12),
            Relocation(6, "call", "helper", "helper"),
        ),
        line_info=(LineInfo(0, "x.c", 10, 2, "int x = 1;"), LineInfo(6, "x.c", 12, 2, "helper();")),
    )
    helper = ProgramSpec(
        "helper",
        ".text",
        CALL_LOCAL + LD_IMM64 + EXIT,  # insn 0 calls leaf, 1-2 loads the .data map value at 4
        relocations=(Relocation(0, "call", "leaf", "leaf"), Relocation(1, "data", ".data", ".data", 4)),
        line_info=(LineInfo(0, "x.c", 20, 5, "leaf();"), LineInfo(1, "x.c", 21, 5, "return g;")),
    )
    leaf = ProgramSpec(
        "leaf", ".text", LD_IMM64 + MOV0 + EXIT, relocations=(Relocation(0, "map", "typed", "typed"),)
    )
    maps = (
        MapSpec("legacy", MapType.HASH, 4, 8, 16, legacy=True, section="maps"),
        MapSpec("typed", MapType.ARRAY, 4, 4, 8, key_type_id=3, value_type_id=3),
        MapSpec("events", MapType.PERF_EVENT_ARRAY, 4, 4, 0, key_type_id=3, value_type_id=3),
        MapSpec(
            ".rodata",
            MapType.ARRAY,
            4,
            16,
            1,
            section=".rodata",
            initial_value=bytes(range(16)),
            readonly=True,
        ),
        MapSpec(".data", MapType.ARRAY, 4, 8, 1, section=".data", initial_value=struct.pack("<Q", 99)),
        MapSpec(".bss", MapType.ARRAY, 4, 8, 1, section=".bss", initial_value=bytes(8)),
    )
    return ObjectSpec("x.o", "GPL", 0x060100, maps, (main,), subprograms=(helper, leaf), btf=b"BTF-bytes")


TYPES = {"main": ProgType.TRACEPOINT}


# --------------------------------------------------------------- live objects


def test_map_creation_arguments_for_legacy_btf_and_data_maps() -> None:
    fake, kernel = fake_and_kernel()
    with load_object(object_spec(), TYPES, kernel=kernel, cpus=6) as obj:
        (btf_load,) = fake.calls_of("BPF_BTF_LOAD")
        assert btf_load.args["btf"] == b"BTF-bytes" and btf_load.args["btf_log_level"] == 0
        creates = {c.args["map_name"]: c for c in fake.calls_of("BPF_MAP_CREATE")}
        legacy, typed = creates["legacy"].args, creates["typed"].args
        assert (legacy["map_type"], legacy["key_size"], legacy["value_size"], legacy["max_entries"]) == (
            1,
            4,
            8,
            16,
        )
        assert (legacy["btf_fd"], legacy["btf_key_type_id"], legacy["btf_value_type_id"]) == (0, 0, 0)
        assert typed["btf_fd"] == obj.btf_fd and (typed["btf_key_type_id"], typed["btf_value_type_id"]) == (
            3,
            3,
        )
        assert creates["events"].args["max_entries"] == 6  # perf event array sized to the CPUs
        assert creates[".rodata"].args["map_flags"] == abi.MapFlag.RDONLY_PROG
        assert creates[".data"].args["map_flags"] == 0
        assert obj.map("typed").with_btf and not obj.map("legacy").with_btf
        # initial values: .rodata and .data written (key 0) then .rodata frozen; .bss left zero
        writes = [
            (c.args["map_fd"], c.args["key"], c.args["value"]) for c in fake.calls_of("BPF_MAP_UPDATE_ELEM")
        ]
        assert writes == [
            (obj.map(".rodata").fd, bytes(4), bytes(range(16))),
            (obj.map(".data").fd, bytes(4), struct.pack("<Q", 99)),
        ]
        assert [c.args["map_fd"] for c in fake.calls_of("BPF_MAP_FREEZE")] == [obj.map(".rodata").fd]
        ops = [c.op for c in fake.calls]
        assert ops.index("BPF_MAP_FREEZE") > ops.index("BPF_MAP_UPDATE_ELEM")
        (load,) = fake.calls_of("BPF_PROG_LOAD")
        assert load.args["prog_type"] == ProgType.TRACEPOINT and load.args["license"] == "GPL"
        assert load.args["prog_name"] == "main" and load.args["kern_version"] == 0x060100
        assert load.args["log_level"] == 0 and load.args["insn_cnt"] == 9 + 4 + 4
        assert set(fake.open_fds) == set(obj.fds)
    assert fake.open_fds == {}


def test_relocations_patch_maps_data_and_calls() -> None:
    spec = object_spec()
    fds = {"legacy": 10, "typed": 11, "events": 12, ".rodata": 13, ".data": 14, ".bss": 15}
    linked = link_program(spec.programs[0], spec, fds)
    out = linked.insns
    assert linked.layout == (("main", 0), ("helper", 9), ("leaf", 13))
    assert decode(out, 0) == (0x18, 1, abi.BPF_PSEUDO_MAP_FD, 0, 10) and decode(out, 1)[4] == 0
    assert decode(out, 2) == (0x18, 1, abi.BPF_PSEUDO_MAP_FD, 0, 11)
    assert decode(out, 4) == (0x18, 1, abi.BPF_PSEUDO_MAP_VALUE, 0, 13) and decode(out, 5)[4] == 12
    assert decode(out, 6) == (0x85, 0, 1, 0, 9 - 7)  # main -> helper at 9
    assert decode(out, 9) == (0x85, 0, 1, 0, 13 - 10)  # helper -> leaf at 13
    assert decode(out, 10) == (0x18, 1, abi.BPF_PSEUDO_MAP_VALUE, 0, 14) and decode(out, 11)[4] == 4
    assert decode(out, 13) == (0x18, 1, abi.BPF_PSEUDO_MAP_FD, 0, 11)
    assert [(li.insn_offset, li.line) for li in linked.line_info] == [(0, 10), (6, 12), (9, 20), (10, 21)]
    assert spec.programs[0].insns[:8] == LD_IMM64[:8]  # the spec itself is untouched


def test_a_subprogram_called_twice_is_appended_once() -> None:
    sub = ProgramSpec("sub", ".text", MOV0 + EXIT)
    prog = ProgramSpec(
        "p",
        "s",
        CALL_LOCAL + CALL_LOCAL + EXIT,
        relocations=(Relocation(0, "call", "sub", "sub"), Relocation(1, "call", "sub", "sub")),
    )
    spec = ObjectSpec("y.o", "GPL", None, (), (prog,), subprograms=(sub,))
    linked = link_program(prog, spec, {})
    assert len(linked.insns) == 5 * 8
    assert decode(linked.insns, 0)[4] == 3 - 1 and decode(linked.insns, 1)[4] == 3 - 2


def test_a_callback_address_is_a_pseudo_func() -> None:
    cb = ProgramSpec("cb", ".text", MOV0 + EXIT)
    prog = ProgramSpec("p", "s", MOV0 + LD_IMM64 + EXIT, relocations=(Relocation(1, "func", "cb", "cb"),))
    linked = link_program(prog, ObjectSpec("y.o", "GPL", None, (), (prog,), subprograms=(cb,)), {})
    assert decode(linked.insns, 1) == (0x18, 1, abi.BPF_PSEUDO_FUNC, 0, 4 - 2)
    assert decode(linked.insns, 2)[4] == 0 and linked.layout == (("p", 0), ("cb", 4))


@pytest.mark.parametrize(
    ("insns", "reloc", "message"),
    [
        (
            MOV0 + EXIT,
            Relocation(0, "map", "m", "m"),
            "expected a ld_imm64 instruction (opcode 0x18) to relocate, found opcode 0xb7",
        ),
        (
            LD_IMM64 + EXIT,
            Relocation(0, "map", "nope", "nope"),
            "refers to map 'nope', which the object lacks",
        ),
        (
            LD_IMM64 + EXIT,
            Relocation(0, "data", ".data", ".data"),
            "refers to data section '.data', which the object lacks",
        ),
        (EXIT, Relocation(0, "map", "m", "m"), "a ld_imm64 relocation points past the program's end"),
        (MOV0 + EXIT, Relocation(0, "call", "ghost", "ghost"), "calls 'ghost', which the object lacks"),
        (LD_IMM64 + EXIT, Relocation(0, "weird", "m", "m"), "unknown relocation kind 'weird'"),
    ],
)
def test_relocation_errors(insns: bytes, reloc: Relocation, message: str) -> None:
    prog = ProgramSpec("p", "s", insns, relocations=(reloc,))
    spec = ObjectSpec("y.o", "GPL", None, (MapSpec("m", MapType.ARRAY, 4, 4, 1),), (prog,))
    with pytest.raises(ObjectError) as info:
        link_program(prog, spec, {"m": 3})
    assert info.value.code == "EK010" and not isinstance(info.value, KernelError)  # linking makes no call
    assert info.value.message == f"program 'p', instruction 0: {message}"


def test_a_call_relocation_needs_a_pseudo_call() -> None:
    sub = ProgramSpec("sub", ".text", MOV0 + EXIT)
    prog = ProgramSpec("p", "s", insn(0x85, imm=1) + EXIT, relocations=(Relocation(0, "call", "sub", "sub"),))
    with pytest.raises(ObjectError, match=r"expected a bpf-to-bpf call \(opcode 0x85, src_reg 1\)"):
        link_program(prog, ObjectSpec("y.o", "GPL", None, (), (prog,), subprograms=(sub,)), {})


def test_btf_refused_means_maps_without_btf() -> None:
    fake, kernel = fake_and_kernel()
    fake.script("BPF_BTF_LOAD", errno=E.EINVAL, log="[3] VAR x type_id=0 Invalid type_id", times=None)
    with load_object(object_spec(), TYPES, kernel=kernel, cpus=2) as obj:
        assert obj.btf_fd is None and obj.btf_error is not None
        assert obj.btf_error.code == "EK014"
        assert (
            obj.btf_error.message
            == "the kernel refused the object's BTF: [3] VAR x type_id=0 Invalid type_id"
        )
        assert all(c.args["btf_fd"] == 0 for c in fake.calls_of("BPF_MAP_CREATE"))
        assert [c.args["btf_log_level"] for c in fake.calls_of("BPF_BTF_LOAD")] == [0, 1]


def test_a_map_the_kernel_refuses_with_btf_is_created_without() -> None:
    fake, kernel = fake_and_kernel()
    fake.script(
        "BPF_MAP_CREATE", errno=E.EINVAL, match=lambda a: a["map_name"] == "typed" and a["btf_fd"] != 0
    )
    with load_object(object_spec(), TYPES, kernel=kernel, cpus=2) as obj:
        typed = [c for c in fake.calls_of("BPF_MAP_CREATE") if c.args["map_name"] == "typed"]
        assert [(c.errno, c.args["btf_key_type_id"]) for c in typed] == [(E.EINVAL, 3), (None, 0)]
        assert not obj.map("typed").with_btf
        # a perf event array never gets BTF types (libbpf passes none): created once, without
        assert not obj.map("events").with_btf
        assert [c.args["btf_key_type_id"] for c in fake.calls_of("BPF_MAP_CREATE")
                if c.args["map_name"] == "events"] == [0]
        # and the fallback is said always, naming the map
        [said] = [w for w in obj.warnings if "'typed'" in w]
        assert said.startswith("x.o: map 'typed' created without its BTF key/value types: the kernel refused them")


def test_every_fd_is_closed_when_loading_fails_half_way() -> None:
    fake, kernel = fake_and_kernel()
    second = ProgramSpec("second", "s", MOV0 + EXIT)
    spec = object_spec()
    spec = ObjectSpec(
        spec.path, spec.license, None, spec.maps, spec.programs + (second,), spec.subprograms, spec.btf
    )
    fake.script("BPF_PROG_LOAD", errno=E.EINVAL, match=lambda a: a["prog_name"] == "second", times=None)
    with pytest.raises(KernelError) as info:
        load_object(spec, {"main": 5, "second": 5}, kernel=kernel, cpus=2)
    assert info.value.code == "EK005" and "program 'second'" in info.value.message
    assert len(fake.calls_of("close")) == 1 + 6 + 1  # main, six maps, the BTF
    assert fake.open_fds == {}


def test_every_fd_is_closed_when_a_global_data_write_fails() -> None:
    fake, kernel = fake_and_kernel()
    fake.script("BPF_MAP_FREEZE", errno=E.EBUSY)
    with pytest.raises(KernelError) as info:
        load_object(object_spec(), TYPES, kernel=kernel, cpus=2)
    assert info.value.code == "EK008" and info.value.message == (
        "BPF_MAP_FREEZE for data section '.rodata': Device or resource busy (EBUSY)"
    )
    assert fake.open_fds == {} and not fake.calls_of("BPF_PROG_LOAD")


def test_missing_program_types_fail_before_any_call() -> None:
    fake, kernel = fake_and_kernel()
    with pytest.raises(KernelError) as info:
        load_object(object_spec(), {}, kernel=kernel, cpus=2)
    assert (
        info.value.code == "EK011"
        and info.value.message == "x.o: no program type given for program(s) 'main'"
    )
    assert fake.calls == []


def test_closing_reports_the_first_failure_after_trying_all() -> None:
    fake, kernel = fake_and_kernel()
    obj = load_object(object_spec(), TYPES, kernel=kernel, cpus=2)
    stolen = obj.map("legacy").fd
    fake.close(stolen)
    with pytest.raises(KernelError, match=f"close for fd {stolen}: Bad file descriptor"):
        obj.close()
    assert fake.open_fds == {}
    obj.close()  # a second close does nothing


# ----------------------------------------------------------------- map calls


def test_update_batch_in_one_call() -> None:
    fake, kernel = fake_and_kernel()
    fd = kernel.create_map(MapType.ARRAY, 4, 4, 8, name="a")
    keys = struct.pack("<4I", 0, 1, 2, 3)
    values = struct.pack("<4I", 10, 11, 12, 13)
    assert kernel.update_batch(fd, keys, values, key_size=4, value_size=4) == 4
    (call,) = fake.calls_of("BPF_MAP_UPDATE_BATCH")
    assert (call.args["count"], call.args["keys"], call.args["values"]) == (4, keys, values)
    assert not fake.calls_of("BPF_MAP_UPDATE_ELEM")
    assert kernel.lookup(fd, struct.pack("<I", 3), 4) == struct.pack("<I", 13)


@pytest.mark.parametrize("err", [E.EINVAL, E.EOPNOTSUPP, ENOTSUPP])
def test_update_batch_falls_back_to_single_updates(err: int) -> None:
    fake, kernel = fake_and_kernel()
    fd = kernel.create_map(MapType.HASH, 4, 2, 8, name="h")
    fake.script("BPF_MAP_UPDATE_BATCH", errno=err)
    keys = struct.pack("<3I", 7, 8, 9)
    values = struct.pack("<3H", 70, 80, 90)
    assert kernel.update_batch(fd, keys, values, key_size=4, value_size=2, flags=abi.UpdateFlag.NOEXIST) == 3
    singles = [
        (c.args["key"], c.args["value"], c.args["flags"]) for c in fake.calls_of("BPF_MAP_UPDATE_ELEM")
    ]
    assert singles == [
        (struct.pack("<I", k), struct.pack("<H", v), abi.UpdateFlag.NOEXIST)
        for k, v in ((7, 70), (8, 80), (9, 90))
    ]


def test_update_batch_does_not_hide_other_errors() -> None:
    fake, kernel = fake_and_kernel()
    fd = kernel.create_map(MapType.ARRAY, 4, 4, 2, name="a")
    with pytest.raises(KernelError) as info:
        kernel.update_batch(fd, struct.pack("<3I", 0, 1, 2), bytes(12), key_size=4, value_size=4)
    assert info.value.code == "EK006" and "beyond its max_entries (E2BIG)" in info.value.message
    assert not fake.calls_of("BPF_MAP_UPDATE_ELEM")
    with pytest.raises(KernelError) as info:
        kernel.update_batch(fd, bytes(8), bytes(4), key_size=4, value_size=4)
    assert info.value.code == "EK012" and not fake.calls_of("BPF_MAP_UPDATE_ELEM")


def test_update_batch_size_errors_name_the_map() -> None:
    fake, kernel = fake_and_kernel()
    fd = kernel.create_map(MapType.ARRAY, 4, 4, 8, name="a")
    with pytest.raises(KernelError, match=r"^map 'a': 6 key bytes are not a multiple of key_size 4$"):
        kernel.update_batch(fd, bytes(6), bytes(8), key_size=4, value_size=4, what="map 'a'")
    with pytest.raises(KernelError, match=r"^map 'a': the values of 2 elements are 4 bytes, not 2 x 4$"):
        kernel.update_batch(fd, bytes(8), bytes(4), key_size=4, value_size=4, what="map 'a'")
    assert kernel.update_batch(fd, b"", b"", key_size=4, value_size=4) == 0
    assert not fake.calls_of("BPF_MAP_UPDATE_BATCH")


def test_lookup_delete_next_key_and_batch_lookup() -> None:
    _fake, kernel = fake_and_kernel()
    fd = kernel.create_map(MapType.HASH, 4, 4, 8, name="h")
    for k in (5, 1, 3):
        kernel.update_elem(fd, struct.pack("<I", k), struct.pack("<I", k * 10))
    assert kernel.lookup(fd, struct.pack("<I", 2), 4) is None
    keys, key = [], None
    while (key := kernel.next_key(fd, key, 4)) is not None:
        keys.append(struct.unpack("<I", key)[0])
    assert keys == [1, 3, 5]
    all_keys, all_values = kernel.lookup_batch(fd, key_size=4, value_size=4, chunk=2)
    assert struct.unpack("<3I", all_keys) == (1, 3, 5) and struct.unpack("<3I", all_values) == (10, 30, 50)
    assert kernel.delete_elem(fd, struct.pack("<I", 3)) and not kernel.delete_elem(fd, struct.pack("<I", 3))


def test_object_info_and_ids() -> None:
    _fake, kernel = fake_and_kernel()
    fd = kernel.create_map(MapType.ARRAY, 4, 8, 3, name="info_me")
    prog = kernel.load_program(ProgType.TRACEPOINT, MOV0 + EXIT, "GPL", name="p")
    assert kernel.map_info(fd).name == "info_me" and kernel.map_info(fd).max_entries == 3
    info = kernel.program_info(prog)
    assert (info.name, info.type, info.gpl_compatible, info.xlated_len) == (
        "p",
        ProgType.TRACEPOINT,
        True,
        16,
    )
    assert list(kernel.map_ids()) == [kernel.map_info(fd).id]
    assert list(kernel.program_ids()) == [info.id]


def test_run_program_passes_the_context_and_returns_retval() -> None:
    seen: dict[str, object] = {}

    class Runner(FakeKernel):
        def bpf(self, cmd: int, attr: ctypes.Structure, size: int, *, operation: str) -> int:
            if cmd == abi.Cmd.PROG_TEST_RUN:
                seen.update(fd=attr.prog_fd, ctx=ctypes.string_at(attr.ctx_in, attr.ctx_size_in), size=size)  # type: ignore[attr-defined]
                attr.retval = 0xFFFFFFFF  # type: ignore[attr-defined]
                return 0
            return super().bpf(cmd, attr, size, operation=operation)

    kernel = Kernel(Runner())
    assert kernel.run_program(9, ctx=b"abc") == 0xFFFFFFFF
    assert seen == {"fd": 9, "ctx": b"abc", "size": ctypes.sizeof(abi.ProgTestRunAttr)}


def test_unnamed_maps_and_programs_are_named_by_their_fd_in_errors() -> None:
    fake, kernel = fake_and_kernel()
    fd = kernel.create_map(MapType.HASH, 4, 4, 2)
    fake.script("BPF_MAP_LOOKUP_ELEM", errno=E.EFAULT)
    with pytest.raises(KernelError, match=rf"^BPF_MAP_LOOKUP_ELEM for map fd {fd}: Bad address \(EFAULT\)$"):
        kernel.lookup(fd, bytes(4), 4)
    with pytest.raises(KernelError, match=r"^BPF_PROG_TEST_RUN for program fd 7: Invalid argument"):
        kernel.run_program(7)
    with pytest.raises(KernelError, match=r"^a program is 12 bytes, not whole 8-byte instructions$"):
        kernel.load_program(ProgType.TRACEPOINT, bytes(12), "GPL")
    with pytest.raises(KernelError, match=r"^program 'p' is 0 bytes"):
        kernel.load_program(ProgType.TRACEPOINT, b"", "GPL", name="p")


def test_run_program_failure_names_what_ran() -> None:
    _fake, kernel = fake_and_kernel()  # the fake's BPF_PROG_TEST_RUN fails with EINVAL
    with pytest.raises(KernelError, match=r"^BPF_PROG_TEST_RUN for map 'arr': Invalid argument"):
        kernel.run_program(3, ctx=bytes(8), what="map 'arr'")


def test_load_program_passes_btf_and_func_info() -> None:
    fake, kernel = fake_and_kernel()
    kernel.load_program(ProgType.RAW_TRACEPOINT, MOV0 + EXIT, "GPL", btf_fd=77, func_info=((0, 3),))
    kernel.load_program(ProgType.RAW_TRACEPOINT, MOV0 + EXIT, "GPL")
    with_btf, without = fake.calls_of("BPF_PROG_LOAD")
    assert (with_btf.args["prog_btf_fd"], with_btf.args["func_info_cnt"], with_btf.args["func_info_rec_size"]) == (77, 1, 8)
    assert (without.args["prog_btf_fd"], without.args["func_info"], without.args["func_info_cnt"]) == (0, 0, 0)


def test_close_all_tries_every_fd_and_raises_the_first_failure() -> None:
    fake, kernel = fake_and_kernel()
    a, b = kernel.create_map(MapType.ARRAY, 4, 4, 1), kernel.create_map(MapType.ARRAY, 4, 4, 1)
    with pytest.raises(KernelError, match=r"^close for fd 9999: Bad file descriptor"):
        kernel.close_all([a, 9999, 9998, b])
    assert not fake.open_fds
    assert [c.args["fd"] for c in fake.calls_of("close")] == [a, 9999, 9998, b]


# ------------------------------------------------------------------ verifier


LOG = "\n".join(
    ["func#0 @0", "0: R1=ctx() R10=fp0"]
    + [f"{i}: (b7) r0 = 0" for i in range(1, 4000)]
    + [
        "4000: (61) r2 = *(u32 *)(r1 +4096)",
        "invalid bpf_context access off=4096 size=4",
        "processed 4001 insns (limit 1000000)",
        "",
    ]
)


def test_verifier_log_grows_to_the_size_the_kernel_asks_for() -> None:
    assert len(LOG) > FIRST_LOG_SIZE
    fake, kernel = fake_and_kernel()
    fake.script("BPF_PROG_LOAD", errno=E.EACCES, log=LOG, times=None)
    lines = (LineInfo(0, "p.c", 3, 1, "int f(void *ctx) {"), LineInfo(4000, "p.c", 9, 9, "  return ctx->x;"))
    with pytest.raises(VerifierError) as info:
        kernel.load_program(ProgType.TRACEPOINT, MOV0 * 4000 + EXIT, "GPL", name="f", line_info=lines)
    loads = fake.calls_of("BPF_PROG_LOAD")
    assert [(c.args["log_level"], c.args["log_size"], c.errno) for c in loads] == [
        (0, 0, E.EACCES),
        (1, FIRST_LOG_SIZE, E.ENOSPC),
        (1, len(LOG) + 1, E.EACCES),
    ]
    err = info.value
    assert err.log == LOG and err.code == "EK007" and err.errno == E.EACCES
    assert err.summary.message == "invalid bpf_context access off=4096 size=4"
    assert err.summary.insn_index == 4000 and err.summary.insn_text == "r2 = *(u32 *)(r1 +4096)"
    assert err.summary.source == lines[1]
    assert err.message == (
        "the verifier rejected program 'f': invalid bpf_context access off=4096 size=4; "
        "at insn 4000 `r2 = *(u32 *)(r1 +4096)`; p.c:9: return ctx->x;"
    )


def test_verifier_log_doubles_on_kernels_that_do_not_say_the_size() -> None:
    fake, kernel = fake_and_kernel()
    fake.script("BPF_PROG_LOAD", errno=E.EACCES, log=LOG * 3, report_true_size=False, times=None)
    with pytest.raises(VerifierError) as info:
        kernel.load_program(ProgType.TRACEPOINT, MOV0 + EXIT, "GPL", name="f")
    sizes = [c.args["log_size"] for c in fake.calls_of("BPF_PROG_LOAD")]
    assert sizes == [0, FIRST_LOG_SIZE, 2 * FIRST_LOG_SIZE, 4 * FIRST_LOG_SIZE]
    assert info.value.log == LOG * 3


def test_a_requested_log_level_is_used_from_the_start() -> None:
    fake, kernel = fake_and_kernel()
    fake.script("BPF_PROG_LOAD", errno=E.EINVAL, log="unreachable insn 1\n", times=None)
    with pytest.raises(VerifierError) as info:
        kernel.load_program(ProgType.TRACEPOINT, MOV0 + EXIT, "GPL", name="f", log_level=2)
    assert [c.args["log_level"] for c in fake.calls_of("BPF_PROG_LOAD")] == [2]
    assert info.value.summary.insn_index == 1 and info.value.summary.message == "unreachable insn 1"


def test_a_failure_without_a_log_is_a_plain_kernel_error() -> None:
    fake, kernel = fake_and_kernel()
    fake.script("BPF_PROG_LOAD", errno=E.EINVAL, times=None)
    with pytest.raises(KernelError) as info:
        kernel.load_program(99, MOV0 + EXIT, "GPL", name="f")
    assert not isinstance(info.value, VerifierError)
    assert (
        info.value.code == "EK005"
        and info.value.message == "BPF_PROG_LOAD for program 'f': Invalid argument (EINVAL)"
    )


def test_verifier_error_in_a_subprogram_points_at_its_source_line() -> None:
    fake, kernel = fake_and_kernel()
    fake.script(
        "BPF_PROG_LOAD", errno=E.EACCES, log="11: (95) exit\nR0 !read_ok\nprocessed 5 insns\n", times=None
    )
    with pytest.raises(VerifierError) as info:
        load_object(object_spec(), TYPES, kernel=kernel, cpus=2)
    assert info.value.summary.source == LineInfo(10, "x.c", 21, 5, "return g;")
    assert fake.open_fds == {}


# ------------------------------------------------------------- error mapping


def test_missing_cap_bpf_is_named() -> None:
    _fake, kernel = fake_and_kernel(capabilities=1 << CAP_PERFMON)
    with pytest.raises(KernelError) as info:
        kernel.create_map(MapType.ARRAY, 4, 4, 1, name="m")
    assert info.value.code == "EK001"
    assert info.value.message == (
        "BPF_MAP_CREATE for map 'm': Operation not permitted: the process lacks CAP_BPF "
        "(or CAP_SYS_ADMIN on kernels before 5.8); evspec needs root for this"
    )


def test_missing_cap_perfmon_is_named() -> None:
    _fake, kernel = fake_and_kernel(capabilities=1 << CAP_BPF)
    with pytest.raises(KernelError) as info:
        kernel.perf_event_open(PerfEventAttr(type=PerfType.TRACEPOINT, config=1), cpu=0)
    assert info.value.code == "EK001" and "lacks CAP_PERFMON" in info.value.message
    assert info.value.message.startswith("perf_event_open on cpu 0: Permission denied")


def test_memlock_is_lifted_when_allowed() -> None:
    fake, kernel = fake_and_kernel(memlock=(65536, 65536), memlock_charged=True)
    fd = kernel.create_map(MapType.ARRAY, 4, 4, 1, name="m")
    assert fake.open_fds[fd] == "map"
    assert [c.op for c in fake.calls] == ["BPF_MAP_CREATE", "setrlimit", "BPF_MAP_CREATE"]
    assert fake.memlock == (RLIM_INFINITY, RLIM_INFINITY)


def test_memlock_is_reported_when_it_cannot_be_lifted() -> None:
    caps = ALL_CAPABILITIES & ~(1 << CAP_SYS_RESOURCE)
    fake, kernel = fake_and_kernel(capabilities=caps, memlock=(65536, 65536), memlock_charged=True)
    with pytest.raises(KernelError) as info:
        kernel.load_program(ProgType.TRACEPOINT, MOV0 + EXIT, "GPL", name="p")
    assert info.value.code == "EK002"
    assert "RLIMIT_MEMLOCK, 65536 bytes" in info.value.message
    assert info.value.help == ("raise it with `ulimit -l unlimited`, or run evspec as root",)
    assert len(fake.calls_of("BPF_PROG_LOAD")) == 1  # no pointless retry with a log


def test_eperm_with_every_capability_and_no_limit() -> None:
    fake, kernel = fake_and_kernel()
    fake.script("BPF_MAP_CREATE", errno=E.EPERM)
    with pytest.raises(KernelError) as info:
        kernel.create_map(MapType.ARRAY, 4, 4, 1)
    assert (
        info.value.code == "EK001"
        and "although the process has the needed capabilities" in info.value.message
    )


@pytest.mark.parametrize(
    ("err", "code", "text"),
    [
        (E.ENOENT, "EK004", "No such file or directory (ENOENT)"),
        (E.EINVAL, "EK005", "Invalid argument (EINVAL)"),
        (E.ENOSPC, "EK006", "No space left on device (ENOSPC)"),
        (E.EBADF, "EK008", "Bad file descriptor (EBADF)"),
    ],
)
def test_errno_to_code(err: int, code: str, text: str) -> None:
    fake, kernel = fake_and_kernel()
    fake.script("BPF_MAP_CREATE", errno=err)
    with pytest.raises(KernelError) as info:
        kernel.create_map(MapType.HASH, 4, 4, 1, name="h")
    assert info.value.code == code and info.value.errno == err
    assert info.value.message.startswith("BPF_MAP_CREATE for map 'h': ") and text in info.value.message
    assert lookup(code) is not None


def test_bpf_attr_fields_unknown_to_the_kernel() -> None:
    _fake, kernel = fake_and_kernel(bpf_attr_size=64)
    assert kernel.create_map(MapType.ARRAY, 4, 4, 1) > 0  # zero tail: accepted
    with pytest.raises(KernelError) as info:
        kernel.create_map(MapType.BLOOM_FILTER, 0, 4, 1, map_extra=3)
    assert info.value.code == "EK003"


def test_perf_attr_fields_unknown_to_the_kernel() -> None:
    fake, kernel = fake_and_kernel(perf_attr_size=128)
    ok = PerfEventAttr(type=PerfType.SOFTWARE, config=SwConfig.BPF_OUTPUT)
    assert kernel.perf_event_open(ok, cpu=1) > 0  # 136 bytes, zero beyond 128: accepted
    with pytest.raises(KernelError) as info:
        kernel.perf_event_open(PerfEventAttr(type=PerfType.RAW, config3=1), cpu=0)
    assert info.value.code == "EK003"
    assert info.value.message == (
        "perf_event_open on cpu 0: this kernel knows perf_event_attr up to 128 bytes; "
        "the event sets config3 beyond that (E2BIG)"
    )
    assert fake.calls_of("perf_event_open")[-1].errno == E.E2BIG


def test_perf_event_open_failure_names_the_event_and_cpu() -> None:
    fake, kernel = fake_and_kernel()
    fake.script("perf_event_open", errno=E.EINVAL)
    with pytest.raises(KernelError) as info:
        kernel.perf_event_open(PerfEventAttr(type=PerfType.SOFTWARE, config=SwConfig.DUMMY), cpu=2)
    assert info.value.code == "EK005" and info.value.message == (
        "perf_event_open for the event of type 1 config 0x9 on cpu 2: Invalid argument (EINVAL)"
    )


# -------------------------------------------------------------- perf events


def test_perf_event_open_ioctl_and_mmap_arguments() -> None:
    fake, kernel = fake_and_kernel()
    attr = PerfEventAttr(
        type=PerfType.SOFTWARE,
        config=SwConfig.BPF_OUTPUT,
        sample_period=1,
        wakeup_events=1,
        flags=AttrFlag.DISABLED,
    )
    fd = kernel.perf_event_open(attr, pid=-1, cpu=3)
    (call,) = fake.calls_of("perf_event_open")
    assert call.args["size"] == 136 and call.args["cpu"] == 3 and call.args["pid"] == -1
    assert call.args["flag_names"] == ("DISABLED",) and call.args["open_flags"] & 8  # FD_CLOEXEC
    prog = kernel.load_program(ProgType.TRACEPOINT, MOV0 + EXIT, "GPL")
    kernel.set_bpf(fd, prog)
    kernel.enable(fd)
    kernel.disable(fd)
    assert [(c.op, c.args["arg"]) for c in fake.calls if c.op.startswith("PERF_EVENT_IOC")] == [
        ("PERF_EVENT_IOC_SET_BPF", prog),
        ("PERF_EVENT_IOC_ENABLE", 0),
        ("PERF_EVENT_IOC_DISABLE", 0),
    ]
    link = kernel.link_perf_event(prog, fd, cookie=7)
    (lc,) = fake.calls_of("BPF_LINK_CREATE")
    assert (lc.args["prog_fd"], lc.args["target_fd"], lc.args["attach_type"], lc.args["bpf_cookie"]) == (
        prog,
        fd,
        abi.BPF_PERF_EVENT,
        7,
    )
    ring = kernel.mmap_ring(fd, 4)
    assert ring.length == 5 * kernel.page_size and ring.data_size == 4 * kernel.page_size
    kernel.munmap(ring)
    with pytest.raises(KernelError, match="power of two, not 3"):
        kernel.mmap_ring(fd, 3)
    for f in (link, prog, fd):
        kernel.close(f)
    assert fake.open_fds == {}


def test_ioctl_on_a_closed_fd() -> None:
    _fake, kernel = fake_and_kernel()
    with pytest.raises(KernelError) as info:
        kernel.enable(42)
    assert info.value.code == "EK008" and info.value.operation == "PERF_EVENT_IOC_ENABLE"
    assert info.value.message == "PERF_EVENT_IOC_ENABLE for perf event fd 42: Bad file descriptor (EBADF)"


def test_capability_constants() -> None:
    assert (CAP_SYS_ADMIN, CAP_SYS_RESOURCE, CAP_PERFMON, CAP_BPF) == (21, 24, 38, 39)


def test_deferred_programs_are_not_loaded_by_load_object() -> None:
    plain = ProgramSpec("plain", "raw_syscalls:sys_enter", MOV0 + EXIT)
    later = ProgramSpec("later", "x", MOV0 + EXIT)
    fake, kernel = fake_and_kernel()
    spec = ObjectSpec("d.o", "GPL", None, (), (plain, later))
    with load_object(spec, {"plain": 5}, kernel=kernel, deferred={"later"}, use_btf=False, cpus=1) as live:
        assert sorted(live.programs) == ["plain"]
    with pytest.raises(KernelError, match="no program type given for program\\(s\\) 'later'"):
        load_object(spec, {"plain": 5}, kernel=kernel, use_btf=False, cpus=1)
