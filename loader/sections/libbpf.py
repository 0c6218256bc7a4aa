"""libbpf 1.8's section names as data: the program type, expected attach type and load flags
libbpf gives a program from its ``SEC()`` name, and which kernel BTF type the name's target is.

The facts come from libbpf 1.8's ``section_defs`` table; evspec's own writing of them is the data
file ``libbpf-1.8.tsv`` next to this module (one entry a line, read at import). Matching is libbpf's: a definition with ``plus`` takes its name alone (``kprobe``) or followed
by ``/`` and anything (``kprobe/do_unlinkat``); one without takes its exact name only (``xdp``,
``cgroup/connect4``); the first definition that matches wins, so ``xdp.frags/devmap`` comes before
``xdp.frags``. A leading ``?`` (libbpf's autoload-off mark) is not part of the name.

``load_params`` is what a program of the section is loaded with, as libbpf loads it (a ``usdt``
program: as a uprobe_multi one where the kernel has such links, which the caller probes); what libbpf
cannot load from the name alone (``fentry`` without a function, ``freplace``, which needs a target
program, ``struct_ops``, which needs its struct_ops map) is an ``ObjectError`` naming it.

The target's kernel BTF type is found as libbpf's ``find_kernel_btf_id`` finds it: in vmlinux's
BTF, else in each module's (split on vmlinux's, in the kernel's order of BTF object ids), the
first that has it; the program is then loaded with that module BTF's descriptor as
``attach_btf_obj_fd`` (``ModuleTypeId``). libbpf 1.5 added a ``MODULE:FUNC`` form of the target,
which evspec does not take yet: such a target is refused naming the form.
"""

from __future__ import annotations

from enum import IntEnum
from errno import EINVAL, ENAMETOOLONG, ESRCH
from pathlib import Path

from evspec.loader.btf.reader import BtfKind
from evspec.loader.errors import ObjectError
from evspec.loader.object.spec import ProgType

from evspec.codes import kernel as codes
from evspec.span import Slotted

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from evspec.loader.btf.target import TargetBtf
    from evspec.loader.externs.module_ksyms import ModuleBtf

BPF_F_SLEEPABLE = 1 << 4
BPF_F_XDP_HAS_FRAGS = 1 << 5
# libbpf builds the looked-up name in a 128-byte buffer; a longer one is ENAMETOOLONG
BTF_MAX_NAME_SIZE = 128


class BpfAttachType(IntEnum):
    """``enum bpf_attach_type`` up to what libbpf 1.8 names in its table."""

    CGROUP_INET_INGRESS = 0
    CGROUP_INET_EGRESS = 1
    CGROUP_INET_SOCK_CREATE = 2
    CGROUP_SOCK_OPS = 3
    SK_SKB_STREAM_PARSER = 4
    SK_SKB_STREAM_VERDICT = 5
    CGROUP_DEVICE = 6
    SK_MSG_VERDICT = 7
    CGROUP_INET4_BIND = 8
    CGROUP_INET6_BIND = 9
    CGROUP_INET4_CONNECT = 10
    CGROUP_INET6_CONNECT = 11
    CGROUP_INET4_POST_BIND = 12
    CGROUP_INET6_POST_BIND = 13
    CGROUP_UDP4_SENDMSG = 14
    CGROUP_UDP6_SENDMSG = 15
    LIRC_MODE2 = 16
    FLOW_DISSECTOR = 17
    CGROUP_SYSCTL = 18
    CGROUP_UDP4_RECVMSG = 19
    CGROUP_UDP6_RECVMSG = 20
    CGROUP_GETSOCKOPT = 21
    CGROUP_SETSOCKOPT = 22
    TRACE_RAW_TP = 23
    TRACE_FENTRY = 24
    TRACE_FEXIT = 25
    MODIFY_RETURN = 26
    LSM_MAC = 27
    TRACE_ITER = 28
    CGROUP_INET4_GETPEERNAME = 29
    CGROUP_INET6_GETPEERNAME = 30
    CGROUP_INET4_GETSOCKNAME = 31
    CGROUP_INET6_GETSOCKNAME = 32
    XDP_DEVMAP = 33
    CGROUP_INET_SOCK_RELEASE = 34
    XDP_CPUMAP = 35
    SK_LOOKUP = 36
    XDP = 37
    SK_SKB_VERDICT = 38
    SK_REUSEPORT_SELECT = 39
    SK_REUSEPORT_SELECT_OR_MIGRATE = 40
    PERF_EVENT = 41
    TRACE_KPROBE_MULTI = 42
    LSM_CGROUP = 43
    STRUCT_OPS = 44
    NETFILTER = 45
    TCX_INGRESS = 46
    TCX_EGRESS = 47
    TRACE_UPROBE_MULTI = 48
    CGROUP_UNIX_CONNECT = 49
    CGROUP_UNIX_SENDMSG = 50
    CGROUP_UNIX_RECVMSG = 51
    CGROUP_UNIX_GETPEERNAME = 52
    CGROUP_UNIX_GETSOCKNAME = 53
    NETKIT_PRIMARY = 54
    NETKIT_PEER = 55
    TRACE_KPROBE_SESSION = 56
    TRACE_UPROBE_SESSION = 57
    TRACE_FSESSION = 58
    TRACE_FENTRY_MULTI = 59
    TRACE_FEXIT_MULTI = 60
    TRACE_FSESSION_MULTI = 61


