"""Offline: where programs send records (output_calls), the type the object says they have
(output_types), the bpf-output events record creates for perf event arrays (plan_outputs), and a
variable tail of strings printed whole. Objects are made by hand, instruction by instruction."""

from __future__ import annotations

import struct

from btf_builder import BtfBuilder
from evspec.loader import asm
from evspec.loader.lint.terms.bpf_stdout import name_clashes, plan_outputs
from evspec.loader.lint.terms.maps import MapUpdate
from evspec.loader.lint.terms.output_calls import MapValue, Stack, output_calls
from evspec.loader.lint.terms.output_types import RecordType, Untyped, record_type
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec, ProgramSpec, Relocation
from evspec.loader.output.typed import RecordDecoder, fields_text

R0, R1, R2, R3, R4, R5, R6, R10 = 0, 1, 2, 3, 4, 5, 6, 10
PEA, HASH = int(MapType.PERF_EVENT_ARRAY), int(MapType.HASH)


def mov(dst: int, src: int) -> bytes:
    return asm.encode(asm.OP_MOV64_REG, dst, src)


def movi(dst: int, imm: int) -> bytes:
    return asm.encode(asm.OP_MOV64_IMM, dst, imm=imm)


def addi(dst: int, imm: int) -> bytes:
    return asm.encode(asm.OP_ADD64_IMM, dst, imm=imm)


def call(helper: int) -> bytes:
    return asm.encode(asm.OP_CALL, imm=helper)


EXIT = movi(R0, 0) + asm.encode(asm.OP_EXIT)


