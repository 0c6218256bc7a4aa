"""The fast paths of applying map terms: key ranges kept as ranges, bulk key bytes, batch
chunking, and the kernel-side fill program (its instructions, its BTF, when it is used and when
the batch path takes over). Correctness only, no timings; the live tests read every element of
the filled maps back from the kernel."""

from __future__ import annotations

import ctypes
import errno as E
import os
import struct
import sys
from array import array
from collections.abc import Iterator
from typing import Any

import pytest
from evspec.loader.abi import bpf as abi
from evspec.loader.btf.reader import Btf, BtfKind
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.kernel.fake import Call, FakeKernel
from evspec.loader.lint.terms.maps import MapUpdate, plan_map_updates, range_keys
from evspec.loader.load import apply as ap
from evspec.loader.load import array_fill
from evspec.loader.load.apply import (
    BATCH_CHUNK,
    KERNEL_FILL_MIN,
    ApplyError,
    EventInstances,
    apply_updates,
    check_event_update,
    keys_bytes,
)
from evspec.loader.load.array_fill import (
    BPF_MAX_LOOPS,
    CALLBACK_START,
    FILL_BTF,
    FILL_CTX,
    FILL_FUNC_INFO,
    KernelFill,
    fill_program,
)
from evspec.loader.load.live import LiveObject, load_object
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec, ProgType

from evspec.parser import parse

NATIVE = sys.byteorder


def _value(number: int, size: int) -> bytes:
    return number.to_bytes(size, NATIVE)


def _spec(*maps: MapSpec) -> ObjectSpec:
    return ObjectSpec("fill.o", "GPL", None, maps, ())


def _array(name: str, entries: int, value_size: int = 4, **kw: Any) -> MapSpec:
    return MapSpec(name, MapType.ARRAY, 4, value_size, entries, **kw)


# ------------------------------------------------------------------ the fill program


def _decode(insns: bytes) -> list[tuple[int, int, int, int, int]]:
    out = []
    for i in range(0, len(insns), 8):
        code, regs, off, imm = struct.unpack_from("=BBhi", insns, i)
        dst, src = (regs & 0xF, regs >> 4) if NATIVE == "little" else (regs >> 4, regs & 0xF)
        out.append((code, dst, src, off, imm))
    return out


def _loads(insns: list[tuple[int, int, int, int, int]], src: int) -> list[tuple[int, int]]:
    """(instruction index, imm) of the ld_imm64 instructions with ``src`` as their source."""
    return [(i, imm) for i, (code, _dst, s, _off, imm) in enumerate(insns) if code == 0x18 and s == src]


@pytest.mark.parametrize(("value_size", "store"), [(1, 0x73), (2, 0x6B), (4, 0x63), (8, 0x7B)])
def test_fill_program_stores_the_values_width(value_size: int, store: int) -> None:
    insns = _decode(fill_program(77, value_size))
    stores_through_r0 = [i for i in insns if i[0] & 0x07 == 0x03 and i[1] == 0]  # BPF_STX to [r0]
    assert [(code, src, off) for code, _dst, src, off, _imm in stores_through_r0] == [(store, 1, 0)]


def test_fill_program_references_its_map_and_callback() -> None:
    insns = _decode(fill_program(1234, 4))
    assert _loads(insns, abi.BPF_PSEUDO_MAP_FD) == [(CALLBACK_START + 4, 1234)]
    ((at, imm),) = _loads(insns, abi.BPF_PSEUDO_FUNC)
    assert at + imm + 1 == CALLBACK_START == FILL_FUNC_INFO[1][0]
    assert FILL_FUNC_INFO[0][0] == 0
    calls = [imm for code, *_rest, imm in insns if code == 0x85]
    assert calls == [abi.FUNC_LOOP, abi.FUNC_MAP_LOOKUP_ELEM]
    exits = [i for i, (code, *_r) in enumerate(insns) if code == 0x95]
    assert exits[0] == CALLBACK_START - 1 and exits[-1] == len(insns) - 1  # each function ends in exit


