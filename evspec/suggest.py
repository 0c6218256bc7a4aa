"""Suggestions for names that are not found: the closest known names by edit distance, and the
characters of other scripts that look like ASCII letters (a Cyrillic 'с' in 'сycles').

Library code: returns strings for diagnostics' help lines, imports nothing heavy until a
non-ASCII character needs naming (``unicodedata``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # imports for annotations only
if TYPE_CHECKING:
    from collections.abc import Iterable

#: letters of other scripts, and punctuation, that are drawn like an ASCII character
#: (fullwidth forms and the like are found by NFKC normalisation instead)
LOOK_ALIKES: dict[str, str] = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t",
    "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j", "ԁ": "d", "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
    "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ү": "Y", "Ԁ": "D",
    # Greek
    "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # dashes, quotes, slashes, colons
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
    "\u2018": "'", "\u2019": "'", "\u201a": ",", "\u2044": "/", "\u2215": "/", "\u2236": ":", "\u02d0": ":",
    "\u00a0": " ",
}


def ascii_twin(char: str) -> str | None:
    """The ASCII character ``char`` looks like, or None (ASCII itself, or like nothing)."""
    if char.isascii():
        return None
    twin = LOOK_ALIKES.get(char)
    if twin is not None:
        return twin
    import unicodedata

    folded = unicodedata.normalize("NFKC", char)
    return folded if len(folded) == 1 and folded.isascii() and folded.isprintable() else None


def char_name(char: str) -> str:
    """``U+0441 CYRILLIC SMALL LETTER ES``."""
    import unicodedata

    return f"U+{ord(char):04X} {unicodedata.name(char, 'UNNAMED')}"


def look_alike_note(char: str) -> str | None:
    """``'с' is U+0441 CYRILLIC SMALL LETTER ES, drawn like the ASCII 'c'``, for a character that
    looks like an ASCII one; None for any other."""
    twin = ascii_twin(char)
    if twin is None:
        return None
    return f"'{char}' is {char_name(char)}, drawn like the ASCII '{twin}'"


def without_look_alikes(text: str) -> str:
    """``text`` with every look-alike character replaced by its ASCII twin."""
    if text.isascii():
        return text
    return "".join(ascii_twin(c) or c for c in text)


def edit_distance(a: str, b: str, limit: int) -> int:
    """The optimal-string-alignment distance (insertions, deletions, substitutions, and swaps of
    two neighbours: 'swtich' is 1 from 'switch'), or ``limit + 1`` when it is more than ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                best = min(best, previous2[j - 2] + 1)
            current[j] = best
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1] if previous[-1] <= limit else limit + 1


def _limit(name: str) -> int:
    """How far a candidate may be from ``name``: 1 edit in a short name, up to 3 in a long one."""
    return 1 if len(name) <= 4 else 2 if len(name) <= 10 else 3


def closest(name: str, candidates: Iterable[str], most: int = 3) -> list[str]:
    """The candidates nearest to ``name`` (a different case counts as nearest of all), at most
    ``most``, nearest first; none when nothing is near."""
    if len(name) > 200:  # no name of a machine is that long: nothing is near it
        return []
    limit = _limit(name)
    lower = name.lower()
    ranked: list[tuple[float, str]] = []
    for candidate in set(candidates):
        if candidate == name:
            continue
        if candidate.lower() == lower:
            ranked.append((0.5, candidate))
            continue
        distance = edit_distance(lower, candidate.lower(), limit)
        if distance <= limit:
            ranked.append((distance, candidate))
    ranked.sort()
    return [candidate for _, candidate in ranked[:most]]


def did_you_mean(options: list[str], quote: str = "'") -> str | None:
    """``did you mean 'a'?`` / ``did you mean 'a' or 'b'?``; None without options."""
    if not options:
        return None
    shown = [f"{quote}{o}{quote}" for o in options]
    return "did you mean " + (shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]) + "?"


def hex_problem(word: str) -> str | None:
    """Why ``word``, written like a raw event ``rHEX``, is not one: the first character that is
    no hex digit, or the ``0x`` that the event form does not take; None when it is no such try."""
    if len(word) < 2 or word[0] != "r" or word[1] not in "0123456789abcdefABCDEF":
        return None
    if word.startswith("r0x") and len(word) > 3:
        return (f"'{word}' is not a raw event: the event form is r + hex digits without '0x' "
                f"('r{word[3:]}'); 'r0x' is written only as a term ('cpu/{word}/')")
    for char in word[1:]:
        if char not in "0123456789abcdefABCDEF":
            if not (char.isalnum() and char.isascii()):
                return None  # another kind of name ('r2-d2', 'r1_x'): not a hex try
            return f"'{word}' is not a raw event: '{char}' is not a hexadecimal digit"
    return None


# --------------------------------------------------------------------------------------------
# what a described system offers in place of a name it does not have


def builtin_event_names() -> tuple[str, ...]:
    from evspec import lexicon

    return (*lexicon.HARDWARE_EVENTS, *lexicon.SOFTWARE_EVENTS, *lexicon.TOOL_EVENTS)
