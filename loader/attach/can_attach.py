"""Whether this kernel can attach one program, asked without leaving anything behind: what the
tools ask before they choose among alternatives (libbpf-tools' ``fentry_can_attach``,
``probe_tp_btf``, ``kprobe_exists``, ``tracepoint_exists``).

The attacher's own plan answers first (it loads and attaches a minimal fentry/fexit program for a
trampoline and closes it at once, looks up ``btf_trace_EVENT`` for a tp_btf program and the
tracepoint's id for a tracepoint, refuses a kprobe where the kernel has none); on top of it a raw
tracepoint is opened for a minimal program and closed, and a kprobe's function must be one
ftrace can probe (``available_filter_functions``, else ``/proc/kallsyms``).
"""

from __future__ import annotations

from collections.abc import Callable

from evspec.loader import asm
from evspec.loader.attach.attacher import Attacher
from evspec.loader.attach.attachment import AttachOptions
from evspec.loader.errors import ObjectError
from evspec.loader.kernel import Kernel, KernelError
from evspec.loader.object.spec import ObjectSpec, ProgramSpec, ProgType, replace
from evspec.loader.sections.names import AttachKind, ProbeTarget, RawTracepointTarget, parse_section

FILTER_FUNCTIONS = "/sys/kernel/tracing/available_filter_functions"
KALLSYMS = "/proc/kallsyms"


def kernel_functions(filter_functions: str = FILTER_FUNCTIONS, kallsyms: str = KALLSYMS) -> frozenset[str] | None:
    """The functions a kprobe can go on: ftrace's list, else the text symbols of kallsyms; None
    when neither can be read."""
    try:
        with open(filter_functions, encoding="utf-8", errors="replace") as f:
            return frozenset(line.split(maxsplit=1)[0] for line in f if line.strip())
    except OSError:
        pass
    try:
        with open(kallsyms, encoding="utf-8", errors="replace") as f:
            return frozenset(fields[2] for fields in (line.split() for line in f)
                             if len(fields) >= 3 and fields[1] in "tTwW")
    except OSError:
        return None


class AttachCheck:
    """``check(prog)``: None when ``prog`` of ``spec`` can be attached here, else why. It plans
    with an attacher of its own (planning claims probe names and notes what it plans), which
    ``close`` closes."""

    def __init__(self, kernel: Kernel, options: AttachOptions, spec: ObjectSpec,
                 functions: Callable[[], frozenset[str] | None] = kernel_functions) -> None:
        self._attacher = Attacher(kernel, options)
        self._spec = spec
        self._functions = functions
        self._function_set: frozenset[str] | None = None
        self._raw: dict[str, str | None] = {}

    def __call__(self, prog: ProgramSpec) -> str | None:
        try:
            self._attacher.plan(replace(self._spec, programs=(prog,)))
        except (ObjectError, KernelError) as exc:
            return exc.message.removeprefix(f"{self._spec.path}: ")
        section = parse_section(prog.section)
        target = section.target
        if section.attach is AttachKind.RAW_TRACEPOINT and isinstance(target, RawTracepointTarget):
            return self._raw_tracepoint(target.event)
        if section.attach is AttachKind.KPROBE and isinstance(target, ProbeTarget) and target.point.function:
            if self._function_set is None:
                self._function_set = self._functions() or frozenset()
            if self._function_set and target.point.function not in self._function_set:
                return f"kernel function '{target.point.function}' does not exist here or cannot be probed"
        return None

    def close(self) -> None:
        self._attacher.close()

    def __enter__(self) -> AttachCheck:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _raw_tracepoint(self, event: str) -> str | None:
        if event not in self._raw:
            kernel = self._attacher.kernel
            insns = asm.encode(asm.OP_MOV64_IMM) + asm.encode(asm.OP_EXIT)  # r0 = 0; exit
            try:
                fd = kernel.load_program(int(ProgType.RAW_TRACEPOINT), insns, "GPL", name="evspec_probe")
            except KernelError as exc:
                self._raw[event] = f"a raw tracepoint program cannot be loaded: {exc.message}"
                return self._raw[event]
            try:
                kernel.close(kernel.raw_tracepoint_open(event, fd))
                self._raw[event] = None
            except KernelError as exc:
                self._raw[event] = f"raw tracepoint '{event}' cannot be attached: {exc.message}"
            finally:
                kernel.close(fd)
        return self._raw[event]
