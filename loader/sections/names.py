"""Program section names (``SEC("...")``) parsed into a :class:`SectionSpec`.

Two dialects are understood:

* perf's (4.5 – 6.5): ``;``-separated settings ``exec=``, ``module=``, ``inlines=``, ``force=``
  followed by the main part, which is a tracepoint ``SYS:EVENT`` (``!SYS`` loads the program without
  creating an event) or a perf-probe definition ``[GROUP:]EVENT=POINT [ARG...]`` (a kprobe, or a
  uprobe with ``exec=``);
* libbpf's (an evspec extension): ``tracepoint/SYS/EVENT``, ``tp/...``, ``raw_tp/EVENT``,
  ``kprobe/FUNC[+OFF]``, ``uprobe/PATH:FUNC[+OFF]``, ``xdp``, ``tc``, ``fentry/FUNC``,
  ``lsm/HOOK``, ``iter/NAME``, ``cgroup/connect4``, ... (every name of libbpf 1.1's table,
  ``sections.libbpf``) — perf 6.1 cannot use them, which ``SectionSpec.perf_compatible`` records
  together with the reason. The probe and tracepoint kinds may name no target (``SEC("kprobe")``,
  ``SEC("usdt")``): libbpf loads such a program and attaches it only by hand, so evspec loads it
  and attaches nothing (``SectionSpec.note`` says so).

Network hooks (evspec's own settings, perf never had them): ``xdp``, ``tc`` (= ``tc/ingress``),
``tc/egress`` and ``classifier`` (= ``tc``) take perf-style settings in front of the name:
``dev=IFACE`` names the interface (else ``evspec record --dev``), ``mode=skb|drv`` the XDP mode
(generic or driver; without it the kernel picks driver mode where the driver has it), and
``force=yes`` lets an xdp program replace one somebody else attached. So ``dev=eth0;xdp``,
``dev=veth0;mode=skb;xdp``, ``dev=eth0;tc/egress``. The settings come first, as perf's do: perf
splits at every ``;`` and takes the last piece as the main part, so ``xdp;dev=eth0`` would be a
probe definition ``dev=eth0``. ``dev=`` and ``mode=`` on any other section are errors.

Diagnostics carry spans into the *section string*; whoever reports them against an event string
moves them (the object checker puts object errors on the path of the BPF event).
"""

from __future__ import annotations

import os
import re
from enum import Enum
from functools import lru_cache

from evspec.grammar.lalr import Tok
from evspec.loader.object.spec import ProgType, replace
from evspec.loader.sections.lalr import SectionSyntaxError, Tree, load_parser
from evspec.loader.sections.libbpf import find_section_def

from evspec.codes import bpfconfig as codes
from evspec.diagnostics import Diagnostic, EvspecError, error, warning
from evspec.span import Slotted, Span

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from lark import Lark

PERF_BPF_PROBE_GROUP = "perf_bpf_probe"
# perf-probe writes event names into a 64-byte buffer (MAX_EVENT_NAME_LEN) with their NUL, so at
# most 63 characters; a longer one fails in perf 6.1 with E2BIG's text
MAX_EVENT_NAME = 63
EVENT_NAME_TOO_LONG_MESSAGE = "Argument list too long"
ADD_V_HELP = "(add -v to see detail)"

# perf's table of program settings: key -> usage and description (printed by perf with -v)
SETTING_USAGE: dict[str, tuple[str, str]] = {
    "exec": ("exec=<full path of file>", "Set uprobe target"),
    "module": ("module=<module name>", "Set kprobe module"),
    "inlines": ("inlines=[yes|no]", "Probe at inline symbol"),
    "force": ("force=[yes|no]", "Forcibly add events with existing name"),
}
# evspec's settings of network hooks (xdp, tc); perf does not know them
NET_SETTING_USAGE: dict[str, tuple[str, str]] = {
    "dev": ("dev=<network interface>", "Set the interface of an xdp or tc program"),
    "mode": ("mode=[skb|drv]", "Set the XDP mode: generic (skb) or driver (drv)"),
}
VALID_SETTINGS_HELP: tuple[str, ...] = tuple(
    f"valid settings: {usage} ({desc.lower()})"
    for usage, desc in (*SETTING_USAGE.values(), *NET_SETTING_USAGE.values())
)
IFNAMSIZ = 16  # the kernel's interface-name buffer, NUL included

_C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_GLOB_CHARS = frozenset("*?[")


class SectionStyle(str, Enum):
    PERF = "perf"
    LIBBPF = "libbpf"


class AttachKind(str, Enum):
    """How a program of this section is attached."""

    TRACEPOINT = "tracepoint"
    RAW_TRACEPOINT = "raw_tracepoint"
    BTF_TRACEPOINT = "btf_tracepoint"  # libbpf's tp_btf/: a raw tracepoint typed by the kernel's BTF
    KPROBE = "kprobe"
    UPROBE = "uprobe"
    XDP = "xdp"
    TC = "tc"
    SOCKET = "socket"
    PERF_EVENT = "perf_event"
    TRAMPOLINE = "trampoline"  # fentry/fexit/fmod_ret/lsm: a BPF trampoline on a kernel function or LSM hook
    ITERATOR = "iterator"  # iter/NAME: run by reading a BPF iterator
    USDT = "usdt"
    KSYSCALL = "ksyscall"
    KPROBE_MULTI = "kprobe_multi"
    CGROUP = "cgroup"  # cgroup_skb/, cgroup/, sockops, lsm_cgroup/: attached to a cgroup
    SOCKMAP = "sockmap"  # sk_skb, sk_msg: run for the sockets of a sockmap or sockhash
    NETNS = "netns"  # sk_lookup, flow_dissector: attached to a network namespace
    SK_REUSEPORT = "sk_reuseport"
    LWT = "lwt"  # lwt_*: set on a route
    LIRC = "lirc"
    TC_ACTION = "tc_action"
    XDP_MAP = "xdp_map"  # xdp/devmap, xdp/cpumap: run for the entries of a devmap or cpumap
    SYSCALL = "syscall"  # run with BPF_PROG_TEST_RUN
    STRUCT_OPS = "struct_ops"
    FREPLACE = "freplace"
    UPROBE_MULTI = "uprobe_multi"  # uprobe.multi/, uprobe.session/: a uprobe_multi link
    TRACING_MULTI = "tracing_multi"  # fentry.multi/, fexit.multi/, fsession.multi/
    TCX = "tcx"  # tcx/ingress, tcx/egress: a tcx link on an interface
    NETKIT = "netkit"  # netkit/primary, netkit/peer: a netkit device's link
    NETFILTER = "netfilter"  # a netfilter hook (link with protocol family and hook number)
    NONE = "none"  # loaded but not attached (perf's '!SYS:EVENT', libbpf's '?' and target-less sections)


