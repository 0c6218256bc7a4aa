"""The arguments of a ``print fmt`` parsed as libtraceevent (perf 6.1's copy) parses them.

libtraceevent's parser is not C's: a binary operator's right side is one operand, and when that
operand is itself an operator of lower precedence (a parenthesised one included) the two are
rotated, so that ``a & (b | c)`` means ``(a & b) | c``; operators of equal precedence group to the
right; an index takes one operand; the ``:`` branch of ``?:`` takes one operand. perf prints what
that parse means, so it is followed here step for step: ``_Arg`` is a mutable ``tep_print_arg``
(the parser copies and overwrites them in place), turned into ``args`` nodes at the end.
``FormatError`` is where libtraceevent would mark the event FAILED.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evspec.loader.output.printfmt import args as a

ITEM, DQUOTE, SQUOTE, OP, DELIM, NONE = "item", "dquote", "squote", "op", "delim", "none"
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<dquote>"(?:\\.|[^"\\])*"(?:\s*"(?:\\.|[^"\\])*")*)
    | (?P<squote>'(?:\\.|[^'\\])*')
    | (?P<item>[A-Za-z0-9_]+)
    | (?P<op>->|<<=?|>>=?|<=|>=|==|!=|&&|\|\||\+\+|--|[-+*/%&|^~!<>=?:.\[\]{};@#$`\\])
    | (?P<delim>[(),])
    )""",
    re.VERBOSE,
)
_BINARY = {">>", "<<", "&", "|", "&&", "||", "-", "+", "*", "^", "/", "%", "<", ">", "<=", ">=", "==", "!="}


class FormatError(Exception):
    """libtraceevent cannot parse the format: perf prints the event's fallback."""


def op_priority(op: str | None) -> int:
    """get_op_prio(): lower binds tighter; -1 for what it does not know."""
    if not op:
        return -1
    if len(op) == 1:
        return {"~": 4, "!": 4, "*": 6, "/": 6, "%": 6, "+": 7, "-": 7, "<": 9, ">": 9, "&": 11, "^": 12,
                "|": 13, "?": 16}.get(op, -1)
    return {"++": 3, "--": 3, ">>": 8, "<<": 8, ">=": 9, "<=": 9, "==": 10, "!=": 10, "&&": 14,
            "||": 15}.get(op, -1)


def unquote(token: str) -> str:
    """A string token's text as libtraceevent keeps it: quotes dropped, adjacent literals joined,
    escapes as written."""
    if token.startswith('"'):
        return "".join(part[1:-1] for part in re.findall(r'"(?:\\.|[^"\\])*"', token))
    return token[1:-1]


class _Arg:
    """A ``tep_print_arg`` under construction: ``kind`` and the members of that kind."""

    def __init__(self, kind: str = "null", **members: Any) -> None:
        self.kind = kind
        self.__dict__.update(members)

    def copy(self) -> _Arg:
        twin = _Arg()
        twin.__dict__.update(self.__dict__)
        return twin

    def become(self, other: _Arg) -> None:
        """``*self = *other``."""
        self.__dict__.clear()
        self.__dict__.update(other.__dict__)


class _Tokens:
    def __init__(self, text: str) -> None:
        self.items: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text) and not text[pos:].isspace():
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                raise FormatError(f"cannot read the print format at {text[pos:pos + 20]!r}")
            kind = m.lastgroup
            assert kind is not None
            value = m.group(kind)
            self.items.append((kind, unquote(value) if kind in (DQUOTE, SQUOTE) else value))
            pos = m.end()
        self.pos = 0

    def read(self) -> tuple[str, str]:
        token = self.items[self.pos] if self.pos < len(self.items) else (NONE, "")
        self.pos += 1
        return token


