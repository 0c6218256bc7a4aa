"""BTF-typed program targets that only a kernel module has (fentry/, tp_btf/, lsm/, ...), found
as libbpf 1.1's find_kernel_btf_id finds them: vmlinux's BTF first, then each module's split BTF
in the kernel's order of BTF object ids, the first that has the type. The program (and the
trampoline probe record makes first) is loaded with the type's id in that module's BTF and the
module BTF's descriptor as attach_btf_obj_fd (the union's attach_prog_fd).

Offline, on the fake kernel serving module BTF objects built from C here (a small vmlinux and two
modules, re-based onto it by tests/split_btf.py): record's attachers and ``evspec verify`` load
with the right obj fd and id (as the fake kernel received them), a vmlinux target still with obj
fd 0, the module BTFs opened only when vmlinux lacks a target and every descriptor closed after;
a target in no BTF is libbpf's ESRCH, also when its module was unloaded between the listing and
the open; ``MODULE:FUNC`` (libbpf 1.5's form) is refused naming the form; notes name the module.
``evspec check`` searches this machine's module BTFs, and against a snapshot (vmlinux's BTF alone)
says the target is not in vmlinux's BTF and modules were not recorded.
"""

from __future__ import annotations

import errno
import io
from pathlib import Path

import pytest
from bpf_build import build_bpf, require_tools
from evspec.loader import asm
from evspec.loader.abi import bpf as abi
from evspec.loader.attach.attacher import Attacher, program_types
from evspec.loader.attach.attachment import AttachOptions
from evspec.loader.btf import target as target_btf
from evspec.loader.btf.reader import Btf, BtfKind
from evspec.loader.btf.target import TargetBtf
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.kernel.fake import FakeKernel
from evspec.loader.lint.event import ObjectEnvironment, check_bpf_event, core_target_of, extern_facts_of
from evspec.loader.load.live import load_object
from evspec.loader.object.reader import read_object_bytes
from evspec.loader.object.spec import ObjectSpec, replace
from evspec.loader.sections.libbpf import BpfAttachType, ModuleTypeId, attach_btf_obj_fd, load_params
from evspec.loader.verify.objects import KernelBtf, verify_object
from split_btf import btf_section, split_btf

from evspec.ast import BpfEvent
from evspec.cli.verify import _render_text
from evspec.span import Span
from evspec.system.model import ExternFacts
from evspec.system.snapshot import SNAPSHOT_VERSION, SnapshotSystem, encode_btf, encode_extern_facts

VMLINUX_C = r"""
typedef void (*btf_trace_sched_switch)(void *, int);
btf_trace_sched_switch sched_switch_hook;
int do_unlinkat(int dfd, const char *name) { return dfd; }
int bpf_lsm_file_open(void *file) { return 0; }
int with___flavour(int x) { return x; }   /* a name libbpf matches whole, ___ and all */
"""
TESTMOD_C = r"""
typedef void (*btf_trace_bpf_testmod_test_read)(void *, long);
btf_trace_bpf_testmod_test_read test_read_hook;
long bpf_testmod_test_read(void *file, long len) { return len; }
long shared_fn(long a) { return a; }
"""
OTHERMOD_C = r"""
int other_read(int a, int b) { return a + b; }
int shared_fn(int a, int b) { return a - b; }   /* another prototype than bpf_testmod's */
int do_unlinkat(long dfd) { return 0; }          /* vmlinux has a do_unlinkat: never this one */
"""
PROGRAMS = {
    "modtargets": ('SEC("fentry/bpf_testmod_test_read") int on_read(void *ctx) { return 0; }\n'
                   'SEC("tp_btf/bpf_testmod_test_read") int on_tp(void *ctx) { return 0; }\n'),
    "vmtargets": ('SEC("fentry/do_unlinkat") int on_unlink(void *ctx) { return 0; }\n'
                  'SEC("tp_btf/sched_switch") int on_switch(void *ctx) { return 0; }\n'),
    "shared": 'SEC("fexit/shared_fn") int on_shared(void *ctx) { return 0; }\n',
    "nowhere": 'SEC("fentry/evspec_nowhere") int on_nothing(void *ctx) { return 0; }\n',
    "modform": 'SEC("fentry/bpf_testmod:bpf_testmod_test_read") int on_form(void *ctx) { return 0; }\n',
}
PROLOGUE = '#define SEC(name) __attribute__((section(name), used))\n'
EPILOGUE = 'char LICENSE[] SEC("license") = "GPL";\n'
VMLINUX_ID, OTHERMOD_ID, TESTMOD_ID = 1, 4, 9  # BTF object ids: othermod's comes first


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    require_tools("clang")
    out = tmp_path_factory.mktemp("modattach")
    sources = {"vmlinux": VMLINUX_C, "bpf_testmod": TESTMOD_C, "bpf_othermod": OTHERMOD_C,
               **{name: PROLOGUE + text + EPILOGUE for name, text in PROGRAMS.items()}}
    objects = {}
    for name, text in sources.items():
        (out / f"{name}.c").write_text(text)
        objects[name] = build_bpf(out, f"{name}.c", f"{name}.o").read_bytes()
    return objects


