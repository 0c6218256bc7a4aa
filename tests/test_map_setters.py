"""map:NAME.SETTER=VALUE (libbpf's setters before load) and maps that cannot be created as the
object has them: checked offline against hand-built specs and the libbpf-tools objects, applied
to the specs record loads, and (live) the maps of libbpf-tools objects created with the setters
their tools use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evspec.loader.lint.terms.map_setters import TYPE_NAMES, apply_map_setters, unsized_problems
from evspec.loader.lint.terms.maps import check_map_terms, plan_map_updates
from evspec.loader.object.reader import read_object
from evspec.loader.object.spec import MapSpec, MapType, ObjectSpec
from heldout_tools import extract_sid_objects
from record_cli import run_record

from evspec.ast import BpfEvent
from evspec.codes import bpf as codes
from evspec.codes import bpfconfig
from evspec.diagnostics import EvspecError
from evspec.parser import analyze, parse

DATA = Path(__file__).parent / "data" / "libbpf_tools"
OBJECTS = json.loads((DATA / "objects.json").read_text())

HASH, ARRAY, PEA, STACK, RING = (MapType.HASH, MapType.ARRAY, MapType.PERF_EVENT_ARRAY, MapType.STACK_TRACE,
                                 MapType.RINGBUF)
SPEC = ObjectSpec("t.o", "GPL", None, (
    MapSpec("start", int(HASH), 4, 8, 0),
    MapSpec("counts", int(ARRAY), 4, 8, 16),
    MapSpec("events", int(PEA), 4, 4, 0),
    MapSpec("stacks", int(STACK), 4, 0, 0),
    MapSpec("rb", int(RING), 0, 0, 4096),
    MapSpec("t.rodata", int(ARRAY), 4, 16, 1, section=".rodata", readonly=True),
    MapSpec("outer", int(MapType.ARRAY_OF_MAPS), 4, 4, 2, inner=MapSpec("inner", int(ARRAY), 4, 4, 1)),
), ())
SIZED = "map:start.max_entries=1024,map:stacks.value_size=1016,map:stacks.max_entries=64"


def event(terms: str) -> tuple[str, BpfEvent]:
    text = f"./t.o/{terms}/"
    found = next(iter(parse(text).events()))
    assert isinstance(found, BpfEvent)
    return text, found


def findings(terms: str, spec: ObjectSpec = SPEC) -> list[tuple[str, str, str]]:
    """(code, the text under the caret, message) of each finding."""
    text, ev = event(terms)
    return [(d.code, text[d.span.start:d.span.end], d.message) for d in check_map_terms(ev, spec, {})]


def test_the_sized_object_checks_clean() -> None:
    assert findings(SIZED) == []


@pytest.mark.parametrize("setter, caret, words", [
    ("map:counts.max_entries=0", "0", "needs at least one entry"),
    ("map:counts.max_entries=0x100000000", "0x100000000", "32 bits"),
    ("map:counts.key_size=8", "8", "4-byte keys"),
    ("map:start.key_size=513", "513", "1...512"),
    ("map:events.value_size=8", "8", "4-byte values"),
    ("map:stacks.value_size=12", "12", "multiple of 8"),
    ("map:stacks.value_size=0x100000", "0x100000", "kernel.perf_event_max_stack"),
    ("map:counts.map_flags=0x80000", "0x80000", "not map flags"),
    ("map:counts.numa_node=4096", "4096", "NUMA node 4096"),
    ("map:counts.map_type=hashmap", "hashmap", "not a map type"),
    ("map:start.map_type=perf_event_array", "perf_event_array", "4-byte values"),
    ("map:counts.max_entries=big", "big", "takes a number"),
    ("map:counts.map_type=3", "3", "map type name"),
])
def test_a_value_out_of_the_kernels_range_is_blamed_with_the_range(setter: str, caret: str, words: str) -> None:
    found = [f for f in findings(f"{SIZED},{setter}") if f[0] == codes.MAP_SETTER_RANGE]
    assert len(found) == 1, findings(f"{SIZED},{setter}")
    code, under, message = found[0]
    assert under == caret and words in message


def test_a_map_in_map_refuses_setters() -> None:
    found = findings(f"{SIZED},map:outer.max_entries=4")
    assert [(c, u) for c, u, _ in found] == [(codes.MAP_SETTER_REFUSED, "outer")]
    assert "map-in-map" in found[0][2]


def test_a_data_section_map_refuses_setters_naming_var_terms() -> None:
    spec = ObjectSpec("t.o", "GPL", None, (MapSpec("bss", int(ARRAY), 4, 8, 1, section=".bss"),), ())
    found = findings("map:bss.value_size=16", spec)
    assert [(c, u) for c, u, _ in found] == [(codes.MAP_SETTER_REFUSED, "bss")]
    assert "'.bss'" in found[0][2] and "var:NAME=VALUE" in found[0][2]


def test_a_setter_takes_no_index_list() -> None:
    found = findings(f"{SIZED},map:counts.max_entries[1]=4")
    assert [(c, u) for c, u, _ in found] == [(codes.MAP_SETTER_REFUSED, "[1]")]


def test_pin_refuses_a_path_off_bpffs_and_a_relative_one(tmp_path: Path) -> None:
    assert [(c, u) for c, u, _ in findings(f"{SIZED},map:counts.pin='{tmp_path}/c'")] == [
        (codes.MAP_PIN_PATH, f"'{tmp_path}/c'")]
    assert "not on a BPF filesystem" in findings(f"{SIZED},map:counts.pin='{tmp_path}/c'")[0][2]
    assert "not absolute" in findings(f"{SIZED},map:counts.pin='c'")[0][2]
    assert "does not exist" in findings(f"{SIZED},map:counts.pin='{tmp_path}/no/c'")[0][2]


def test_unsized_maps_are_named_with_the_term_to_add() -> None:
    text, ev = event("map:counts.value=1")
    problems = unsized_problems(ev, SPEC)
    assert [d.code for d in problems] == [codes.MAP_UNSIZED] * 2
    assert all(text[d.span.start:d.span.end] == "./t.o" for d in problems)
    helps = [" ".join(d.help) for d in problems]
    assert "add map:start.max_entries=N" in helps[0]
    assert "map:stacks.max_entries=N, map:stacks.value_size=N" in helps[1]
    # the perf event array (one entry per CPU, by libbpf) and the sized maps are not named
    assert not any("'events'" in d.message or "'counts'" in d.message for d in problems)


def test_setters_are_applied_to_the_spec_and_make_no_update() -> None:
    _, ev = event(f"{SIZED},map:counts.map_flags=1,map:counts.numa_node=0,map:start.map_type=lru_hash,"
                  "map:counts.max_entries=32,map:counts.max_entries=64,map:counts.value=7")
    spec, pins = apply_map_setters(ev, SPEC)
    maps = {m.name: m for m in spec.maps}
    assert (maps["start"].max_entries, maps["stacks"].value_size, maps["stacks"].max_entries) == (1024, 1016, 64)
    counts = maps["counts"]
    assert (counts.max_entries, counts.numa_node, maps["start"].type) == (64, 0, int(MapType.LRU_HASH))
    assert counts.flags == 1 | 4  # BPF_F_NO_PREALLOC and BPF_F_NUMA_NODE, which numa_node= implies
    assert pins == {}
    assert [u.map_name for u in plan_map_updates(ev, spec)] == ["counts"]  # the value term only


def test_record_refuses_an_unsized_map_before_loading() -> None:
    _, ev = event("map:start.max_entries=1024")
    with pytest.raises(EvspecError) as exc:
        apply_map_setters(ev, SPEC)
    assert [d.code for d in exc.value.diagnostics] == [codes.MAP_UNSIZED]


def test_a_size_other_than_the_btf_types_warns_and_drops_them(sid_objects: dict[str, Path]) -> None:
    spec = read_object(sid_objects["cpudist"])
    text = f"{sid_objects['cpudist']}/map:start.max_entries=64,map:hists.max_entries=1,map:hists.key_size=8/"
    ev = next(iter(parse(text).events()))
    assert isinstance(ev, BpfEvent)
    found = [d for d in check_map_terms(ev, spec, {})]
    assert [(d.code, text[d.span.start:d.span.end]) for d in found] == [(codes.MAP_SETTER_DROPS_BTF, "8")]
    assert "BTF key type is 4 bytes" in found[0].message
    sized, _ = apply_map_setters(ev, spec)
    hists = next(m for m in sized.maps if m.name == "hists")
    assert (hists.key_size, hists.key_type_id, hists.value_type_id) == (8, None, None)


def test_the_syntax_stage_takes_the_setters_and_refuses_a_missing_value() -> None:
    from evspec.rules import check

    assert check(parse("./t.o/map:a.max_entries=1,map:a.pin='/sys/fs/bpf/a',map:a.map_type=hash/")) == []
    assert [d.code for d in analyze("./t.o/map:a.max_entries/").diagnostics] == ["ES044"]
    # the object check says the same with a code the syntax stage's findings are filtered by
    ev = next(iter(analyze("./t.o/map:counts.max_entries/").events.events()))
    assert isinstance(ev, BpfEvent)
    assert [d.code for d in check_map_terms(ev, SPEC, {}) if d.code != codes.MAP_UNSIZED] == [bpfconfig.NO_VALUE]


def test_map_type_takes_libbpfs_names() -> None:
    assert {"hash", "percpu_array", "ringbuf", "lru_hash", "stack_trace", "arena"} <= set(TYPE_NAMES)
    assert "unspec" not in TYPE_NAMES


# ---------------------------------------------------------------------------------------------
# the libbpf-tools objects


@pytest.fixture(scope="module")
def sid_objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return extract_sid_objects(tmp_path_factory.mktemp("sid"))


def _needs_a_setter(facts: dict, name: str) -> bool:
    m = facts["maps"][name]
    return m["max_entries"] == 0 or (m["type"] == "stack_trace" and m["value_size"] == 0)


def _setters(tool: str) -> str:
    """The setters that give the maps of ``tool``'s object what its user space gives them."""
    out = []
    for name in OBJECTS[tool]["sized_by_user_space"]:
        m = OBJECTS[tool]["maps"][name]
        if m["type"] == "stack_trace":
            out += [f"map:{name}.value_size=1016", f"map:{name}.max_entries=1024"]
        elif m["max_entries"] == 0:
            out.append(f"map:{name}.max_entries=4096")
    return ",".join(out)


