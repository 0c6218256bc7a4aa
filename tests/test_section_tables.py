"""The committed tables of the section grammar (grammar/section_tables.json) and the parser that
runs them (``sections.lalr``), which parses section names without Lark.

The tables must be exactly what the generator makes from grammar/section.lark today (regenerate
with ``python scripts/gen_tables.py``), in any hash seed; the parser must build the trees
Lark builds (names, kept tokens, spans) and fail where and how Lark fails, on every start rule:
checked on a corpus of section names, on seeded mutations of it, and on a small grammar with every
tree-shaping feature (inlined rules, ``?rule``, literals folded into patterns).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from evspec.grammar.lalr import Tok
from evspec.grammar.tables import read_tables_text
from evspec.loader.sections import lalr as section_lalr
from evspec.loader.sections import names as section
from evspec.loader.sections.lalr import SectionParser, SectionSyntaxError, load_parser
from evspec.loader.sections.tablegen import STARTS, build_tables, generate, render_tables
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

STALE = ("grammar/section_tables.json is out of date with grammar/section.lark: "
         "run python scripts/gen_tables.py")
CASES = 5_000 if os.environ.get("CI") == "true" else 1_000
SEED = 0x5EC7


def _grammar() -> str:
    return (files("evspec.grammar") / "section.lark").read_text(encoding="utf-8")


def test_committed_tables_match_the_grammar() -> None:
    committed = read_tables_text(section_lalr.TABLES_FILE)
    assert json.loads(committed)["grammar_sha256"] == hashlib.sha256(_grammar().encode()).hexdigest(), STALE
    assert committed == generate(_grammar()), STALE


@pytest.mark.parametrize("seed", ["1", "2"])
def test_generation_does_not_depend_on_the_hash_seed(seed: str, tmp_path: object) -> None:
    code = ("import sys; from importlib.resources import files; "
            "from evspec.loader.sections.tablegen import generate; "
            "sys.stdout.write(generate((files('evspec.grammar') / 'section.lark').read_text(encoding='utf-8')))")
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tmp_path), check=True,
                         capture_output=True, text=True).stdout
    assert out == read_tables_text(section_lalr.TABLES_FILE)


def test_tables_are_consistent() -> None:
    data = json.loads(read_tables_text(section_lalr.TABLES_FILE))
    terminals = {name for name, _ in data["terminals"]}
    nonterminals = {rule[0] for rule in data["rules"]}
    for names, folds in data["lexers"]:
        assert set(names) <= terminals
        for kind, literals in folds.items():
            assert kind in terminals and set(literals) <= terminals
    for lexer, actions in data["states"]:
        assert 0 < lexer < len(data["lexers"])  # lexer 0 is the root lexer, no state's own
        for symbol, code in actions.items():
            assert symbol in terminals or symbol in nonterminals or symbol == "$END", symbol
            assert code < len(data["states"]) if code >= 0 else ~code < len(data["rules"])
    assert set(data["start"]) == set(data["end"]) == set(STARTS)


# --------------------------------------------------------------------------------------------
# the parser against Lark


def _shape(node: object) -> object:
    """A Lark or ``sections.lalr`` tree as plain data: names, tokens and every span."""
    if isinstance(node, (Token, Tok)):
        return (node.type, str(node), node.start_pos, node.end_pos)
    assert isinstance(node, (Tree, section_lalr.Tree)), node
    meta = node.meta
    return (str(node.data), getattr(meta, "start_pos", None), getattr(meta, "end_pos", None),
            [_shape(c) for c in node.children])


def _lark_outcome(parser: Lark, text: str, start: str) -> object:
    try:
        return _shape(parser.parse(text, start=start))
    except UnexpectedInput as exc:
        if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
            return ("token", exc.token.start_pos, exc.token.end_pos, str(exc.token))
        if isinstance(exc, UnexpectedCharacters):
            return ("character", exc.pos_in_stream)
        return ("end",)


def _our_outcome(parser: SectionParser, text: str, start: str) -> object:
    try:
        return _shape(parser.parse(text, start))
    except SectionSyntaxError as exc:
        if exc.token is not None:
            return ("token", exc.token.start_pos, exc.token.end_pos, str(exc.token))
        return ("end",) if exc.at_end else ("character", exc.pos)


SECTIONS = [
    # perf-probe definitions
    "func=do_sys_open", "probe=do_sys_open", "perf_bpf_probe:open=do_sys_open", "ev=func+16", "ev=func%return",
    "ev=func@fs/open.c", "ev=fs/open.c:42", "ev=func:3", "ev=0xffffffff81000000", "ev=vfs_*",
    "ev=func dfd filename:string", "ev=func $stack0 %di +8(%si) -0x10(+4(%bp))", "ev=func @jiffies @sym+8",
    "ev=func a->b.c[3] x=y:u32", "ev=func fd=$arg1", "ev=func  a ", "ev=func\ta", "ev=", "=func", "ev=func a=",
    "ev=func +8(", "ev=func a->", "ev=func %return x", "a:b:c=f", "ev=func:", "ev=f@", "ev=f+", "ev=f a:b:c",
    # perf tracepoints
    "raw_syscalls:sys_enter", "!raw_syscalls:sys_enter", "sched:sched_*", "a:b:c", "a:", ":b", "!:b", "!!a:b",
    "sys-call.x:ev[1]", "a b:c",
    # libbpf names
    "tracepoint/raw_syscalls/sys_enter", "tp/sched/sched_switch", "tp/sched", "tracepoint", "tp//x",
    "raw_tp/sys_enter", "raw_tracepoint/sched_switch", "raw_tp.w/x", "tp_btf/sched_switch", "raw_tp",
    "kprobe/do_sys_open", "kretprobe/do_sys_open+0x10", "kprobe/vfs_*", "kprobe", "kprobe/", "kprobe/f+",
    "uprobe//bin/bash:readline", "uretprobe//lib/libc.so.6:malloc+4", "uprobe.s//x:y", "uprobe/x", "uprobe",
    "usdt//usr/bin/python:python:function__entry", "usdt", "ksyscall/openat", "kretsyscall/close", "ksyscall",
    "kprobe.multi/vfs_*", "kretprobe.multi/x", "fentry/do_unlinkat", "fexit.s/x", "fmod_ret/f", "lsm/file_open",
    "lsm.s/bprm_check", "iter/task", "iter.s/task_file", "freplace/f", "lsm_cgroup/sock", "struct_ops/x",
    "struct_ops", "xdp", "xdp.frags", "xdp/devmap", "tc", "tc/ingress", "tc/egress", "tc/sideways", "classifier",
    "socket", "perf_event", "cgroup/connect4", "cgroup_skb/egress", "sk_skb/stream_verdict", "sockops",
    "syscall", "flow_dissector", "lwt_in", "sk_lookup", "action", "xdp/", "xdpx", "tcp", "tc/", "fentry",
    "kprobe/f g", "tracepoint/a/b/c", "uprobe/p:f:g", "",
]


def cases() -> Iterator[str]:
    rng = random.Random(SEED)
    alphabet = "abcdeiknoprstuxyz_0123456789/:=+-.!@$%*?[]()> \t"
    yield from SECTIONS
    for _ in range(CASES):
        chars = list(rng.choice(SECTIONS))
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(chars))
            op = rng.randrange(3)
            if op == 0:
                chars.insert(at, rng.choice(alphabet))
            elif chars:
                at = min(at, len(chars) - 1)
                if op == 1:
                    del chars[at]
                else:
                    chars[at] = rng.choice(alphabet)
        yield "".join(chars)


def test_the_parser_agrees_with_lark() -> None:
    lark, ours = section._parser(), load_parser()
    wrong = []
    for text in cases():
        for start in STARTS:
            expected, got = _lark_outcome(lark, text, start), _our_outcome(ours, text, start)
            if expected != got:
                wrong.append(f"{start} {text!r}: Lark {expected}, ours {got}")
    assert not wrong, "\n".join(wrong[:20])


def test_parse_section_imports_no_lark(tmp_path: Path) -> None:
    code = ("import sys\n"
            "from evspec.diagnostics import EvspecError\n"
            "from evspec.loader.sections.names import parse_section\n"
            "for name in ('tracepoint/raw_syscalls/sys_enter', 'ev=func a', 'a:b', 'kprobe/f+8', 'tp/x', 'a=f +'):\n"
            "    try:\n"
            "        parse_section(name)\n"
            "    except EvspecError:\n"
            "        pass\n"
            "print(sorted(m for m in sys.modules if m == 'lark' or m.startswith('lark.')))\n")
    # run away from the source tree, whose evspec/ would shadow the installed package
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True, capture_output=True,
                         text=True).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------------------------
# every tree-shaping feature, on a small grammar

TOY = r"""
start: _LEAD? item (";" item)*
other: WORD
item: WORD "=" value         -> pair
    | "(" _inner ")"
    | KEY
    | "!" WORD               -> bang
