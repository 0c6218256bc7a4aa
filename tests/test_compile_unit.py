"""Compiler units as perf 6.1 computes them (``compile --perf 6.1``): cache encoding, modifiers,
PMU formats and aliases, wildcards, hybrid, names, groups, stat mode, plans without a system,
listing. The newest release's differences are tests/test_compile_today.py's."""

from __future__ import annotations

import pytest

from evspec import parser
from evspec.compiler import attr as A
from evspec.compiler import check_semantics, compile_events, list_events
from evspec.compiler.listing import to_json
from evspec.compiler.releases import PERF_61
from evspec.diagnostics import EvspecError
from evspec.system import SnapshotSystem
from evspec.system.fixtures import corpus_data, corpus_system, hybrid_system, intel_system


def plan(text: str, system=None, mode: str = "stat"):  # type: ignore[no-untyped-def]
    return compile_events([parser.parse(text)], corpus_system() if system is None else system, mode,  # type: ignore[arg-type]
                          PERF_61)


def attrs(text: str, system=None, mode: str = "stat") -> list[A.Attr]:  # type: ignore[no-untyped-def]
    return [e.attr for e in plan(text, system, mode).events]


def errors(text: str, system=None, mode: str = "record") -> list[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    events = parser.parse(text)
    found = check_semantics(events, corpus_system() if system is None else system, mode, PERF_61)  # type: ignore[arg-type]
    return [(d.code, d.span.start, d.span.end) for d in found if d.is_error]


# ---- cache events


@pytest.mark.parametrize(
    ("text", "config"),
    [
        ("L1-dcache-loads", 0x00000),
        ("L1-dcache-load-misses", 0x10000),
        ("L1-dcache-stores", 0x00100),
        ("L1-dcache-prefetch-misses", 0x10200),
        ("L1-icache-prefetches", 0x00201),
        ("LLC-loads", 0x2),
        ("L2-load-misses", 0x10002),
        ("dTLB-store-misses", 0x10103),
        ("iTLB-load-misses", 0x10004),
        ("branch-loads", 0x5),
        ("node-prefetch-misses", 0x10206),
        ("L1-dcache", 0x0),  # op defaults to read, result to access
        ("L1-dcache-misses", 0x10000),  # the result alone
        ("L1-dcache-miss", 0x10000),
        ("L1-dcache-speculative-read", 0x200),
        ("L1-dcache-Reference", 0x0),
        ("l1-DCACHE-Load-MISSES", 0x10000),  # any letter case (perf 7.3)
        ("l1d-loads", 0x0),
        ("Instruction-TLB-loads", 0x4),
    ],
)
def test_cache_encoding(text: str, config: int) -> None:
    (a,) = attrs(text)
    assert (a["type"], a["config"]) == (A.PERF_TYPE_HW_CACHE, config)


def test_cache_table() -> None:
    assert A.match_cache_alias("loads", A.CACHE_OPS) == A.CACHE_OP_READ  # longest prefix
    assert A.match_cache_alias("LOAD", A.CACHE_OPS) == A.CACHE_OP_READ  # case-insensitive
    assert A.match_cache_alias("prefetches", A.CACHE_OPS) == A.CACHE_OP_PREFETCH
    assert A.match_cache_alias("bogus", A.CACHE_OPS) == -1
    names = dict(A.cache_event_names())
    assert len(names) == 32
    assert names["L1-icache-prefetch-misses"] == 0x10201
    assert "L1-icache-stores" not in names and "iTLB-stores" not in names
    with pytest.raises(ValueError):
        A.cache_config("branch", ("stores",))


# ---- modifiers (expected values: what perf 6.1 opened, see tests/golden/perf_stat)


def excl(a: A.Attr) -> dict[str, int]:
    keys = ("exclude_user", "exclude_kernel", "exclude_hv", "exclude_guest", "exclude_host", "exclude_idle")
    return {k: a.value(k) for k in keys if a.value(k)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cpu-clock", {"exclude_guest": 1}),
        ("cpu-clock:u", {"exclude_kernel": 1, "exclude_hv": 1, "exclude_guest": 1}),
        ("cpu-clock:k", {"exclude_user": 1, "exclude_hv": 1}),
        ("cpu-clock:h", {"exclude_user": 1, "exclude_kernel": 1}),
        ("cpu-clock:uk", {"exclude_hv": 1, "exclude_guest": 1}),
        ("cpu-clock:S", {}),  # an event's own modifiers start from zero
        ("cpu-clock:G", {"exclude_host": 1}),
        ("cpu-clock:H", {"exclude_guest": 1}),
        ("cpu-clock:I", {"exclude_idle": 1}),
        ("cpu-clock:p", {"exclude_guest": 1}),
        ("cpu-clock:Gp", {"exclude_host": 1}),  # G/H given: p keeps its hands off exclude_guest
    ],
)
def test_event_modifiers(text: str, expected: dict[str, int]) -> None:
    (a,) = attrs(text)
    assert excl(a) == expected