NET_HOOKS = frozenset({AttachKind.XDP, AttachKind.TC})
#: what `evspec record` attaches (loader/attach.py's KIND_ATTACHERS, tracepoints, load-only);
#: `evspec check` refuses programs of the other kinds, since record would
RECORD_ATTACH_KINDS = frozenset(
    {AttachKind.TRACEPOINT, AttachKind.NONE, AttachKind.KPROBE, AttachKind.UPROBE, AttachKind.RAW_TRACEPOINT,
     AttachKind.BTF_TRACEPOINT, AttachKind.TRAMPOLINE, AttachKind.PERF_EVENT, *NET_HOOKS}
)


class XdpMode(str, Enum):
    """``mode=``: generic XDP (on the skb, any interface) or the driver's native XDP."""

    SKB = "skb"
    DRV = "drv"


class TcDirection(str, Enum):
    INGRESS = "ingress"
    EGRESS = "egress"


class Setting(Slotted):
    """One ``KEY=VALUE`` piece before the main part; ``span`` covers the whole piece."""

    key: str
    value: str
    span: Span
    key_span: Span
    value_span: Span


class TracepointTarget(Slotted):
    system: str
    event: str
    load_only: bool  # perf's '!SYS': the program is loaded, no event is created
    span: Span
    system_span: Span
    event_span: Span

    @property
    def name(self) -> str:
        return f"{self.system}:{self.event}"


class RawTracepointTarget(Slotted):
    event: str
    span: Span


class ProbePoint(Slotted):
    """Where a kprobe/uprobe goes: ``FUNC[@SRC][+OFF|%return|:LINE]``, ``SRC:LINE`` or ``0xADDR``."""

    function: str | None
    file: str | None
    line: int | None
    offset: int | None
    retprobe: bool
    address: int | None
    span: Span

    @property
    def is_glob(self) -> bool:
        return self.function is not None and any(c in _GLOB_CHARS for c in self.function)


class ProbeArg(Slotted):
    """A perf-probe fetch argument ``[NAME=]FETCH[:TYPE]``; ``fetch`` is kept as written."""

    name: str | None
    fetch: str
    type: str | None
    span: Span

    @property
    def is_local_variable(self) -> bool:
        return _C_IDENT.match(self.fetch.split("->")[0].split(".")[0].split("[")[0]) is not None


class ProbeTarget(Slotted):
    """A kprobe or uprobe. For perf-style sections ``group``/``event`` name the tracefs event perf
    creates; libbpf-style probes have none (libbpf attaches through the kprobe/uprobe PMU)."""

    group: str | None
    event: str | None
    point: ProbePoint
    args: tuple[ProbeArg, ...]
    binary: str | None  # uprobe target (perf's exec=, libbpf's PATH)
    module: str | None  # kprobe module (perf's module=)
    span: Span
    group_span: Span | None = None
    event_span: Span | None = None

    @property
    def is_uprobe(self) -> bool:
        return self.binary is not None

    @property
    def event_name(self) -> str | None:
        """The tracefs event perf creates (``EVENT__return`` for a return probe)."""
        if self.event is None:
            return None
        return f"{self.event}__return" if self.point.retprobe else self.event

    @property
    def probe_name(self) -> str | None:
        """``GROUP:EVENT`` as it appears in tracefs (the first one, for a glob)."""
        if self.event_name is None:
            return None
        return f"{self.group or PERF_BPF_PROBE_GROUP}:{self.event_name}"


class NetHookTarget(Slotted):
    """Where an xdp or tc program goes: the interface (None: the command line's ``--dev``), the
    XDP mode (None: the kernel's choice) or the tc direction."""

    dev: str | None
    xdp_mode: XdpMode | None  # xdp only
    direction: TcDirection | None  # tc only
    span: Span  # the main part
    dev_span: Span | None = None  # the value of the dev= setting that counts

    @property
    def hook(self) -> str:
        """``xdp``, ``tc ingress`` or ``tc egress``."""
        return "xdp" if self.direction is None else f"tc {self.direction.value}"


class BtfTarget(Slotted):
    """What a BTF-typed section names (``fentry/FUNC``, ``lsm/HOOK``, ``iter/NAME``): a kernel
    function, LSM hook or iterator, looked up in the kernel's BTF when the program is loaded."""

    kind: str  # the section's kind: fentry, fexit.s, lsm, iter, ...
    name: str
    span: Span


Target = TracepointTarget | RawTracepointTarget | ProbeTarget | NetHookTarget | BtfTarget


