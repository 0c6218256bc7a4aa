"""Event-string AST from the grammar's rules: the reduce actions of the LALR driver.

``AstBuilder`` has one method per rule of ``events.lark`` (see the grammar for the shapes); each
takes the rule's children (``Tok`` tokens and finished nodes) and returns the node. The LALR driver
calls them as it reduces; ``AstBuilder.transform`` applies them to a Lark parse tree (the Earley
oracle's output), so both parsers build the AST with the same code. Shapes that the grammar accepts
but the kind of event does not (``software/config=0/:u``) raise ``Fault`` with a diagnostic.
"""

from __future__ import annotations

from evspec import lexicon
from evspec.ast import (
    AliasEvent,
    AllIndices,
    AnyTerm,
    BpfEvent,
    BreakpointEvent,
    CacheEvent,
    Event,
    Group,
    IndexItem,
    IndexList,
    Indices,
    Item,
    MapTerm,
    Modifiers,
    NumericEvent,
    PmuEvent,
    ProgTerm,
    RawEvent,
    SymbolEvent,
    SymbolKind,
    Term,
    TermKind,
    Terms,
    TracepointEvent,
    Value,
    VarTerm,
    Word,
)
from evspec.ast import (
    Number as NumberNode,
)
from evspec.diagnostics import Diagnostic, error
from evspec.grammar.lalr import BLANKS, Tok
from evspec.span import Span

TYPE_CHECKING = False  # imports for annotations only: a cold start does not pay for them
if TYPE_CHECKING:
    from collections.abc import Sequence

PARSER_ERROR = "parser error"  # perf's message for every syntax error


class Fault(Exception):
    """A syntax error found while building the AST (a shape the grammar accepts but the kind of
    event does not, such as ``software/config=0/:u``)."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def token_span(tok: Tok) -> Span:
    return Span(tok.start_pos, tok.end_pos)


def trimmed(tok: Tok) -> Span:
    """The token's span without the blanks some separator tokens carry (``' , '``)."""
    value = str(tok)
    start = tok.start_pos + len(value) - len(value.lstrip(BLANKS))
    end = tok.end_pos - (len(value) - len(value.rstrip(BLANKS)))
    return Span(start, max(start, end))


def end_of(node: object) -> int:
    return node.end_pos if type(node) is Tok else node.span.end  # type: ignore[attr-defined]


#: a decimal number of more digits (leading zeros aside) is out of every range of the language
#: (a u64 has 20): its value is not computed (Python refuses past 4300 digits, and the cost of the
#: conversion grows with the square of the length); 10**40 stands for it, out of range as it is
LONGEST_DECIMAL = 40


def _number(tok: Tok) -> NumberNode:
    text = str(tok)
    if text.startswith("0x"):
        value = int(text[2:], 16)
    else:
        digits = text.lstrip("0")
        value = int(digits or "0") if len(digits) <= LONGEST_DECIMAL else 10**LONGEST_DECIMAL
    return NumberNode(value, text, token_span(tok))


def _value(tok: Tok) -> Value:
    """A term value: a number when the whole word is decimal or 0x-hex (``1x``, ``0-1`` and
    ``2.0`` are words, as perf's lexer takes the longer match), else a word or a quoted string."""
    text = str(tok)
    if text[0] == "'":
        return Word(text[1:-1], True, token_span(tok))
    if text[0].isdigit() and lexicon.NUMBER.fullmatch(text):
        return _number(tok)
    return Word(text, False, token_span(tok))


def _modifiers(tok: Tok | None) -> Modifiers | None:
    return None if tok is None else Modifiers(str(tok), token_span(tok))


def _fault(code: str, message: str, span: Span, *help_lines: str) -> Fault:
    return Fault(error(code, message, span, help=help_lines, perf_message=PARSER_ERROR))


def _name_and_option(key: Tok, prefix: str) -> tuple[str, str, Span, Span]:
    """``PREFIX NAME.OPTION`` (``map:channel.value``): the name, the option ('' without a '.'),
    and their spans (the option's is empty, at the key's end, when there is none)."""
    text = str(key)
    rest_start = key.start_pos + len(prefix)
    rest = text[len(prefix):]
    dot = rest.find(".")
    name = rest if dot < 0 else rest[:dot]
    option = "" if dot < 0 else rest[dot + 1:]
    name_span = Span(rest_start, rest_start + len(name))
    option_span = Span(key.end_pos, key.end_pos) if dot < 0 else Span(rest_start + dot + 1, key.end_pos)
    return name, option, name_span, option_span


def is_tok(node: object, *types: str) -> bool:
    return type(node) is Tok and node.type in types