def test_fill_program_jumps_stay_inside_the_callback() -> None:
    insns = _decode(fill_program(3, 8))
    for i, (code, _dst, _src, off, _imm) in enumerate(insns):
        if code & 0x07 == 0x05 and code not in (0x85, 0x95):  # conditional jumps
            target = i + 1 + off
            assert CALLBACK_START <= i and CALLBACK_START <= target < len(insns)
            assert insns[target][0] == 0xB7 and insns[target][4] == 1  # r0 = 1: stop the loop


def test_fill_program_reads_its_context_in_the_fill_ctx_layout() -> None:
    insns = _decode(fill_program(3, 4))
    ctx_loads = [(dst, off) for code, dst, src, off, _imm in insns[:CALLBACK_START] if code == 0x79 and src == 1]
    assert ctx_loads == [(2, 0), (3, 8), (4, 16)]
    assert FILL_CTX.size == 24 and FILL_CTX.unpack(FILL_CTX.pack(5, 6, 7)) == (5, 6, 7)


def test_fill_program_refuses_other_value_sizes() -> None:
    with pytest.raises(ValueError, match="not 16"):
        fill_program(3, 16)


def test_fill_btf_is_valid_and_names_both_functions() -> None:
    btf = Btf(FILL_BTF)
    funcs = {t.name: t for t in btf.types() if t.kind is BtfKind.FUNC}
    assert set(funcs) == {"evspec_fill", "evspec_fill_cb"}
    ids = dict(FILL_FUNC_INFO)
    assert btf.type(ids[0]).name == "evspec_fill"
    assert btf.type(ids[CALLBACK_START]).name == "evspec_fill_cb"


# ------------------------------------------------------------------ keys


@pytest.mark.parametrize("size", [4, 8, 2, 16])
def test_keys_bytes_are_consecutive_host_order_keys(size: int) -> None:
    got = keys_bytes(65_530, 6, size)
    assert got == b"".join(k.to_bytes(size, NATIVE) for k in range(65_530, 65_536))
    assert keys_bytes(9, 0, size) == b""


def test_event_checks_take_ranges_without_building_them() -> None:
    update = MapUpdate("channel", ((0, 1 << 40),), None, "evt")
    event = EventInstances("evt", 1, 10, False, 1, (5, 6))
    with pytest.raises(ApplyError, match="key 2 has no CPU slot"):
        check_event_update(update, event, range_keys(update.keys))


# ------------------------------------------------------------------ apply on the fake kernel


class FillingFake(FakeKernel):
    """A fake whose BPF_PROG_TEST_RUN does what a fill program does, read from the program's own
    instructions (the map its ld_imm64 names, the width of its store)."""

    def bpf(self, cmd: int, attr: ctypes.Structure, size: int, *, operation: str) -> int:
        if cmd != abi.Cmd.PROG_TEST_RUN:
            return super().bpf(cmd, attr, size, operation=operation)
        insns = _decode(self.programs[attr.prog_fd]["insns"])  # type: ignore[attr-defined]
        ((_, map_fd),) = _loads(insns, abi.BPF_PSEUDO_MAP_FD)
        width = {0x73: 1, 0x6B: 2, 0x63: 4, 0x7B: 8}[next(i[0] for i in insns if i[0] & 7 == 3 and i[1] == 0)]
        first, count, value = FILL_CTX.unpack(ctypes.string_at(attr.ctx_in, attr.ctx_size_in))  # type: ignore[attr-defined]
        m = self.maps[map_fd]
        assert width == m.value_size and count <= BPF_MAX_LOOPS
        stored = 0
        for key in range(first, min(first + count, m.max_entries)):
            m.data[key.to_bytes(4, NATIVE)] = (value & ((1 << 8 * width) - 1)).to_bytes(width, NATIVE)
            stored += 1
        attr.retval = stored  # type: ignore[attr-defined]
        self.calls.append(Call("BPF_PROG_TEST_RUN", {"prog_fd": attr.prog_fd, "first": first, "count": count}, 0))  # type: ignore[attr-defined]
        return 0


def _loaded(fake: FakeKernel, *maps: MapSpec) -> tuple[Kernel, LiveObject]:
    kernel = Kernel(fake)
    return kernel, load_object(_spec(*maps), {}, kernel=kernel)


