"""LALR(1) tables built the way bison builds them, and bison's parse loop.

When perf's parser notices an error matters as much as whether it does: semantic actions (adding
a tracepoint, checking terms) run during reductions, and bison reduces *before* it looks at the
next token wherever a state has a default reduction. So this module builds real LALR(1) tables
and applies bison's policies:

* shift/reduce conflicts are resolved as shifts, reduce/reduce conflicts for the earlier rule;
* every state with reductions gets a default reduction, the one with the most look-aheads
  (the first such rule on a tie); tokens without an explicit action take it;
* a state whose only action is its default reduction reduces without reading a token;
* a syntax error is detected only in a state without a default reduction.

Grammars are small (perf's has about 90 rules), so the tables are built on first use and cached
by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from evspec.dialect.engine.flexscan import Loc, Token
from evspec.span import Slotted

END = "$end"
ACCEPT = "$accept"


class Production(Slotted):
    """``lhs: rhs``, with ``action(ctx, values, locs) -> value``."""

    lhs: str
    rhs: tuple[str, ...]
    action: Callable[..., object] | None = None


class Tables(Slotted):
    """The parse tables: production 0 is ``$accept: start $end``; per state, the terminals it
    shifts (to a state), the nonterminals it goes to, the terminals it reduces on (explicit
    entries, to a production) and its default production."""

    productions: tuple[Production, ...]
    shift: tuple[dict[str, int], ...]
    goto: tuple[dict[str, int], ...]
    reduce: tuple[dict[str, int], ...]
    default: tuple[int | None, ...]
    accept_state: int

    def needs_lookahead(self, state: int) -> bool:
        return bool(self.shift[state]) or bool(self.reduce[state]) or self.default[state] is None


def build(start: str, productions: Sequence[Production]) -> Tables:
    prods = (Production(ACCEPT, (start, END)), *productions)
    nonterminals = {p.lhs for p in prods}
    by_lhs: dict[str, list[int]] = {}
    for i, p in enumerate(prods):
        by_lhs.setdefault(p.lhs, []).append(i)

    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for p in prods:
            if p.lhs not in nullable and all(s in nullable for s in p.rhs):
                nullable.add(p.lhs)
                changed = True
    first: dict[str, set[str]] = {n: set() for n in nonterminals}
    changed = True
    while changed:
        changed = False
        for p in prods:
            for s in p.rhs:
                add = first[s] if s in nonterminals else {s}
                if not add <= first[p.lhs]:
                    first[p.lhs] |= add
                    changed = True
                if s not in nullable:
                    break

    def first_of(seq: Sequence[str], tail: str) -> set[str]:
        out: set[str] = set()
        for s in seq:
            if s in nonterminals:
                out |= first[s]
                if s not in nullable:
                    return out
            else:
                out.add(s)
                return out
        out.add(tail)
        return out

    Item = tuple[int, int]  # (production, dot)

    def closure0(items: frozenset[Item]) -> frozenset[Item]:
        out = set(items)
        todo = list(items)
        while todo:
            pi, dot = todo.pop()
            rhs = prods[pi].rhs
            if dot < len(rhs) and rhs[dot] in nonterminals:
                for q in by_lhs[rhs[dot]]:
                    if (q, 0) not in out:
                        out.add((q, 0))
                        todo.append((q, 0))
        return frozenset(out)

    # LR(0) automaton, states identified by their kernels
    kernels: list[frozenset[Item]] = [frozenset({(0, 0)})]
    index: dict[frozenset[Item], int] = {kernels[0]: 0}
    transitions: list[dict[str, int]] = []
    i = 0
    while i < len(kernels):
        items = closure0(kernels[i])
        moves: dict[str, set[Item]] = {}
        for pi, dot in sorted(items):
            rhs = prods[pi].rhs
            if dot < len(rhs):
                moves.setdefault(rhs[dot], set()).add((pi, dot + 1))
        trans: dict[str, int] = {}
        for sym, kernel_items in moves.items():
            k = frozenset(kernel_items)
            if k not in index:
                index[k] = len(kernels)
                kernels.append(k)
            trans[sym] = index[k]
        transitions.append(trans)
        i += 1

    # LALR look-aheads by propagation (dragon book, algorithm 4.62)
    probe = "#"
    lookahead: list[dict[Item, set[str]]] = [{item: set() for item in k} for k in kernels]
    lookahead[0][(0, 0)].add(END)  # never used: $accept's item shifts $end explicitly
    propagate: list[list[tuple[Item, int, Item]]] = [[] for _ in kernels]
    for s, kernel in enumerate(kernels):
        for k_item in kernel:
            closure = _closure1(k_item, probe, prods, by_lhs, nonterminals, first_of)
            for (pi, dot), las in closure.items():
                rhs = prods[pi].rhs
                if dot >= len(rhs):
                    continue
                target = transitions[s][rhs[dot]]
                moved = (pi, dot + 1)
                for la in las:
                    if la == probe:
                        propagate[s].append((k_item, target, moved))
                    else:
                        lookahead[target][moved].add(la)
    changed = True
    while changed:
        changed = False
        for s in range(len(kernels)):
            for k_item, target, moved in propagate[s]:
                src = lookahead[s][k_item]
                dst = lookahead[target][moved]
                if not src <= dst:
                    dst |= src
                    changed = True

    shift: list[dict[str, int]] = []
    goto: list[dict[str, int]] = []
    reduce: list[dict[str, int]] = []
    default: list[int | None] = []
    accept_state = -1
    for s, kernel in enumerate(kernels):
        trans = transitions[s]
        sh = {t: d for t, d in trans.items() if t not in nonterminals}
        gt = {t: d for t, d in trans.items() if t in nonterminals}
        red: dict[str, int] = {}
        full: dict[Item, set[str]] = {}
        for k_item in kernel:
            for item, las in _closure1(k_item, probe, prods, by_lhs, nonterminals, first_of).items():
                full.setdefault(item, set()).update(la for la in las if la != probe)
                if probe in las:
                    full[item] |= lookahead[s][k_item]
        for (pi, dot), las in sorted(full.items()):
            if dot != len(prods[pi].rhs) or pi == 0:
                continue
            for la in las:
                if la in sh:
                    continue  # shift/reduce: bison shifts
                if la in red and red[la] < pi:
                    continue  # reduce/reduce: the earlier rule
                red[la] = pi
        if (0, 1) in kernel:
            accept_state = trans.get(END, -1)
        counts: dict[int, int] = {}
        for pi in red.values():
            counts[pi] = counts.get(pi, 0) + 1
        best: int | None = None
        for pi in sorted(counts):
            if best is None or counts[pi] > counts[best]:
                best = pi
        if best is not None:
            red = {t: pi for t, pi in red.items() if pi != best}
        shift.append(sh)
        goto.append(gt)
        reduce.append(red)
        default.append(best)
    return Tables(prods, tuple(shift), tuple(goto), tuple(reduce), tuple(default), accept_state)


def _closure1(item, probe, prods, by_lhs, nonterminals, first_of) -> dict[tuple[int, int], set[str]]:
    """LR(1) closure of one kernel item with the probe look-ahead."""
    out: dict[tuple[int, int], set[str]] = {item: {probe}}
    todo = [item]
    while todo:
        pi, dot = todo.pop()
        rhs = prods[pi].rhs
        if dot >= len(rhs) or rhs[dot] not in nonterminals:
            continue
        for la in list(out[(pi, dot)]):
            follow = first_of(rhs[dot + 1 :], la)
            for q in by_lhs[rhs[dot]]:
                cur = out.setdefault((q, 0), set())
                if not follow <= cur:
                    cur |= follow
                    todo.append((q, 0))
    return out


class SyntaxError_(Exception):
    """bison detected a syntax error at ``token``."""

    def __init__(self, token: Token) -> None:
        super().__init__(token.kind)
        self.token = token


class Abort(Exception):
    """A semantic action aborted the parse (YYABORT)."""


class Outcome(Slotted):
    """How a parse ended: accepted (with the start symbol's value) or not; ``syntax_error_at``
    is the token bison called yyerror on, if it did."""

    ok: bool
    value: object = None
    syntax_error_at: Token | None = None


def parse(tables: Tables, tokens: Iterator[Token], ctx: object) -> Outcome:
    """Run bison's loop over ``tokens``; actions get (ctx, values, locs) and may raise Abort."""
    states = [0]
    values: list[object] = [None]
    locs: list[Loc] = [Loc(1, 1)]
    lookahead: Token | None = None
    prods = tables.productions
    while True:
        state = states[-1]
        if not tables.needs_lookahead(state):
            rule = tables.default[state]
            assert rule is not None
        else:
            if lookahead is None:
                lookahead = next(tokens)
            target = tables.shift[state].get(lookahead.kind)
            if target is not None:
                if target == tables.accept_state and lookahead.kind == END:
                    return Outcome(True, values[-1])
                states.append(target)
                values.append(lookahead.value)
                locs.append(lookahead.loc)
                lookahead = None
                continue
            rule = tables.reduce[state].get(lookahead.kind, tables.default[state])
            if rule is None:
                return Outcome(False, syntax_error_at=lookahead)
        prod = prods[rule]
        n = len(prod.rhs)
        rhs_values = values[len(values) - n :] if n else []
        rhs_locs = locs[len(locs) - n :] if n else []
        loc = Loc(rhs_locs[0].first, rhs_locs[-1].last) if n else Loc(locs[-1].last, locs[-1].last)
        try:
            value = prod.action(ctx, rhs_values, rhs_locs) if prod.action is not None else (rhs_values[0] if n else None)
        except Abort:
            return Outcome(False)
        if n:
            del states[-n:]
            del values[-n:]
            del locs[-n:]
        states.append(tables.goto[states[-1]][prod.lhs])
        values.append(value)
        locs.append(loc)