def test_every_map_the_tools_size_is_named_by_the_check(sid_objects: dict[str, Path]) -> None:
    named: dict[str, set[str]] = {}
    expected: dict[str, set[str]] = {}
    for tool, facts in OBJECTS.items():
        spec = read_object(sid_objects[tool])
        ev = next(iter(parse(str(sid_objects[tool])).events()))
        assert isinstance(ev, BpfEvent)
        problems = unsized_problems(ev, spec)
        named[tool] = {m.name for m in spec.maps if any(f"map '{m.name}'" in d.message for d in problems)}
        expected[tool] = {n for n in facts["sized_by_user_space"] if _needs_a_setter(facts, n)}
    assert named == expected
    assert sum(map(len, expected.values())) == 8  # cpudist 2, five stack maps, memleak's stack_traces


def test_with_the_tools_setters_every_object_checks_sized(sid_objects: dict[str, Path]) -> None:
    for tool in OBJECTS:
        spec = read_object(sid_objects[tool])
        ev = next(iter(parse(f"{sid_objects[tool]}/{_setters(tool)}/" if _setters(tool) else str(sid_objects[tool]))
                       .events()))
        assert isinstance(ev, BpfEvent)
        assert unsized_problems(ev, spec) == [], tool


@pytest.mark.parametrize("tool", ["cpudist", "futexctn", "wakeuptime", "tcppktlat", "offcputime"])
def test_the_tools_maps_are_created_with_their_setters(root_kernel: None, sid_objects: dict[str, Path],
                                                       tool: str) -> None:
    terms = _setters(tool)
    spec = f"{sid_objects[tool]}/{terms}/" if terms else str(sid_objects[tool])
    status, _, err = run_record("-a", "-e", spec, "--", "true")
    assert "BPF_MAP_CREATE" not in err, err
    assert status == 0, err