def _contents(fake: FakeKernel, live: LiveObject, name: str) -> dict[int, bytes]:
    m = fake.maps[live.map(name).fd]
    return {int.from_bytes(k, NATIVE): v for k, v in m.data.items()}


def _only_maps_open(fake: FakeKernel, live: LiveObject) -> bool:
    return set(fake.open_fds) == {m.fd for m in live.maps.values()}


def test_big_range_is_filled_in_the_kernel_without_batches() -> None:
    fake = FillingFake()
    kernel, live = _loaded(fake, _array("arr", 1 << 20))
    update = MapUpdate("arr", ((0, (1 << 20) - 1),), _value(7, 4), None)
    assert apply_updates(kernel, live, [update], {}) == 1 << 20
    assert not fake.calls_of("BPF_MAP_UPDATE_BATCH")
    (load,) = fake.calls_of("BPF_PROG_LOAD")
    assert load.args["prog_type"] == ProgType.RAW_TRACEPOINT and load.args["prog_name"] == "evspec_fill"
    assert load.args["func_info_cnt"] == 2 and load.args["func_info_rec_size"] == 8
    assert load.args["prog_btf_fd"] == fake.calls_of("BPF_BTF_LOAD")[0].result
    assert [(c.args["first"], c.args["count"]) for c in fake.calls_of("BPF_PROG_TEST_RUN")] == [(0, 1 << 20)]
    contents = _contents(fake, live, "arr")
    assert len(contents) == 1 << 20 and set(contents.values()) == {_value(7, 4)}
    assert _only_maps_open(fake, live)  # the fill program and its BTF are closed
    live.close()


def test_ranges_longer_than_one_bpf_loop_run_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(array_fill, "BPF_MAX_LOOPS", 5000)
    fake = FillingFake()
    kernel, live = _loaded(fake, _array("arr", 20_000, 8))
    update = MapUpdate("arr", ((100, 12_099),), _value(0x1_0000_0001, 8), None)
    assert apply_updates(kernel, live, [update], {}) == 12_000
    runs = [(c.args["first"], c.args["count"]) for c in fake.calls_of("BPF_PROG_TEST_RUN")]
    assert runs == [(100, 5000), (5100, 5000), (10_100, 2000)]
    assert _contents(fake, live, "arr") == {k: _value(0x1_0000_0001, 8) for k in range(100, 12_100)}
    live.close()


def test_one_program_per_map_serves_all_its_terms_and_values() -> None:
    fake = FillingFake()
    kernel, live = _loaded(fake, _array("a", 50_000, 2), _array("b", 50_000, 1))
    updates = [
        MapUpdate("a", ((0, 9999),), _value(1, 2), None),
        MapUpdate("b", ((0, 49_999),), _value(0xAB, 1), None),
        MapUpdate("a", ((5000, 19_999), (30_000, 39_999)), _value(0xBEEF, 2), None),
    ]
    assert apply_updates(kernel, live, updates, {}) == 10_000 + 50_000 + 25_000
    assert len(fake.calls_of("BPF_PROG_LOAD")) == 2 and len(fake.calls_of("BPF_BTF_LOAD")) == 1
    a = _contents(fake, live, "a")
    assert a == {
        **{k: _value(1, 2) for k in range(5000)},
        **{k: _value(0xBEEF, 2) for k in (*range(5000, 20_000), *range(30_000, 40_000))},
    }
    assert set(_contents(fake, live, "b").values()) == {b"\xab"}
    assert _only_maps_open(fake, live)
    live.close()


def test_small_ranges_use_one_batch_and_no_program() -> None:
    fake = FillingFake()
    kernel, live = _loaded(fake, _array("arr", 1 << 20))
    (update,) = plan_map_updates(parse("./fill.o/map:arr.value[0,3...6]=1234/").items[0], _spec(_array("arr", 1 << 20)))  # type: ignore[attr-defined]
    assert apply_updates(kernel, live, [update], {}) == 5
    assert not fake.calls_of("BPF_PROG_LOAD") and not fake.calls_of("BPF_BTF_LOAD")
    (batch,) = fake.calls_of("BPF_MAP_UPDATE_BATCH")
    assert batch.args["keys"] == keys_bytes(0, 1, 4) + keys_bytes(3, 4, 4)
    assert _contents(fake, live, "arr") == {k: _value(1234, 4) for k in (0, 3, 4, 5, 6)}
    live.close()


