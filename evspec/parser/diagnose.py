"""Syntax diagnostics: one precise diagnostic for the place where the LALR parser stopped.

``diagnose`` reads the parser's stop (the token or character it could not take, what it expected,
and its value stack) and names the problem as COMPAT 1.3 and the corpus README (*Spans*) describe:
stable code, the exact span, perf's message, and a help line where the fix is known.
"""

from __future__ import annotations

import re

from evspec import lexicon
from evspec.ast import Terms
from evspec.diagnostics import Diagnostic, error
from evspec.grammar.lalr import BLANKS, SyntaxStop, Tok
from evspec.parser.builder import PARSER_ERROR, end_of, is_tok, trimmed
from evspec.rules import value_help
from evspec.span import Slotted, Span

_OPENERS = {"LBRACE", "NAMED_LBRACE", "LSQB"}
_EVENT_START = {None, "_LEAD", "COMMA", "LBRACE", "NAMED_LBRACE"}
_WORDISH = {"NAME", "WORD", "TERM_KEY", "VALUE", "ALL"}
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_*?.!-[]")
_EXPECTED = {
    "NAME": "an event name", "NUMBER": "a number", "MEM": "mem:ADDR", "BPF_PATH": "a BPF object path",
    "LBRACE": "'{'", "NAMED_LBRACE": "'{'", "RBRACE": "'}'", "COMMA": "','", "COLON": "':'",
    "WORD": "modifier letters", "SLASH": "'/'", "BP_SLASH": "'/'", "BP_TERMS": "'/'", "TERM_KEY": "a term name",
    "DRIVER_TERM": "an @driver term", "EQUALS": "'='", "TERM_COMMA": "','", "VALUE": "a value",
    "LSQB": "'['", "RSQB": "']'", "RANGE": "'...'", "ALL": "'all'",
    "$END": "the end of the string", "_TRAIL": "the end of the string",
}


class _Stack(Slotted):
    """The parser's stack at an error, flattened to its leaves (tokens and finished AST nodes);
    the unclosed '{', '/', '[' in order; whether the last token closed a term list."""

    leaves: tuple[object, ...]
    opens: tuple[Tok, ...]
    prev_closes_terms: bool

    @staticmethod
    def of(stop: SyntaxStop) -> _Stack:
        leaves: list[object] = []
        for value in stop.values:
            _flatten(value, leaves)
        opens: list[Tok] = []
        closes = False
        for leaf in leaves:
            closes = False
            if type(leaf) is not Tok:
                continue
            kind = "SLASH" if leaf.type == "BP_TERMS" else leaf.type  # a breakpoint's term list
            if kind in _OPENERS:
                opens.append(leaf)
            elif kind == "RBRACE" and opens and opens[-1].type != "LSQB":
                opens.pop()
            elif kind == "RSQB" and opens and opens[-1].type == "LSQB":
                opens.pop()
            elif kind == "SLASH":
                if opens and opens[-1].type == "SLASH":
                    opens.pop()
                    closes = True
                else:
                    opens.append(leaf if leaf.type == "SLASH" else Tok("SLASH", str(leaf), leaf.start_pos, leaf.end_pos))
        return _Stack(tuple(leaves), tuple(opens), closes)

    @property
    def prev(self) -> object | None:
        return self.leaves[-1] if self.leaves else None

    @property
    def prev_type(self) -> str | None:
        prev = self.prev
        if prev is None:
            return None
        return prev.type if type(prev) is Tok else "node"

    def before_prev_type(self) -> str | None:
        if len(self.leaves) < 2:
            return None
        leaf = self.leaves[-2]
        return leaf.type if type(leaf) is Tok else "node"

    @property
    def in_group(self) -> bool:
        return any(t.type in ("LBRACE", "NAMED_LBRACE") for t in self.opens)

    def current_event(self) -> list[object]:
        """The leaves of the event being parsed (after the last ',' or '{' outside brackets)."""
        out: list[object] = []
        for leaf in reversed(self.leaves):
            if is_tok(leaf, "COMMA", "LBRACE", "NAMED_LBRACE", "_LEAD") and not (
                self.opens and self.opens[-1].type in ("SLASH", "LSQB")
                and leaf.start_pos > self.opens[-1].start_pos  # type: ignore[attr-defined]
            ):
                break
            out.append(leaf)
        return out[::-1]


def _flatten(value: object, out: list[object]) -> None:
    if isinstance(value, (list, tuple)):  # a spliced rule's children, or the items of 'events'
        for child in value:
            _flatten(child, out)
    else:
        out.append(value)