class Code:
    """Instructions with their map relocations (``load_map`` leaves a ld_imm64 to relocate)."""

    def __init__(self) -> None:
        self.insns = b""
        self.relocs: list[Relocation] = []

    def __add__(self, more: bytes) -> Code:
        self.insns += more
        return self

    def load_map(self, reg: int, name: str) -> Code:
        self.relocs.append(Relocation(len(self.insns) // 8, "map", name, name))
        self.insns += asm.ld_imm64(reg, 0)
        return self

    def program(self, name: str) -> ProgramSpec:
        return ProgramSpec(name, "tracepoint/syscalls/sys_enter_getppid", self.insns, relocations=tuple(self.relocs))


def send_map_value(map_name: str = "events", size: int | None = 16) -> Code:
    """r0 = lookup(values, stack key); perf_event_output(ctx, map_name, -1, r0, size)."""
    code = Code() + mov(R6, R1) + movi(R2, 0) + asm.encode(asm.stx(8), R10, R2, -8)
    code = code + mov(R2, R10) + addi(R2, -8)
    code.load_map(R1, "values")
    code = code + call(1) + mov(R4, R0) + mov(R1, R6)
    code.load_map(R2, map_name)
    code = code + movi(R3, -1) + (movi(R5, size) if size is not None else mov(R5, R6)) + call(25)
    return code + EXIT


def send_stack(size: int, store_in: str | None = None) -> Code:
    """perf_event_output(ctx, events, -1, r10-32, size), the buffer first stored as a map's value."""
    code = Code() + mov(R6, R1)
    if store_in is not None:
        code = code + mov(R2, R10) + addi(R2, -8) + mov(R3, R10) + addi(R3, -32)
        code.load_map(R1, store_in)
        code = code + movi(R4, 0) + call(2)
    code = code + mov(R4, R10) + addi(R4, -32) + mov(R1, R6)
    code.load_map(R2, "events")
    return code + movi(R3, -1) + movi(R5, size) + call(25) + EXIT


def btf_with_event(size: int = 16) -> tuple[bytes, int]:
    """BTF with ``struct event { u32 pid; u32 ppid; char comm[size - 8]; }`` (its id returned)."""
    b = BtfBuilder()
    u32 = b.int_("u32", 4)
    char = b.int_("char", 1, signed=True)
    comm = b.array(char, size - 8, u32)
    event = b.struct("event", size, [("pid", u32, 0), ("ppid", u32, 32), ("comm", comm, 64)])
    return b.blob(), event


def make_spec(programs: tuple[ProgramSpec, ...], *, btf: bytes | None = None, value_type: int | None = None,
              extra_maps: tuple[MapSpec, ...] = (), path: str = "tool.o") -> ObjectSpec:
    maps = (MapSpec("events", PEA, 4, 4, 0), MapSpec("values", HASH, 4, 16, 64, value_type_id=value_type),
            *extra_maps)
    return ObjectSpec(path, "GPL", None, maps, programs, btf=btf)


def test_a_map_value_sent_is_found_with_its_map_and_size() -> None:
    [c] = output_calls(make_spec((send_map_value().program("p"),)))
    assert (c.program, c.helper_name, c.map_name, c.data, c.size) == (
        "p", "bpf_perf_event_output", "events", MapValue("values", 0), 16)


def test_a_stack_buffer_stored_in_a_map_is_known_as_its_value() -> None:
    [c] = output_calls(make_spec((send_stack(16, store_in="values").program("p"),)))
    assert c.data == Stack(0, -32) and c.stored_as == (("values", "value"),)


def test_a_map_argument_paths_disagree_on_is_unknown_and_names_the_candidates() -> None:
    code = Code() + mov(R6, R1)
    code.load_map(R2, "events")
    code = code + asm.encode(asm.OP_JEQ_IMM, R6, off=2)  # if r6 == 0: skip the next ld_imm64
    code.load_map(R2, "other")
    code = code + mov(R1, R6) + movi(R3, -1) + mov(R4, R10) + addi(R4, -8) + movi(R5, 8) + call(25) + EXIT
    spec = make_spec((code.program("p"),), extra_maps=(MapSpec("other", PEA, 4, 4, 0),))
    [c] = output_calls(spec)
    assert c.map_name is None and c.candidates == ("events", "other")
    plan = plan_outputs([(spec, [])])
    assert [o.event for o in plan.outputs] == ["events", "other"]  # either may be sent to: both read


def test_a_call_in_a_subprogram_sees_the_callers_arguments() -> None:
    sub = Code() + mov(R4, R2) + mov(R2, R3) + movi(R3, -1) + movi(R5, 16) + call(25) + EXIT
    caller = Code() + mov(R6, R1) + movi(R2, 0) + asm.encode(asm.stx(8), R10, R2, -8) + mov(R2, R10) + addi(R2, -8)
    caller.load_map(R1, "values")
    caller = caller + call(1) + mov(R2, R0) + mov(R1, R6)
    caller.load_map(R3, "events")
    caller.relocs.append(Relocation(len(caller.insns) // 8, "call", ".text", "send"))
    caller = caller + asm.encode(asm.OP_CALL, src=1, imm=-1) + EXIT
    spec = ObjectSpec("tool.o", "GPL", None, make_spec(()).maps, (caller.program("p"),),
                      (ProgramSpec("send", ".text", sub.insns),))
    [c] = output_calls(spec)
    assert (c.program, c.function, c.map_name, c.data) == ("p", "send", "events", MapValue("values", 0))


def test_the_record_type_is_the_value_type_of_the_map_the_record_comes_from() -> None:
    btf, event = btf_with_event()
    spec = make_spec((send_map_value().program("p"), send_stack(16).program("q")), btf=btf, value_type=event)
    found = record_type(spec, "events", output_calls(spec))
    assert isinstance(found, RecordType) and (found.name, found.size) == ("struct event", 16)
    assert found.source == ("the value type of map 'values', which bpf_perf_event_output in p (insn 14) "
                            "sends from")


def test_a_stack_buffer_is_typed_only_at_its_maps_exact_size() -> None:
    btf, event = btf_with_event()
    typed = make_spec((send_stack(16, store_in="values").program("p"),), btf=btf, value_type=event)
    assert isinstance(record_type(typed, "events", output_calls(typed)), RecordType)
    shorter = make_spec((send_stack(12, store_in="values").program("p"),), btf=btf, value_type=event)
    assert isinstance(record_type(shorter, "events", output_calls(shorter)), Untyped)


def test_no_type_is_guessed() -> None:
    btf, event = btf_with_event()
    stack_only = make_spec((send_stack(16).program("p"),), btf=btf, value_type=event)  # a struct of that size
    assert record_type(stack_only, "events", output_calls(stack_only)) == Untyped(
        "no program sends a map's value or a buffer typed by a map, the only records whose type the object says")
    too_long = make_spec((send_map_value().program("p"), send_stack(24).program("q")), btf=btf, value_type=event)
    assert record_type(too_long, "events", output_calls(too_long)) == Untyped(
        "bpf_perf_event_output in q (insn 8) sends 24 bytes, more than struct event (16 bytes)")
    unknown_size = make_spec((send_map_value().program("p"), send_stack(16).program("q"),
                              send_map_value(size=None).program("r")), btf=btf, value_type=event)
    assert isinstance(record_type(unknown_size, "events", output_calls(unknown_size)), RecordType)  # r's is a value
    no_btf = make_spec((send_map_value().program("p"),), value_type=event)
    assert record_type(no_btf, "events", output_calls(no_btf)) == Untyped("the object has no BTF")


def test_record_creates_one_event_per_array_sent_to_and_none_for_the_others() -> None:
    btf, event = btf_with_event()
    spec = make_spec((send_map_value().program("p"),), btf=btf, value_type=event,
                     extra_maps=(MapSpec("counters", PEA, 4, 4, 4), MapSpec("pinned", PEA, 4, 4, 4, pinning=1)))
    plan = plan_outputs([(spec, [])])
    [o] = plan.outputs
    assert (o.map_name, o.event, o.programs) == ("events", "events", ("p",))
    assert plan.updates == ((MapUpdate("events", (), None, "events"),),)  # every key of the live array
    assert o.describe() == (
        "tool.o: map 'events' (perf event array) gets the bpf-output event 'events' (no-inherit, at every CPU's "
        "key) that record creates: program p sends to it and no term gives it an event; its records are printed "
        "as struct event (16 bytes), the value type of map 'values', which bpf_perf_event_output in p (insn 14) "
        "sends from")
    assert not plan.create_event


def test_an_array_a_term_fills_gets_no_automatic_event() -> None:
    spec = make_spec((send_map_value().program("p"),))
    mine = MapUpdate("events", ((0, 3),), None, "out")
    plan = plan_outputs([(spec, [mine])])
    assert plan.outputs == () and plan.updates == ((mine,),)


def test_two_objects_with_a_map_of_one_name_get_numbered_events() -> None:
    a = make_spec((send_map_value().program("p"),), path="a.o")
    b = make_spec((send_stack(8).program("q"),), path="b.o")
    plan = plan_outputs([(a, []), (b, [])])
    assert [(o.path, o.event) for o in plan.outputs] == [("a.o", "events_1"), ("b.o", "events_2")]
    assert name_clashes(plan, {}) == []


def test_a_name_another_event_has_is_an_error_naming_both() -> None:
    plan = plan_outputs([(make_spec((send_stack(8).program("q"),)), [])])
    assert name_clashes(plan, {"events": "'events' of -e #1"}) == [
        "the bpf-output event 'events' that record creates for map 'events' of tool.o has the name of the event "
        "'events' of -e #1: rename that event (name=...), or give the map an event of your own with "
        "map:events.event=NAME"]


def test_a_record_cut_in_its_char_array_shows_every_string_sent() -> None:
    btf, event = btf_with_event(32)
    decoder = RecordDecoder.of_id(btf, event)
    raw = struct.pack("<II", 7, 1) + b"/bin/true\0--first\0two words\0"  # execsnoop's args, sent cut
    text = fields_text(decoder.decode(raw[:29]))
    assert text == "pid=7 ppid=1 comm=/bin/true --first two (short record: 29 of 32 bytes)"
    whole = fields_text(decoder.decode(raw[:32]))  # a record of the type's size: the first string
    assert whole == "pid=7 ppid=1 comm=/bin/true"


def test_a_numbered_name_a_map_of_another_object_has_is_an_error_too() -> None:
    a = make_spec((send_stack(8).program("p"),), path="a.o")
    b = make_spec((send_stack(8).program("q"),), path="b.o")
    c = ObjectSpec("c.o", "GPL", None, (MapSpec("events_1", PEA, 4, 4, 0),),
                   (_renamed(send_stack(8), "events_1").program("r"),))
    plan = plan_outputs([(a, []), (b, []), (c, [])])
    assert [o.event for o in plan.outputs] == ["events_1", "events_2", "events_1"]
    assert name_clashes(plan, {}) == [
        "the bpf-output event 'events_1' that record creates for map 'events_1' of c.o has the name of the event "
        "'events_1' record creates for map 'events' of a.o: rename that event (name=...), or give the map an "
        "event of your own with map:events_1.event=NAME"]


def _renamed(code: Code, name: str) -> Code:
    code.relocs = [Relocation(r.insn_index, r.kind, name, name) for r in code.relocs]
    return code


def _spill_and_send(clobber: bool) -> Code:
    """The map value spilled to r10-16, maybe a helper writing a 16-byte buffer at r10-24 (over
    the spill), then reloaded and sent."""
    code = Code() + mov(R6, R1) + movi(R2, 0) + asm.encode(asm.stx(8), R10, R2, -8) + mov(R2, R10) + addi(R2, -8)
    code.load_map(R1, "values")
    code = code + call(1) + asm.encode(asm.stx(8), R10, R0, -16)
    if clobber:
        code = code + mov(R1, R10) + addi(R1, -24) + movi(R2, 16) + call(16)  # bpf_get_current_comm
    code = code + asm.encode(asm.ldx(8), R4, R10, -16) + mov(R1, R6)
    code.load_map(R2, "events")
    return code + movi(R3, -1) + movi(R5, 16) + call(25) + EXIT


def test_a_spilled_pointer_is_known_until_a_helper_writes_over_it() -> None:
    [kept] = output_calls(make_spec((_spill_and_send(False).program("p"),)))
    assert kept.data == MapValue("values", 0)
    [lost] = output_calls(make_spec((_spill_and_send(True).program("p"),)))
    assert lost.data is None and lost.map_name == "events"
