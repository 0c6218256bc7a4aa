"""Section names (SEC("...")) of perf's dialect and libbpf's, parsed into SectionSpec."""

from __future__ import annotations

from pathlib import Path

import pytest
from evspec.loader.object.spec import ProgType
from evspec.loader.sections.names import (
    AttachKind,
    NetHookTarget,
    ProbeTarget,
    RawTracepointTarget,
    SectionSpec,
    SectionStyle,
    TcDirection,
    TracepointTarget,
    XdpMode,
    describe_section,
    parse_perf_bool,
    parse_section,
)

from evspec.diagnostics import EvspecError, Severity
from evspec.span import Span

TARGET = "/opt/fixtures/target"  # the fixtures bake the absolute path of their target in


def probe(spec: SectionSpec) -> ProbeTarget:
    assert isinstance(spec.target, ProbeTarget)
    return spec.target


def tracepoint(spec: SectionSpec) -> TracepointTarget:
    assert isinstance(spec.target, TracepointTarget)
    return spec.target


def fails(name: str) -> tuple[str, str, str | None, str]:
    """(code, text under the span, perf_message, message) of the error of a malformed name."""
    with pytest.raises(EvspecError) as info:
        parse_section(name)
    d = info.value.diagnostics[0]
    assert d.severity is Severity.ERROR
    return d.code, d.span.text(name), d.perf_message, d.message


# --------------------------------------------------------------------------------------------
# the fixture sections (shared/corpus/bpf/*.c)


def test_up1_exec_setting_makes_a_uprobe() -> None:
    name = f"exec={TARGET};probe1=myfn1"
    s = parse_section(name)
    assert (s.style, s.program_type, s.attach) == (SectionStyle.PERF, ProgType.KPROBE, AttachKind.UPROBE)
    p = probe(s)
    assert (p.group, p.event, p.binary, p.module) == ("perf_bpf_probe", "probe1", TARGET, None)
    assert (p.point.function, p.point.file, p.point.line, p.point.offset, p.point.retprobe) == (
        "myfn1", None, None, None, False)
    assert p.probe_name == "perf_bpf_probe:probe1"
    assert [(st.key, st.value) for st in s.settings] == [("exec", TARGET)]
    st = s.settings[0]
    assert st.key_span.text(name) == "exec" and st.value_span.text(name) == TARGET
    assert s.main_span.text(name) == "probe1=myfn1"
    assert p.event_span is not None and p.event_span.text(name) == "probe1"
    assert p.point.span.text(name) == "myfn1"
    assert s.perf_compatible and s.perf_reason is None and s.warnings == ()


def test_up2_single_argument() -> None:
    name = f"exec={TARGET};probe2=myfn1 a"
    p = probe(parse_section(name))
    assert [(a.name, a.fetch, a.type) for a in p.args] == [(None, "a", None)]
    assert p.args[0].span.text(name) == "a"


def test_up3_glob_with_argument() -> None:
    p = probe(parse_section("probe3=myfn* a"))
    assert p.point.function == "myfn*" and p.point.is_glob
    assert [a.fetch for a in p.args] == ["a"]


def test_up4_glob_without_arguments() -> None:
    p = probe(parse_section(f"exec={TARGET};probe4=myfn*"))
    assert p.point.is_glob and p.args == ()


def test_up5_return_probe_event_gets_suffix() -> None:
    p = probe(parse_section("probe5=myfn1%return"))
    assert p.point.retprobe and p.point.function == "myfn1"
    assert p.event == "probe5" and p.event_name == "probe5__return"
    assert p.probe_name == "perf_bpf_probe:probe5__return"


def test_up6_relative_line() -> None:
    p = probe(parse_section("probe6=myfn1:1"))
    assert (p.point.function, p.point.file, p.point.line) == ("myfn1", None, 1)


def test_up7_main_part_without_equal_or_colon() -> None:
    name = f"exec={TARGET};myfn1"
    code, text, perf, _ = fails(name)
    assert (code, text, perf) == ("EB100", "myfn1", "Invalid config string")


