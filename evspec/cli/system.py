"""``evspec system snapshot``: this machine's PMUs, tracepoints, CPUs and features, for checks
elsewhere; with ``--btf`` also the kernel's BTF and what BPF externs are resolved against (uname,
Kconfig, the names of /proc/kallsyms), so that CO-RE relocations and externs can be checked
against this kernel there."""

from __future__ import annotations

import argparse
import sys

KERNEL_BTF = "/sys/kernel/btf/vmlinux"


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
    extern_facts = system.extern_facts() if kernel_btf is not None else None
    text = snapshot_text(system, kernel_btf=kernel_btf, extern_facts=extern_facts)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