def _describe_char(c: str) -> str:
    if c.isprintable() and c not in BLANKS:
        return f"'{c}'"
    return f"U+{ord(c):04X}"


def diagnose(text: str, stop: SyntaxStop) -> Diagnostic:
    """Turn a parse stop into one precise diagnostic (COMPAT 1.3, corpus README *Spans*)."""
    stack = _Stack.of(stop)
    if stop.at_end:
        return _at_end(text, stack)
    tok = stop.token
    pos = stop.pos
    expected = set(stop.expected)
    if pos >= len(text):
        return _at_end(text, stack)
    char = text[pos]
    if tok is not None and tok.type == "VALUE" and str(tok).startswith("'"):
        tok = None  # a quote where no value may stand: report the quote character itself
    if char in BLANKS:
        return error(
            "ES003", "white space not allowed here (only around , { } and at the ends)",
            Span(pos, pos + 1), help=("remove the blank",), perf_message=None,
        )
    span = trimmed(tok) if tok is not None else Span(pos, pos + 1)
    if char == "]" and tok is not None:
        span = Span(pos, pos + 1)
    return _unexpected(text, stack, tok, span, expected)


def _at_end(text: str, stack: _Stack) -> Diagnostic:
    if stack.opens:
        opener = stack.opens[-1]
        start = trimmed(opener).start
        what = {
            "SLASH": ("term list is not closed (missing '/')", "close the term list with '/'"),
            "LSQB": ("index list is not closed (missing ']')", "close the index list with ']'"),
        }.get(opener.type, ("group is not closed (missing '}')", "close the group with '}'"))
        return error("ES004", what[0], Span(start, start + 1), help=(what[1],),
                     perf_message=None if opener.type.endswith("LBRACE") else PARSER_ERROR)
    prev = stack.prev
    if type(prev) is not Tok or prev.type == "_LEAD":
        if prev is None or is_tok(prev, "_LEAD"):
            return error("ES012", "empty event string (no event)", Span(0, len(text)),
                         help=("write an event, for example 'cycles'",), perf_message=None)
        end = end_of(prev)
        return error("ES001", "unexpected end of the event string", Span(end, end),
                     perf_message=PARSER_ERROR)
    span = trimmed(prev)
    kind = prev.type
    before = stack.before_prev_type()
    if kind == "COMMA":
        return trailing_comma(span.start)
    if kind == "COLON" and before == "NUMBER" and _numeric_type_colon(stack):
        return error("ES010", "expected a config number after ':'", span,
                     help=("a numeric event is TYPE:CONFIG, for example '1:0'",), perf_message=PARSER_ERROR)
    if kind == "COLON" and before == "RBRACE":
        return error("ES010", "expected group modifiers after ':'", span,
                     help=("remove the ':' or add modifiers such as ':u'",), perf_message=PARSER_ERROR)
    if kind == "NUMBER" and len(stack.current_event()) == 1:
        return error("ES010", "a numeric event needs ':CONFIG' after the type", span,
                     help=(f"for example '{prev}:0'",), perf_message=PARSER_ERROR)
    if kind == "BP_SLASH":
        return error("ES010", "expected a breakpoint length after '/'", span,
                     help=("write the length in bytes, for example 'mem:0x1000/8'",),
                     perf_message=PARSER_ERROR)
    if kind == "EQUALS":
        return error("ES010", "expected a value after '='", span, perf_message=PARSER_ERROR)
    return error("ES001", f"unexpected end of the event string after '{prev}'", span,
                 perf_message=PARSER_ERROR)


def _index_item_span(text: str, pos: int) -> Span:
    """The bad item of an index list at ``pos``: up to the next ',', ']', '...' or blank (a token
    may run on past the item: 'x]' lexes as one word)."""
    end = pos + 1
    while end < len(text) and text[end] not in ",]" and text[end] not in BLANKS and not text.startswith("...", end):
        end += 1
    return Span(pos, end)


def _key_before_equals(stack: _Stack) -> str:
    """The term key before the '=' that ends the stack ('' when it is no key token)."""
    leaf = stack.leaves[-2] if len(stack.leaves) >= 2 else None
    return str(leaf) if type(leaf) is Tok and leaf.type == "TERM_KEY" else ""


def _numeric_type_colon(stack: _Stack) -> bool:
    event = stack.current_event()
    return len(event) == 2 and is_tok(event[0], "NUMBER")