def test_without_the_fill_program_batches_are_chunked() -> None:
    fake = FakeKernel()  # its BPF_PROG_TEST_RUN fails with EINVAL, as on kernels before 5.10
    kernel, live = _loaded(fake, _array("arr", 3 * BATCH_CHUNK))
    first, last = 10, 2 * BATCH_CHUNK + 100
    update = MapUpdate("arr", ((first, last),), _value(9, 4), None)
    assert apply_updates(kernel, live, [update], {}) == last - first + 1
    assert len(fake.calls_of("BPF_PROG_TEST_RUN")) == 1
    batches = fake.calls_of("BPF_MAP_UPDATE_BATCH")
    assert [c.args["count"] for c in batches] == [BATCH_CHUNK, BATCH_CHUNK, last - first + 1 - 2 * BATCH_CHUNK]
    assert batches[1].args["keys"][:4] == _value(first + BATCH_CHUNK, 4)
    contents = _contents(fake, live, "arr")
    assert sorted(contents) == list(range(first, last + 1)) and set(contents.values()) == {_value(9, 4)}
    assert _only_maps_open(fake, live)
    live.close()


def test_a_failed_run_stops_using_programs_for_later_terms() -> None:
    fake = FakeKernel()
    kernel, live = _loaded(fake, _array("a", 10_000), _array("b", 10_000))
    updates = [MapUpdate(n, ((0, 9999),), _value(3, 4), None) for n in ("a", "b")]
    assert apply_updates(kernel, live, updates, {}) == 20_000
    assert len(fake.calls_of("BPF_PROG_TEST_RUN")) == 1 and len(fake.calls_of("BPF_PROG_LOAD")) == 1
    assert len(fake.calls_of("BPF_MAP_UPDATE_BATCH")) == 2
    assert _only_maps_open(fake, live)
    live.close()


def test_without_btf_no_program_is_tried() -> None:
    fake = FillingFake()
    kernel, live = _loaded(fake, _array("a", 10_000), _array("b", 10_000))
    fake.script("BPF_BTF_LOAD", errno=E.EINVAL, times=None)
    updates = [MapUpdate(n, ((0, 9999),), _value(3, 4), None) for n in ("a", "b")]
    assert apply_updates(kernel, live, updates, {}) == 20_000
    assert len(fake.calls_of("BPF_BTF_LOAD")) == 2  # the first try, then one with a log
    assert not fake.calls_of("BPF_PROG_LOAD")
    assert len(fake.calls_of("BPF_MAP_UPDATE_BATCH")) == 2
    assert _only_maps_open(fake, live)
    live.close()


def test_a_map_the_verifier_refuses_falls_back_alone() -> None:
    fake = FillingFake()
    kernel, live = _loaded(fake, _array("a", 10_000), _array("b", 10_000))
    a_fd = live.map("a").fd
    fake.script("BPF_PROG_LOAD", errno=E.EACCES, log="R0 invalid mem access\n", times=None,
                match=lambda args: struct.pack("=i", a_fd) in args["insns"])
    updates = [MapUpdate(n, ((0, 9999),), _value(3, 4), None) for n in ("a", "b", "a")]
    assert apply_updates(kernel, live, updates, {}) == 30_000
    assert len(fake.calls_of("BPF_MAP_UPDATE_BATCH")) == 2  # both terms of 'a'
    assert [c.args["count"] for c in fake.calls_of("BPF_PROG_TEST_RUN")] == [10_000]  # 'b'
    assert len(_contents(fake, live, "a")) == len(_contents(fake, live, "b")) == 10_000
    assert _only_maps_open(fake, live)
    live.close()


def test_read_only_maps_are_not_given_a_program() -> None:
    fake = FillingFake()
    kernel, live = _loaded(fake, _array("ro", 10_000, flags=abi.MapFlag.RDONLY_PROG))
    assert apply_updates(kernel, live, [MapUpdate("ro", ((0, 9999),), _value(3, 4), None)], {}) == 10_000
    assert not fake.calls_of("BPF_PROG_LOAD") and len(fake.calls_of("BPF_MAP_UPDATE_BATCH")) == 1
    live.close()


