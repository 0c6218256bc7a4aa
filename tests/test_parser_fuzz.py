"""Fuzzing: random and mutated event strings never make ``analyze`` raise, every span lies inside
the string, every code is catalogued, and whatever parses cleanly also round-trips.

10,000 cases when ``CI=true``, 1,000 otherwise; the cases come from a fixed seed (reproducible).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import pytest
from corpus_files import read_corpus

from evspec.codes import catalogue
from evspec.diagnostics import EvspecError
from evspec.parser import analyze, parse, parse_terms
from evspec.printer import print_events

CASES = 10_000 if os.environ.get("CI") == "true" else 1_000
CHUNKS = 10
SEED = 0xE5EC

_LANGUAGE = "abcdefmoprsuwxyzkhpGHIPSDWeb0123456789_-.*?!:/,{}[]='@ \t"
_UNICODE = ["\x00", "\x7f", "\u00e9", "\u00fc", "\u4e2d", "\u200b", "\ufeff", "\uffff", "\U0001f600", "\n", "\r"]
_TOKENS = [
    "cycles", "cpu-clock", "L1-dcache-load-misses", "r1a", "1", ":", "::", "/", "//", "{", "}", ",", "=",
    "map:", "map:arr.value", ".event", "[", "]", "[all]", "...", "0x1f", "mem:", "mem:0", "./a.o",
    "'", "'x,y'", " ", "@cfg", "name=", "u", "ppp", "sched:sched_switch", "tsc", "x{", "*", "\t",
]


def _corpus() -> list[str]:
    seeds = ["cycles:u", "{cpu-clock,task-clock}:W", "./a.o/map:channel.value[0,1,2,3...5]=101/",
             "bpf-output/no-inherit,name=evt/,./a.o/map:channel.event=evt/", "mem:0x1000/8:rw:u"]
    return seeds + [row.string for row in read_corpus()]


def _mutate(rng: random.Random, text: str, alphabet: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(4)
        at = rng.randint(0, len(chars))
        if op == 0:
            chars.insert(at, rng.choice(alphabet) if rng.random() < 0.9 else rng.choice(_UNICODE))
        elif op == 1 and chars:
            del chars[min(at, len(chars) - 1)]
        elif op == 2 and chars:
            chars[min(at, len(chars) - 1)] = rng.choice(alphabet)
        elif chars:
            start = rng.randint(0, len(chars) - 1)
            piece = chars[start:start + rng.randint(1, 6)]
            chars[at:at] = piece
    return "".join(chars)


def cases() -> Iterator[str]:
    rng = random.Random(SEED)
    corpus = _corpus()
    for i in range(CASES):
        kind = i % 10
        if kind < 4:
            yield _mutate(rng, rng.choice(corpus), _LANGUAGE)
        elif kind < 6:
            yield "".join(rng.choice(_LANGUAGE) for _ in range(rng.randint(0, 40)))
        elif kind == 6:
            yield rng.choice([",", " , ", "", "}", "{"]).join(rng.sample(corpus, rng.randint(2, 5)))
        elif kind == 7:
            text = rng.choice(corpus)
            at = rng.randint(0, len(text))
            yield text[:at] + "".join(rng.choices(_UNICODE, k=rng.randint(1, 3))) + text[at:]
        elif kind == 8:
            yield "".join(rng.choices(_TOKENS, k=rng.randint(1, 12)))
        elif i % 100 == 9:
            pieces: list[str] = []
            while sum(map(len, pieces)) < 10_000:
                pieces.append(rng.choice(corpus) if rng.random() < 0.7 else rng.choice(_TOKENS))
            yield rng.choice([",", "", ";", " "]).join(pieces)[:10_000]
        else:
            yield _mutate(rng, rng.choice(corpus), _LANGUAGE + "".join(_UNICODE))


ALL = list(cases())
KNOWN = catalogue()


def _check(text: str) -> None:
    result = analyze(text)
    for diag in result.diagnostics:
        assert 0 <= diag.span.start <= diag.span.end <= len(text), (text, diag)
        assert diag.code in KNOWN, (text, diag.code)
        assert diag.message
        for label in diag.labels:
            assert 0 <= label.span.start <= label.span.end <= len(text)
    starts = [d.span.start for d in result.diagnostics if d.is_error]
    if result.ok:
        printed = print_events(result.events)
        assert parse(printed) == result.events, (text, printed)
    else:
        assert starts, text
        with pytest.raises(EvspecError):
            parse(text)
    for item in result.events.items:
        assert 0 <= item.span.start <= item.span.end <= len(text)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_analyze_never_raises(chunk: int) -> None:
    size = len(ALL) // CHUNKS
    for text in ALL[chunk * size:(chunk + 1) * size]:
        try:
            _check(text)
        except AssertionError:
            raise
        except Exception as exc:  # anything else is a crash of the front end
            raise AssertionError(f"analyze({text!r}) raised {exc!r}") from exc


def test_the_cases_cover_long_and_odd_strings() -> None:
    assert any(len(t) >= 9_000 for t in ALL)
    assert any("\x00" in t for t in ALL)
    assert any(any(ord(c) > 127 for c in t) for t in ALL)
    assert "" in ALL or any(not t.strip() for t in ALL)


@pytest.mark.parametrize("text", ["", "=", ",", "a=", "a,,b", "a b", "\x00", "a=1" * 3000, "@", "[", "'"])
def test_parse_terms_raises_only_evspec_errors(text: str) -> None:
    try:
        parse_terms(text)
    except EvspecError as exc:
        for diag in exc.diagnostics:
            assert 0 <= diag.span.start <= diag.span.end <= len(text)