_inner: item ("," item)*
?value: atom
      | "[" atom "]"
      | atom "+" atom        -> sum
?atom: NUMBER | WORD | "<" atom ">"
KEY: "key"
WORD: /[a-z]+/
NUMBER: /[0-9]+/
_LEAD: /\/+/
"""
TOY_STARTS = ["start", "other"]
TOY_TEXTS = [
    "a=1", "a=1;key;(b=2,c=[3]);!x", "a = 1", "//a=<<4>>", "a=1+b", "a=[1]", "(a=1)", "key", "keyx", "a=", "a=1;",
    "(a=1", "a==1", "a=1]", "a=#", "a=[]", "!key", "(key,key)", "a=1 2", "=1", "", ";", "a=<1",
    "x", "key", "1",
]


def _toy() -> tuple[Lark, SectionParser]:
    lark = Lark(TOY, parser="lalr", lexer="contextual", start=TOY_STARTS, propagate_positions=True,
                maybe_placeholders=False)
    tables: dict[str, Any] = json.loads(render_tables(build_tables(TOY, TOY_STARTS)))
    return lark, SectionParser(tables)


@pytest.mark.parametrize("text", TOY_TEXTS)
def test_the_parser_shapes_trees_as_lark_does(text: str) -> None:
    lark, ours = _toy()
    for start in TOY_STARTS:
        assert _our_outcome(ours, text, start) == _lark_outcome(lark, text, start), (start, text)


def test_the_toy_grammar_exercises_what_it_should() -> None:
    _, ours = _toy()
    tree = ours.parse("//a=<<4>>;(b=2,c=[3]);!key;key", "start")
    assert _shape(tree) == ("start", 0, 30, [  # the dropped _LEAD still counts for the span
        ("pair", 2, 7, [("WORD", "a", 2, 3), ("NUMBER", "4", 6, 7)]),  # ?atom hands over the token
        ("item", 10, 21, [("pair", 11, 14, [("WORD", "b", 11, 12), ("NUMBER", "2", 13, 14)]),  # _inner inlined
                          ("pair", 15, 19, [("WORD", "c", 15, 16), ("NUMBER", "3", 18, 19)])]),
        ("bang", 22, 26, [("WORD", "key", 23, 26)]),  # only WORD may follow '!': no KEY there
        ("item", 27, 30, [("KEY", "key", 27, 30)]),  # 'key' matched by WORD, folded into KEY
    ])
    with pytest.raises(SectionSyntaxError) as stop:
        ours.parse("a=1]", "start")
    assert stop.value.token is not None and (stop.value.token.type, stop.value.pos) == ("RSQB", 3)


def test_a_grammar_with_ignored_terminals_is_refused() -> None:
    """The LALR runtime skips nothing between tokens: blanks are written into the rules."""
    with pytest.raises(ValueError, match="%ignore .* is not supported"):
        build_tables(TOY + '%ignore " "\n', TOY_STARTS)