def test_program_and_btf_are_closed_when_a_batch_fails() -> None:
    fake = FillingFake()
    kernel, live = _loaded(fake, _array("a", 10_000), _array("b", 10_000))
    fake.script("BPF_MAP_UPDATE_BATCH", errno=E.ENOMEM)
    updates = [MapUpdate("a", ((0, 9999),), _value(3, 4), None), MapUpdate("b", ((0, 3),), _value(3, 4), None)]
    with pytest.raises(KernelError, match="ENOMEM"):
        apply_updates(kernel, live, updates, {})
    assert fake.calls_of("BPF_PROG_TEST_RUN") and _only_maps_open(fake, live)
    live.close()


def test_an_apply_error_after_a_fill_is_reported_and_the_program_closed() -> None:
    fake = FillingFake()
    channel = MapSpec("channel", MapType.PERF_EVENT_ARRAY, 4, 4, 2)
    kernel, live = _loaded(fake, _array("a", 10_000), channel)
    inheriting = EventInstances("evt", 1, 10, True, 1, (41, 42))
    updates = [MapUpdate("a", ((0, 9999),), _value(3, 4), None), MapUpdate("channel", (), None, "evt")]
    with pytest.raises(ApplyError, match="inherits"):
        apply_updates(kernel, live, updates, {"evt": inheriting})
    assert fake.calls_of("BPF_PROG_TEST_RUN") and _only_maps_open(fake, live)
    live.close()


def test_kernel_fill_min_is_where_the_program_starts() -> None:
    fake = FillingFake()
    kernel, live = _loaded(fake, _array("arr", 2 * KERNEL_FILL_MIN))
    updates = [
        MapUpdate("arr", ((0, KERNEL_FILL_MIN - 2),), _value(1, 4), None),
        MapUpdate("arr", ((0, KERNEL_FILL_MIN - 1),), _value(2, 4), None),
    ]
    apply_updates(kernel, live, updates, {})
    assert len(fake.calls_of("BPF_MAP_UPDATE_BATCH")) == 1 and len(fake.calls_of("BPF_PROG_TEST_RUN")) == 1
    live.close()


def test_event_updates_fill_slots_from_ranges() -> None:
    fake = FakeKernel()
    kernel = Kernel(fake)
    spec = _spec(MapSpec("channel", MapType.PERF_EVENT_ARRAY, 4, 4, 4))
    live = load_object(spec, {}, kernel=kernel)
    event = EventInstances("evt", 1, 10, False, 1, (41, 42, 43, 44))
    update = MapUpdate("channel", ((1, 2),), None, "evt")
    assert apply_updates(kernel, live, [update], {"evt": event}, map_sizes={"channel": 4}) == 2
    assert _contents(fake, live, "channel") == {1: _value(42, 4), 2: _value(43, 4)}
    whole = MapUpdate("channel", (), None, "evt")
    assert apply_updates(kernel, live, [whole], {"evt": event}, map_sizes={"channel": 4}) == 4
    assert _contents(fake, live, "channel") == {k: _value(41 + k, 4) for k in range(4)}
    live.close()


# ------------------------------------------------------------------ live kernel


class CountingFunnel:
    """The real funnel, counting the bpf commands that go through it."""

    def __init__(self) -> None:
        from evspec.loader.kernel.syscalls import LinuxFunnel

        self.inner = LinuxFunnel()
        self.ops: list[str] = []

    def bpf(self, cmd: int, attr: ctypes.Structure, size: int, *, operation: str) -> int:
        self.ops.append(operation)
        return self.inner.bpf(cmd, attr, size, operation=operation)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def live_kernel(root_kernel: None) -> Iterator[tuple[CountingFunnel, Kernel]]:
    before = set(os.listdir("/proc/self/fd"))
    funnel = CountingFunnel()
    yield funnel, Kernel(funnel)  # type: ignore[arg-type]
    assert set(os.listdir("/proc/self/fd")) == before, "descriptors left open"


def _read_back(kernel: Kernel, live: LiveObject, name: str) -> tuple[bytes, bytes]:
    m = live.map(name)
    return kernel.lookup_batch(m.fd, key_size=4, value_size=m.spec.value_size, chunk=1 << 16)