class BtfLookup(Slotted):
    """How libbpf finds the kernel BTF type a section's target names: ``prefix`` + target, of
    ``kind`` (``btf_trace_NAME`` typedefs for tp_btf, ``bpf_lsm_NAME`` functions for lsm,
    ``bpf_iter_NAME`` functions for iter, the function itself for fentry/fexit/fmod_ret)."""

    prefix: str
    kind: BtfKind
    what: str  # what the target is, in words


_BTF_LOOKUPS: dict[int, BtfLookup] = {
    BpfAttachType.TRACE_RAW_TP: BtfLookup("btf_trace_", BtfKind.TYPEDEF, "BTF tracepoint"),
    BpfAttachType.LSM_MAC: BtfLookup("bpf_lsm_", BtfKind.FUNC, "LSM hook"),
    BpfAttachType.LSM_CGROUP: BtfLookup("bpf_lsm_", BtfKind.FUNC, "LSM hook"),
    BpfAttachType.TRACE_ITER: BtfLookup("bpf_iter_", BtfKind.FUNC, "iterator"),
}


class SectionDef(Slotted):
    """One entry of libbpf's table."""

    name: str
    prog_type: ProgType
    attach_type: int = 0  # the expected attach type libbpf loads the program with
    plus: bool = False  # the name alone or NAME/ANYTHING (libbpf writes it 'NAME+')
    sleepable: bool = False  # loaded with BPF_F_SLEEPABLE
    xdp_frags: bool = False  # loaded with BPF_F_XDP_HAS_FRAGS
    attach_btf: bool = False  # the target is a kernel BTF type (attach_btf_id)
    usdt: bool = False  # loaded as BPF_TRACE_UPROBE_MULTI where the kernel has uprobe_multi links
    exp_attach_opt: bool = False  # the attach type is dropped on kernels without expected attach types
    attachable: bool = False  # libbpf_attach_type_by_name answers the attach type
    auto_attach: str = ""  # libbpf's auto-attach handler ('' for none)

    def matches(self, section: str) -> bool:
        if not self.plus:
            return section == self.name
        return section.startswith(self.name) and section[len(self.name):len(self.name) + 1] in ("", "/")

    @property
    def prog_flags(self) -> int:
        frags = self.xdp_frags and self.prog_type == ProgType.XDP  # libbpf checks the program type too
        return (BPF_F_SLEEPABLE if self.sleepable else 0) | (BPF_F_XDP_HAS_FRAGS if frags else 0)

    @property
    def btf_lookup(self) -> BtfLookup | None:
        if not self.attach_btf or self.prog_type == ProgType.EXT:
            return None
        return _BTF_LOOKUPS.get(self.attach_type, BtfLookup("", BtfKind.FUNC, "function"))


_TABLE = Path(__file__).with_name("libbpf-1.8.tsv")


def _read_table(path: Path = _TABLE) -> tuple[SectionDef, ...]:
    """The table of ``path``: one entry a line, tab-separated: the name (``NAME+``: the name alone
    or ``NAME/TARGET``), libbpf's names of the program type and expected attach type (empty: 0),
    the flags (comma-separated) and the auto-attach handler; ``#`` lines are comments."""
    defs = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) != 5:
            raise ValueError(f"{path.name}:{number}: {len(cells)} cells, not 5")
        name, prog_type, attach_type, flag_cells, auto_attach = cells
        flags = frozenset(filter(None, flag_cells.split(",")))
        unknown = flags - _FLAGS
        if unknown:
            raise ValueError(f"{path.name}:{number}: unknown flag(s) {sorted(unknown)}")
        defs.append(SectionDef(
            name.removesuffix("+"), ProgType[prog_type.upper()],
            BpfAttachType[attach_type.upper()] if attach_type else 0, plus=name.endswith("+"),
            sleepable="sleepable" in flags, xdp_frags="xdp_frags" in flags, attach_btf="attach_btf" in flags,
            usdt="usdt" in flags, exp_attach_opt="exp_attach_opt" in flags, attachable="attachable" in flags,
            auto_attach=auto_attach))
    return tuple(defs)