class SectionSpec(Slotted):
    name: str  # the whole section string
    style: SectionStyle
    program_type: ProgType
    attach: AttachKind
    target: Target | None  # None for socket, perf_event
    main_span: Span
    settings: tuple[Setting, ...] = ()
    inlines: bool = True
    force: bool = False
    perf_compatible: bool = True
    perf_reason: str | None = None  # why perf 6.1 cannot use it
    perf_message: str | None = None  # what perf 6.1 prints for it
    warnings: tuple[Diagnostic, ...] = ()
    # libbpf's SEC("?...") autoload-off convention: the object leaves the program off; evspec
    # loads it (so the verifier checks it) and attaches nothing (attach is NONE)
    autoload: bool = True
    # why a program is loaded and not attached, when the section names no target (SEC("kprobe"))
    note: str | None = None

    @property
    def creates_event(self) -> bool:
        """Whether perf creates an evsel for this program (not for '!SYS' tracepoints)."""
        return self.attach is not AttachKind.NONE

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "section": self.name,
            "style": self.style.value,
            "program_type": self.program_type.name.lower(),
            "attach": self.attach.value,
            "perf_compatible": self.perf_compatible,
        }
        if not self.autoload:
            out["autoload"] = False
        if self.note is not None:
            out["note"] = self.note
        if self.perf_reason is not None:
            out["perf_reason"] = self.perf_reason
        if self.settings:
            out["settings"] = {s.key: s.value for s in self.settings}
        if self.style is SectionStyle.PERF and isinstance(self.target, ProbeTarget):
            out["inlines"] = self.inlines
            out["force"] = self.force
        target = self.target
        if isinstance(target, TracepointTarget):
            out["tracepoint"] = {"system": target.system, "event": target.event, "load_only": target.load_only}
        elif isinstance(target, RawTracepointTarget):
            out["raw_tracepoint"] = target.event
        elif isinstance(target, BtfTarget):
            out["btf_target"] = {"kind": target.kind, "name": target.name}
        elif isinstance(target, NetHookTarget):
            net: dict[str, object] = {"hook": target.hook}
            if target.dev is not None:
                net["dev"] = target.dev
            if target.xdp_mode is not None:
                net["mode"] = target.xdp_mode.value
            if target.direction is None:
                net["force"] = self.force
            out["net"] = net
        elif isinstance(target, ProbeTarget):
            point = target.point
            probe: dict[str, object] = {}
            if target.event is not None:
                probe["group"] = target.group
                probe["event"] = target.event_name
            for key, value in (
                ("function", point.function),
                ("file", point.file),
                ("line", point.line),
                ("offset", point.offset),
                ("address", point.address),
                ("binary", target.binary),
                ("module", target.module),
            ):
                if value is not None:
                    probe[key] = value
            probe["return"] = point.retprobe
            if point.is_glob:
                probe["glob"] = True
            if target.args:
                probe["args"] = [_arg_text(a) for a in target.args]
            out["probe"] = probe
        if self.warnings:
            out["warnings"] = [w.message for w in self.warnings]
        return out


def describe_section(name: str) -> dict[str, object]:
    """``parse_section(name).to_json()``, or the error as data (for ``evspec inspect``)."""
    try:
        return parse_section(name).to_json()
    except EvspecError as exc:
        first = exc.diagnostics[0]
        return {
            "section": name,
            "error": {
                "code": first.code,
                "message": first.message,
                "span": [first.span.start, first.span.end],
                "perf_message": first.perf_message,
            },
        }


# ---------------------------------------------------------------------------------------------
# parsing


def parse_section(name: str) -> SectionSpec:
    """Parse a program section name; raises EvspecError (spans into ``name``) if it is malformed.

    Key-less setting pieces only warn (as perf does); they are in ``SectionSpec.warnings``.
    """
    pieces = _split_pieces(name)
    warnings: list[Diagnostic] = []
    settings: list[Setting] = []
    main_text, main_start = pieces[-1]
    autoload = not (main_text.startswith("?") and _libbpf_kind(main_text[1:]) is not None)
    if not autoload:  # SEC("?tp/...") is the section tp/... with autoload off: spans stay in name
        main_text, main_start = main_text[1:], main_start + 1
    main_span = Span(main_start, main_start + len(main_text))
    try:
        for text, start in pieces[:-1]:
            setting = _parse_setting(text, start, warnings)
            if setting is not None:
                settings.append(setting)
        spec = _parse_main(name, main_text, main_start, main_span, tuple(settings))
        _refuse_net_settings(spec)
    except EvspecError as exc:
        raise EvspecError((*exc.diagnostics, *warnings)) from None
    extra = _ineffective_settings(spec)
    all_warnings = (*warnings, *extra)
    if not autoload:
        spec = replace(spec, attach=AttachKind.NONE, autoload=False)
    return replace(spec, warnings=all_warnings) if all_warnings else spec


def _split_pieces(name: str) -> list[tuple[str, int]]:
    """perf splits at every ';' (so perf-probe lazy patterns ``FUNC;PATTERN`` cannot be used)."""
    out: list[tuple[str, int]] = []
    start = 0
    for i, ch in enumerate(name):
        if ch == ";":
            out.append((name[start:i], start))
            start = i + 1
    out.append((name[start:], start))
    return out


def _parse_setting(text: str, start: int, warnings: list[Diagnostic]) -> Setting | None:
    span = Span(start, start + len(text))
    if "=" not in text:
        warnings.append(
            warning(
                codes.KEYLESS_SETTING,
                f"setting '{text}' is not KEY=VALUE; perf ignores it",
                span,
                help=("write the setting as KEY=VALUE, or remove it",),
                perf_message=f"WARNING: invalid config in BPF object: {text}",
                perf_help="\tShould be 'key=value'.",
            )
        )
        return None
    key, value = text.split("=", 1)
    key_span = Span(start, start + len(key))
    value_span = Span(key_span.end + 1, span.end)
    if key in NET_SETTING_USAGE:
        _check_net_setting(key, value, span, value_span)
        return Setting(key, value, span, key_span, value_span)
    if key not in SETTING_USAGE:
        raise EvspecError(
            error(
                codes.UNKNOWN_SETTING,
                f"unknown program setting '{key}'",
                key_span,
                help=VALID_SETTINGS_HELP,
                notes=(
                    "perf splits a section name at every ';': every piece before the last one is a "
                    "KEY=VALUE setting, so a perf-probe lazy pattern (FUNC;PATTERN) cannot be "
                    "written in a section name",
                ),
                perf_message="Invalid program config term in config string " + ADD_V_HELP,
                perf_help=ADD_V_HELP,
            )
        )
    if key in ("inlines", "force"):
        if parse_perf_bool(value) is None:
            raise EvspecError(
                error(
                    codes.BAD_SETTING_VALUE,
                    f"'{value}' is not a boolean for setting '{key}'",
                    value_span if value else span,
                    help=(f"write {key}=yes or {key}=no (perf also takes y, n, 1, 0, on, off)",),
                    perf_message="Invalid argument",
                    perf_help=ADD_V_HELP,
                )
            )
    elif not value:
        raise EvspecError(
            error(
                codes.BAD_SETTING_VALUE,
                f"setting '{key}' needs a value",
                span,
                help=(f"write {SETTING_USAGE[key][0]}",),
            )
        )
    return Setting(key, value, span, key_span, value_span)