def test_semi_booleans_are_settings() -> None:
    s = parse_section("inlines=no;force=yes;probe9=myfn2")
    assert (s.inlines, s.force) == (False, True)
    assert probe(s).binary is None and s.attach is AttachKind.KPROBE
    assert [x.key for x in s.settings] == ["inlines", "force"]


def test_noval_keyless_piece_only_warns() -> None:
    name = "novalue;probe10=myfn2"
    s = parse_section(name)
    assert probe(s).event == "probe10"
    (w,) = s.warnings
    assert w.code == "WB109" and w.severity is Severity.WARNING
    assert w.span == Span(0, 7) and w.span.text(name) == "novalue"
    assert w.perf_message == "WARNING: invalid config in BPF object: novalue"
    assert w.perf_help == "\tShould be 'key=value'."


def test_lazy_pattern_is_an_unknown_setting() -> None:
    name = f"exec={TARGET};probe11=myfn1;return*"
    code, text, perf, message = fails(name)
    assert (code, text) == ("EB104", "probe11")
    assert perf == "Invalid program config term in config string (add -v to see detail)"
    assert "probe11" in message
    with pytest.raises(EvspecError) as info:
        parse_section(name)
    d = info.value.diagnostics[0]
    assert any("exec=<full path of file>" in h for h in d.help)
    assert any("force=[yes|no]" in h for h in d.help)
    assert any("lazy pattern" in n for n in d.notes)


def test_grp_group_other_than_perf_bpf_probe() -> None:
    code, text, perf, _ = fails("mygroup:probe8=myfn1")
    assert (code, text, perf) == ("EB102", "mygroup", "Invalid group name")


@pytest.mark.parametrize(("event", "point", "fits"), [
    ("e" * 63, "myfn1", True),
    ("e" * 64, "myfn1", False),  # perf 6.1: "Argument list too long"
    ("e" * 55, "myfn1%return", True),  # e...__return: 63
    ("e" * 56, "myfn1%return", False),
])
def test_event_names_longer_than_tracefs_takes(event: str, point: str, fits: bool) -> None:
    name = f"exec=/bin/x;{event}={point}"
    if fits:
        assert len(probe(parse_section(name)).event_name or "") <= 63
        return
    code, text, perf, _ = fails(name)
    assert (code, text, perf) == ("EB101", event, "Argument list too long")
    with pytest.raises(EvspecError) as info:
        parse_section(name)
    d = info.value.diagnostics[0]
    assert d.message.startswith(f"event name '{event}")
    assert d.message.endswith("characters long; a probe event name has at most 63"
                              + (" (a return probe's name ends in '__return')" if "%return" in point else ""))
    assert d.help == ((f"shorten the event name to {63 - 8 if '%return' in point else 63} characters or fewer"),)


def test_explicit_perf_bpf_probe_group_is_fine() -> None:
    name = "perf_bpf_probe:probe8=myfn1"
    p = probe(parse_section(name))
    assert p.group == "perf_bpf_probe" and p.group_span is not None and p.group_span.text(name) == "perf_bpf_probe"


def test_kp_event_is_named_before_the_equal_sign() -> None:
    s = parse_section("func=do_sys_openat2")
    p = probe(s)
    assert (p.event, p.point.function, p.binary) == ("func", "do_sys_openat2", None)
    assert s.attach is AttachKind.KPROBE and s.program_type is ProgType.KPROBE


def test_kp2_libbpf_kprobe_is_understood_but_not_perf_compatible() -> None:
    s = parse_section("kprobe/do_sys_openat2")
    assert (s.style, s.program_type, s.attach) == (SectionStyle.LIBBPF, ProgType.KPROBE, AttachKind.KPROBE)
    assert probe(s).point.function == "do_sys_openat2" and probe(s).probe_name is None
    assert not s.perf_compatible
    assert s.perf_message == "Invalid config string"
    assert s.perf_reason is not None and "SYS:EVENT or EVENT=PROBE" in s.perf_reason


