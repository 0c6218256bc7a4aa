"""``evspec system snapshot``: this machine's PMUs, tracepoints, CPUs and features, for checks
elsewhere; with ``--btf`` also the kernel's BTF and what BPF externs are resolved against (uname,
Kconfig, the names of /proc/kallsyms), so that CO-RE relocations and externs can be checked
against this kernel there."""

from __future__ import annotations

import argparse
import sys

from evspec.cli.app import Parser, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evspec.system.model import System, TracefsUnavailable

KERNEL_BTF = "/sys/kernel/btf/vmlinux"


def _unreadable_tracefs(system: System) -> TracefsUnavailable | None:
    """Why this user cannot read the machine's tracefs, when it is there (else None)."""
    from evspec.system.model import TracefsUnavailable

    try:
        system.tracepoint_systems()
    except TracefsUnavailable as exc:
        return exc if exc.denied is not None else None
    return None


def add_system_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("system", help="describe this machine for checks elsewhere")
    actions = p.add_subparsers(dest="system_command", metavar="ACTION", parser_class=Parser, required=True)
    s = actions.add_parser("snapshot", help="write a snapshot of this machine's PMUs, tracepoints and CPUs")
    s.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    s.add_argument("--btf", action="store_true",
                   help="also save the running kernel's BTF and what BPF externs resolve against (uname, "
                        "Kconfig, kallsyms names; compressed), for checking CO-RE relocations and "
                        "externs against this kernel elsewhere")
    s.add_argument("--without-tracefs", action="store_true",
                   help="write the snapshot even when this user cannot read tracefs (Debian mounts it "
                        "mode 0700): it then holds no tracepoints, and kprobe and uprobe support unknown")


def system_main(args: argparse.Namespace) -> int:
    """``system snapshot``, its only action."""
    return snapshot_main(args)


def snapshot_main(args: argparse.Namespace) -> int:
    from evspec.system import load_system
    from evspec.system.snapshot import snapshot_text

    kernel_btf = None
    if getattr(args, "btf", False):
        try:
            with open(KERNEL_BTF, "rb") as f:
                kernel_btf = f.read()
        except OSError as exc:
            print(f"evspec system snapshot: error: --btf: cannot read the kernel's BTF {KERNEL_BTF}: "
                  f"{exc.strerror or exc} (the kernel needs CONFIG_DEBUG_INFO_BTF=y)", file=sys.stderr)
            return 2
    system = load_system("live")
    assert system is not None
    unread = _unreadable_tracefs(system)
    if unread is not None:
        if not getattr(args, "without_tracefs", False):
            raise UsageError(
                f"{unread.reason}; the snapshot would hold no tracepoints and say nothing of kprobe or uprobe "
                f"support. Write it as root, or after 'mount -o remount,mode=755 {unread.denied}' (as root), or "
                "pass --without-tracefs to write it anyway (checks against it then say that tracepoints were not "
                "recorded)")
        print(f"evspec system snapshot: warning: {unread.reason}: written without tracepoints; kprobe and uprobe "
              "support unknown (null)", file=sys.stderr)
    extern_facts = system.extern_facts() if kernel_btf is not None else None
    text = snapshot_text(system, kernel_btf=kernel_btf, extern_facts=extern_facts)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