def _check_net_setting(key: str, value: str, span: Span, value_span: Span) -> None:
    usage = NET_SETTING_USAGE[key][0]
    if not value:
        raise EvspecError(error(codes.BAD_SETTING_VALUE, f"setting '{key}' needs a value", span, help=(f"write {usage}",)))
    if key == "mode":
        if value not in XdpMode._value2member_map_:
            raise EvspecError(
                error(
                    codes.BAD_SETTING_VALUE,
                    f"'{value}' is not an XDP mode",
                    value_span,
                    help=("write mode=skb (generic XDP, any interface) or mode=drv (the driver's own XDP)",),
                )
            )
        return
    why = _bad_interface_name(value)
    if why is not None:
        raise EvspecError(
            error(
                codes.BAD_SETTING_VALUE,
                f"'{value}' is not a network interface name: {why}",
                value_span,
                help=("see the interfaces with `ip link`",),
            )
        )


def _bad_interface_name(name: str) -> str | None:
    """Why the kernel would refuse ``name`` as an interface name (its dev_valid_name rules)."""
    if len(name) >= IFNAMSIZ:
        return f"it is longer than {IFNAMSIZ - 1} characters"
    if name in (".", ".."):
        return "'.' and '..' are not interface names"
    bad = next((c for c in name if c in "/:" or c.isspace()), None)
    if bad is not None:
        return f"it contains {bad!r}"
    return None


def _refuse_net_settings(spec: SectionSpec) -> None:
    """``dev=`` and ``mode=`` belong to xdp and tc sections (``mode=`` to xdp only: a warning)."""
    if spec.attach in NET_HOOKS:
        return
    for s in spec.settings:
        if s.key in NET_SETTING_USAGE:
            raise EvspecError(
                error(
                    codes.UNKNOWN_SETTING,
                    f"setting '{s.key}' applies only to xdp and tc programs, and this section is "
                    f"{_section_kind(spec)}",
                    s.key_span,
                    help=(f"remove '{s.key}={s.value};' from the section name",),
                    perf_message="Invalid program config term in config string " + ADD_V_HELP,
                    perf_help=ADD_V_HELP,
                )
            )


def _section_kind(spec: SectionSpec) -> str:
    if isinstance(spec.target, ProbeTarget):
        return "a uprobe" if spec.target.is_uprobe else "a kprobe"
    if spec.style is SectionStyle.LIBBPF:
        return "a libbpf-style section"
    return "a tracepoint"


def parse_perf_bool(text: str) -> bool | None:
    """perf's strtobool: decided by the first character(s): y/Y/1 true, n/N/0 false, on/off."""
    if not text:
        return None
    c = text[0]
    if c in "yY1":
        return True
    if c in "nN0":
        return False
    if c in "oO" and len(text) > 1:
        if text[1] in "nN":
            return True
        if text[1] in "fF":
            return False
    return None


def _bool_setting(settings: tuple[Setting, ...], key: str, default: bool) -> bool:
    value = default
    for s in settings:
        if s.key == key:
            parsed = parse_perf_bool(s.value)
            assert parsed is not None  # validated in _parse_setting
            value = parsed
    return value


def _probe_target_setting(settings: tuple[Setting, ...]) -> tuple[str | None, str | None]:
    """(exec binary, module): the last exec=/module= wins, as in perf."""
    binary: str | None = None
    module: str | None = None
    for s in settings:
        if s.key == "exec":
            binary, module = s.value, None
        elif s.key == "module":
            binary, module = None, s.value
    return binary, module


def _ineffective_settings(spec: SectionSpec) -> tuple[Diagnostic, ...]:
    out: list[Diagnostic] = []
    is_perf_probe = spec.style is SectionStyle.PERF and isinstance(spec.target, ProbeTarget)
    is_net = spec.attach in NET_HOOKS
    replaced_by_later = {"exec": "target", "module": "target", "dev": "dev", "mode": "mode"}
    last: dict[str, Setting] = {}
    for s in spec.settings:
        slot = replaced_by_later.get(s.key)
        if slot is None:
            continue
        earlier = last.get(slot)
        if earlier is not None and (is_perf_probe or is_net) and _applies(earlier, spec):
            out.append(_no_effect(earlier, f"'{s.key}=' later in the section replaces it"))
        last[slot] = s
    for s in spec.settings:
        if _applies(s, spec):
            continue
        if is_net:
            hook = "an xdp program" if spec.attach is AttachKind.XDP else "a tc program"
            where = {"mode": "xdp programs", "force": "kprobes, uprobes and xdp programs"}.get(s.key, "kprobes and uprobes")
            out.append(_no_effect(s, f"it applies to {where}, and this section is {hook}"))
        else:
            what = "a libbpf-style section" if spec.style is SectionStyle.LIBBPF else "a tracepoint"
            out.append(_no_effect(s, f"it applies to kprobes and uprobes, and this section is {what}"))
    return tuple(sorted(out, key=lambda d: d.span.start))


def _applies(setting: Setting, spec: SectionSpec) -> bool:
    if spec.style is SectionStyle.PERF and isinstance(spec.target, ProbeTarget):
        return True
    if spec.attach is AttachKind.XDP:
        return setting.key in ("dev", "mode", "force")
    if spec.attach is AttachKind.TC:
        return setting.key == "dev"
    return False