def test_lt_libbpf_tracepoint() -> None:
    name = "tracepoint/syscalls/sys_enter_write"
    s = parse_section(name)
    t = tracepoint(s)
    assert (t.system, t.event, t.load_only) == ("syscalls", "sys_enter_write", False)
    assert t.system_span.text(name) == "syscalls" and t.event_span.text(name) == "sys_enter_write"
    assert (s.program_type, s.attach, s.perf_compatible) == (ProgType.TRACEPOINT, AttachKind.TRACEPOINT, False)
    assert s.perf_message == "Invalid config string"


def test_badtp_is_a_syntactically_fine_tracepoint() -> None:
    name = "nosuchsys:nosuchevent"
    s = parse_section(name)
    t = tracepoint(s)
    assert (t.system, t.event) == ("nosuchsys", "nosuchevent")
    assert t.name == name and s.perf_compatible and s.attach is AttachKind.TRACEPOINT


def test_badsec_neither_tracepoint_nor_probe() -> None:
    code, text, perf, _ = fails("nocolon_noequal")
    assert (code, text, perf) == ("EB100", "nocolon_noequal", "Invalid config string")


def test_badkv_unknown_setting_key() -> None:
    code, text, perf, _ = fails("foo=bar;func=do_sys_openat2")
    assert (code, text) == ("EB104", "foo")
    assert perf is not None and perf.startswith("Invalid program config term in config string")


def test_tpbang_loads_without_an_event() -> None:
    name = "!raw_syscalls:sys_enter"
    s = parse_section(name)
    t = tracepoint(s)
    assert (t.system, t.event, t.load_only) == ("raw_syscalls", "sys_enter", True)
    assert t.system_span.text(name) == "raw_syscalls"
    assert s.attach is AttachKind.NONE and not s.creates_event
    assert s.program_type is ProgType.TRACEPOINT


def test_plain_tracepoint() -> None:
    s = parse_section("raw_syscalls:sys_exit")
    assert s.attach is AttachKind.TRACEPOINT and s.creates_event


# --------------------------------------------------------------------------------------------
# the seed's sections (perf commits)


def test_seed_func_write() -> None:
    p = probe(parse_section("func_write=sys_write"))
    assert (p.event, p.point.function) == ("func_write", "sys_write")


def test_seed_func_end_return() -> None:
    p = probe(parse_section("func_end=sys_nanosleep%return"))
    assert p.point.retprobe and p.event_name == "func_end__return"


def test_seed_inlines_glob_argument() -> None:
    name = "inlines=no;func=SyS_dup? oldfd"
    s = parse_section(name)
    p = probe(s)
    assert not s.inlines and p.point.function == "SyS_dup?" and p.point.is_glob
    assert [a.fetch for a in p.args] == ["oldfd"] and p.args[0].span.text(name) == "oldfd"


def test_seed_three_arguments() -> None:
    name = "func=null_lseek file->f_mode offset orig"
    p = probe(parse_section(name))
    assert [a.fetch for a in p.args] == ["file->f_mode", "offset", "orig"]
    assert [a.span.text(name) for a in p.args] == ["file->f_mode", "offset", "orig"]


def test_seed_exec_libc() -> None:
    s = parse_section("exec=/lib/libc.so.6;func=malloc")
    assert s.attach is AttachKind.UPROBE and probe(s).binary == "/lib/libc.so.6"


def test_seed_module() -> None:
    s = parse_section("module=ext4;probe=ext4_sync_file")
    p = probe(s)
    assert s.attach is AttachKind.KPROBE and (p.module, p.binary, p.event) == ("ext4", None, "probe")


# --------------------------------------------------------------------------------------------
# perf-probe points and arguments