class _Tail:
    """What follows a term list (or an event name): nothing, ``WORD``, ``:`` or ``:WORD``."""

    __slots__ = ("colon", "word")

    def __init__(self, nodes: Sequence[object]) -> None:
        self.colon: Tok | None = next((n for n in nodes if is_tok(n, "COLON")), None)  # type: ignore[misc]
        self.word: Tok | None = next((n for n in nodes if is_tok(n, "WORD")), None)  # type: ignore[misc]


class AstBuilder:
    """Builds the evspec AST from the rules of events.lark (see the grammar for the shapes)."""

    def transform(self, tree: object) -> object:
        """The AST of a Lark parse tree of this grammar (``earley_parser().parse(...)``), built
        bottom-up as a Lark ``Transformer`` would, with Lark's tokens turned into ``Tok``."""
        children = [
            self.transform(child) if hasattr(child, "children")
            else Tok(child.type, str(child), child.start_pos, child.end_pos)
            for child in tree.children  # type: ignore[attr-defined]
        ]
        return getattr(self, str(tree.data))(children)  # type: ignore[attr-defined]

    def events(self, children: list[object]) -> tuple[Item, ...]:
        return tuple(c for c in children if type(c) is not Tok)  # type: ignore[misc]

    def group(self, children: list[object]) -> Group:
        name = children[0] if is_tok(children[0], "NAME") else None
        members = tuple(c for c in children if type(c) is not Tok)
        rbrace = next(c for c in children if is_tok(c, "RBRACE"))
        mods = children[-1] if is_tok(children[-1], "WORD") else None
        start = name.start_pos if name is not None else trimmed(children[0]).start  # type: ignore[arg-type]
        end = mods.end_pos if mods is not None else trimmed(rbrace).end  # type: ignore[arg-type]
        quoted = name is not None and str(name)[0] == "'"
        return Group(
            None if name is None else str(name)[1:-1] if quoted else str(name),
            members,  # type: ignore[arg-type]
            _modifiers(mods),  # type: ignore[arg-type]
            Span(start, end),
            None if name is None else token_span(name),  # type: ignore[arg-type]
            quoted,
        )

    def named_event(self, children: list[object]) -> Event:
        head: Tok = children[0]  # type: ignore[assignment]
        i = 1
        colon = sub = None
        if i < len(children) and is_tok(children[i], "COLON"):
            colon = children[i]
            i += 1
            if i < len(children) and is_tok(children[i], "WORD"):
                sub = children[i]
                i += 1
        terms = children[i] if i < len(children) and isinstance(children[i], Terms) else None
        if terms is not None:
            i += 1
        tail = _Tail(children[i:])
        span = Span(head.start_pos, end_of(children[-1]))
        word = str(head)
        quoted = word[0] == "'"
        if quoted:
            word = word[1:-1]
        kind = lexicon.classify_word(word)
        if quoted and kind == "raw":
            kind = None  # a quoted rHEX is a name, looked up as an event (perf 7.3: no PE_RAW)
        if sub is None:
            if terms is None:  # NAME or NAME ':'
                if word == "mem" and colon is not None and not quoted:
                    raise _fault("ES010", "breakpoint 'mem:' needs an address", span,
                                 "write the address to watch: mem:0x1000, mem:0x1000/8:w")
                return self._named(head, word, quoted, kind, None, None, span)
            if tail.colon is not None and kind != "raw":
                raise self._colon_after_terms(head, terms, tail, span)
            return self._named(head, word, quoted, kind, terms, _modifiers(tail.word), span)  # type: ignore[arg-type]
        assert type(sub) is Tok and type(colon) is Tok
        if kind is not None or lexicon.is_modifier_word(str(sub)):
            # NAME ':' MODIFIERS: nothing may follow the modifier list.
            if terms is not None:
                raise _fault(
                    "ES009", "a term list must come before the modifiers", terms.span,  # type: ignore[attr-defined]
                    f"write '{head}/.../{sub}'",
                )
            if tail.colon is not None:
                raise _fault(
                    "ES008", "only one modifier list per event", token_span(tail.colon),
                    f"did you mean '{head}:{sub}{tail.word or ''}'?",
                )
            return self._named(head, word, quoted, kind, None, _modifiers(sub), span)
        if quoted:
            raise _fault(
                "ES058", "a quoted name is an event or PMU name, not a tracepoint system", token_span(head),
                f"write the tracepoint without quotes: '{word}:{sub}'",
            )
        return TracepointEvent(
            word,
            str(sub),
            terms,  # type: ignore[arg-type]
            _modifiers(tail.word),
            span,
            Span(head.start_pos, sub.end_pos),
            token_span(head),
            token_span(sub),
        )

    @staticmethod
    def _named(head: Tok, word: str, quoted: bool, kind: SymbolKind | lexicon.CacheWord | str | None,
               terms: Terms | None, mods: Modifiers | None, span: Span) -> Event:
        name_span = token_span(head)
        if isinstance(kind, SymbolKind):
            return SymbolEvent(kind, word, terms, mods, span, name_span, quoted)
        if isinstance(kind, lexicon.CacheWord):
            split = kind
            start = head.start_pos + quoted
            part_spans = tuple(
                Span(start + off, start + off + len(part))
                for part, off in zip(split.parts, split.part_offsets, strict=True)
            )
            return CacheEvent(split.cache_type, split.parts, terms, mods, span, name_span, part_spans, quoted)
        if kind == "raw":
            code = NumberNode(int(word[1:], 16), word[1:], Span(head.start_pos + 1, head.end_pos))
            return RawEvent(code, terms, mods, span)
        if terms is not None:
            return PmuEvent(word, terms, mods, span, name_span, quoted)
        return AliasEvent(word, mods, span, name_span, quoted)

    @staticmethod
    def _colon_after_terms(head: Tok, terms: Terms, tail: _Tail, span: Span) -> Fault:
        from evspec.printer import print_terms

        mods = str(tail.word or "")
        fixed = f"{head}{print_terms(terms)}{mods}"
        return _fault(
            "ES008", "modifiers follow the closing '/' directly (no ':')", token_span(tail.colon),  # type: ignore[arg-type]
            f"did you mean '{fixed}'?" if mods else "remove the ':'",
        )

    def numeric_event(self, children: list[object]) -> NumericEvent:
        type_tok, config_tok = children[0], children[2]
        terms = next((c for c in children if isinstance(c, Terms)), None)
        tail = _Tail(children[3:])
        span = Span(type_tok.start_pos, end_of(children[-1]))  # type: ignore[union-attr]
        return NumericEvent(
            _number(type_tok), _number(config_tok), terms, _modifiers(tail.word), span  # type: ignore[arg-type]
        )

    def breakpoint_event(self, children: list[object]) -> BreakpointEvent:
        mem: Tok = children[0]  # type: ignore[assignment]
        address = _number(children[1])  # type: ignore[arg-type]
        i = 2
        length = None
        if i < len(children) and is_tok(children[i], "BP_SLASH"):
            length = _number(children[i + 1])  # type: ignore[arg-type]
            i += 2
        terms = next((c for c in children[i:] if isinstance(c, Terms)), None)
        if terms is not None:
            before = [c for c in children[i:] if type(c) is Tok and c.start_pos < terms.span.start]
            after = [c for c in children[i:] if type(c) is Tok and c.start_pos >= terms.span.end]
            return self._breakpoint_with_terms(mem, address, length, before, terms, after)
        words = [c for c in children[i:] if is_tok(c, "WORD")]
        colons = [c for c in children[i:] if is_tok(c, "COLON")]
        access = mods = None
        if words and lexicon.is_access_word(str(words[0])):
            access = words[0]
            mods = words[1] if len(words) > 1 else None
        elif words:
            mods = words[0]
            if len(colons) > 1:
                raise _fault(
                    "ES008", "only one modifier list per event", token_span(colons[1]),  # type: ignore[arg-type]
                    "the letters after the address are the access type only if they are all r, w, x",
                )
        span = Span(mem.start_pos, end_of(children[-1]))
        return BreakpointEvent(
            address,
            length,
            None if access is None else str(access),
            _modifiers(mods),  # type: ignore[arg-type]
            span,
            None if access is None else token_span(access),  # type: ignore[arg-type]
        )

    @staticmethod
    def _breakpoint_with_terms(mem: Tok, address: NumberNode, length: NumberNode | None, before: list[Tok],
                               terms: Terms, after: list[Tok]) -> BreakpointEvent:
        """``mem:ADDR[/LEN][:ACCESS]/terms/[MODIFIERS]`` (perf 7.3): a letter group before the term
        list is the access type; the modifiers follow the list, directly or after a ':'."""
        access = next((t for t in before if t.type == "WORD"), None)
        if access is not None and not lexicon.is_access_word(str(access)):
            raise _fault(
                "ES009", "only the access type (r, w, x) may stand between a breakpoint's address and its "
                "term list", token_span(access),
                f"write the modifiers after the term list: 'mem:{address.text}/.../{access}'",
            )
        mods = next((t for t in after if t.type == "WORD"), None)
        end = after[-1].end_pos if after else terms.span.end
        return BreakpointEvent(
            address,
            length,
            None if access is None else str(access),
            _modifiers(mods),
            Span(mem.start_pos, end),
            None if access is None else token_span(access),
            terms,
        )

    def bpf_event(self, children: list[object]) -> BpfEvent:
        path: Tok = children[0]  # type: ignore[assignment]
        terms = children[1] if len(children) > 1 else None
        mods = children[2] if len(children) > 2 else None
        text = str(path)
        return BpfEvent(
            text,
            text.endswith(".c"),
            terms,  # type: ignore[arg-type]
            _modifiers(mods),  # type: ignore[arg-type]
            Span(path.start_pos, end_of(children[-1])),
            token_span(path),
        )

    def terms(self, children: list[object]) -> Terms:
        items = tuple(c for c in children if type(c) is not Tok)
        return Terms(items, Span(children[0].start_pos, children[-1].end_pos))  # type: ignore[arg-type, union-attr]

    bp_terms = terms  # a breakpoint's term list opens with BP_TERMS ('/' before a non-digit)

    def term_list(self, children: list[object]) -> Terms:
        items = tuple(c for c in children if type(c) is not Tok)
        return Terms(items, Span(items[0].span.start, items[-1].span.end))  # type: ignore[arg-type, attr-defined]

    def term(self, children: list[object]) -> AnyTerm:
        key: Tok = children[0]  # type: ignore[assignment]
        if key.type == "DRIVER_TERM":
            return self._driver_term(key)
        index = next((c for c in children if isinstance(c, (AllIndices, IndexList))), None)
        value_tok = children[-1] if len(children) > 1 and is_tok(children[-2], "EQUALS") else None
        value = None if value_tok is None else _value(value_tok)  # type: ignore[arg-type]
        text = str(key)
        span = Span(key.start_pos, end_of(children[-1]))
        if text.startswith(lexicon.MAP_TERM_PREFIX):
            return self._map_term(key, index, value, span)
        if index is not None:
            raise _fault(
                "ES013", f"an index list is allowed only on map: terms (not on '{text}')", index.span,
                "index lists select the map keys of a BPF object term: map:NAME.value[0,2...4]=VALUE",
            )
        if value is None and lexicon.RAW_TERM.fullmatch(text):
            code = int(text[3:], 16) if text.startswith("r0x") else int(text[1:], 16)
            raw = NumberNode(code, text[1:], Span(key.start_pos + 1, key.end_pos))
            return Term(TermKind.RAW, text, raw, span, token_span(key))
        if text.startswith(lexicon.PROG_TERM_PREFIX):
            return self._prog_term(key, value, span)
        if text.startswith(lexicon.VAR_TERM_PREFIX):
            return self._var_term(key, value, span)
        kind = TermKind.KEYWORD if text in lexicon.KEYWORD_TERMS else TermKind.USER
        return Term(kind, text, value, span, token_span(key))

    @staticmethod
    def _map_term(key: Tok, index: Indices | None, value: Value | None, span: Span) -> MapTerm:
        name, option, name_span, option_span = _name_and_option(key, lexicon.MAP_TERM_PREFIX)
        key_span = Span(key.start_pos, index.span.end if index is not None else key.end_pos)
        return MapTerm(name, option, index, value, span, key_span, name_span, option_span)

    @staticmethod
    def _prog_term(key: Tok, value: Value | None, span: Span) -> ProgTerm:
        name, option, name_span, option_span = _name_and_option(key, lexicon.PROG_TERM_PREFIX)
        return ProgTerm(name, option, value, span, token_span(key), name_span, option_span)

    @staticmethod
    def _var_term(key: Tok, value: Value | None, span: Span) -> VarTerm:
        """``var:NAME=VALUE``; NAME as written (a '.' in it is refused by the rules)."""
        name_start = key.start_pos + len(lexicon.VAR_TERM_PREFIX)
        return VarTerm(str(key)[len(lexicon.VAR_TERM_PREFIX):], value, span, token_span(key),
                       Span(name_start, key.end_pos))

    @staticmethod
    def _driver_term(tok: Tok) -> Term:
        text = str(tok)[1:]
        key, eq, val = text.partition("=")
        key_span = Span(tok.start_pos, tok.start_pos + 1 + len(key))
        value = Word(val, False, Span(key_span.end + 1, tok.end_pos)) if eq else None
        return Term(TermKind.DRIVER, key, value, token_span(tok), key_span)

    def index(self, children: list[object]) -> Indices:
        span = Span(children[0].start_pos, children[-1].end_pos)  # type: ignore[union-attr]
        if is_tok(children[1], "ALL"):
            return AllIndices(span)
        return IndexList(tuple(c for c in children if isinstance(c, IndexItem)), span)

    def index_item(self, children: list[Tok]) -> IndexItem:
        first = _number(children[0])
        last = _number(children[2]) if len(children) > 1 else None
        return IndexItem(first, last, Span(children[0].start_pos, children[-1].end_pos))