class ArgParser:
    """event_read_print_args() and the process_*() functions it calls."""

    def __init__(self, tokens: _Tokens, any_field: dict[str, a.Field], own_field: dict[str, a.Field]) -> None:
        self.t = tokens
        self.any_field = any_field  # tep_find_any_field(): common fields first
        self.own_field = own_field  # tep_find_field(): the event's own

    def expect(self, kind: str, text: str | None = None) -> str:
        got_kind, got = self.t.read()
        if got_kind != kind or (text is not None and got != text):
            raise FormatError(f"expected {text or kind}, found {got!r}")
        return got

    # ---------------------------------------------------------------------- arguments

    def arguments(self) -> list[_Arg]:
        out: list[_Arg] = []
        kind = "start"
        while kind != NONE:
            arg = _Arg()
            kind, token = self.process_arg(arg)
            out.append(arg)
            if kind == OP:
                kind, token = self.process_op(arg, token)
                continue
            if kind == DELIM and token == ",":
                continue
            break
        return out

    def process_arg(self, arg: _Arg) -> tuple[str, str]:
        kind, token = self.t.read()
        return self.process_arg_token(arg, kind, token)

    def process_arg_token(self, arg: _Arg, kind: str, token: str) -> tuple[str, str]:
        if kind == ITEM:
            if token == "REC":
                return self.process_entry(arg)
            atom = token
            kind, token = self.t.read()
            if kind == DELIM and token == "(":
                return self.process_function(arg, atom)
            while kind == ITEM:  # atoms can be more than one word: "unsigned long"
                atom += " " + token
                kind, token = self.t.read()
            arg.become(_Arg("atom", atom=atom))
            return kind, token
        if kind in (DQUOTE, SQUOTE):
            arg.become(_Arg("atom", atom=token))
            return self.t.read()
        if kind == DELIM and token == "(":
            return self.process_paren(arg)
        if kind in (DELIM, OP):
            arg.become(_Arg("op", op=token, left=None, right=None, prio=0))
            return self.process_op(arg, token)
        raise FormatError("the print format ends in the middle of an argument")

    def process_entry(self, arg: _Arg) -> tuple[str, str]:
        self.expect(OP, "->")
        name = self.expect(ITEM)
        field = self.any_field.get(name)
        if field is None:
            raise FormatError(f"REC->{name}: no such field")
        arg.become(_Arg("field", field=field))
        return self.t.read()

    def process_op(self, arg: _Arg | None, token: str) -> tuple[str, str]:
        if arg is None:
            raise FormatError(f"operator {token!r} without a left side")
        right: _Arg | None = None
        if arg.kind == "op" and arg.left is None:  # a unary operator
            if token not in ("~", "!", "+", "-"):
                raise FormatError(f"bad op token {token}")
            arg.left = _Arg("null")
            right = arg.right = _Arg()
            kind, token = self.process_arg(right)
        elif token == "?":
            left = arg.copy()
            arg.become(_Arg("op", op="?", left=left, right=None, prio=0))
            kind, token = self.process_cond(arg)
        elif token in _BINARY:
            left = arg.copy()
            arg.become(_Arg("op", op=token, left=left, right=None,
                            prio=0 if left.kind == "null" else op_priority(token)))
            if arg.prio == -1:
                raise FormatError(f"unknown op {token}")
            kind, token = self.t.read()
            if arg.op == "*" and kind == DELIM and token == ")":  # "(char *)": a pointer type
                if left.kind != "atom":
                    raise FormatError("bad pointer type")
                left.atom += " *"
                arg.become(left)
                return kind, token
            right = _Arg()
            kind, token = self.process_arg_token(right, kind, token)
            if right.kind == "op" and op_priority(arg.op) < op_priority(right.op):
                arg.right = right.left  # rotated by priority, parentheses or not
                was = arg.copy()
                arg.become(right)
                right.become(was)
                arg.left = right
            else:
                arg.right = right
        elif token == "[":
            left = arg.copy()
            arg.become(_Arg("op", op="[", left=left, right=None, prio=0))
            kind, token = self.process_array(arg)
        else:
            raise FormatError(f"unknown op {token!r}")
        if kind == OP and token != ":":
            if op_priority(token) > arg.prio:
                return self.process_op(arg, token)
            return self.process_op(right, token)
        return kind, token

    def process_cond(self, top: _Arg) -> tuple[str, str]:
        left, right = _Arg(), _Arg()
        kind, token = self.process_arg(left)
        while kind == OP and token != ":":
            kind, token = self.process_op(left, token)
        if kind != OP or token != ":":
            raise FormatError("'?' without ':'")
        kind, token = self.process_arg(right)
        top.right = _Arg("op", op=":", left=left, right=right, prio=0)
        return kind, token

    def process_array(self, top: _Arg) -> tuple[str, str]:
        index = _Arg()
        kind, token = self.process_arg(index)
        if kind != OP or token != "]":
            raise FormatError("an index of more than one operand")
        top.right = index
        return self.t.read()

    def process_paren(self, arg: _Arg) -> tuple[str, str]:
        kind, token = self.process_arg(arg)
        if kind == OP:
            kind, token = self.process_op(arg, token)
        if kind != DELIM or token != ")":
            raise FormatError("unbalanced parenthesis")
        kind, token = self.t.read()
        if kind in (ITEM, DQUOTE, SQUOTE) or (kind == DELIM and token == "("):  # a cast
            if arg.kind != "atom":
                raise FormatError("a cast to something that is not a type")
            item = _Arg()
            arg.become(_Arg("type", type=arg.atom, item=item))
            kind, token = self.process_arg_token(item, kind, token)
        return kind, token

    def process_field_arg(self, arg: _Arg) -> tuple[str, str]:
        kind, token = self.process_arg(arg)
        while kind == OP:
            kind, token = self.process_op(arg, token)
        return kind, token

    def delimited(self, closing: str) -> _Arg:
        """alloc_and_process_delim(): one operand, then ``closing``."""
        arg = _Arg()
        kind, token = self.process_arg(arg)
        if kind != DELIM or token != closing:
            raise FormatError(f"expected {closing!r}")
        return arg

    # ---------------------------------------------------------------------- functions

    def process_function(self, arg: _Arg, name: str) -> tuple[str, str]:
        if name in ("__print_flags", "__print_symbolic"):
            return self.process_flags(arg, name == "__print_flags")
        if name in ("__print_hex", "__print_hex_str"):
            arg.become(_Arg("hex", data=self.delimited(","), length=self.delimited(")"),
                            spaced=name == "__print_hex"))
            return self.t.read()
        if name == "__print_array":
            arg.become(_Arg("int_array", data=self.delimited(","), count=self.delimited(","),
                            size=self.delimited(")")))
            return self.t.read()
        if name in ("__get_str", "__get_rel_str", "__get_bitmask", "__get_rel_bitmask"):
            field = self.any_field.get(self.expect(ITEM))
            self.expect(DELIM, ")")
            arg.become(_Arg("string" if "str" in name else "bitmask", field=field))
            return self.t.read()
        if name in ("__get_dynamic_array", "__get_rel_dynamic_array",
                    "__get_dynamic_array_len", "__get_rel_dynamic_array_len"):
            field_name = self.expect(ITEM)
            field = self.own_field.get(field_name)
            if field is None:
                raise FormatError(f"{name}({field_name}): no such field")
            self.expect(DELIM, ")")
            length = name.endswith("_len")
            arg.become(_Arg("dynamic_array_len" if length else "dynamic_array", field=field))
            kind, token = self.t.read()
            if not length and kind == OP and token == "[":
                raise FormatError(f"{name}() indexed")  # libtraceevent refuses it (an inverted test)
            return kind, token
        if name == "__builtin_expect":
            kind, token = self.process_arg(arg)
            if kind != DELIM or token != ",":
                raise FormatError("__builtin_expect() without its second argument")
            self.expect(ITEM)
            self.expect(DELIM, ")")
            return self.t.read()
        raise FormatError(f"function {name} not defined")

    def process_flags(self, arg: _Arg, flags: bool) -> tuple[str, str]:
        value = _Arg()
        kind, token = self.process_field_arg(value)
        if kind != DELIM or token != ",":
            raise FormatError("expected ','")
        delim = None
        if flags:
            kind, token = self.t.read()
            if kind in (ITEM, DQUOTE, SQUOTE):
                delim = token
                kind, token = self.t.read()
            if kind != DELIM or token != ",":
                raise FormatError("expected ','")
        kind, token, pairs = self.process_fields()
        if kind != DELIM or token != ")":
            raise FormatError("expected ')'")
        arg.become(_Arg("flags" if flags else "symbol", value=value, delim=delim, pairs=pairs))
        return self.t.read()

    def process_fields(self) -> tuple[str, str, list[tuple[int, str]]]:
        pairs: list[tuple[int, str]] = []
        while True:
            kind, token = self.t.read()
            if kind != OP or token != "{":
                return kind, token, pairs
            value = _Arg()
            kind, token = self.process_arg(value)
            if kind == OP:
                kind, token = self.process_op(value, token)
            if kind != DELIM or token != ",":
                raise FormatError("expected ','")
            name = _Arg()
            kind, token = self.process_arg(name)
            if kind != OP or token != "}":
                raise FormatError("expected '}'")
            pairs.append((a.flag_value(arg_eval(value)), arg_eval(name)))
            kind, token = self.t.read()
            if kind != DELIM or token != ",":
                return kind, token, pairs