def _no_effect(setting: Setting, why: str) -> Diagnostic:
    return warning(codes.SETTING_NO_EFFECT, f"setting '{setting.key}={setting.value}' has no effect: {why}", setting.span)


# ---------------------------------------------------------------------------------------------
# the main part


# libbpf's section names (the kinds of section.lark's libbpf rule, and libbpf's exact names) -> how
# record attaches a program of that kind; program types come from libbpf's table (sections.libbpf)
LIBBPF_KINDS: dict[str, AttachKind] = {
    **dict.fromkeys(("tracepoint", "tp", "tracepoint.s", "tp.s"), AttachKind.TRACEPOINT),
    **dict.fromkeys(("raw_tracepoint", "raw_tp", "raw_tracepoint.w", "raw_tp.w", "raw_tracepoint.s", "raw_tp.s"),
                    AttachKind.RAW_TRACEPOINT),
    "tp_btf": AttachKind.BTF_TRACEPOINT,
    "tp_btf.s": AttachKind.BTF_TRACEPOINT,
    "kprobe": AttachKind.KPROBE,
    "kretprobe": AttachKind.KPROBE,
    "uprobe": AttachKind.UPROBE,
    "uretprobe": AttachKind.UPROBE,
    "uprobe.s": AttachKind.UPROBE,
    "uretprobe.s": AttachKind.UPROBE,
    "usdt": AttachKind.USDT,
    "usdt.s": AttachKind.USDT,
    "ksyscall": AttachKind.KSYSCALL,
    "kretsyscall": AttachKind.KSYSCALL,
    "kprobe.multi": AttachKind.KPROBE_MULTI,
    "kretprobe.multi": AttachKind.KPROBE_MULTI,
    "kprobe.session": AttachKind.KPROBE_MULTI,
    **dict.fromkeys(("uprobe.multi", "uretprobe.multi", "uprobe.session", "uprobe.multi.s", "uretprobe.multi.s",
                     "uprobe.session.s"), AttachKind.UPROBE_MULTI),
    **dict.fromkeys(("fentry", "fexit", "fmod_ret", "fentry.s", "fexit.s", "fmod_ret.s", "lsm", "lsm.s",
                     "fsession", "fsession.s"), AttachKind.TRAMPOLINE),
    **dict.fromkeys(("fentry.multi", "fexit.multi", "fsession.multi", "fentry.multi.s", "fexit.multi.s",
                     "fsession.multi.s"), AttachKind.TRACING_MULTI),
    "lsm_cgroup": AttachKind.CGROUP,
    "iter": AttachKind.ITERATOR,
    "iter.s": AttachKind.ITERATOR,
    "freplace": AttachKind.FREPLACE,
    "struct_ops": AttachKind.STRUCT_OPS,
    "struct_ops.s": AttachKind.STRUCT_OPS,
    **dict.fromkeys(("tcx/ingress", "tcx/egress"), AttachKind.TCX),
    **dict.fromkeys(("netkit/primary", "netkit/peer"), AttachKind.NETKIT),
    "netfilter": AttachKind.NETFILTER,
    "xdp": AttachKind.XDP,
    "xdp.frags": AttachKind.XDP,
    **dict.fromkeys(("xdp/devmap", "xdp/cpumap", "xdp.frags/devmap", "xdp.frags/cpumap"), AttachKind.XDP_MAP),
    "tc": AttachKind.TC,
    "classifier": AttachKind.TC,
    "action": AttachKind.TC_ACTION,
    "socket": AttachKind.SOCKET,
    "sk_reuseport": AttachKind.SK_REUSEPORT,
    "sk_reuseport/migrate": AttachKind.SK_REUSEPORT,
    **dict.fromkeys(("sk_skb", "sk_skb/stream_parser", "sk_skb/stream_verdict", "sk_skb/verdict", "sk_msg"),
                    AttachKind.SOCKMAP),
    "sk_lookup": AttachKind.NETNS,
    "flow_dissector": AttachKind.NETNS,
    "lirc_mode2": AttachKind.LIRC,
    **dict.fromkeys(("lwt_in", "lwt_out", "lwt_xmit", "lwt_seg6local"), AttachKind.LWT),
    "sockops": AttachKind.CGROUP,
    **dict.fromkeys(
        ("cgroup_skb/ingress", "cgroup_skb/egress", "cgroup/skb", "cgroup/sock_create", "cgroup/sock_release",
         "cgroup/sock", "cgroup/post_bind4", "cgroup/post_bind6", "cgroup/bind4", "cgroup/bind6",
         "cgroup/connect4", "cgroup/connect6", "cgroup/sendmsg4", "cgroup/sendmsg6", "cgroup/recvmsg4",
         "cgroup/recvmsg6", "cgroup/getpeername4", "cgroup/getpeername6", "cgroup/getsockname4",
         "cgroup/getsockname6", "cgroup/sysctl", "cgroup/getsockopt", "cgroup/setsockopt", "cgroup/dev",
         "cgroup/connect_unix", "cgroup/sendmsg_unix", "cgroup/recvmsg_unix", "cgroup/getpeername_unix",
         "cgroup/getsockname_unix"),
        AttachKind.CGROUP),
    "syscall": AttachKind.SYSCALL,
    "perf_event": AttachKind.PERF_EVENT,
}
# the heads of libbpf's exact names with a '/': 'cgroup/nosuch' is a malformed libbpf section
_LIBBPF_HEADS = frozenset(name.split("/", 1)[0] for name in LIBBPF_KINDS if "/" in name)
# kinds whose target names a kernel BTF type: libbpf cannot load them without one
_BTF_KINDS = frozenset({"tp_btf", "tp_btf.s", "fentry", "fexit", "fmod_ret", "fentry.s", "fexit.s", "fmod_ret.s",
                        "fsession", "fsession.s", "lsm", "lsm.s", "lsm_cgroup", "iter", "iter.s", "freplace"})