@pytest.mark.parametrize(
    ("main", "function", "file", "line", "offset", "retprobe", "address"),
    [
        ("p=f+16", "f", None, None, 16, False, None),
        ("p=f+0x10", "f", None, None, 16, False, None),
        ("p=f@fs/open.c", "f", "fs/open.c", None, None, False, None),
        ("p=f@fs/open.c:12", "f", "fs/open.c", 12, None, False, None),
        ("p=f@open.c%return", "f", "open.c", None, None, True, None),
        ("p=target.c:10", None, "target.c", 10, None, False, None),  # a '.' before ':' -> file
        ("p=foo.isra.0", "foo.isra.0", None, None, None, False, None),  # no ':' -> function
        ("p=0x4005d0", None, None, None, None, False, 0x4005D0),
        ("p=ext4_*", "ext4_*", None, None, None, False, None),
        ("p=sys_[rw]*", "sys_[rw]*", None, None, None, False, None),
    ],
)
def test_probe_points(
    main: str, function: str | None, file: str | None, line: int | None, offset: int | None,
    retprobe: bool, address: int | None,
) -> None:
    pt = probe(parse_section(main)).point
    assert (pt.function, pt.file, pt.line, pt.offset, pt.retprobe, pt.address) == (
        function, file, line, offset, retprobe, address)
    assert pt.span == Span(2, len(main))


@pytest.mark.parametrize(
    ("arg", "name", "fetch", "type_"),
    [
        ("x", None, "x", None),
        ("x:u32", None, "x", "u32"),
        ("cnt=x", "cnt", "x", None),
        ("cnt=x->y.z[3]:s64", "cnt", "x->y.z[3]", "s64"),
        ("$params", None, "$params", None),
        ("$vars", None, "$vars", None),
        ("$stack2", None, "$stack2", None),
        ("%ax:x64", None, "%ax", "x64"),
        ("@jiffies", None, "@jiffies", None),
        ("@jiffies+8", None, "@jiffies+8", None),
        ("+8(%sp):u64", None, "+8(%sp)", "u64"),
        ("-8(+16(%di))", None, "-8(+16(%di))", None),
        ("s=name:string", "s", "name", "string"),
        ("b=flags:b4@8/32", "b", "flags", "b4@8/32"),
    ],
)
def test_probe_arguments(arg: str, name: str | None, fetch: str, type_: str | None) -> None:
    main = f"p=f {arg}"
    (a,) = probe(parse_section(main)).args
    assert (a.name, a.fetch, a.type) == (name, fetch, type_)
    assert a.span.text(main) == arg


def test_return_probe_may_fetch_retval_and_registers() -> None:
    p = probe(parse_section("p=f%return $retval %ax r=$retval:s32"))
    assert [a.fetch for a in p.args] == ["$retval", "%ax", "$retval"]


def test_blanks_between_arguments() -> None:
    p = probe(parse_section("p=f  a\tb "))
    assert [a.fetch for a in p.args] == ["a", "b"]


@pytest.mark.parametrize(
    ("name", "code", "text", "perf"),
    [
        ("p-1=f", "EB101", "p-1", "Invalid config string"),  # event name must be a C identifier
        ("1p=f", "EB101", "1", "Invalid config string"),
        ("g.x:p=f", "EB101", "g.x", "Invalid config string"),
        ("p=f%return x", "EB101", "x", "Invalid config string"),  # local variable at return
        ("p=f%return a->b", "EB101", "a->b", "Invalid config string"),
        ("p=", "EB101", "=", "Invalid config string"),  # nothing after '='
        ("p=f a b=", "EB101", "=", "Invalid config string"),
        ("p=f+", "EB101", "+", "Invalid config string"),
        ("p=f%ret", "EB101", "%ret", "Invalid config string"),
        ("p=f:x", "EB101", "x", "Invalid config string"),
        ("p=f a(", "EB101", "(", "Invalid config string"),
        ("myfn1 x=a", "EB103", "myfn1", "No event name found in config string"),
        ("myfn1 x=a:u8", "EB103", "myfn1", "No event name found in config string"),
        ("sys:a b", "EB106", " ", None),
        ("!:x", "EB106", ":", None),
        ("kprobe/", "EB107", "/", "Invalid config string"),
        ("tracepoint/syscalls", "EB107", "s", "Invalid config string"),
        ("uprobe/bin", "EB107", "n", "Invalid config string"),
        ("xdp/foo", "EB107", "/foo", "Invalid config string"),
        ("", "EB100", "", "Invalid config string"),
        ("exec=/x;", "EB100", "", "Invalid config string"),
        ("=x;p=f", "EB104", "", "Invalid program config term in config string (add -v to see detail)"),
        ("inlines=maybe;p=f", "EB105", "maybe", "Invalid argument"),
        ("force=true;p=f", "EB105", "true", "Invalid argument"),  # perf's strtobool rejects 'true'
        ("force=;p=f", "EB105", "force=", "Invalid argument"),
        ("exec=;p=f", "EB105", "exec=", None),
    ],
)
def test_malformed_sections(name: str, code: str, text: str, perf: str | None) -> None:
    got = fails(name)
    assert got[:3] == (code, text, perf), got