def _unexpected(text: str, stack: _Stack, tok: Tok | None, span: Span, expected: set[str]) -> Diagnostic:
    pos = span.start
    char = text[pos]
    shown = f"'{text[span.start:span.end]}'" if tok is not None else _describe_char(char)
    kind = tok.type if tok is not None else None
    prev = stack.prev
    prev_type = stack.prev_type
    top = stack.opens[-1].type if stack.opens else None

    def err(code: str, message: str, where: Span = span, *help_lines: str) -> Diagnostic:
        return error(code, message, where, help=help_lines, perf_message=PARSER_ERROR)

    if char == "'" and text.find("'", pos + 1) < 0:
        return err("ES004", "quoted value is not closed (missing \"'\")", Span(pos, pos + 1))
    if top == "LSQB":
        lsqb = stack.opens[-1]
        if char == "]" and prev_type == "LSQB":
            return err("ES006", "empty index list", Span(lsqb.start_pos, span.end),
                       "list indices and ranges (e.g. [0,3...6]) or write [all]")
        if text.find("]", pos) < 0:
            return err("ES004", "index list is not closed (missing ']')", Span(lsqb.start_pos, lsqb.start_pos + 1))
        item = _index_item_span(text, pos)
        return err("ES001", f"unexpected '{text[item.start:item.end]}' in an index list",
                   item, "an index list holds numbers and ranges a...b separated by ',', or 'all'")
    if kind == "RBRACE":
        if prev_type in ("LBRACE", "NAMED_LBRACE"):
            return err("ES005", "empty group", Span(trimmed(prev).start, span.end),  # type: ignore[arg-type]
                       "a group needs at least one event")
        if not stack.in_group:
            return err("ES001", "unexpected '}' (no group is open)", span, "remove the '}' or open the group with '{'")
        if prev_type == "COMMA":
            return err("ES001", "unexpected '}' (an event must come first)", span, "remove the trailing ','")
    if kind in ("LBRACE", "NAMED_LBRACE") and stack.in_group:
        return err("ES007", "groups cannot be nested", Span(span.end - 1, span.end))
    if kind == "COMMA" and prev_type in _EVENT_START:
        return err("ES001", "unexpected ',' (an event must come first)", span)
    if prev_type == "BPF_PATH" and kind == "COLON":
        return _bpf_colon(text, prev, span)  # type: ignore[arg-type]
    after_terms = stack.prev_closes_terms or isinstance(prev, Terms)
    if after_terms and kind == "COLON" and any(is_tok(x, "BPF_PATH") for x in stack.current_event()):
        return err("ES008", "modifiers follow the closing '/' directly (no ':')", span, "remove the ':'")
    if kind in ("SLASH", "BP_SLASH", "BP_TERMS"):
        event = stack.current_event()
        if after_terms:
            return err("ES009", "only one term list per event", span, "put all terms in one /.../ list")
        if any(is_tok(x, "MEM") for x in event):
            return err("ES009", "a breakpoint takes one /LEN and one /term list/ (a term list does not "
                       "start with a digit)", span)
        if prev_type == "WORD":
            return err("ES009", "a term list must come before the modifiers", span)
    if prev_type == "COLON":
        if _numeric_type_colon(stack):
            return err("ES010", "expected a config number after ':'", span,
                       "a numeric event is TYPE:CONFIG, for example '1:0'")
        if stack.before_prev_type() == "RBRACE":
            return err("ES010", f"unexpected {shown} after ':' (expected group modifiers)", span)
        return err("ES001", f"unexpected text after ':' ({shown})", span,
                   "after ':' come modifier letters (u k h I G H p P S D W e b) or a tracepoint event")
    if kind == "COLON" and prev_type == "WORD":
        return err("ES008", "only one modifier list per event", span, "write all modifier letters after one ':'")
    if prev_type == "BP_SLASH":
        return err("ES010", "expected a breakpoint length after '/'", span)
    if prev_type == "EQUALS":
        if char == "-" and _key_before_equals(stack).startswith("var:"):
            number = "-" + re.compile(r"[^/,]*").match(text, pos + 1).group()  # type: ignore[union-attr]
            return err("ES010", "expected a value after '='", span,
                       f"a negative value of a var: term is written quoted: '{number}'")
        return err("ES010", "expected a value after '='", span,
                   "a value is a number (decimal or 0x-hex), a name, or a quoted '...' string")
    if prev_type in ("TERM_COMMA",) or (prev_type == "SLASH" and top == "SLASH"):
        return err("ES010", "expected a term name", span, "remove the extra ','" if prev_type == "TERM_COMMA" else
                   "terms are NAME or NAME=VALUE separated by ','")
    if (prev_type in ("NUMBER", "VALUE") and type(prev) is Tok and str(prev)[0].isdigit()
            and prev.end_pos == pos and char in _WORD_CHARS):
        if top == "SLASH":
            return err("ES001", "a value that starts with a digit must be a number (decimal or 0x-hex)",
                       span, _digit_value_help(text, stack, prev))
        if len(stack.current_event()) == 1:
            return err("ES010", "a numeric event needs ':CONFIG' after the type", span)
    if prev_type == "RBRACE" and (kind in _WORDISH or char in _WORD_CHARS):
        word = text[span.start:span.end]
        if lexicon.is_modifier_word(word):
            return err("ES008", "group modifiers need a ':' ('{...}:u')", span, f"write ':{word}'")
        return err("ES001", "unexpected text after the group", span, "separate items with ','")
    if prev_type in _EVENT_START and tok is not None:
        return err("ES001", f"unexpected {shown} at the start of an event", span,
                   "an event starts with a name, a number (TYPE:CONFIG), mem:ADDR or a BPF object path")
    if prev_type in _EVENT_START:
        if char in "./":
            m = re.compile(r"[^,{}]*").match(text, pos)
            end = pos + len(m.group(0).rstrip(BLANKS)) if m else pos + 1
            return err("ES011", "not a BPF object path: the name must end in .o, .obj or .c",
                       Span(pos, max(end, pos + 1)))
        return err("ES002", f"unexpected character {_describe_char(char)} at the start of an event", span,
                   *(("quotes only delimit term values (name='...')",) if char == "'" else ()),
                   *_look_alike(text, pos))
    if tok is None:
        help_lines = ("events are separated by ','",) if char in ";|" else ()
        return err("ES002", f"unexpected character {_describe_char(char)}", span, *help_lines,
                   *_look_alike(text, pos))
    wanted = sorted({_EXPECTED[e] for e in expected if e in _EXPECTED})
    return err("ES001", f"unexpected {shown}", span, *((f"expected {', '.join(wanted)}",) if wanted else ()))


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.:")
_WORD_REACH = 80  # characters looked at on each side of a look-alike for the word it is in