_BTF_WHAT = {"lsm": "LSM hook", "lsm.s": "LSM hook", "lsm_cgroup": "LSM hook", "iter": "iterator",
             "iter.s": "iterator", "tp_btf": "BTF tracepoint", "tp_btf.s": "BTF tracepoint", "freplace": "function"}


def _libbpf_kind(main: str) -> str | None:
    if main in LIBBPF_KINDS:
        return main
    head = main.split("/", 1)[0]
    return head if head in LIBBPF_KINDS or head in _LIBBPF_HEADS else None


def _libbpf_program_type(main: str) -> ProgType:
    """libbpf's program type for ``main`` (``tc/ingress``, ``tc/egress``: evspec's, SCHED_CLS)."""
    found = find_section_def(main)
    return found.prog_type if found is not None else ProgType.SCHED_CLS


def _parse_main(
    name: str, main: str, start: int, main_span: Span, settings: tuple[Setting, ...]
) -> SectionSpec:
    # perf's own decision: '=' anywhere in the main part makes it a probe definition
    if "=" in main:
        return _parse_probe(name, main, start, main_span, settings)
    kind = _libbpf_kind(main)
    if kind is not None:
        return _parse_libbpf(name, main, start, main_span, settings, kind)
    if ":" in main:
        return _parse_tracepoint(name, main, start, main_span, settings)
    raise EvspecError(
        error(
            codes.SECTION_NOT_TP_OR_PROBE,
            f"section main part '{main}' is neither SYS:EVENT nor EVENT=PROBE"
            if main
            else "section has no main part (SYS:EVENT or EVENT=PROBE) after its settings",
            main_span,
            help=(
                "a tracepoint program: SEC(\"SYS:EVENT\"), e.g. SEC(\"raw_syscalls:sys_enter\")",
                "a kprobe/uprobe program: SEC(\"EVENT=FUNC\"), with SEC(\"exec=/path/bin;EVENT=FUNC\") "
                "for a uprobe",
            ),
            perf_message="Invalid config string",
            perf_help=ADD_V_HELP,
        )
    )


def grammar_cache_file() -> str | None:
    """Where Lark may keep the section grammar's built tables between runs, for ``_parser`` (the
    tests' oracle; section names are parsed without Lark): a file in the user's own evspec cache
    (``~/.cache/evspec/grammar``, 0700, checked like the compile cache, since Lark unpickles it);
    None when no safe place exists. Lark itself rebuilds a cache whose grammar, options or Lark
    version differ."""
    from evspec.loader import user_cache

    directory = user_cache.private_dir("grammar")
    if directory is None:
        return None
    path = os.path.join(directory, "section.lark-cache")
    return path if not os.path.lexists(path) or user_cache.usable_file(path) else None


@lru_cache(maxsize=1)
def _parser() -> Lark:
    """The grammar under Lark itself, configured as ``sections.tablegen`` dumps it: the oracle the
    table-driven parser (``sections.lalr``) is tested against."""
    from importlib.resources import files

    from lark import Lark

    text = (files("evspec.grammar") / "section.lark").read_text(encoding="utf-8")
    options: dict[str, object] = {}
    cache = grammar_cache_file()
    if cache is not None:
        options["cache"] = cache
    return Lark(
        text,
        parser="lalr",
        lexer="contextual",
        start=["probe", "tracepoint", "libbpf"],
        propagate_positions=True,
        maybe_placeholders=False,
        **options,
    )


def _parse_tree(main: str, start_rule: str, offset: int, code: str, what: str, perf: str | None) -> Tree:
    """The parse tree of ``main`` (over the committed tables, ``sections.lalr``), or the error."""
    try:
        return load_parser().parse(main, start_rule)
    except SectionSyntaxError as exc:
        if exc.token is not None:
            tok = exc.token
            span = Span(tok.start_pos, tok.end_pos)
            found = f"unexpected '{tok.value}'"
        elif not exc.at_end:
            span = Span(exc.pos, exc.pos + 1)
            found = f"unexpected character '{main[exc.pos]}'"
        else:
            span = Span(max(len(main) - 1, 0), len(main))
            found = "unexpected end"
        raise EvspecError(
            error(
                code,
                f"malformed {what} '{main}': {found}",
                span.shift(offset),
                perf_message=perf,
                perf_help=ADD_V_HELP if perf else None,
            )
        ) from None


def _tok_span(tok: Tok, offset: int) -> Span:
    assert tok.start_pos is not None and tok.end_pos is not None
    return Span(tok.start_pos + offset, tok.end_pos + offset)


def _tree_span(tree: Tree, offset: int) -> Span:
    return Span(tree.meta.start_pos + offset, tree.meta.end_pos + offset)


def _parse_tracepoint(
    name: str, main: str, start: int, main_span: Span, settings: tuple[Setting, ...]
) -> SectionSpec:
    tree = _parse_tree(main, "tracepoint", start, codes.BAD_TRACEPOINT_SECTION, "tracepoint section", None)
    toks = list(tree.children)
    load_only = toks[0].type == "BANG"  # type: ignore[union-attr]
    sys_tok, ev_tok = toks[-2], toks[-1]
    target = TracepointTarget(
        system=str(sys_tok),
        event=str(ev_tok),
        load_only=load_only,
        span=main_span,
        system_span=_tok_span(sys_tok, start),  # type: ignore[arg-type]
        event_span=_tok_span(ev_tok, start),  # type: ignore[arg-type]
    )
    return SectionSpec(
        name=name,
        style=SectionStyle.PERF,
        program_type=ProgType.TRACEPOINT,
        attach=AttachKind.NONE if load_only else AttachKind.TRACEPOINT,
        target=target,
        main_span=main_span,
        settings=settings,
    )