@pytest.fixture(scope="module")
def blobs(built: dict[str, bytes]) -> dict[str, bytes]:
    base = btf_section(built["vmlinux"], "vmlinux.o")
    return {"vmlinux": base, **{m: split_btf(btf_section(built[m], f"{m}.o"), base)
                                for m in ("bpf_testmod", "bpf_othermod")}}


@pytest.fixture
def fake(blobs: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeKernel:
    """The fake kernel serving vmlinux's and the two modules' BTF objects (and a program's BTF,
    id 3); its /sys/kernel/btf/vmlinux is the small vmlinux."""
    (tmp_path / "btf").mkdir()
    (tmp_path / "btf" / "vmlinux").write_bytes(blobs["vmlinux"])
    monkeypatch.setattr(target_btf, "KERNEL_BTF", tmp_path / "btf" / "vmlinux")
    return FakeKernel(btf_objects={VMLINUX_ID: ("vmlinux", True, blobs["vmlinux"]),
                                   3: ("", False, blobs["vmlinux"]),
                                   OTHERMOD_ID: ("bpf_othermod", True, blobs["bpf_othermod"]),
                                   TESTMOD_ID: ("bpf_testmod", True, blobs["bpf_testmod"])})


def type_id(blobs: dict[str, bytes], btf: str, name: str, kind: BtfKind) -> int:
    """The id of ``name`` in ``btf``'s own types (a module's split on vmlinux's)."""
    base = Btf(blobs["vmlinux"])
    split = base if btf == "vmlinux" else Btf(blobs[btf], base=base)
    found = split.find(name, kind)
    assert found is not None and found.id >= split.first_id
    return found.id


def spec_of(built: dict[str, bytes], name: str) -> ObjectSpec:
    return read_object_bytes(built[name], f"{name}.o")


def loads(fake: FakeKernel) -> dict[str, tuple[int, int, int]]:
    """Program name -> (attach_btf_id, attach_btf_obj_fd, the BTF object id that fd was on), as
    the fake kernel received each BPF_PROG_LOAD (the last load of a name)."""
    return {c.args["prog_name"]: (c.args["attach_btf_id"], c.args["attach_prog_fd"], c.args.get("attach_btf_obj_id"))
            for c in fake.calls_of("BPF_PROG_LOAD") if c.errno is None}


def module_fds(fake: FakeKernel, btf_id: int) -> list[int]:
    """The descriptors opened on BTF object ``btf_id``."""
    return [c.result for c in fake.calls_of("BPF_BTF_GET_FD_BY_ID") if c.args["start_id"] == btf_id and c.result]


def module_fd(fake: FakeKernel, btf_id: int) -> int:
    [fd] = module_fds(fake, btf_id)
    return fd


def record_like(fake: FakeKernel, spec: ObjectSpec) -> tuple[Attacher, list[str]]:
    """What a recording session does with one object: plan, load, attach, close the object, then
    the attacher; the attachers' notes."""
    attacher = Attacher(Kernel(fake), AttachOptions(lambda system, event: None))
    try:
        attachments = attacher.plan(spec)
        live = load_object(spec, program_types(attachments), kernel=Kernel(fake),
                           expected_attach_types={a.program: a.expected_attach_type for a in attachments},
                           attach_btf_ids={a.program: a.attach_btf_id for a in attachments})
        with live:
            attacher.attach_hooks(live, attachments)
        notes = attacher.notes
    finally:
        attacher.close()
    return attacher, notes


# -- record's attachers ---------------------------------------------------------------------


def test_a_module_target_loads_with_its_module_btf_fd(built: dict[str, bytes], blobs: dict[str, bytes],
                                                      fake: FakeKernel) -> None:
    _, notes = record_like(fake, spec_of(built, "modtargets"))
    read_id = type_id(blobs, "bpf_testmod", "bpf_testmod_test_read", BtfKind.FUNC)
    tp_id = type_id(blobs, "bpf_testmod", "btf_trace_bpf_testmod_test_read", BtfKind.TYPEDEF)
    # one descriptor on bpf_testmod's BTF for the trampoline attacher (its probe and its program),
    # one for the tp_btf attacher
    trampoline_fd, tracepoint_fd = module_fds(fake, TESTMOD_ID)
    assert loads(fake) == {"evspec_probe": (read_id, trampoline_fd, TESTMOD_ID),  # the trampoline probe
                           "on_read": (read_id, trampoline_fd, TESTMOD_ID),
                           "on_tp": (tp_id, tracepoint_fd, TESTMOD_ID)}
    assert read_id > len(Btf(blobs["vmlinux"])) - 1  # an id after vmlinux's last
    [probe] = [c for c in fake.calls_of("BPF_PROG_LOAD") if c.args["prog_name"] == "evspec_probe"]
    assert probe.args["expected_attach_type"] == BpfAttachType.TRACE_FENTRY
    assert ("program 'on_read' attached to bpf_testmod:bpf_testmod_test_read through a BPF trampoline" in notes)
    assert "program 'on_tp' attached to raw tracepoint bpf_testmod:bpf_testmod_test_read" in notes
    assert fake.raw_tracepoints == ["", "", ""]  # the probe's and both programs': by their BTF ids
    # every descriptor closed: the module BTFs after the object, with the attacher
    assert fake.btf_fds == {} and fake.open_fds == {}


def test_a_vmlinux_target_loads_with_no_obj_fd_and_opens_no_module(built: dict[str, bytes],
                                                                    blobs: dict[str, bytes],
                                                                    fake: FakeKernel) -> None:
    _, notes = record_like(fake, spec_of(built, "vmtargets"))
    unlink_id = type_id(blobs, "vmlinux", "do_unlinkat", BtfKind.FUNC)  # bpf_othermod has one too
    switch_id = type_id(blobs, "vmlinux", "btf_trace_sched_switch", BtfKind.TYPEDEF)
    assert loads(fake) == {"evspec_probe": (unlink_id, 0, 0), "on_unlink": (unlink_id, 0, 0),
                           "on_switch": (switch_id, 0, 0)}
    assert fake.calls_of("BPF_BTF_GET_NEXT_ID") == [] and fake.calls_of("BPF_BTF_GET_FD_BY_ID") == []
    assert "program 'on_unlink' attached to do_unlinkat through a BPF trampoline" in notes
    assert "program 'on_switch' attached to raw tracepoint sched_switch" in notes
    assert fake.open_fds == {}


def test_the_first_module_in_btf_id_order_has_the_target(built: dict[str, bytes], blobs: dict[str, bytes],
                                                         fake: FakeKernel) -> None:
    """bpf_testmod and bpf_othermod both have a shared_fn; bpf_othermod's BTF object comes first."""
    _, notes = record_like(fake, spec_of(built, "shared"))
    shared_id = type_id(blobs, "bpf_othermod", "shared_fn", BtfKind.FUNC)
    assert shared_id != type_id(blobs, "bpf_testmod", "shared_fn", BtfKind.FUNC)
    other_fd = module_fd(fake, OTHERMOD_ID)
    assert loads(fake)["on_shared"] == (shared_id, other_fd, OTHERMOD_ID)
    assert "program 'on_shared' attached to bpf_othermod:shared_fn through a BPF trampoline" in notes
    assert fake.open_fds == {}


def test_a_target_in_no_btf_is_esrch_and_leaves_nothing_open(built: dict[str, bytes], fake: FakeKernel) -> None:
    with pytest.raises(ObjectError) as caught:
        record_like(fake, spec_of(built, "nowhere"))
    assert caught.value.message == (
        "nowhere.o: program 'on_nothing' (section 'fentry/evspec_nowhere'): the kernel has no function "
        "'evspec_nowhere' in its BTF (neither vmlinux's nor any of its 2 modules'); libbpf fails the same way "
        "(ESRCH)")
    assert fake.calls_of("BPF_PROG_LOAD") == [] and fake.open_fds == {}


def test_a_module_unloaded_between_listing_and_opening(built: dict[str, bytes], fake: FakeKernel) -> None:
    """bpf_testmod's BTF is still listed but gone when opened: as libbpf, it is skipped, and its
    function is in no BTF left; only bpf_othermod's was searched."""
    fake.btf_gone.add(TESTMOD_ID)
    with pytest.raises(ObjectError) as caught:
        record_like(fake, spec_of(built, "modtargets"))
    assert caught.value.message == (
        "modtargets.o: program 'on_read' (section 'fentry/bpf_testmod_test_read'): the kernel has no function "
        "'bpf_testmod_test_read' in its BTF (neither vmlinux's nor its module's); libbpf fails the same way (ESRCH)")
    assert [(c.args["start_id"], c.errno) for c in fake.calls_of("BPF_BTF_GET_FD_BY_ID")] == [
        (VMLINUX_ID, None), (3, None), (OTHERMOD_ID, None), (TESTMOD_ID, errno.ENOENT)]
    assert fake.open_fds == {}


def test_a_tp_btf_target_in_no_btf_names_the_tracepoint(built: dict[str, bytes], fake: FakeKernel) -> None:
    fake.btf_gone.add(TESTMOD_ID)
    spec = spec_of(built, "modtargets")
    attacher = Attacher(Kernel(fake), AttachOptions(lambda system, event: None))
    tp_only = replace(spec, programs=tuple(p for p in spec.programs if p.name == "on_tp"))
    with pytest.raises(ObjectError) as caught:
        attacher.plan(tp_only)
    attacher.close()
    assert caught.value.code == "EK105"  # NO_TRACEPOINT, as before
    assert caught.value.message == (
        "modtargets.o: program 'on_tp': the kernel has no BTF tracepoint 'bpf_testmod_test_read' (no typedef "
        "'btf_trace_bpf_testmod_test_read' in its BTF: neither vmlinux's nor its module's); libbpf fails the same "
        "way (ESRCH)")
    assert fake.open_fds == {}


def test_a_refused_probe_names_the_module(built: dict[str, bytes], fake: FakeKernel) -> None:
    fake.script("BPF_PROG_LOAD", errno=errno.EPERM, times=None, match=lambda a: a["prog_name"] == "evspec_probe")
    with pytest.raises(ObjectError) as caught:
        record_like(fake, spec_of(built, "modtargets"))
    assert ("BPF trampolines (fentry/fexit/fmod_ret/lsm) are not available on this kernel: loading a minimal "
            "fentry program for 'bpf_testmod:bpf_testmod_test_read' failed with EPERM") in caught.value.message
    assert {c.args["attach_prog_fd"] for c in fake.calls_of("BPF_PROG_LOAD")} == {module_fd(fake, TESTMOD_ID)}
    assert fake.open_fds == {}


def test_a_corrupt_module_btf_is_an_error_naming_it(built: dict[str, bytes], blobs: dict[str, bytes],
                                                    fake: FakeKernel) -> None:
    fake.btf_objects[OTHERMOD_ID] = ("bpf_othermod", True, blobs["bpf_othermod"][:40])
    with pytest.raises(ObjectError) as caught:
        record_like(fake, spec_of(built, "modtargets"))
    assert caught.value.message.startswith(
        "modtargets.o: program 'on_read': 'bpf_testmod_test_read' is not in vmlinux's BTF, and the module BTFs "
        "cannot be read: the BTF of module bpf_othermod (BTF object 4): ")
    assert fake.open_fds == {}


# -- the lookup itself ----------------------------------------------------------------------


def test_the_module_function_form_is_refused_naming_it(blobs: dict[str, bytes]) -> None:
    params = load_params("fentry/bpf_testmod:bpf_testmod_test_read")
    assert params is not None

    def modules() -> tuple[()]:
        raise AssertionError("no module BTF is opened for a MODULE:FUNC target")

    with pytest.raises(ObjectError) as caught:
        params.attach_btf_id(TargetBtf(blobs["vmlinux"], "vmlinux", cache=False), modules)
    assert caught.value.message == (
        "'bpf_testmod:bpf_testmod_test_read' is the MODULE:FUNC form of a target, which libbpf takes from version "
        "1.5 on and evspec does not yet: name the function alone ('bpf_testmod_test_read'), and it is "
        "looked for in the modules' BTF when vmlinux's has none")
    assert caught.value.help == ("module 'bpf_testmod' need not be named: the first module whose BTF has "
                                 "'bpf_testmod_test_read' is used, as libbpf does for a target without one",)


def test_lookup_prefixes_kinds_and_whole_names(blobs: dict[str, bytes]) -> None:
    vmlinux = TargetBtf(blobs["vmlinux"], "vmlinux", cache=False)
    for section, name, kind in (("lsm/file_open", "bpf_lsm_file_open", BtfKind.FUNC),
                                ("fentry/with___flavour", "with___flavour", BtfKind.FUNC),
                                ("tp_btf/sched_switch", "btf_trace_sched_switch", BtfKind.TYPEDEF)):
        params = load_params(section)
        assert params is not None
        found = params.attach_btf_id(vmlinux)
        assert found == type_id(blobs, "vmlinux", name, kind) and type(found) is int
        assert attach_btf_obj_fd(found) == 0
    params = load_params("fentry/with")  # with___flavour is not 'with'
    assert params is not None
    with pytest.raises(ObjectError, match="the kernel has no function 'with' in its BTF; libbpf fails"):
        params.attach_btf_id(vmlinux)
    lsm = load_params("lsm/file_open")
    tp = load_params("tp_btf/sched_switch")  # a typedef, not a function of that name
    fentry = load_params("fentry/btf_trace_sched_switch")
    assert lsm is not None and tp is not None and fentry is not None
    with pytest.raises(ObjectError, match="no function 'btf_trace_sched_switch' in its BTF"):
        fentry.attach_btf_id(vmlinux)


def test_a_module_type_id_keeps_its_module(blobs: dict[str, bytes], fake: FakeKernel) -> None:
    from evspec.loader.kernel.btf_objects import open_module_btfs

    kernel = Kernel(fake)
    vmlinux = TargetBtf(blobs["vmlinux"], "vmlinux", cache=False)
    modules = open_module_btfs(kernel, vmlinux)
    params = load_params("fexit.s/bpf_testmod_test_read")
    assert params is not None
    found = params.attach_btf_id(vmlinux, lambda: modules)
    assert isinstance(found, ModuleTypeId) and found.module.name == "bpf_testmod"
    assert found == type_id(blobs, "bpf_testmod", "bpf_testmod_test_read", BtfKind.FUNC)
    assert attach_btf_obj_fd(found) == found.module.fd == module_fd(fake, TESTMOD_ID)
    assert repr(found) == f"ModuleTypeId({int(found)}, module='bpf_testmod')"
    kernel.close_all(m.fd for m in modules)


# -- the fake kernel, as the kernel checks attach_btf_obj_fd -----------------------------------


def test_the_fake_kernel_checks_the_obj_fd(blobs: dict[str, bytes], fake: FakeKernel) -> None:
    kernel = Kernel(fake)
    insns = asm.encode(0xB7) + asm.encode(asm.OP_EXIT)
    tracing = dict(expected_attach_type=BpfAttachType.TRACE_FENTRY, attach_btf_id=30)
    module = kernel.btf_fd_by_id(TESTMOD_ID)
    program_btf = kernel.btf_fd_by_id(3)
    assert module is not None and program_btf is not None
    fd = kernel.load_program(26, insns, "GPL", attach_btf_obj_fd=module, **tracing)
    assert fake.programs[fd]["attach_btf_obj_id"] == TESTMOD_ID
    info = abi.ProgInfo()
    kernel._info(fd, info, "program")
    assert (info.attach_btf_obj_id, info.attach_btf_id) == (TESTMOD_ID, 30)
    loaded_btf = kernel.load_btf(blobs["vmlinux"])
    for obj_fd, attach_id, wanted in ((program_btf, 30, 524), (loaded_btf, 30, 524), (12345, 30, errno.EINVAL),
                                      (module, 0, errno.EINVAL)):
        with pytest.raises(KernelError) as caught:
            kernel.load_program(26, insns, "GPL", attach_btf_obj_fd=obj_fd,
                                expected_attach_type=BpfAttachType.TRACE_FENTRY, attach_btf_id=attach_id)
        assert caught.value.errno == wanted
    kernel.close_all((fd, module, program_btf, loaded_btf))
    assert fake.open_fds == {}


# -- evspec verify --------------------------------------------------------------------------


def test_verify_loads_a_module_target_with_its_obj_fd(built: dict[str, bytes], blobs: dict[str, bytes],
                                                      fake: FakeKernel) -> None:
    kernel = Kernel(fake)
    kernel_btf = KernelBtf(kernel)
    results = [verify_object(spec_of(built, name), kernel, None, kernel_btf)
               for name in ("modtargets", "vmtargets", "nowhere", "modform")]
    programs = {p.name: p for r in results for p in r.programs}
    assert {name: p.loaded for name, p in programs.items()} == {
        "on_read": True, "on_tp": True, "on_unlink": True, "on_switch": True, "on_nothing": False, "on_form": False}
    testmod_fd = module_fd(fake, TESTMOD_ID)
    assert loads(fake) == {
        "on_read": (type_id(blobs, "bpf_testmod", "bpf_testmod_test_read", BtfKind.FUNC), testmod_fd, TESTMOD_ID),
        "on_tp": (type_id(blobs, "bpf_testmod", "btf_trace_bpf_testmod_test_read", BtfKind.TYPEDEF), testmod_fd,
                  TESTMOD_ID),
        "on_unlink": (type_id(blobs, "vmlinux", "do_unlinkat", BtfKind.FUNC), 0, 0),
        "on_switch": (type_id(blobs, "vmlinux", "btf_trace_sched_switch", BtfKind.TYPEDEF), 0, 0)}
    assert programs["on_nothing"].error == (
        "section 'fentry/evspec_nowhere': the kernel has no function 'evspec_nowhere' in its BTF (neither "
        "vmlinux's nor any of its 2 modules'); libbpf fails the same way (ESRCH)")
    assert programs["on_form"].error is not None and "is the MODULE:FUNC form of a target" in programs["on_form"].error
    assert {name: p.attach_target for name, p in programs.items() if p.attach_target} == {
        "on_read": "bpf_testmod:bpf_testmod_test_read", "on_tp": "bpf_testmod:bpf_testmod_test_read"}
    text = io.StringIO()
    _render_text(results, text)
    assert "program on_read (fentry/bpf_testmod_test_read): loaded for bpf_testmod:bpf_testmod_test_read, " in (
        text.getvalue())
    assert "program on_unlink (fentry/do_unlinkat): loaded, " in text.getvalue()
    assert len(fake.calls_of("BPF_BTF_GET_NEXT_ID")) == 5  # the modules listed once, for the first of them
    assert set(fake.open_fds.values()) == {"btf"} and len(fake.btf_fds) == 2  # held for the programs' loads
    kernel_btf.close()
    assert fake.open_fds == {}


# -- evspec check ---------------------------------------------------------------------------


def check_env(built: dict[str, bytes], tmp_path: Path, core_target: object,
              snapshot: SnapshotSystem | None = None) -> ObjectEnvironment:
    for name in PROGRAMS:
        (tmp_path / f"{name}.o").write_bytes(built[name])
    more = {} if snapshot is None else {"extern_facts": extern_facts_of(snapshot)}
    return ObjectEnvironment(cwd=tmp_path, tracepoint_exists=lambda system, event: True, kprobe_events=True,
                             uprobe_events=True, read_object=lambda path: read_object_bytes(path.read_bytes(),
                                                                                             path.name),
                             core_target=core_target, **more)  # type: ignore[arg-type]


def bpf_event(path: str) -> BpfEvent:
    return BpfEvent(path, False, None, None, Span(0, len(path)), Span(0, len(path)))


def test_check_searches_this_machines_module_btfs(built: dict[str, bytes], blobs: dict[str, bytes],
                                                  tmp_path: Path) -> None:
    def kernel() -> TargetBtf:
        return TargetBtf(blobs["vmlinux"], "vmlinux", cache=False,
                         modules=lambda: [(m, blobs[m]) for m in ("bpf_othermod", "bpf_testmod")])

    env = check_env(built, tmp_path, kernel)
    assert check_bpf_event(bpf_event("./modtargets.o"), env, {}) == []
    assert check_bpf_event(bpf_event("./shared.o"), env, {}) == []
    [d] = check_bpf_event(bpf_event("./nowhere.o"), env, {})
    assert (d.code, d.message) == ("EB108", "section 'fentry/evspec_nowhere': the kernel has no function "
                                   "'evspec_nowhere' in its BTF (neither vmlinux's nor any of its 2 modules'); libbpf "
                                   "fails the same way (ESRCH)")


@pytest.mark.parametrize(("modules", "said"), [
    (None, "not listed"),  # a snapshot without extern sources: the machine's module BTFs are not known
    (("bpf_testmod", "nf_nat"), "bpf_testmod, nf_nat"),
])
def test_check_against_a_snapshot_does_not_know_the_modules_btf(
    built: dict[str, bytes], blobs: dict[str, bytes], tmp_path: Path, modules: tuple[str, ...] | None, said: str,
) -> None:
    """A snapshot holds vmlinux's BTF alone: a target vmlinux lacks may be in a module's, so it is
    not checked (a warning), where the machine itself would tell."""
    snapshot = _snapshot(blobs, modules)
    env = check_env(built, tmp_path, core_target_of(snapshot), snapshot)
    assert check_bpf_event(bpf_event("./vmtargets.o"), env, {}) == []
    [d] = check_bpf_event(bpf_event("./modtargets.o"), env, {})  # tp_btf is checked against tracefs
    assert not d.is_error
    assert d.message == ("section 'fentry/bpf_testmod_test_read': fentry target 'bpf_testmod_test_read' not checked: "
                         "it is not in vmlinux's BTF, and the snapshot does not hold the BTF of the machine's modules "
                         f"({said}), where libbpf looks next: check on the machine itself")


def test_check_against_a_snapshot_of_a_machine_without_module_btf(built: dict[str, bytes], blobs: dict[str, bytes],
                                                                 tmp_path: Path) -> None:
    """The snapshot says the machine had no module BTF: a target vmlinux lacks is missing there."""
    snapshot = _snapshot(blobs, ())
    env = check_env(built, tmp_path, core_target_of(snapshot), snapshot)
    [d] = check_bpf_event(bpf_event("./modtargets.o"), env, {})
    assert (d.code, d.is_error, d.message) == ("EB108", True, "section 'fentry/bpf_testmod_test_read': the kernel has "
                                               "no function 'bpf_testmod_test_read' in its BTF; libbpf fails the same "
                                               "way (ESRCH)")


def _snapshot(blobs: dict[str, bytes], modules: tuple[str, ...] | None) -> SnapshotSystem:
    data: dict[str, object] = {"evspec_system": SNAPSHOT_VERSION, "kernel_btf": encode_btf(blobs["vmlinux"])}
    if modules is not None:
        data["extern_sources"] = encode_extern_facts(ExternFacts(
            release="6.18.0", version="#1", machine="x86_64", version_signature=None, kconfig=None,
            kconfig_unreadable=(), kconfig_invalid=None, kallsyms=(), kallsyms_unreadable="", ambiguous={},
            module_btfs=modules))
    return SnapshotSystem(data)


def test_check_explains_the_module_func_form(built: dict[str, bytes], blobs: dict[str, bytes], tmp_path: Path) -> None:
    """The section grammar refuses the ':' (its caret in the note); the help says what verify says."""
    env = check_env(built, tmp_path, lambda: TargetBtf(blobs["vmlinux"]))
    [d] = check_bpf_event(bpf_event("./modform.o"), env, {})
    assert d.code == "EB107" and d.message.endswith("unexpected ':'")
    assert any("is the MODULE:FUNC form of a target, which libbpf takes from version 1.5 on" in h for h in d.help)
