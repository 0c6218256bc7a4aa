"""`evspec check` resolves a BPF object's __kconfig and __ksym externs and kfuncs (issue #11)
against this machine or a system snapshot written with `--btf`, without the kernel layer: each
extern on its own, the ones that would fail the load errors in verify's words, weak ones that do
not resolve warnings, what a snapshot does not hold "not checked".

- Differential (root): for each fixture of tests/data/check_externs/, `check --system live` has
  an error exactly when `evspec verify` fails for an extern, naming that extern in its words; and
  `check --system SNAPSHOT` (written here with --btf) says what `--system live` says.
- LINUX_HAS_BPF_COOKIE told from the BTF agrees with libbpf's probe (a program load) here; the
  values resolved offline are the ones the loader resolves.
- The snapshot's `extern_sources` block: what it holds (no kallsyms address), a snapshot without
  it (not checked, saying why), a damaged one (EB020 naming the field), a Kconfig or kallsyms the
  snapshot's writer could not read, hidden kallsyms addresses, module BTFs (this machine's are
  searched, a snapshot records only their names).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from bpf_build import build_bpf, require_tools
from corpus_files import DATA
from evspec.loader.btf.reader import BtfKind, RawType, type_info, write_btf
from evspec.loader.btf.target import TargetBtf
from evspec.loader.externs import kconfig as kc
from evspec.loader.externs.module_ksyms import NO_FD, unopened_modules
from evspec.loader.externs.resolve import (
    has_attach_cookie,
    offline_sources,
    resolve_externs,
    running_system,
)
from evspec.loader.kernel import Kernel
from evspec.loader.lint.event import ObjectEnvironment, check_bpf_event, this_machine_facts
from evspec.loader.load.live import _has_bpf_cookie
from evspec.loader.load.syscall_wrapper import has_syscall_wrapper
from evspec.loader.object.reader import read_object, read_object_bytes
from evspec.loader.object.spec import ObjectSpec
from test_module_btf import blobs, built  # noqa: F401  (fixtures)

from evspec.ast import BpfEvent
from evspec.cli import main
from evspec.cli.system import snapshot_main
from evspec.codes import lookup
from evspec.span import Span
from evspec.system.fixtures import corpus_data
from evspec.system.live import LiveSystem
from evspec.system.model import ExternFacts
from evspec.system.snapshot import SnapshotSystem, encode_btf

FIXTURES = DATA / "check_externs"
EXTERN = re.compile(r"extern '([^']+)'")
EXTERN_CODES = ("EB016", "EB017", "EB018", "EB019", "EB020", "WB003", "WB004", "WB005")


def _ambiguous_name() -> str | None:
    """A name /proc/kallsyms lists at two addresses that can be a C identifier (None: none here)."""
    facts = LiveSystem().extern_facts(kconfig=False)
    names = sorted(n for n in facts.ambiguous or {} if re.fullmatch(r"[a-z][a-z0-9_]*", n) and not n.startswith("bpf"))
    return names[0] if names else None


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tools("clang")
    out = tmp_path_factory.mktemp("check-externs")
    ambiguous = _ambiguous_name() if os.geteuid() == 0 else None
    for source in sorted(FIXTURES.glob("*.c")):
        if source.stem == "ksym_ambiguous":
            if ambiguous is None:
                continue
            build_bpf(out, str(source), f"{source.stem}.o", f"-DAMBIGUOUS={ambiguous}")
        else:
            build_bpf(out, str(source), f"{source.stem}.o")
    (out / "ambiguous.txt").write_text(ambiguous or "")
    return out


@pytest.fixture(scope="module")
def snapshot_file(objects: Path) -> Path:
    path = objects / "snap.json"
    assert snapshot_main(argparse.Namespace(output=str(path), btf=True)) == 0
    return path


def _named(message: str) -> str:
    found = EXTERN.search(message)
    assert found is not None, message
    return found.group(1)


def _check(objects: Path, system: str, obj: str, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    monkeypatch.chdir(objects)
    capsys.readouterr()
    main(["check", "--system", system, "--format", "json", "-e", f"./{obj}.o"])
    diags: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["diagnostics"]
    assert all(d["span"] == {"start": 0, "end": len(obj) + 4} for d in diags), diags
    return diags


def _verify_extern_failure(objects: Path, obj: str, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> str | None:
    """verify's words when it fails for an extern (without the object's path), else None."""
    monkeypatch.chdir(objects)
    capsys.readouterr()
    main(["verify", f"{obj}.o", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    errors = [e["error"] for e in (*report["programs"], *report["maps"]) if e["error"] and "extern '" in e["error"]]
    if not errors:
        return None
    return errors[0].split(f"{obj}.o: ", 1)[1]


def _kallsyms_has(name: str) -> bool:
    with open("/proc/kallsyms") as f:
        return any(line.split()[2] == name for line in f)


def _expected(obj: str, objects: Path) -> list[tuple[str, str]]:
    """What `check --system live` says of each fixture here: (code, extern named), in order."""
    config, _ = kc.read_kconfig(os.uname().release)
    localversion = config.get("CONFIG_LOCALVERSION", '""')
    # a typeless ksym of a data symbol is in kallsyms only with CONFIG_KALLSYMS_ALL
    prog_active = [] if _kallsyms_has("bpf_prog_active") else [("EB017", "bpf_prog_active")]
    return {
        "kconfig_strong_missing": [("EB017", "CONFIG_EVSPEC_NOPE")],
        "kconfig_weak_missing": [("WB003", "CONFIG_EVSPEC_NOPE"), ("WB003", "LINUX_EVSPEC_NOPE")],
        "kconfig_type_mismatch": [("EB018", "CONFIG_HZ")],
        "kconfig_cut": [("WB005", "CONFIG_LOCALVERSION")] if len(localversion) > 3 else [],
        "kfunc_strong_missing": [("EB017", "bpf_evspec_nokfunc")],
        "kfunc_weak_missing": [("WB003", "bpf_evspec_nokfunc")],
        "ksym_typed": [("WB003", "evspec_no_such_var")],
        "ksym_typed_mismatch": [("EB018", "bpf_prog_active")],
        "ksym_typeless": [("WB003", "evspec_no_such_symbol")],
        "ksym_typeless_missing": [("EB017", "evspec_no_such_symbol")],
        "ksym_ambiguous": [("EB017", (objects / "ambiguous.txt").read_text())],
        "virtual": [],
        "several": [("EB017", "CONFIG_EVSPEC_NOPE"), *prog_active, ("EB017", "bpf_evspec_nokfunc")],
    }[obj]


# ------------------------------------------------------------------------------- differential


@pytest.mark.parametrize("obj", sorted(p.stem for p in FIXTURES.glob("*.c")))
def test_check_errs_exactly_when_verify_fails_for_an_extern_and_a_snapshot_says_the_same(
        root_kernel: None, objects: Path, snapshot_file: Path, obj: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    if not (objects / f"{obj}.o").exists():
        pytest.skip("/proc/kallsyms lists no name at two addresses here")
    live = _check(objects, "live", obj, monkeypatch, capsys)
    extern_codes = [d for d in live if d["code"] in EXTERN_CODES]
    assert [(d["code"], _named(d["message"])) for d in extern_codes] == _expected(obj, objects)
    errors = {_named(d["message"]): d["message"] for d in live if d["severity"] == "error"}
    verify = _verify_extern_failure(objects, obj, monkeypatch, capsys)
    assert (verify is not None) == bool(errors), (verify, errors)
    if verify is not None:
        named = _named(verify)
        assert named in errors
        if "is ambiguous" in verify:  # check knows no address: it says how many there are
            assert errors[named] == verify.split(" has it at ")[0] + " has it at 2 different addresses"
        else:
            assert errors[named] == verify
    snapshot = _check(objects, str(snapshot_file), obj, monkeypatch, capsys)
    release = os.uname().release

    def seen(diags: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
        return [(d["code"], d["severity"], d["message"].replace(f"(vmlinux {release})", "(vmlinux)")) for d in diags]

    assert seen(snapshot) == seen(live)


def test_several_failures_are_each_an_error_on_the_objects_span(root_kernel: None, objects: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(objects)
    capsys.readouterr()
    assert main(["check", "--system", "live", "-e", "./several.o", "-e", "./virtual.o"]) == 1
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "error[EB017]: extern 'CONFIG_EVSPEC_NOPE' (kconfig, int) is strong and cannot be resolved: " in text
    assert "error[EB017]: extern 'bpf_evspec_nokfunc' (kfunc, void (void)) is strong and cannot be resolved: the " \
           "kernel's BTF (vmlinux) has no function 'bpf_evspec_nokfunc', nor has any module's" in text
    assert "virtual.o" not in text  # its externs all resolve


def test_check_of_an_object_with_externs_loads_no_kernel_layer(objects: Path) -> None:
    code = ("import sys\nfrom evspec.cli import main\n"
            "status = main(['check', '--system', 'live', '-e', './several.o', '-e', './virtual.o'])\n"
            "print('kernel=' + ','.join(m for m in sys.modules if m.startswith('evspec.loader.kernel')))\n"
            "print(f'status={status}')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=objects, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1"}, check=True)
    *_, kernel, status = proc.stdout.splitlines()
    assert status == "status=1" and "EB017" in proc.stdout + proc.stderr
    assert kernel == "kernel="


# --------------------------------------------------------------------- what is resolved offline


def test_the_bpf_cookie_told_from_btf_is_what_libbpfs_probe_finds(root_kernel: None) -> None:
    kernel = Kernel()
    assert has_attach_cookie(TargetBtf.running_kernel()) is _has_bpf_cookie(kernel) is True


def _btf_with_func_ids(*names: str) -> TargetBtf:
    strings = b"\0bpf_func_id\0" + b"".join(n.encode() + b"\0" for n in names)
    at = 13
    values = b""
    for i, name in enumerate(names):
        values += (at).to_bytes(4, "little") + i.to_bytes(4, "little")
        at += len(name) + 1
    enum = RawType(1, type_info(BtfKind.ENUM, len(names)), 4, values)
    return TargetBtf(write_btf([enum], strings), "vmlinux", cache=False)


def test_the_bpf_cookie_is_the_enumerator_of_enum_bpf_func_id() -> None:
    assert has_attach_cookie(_btf_with_func_ids("BPF_FUNC_unspec", "BPF_FUNC_get_attach_cookie"))
    assert not has_attach_cookie(_btf_with_func_ids("BPF_FUNC_unspec", "BPF_FUNC_get_func_ip"))
    assert not has_attach_cookie(TargetBtf(write_btf([], b"\0"), "vmlinux", cache=False))


@pytest.mark.parametrize("obj", ["virtual", "kconfig_weak_missing", "kconfig_cut", "kfunc_weak_missing", "ksym_typed"])
def test_values_resolved_offline_are_the_loaders(root_kernel: None, objects: Path, obj: str) -> None:
    spec = read_object(objects / f"{obj}.o")
    kernel = Kernel()
    theirs = resolve_externs(spec, running_system(spec, lambda: _has_bpf_cookie(kernel),
                                                 syscall_wrapper=lambda m: has_syscall_wrapper(m, lambda: kernel)))
    facts = this_machine_facts(spec)
    vmlinux = TargetBtf.running_kernel()
    ours = resolve_externs(spec, offline_sources(
        spec, release=facts.release, version=facts.version, machine=facts.machine,
        version_signature=facts.version_signature, kconfig=lambda: _config(facts),
        kallsyms_names=lambda: facts.kallsyms or (), vmlinux=lambda: vmlinux, modules=lambda: unopened_modules(vmlinux),
        kprobes=facts.kprobes))
    assert (ours.kconfig, ours.ksyms, ours.kfuncs, ours.warnings) == (theirs.kconfig, theirs.ksyms, theirs.kfuncs,
                                                                     theirs.warnings)
    if obj == "virtual":  # LINUX_HAS_BPF_COOKIE, LINUX_HAS_SYSCALL_WRAPPER (1 where kprobes can be made)
        assert ours.kconfig[4:6] == b"\1" + bytes([facts.kprobes is True])


def _config(facts: ExternFacts) -> tuple[Any, str]:
    assert facts.kconfig is not None
    return facts.kconfig


# -------------------------------------------------------------------------------- the snapshot


def _lasting(symbols: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """kallsyms without the symbols of BPF programs, which come and go with every load."""
    return [s for s in symbols if not s[1].startswith("bpf_prog_")]


def test_a_snapshot_with_btf_records_the_extern_sources_without_addresses(root_kernel: None,
                                                                          snapshot_file: Path) -> None:
    raw = json.loads(snapshot_file.read_text())["extern_sources"]
    recorded = SnapshotSystem(json.loads(snapshot_file.read_text())).extern_facts()
    here = LiveSystem().extern_facts()
    uname = os.uname()
    assert raw["uname"] == {"release": uname.release, "version": uname.version, "machine": uname.machine}
    assert (recorded.release, recorded.version, recorded.machine, recorded.version_signature) == (
        here.release, here.version, here.machine, here.version_signature)
    assert recorded.kconfig == here.kconfig and recorded.kconfig is not None
    assert dict(recorded.kconfig[0]) == kc.read_kconfig(uname.release)[0]
    assert recorded.kallsyms is not None and here.kallsyms is not None
    # a BPF program anyone loads meanwhile adds its own bpf_prog_* symbol: compare the kernel's
    assert _lasting(recorded.kallsyms) == _lasting(here.kallsyms)
    assert raw["kallsyms"]["lines"] == len(recorded.kallsyms) > 1000
    assert recorded.ambiguous == here.ambiguous and recorded.ambiguous  # root: the addresses were compared
    assert recorded.module_btfs == tuple(sorted(set(os.listdir("/sys/kernel/btf")) - {"vmlinux"}))
    assert recorded.recorded and not here.recorded
    with open("/proc/kallsyms") as f:
        address = next(line.split()[0] for line in f if line.split()[2] == "__x64_sys_bpf")
    from evspec.system.snapshot import decode_btf

    text = decode_btf(raw["kallsyms"], "extern_sources.kallsyms").decode()
    assert "T __x64_sys_bpf\n" in text and address not in text and address not in snapshot_file.read_text()


def test_a_snapshot_without_btf_records_no_extern_sources(tmp_path: Path) -> None:
    path = tmp_path / "plain.json"
    assert snapshot_main(argparse.Namespace(output=str(path), btf=False)) == 0
    assert "extern_sources" not in json.loads(path.read_text())


def _environment(cwd: Path, facts: Callable[[ObjectSpec], ExternFacts],
                 core_target: Callable[[], TargetBtf] | None = TargetBtf.running_kernel) -> ObjectEnvironment:
    return ObjectEnvironment(cwd=cwd, tracepoint_exists=lambda system, event: True, kprobe_events=True,
                             uprobe_events=True, core_target=core_target, extern_facts=facts)


def _findings(env: ObjectEnvironment, obj: str) -> list[tuple[str, bool, str, tuple[str, ...]]]:
    path = f"./{obj}.o"
    event = BpfEvent(path, False, None, None, Span(0, len(path)), Span(0, len(path)))
    return [(d.code, d.is_error, d.message, d.notes) for d in check_bpf_event(event, env, {}) if d.code in EXTERN_CODES]


def _snapshot_env(objects: Path, data: dict[str, Any]) -> ObjectEnvironment:
    from evspec.loader.lint.event import environment_from_system

    return environment_from_system(SnapshotSystem({**corpus_data(str(objects)), **data}, cwd=str(objects)), objects)


def _facts(**changes: Any) -> ExternFacts:  # noqa: ANN401
    fields: dict[str, Any] = {
        "release": "6.1.0-test", "version": "#1 SMP", "machine": "x86_64", "version_signature": None,
        "kconfig": ({"CONFIG_HZ": "250"}, "/boot/config-6.1.0-test"), "kconfig_unreadable": (),
        "kconfig_invalid": None, "kallsyms": (("T", "__x64_sys_bpf"), ("D", "__start_rodata")),
        "kallsyms_unreadable": "", "ambiguous": {}, "module_btfs": (), "recorded": True}
    fields.update(changes)
    return ExternFacts(**fields)


def test_an_older_snapshot_says_externs_were_not_checked(objects: Path) -> None:
    vmlinux = Path("/sys/kernel/btf/vmlinux").read_bytes()
    with_btf = _findings(_snapshot_env(objects, {"kernel_btf": encode_btf(vmlinux)}), "kconfig_cut")
    assert with_btf == [("WB004", False, "extern 'CONFIG_LOCALVERSION' (kconfig, char[2]) not checked: the system "
                         "snapshot holds no extern sources: write it again with 'evspec system snapshot --btf'", ())]
    [(code, is_error, message, notes)] = _findings(_snapshot_env(objects, {}), "kfunc_weak_missing")
    assert (code, is_error) == ("WB004", False)
    assert message == ("3 externs not checked: the system snapshot holds no extern sources: write it again with "
                       "'evspec system snapshot --btf' (it was written without --btf)")
    assert notes == ("extern 'bpf_rcu_read_lock' (kfunc, void (void))", "extern 'bpf_evspec_nokfunc' (kfunc, void "
                     "(void))", "extern 'bpf_rcu_read_unlock' (kfunc, void (void))")  # the object's order


def _recorded(objects: Path) -> dict[str, Any]:
    """A small extern_sources block for a snapshot of the corpus machine (its BTF: this kernel's)."""
    from evspec.system.snapshot import encode_extern_facts

    return {"kernel_btf": encode_btf(Path("/sys/kernel/btf/vmlinux").read_bytes()),
            "extern_sources": encode_extern_facts(_facts())}


def test_a_snapshot_without_a_usable_kernel_btf_leaves_kfuncs_unchecked(objects: Path) -> None:
    from evspec.system.snapshot import encode_extern_facts

    block = {"extern_sources": encode_extern_facts(_facts())}
    assert _findings(_snapshot_env(objects, block), "kfunc_weak_missing") == [
        ("WB004", False, "3 externs not checked: the system snapshot holds no kernel BTF",
         ("extern 'bpf_rcu_read_lock' (kfunc, void (void))", "extern 'bpf_evspec_nokfunc' (kfunc, void (void))",
          "extern 'bpf_rcu_read_unlock' (kfunc, void (void))"))]
    [(code, _, message, _)] = _findings(_snapshot_env(objects, {**block, "kernel_btf": encode_btf(b"junk")}),
                                        "ksym_typed")
    assert code == "WB004" and message.startswith("2 externs not checked: the kernel's BTF cannot be used: the "
                                                  "snapshot's kernel_btf: ")
    assert _findings(_snapshot_env(objects, block), "kconfig_weak_missing")[0][:2] == ("WB003", False)  # no BTF needed


@pytest.mark.parametrize(("damage", "field"), [
    (lambda b: b["kallsyms"].update(data="not base64!"), "extern_sources.kallsyms cannot be decoded"),
    (lambda b: b["kallsyms"].update(data="bm90IHpsaWI="), "extern_sources.kallsyms cannot be decoded"),
    (lambda b: b["kallsyms"].update(lines=7), "extern_sources.kallsyms has 2 lines, not the 7 it says"),
    (lambda b: b["kallsyms"].update(ambiguous=["x"]), "extern_sources.kallsyms.ambiguous is not an object"),
    (lambda b: b["kallsyms"].update(encode_btf(b"T two words here\n")), "extern_sources.kallsyms, line 1: 'T two "
                                                                        "words here' is not 'LETTER NAME'"),
    (lambda b: b["kconfig"].update(encode_btf(b"HZ=1\n")), "extern_sources.kconfig, line 1: 'HZ=1' is not "
                                                           "CONFIG_NAME=VALUE"),
    (lambda b: b["kconfig"].update(size=3), "extern_sources.kconfig is "),
    (lambda b: b.update(kconfig=[]), "extern_sources.kconfig is not a JSON object"),
    (lambda b: b["kconfig"].clear(), "extern_sources.kconfig has neither data nor a list of [FILE, WHY]"),
    (lambda b: b["uname"].update(release=5), "extern_sources.uname.release is not a string"),
    (lambda b: b.pop("uname"), "extern_sources.uname is not a JSON object"),
    (lambda b: b.update(version_signature=1), "extern_sources.version_signature is not a string"),
    (lambda b: b.update(module_btfs="nf_nat"), "extern_sources.module_btfs is not a list of module names"),
], ids=["base64", "zlib", "lines", "ambiguous", "kallsyms-line", "kconfig-line", "size", "kconfig-type",
        "kconfig-empty", "release", "uname", "signature", "modules"])
def test_a_damaged_extern_block_is_an_error_naming_the_field(objects: Path, damage: Callable[[dict[str, Any]], None],
                                                             field: str) -> None:
    data = _recorded(objects)
    damage(data["extern_sources"])
    [(code, is_error, message, _)] = _findings(_snapshot_env(objects, data), "virtual")
    assert (code, is_error) == ("EB020", True)
    assert message.startswith("the object's externs cannot be checked: the snapshot's ") and field in message


def test_a_damaged_block_through_the_cli(objects: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    data = {**corpus_data(str(objects)), **_recorded(objects)}
    data["extern_sources"]["kallsyms"]["data"] = "%%%"
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(data))
    monkeypatch.chdir(objects)
    assert main(["check", "--system", str(path), "-e", "./virtual.o"]) == 1
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "error[EB020]: the object's externs cannot be checked: the snapshot's extern_sources.kallsyms cannot " \
           "be decoded" in out
    assert main(["explain", "EB020"]) == 0 and "extern sources cannot be used" in capsys.readouterr().out


@pytest.mark.parametrize("code", ["EB020", "WB003", "WB004", "WB005"])
def test_the_new_codes_are_explained(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    info = lookup(code)
    assert info is not None and info.title and info.explanation and info.fix
    assert main(["explain", code]) == 0
    assert info.title in capsys.readouterr().out


def test_an_unread_kconfig_leaves_its_externs_unchecked_and_the_others_checked(objects: Path) -> None:
    from evspec.system.snapshot import encode_extern_facts

    tried = (("/boot/config-6.1.0-test", "Permission denied"), ("/proc/config.gz", "No such file or directory"))
    data = _recorded(objects)
    data["extern_sources"] = encode_extern_facts(_facts(kconfig=None, kconfig_unreadable=tried))
    found = _findings(_snapshot_env(objects, data), "several")
    assert found[0] == ("EB017", True, "extern 'bpf_prog_active' (ksym, void) is strong and cannot be resolved: "
                        "/proc/kallsyms has no such symbol", ())
    assert found[1][:2] == ("EB017", True) and "'bpf_evspec_nokfunc'" in found[1][2]
    assert found[2] == ("WB004", False, "2 externs not checked: the Kconfig of the snapshot's machine could not be "
                        "read when the snapshot was written (/boot/config-6.1.0-test: Permission denied; "
                        "/proc/config.gz: No such file or directory)",
                        ("extern 'CONFIG_HZ' (kconfig, int)", "extern 'CONFIG_EVSPEC_NOPE' (kconfig, int)"))
    assert len(found) == 3  # LINUX_KERNEL_VERSION resolved (6.1.0), the rcu kfuncs too
    # on the machine itself an unreadable Kconfig fails the load: an error, in verify's words
    live = _environment(objects, lambda spec: _facts(kconfig=None, kconfig_unreadable=tried, recorded=False))
    [(code, is_error, message, notes)] = _findings(live, "kconfig_type_mismatch")
    assert (code, is_error, notes) == ("EB019", True, ("extern 'CONFIG_HZ' (kconfig, _Bool)",))
    assert message == ("extern 'CONFIG_HZ' needs the kernel's Kconfig, and none could be read "
                       "(/boot/config-6.1.0-test: Permission denied; /proc/config.gz: No such file or directory)")
    invalid = _environment(objects, lambda spec: _facts(kconfig=None, kconfig_invalid="/proc/config.gz, line 3: 'CONFIG_X' "
                                                        "has no value"))
    assert _findings(invalid, "kconfig_type_mismatch") == [
        ("EB018", True, "/proc/config.gz, line 3: 'CONFIG_X' has no value", ("extern 'CONFIG_HZ' (kconfig, _Bool)",))]


def test_an_unread_kallsyms_leaves_typeless_ksyms_unchecked(objects: Path) -> None:
    recorded = _environment(objects, lambda spec: _facts(kallsyms=None, kallsyms_unreadable="Permission denied"))
    assert _findings(recorded, "ksym_typeless_missing") == [
        ("WB004", False, "extern 'evspec_no_such_symbol' (ksym, void) not checked: /proc/kallsyms of the snapshot's "
         "machine could not be read when the snapshot was written (Permission denied)", ())]
    live = _environment(objects, lambda spec: _facts(kallsyms=None, kallsyms_unreadable="Permission denied",
                                                     recorded=False))
    assert _findings(live, "ksym_typeless_missing") == [
        ("EB017", True, "typeless ksym extern(s) 'evspec_no_such_symbol' need /proc/kallsyms, which cannot be read: "
         "Permission denied", ("extern 'evspec_no_such_symbol' (ksym, void)",))]
    # LINUX_HAS_SYSCALL_WRAPPER is 0 without kallsyms, as the loader makes it: no finding
    assert _findings(live, "virtual") == []


def test_ambiguous_typeless_ksyms_and_hidden_addresses(objects: Path) -> None:
    names = (("T", "__start_rodata"), ("t", "__start_rodata"), ("d", "evspec_no_such_symbol.llvm.7"),
             ("d", "evspec_no_such_symbol.llvm.9"))
    hidden = _environment(objects, lambda spec: _facts(kallsyms=names, ambiguous=None))
    assert _findings(hidden, "ksym_typeless_missing") == [
        ("WB004", False, "extern 'evspec_no_such_symbol' (ksym, void) not checked: /proc/kallsyms lists it 2 times, "
         "and its addresses were hidden (kptr_restrict) when it was read, so whether they differ cannot be told", ())]
    compared = _environment(objects, lambda spec: _facts(kallsyms=names, ambiguous={"evspec_no_such_symbol": 2}))
    assert _findings(compared, "ksym_typeless_missing") == [
        ("EB017", True, "extern 'evspec_no_such_symbol' (ksym) is ambiguous: /proc/kallsyms has it at 2 different "
         "addresses", ("extern 'evspec_no_such_symbol' (ksym, void)",))]
    once = _environment(objects, lambda spec: _facts(kallsyms=names[2:3], ambiguous=None))
    assert _findings(once, "ksym_typeless_missing") == []


# ------------------------------------------------------------------------------ module BTFs


def _modules_env(tmp_path: Path, built: dict[str, bytes], core_target: Callable[[], TargetBtf],  # noqa: F811
                 module_btfs: tuple[str, ...] | None) -> ObjectEnvironment:
    (tmp_path / "externs.o").write_bytes(built["externs"])
    env = _environment(tmp_path, lambda spec: _facts(module_btfs=module_btfs), core_target)
    return dataclasses.replace(env, read_object=lambda path: read_object_bytes(path.read_bytes(), path.name))


def test_this_machines_module_btfs_are_searched_without_descriptors(
        built: dict[str, bytes], blobs: dict[str, bytes], tmp_path: Path) -> None:  # noqa: F811
    def kernel() -> TargetBtf:
        return TargetBtf(blobs["vmlinux"], "vmlinux", cache=False,
                         modules=lambda: [(m, blobs[m]) for m in ("nf_conntrack", "nf_nat")])

    modules = unopened_modules(kernel())
    assert [(m.name, m.btf_id, m.fd, m.target.name) for m in modules] == [
        ("nf_conntrack", 1, NO_FD, "module nf_conntrack"), ("nf_nat", 2, NO_FD, "module nf_nat")]
    assert _findings(_modules_env(tmp_path, built, kernel, None), "externs") == [
        ("WB003", False, "weak extern 'bpf_nowhere' (kfunc, int (void)) does not resolve: the kernel's BTF (vmlinux) "
         "has no function 'bpf_nowhere', nor has any module's; its calls are poisoned (libbpf's call 2002000002): the "
         "verifier refuses the program if one can be reached", ())]

    def corrupt() -> TargetBtf:
        return TargetBtf(blobs["vmlinux"], "vmlinux", cache=False, modules=lambda: [("nf_nat", b"junk")])

    [(code, is_error, message, _)] = _findings(_modules_env(tmp_path, built, corrupt, None), "externs")[:1]
    assert (code, is_error) == ("EB017", True)
    assert "is not in vmlinux's BTF, and the module BTFs cannot be read: the BTF of module nf_nat:" in message


def test_a_snapshot_records_module_names_not_their_btf(built: dict[str, bytes], blobs: dict[str, bytes],  # noqa: F811
                                                       tmp_path: Path) -> None:
    def vmlinux() -> TargetBtf:  # a snapshot's: no module BTF beside it
        return TargetBtf(blobs["vmlinux"], "vmlinux 6.1.0-test", cache=False)

    unknown = _findings(_modules_env(tmp_path, built, vmlinux, None), "externs")
    assert [(c, e, m) for c, e, m, _ in unknown] == [
        ("WB004", False, "4 externs not checked: not in vmlinux's BTF; module BTF was not recorded")]
    assert unknown[0][3] == ("extern 'nf_conntrack_count' (ksym, unsigned int)",
                             "extern 'bpf_nat_flags' (kfunc, int (struct nf_nat_range *))",
                             "extern 'bpf_ct_set_mark' (kfunc, int (struct nf_conn *, unsigned int))",
                             "extern 'bpf_nowhere' (kfunc, int (void))")
    listed = _findings(_modules_env(tmp_path, built, vmlinux, ("nf_conntrack", "nf_nat")), "externs")
    assert listed[0][2] == ("4 externs not checked: not in vmlinux's BTF; module BTF was not recorded (the machine "
                            "has 2: nf_conntrack, nf_nat)")
    # a machine without module BTFs: vmlinux's is all there is, and the strong ones fail there
    none = _findings(_modules_env(tmp_path, built, vmlinux, ()), "externs")
    assert [(c, _named(m)) for c, _, m, _ in none] == [
        ("EB017", "nf_conntrack_count"), ("EB017", "bpf_nat_flags"), ("EB017", "bpf_ct_set_mark"),
        ("WB003", "bpf_nowhere")]
    assert none[2][2] == ("extern 'bpf_ct_set_mark' (kfunc, int (struct nf_conn *, unsigned int)) is strong and cannot "
                          "be resolved: the kernel's BTF (vmlinux 6.1.0-test) has no function 'bpf_ct_set_mark', nor "
                          "has any module's")


# ---------------------------------------------------------------------------- this machine


def test_the_live_systems_extern_facts_under_a_fake_root(tmp_path: Path) -> None:
    kernel = tmp_path / "proc" / "sys" / "kernel"
    kernel.mkdir(parents=True)
    (kernel / "osrelease").write_text("6.1.0-fake\n")
    (kernel / "version").write_text("#1 SMP Debian 6.1.76-1 (2024-02-01)\n")
    (kernel / "arch").write_text("aarch64\n")
    (tmp_path / "proc" / "version_signature").write_text("Ubuntu 6.1.0-1.1-generic 6.1.9\n")
    (tmp_path / "proc" / "kallsyms").write_text(
        "ffff0001 T __arm64_sys_bpf\n"
        "ffff0002 d counter.llvm.11\nffff0003 d counter.llvm.12\n"  # one name at two addresses
        "ffff0004 t twice\nffff0004 t twice\n"  # listed twice, at one address
        "ffff0005 t mod_sym\t[some_module]\n")
    (tmp_path / "boot").mkdir()
    (tmp_path / "boot" / "config-6.1.0-fake").write_text("# a config\nCONFIG_HZ=100\nCONFIG_HZ=300\n")
    btf = tmp_path / "sys" / "kernel" / "btf"
    btf.mkdir(parents=True)
    for name in ("vmlinux", "nf_nat", "nf_conntrack"):
        (btf / name).write_bytes(b"")
    facts = LiveSystem(tmp_path).extern_facts()
    assert (facts.release, facts.version, facts.machine) == ("6.1.0-fake", "#1 SMP Debian 6.1.76-1 (2024-02-01)",
                                                             "aarch64")
    assert facts.version_signature == "Ubuntu 6.1.0-1.1-generic 6.1.9\n"
    assert facts.kconfig == ({"CONFIG_HZ": "100"}, str(tmp_path / "boot" / "config-6.1.0-fake"))
    assert facts.kallsyms == (("T", "__arm64_sys_bpf"), ("d", "counter.llvm.11"), ("d", "counter.llvm.12"),
                              ("t", "twice"), ("t", "twice"), ("t", "mod_sym"))
    assert facts.ambiguous == {"counter": 2}
    assert facts.module_btfs == ("nf_conntrack", "nf_nat") and not facts.recorded
    unread = LiveSystem(tmp_path).extern_facts(kconfig=False, kallsyms=False)
    assert (unread.kconfig, unread.kconfig_unreadable, unread.kallsyms) == (None, (), None)
    (tmp_path / "boot" / "config-6.1.0-fake").unlink()
    (tmp_path / "proc" / "kallsyms").write_text("0000000000000000 T __arm64_sys_bpf\n0000000000000000 T a\n"
                                                "0000000000000000 t a\n")
    hidden = LiveSystem(tmp_path).extern_facts()
    assert hidden.kconfig is None and hidden.ambiguous is None
    assert [path for path, _ in hidden.kconfig_unreadable] == [str(tmp_path / "boot" / "config-6.1.0-fake"),
                                                                str(tmp_path / "proc" / "config.gz")]
    (tmp_path / "proc" / "kallsyms").unlink()
    assert LiveSystem(tmp_path).extern_facts().kallsyms_unreadable == "No such file or directory"


def test_the_syscall_wrapper_is_the_machines_arch(objects: Path) -> None:
    """LINUX_HAS_SYSCALL_WRAPPER: ``__<arch>_sys_bpf`` of the recorded machine (uname -m)."""
    spec = read_object(objects / "virtual.o")
    vmlinux = TargetBtf.running_kernel()

    def wrapper(machine: str, names: tuple[tuple[str, str], ...], kprobes: bool | None = None) -> bool:
        return offline_sources(spec, release="6.1.0", version="", machine=machine, version_signature=None,
                               kconfig=lambda: ({}, ""), kallsyms_names=lambda: names, vmlinux=lambda: vmlinux,
                               modules=lambda: (), kprobes=kprobes).syscall_wrapper

    assert wrapper("aarch64", (("T", "__arm64_sys_bpf"),))
    assert not wrapper("x86_64", (("T", "__arm64_sys_bpf"),))
    assert wrapper("x86_64", (("T", "__x64_sys_bpf"),))
    # libbpf 1.8 probes with a kprobe on that function: a kernel that makes no kprobe says 0
    assert wrapper("x86_64", (("T", "__x64_sys_bpf"),), kprobes=True)
    assert not wrapper("x86_64", (("T", "__x64_sys_bpf"),), kprobes=False)