def test_group_modifiers_merge_into_members() -> None:
    leader, member = attrs("{cpu-clock:k,faults}:u")
    assert excl(leader) == {"exclude_hv": 1, "exclude_guest": 1}  # k + u: both counted
    assert excl(member) == {"exclude_kernel": 1, "exclude_hv": 1, "exclude_guest": 1}
    a, b = attrs("{cycles:G,cache-misses:H}:uG")
    assert excl(a) == {"exclude_kernel": 1, "exclude_hv": 1, "exclude_host": 1}
    assert excl(b) == {"exclude_kernel": 1, "exclude_hv": 1}  # its own H already chose host


def test_precise_pinned_exclusive_and_flags() -> None:
    (a,) = attrs("cpu-clock:ppp")
    assert a["precise_ip"] == 3
    (a,) = attrs("cpu-clock:pup")
    assert a["precise_ip"] == 2
    leader, member = attrs("{cpu-clock,task-clock}:De")
    assert (leader.value("pinned"), leader.value("exclusive")) == (1, 1)
    assert (member.value("pinned"), member.value("exclusive")) == (0, 0)  # leader only
    p = plan("{cpu-clock,task-clock}:W,cpu-clock:Pb")
    assert [e.weak_group for e in p.events] == [True, True, False]
    assert (p.events[2].precise_max, p.events[2].bpf_counter) == (True, True)
    p = plan("{cpu-clock:S,task-clock}:u")
    assert not p.events[0].sample_read  # a group's modifiers reset S (perf 6.1)


# ---- PMU formats and aliases


def test_intel_format_encoding() -> None:
    (a,) = attrs("cpu/event=0x3c,umask=1,edge,any,inv,cmask=2,ldlat=7/", intel_system())
    assert a["type"] == 4
    assert a["config"] == 0x3C | 1 << 8 | 1 << 18 | 1 << 21 | 1 << 23 | 2 << 24
    assert a["config1"] == 7
    (a,) = attrs("cpu/config=0x100,event=0x3c/", intel_system())  # config= assigns, formats OR
    assert a["config"] == 0x13C
    (a,) = attrs("uprobe/retprobe,ref_ctr_offset=7/")
    assert a["config"] == 1 | 7 << 32


def test_format_errors_and_spans() -> None:
    assert errors("power/event=0x100/") == [("EM005", 12, 17)]
    assert errors("power/event=0xff/") == []
    assert errors("msr/event/") == [("EM006", 4, 9)]  # bare multi-bit format term
    assert errors("uprobe/retprobe/") == []  # one bit: bare means 1
    assert errors("msr/bogus/") == [("EM003", 4, 9)]
    assert errors("cpu/cmask=256/", intel_system()) == [("EM005", 10, 13)]
    assert errors("cpu/umask=abc/", intel_system()) == [("EM004", 10, 13)]
    d = check_semantics(parser.parse("software/foo=1/"), corpus_system())[0]
    assert d.perf_message == "unknown term 'foo' for pmu 'software'"
    assert d.help[0] == (  # perf 7.3 record -e software/foo=1/
        "valid terms: config,config1,config2,config3,config4,name,period,freq,branch_type,time,call-graph,"
        "stack-size,no-inherit,inherit,max-stack,nr,no-overwrite,overwrite,driver-config,percore,aux-output,"
        "aux-action,aux-sample-size,metric-id,raw,cpu,ratio-to-prev,legacy-hardware-config,legacy-cache-config")
    d = check_semantics(parser.parse("power/bogus/"), corpus_system())[0]
    assert d.help[0].startswith("valid terms: event,config,")