def test_error_spans_point_into_the_whole_section_string() -> None:
    name = "inlines=no;force=yes;p=f%return x"
    with pytest.raises(EvspecError) as info:
        parse_section(name)
    assert info.value.diagnostics[0].span == Span(len(name) - 1, len(name))


def test_warnings_before_an_error_are_kept_after_it() -> None:
    with pytest.raises(EvspecError) as info:
        parse_section("junk;nocolon")
    assert [d.code for d in info.value.diagnostics] == ["EB100", "WB109"]
    with pytest.raises(EvspecError) as info:
        parse_section("junk;foo=1;p=f")
    assert [d.code for d in info.value.diagnostics] == ["EB104", "WB109"]


# --------------------------------------------------------------------------------------------
# settings


@pytest.mark.parametrize(
    ("text", "value"),
    [("y", True), ("Y", True), ("yes", True), ("1", True), ("on", True), ("ON", True),
     ("n", False), ("N", False), ("no", False), ("0", False), ("off", False), ("oFf", False),
     ("true", None), ("false", None), ("o", None), ("", None), ("2", None), ("maybe", None)],
)
def test_perf_bool(text: str, value: bool | None) -> None:
    assert parse_perf_bool(text) is value


def test_defaults_and_resets() -> None:
    s = parse_section("p=f")
    assert (s.inlines, s.force) == (True, False)
    s = parse_section("inlines=off;inlines=on;p=f")  # the last setting counts
    assert s.inlines is True


def test_last_exec_or_module_wins_and_the_other_warns() -> None:
    name = "module=ext4;exec=/bin/true;p=f"
    s = parse_section(name)
    assert s.attach is AttachKind.UPROBE and probe(s).binary == "/bin/true" and probe(s).module is None
    (w,) = s.warnings
    assert w.code == "WB110" and w.span.text(name) == "module=ext4"
    s = parse_section("exec=/bin/true;module=ext4;p=f")
    assert s.attach is AttachKind.KPROBE and probe(s).module == "ext4"


def test_probe_settings_on_a_tracepoint_warn() -> None:
    name = "exec=/bin/true;force=yes;raw_syscalls:sys_enter"
    s = parse_section(name)
    assert s.attach is AttachKind.TRACEPOINT
    assert [(w.code, w.span.text(name)) for w in s.warnings] == [
        ("WB110", "exec=/bin/true"), ("WB110", "force=yes")]


def test_settings_are_split_at_every_semicolon_only() -> None:
    # '=' inside a value is part of the value
    s = parse_section("exec=/a=b;p=f")
    assert probe(s).binary == "/a=b"


# --------------------------------------------------------------------------------------------
# libbpf-style names