def _look_alike(text: str, pos: int) -> tuple[str, ...]:
    """For a character drawn like an ASCII one (a Cyrillic 'с'): what it is, and the word it
    stands in written with ASCII letters only."""
    from evspec.suggest import ascii_twin, look_alike_note, without_look_alikes

    said = look_alike_note(text[pos])
    if said is None:
        return ()
    if ascii_twin(text[pos]) == " ":
        return (f"{said}: write a blank where one is allowed (around ',', '{{' and '}}'), or nothing",)

    def in_word(char: str) -> bool:
        return char in _NAME_CHARS or (ascii_twin(char) or " ") in _NAME_CHARS

    start = pos
    while start > max(0, pos - _WORD_REACH) and in_word(text[start - 1]):
        start -= 1
    end = pos + 1
    while end < min(len(text), pos + 1 + _WORD_REACH) and in_word(text[end]):
        end += 1
    return (f"{said}: did you mean '{without_look_alikes(text[start:end])}'?",)


def _digit_value_help(text: str, stack: _Stack, number: Tok) -> str:
    """How to write a value that starts with a digit and goes on as no number does."""
    value = re.compile(r"[^,/\s]*").match(text, number.start_pos).group()  # type: ignore[union-attr]
    key = _key_before_equals(_Stack(stack.leaves[:-1], stack.opens, False)) if len(stack.leaves) > 2 else ""
    return value_help(key, value)


def _bpf_colon(text: str, path: Tok, span: Span) -> Diagnostic:
    m = re.compile(r":([A-Za-z]+)").match(text, span.start)
    fix = f"{path}//{m.group(1)}" if m else f"{path}//"
    return error(
        "ES008", "a BPF object takes modifiers only after a /.../ term list ('./x.o//u')", span,
        help=(f"did you mean '{fix}'?",), perf_message=PARSER_ERROR,
    )

def trailing_comma(pos: int) -> Diagnostic:
    return error(
        "ES001", "unexpected ',' at the end (an event must follow it)", Span(pos, pos + 1),
        help=("remove the trailing ','",), perf_message=PARSER_ERROR,
    )
