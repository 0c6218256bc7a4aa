"""Codes of ``evspec check --perf VERSION``: where a given perf release disagrees (``EP…``)."""

from __future__ import annotations

from evspec.codes import CodeInfo

CODES: tuple[CodeInfo, ...] = (
    CodeInfo(
        "EP001",
        "the chosen perf rejects this string",
        "The string is valid in the evspec language, but the perf release named by --perf rejects "
        "it: a quirk of that release's lexer or grammar (characters it drops, names its machine "
        "turns into special tokens, broken index lists), a term it does not know, or a feature it "
        "does not have (perf 6.6 removed BPF objects), or a name its PMUs do not have (6.12 and "
        "later look every name up in their PMU list). The diagnostic quotes perf's own message "
        "and caret column (6.12 and later print every error they recorded: the others are notes) "
        "and says why.",
        "./a.o/map:channel.value[0,3...6]=1234/",
        "Write the string the way that perf reads it (the note says how, e.g. '[ 0]' for perf "
        "6.1's index lists), or run it with evspec record.",
    ),
    CodeInfo(
        "EP002",
        "the chosen perf fails silently on this string",
        "The perf release named by --perf rejects the string without printing an event syntax "
        "error (its parser aborts without recording one, or it finds no event at all): a user "
        "sees perf exit with an error and no explanation.",
        "",
        "Rewrite the string as the note suggests; evspec's diagnostics, if any, name the cause.",
    ),
)
