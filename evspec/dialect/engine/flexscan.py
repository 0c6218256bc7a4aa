"""A small flex: start conditions, longest match with rule priority, REJECT, and perf's columns.

perf's lexers are flex scanners whose quirks decide what perf accepts and where its caret goes,
so this engine reproduces the parts of flex they depend on:

* every rule active in the current start condition competes; the **longest** match wins, and on
  equal length the rule written **first** wins (trailing context counts towards the length but is
  not consumed);
* an *exclusive* start condition sees only its own rules, an *inclusive* one also the rules
  without a start condition (with lower priority, since perf writes them last);
* an action may REJECT its match: flex then takes the next candidate, longest first, in rule
  order, including shorter matches of the same rule;
* a character no rule matches is echoed to stdout (flex's default rule);
* ``YY_USER_ACTION`` runs before every action, rejected and echoing ones included:
  ``last_column = first_column; first_column = column; column += yyleng``. perf reports
  ``last_column`` of the look-ahead token as the column of a syntax error;
* with ``%option yylineno`` (``newline_resets_column``) a rule's match that contains a newline
  sets the column to 0 before that (flex's default rule does not).

The scanner works on a ``str`` whose characters are the bytes of the event string (latin-1), so
columns are byte offsets as in C.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

from evspec.span import Slotted, set_field

INITIAL = "INITIAL"


class Rule(Slotted):
    """One flex rule. ``states`` empty means "INITIAL and every inclusive state"; ``trail`` is
    trailing context (must follow, is not consumed); ``may_reject``: the action can REJECT, so
    every match length is a candidate."""

    name: str
    pattern: re.Pattern[str]
    states: frozenset[str] = frozenset()
    trail: re.Pattern[str] | None = None
    may_reject: bool = False


def literals(*words: str) -> re.Pattern[str]:
    """A pattern matching the longest of ``words`` (Python's alternation takes the first that fits)."""
    return re.compile("|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True)))


class Loc(Slotted):
    """bison's location as perf's lexer fills it (only the columns matter)."""

    first: int
    last: int


class Token(Slotted):
    kind: str
    value: object
    loc: Loc
    text: str


class Cursor(Slotted, frozen=False):
    """The scanner state an action sees and changes; bison initialises yylloc to 1:1."""

    __slots__ = ("text", "pos", "column", "first", "last", "state", "echoed")
    text: str
    pos: int
    column: int
    first: int
    last: int
    state: str
    echoed: list[str]

    def __init__(self, text: str, pos: int = 0, column: int = 0, first: int = 1, last: int = 1,
                 state: str = INITIAL) -> None:
        self.text, self.pos, self.column, self.first, self.last, self.state = text, pos, column, first, last, state
        self.echoed = []

    def begin(self, state: str) -> None:
        self.state = state


class Reject(Exception):
    """Raised by an action to REJECT its match (perf's USER_REJECT also rewinds the column)."""


# What an action does with its match:
#   Token: emit it (the match is consumed unless the action rewound ``cursor.pos``);
#   None: consume the match silently.
Action = Callable[[Cursor, str, Rule], "Token | None"]
EofAction = Callable[[Cursor], None]


class Scanner(Slotted, uncompared=("by_state",), hidden=("by_state",)):
    """A flex scanner: its rules in order, its start conditions, and (``by_state``) the rules
    active in each state, worked out once."""

    __slots__ = ("rules", "exclusive", "inclusive", "newline_resets_column", "by_state")
    rules: tuple[Rule, ...]
    exclusive: frozenset[str]
    inclusive: frozenset[str]
    newline_resets_column: bool
    by_state: dict[str, tuple[Rule, ...]]

    def __init__(self, rules: tuple[Rule, ...], exclusive: frozenset[str], inclusive: frozenset[str],
                 newline_resets_column: bool = False) -> None:
        set_field(self, "rules", rules)
        set_field(self, "exclusive", exclusive)
        set_field(self, "inclusive", inclusive)
        set_field(self, "newline_resets_column", newline_resets_column)
        set_field(self, "by_state", {})

    def active(self, state: str) -> tuple[Rule, ...]:
        found = self.by_state.get(state)
        if found is None:
            found = self.by_state[state] = self._active(state)
        return found

    def _active(self, state: str) -> tuple[Rule, ...]:
        if state in self.exclusive:
            return tuple(r for r in self.rules if state in r.states)
        return tuple(
            r for r in self.rules if state in r.states or (not r.states and (state == INITIAL or state in self.inclusive))
        )

    def candidates(self, rules: Sequence[Rule], text: str, pos: int) -> list[tuple[int, int, int]]:
        """(total length, rule index, consumed length), best first."""
        out: list[tuple[int, int, int]] = []
        for i, rule in enumerate(rules):
            m = rule.pattern.match(text, pos)
            if m is None or m.end() == pos:
                continue
            if rule.trail is not None:
                t = rule.trail.match(text, m.end())
                if t is None:
                    continue
                out.append((t.end() - pos, i, m.end() - pos))
                continue
            longest = m.end() - pos
            out.append((longest, i, longest))
            if rule.may_reject:
                for n in range(longest - 1, 0, -1):
                    if rule.pattern.fullmatch(text, pos, pos + n):
                        out.append((n, i, n))
        out.sort(key=lambda c: (-c[0], c[1]))
        return out

    def scan(
        self,
        text: str,
        start: str,
        act: Callable[[Cursor, str, Rule], Token | None],
        on_eof: Callable[[Cursor], None],
        eof_kind: str = "$end",
    ) -> tuple[list[Token], Cursor]:
        """Every token of ``text`` (the end token last) and the final cursor (echoed characters)."""
        cur = Cursor(text, state=start)
        return list(self.tokens(cur, act, on_eof, eof_kind)), cur

    def tokens(
        self,
        cur: Cursor,
        act: Callable[[Cursor, str, Rule], Token | None],
        on_eof: Callable[[Cursor], None],
        eof_kind: str = "$end",
    ) -> Iterator[Token]:
        """The tokens of ``cur.text`` one at a time, the end token last: as bison pulls them, so
        that what an action records (an error, an echoed character) happens when perf's would."""
        guard = 0
        text = cur.text
        while True:
            guard += 1
            if guard > 20 * (len(text) + 10):
                raise RuntimeError("scanner made no progress")  # a rule set bug, not an input error
            if cur.pos >= len(text):
                state = cur.state
                on_eof(cur)
                if cur.state == state:
                    yield Token(eof_kind, None, Loc(cur.first, cur.last), "")
                    return
                continue
            token = self._step(cur, self.active(cur.state), act)
            if token is not None:
                yield token

    def _step(self, cur: Cursor, rules: tuple[Rule, ...], act: Callable[[Cursor, str, Rule], Token | None]) -> Token | None:
        start = cur.pos
        for _total, index, length in self.candidates(rules, cur.text, start):
            rule = rules[index]
            if self.newline_resets_column and "\n" in cur.text[start : start + length]:
                cur.column = 0
            self._user_action(cur, length)
            cur.pos = start + length
            try:
                return act(cur, cur.text[start : start + length], rule)
            except Reject:
                cur.pos = start
                continue
        # flex's default rule: ECHO one character (an echoed newline does not reset the column)
        self._user_action(cur, 1)
        cur.echoed.append(cur.text[start])
        cur.pos = start + 1
        return None

    @staticmethod
    def _user_action(cur: Cursor, length: int) -> None:
        cur.last = cur.first
        cur.first = cur.column
        cur.column += length


def token(cur: Cursor, kind: str, value: object, text: str) -> Token:
    return Token(kind, value, Loc(cur.first, cur.last), text)


def rewind(cur: Cursor, text: str) -> None:
    """perf's REWIND: give the whole match back (yyless(0)) and take its length off the column."""
    cur.column -= len(text)
    cur.pos -= len(text)


def user_reject(cur: Cursor, text: str) -> None:
    """perf's USER_REJECT: take the length off the column, then REJECT."""
    cur.column -= len(text)
    raise Reject


def unput_first(cur: Cursor) -> None:
    """``unput(*yytext)`` of a one-character match: the character is read again (the column is not
    corrected, which shifts every later column by one)."""
    cur.pos -= 1