def test_aliases() -> None:
    (a,) = attrs("msr/tsc/")
    assert (a["type"], a["config"]) == (10, 0)
    (a,) = attrs("msr/smi/u")
    assert (a["config"], a.value("exclude_kernel")) == (4, 1)
    (a,) = attrs("msr/event=smi/")  # event=ALIAS names the alias (perf's pmu_find_alias)
    assert a["config"] == 4
    (a,) = attrs("TSC")  # aliases match case-insensitively
    assert a["type"] == 10
    p = plan("energy-psys/name=x/")
    assert (p.events[0].name, p.events[0].unit, p.events[0].scale) == ("x", "Joules", "2.3283064365386962890625e-10")
    assert errors("msr/tsc,smi/") == [("EM007", 8, 11)]
    assert errors("Cyclez") == [("EM002", 0, 6)]
    assert errors("Cycles") == []  # an event name in any letter case (perf 7.3)
    assert errors("energy") == [("EM002", 0, 6)]


def test_alias_parameters() -> None:
    system = intel_system()
    (a,) = attrs("cpu/ld_lat.any,ldlat=3/", system)
    assert (a["config"], a["config1"]) == (0x1CD, 3)
    (a,) = attrs("cpu/ldlat=5,ld_lat.any/", system)  # the parameter may come first
    assert a["config1"] == 5
    (a,) = attrs("cpu/ocr.demand_data_rd,offcore_rsp=0x10001/", system)
    assert (a["config"], a["config1"]) == (0x1B7, 0x10001)
    assert errors("cpu/ld_lat.any/", system) == [("EM008", 4, 14)]
    assert errors("cpu/ld_lat.any,ldlat=0x10000/", system) == [("EM005", 21, 28)]


def test_pmu_wildcards() -> None:
    system = intel_system()
    p = plan("uncore_imc/event=0x4,umask=3/", system)
    assert [(e.pmu, e.attr["type"], e.attr["config"]) for e in p.events] == [
        ("uncore_imc_0", 16, 0x304),
        ("uncore_imc_1", 17, 0x304),
    ]
    p = plan("imc/cas_count_read/", system)  # uncore_ stripped, alias per PMU
    assert [e.pmu for e in p.events] == ["uncore_imc_0", "uncore_imc_1"]
    assert p.events[0].unit == "MiB"
    assert [e.pmu for e in plan("cas_count_write", system).events] == ["uncore_imc_0", "uncore_imc_1"]
    assert errors("ms/tsc/") == [("EM001", 0, 2)]
    assert errors("ms*/tsc/") == [("EM001", 0, 3)]
    d = check_semantics(parser.parse("nosuchpmu//"), corpus_system())[0]
    assert d.perf_message == "Cannot find PMU `nosuchpmu'. Missing kernel support?"


def test_hybrid_expansion() -> None:
    system = hybrid_system()
    p = plan("cycles", system)  # perf 6.1: the core PMUs in the kernel's order (cpu_core first)
    assert [(e.pmu, e.attr["type"], e.attr["config"]) for e in p.events] == [
        ("cpu_core", 0, 4 << 32),
        ("cpu_atom", 0, 12 << 32),
    ]
    assert [e.attr["config"] for e in plan("L1-dcache-load-misses", system).events] == [
        0x10000 | 4 << 32,
        0x10000 | 12 << 32,
    ]
    assert [e.attr["type"] for e in plan("r1a", system).events] == [4, 12]  # one raw evsel per core PMU
    assert [e.attr["type"] for e in plan("cpu-clock", system).events] == [1]  # software: once
    (a,) = attrs("cpu_core/cpu-cycles/", system)
    assert (a["type"], a["config"]) == (4, 0x3C)


