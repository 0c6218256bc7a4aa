"""Reading the BPF verifier's log: the error, the instruction it failed at, and its source line."""

from __future__ import annotations

import re
from collections.abc import Sequence

from evspec.loader.object.spec import LineInfo

from evspec.span import Slotted

# "12: (85) call bpf_map_lookup_elem#1" — an instruction the verifier walked.
_INSN_LINE = re.compile(r"^(\d+): \(([0-9a-f]{2})\) (.*)$")
# Errors of the CFG check come before any walked instruction and name it: "unreachable insn 3".
_INSN_IN_MESSAGE = re.compile(r"\binsn (\d+)\b")
# Statistics the verifier prints after its verdict, and the blank lines around them.
_TRAILER_PREFIXES = ("processed ", "verification time ", "stack depth ", "max_states_per_insn ")


class VerifierSummary(Slotted):
    message: str  # the verifier's own error line ("R0 !read_ok", "invalid mem access 'scalar'")
    insn_index: int | None = None  # the instruction it failed at, when the log says
    insn_text: str | None = None  # that instruction as the verifier printed it ("r0 = *(u32 *)(r1 +0)")
    source: LineInfo | None = None  # its source line, from the program's line info

    def render(self) -> str:
        parts = [self.message]
        if self.insn_index is not None:
            where = f"at insn {self.insn_index}"
            if self.insn_text:
                where += f" `{self.insn_text}`"
            parts.append(where)
        if self.source is not None:
            text = self.source.source_line.strip()
            parts.append(f"{self.source.file}:{self.source.line}" + (f": {text}" if text else ""))
        return "; ".join(parts)


def source_line(insn_index: int, line_info: Sequence[LineInfo]) -> LineInfo | None:
    """The line-info entry covering ``insn_index``: the last one starting at or before it."""
    best: LineInfo | None = None
    for entry in line_info:
        if entry.insn_offset <= insn_index and (best is None or entry.insn_offset >= best.insn_offset):
            best = entry
    return best


def summarize(log: str, line_info: Sequence[LineInfo] = ()) -> VerifierSummary:
    lines = [ln.rstrip() for ln in log.replace("\0", "").splitlines()]
    while lines and (not lines[-1] or lines[-1].startswith(_TRAILER_PREFIXES)):
        lines.pop()
    if not lines:
        return VerifierSummary("the verifier gave no reason (empty log)")
    message = lines[-1].strip()
    insn_index: int | None = None
    insn_text: str | None = None
    for ln in reversed(lines[:-1]):
        m = _INSN_LINE.match(ln)
        if m:
            insn_index, insn_text = int(m.group(1)), m.group(3).strip()
            break
    if insn_index is None:
        m = _INSN_IN_MESSAGE.search(message)
        if m:
            insn_index = int(m.group(1))
    source = source_line(insn_index, line_info) if insn_index is not None else None
    return VerifierSummary(message, insn_index, insn_text, source)