@pytest.mark.parametrize(
    ("name", "prog_type", "attach"),
    [
        ("tracepoint/sched/sched_switch", ProgType.TRACEPOINT, AttachKind.TRACEPOINT),
        ("tp/sched/sched_switch", ProgType.TRACEPOINT, AttachKind.TRACEPOINT),
        ("raw_tp/sched_switch", ProgType.RAW_TRACEPOINT, AttachKind.RAW_TRACEPOINT),
        ("raw_tracepoint/sched_switch", ProgType.RAW_TRACEPOINT, AttachKind.RAW_TRACEPOINT),
        ("kprobe/do_sys_openat2", ProgType.KPROBE, AttachKind.KPROBE),
        ("kprobe/do_sys_openat2+0x10", ProgType.KPROBE, AttachKind.KPROBE),
        ("kretprobe/do_sys_openat2", ProgType.KPROBE, AttachKind.KPROBE),
        ("uprobe//lib/libc.so.6:malloc", ProgType.KPROBE, AttachKind.UPROBE),
        ("uretprobe/./target:myfn1+4", ProgType.KPROBE, AttachKind.UPROBE),
        ("xdp", ProgType.XDP, AttachKind.XDP),
        ("tc", ProgType.SCHED_CLS, AttachKind.TC),
        ("classifier", ProgType.SCHED_CLS, AttachKind.TC),
        ("socket", ProgType.SOCKET_FILTER, AttachKind.SOCKET),
        ("perf_event", ProgType.PERF_EVENT, AttachKind.PERF_EVENT),
    ],
)
def test_libbpf_names(name: str, prog_type: ProgType, attach: AttachKind) -> None:
    s = parse_section(name)
    assert (s.style, s.program_type, s.attach) == (SectionStyle.LIBBPF, prog_type, attach)
    assert not s.perf_compatible and s.perf_reason


def test_libbpf_probe_details() -> None:
    p = probe(parse_section("kprobe/do_sys_openat2+0x10"))
    assert (p.point.function, p.point.offset, p.point.retprobe) == ("do_sys_openat2", 16, False)
    p = probe(parse_section("uretprobe/./target:myfn1+4"))
    assert (p.binary, p.point.function, p.point.offset, p.point.retprobe) == ("./target", "myfn1", 4, True)
    raw = parse_section("raw_tp/sched_switch").target
    assert isinstance(raw, RawTracepointTarget) and raw.event == "sched_switch"
    assert parse_section("socket").target is None


def test_libbpf_uprobe_reads_as_a_tracepoint_to_perf() -> None:
    s = parse_section("uprobe//lib/libc.so.6:malloc")
    assert s.perf_message == "Attach events in BPF object failed"
    assert s.perf_reason is not None and "'uprobe//lib/libc.so.6':'malloc'" in s.perf_reason


def test_a_system_named_like_a_libbpf_kind_is_a_tracepoint() -> None:
    s = parse_section("tc:foo")
    assert s.style is SectionStyle.PERF and tracepoint(s).system == "tc"


def test_settings_before_a_libbpf_name_warn() -> None:
    s = parse_section("force=yes;socket")
    assert [w.code for w in s.warnings] == ["WB110"]


# --------------------------------------------------------------------------------------------
# JSON for `evspec inspect`


def test_to_json_probe() -> None:
    j = parse_section(f"exec={TARGET};inlines=no;probe5=myfn1%return").to_json()
    assert j == {
        "section": f"exec={TARGET};inlines=no;probe5=myfn1%return",
        "style": "perf",
        "program_type": "kprobe",
        "attach": "uprobe",
        "perf_compatible": True,
        "settings": {"exec": TARGET, "inlines": "no"},
        "inlines": False,
        "force": False,
        "probe": {"group": "perf_bpf_probe", "event": "probe5__return", "function": "myfn1",
                  "binary": TARGET, "return": True},
    }


def test_to_json_tracepoint_and_libbpf() -> None:
    assert parse_section("!raw_syscalls:sys_enter").to_json() == {
        "section": "!raw_syscalls:sys_enter",
        "style": "perf",
        "program_type": "tracepoint",
        "attach": "none",
        "perf_compatible": True,
        "tracepoint": {"system": "raw_syscalls", "event": "sys_enter", "load_only": True},
    }
    j = parse_section("raw_tp/sched_switch").to_json()
    assert j["raw_tracepoint"] == "sched_switch" and j["perf_compatible"] is False and "perf_reason" in j
    j = parse_section("p=f* a x=b:u8").to_json()
    assert j["probe"] == {"group": "perf_bpf_probe", "event": "p", "function": "f*", "return": False,
                          "glob": True, "args": ["a", "x=b:u8"]}
    assert parse_section("novalue;p=f").to_json()["warnings"] == [
        "setting 'novalue' is not KEY=VALUE; perf ignores it"]