def test_no_hardware_pmu_warns() -> None:
    p = plan("cycles")
    assert [d.code for d in p.warnings] == ["WM001"]
    assert plan("cycles", intel_system()).warnings == ()
    assert plan("cpu-clock").warnings == ()


# ---- tracepoints and breakpoints


def test_tracepoints() -> None:
    p = plan("sched:sched_switch,sched:sched_s*")
    assert [(e.name, e.attr["type"], e.attr["config"]) for e in p.events] == [
        ("sched:sched_switch", 2, 372),
        ("sched:sched_skip_cpuset_numa", 2, 356),
        ("sched:sched_skip_vma_numa", 2, 357),
        ("sched:sched_stat_runtime", 2, 363),
        ("sched:sched_stick_numa", 2, 359),
        ("sched:sched_swap_numa", 2, 358),
        ("sched:sched_switch", 2, 372),
    ]
    assert [e.tracepoint for e in plan("*:sys_enter").events] == ["raw_syscalls:sys_enter"]
    assert errors("nosu*:foo") == [("EM010", 0, 9)]
    assert errors("sched:nosuch") == [("EM009", 0, 12)]
    assert errors("sched:sched_switc[h]") == [("EM009", 0, 20)]


def test_breakpoints() -> None:
    def bp(text: str) -> tuple[int, int, int, int]:
        (a,) = attrs(text, mode="record")
        return (a["bp_type"], a["bp_addr"], a["bp_len"], a["sample_period"])

    assert bp("mem:0x1000") == (3, 0x1000, 4, 1)
    assert bp("mem:0x1000:x") == (4, 0x1000, 8, 1)
    assert bp("mem:0x1000/2:r") == (1, 0x1000, 2, 1)
    assert bp("mem:0x1000/0:rwx") == (7, 0x1000, 4, 1)


# ---- names and groups


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("cpu-clock:u", ["cpu-clock:u"]),
        (" cycles", [" cycles"]),
        ("msr/tsc/u", ["msr/tsc/u"]),
        ("mem:0x1000/8:w", ["mem:0x1000"]),
        ("LLC-load-misses:u", ["LLC-load-misses"]),
        ("LLC-load-misses/name=llc/", ["llc"]),
        ("r1234/name=rawpmu/", ["rawpmu"]),
        ("cpu-clock/period=1/,task-clock/period=2/", ["cpu-clock/period=1/", "task-clock/period=2/"]),
        ("{ cpu-clock , task-clock }:u", [" cpu-clock ", " task-clock "]),
        ("cycles/name='COMPLEX_CYCLES_NAME:orig=cycles,desc=chip-clock-ticks'/Duk",
         ["COMPLEX_CYCLES_NAME:orig=cycles,desc=chip-clock-ticks"]),
        ("sched:sched_switch:u", ["sched:sched_switch"]),
        ("smi,tsc", ["smi", "tsc"]),
    ],
)
def test_evsel_names(text: str, names: list[str]) -> None:
    assert [e.name for e in plan(text).events] == names


def test_groups() -> None:
    p = plan("cpu-clock,{task-clock,faults},grp{cs,migrations}:u,{dummy},{sched:sched_s*}")
    refs = [(e.group.index, e.group.leader) if e.group else None for e in p.events]
    assert refs[:6] == [None, (0, True), (0, False), (1, True), (1, False), None]
    assert {r for r in refs[6:]} == {(2, True), (2, False)}  # a glob's expansion forms the group
    stat = plan("{cpu-clock,task-clock}")
    assert [e.attr.value("disabled") for e in stat.events] == [1, 0]
    assert all(e.attr["read_format"] & A.READ_FORMAT["GROUP"] for e in stat.events)