def _parse_libbpf(
    name: str, main: str, start: int, main_span: Span, settings: tuple[Setting, ...], kind: str
) -> SectionSpec:
    perf = None if ":" in main else "Invalid config string"
    _refuse_unusable_names(main, start, main_span, kind, perf)
    tree = _parse_tree(main, "libbpf", start, codes.BAD_LIBBPF_SECTION, "libbpf-style section", perf)
    kids = tree.children
    word = str(kids[0])
    attach = LIBBPF_KINDS[word]
    rule = tree.data
    target: Target | None = None
    note: str | None = None
    if len(kids) == 1 and rule not in ("lb_bare", "lb_tc", "lb_struct_ops"):  # no target
        note = (f"libbpf attaches a SEC(\"{word}\") program only by hand (the section names no target): "
                "it is loaded and not attached")
        attach = AttachKind.NONE
    elif rule == "lb_tracepoint":
        sys_tok, ev_tok = kids[1], kids[2]
        target = TracepointTarget(
            str(sys_tok),
            str(ev_tok),
            False,
            main_span,
            _tok_span(sys_tok, start),  # type: ignore[arg-type]
            _tok_span(ev_tok, start),  # type: ignore[arg-type]
        )
    elif rule == "lb_raw_tracepoint":
        target = RawTracepointTarget(str(kids[1]), main_span)
    elif rule in ("lb_kprobe", "lb_uprobe"):
        binary = str(kids[1]) if rule == "lb_uprobe" else None
        func_tok = kids[2] if rule == "lb_uprobe" else kids[1]
        offset = None
        last = kids[-1]
        if isinstance(last, Tree):
            offset = int(str(last.children[0]), 0)
        point = ProbePoint(
            function=str(func_tok),
            file=None,
            line=None,
            offset=offset,
            retprobe=word.startswith(("kret", "uret")),
            address=None,
            span=Span(_tok_span(func_tok, start).start, main_span.end),  # type: ignore[arg-type]
        )
        target = ProbeTarget(None, None, point, (), binary, None, main_span)
    elif rule == "lb_btf":
        target = BtfTarget(word, str(kids[1]), _tok_span(kids[1], start))  # type: ignore[arg-type]
    elif attach in NET_HOOKS:
        target = _net_target(attach, kids, main_span, settings)
    if ":" in main:
        sys_name, ev_name = main.split(":", 1)
        reason = (
            f"a libbpf-style name; perf 6.1 reads a section without '=' as the tracepoint "
            f"'{sys_name}':'{ev_name}', which does not exist"
        )
        perf_message = "Attach events in BPF object failed"
    else:
        reason = "a libbpf-style name; perf 6.1 accepts only SYS:EVENT or EVENT=PROBE sections"
        perf_message = "Invalid config string"
    return SectionSpec(
        name=name,
        style=SectionStyle.LIBBPF,
        program_type=_libbpf_program_type(main),
        attach=attach,
        target=target,
        main_span=main_span,
        settings=settings,
        force=attach is AttachKind.XDP and _bool_setting(settings, "force", False),
        perf_compatible=False,
        perf_reason=reason,
        perf_message=perf_message,
        note=note,
    )


def _refuse_unusable_names(main: str, start: int, main_span: Span, kind: str, perf: str | None) -> None:
    """Three libbpf names that the grammar alone would call merely malformed: one libbpf does not
    have (``cgroup/nosuch``), a BTF kind with no target (libbpf cannot load it) and a uprobe with a
    binary but no function."""
    if kind not in LIBBPF_KINDS:
        known = sorted(n for n in LIBBPF_KINDS if n.startswith(kind + "/"))
        raise EvspecError(
            error(
                codes.BAD_LIBBPF_SECTION,
                f"libbpf has no section named '{main}' (libbpf cannot load it either: its program type "
                "is unknown)",
                main_span,
                help=(f"the {kind}/ sections are: {', '.join(known)}",),
                perf_message=perf,
                perf_help=ADD_V_HELP if perf else None,
            )
        )
    if kind in _BTF_KINDS and main == kind:
        what = _BTF_WHAT.get(kind, "kernel function")
        raise EvspecError(
            error(
                codes.BAD_LIBBPF_SECTION,
                f"'{main}' names no {what} (write {kind}/NAME): libbpf cannot load it either ('no BTF-based "
                "attach target is specified')",
                main_span,
                help=(f"name the {what}: SEC(\"{kind}/NAME\")",),
                perf_message=perf,
                perf_help=ADD_V_HELP if perf else None,
            )
        )
    if kind.startswith(("uprobe", "uretprobe")) and "/" in main and ":" not in main:
        raise EvspecError(
            error(
                codes.BAD_LIBBPF_SECTION,
                f"malformed libbpf-style section '{main}': a uprobe names the binary and its function, "
                f"'{main.split('/', 1)[0]}/PATH:FUNC[+OFFSET]'",
                Span(start + max(len(main) - 1, 0), start + len(main)),
                help=("libbpf loads such a program and attaches it only by hand (as a tool does with "
                      "bpf_program__attach_uprobe); evspec verify loads it too",),
                perf_message=perf,
                perf_help=ADD_V_HELP if perf else None,
            )
        )


def _net_target(attach: AttachKind, kids: list[object], main_span: Span, settings: tuple[Setting, ...]) -> NetHookTarget:
    """An xdp or tc section: the last dev= and mode= count; tc's direction is ``tc/DIRECTION``."""
    dev = next((s for s in reversed(settings) if s.key == "dev"), None)
    direction: TcDirection | None = None
    mode: XdpMode | None = None
    if attach is AttachKind.TC:
        direction = TcDirection(str(kids[-1])) if len(kids) == 2 else TcDirection.INGRESS
    else:
        mode_setting = next((s for s in reversed(settings) if s.key == "mode"), None)
        mode = XdpMode(mode_setting.value) if mode_setting is not None else None
    return NetHookTarget(
        dev=dev.value if dev is not None else None,
        xdp_mode=mode,
        direction=direction,
        span=main_span,
        dev_span=dev.value_span if dev is not None else None,
    )