def test_describe_section_reports_errors_as_data() -> None:
    assert describe_section("nocolon_noequal")["error"] == {
        "code": "EB100",
        "message": "section main part 'nocolon_noequal' is neither SYS:EVENT nor EVENT=PROBE",
        "span": [0, 15],
        "perf_message": "Invalid config string",
    }
    assert describe_section("xdp")["attach"] == "xdp"


# --------------------------------------------------------------------------------------------
# network hooks: xdp and tc with evspec's dev= and mode= settings


def net(spec: SectionSpec) -> NetHookTarget:
    assert isinstance(spec.target, NetHookTarget)
    return spec.target


@pytest.mark.parametrize(
    ("name", "attach", "dev", "mode", "direction"),
    [
        ("xdp", AttachKind.XDP, None, None, None),
        ("dev=veth0;xdp", AttachKind.XDP, "veth0", None, None),
        ("dev=veth0;mode=skb;xdp", AttachKind.XDP, "veth0", XdpMode.SKB, None),
        ("mode=drv;dev=eth0.100;xdp", AttachKind.XDP, "eth0.100", XdpMode.DRV, None),
        ("tc", AttachKind.TC, None, None, TcDirection.INGRESS),
        ("classifier", AttachKind.TC, None, None, TcDirection.INGRESS),
        ("dev=lo;tc/ingress", AttachKind.TC, "lo", None, TcDirection.INGRESS),
        ("dev=lo;tc/egress", AttachKind.TC, "lo", None, TcDirection.EGRESS),
        ("dev=a;dev=br-lan_2;tc/egress", AttachKind.TC, "br-lan_2", None, TcDirection.EGRESS),
    ],
)
def test_network_hooks(
    name: str, attach: AttachKind, dev: str | None, mode: XdpMode | None, direction: TcDirection | None
) -> None:
    s = parse_section(name)
    target = net(s)
    assert (s.attach, target.dev, target.xdp_mode, target.direction) == (attach, dev, mode, direction)
    assert s.program_type is (ProgType.XDP if attach is AttachKind.XDP else ProgType.SCHED_CLS)
    assert not s.perf_compatible and s.perf_message == "Invalid config string"
    main = name.rsplit(";", 1)[-1]
    assert target.span.text(name) == main
    if dev is None:
        assert target.dev_span is None
    else:
        assert target.dev_span is not None and target.dev_span.text(name) == dev
        # the last dev= counts
        assert target.dev_span.start == name.rindex("dev=") + 4


def test_hook_names() -> None:
    assert [net(parse_section(n)).hook for n in ("xdp", "tc", "tc/egress")] == ["xdp", "tc ingress", "tc egress"]


def test_force_lets_xdp_replace_and_does_nothing_for_tc() -> None:
    assert parse_section("force=yes;dev=e;xdp").force is True
    assert parse_section("dev=e;xdp").force is False
    name = "force=yes;dev=e;tc"
    s = parse_section(name)
    assert s.force is False
    (w,) = s.warnings
    assert (w.code, w.span.text(name)) == ("WB110", "force=yes")
    assert "kprobes, uprobes and xdp programs" in w.message and "a tc program" in w.message


def test_settings_that_do_not_apply_to_network_hooks_warn() -> None:
    name = "exec=/bin/true;mode=skb;dev=a;dev=b;tc/egress"
    s = parse_section(name)
    assert [(w.code, w.span.text(name)) for w in s.warnings] == [
        ("WB110", "exec=/bin/true"), ("WB110", "mode=skb"), ("WB110", "dev=a")]
    assert "it applies to xdp programs, and this section is a tc program" in s.warnings[1].message
    assert "'dev=' later in the section replaces it" in s.warnings[2].message
    name = "mode=drv;mode=skb;xdp"
    (w,) = parse_section(name).warnings
    assert w.span.text(name) == "mode=drv"
    assert net(parse_section(name)).xdp_mode is XdpMode.SKB