_FLAGS = frozenset({"attachable", "exp_attach_opt", "attach_btf", "sleepable", "xdp_frags", "usdt"})
#: libbpf 1.8's table, in its order (the first match wins)
SECTION_DEFS: tuple[SectionDef, ...] = _read_table()


def unmarked(section: str) -> str:
    """The section name without libbpf's autoload-off ``?``."""
    return section[1:] if section.startswith("?") else section


def find_section_def(section: str) -> SectionDef | None:
    """The definition libbpf 1.8 picks for ``section`` (None: libbpf does not know the name, and
    cannot load the program: its type stays unspecified)."""
    name = unmarked(section)
    return next((d for d in SECTION_DEFS if d.matches(name)), None)


def attach_target(section: str) -> str | None:
    """What follows the first ``/`` (libbpf's attach name), None when there is no ``/``."""
    name = unmarked(section)
    return name.split("/", 1)[1] if "/" in name else None


def section_prog_flags(section: str) -> int:
    """BPF_F_SLEEPABLE / BPF_F_XDP_HAS_FRAGS for a section; perf-style settings in front of the
    name (``dev=eth0;xdp.frags``) do not count."""
    found = find_section_def(unmarked(section).rsplit(";", 1)[-1])
    return found.prog_flags if found is not None else 0


class LoadParams(Slotted):
    """What BPF_PROG_LOAD gets for a program of a section, besides its instructions."""

    prog_type: int
    expected_attach_type: int = 0
    prog_flags: int = 0
    target: str | None = None  # what the section names after its '/', when it is a BTF type
    lookup: BtfLookup | None = None  # how that target is found in the kernel's BTF
    usdt: bool = False  # BPF_TRACE_UPROBE_MULTI is the attach type where the kernel has uprobe_multi links

    def attach_type_on(self, uprobe_multi: bool) -> int:
        """The expected attach type on a kernel with (or without) uprobe_multi links: libbpf
        loads a ``usdt`` program as a uprobe_multi one where it can attach it so."""
        return BpfAttachType.TRACE_UPROBE_MULTI if self.usdt and uprobe_multi else self.expected_attach_type

    @property
    def btf_name(self) -> str | None:
        """The kernel BTF type whose id is the program's attach_btf_id."""
        return None if self.lookup is None or self.target is None else self.lookup.prefix + self.target

    def attach_btf_id(self, vmlinux: TargetBtf, modules: Callable[[], Sequence[ModuleBtf]] | None = None) -> int:
        """The id of ``btf_name`` in the running kernel's BTF; 0 when none is needed. vmlinux's id
        when vmlinux has the type, else a ``ModuleTypeId`` in the first of ``modules`` that has it
        (``modules`` is called only then; None: no module is searched). ``ObjectError`` when none
        has it (libbpf: ESRCH), or when the target is written ``MODULE:FUNC``."""
        name = self.btf_name
        if name is None:
            return 0
        refusal = self.module_form_refusal()
        if refusal is not None:
            raise refusal
        found = self.btf_id_in(vmlinux)
        if found is not None:
            return found
        searched = modules() if modules is not None else ()
        for module in searched:
            found = self.btf_id_in(module.target)
            if found is not None:
                return ModuleTypeId(found, module)
        raise self.missing(len(searched))

    def btf_id_in(self, target: TargetBtf) -> int | None:
        """The id of ``btf_name`` among ``target``'s own types (a module's: those of its split BTF)."""
        name, lookup = self.btf_name, self.lookup
        assert name is not None and lookup is not None
        return kernel_btf_id(target, name, lookup.kind)

    def missing(self, modules_searched: int | None) -> ObjectError:
        """The error for a target found nowhere, ``modules_searched`` module BTFs searched after
        vmlinux's; None: the module BTFs are not known (a snapshot records vmlinux's alone)."""
        name, lookup = self.btf_name, self.lookup
        assert name is not None and lookup is not None
        kind = "typedef" if lookup.kind == BtfKind.TYPEDEF else "function"
        if modules_searched is None:
            where = f" (no {kind} '{name}')" if lookup.prefix else ""
            return ObjectError(codes.BAD_SECTION, f"the {lookup.what} '{self.target}' is not in vmlinux's BTF{where}, "
                               "and no module BTF was recorded, where libbpf would look next", errno=ESRCH)
        searched = ""
        if modules_searched:
            modules = "its module's" if modules_searched == 1 else f"any of its {modules_searched} modules'"
            searched = f"neither vmlinux's nor {modules}"
        if lookup.prefix:
            where = f" (no {kind} '{name}' in its BTF{': ' + searched if searched else ''})"
        else:
            where = f" in its BTF{f' ({searched})' if searched else ''}"
        return ObjectError(codes.BAD_SECTION, f"the kernel has no {lookup.what} '{self.target}'{where}; libbpf "
                           "fails the same way (ESRCH)", errno=ESRCH)

    def module_form_refusal(self) -> ObjectError | None:
        """The error for a target written ``MODULE:FUNC``, None for any other."""
        target, lookup = self.target, self.lookup
        if target is None or lookup is None or ":" not in target:
            return None
        module, _, func = target.partition(":")
        return ObjectError(codes.BAD_SECTION, f"'{target}' is the MODULE:FUNC form of a target, which libbpf takes "
                          f"from version 1.5 on and evspec does not yet: name the {lookup.what} alone "
                          f"('{func}'), and it is looked for in the modules' BTF when vmlinux's has none",
                          help=(f"module '{module}' need not be named: the first module whose BTF has "
                                f"'{lookup.prefix}{func}' is used, as libbpf does for a target without one",))