def arg_eval(arg: _Arg) -> str:
    """arg_eval(): an atom's text, or an operator's value (signed, as arg_num_eval() computes it)."""
    if arg.kind == "atom":
        return str(arg.atom)
    if arg.kind == "type":
        return arg_eval(arg.item)
    if arg.kind == "op":
        return str(_num_eval(arg))
    raise FormatError(f"a flag value that is not a constant ({arg.kind})")


def _num_eval(arg: _Arg) -> int:
    """arg_num_eval(): constants only, in signed 64-bit arithmetic, and fewer operators than
    eval_num_arg() (no * / % ^ or unary !)."""
    if arg.kind == "atom":
        return a.signed(a.strtoull(arg.atom), 64)
    if arg.kind == "type":
        return a.signed(a.eval_type(_num_eval(arg.item) & a.MASK, arg.type), 64)
    if arg.kind != "op" or arg.op[0] not in "|&<>=!-+~":
        raise FormatError("a flag value libtraceevent cannot evaluate")
    if arg.op == "!":
        raise FormatError("a flag value libtraceevent cannot evaluate")
    left = 0 if arg.left is None or arg.left.kind == "null" else _num_eval(arg.left)
    right = _num_eval(arg.right)
    return a.signed(a.arith(arg.op, left & a.MASK, right & a.MASK) if arg.op not in ("<", ">", "<=", ">=")
                    else int({"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[arg.op]),
                    64)


def to_node(arg: _Arg | None, printk: Mapping[int, str]) -> a.Node:
    """The evaluation node of a parsed argument (``printk``: for its field references)."""
    if arg is None or arg.kind == "null":
        return a.NULL
    kind = arg.kind
    if kind == "atom":
        return a.Atom(arg.atom)
    if kind == "field":
        return a.FieldRef(arg.field, printk)
    if kind == "type":
        return a.Cast(arg.type, to_node(arg.item, printk))
    if kind == "op":
        return a.Op(arg.op, to_node(arg.left, printk), to_node(arg.right, printk))
    if kind in ("flags", "symbol"):
        pairs = tuple(arg.pairs)
        return a.Flags(to_node(arg.value, printk), arg.delim, pairs) if kind == "flags" else a.Symbols(to_node(arg.value, printk), pairs)
    if kind == "hex":
        return a.Hex(to_node(arg.data, printk), to_node(arg.length, printk), arg.spaced)
    if kind == "int_array":
        return a.IntArray(to_node(arg.data, printk), to_node(arg.count, printk), to_node(arg.size, printk))
    if kind == "string":
        return a.String(arg.field)
    if kind == "bitmask":
        return a.Bitmask(arg.field)
    if kind == "dynamic_array":
        return a.DynamicArray(arg.field)
    if kind == "dynamic_array_len":
        return a.DynamicArrayLength(arg.field)
    raise FormatError(f"an argument of kind {kind}")


def parse_print_fmt(text: str, any_field: dict[str, a.Field], own_field: dict[str, a.Field],
                    printk: Mapping[int, str]) -> tuple[str, list[a.Node]]:
    """event_read_print(): the format string and the argument nodes of a ``print fmt:`` text."""
    tokens = _Tokens(text)
    kind, fmt = tokens.read()
    if kind != DQUOTE:
        raise FormatError("the print format does not start with a string")
    kind, token = tokens.read()
    if kind == NONE:
        return fmt, []
    if kind != DELIM or token != ",":
        raise FormatError("expected ',' after the format string")
    parser = ArgParser(tokens, any_field, own_field)
    return fmt, [to_node(arg, printk) for arg in parser.arguments()]