def test_spec_index_and_json_contract() -> None:
    p = compile_events([parser.parse("cpu-clock"), parser.parse("{msr/tsc/,msr/smi/}")], corpus_system(), "stat")
    data = p.to_json()
    assert [e["spec_index"] for e in data["events"]] == [0, 1, 1]
    first = data["events"][0]
    assert set(first) >= {"name", "spec_index", "group", "attr"} and first["group"] is None
    assert data["events"][1]["group"] == {"index": 0, "leader": True, "position": 0, "members": 2}
    assert data["events"][2]["group"] == {"index": 0, "leader": False, "position": 1, "members": 2}
    assert all(isinstance(v, int) for e in data["events"] for v in e["attr"].values())


# ---- perf stat vs record


def test_stat_mode_term_set() -> None:
    assert errors("cpu-clock/call-graph=fp/", mode="stat") == [("EM012", 10, 20)]
    assert errors("cpu-clock/call-graph=fp/", mode="record") == []
    assert errors("cpu-clock/period=1,name=x,config=1,percore,metric-id=m/", mode="stat") == []
    d = check_semantics(parser.parse("cpu-clock/no-inherit/"), corpus_system(), "stat")[0]
    assert d.perf_message == "'no-inherit' is not usable in 'perf stat'"
    with pytest.raises(EvspecError):
        plan("cpu-clock/freq=10/", mode="stat")


def test_record_terms() -> None:
    (a,) = attrs("cpu-clock/period=1000,freq=100/", mode="record")  # last wins: freq
    assert (a.value("freq"), a.value("sample_freq"), a.value("sample_period")) == (1, 100, 0)
    (a,) = attrs("cpu-clock/freq=100,period=1000/", mode="record")
    assert (a.value("freq"), a.value("sample_period")) == (0, 1000)
    assert not a["sample_type"] & A.SAMPLE["PERIOD"]
    (a,) = attrs("cpu-clock/time=0,call-graph=fp,max-stack=9/", mode="record")
    assert not a["sample_type"] & A.SAMPLE["TIME"] and a["sample_type"] & A.SAMPLE["CALLCHAIN"]
    assert a["sample_max_stack"] == 9
    (a,) = attrs("cpu-clock/no-inherit,overwrite,branch_type=any_call/", mode="record")
    assert (a.value("inherit"), a.value("write_backward")) == (0, 1)
    assert a["branch_sample_type"] == A.BRANCH_SAMPLE_TYPES["any_call"]
    (a,) = attrs("cpu-clock/call-graph=dwarf,stack-size=1001/", mode="record")
    assert (a["sample_stack_user"], a["sample_regs_user"]) == (1008, 0xFF0FFF)
    (a,) = attrs("cpu-clock", mode="stat")
    assert a.value("sample_period") == 0 and a["sample_type"] == A.SAMPLE["IDENTIFIER"]


def test_without_a_system() -> None:
    p = compile_events([parser.parse("cycles:u,cpu-clock,L1-dcache-loads,r1a,1:1,mem:0x10")], None, "stat")
    assert [e.attr["type"] for e in p.events] == [0, 1, 3, 4, 1, 5]
    with pytest.raises(EvspecError) as exc:
        compile_events([parser.parse("cpu-clock,sched:sched_switch,msr/tsc/")], None)
    assert [d.code for d in exc.value.diagnostics] == ["EM013", "EM013"]
    assert exc.value.diagnostics[0].event == "cpu-clock,sched:sched_switch,msr/tsc/"


def test_compile_raises_with_every_error() -> None:
    with pytest.raises(EvspecError) as exc:
        compile_events([parser.parse("foo,sched:nosuch"), parser.parse("nosuchpmu//")], corpus_system())
    assert [(d.code, d.span.start) for d in exc.value.diagnostics] == [("EM002", 0), ("EM009", 4), ("EM001", 0)]


def test_checking_cycles_reads_no_tracepoint() -> None:
    class NoTracepointScan(SnapshotSystem):
        def tracepoint_systems(self) -> tuple[str, ...]:
            raise AssertionError("scanned the trace systems")

        def tracepoint_events(self, system: str) -> tuple[str, ...]:
            raise AssertionError("listed a trace system")

    system = NoTracepointScan(corpus_data())
    found = check_semantics(parser.parse("cycles,cpu-clock:u,tsc,msr/smi/,sched:sched_switch"), system)
    assert [d.code for d in found] == ["WM001"]