def _parse_probe(
    name: str, main: str, start: int, main_span: Span, settings: tuple[Setting, ...]
) -> SectionSpec:
    tree = _parse_tree(main, "probe", start, codes.BAD_PROBE_DEFINITION, "probe definition", "Invalid config string")
    group: str | None = None
    event: str | None = None
    group_span: Span | None = None
    event_span: Span | None = None
    point: ProbePoint | None = None
    args: list[ProbeArg] = []
    for child in tree.children:
        assert isinstance(child, Tree)
        if child.data == "event_only":
            event, event_span = str(child.children[0]), _tok_span(child.children[0], start)  # type: ignore[arg-type]
        elif child.data == "group_event":
            g, e = child.children
            group, group_span = str(g), _tok_span(g, start)  # type: ignore[arg-type]
            event, event_span = str(e), _tok_span(e, start)  # type: ignore[arg-type]
        elif child.data in ("symbol_point", "address_point"):
            point = _probe_point(child, start)
        else:
            args.append(_probe_arg(child, main, start))
    assert point is not None

    for ident, span, what in ((group, group_span, "group"), (event, event_span, "event")):
        if ident is not None and not _C_IDENT.match(ident):
            assert span is not None
            raise EvspecError(
                error(
                    codes.BAD_PROBE_DEFINITION,
                    f"'{ident}' is not a valid {what} name: it must follow the C symbol-naming rule",
                    span,
                    help=("use letters, digits and '_', not starting with a digit",),
                    perf_message="Invalid config string",
                    perf_help=ADD_V_HELP,
                )
            )
    if point.retprobe:
        for arg in args:
            if arg.is_local_variable:
                raise EvspecError(
                    error(
                        codes.BAD_PROBE_DEFINITION,
                        f"a return probe cannot fetch the local variable '{arg.fetch}'",
                        arg.span,
                        help=("at function return use $retval, registers or @symbols",),
                        perf_message="Invalid config string",
                        perf_help=ADD_V_HELP,
                    )
                )
    if group is not None and group != PERF_BPF_PROBE_GROUP:
        assert group_span is not None
        raise EvspecError(
            error(
                codes.BAD_PROBE_GROUP,
                f"probe group '{group}' is not '{PERF_BPF_PROBE_GROUP}'",
                group_span,
                help=(f"leave the group out (it defaults to {PERF_BPF_PROBE_GROUP}) or write "
                      f"'{PERF_BPF_PROBE_GROUP}:{event}='",),
                perf_message="Invalid group name",
                perf_help=ADD_V_HELP,
            )
        )
    if event is None:
        point_text = point.span.shift(-start).text(main)
        raise EvspecError(
            error(
                codes.NO_PROBE_EVENT,
                f"probe definition '{main}' has no event name",
                point.span,
                help=(f"name the event before '=': e.g. 'probe={point_text}' (the event is then "
                      f"{PERF_BPF_PROBE_GROUP}:probe)",),
                perf_message="No event name found in config string",
                perf_help=ADD_V_HELP,
            )
        )
    event_name = f"{event}__return" if point.retprobe else event
    if len(event_name) > MAX_EVENT_NAME:
        assert event_span is not None
        raise EvspecError(
            error(
                codes.BAD_PROBE_DEFINITION,
                f"event name '{event_name}' is {len(event_name)} characters long; a probe event name "
                f"has at most {MAX_EVENT_NAME}"
                + (" (a return probe's name ends in '__return')" if point.retprobe else ""),
                event_span,
                help=(f"shorten the event name to {MAX_EVENT_NAME - len(event_name) + len(event)} "
                      "characters or fewer",),
                perf_message=EVENT_NAME_TOO_LONG_MESSAGE,
                perf_help=ADD_V_HELP,
            )
        )
    binary, module = _probe_target_setting(settings)
    target = ProbeTarget(
        group=group or PERF_BPF_PROBE_GROUP,
        event=event,
        point=point,
        args=tuple(args),
        binary=binary,
        module=module,
        span=main_span,
        group_span=group_span,
        event_span=event_span,
    )
    return SectionSpec(
        name=name,
        style=SectionStyle.PERF,
        program_type=ProgType.KPROBE,
        attach=AttachKind.UPROBE if binary is not None else AttachKind.KPROBE,
        target=target,
        main_span=main_span,
        settings=settings,
        inlines=_bool_setting(settings, "inlines", True),
        force=_bool_setting(settings, "force", False),
    )


def _probe_point(tree: Tree, offset: int) -> ProbePoint:
    span = _tree_span(tree, offset)
    first = tree.children[0]
    if tree.data == "address_point":
        return ProbePoint(None, None, None, None, False, int(str(first), 16), span)
    symbol = str(first)
    src: str | None = None
    line = off = None
    retprobe = False
    for child in tree.children[1:]:
        assert isinstance(child, Tree)
        if child.data == "src":
            src = str(child.children[0])
        elif child.data == "offset":
            off = int(str(child.children[0]), 0)
        elif child.data == "line":
            line = int(str(child.children[0]), 0)
        elif child.data == "retprobe":
            retprobe = True
    # perf-probe: 'X:LINE' names a source file (not a function) when X has a '.' and no '@'
    if line is not None and src is None and "." in symbol:
        return ProbePoint(None, symbol, line, None, False, None, span)
    return ProbePoint(symbol, src, line, off, retprobe, None, span)


def _probe_arg(tree: Tree, main: str, offset: int) -> ProbeArg:
    span = _tree_span(tree, offset)
    name: str | None = None
    kids = list(tree.children)
    if tree.data == "named_arg":
        name = str(kids.pop(0))
    arg_type: str | None = None
    if kids and isinstance(kids[-1], Tree) and kids[-1].data == "arg_type":
        arg_type = str(kids.pop().children[0])
    fetch_node = kids[0]
    if isinstance(fetch_node, Tree):
        fetch = main[fetch_node.meta.start_pos : fetch_node.meta.end_pos]
    else:
        fetch = str(fetch_node)
    return ProbeArg(name, fetch, arg_type, span)


def _arg_text(arg: ProbeArg) -> str:
    text = f"{arg.name}={arg.fetch}" if arg.name else arg.fetch
    return f"{text}:{arg.type}" if arg.type else text