class ModuleTypeId(int):
    """A type id in a kernel module's BTF. Module BTFs are split on vmlinux's and their ids continue
    after vmlinux's last, so the same number is another type in each module: this id keeps its
    module (``module``: the name, and the descriptor BPF_PROG_LOAD takes as ``attach_btf_obj_fd``,
    which whoever opened it keeps open until the program is loaded). An id of vmlinux's BTF is a
    plain int."""

    module: ModuleBtf

    def __new__(cls, type_id: int, module: ModuleBtf) -> ModuleTypeId:
        made = super().__new__(cls, type_id)
        made.module = module
        return made

    def __repr__(self) -> str:
        return f"ModuleTypeId({int(self)}, module={self.module.name!r})"


def attach_btf_obj_fd(btf_id: int) -> int:
    """BPF_PROG_LOAD's ``attach_btf_obj_fd`` for ``btf_id``: its module BTF's descriptor, 0 (vmlinux)
    for a plain id."""
    return btf_id.module.fd if isinstance(btf_id, ModuleTypeId) else 0


def attach_target_name(btf_id: int, target: str) -> str:
    """How messages name the target a program is loaded for: ``MODULE:TARGET`` for a module's
    type, the target alone for vmlinux's."""
    return f"{btf_id.module.name}:{target}" if isinstance(btf_id, ModuleTypeId) else target


def kernel_btf_id(target: TargetBtf, name: str, kind: BtfKind) -> int | None:
    """The first of ``target``'s own types of ``kind`` named exactly ``name`` (libbpf's
    btf__find_by_name_kind)."""
    from evspec.loader.btf.target import essential_name

    btf = target.btf
    return next((i for i in target.named(essential_name(name))
                 if btf.type(i).kind == kind and btf.type(i).name == name), None)


def load_params(section: str) -> LoadParams | None:
    """How libbpf 1.8 loads a program of ``section`` (None: not a name libbpf knows). Raises
    ``ObjectError`` saying why for what libbpf cannot load from the name alone (the caller names
    the section)."""
    found = find_section_def(section)
    if found is None:
        return None
    name = unmarked(section)
    if found.prog_type == ProgType.STRUCT_OPS:
        raise ObjectError(codes.BAD_SECTION, "no struct_ops map uses it: a struct_ops program is loaded for the "
                          "struct_ops map (SEC(\".struct_ops\")) whose member it is (libbpf 1.8 refuses it too: 'program "
                          "isn't referenced anywhere')", errno=EINVAL)
    lookup = found.btf_lookup
    if found.attach_btf and attach_target(name) is None:  # libbpf checks this first, freplace too
        what = lookup.what if lookup is not None else "function"
        raise ObjectError(codes.BAD_SECTION, f"no {what} is named: write {found.name}/NAME (libbpf "
                          "refuses it too: 'no BTF-based attach target is specified')", errno=EINVAL)
    if found.prog_type == ProgType.EXT:
        raise ObjectError(codes.BAD_SECTION, "a freplace program replaces a function of another loaded "
                          "program, and a section name cannot say which program (libbpf refuses it too: 'attach program "
                          "FD is not set')", errno=EINVAL)
    params = LoadParams(int(found.prog_type), found.attach_type, found.prog_flags, usdt=found.usdt)
    if lookup is None:
        return params
    target = attach_target(name)
    if target is None:
        raise ObjectError(codes.BAD_SECTION, f"no {lookup.what} is named: write {found.name}/NAME (libbpf "
                          "refuses it too: 'no BTF-based attach target is specified')", errno=EINVAL)
    btf_name = lookup.prefix + target
    if len(btf_name) >= BTF_MAX_NAME_SIZE:
        raise ObjectError(codes.BAD_SECTION, f"the BTF name '{btf_name}' is {len(btf_name)} characters long; "
                          f"libbpf takes at most {BTF_MAX_NAME_SIZE - 1} (ENAMETOOLONG)", errno=ENAMETOOLONG)
    return LoadParams(params.prog_type, params.expected_attach_type, params.prog_flags, target, lookup)