# ---- listing


def test_listing() -> None:
    system = intel_system()
    hw = list_events(system, "hw")
    assert (hw[0].name, hw[0].aliases, hw[0].label) == ("cpu-cycles", ("cycles",), "cpu-cycles OR cycles")
    assert all(e.kind == "hw" for e in hw)
    assert {e.name for e in list_events(system, "sw")} >= {"cpu-clock", "duration_time", "bpf-output"}
    assert len(list_events(system, "cache")) == 32
    pmu = {e.name: e.description for e in list_events(system, "pmu")}
    assert "msr/tsc/" in pmu and "unit: Joules" in pmu["power/energy-psys/"]
    assert "needs: ldlat=VALUE" in pmu["cpu/ld_lat.any/"]
    assert [e.name for e in list_events(system, "sched:sched_switch")] == ["sched:sched_switch"]
    assert {e.name for e in list_events(system, "tsc")} == {"msr/tsc/"}
    assert list_events(None, "tracepoint") == []
    assert to_json(list_events(system, "hw"))["events"][1] == {
        "name": "instructions", "aliases": [], "kind": "hw", "description": "Hardware event"
    }
    assert list_events(corpus_system(), "hw") == [] and list_events(corpus_system(), "cache") == []


def test_checking_imports_nothing_heavy() -> None:
    """Semantic checks import no BPF side, no ctypes: of the loader, only the perf ABI's numbers
    (``abi.perf_ids``, two small enums), which the compiler shares with the kernel layer; the
    tables of bits (``abi.perf_bits``) are made when a compile first asks for them."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from evspec.parser import analyze\n"
        "from evspec.compiler.resolve import check_semantics\n"
        "from evspec.system import load_system\n"
        "check_semantics(analyze('cycles,msr/tsc/').events, load_system('live'))\n"
        "data = ('evspec.loader', 'evspec.loader.abi', 'evspec.loader.abi.perf_ids')  # the ABI's numbers\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('elftools', 'pyroute2', 'ctypes')\n"
        "         or (m.startswith('evspec.loader') and m not in data)\n"
        "         or m.startswith(('evspec.compiler.compile', 'evspec.compiler.listing'))]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/").stdout
    assert out.strip() == "[]"


def test_branch_sample_bits_are_named_as_perf_prints_them() -> None:
    """perf -vv names branch_sample_type bits by their UAPI names (PERF_SAMPLE_BRANCH_ANY_RETURN
    prints ANY_RETURN); the term value any_ret sets that bit."""
    from evspec.compiler import attr as A

    assert A.flag_names(A.BRANCH_SAMPLE_TYPES["any_ret"] | A.BRANCH_SAMPLE_TYPES["u"], A.BRANCH_SAMPLE_BITS) == (
        "USER|ANY_RETURN")
    assert A.parse_flag_names("ANY_CALL|ANY_RETURN", A.BRANCH_SAMPLE_BITS) == 0x30


def test_the_tables_of_bits_are_made_when_first_asked_for() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from evspec.compiler import attr as A\n"
        "print('evspec.loader.abi.perf_bits' in sys.modules)\n"
        "print(A.SAMPLE['IP'], A.READ_FORMAT['LOST'], A.ATTR_FIELDS.index('precise_ip'), 'evspec.loader.abi.perf_bits' in sys.modules)\n"
        "print(A.Attr.build({'type': 1, 'config': 9, 'disabled': 1}).to_json())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/").stdout
    assert out.splitlines() == ["False", "1 16 22 True", "{'type': 1, 'config': 9, 'disabled': 1}"]
    from evspec.compiler import attr as A

    with pytest.raises(AttributeError, match="no attribute 'NOT_A_TABLE'"):
        A.NOT_A_TABLE  # noqa: B018
