"""Plain-words explanations of why a perf release's verdict differs from a sane reading."""

from __future__ import annotations

from evspec.dialect.actions.pmu_symbols import SymbolKind

TYPE_CHECKING = False  # typing itself costs a cold start 2-3 ms

if TYPE_CHECKING:
    from evspec.dialect.actions.events import PerfState
    from evspec.dialect.engine.flexscan import Token
    from evspec.dialect.engine.lalr import Outcome
    from evspec.dialect.lexer import Lexing
    from evspec.dialect.versions import Profile

_SYMBOL_TOKENS = frozenset(k.value for k in SymbolKind)
_KEYWORD_TOKENS = frozenset(
    {"PE_NAME_CACHE_TYPE", "PE_NAME_CACHE_OP_RESULT", "PE_VALUE_SYM_HW", "PE_VALUE_SYM_SW", "PE_VALUE_SYM_TOOL",
     "PE_KERNEL_PMU_EVENT", "PE_RAW", "PE_MODIFIER_EVENT"}
)  # fmt: skip


def explain(
    text: str, raw: str, p: Profile, lexed: Lexing, state: PerfState, outcome: Outcome, accepted: bool,
    syntax_reported: bool = True,
) -> str | None:
    notes: list[str] = list(dict.fromkeys(state.quirks))
    if lexed.echoed:
        shown = "".join(sorted(set(lexed.echoed)))
        notes.append(
            f"perf {p.version}'s lexer cannot match {shown!r} in this position: it echoes it to stdout and skips it"
        )
    if accepted and lexed.skipped:
        chars = "".join(dict.fromkeys(raw[i] for i in lexed.skipped if i < len(raw)))
        notes.append(f"perf {p.version} silently skips characters it cannot lex ({chars!r}), so it accepts the string")
    for word in lexed.not_bpf:
        notes.append(
            f"perf {p.version} treats {word!r} as a BPF object only if it ends in .o, .c or .obj and stat() finds it; "
            "here it does not, so the word is lexed as something else"
        )
    bad = outcome.syntax_error_at
    if bad is not None and syntax_reported:
        notes += _syntax_notes(raw, p, lexed, bad)
    if state.errors.count > 2 and not p.error_list:
        notes.append(
            "perf keeps the column of its second error when a third one is recorded, so the last message may "
            "stand under another error's caret"
        )
    if not notes:
        return None
    return "; ".join(notes)


def _syntax_notes(raw: str, p: Profile, lexed: Lexing, bad: Token) -> list[str]:
    notes: list[str] = []
    tokens = lexed.tokens
    index = next(i for i, t in enumerate(tokens) if t is bad)
    window = tokens[max(index - 3, 0) : index + 1]
    for tok in window:
        if tok.kind in _SYMBOL_TOKENS:
            notes.append(
                f"on this machine {tok.text!r} is (part of) a PMU alias, so perf {p.version}'s lexer turns it into a "
                "special token that cannot stand here"
            )
        elif tok is bad and tok.kind in _KEYWORD_TOKENS:
            notes.append(f"{tok.text!r} is a keyword for perf {p.version}'s lexer wherever it appears, even here")
        elif tok.kind == "PE_NAME" and "[" in tok.text and p.arrays:
            notes.append(
                f"perf {p.version}'s name rule swallows {tok.text!r}, so the index list never reaches its own "
                "lexer state: only '[all]' and the '[ 0,...]' form (a blank after '[') work"
            )
    notes.append(
        "perf puts the caret of a syntax error under the lexeme before the offending one"
        if bad.kind != "$end"
        else "at the end of the string perf puts the caret under the second-to-last lexeme"
    )
    return notes


_NOT_SHOWN = frozenset({"PE_START_EVENTS", "PE_EVENT_NAME", "$end"})
_BEFORE_MODIFIER = frozenset({"PE_NAME", "PE_VALUE", "PE_RAW", "PE_MODIFIER_BP", "PE_VALUE_SYM_HW", "PE_VALUE_SYM_SW",
                              "PE_VALUE_SYM_TOOL", "PE_LEGACY_CACHE"})  # fmt: skip


def ran_as(lexed: Lexing, truncated: dict[int, int]) -> str:
    """The string an accepting perf ran, written so that it means the same without the quirks:
    the tokens it read (what it skipped or echoed left out), a modifier it took without a ':'
    given its ':', a number it truncated (``truncated``: column -> value) as that value."""
    out: list[str] = []
    previous = None
    for tok in lexed.tokens:
        if tok.kind in _NOT_SHOWN:
            continue
        text = tok.text
        if tok.kind == "PE_VALUE" and tok.loc.first in truncated:
            text = str(truncated[tok.loc.first])
        if tok.kind == "PE_MODIFIER_EVENT" and previous in _BEFORE_MODIFIER:
            text = ":" + text
        out.append(text)
        previous = tok.kind
    return "".join(out)
