"""A small Porter-style suffix stripper for English words (recall's term index and queries)."""

from __future__ import annotations

import re
from typing import Final

_VOWEL = re.compile(r"[aeiouy]")
_DOUBLE_KEEP = frozenset("lsz")
_SUFFIXES: Final = (
    ("ational", "ate"),
    ("ization", "ize"),
    ("fulness", "ful"),
    ("iveness", "ive"),
    ("ation", "ate"),
    ("ness", ""),
    ("ment", ""),
    ("ful", ""),
    ("ly", ""),
)


def _undouble(word: str) -> str:
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in _DOUBLE_KEEP | set("aeiou"):
        return word[:-1]
    return word


def _plural(word: str) -> str:
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "i"
    if word.endswith(("ss", "us", "is")):
        return word
    if (word.endswith("es") and word[-3] in "sxz") or word.endswith(("ches", "shes")):
        return word[:-2]
    if word.endswith("s") and len(word) > 3:
        return word[:-1]
    return word


def stem(word: str) -> str:
    """A small Porter-style suffix stripper for English: plurals, -ed/-ing (doubling undone),
    a few derivational endings, a final -y/-e — `moving`, `moved`, `moves` and `move` all
    give `mov`. Non-ASCII or short words come back unchanged (lower-cased)."""
    word = word.lower()
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    word = _plural(word)
    for suffix in ("ingly", "edly", "ing", "ed"):
        rest = word[: -len(suffix)]
        if word.endswith(suffix) and len(rest) >= 3 and _VOWEL.search(rest):
            word = _undouble(rest)
            break
    for suffix, replacement in _SUFFIXES:
        rest = word[: -len(suffix)]
        if word.endswith(suffix) and len(rest) >= 3:
            word = rest + replacement
            break
    if word.endswith("y") and len(word) > 3 and word[-2] not in "aeiou":
        word = word[:-1] + "i"
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word