@pytest.mark.parametrize(
    ("name", "code", "text", "message"),
    [
        ("dev=eth0;p=f", "EB104", "dev", "setting 'dev' applies only to xdp and tc programs, and this section is a kprobe"),
        ("exec=/bin/true;mode=skb;p=f", "EB104", "mode", "this section is a uprobe"),
        ("dev=eth0;raw_syscalls:sys_enter", "EB104", "dev", "this section is a tracepoint"),
        ("dev=eth0;socket", "EB104", "dev", "this section is a libbpf-style section"),
        ("mode=generic;xdp", "EB105", "generic", "'generic' is not an XDP mode"),
        ("dev=;xdp", "EB105", "dev=", "setting 'dev' needs a value"),
        ("mode=;xdp", "EB105", "mode=", "setting 'mode' needs a value"),
        ("dev=abcdefghijklmnop;xdp", "EB105", "abcdefghijklmnop", "longer than 15 characters"),
        ("dev=a/b;tc", "EB105", "a/b", "it contains '/'"),
        ("dev=a:1;tc", "EB105", "a:1", "it contains ':'"),
        ("dev=a b;tc", "EB105", "a b", "it contains ' '"),
        ("dev=..;tc", "EB105", "..", "'.' and '..' are not interface names"),
        ("dev=eth0;tc/sideways", "EB107", "sideways", "malformed libbpf-style section"),
        ("classifier/egress", "EB107", "/egress", "malformed libbpf-style section"),
    ],
)
def test_bad_network_settings(name: str, code: str, text: str, message: str) -> None:
    got_code, got_text, _, got_message = fails(name)
    assert (got_code, got_text) == (code, text)
    assert message in got_message


def test_settings_after_the_name_are_perfs_main_part() -> None:
    # perf's split: the last piece 'dev=eth0' is a kprobe 'dev' on 'eth0', 'xdp' a key-less setting
    s = parse_section("xdp;dev=eth0")
    assert s.attach is AttachKind.KPROBE and probe(s).event == "dev"
    assert [w.code for w in s.warnings] == ["WB109"]


def test_dev_on_other_sections_has_perfs_unknown_term_message() -> None:
    with pytest.raises(EvspecError) as info:
        parse_section("dev=eth0;p=f")
    d = info.value.diagnostics[0]
    assert d.perf_message == "Invalid program config term in config string (add -v to see detail)"
    assert d.help == ("remove 'dev=eth0;' from the section name",)


def test_unknown_setting_help_lists_the_network_settings() -> None:
    with pytest.raises(EvspecError) as info:
        parse_section("iface=eth0;xdp")
    d = info.value.diagnostics[0]
    assert d.code == "EB104" and d.span == Span(0, 5)
    assert any("dev=<network interface>" in h for h in d.help)
    assert any("mode=[skb|drv]" in h for h in d.help)


def test_to_json_network_hooks() -> None:
    j = parse_section("dev=veth0;mode=skb;force=yes;xdp").to_json()
    assert j["net"] == {"hook": "xdp", "dev": "veth0", "mode": "skb", "force": True}
    assert j["settings"] == {"dev": "veth0", "mode": "skb", "force": "yes"}
    assert parse_section("tc/egress").to_json()["net"] == {"hook": "tc egress"}


def test_section_grammar_cache_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evspec.loader.sections import names as section
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = section.grammar_cache_file()
    assert cache == str(tmp_path / "evspec" / "grammar" / "section.lark-cache")
    assert (tmp_path / "evspec" / "grammar").stat().st_mode & 0o777 == 0o700
    section._parser.cache_clear()
    try:
        section._parser()
        assert Path(cache).is_file()  # Lark wrote its tables there
        Path(cache).chmod(0o666)
        assert section.grammar_cache_file() is None  # others could have replaced the pickle
        (tmp_path / "evspec" / "grammar").chmod(0o777)
        Path(cache).chmod(0o600)
        assert section.grammar_cache_file() is None
    finally:
        section._parser.cache_clear()