def test_live_million_entry_fill_holds_every_value(live_kernel: tuple[CountingFunnel, Kernel]) -> None:
    funnel, kernel = live_kernel
    n = 1 << 20
    spec = _spec(_array("arr", n))
    (update,) = plan_map_updates(parse("./fill.o/map:arr.value[0...1048575]=7/").items[0], spec)  # type: ignore[attr-defined]
    with load_object(spec, {}, kernel=kernel) as live:
        funnel.ops.clear()
        assert apply_updates(kernel, live, [update], {}) == n
        assert "BPF_MAP_UPDATE_BATCH" not in funnel.ops and funnel.ops.count("BPF_PROG_TEST_RUN") == 1
        keys, values = _read_back(kernel, live, "arr")
        assert keys == array("I", range(n)).tobytes()
        assert values == _value(7, 4) * n


@pytest.mark.parametrize(("value_size", "number"), [(1, 0xAB), (2, 0xBEEF), (4, 0xDEADBEEF), (8, 0x1234_5678_9ABC_DEF0)])
def test_live_partial_fill_touches_exactly_its_keys(live_kernel: tuple[CountingFunnel, Kernel], value_size: int, number: int) -> None:
    funnel, kernel = live_kernel
    n = 100_000
    ranges = ((0, 0), (3, 6), (5000, 70_000), (n - 1, n - 1))
    with load_object(_spec(_array("arr", n, value_size)), {}, kernel=kernel) as live:
        funnel.ops.clear()
        written = apply_updates(kernel, live, [MapUpdate("arr", ranges, _value(number, value_size), None)], {})
        assert written == 1 + 4 + 65_001 + 1
        assert funnel.ops.count("BPF_PROG_TEST_RUN") == 1 and funnel.ops.count("BPF_MAP_UPDATE_BATCH") == 1
        _keys, values = _read_back(kernel, live, "arr")
        selected = {k for first, last in ranges for k in range(first, last + 1)}
        expected = b"".join(_value(number, value_size) if k in selected else bytes(value_size) for k in range(n))
        assert values == expected


def test_live_read_only_for_programs_map_is_filled_by_batches(live_kernel: tuple[CountingFunnel, Kernel]) -> None:
    funnel, kernel = live_kernel
    with load_object(_spec(_array("ro", 10_000, flags=abi.MapFlag.RDONLY_PROG)), {}, kernel=kernel) as live:
        funnel.ops.clear()
        assert apply_updates(kernel, live, [MapUpdate("ro", ((0, 9999),), _value(5, 4), None)], {}) == 10_000
        assert "BPF_PROG_LOAD" not in funnel.ops
        assert _read_back(kernel, live, "ro")[1] == _value(5, 4) * 10_000


def test_live_fill_program_is_accepted_by_the_verifier(live_kernel: tuple[CountingFunnel, Kernel]) -> None:
    _funnel, kernel = live_kernel
    with load_object(_spec(_array("arr", 64, 8)), {}, kernel=kernel) as live:
        filler = KernelFill(kernel)
        try:
            assert filler.fill(live.map("arr"), 60, 4, _value(1 << 40, 8))
        finally:
            filler.close()
        _keys, values = _read_back(kernel, live, "arr")
        assert values == bytes(8 * 60) + _value(1 << 40, 8) * 4


def test_small_ranges_share_batches_up_to_the_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ap, "BATCH_CHUNK", 4)
    fake = FakeKernel()
    kernel, live = _loaded(fake, _array("arr", 64))
    update = MapUpdate("arr", ((0, 2), (5, 5), (7, 9), (20, 21)), _value(6, 4), None)
    assert apply_updates(kernel, live, [update], {}) == 9
    groups = [c.args["keys"] for c in fake.calls_of("BPF_MAP_UPDATE_BATCH")]
    assert groups == [
        b"".join(_value(k, 4) for k in keys) for keys in ((0, 1, 2, 5), (7, 8, 9, 20), (21,))
    ]
    assert sorted(_contents(fake, live, "arr")) == [0, 1, 2, 5, 7, 8, 9, 20, 21]
    live.close()