def test_pin_and_max_entries_reach_the_kernel(root_kernel: None, sid_objects: dict[str, Path],
                                              tmp_path: Path) -> None:
    """The map is created with the setters' values and pinned where pin= says (on a bpffs mounted
    in a private mount namespace), where it stays after the run, as libbpf leaves its pins."""
    import subprocess
    import sys

    pins = tmp_path / "bpffs"
    pins.mkdir()
    spec = (f"{sid_objects['cpudist']}/map:start.max_entries=4096,map:hists.max_entries=1,"
            f"map:start.pin='{pins}/start',map:start.map_flags=1/")
    show = ("from evspec.loader.kernel import Kernel; k = Kernel(); i = k.map_info(k.pinned(sys.argv[1])); "
            "print(i.type, i.max_entries, i.flags)")
    script = ('mount -t bpf bpf "$0" || exit 9; "$1" -m evspec record -a -e "$2" -- true >/dev/null || exit 8; '
              f'"$1" -c "import sys; {show}" "$0/start"')
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(pins),
                           sys.executable, spec], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)  # not the checkout: its evspec/ would shadow the installed package
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(int(HASH)), "4096", "1"]


def test_a_data_section_map_named_with_its_dot_is_refused_by_name() -> None:
    text = "./t.o/map:runqslow.rodata.max_entries=1/"
    (d,) = analyze(text).diagnostics
    assert (d.code, text[d.span.start:d.span.end]) == ("ES043", "runqslow.rodata")
    assert "takes no setters" in d.message and d.help == ("set the section's variables with var:NAME=VALUE",)
    spec = ObjectSpec("t.o", "GPL", None, (MapSpec("runqslow.rodata", int(ARRAY), 4, 8, 1, section=".rodata"),), ())
    ev = next(iter(analyze(text).events.events()))
    assert isinstance(ev, BpfEvent)
    assert check_map_terms(ev, spec, {}) == []  # no second finding ("no map 'runqslow'") from the object check
