"""The words of recall's term index (`recall_terms`), for indexing and for queries alike.

A message is indexed as space-separated words, letters and digits only, so that both engines
see exactly these words (FTS5 `unicode61` only splits on the spaces; PostgreSQL takes them as
lexemes): English (Latin) words case-folded and stemmed (`bot.text.stemming`), Japanese words
as Janome found them (given by the indexer, which runs Janome in its worker), the speaker's
name, and the date as year, year+month (`202603`) and the month's English name (`march`).

A query's terms (`bot.store.reads.recall_rank.parse_terms`) become the same words: Latin ones
stemmed; a Japanese term as it is and, when longer than two characters, also its character
bigrams (転勤先 finds the Janome word 転勤), since the query is not run through Janome on a
turn's hot path.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from bot.store.reads.recall_rank import STOP_WORDS_EN, Terms
from bot.text.scripts import JAPANESE
from bot.text.stemming import stem

MONTHS: Final = (
    "january february march april may june july august september october november december"
).split()
_TOKEN = re.compile(r"[^\W_]+")
_CJK = re.compile(f"[{JAPANESE}]+")
_DATE = re.compile(r"^(\d{4})-(\d{2})")


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def latin_words(text: str) -> list[str]:
    """The stemmed non-Japanese words of `text` (stop words and single letters left out)."""
    out: list[str] = []
    for token in _TOKEN.findall(_CJK.sub(" ", _folded(text))):
        if token in STOP_WORDS_EN or (len(token) < 2 and not token.isdigit()):
            continue
        out.append(stem(token))
    return out


def japanese_words(words: Iterable[str]) -> list[str]:
    """Janome's words reduced to what the index keeps: their Japanese letters and digits."""
    return [
        token for word in words for token in _TOKEN.findall(_folded(word)) if _CJK.search(token)
    ]


def date_words(created_at: str) -> list[str]:
    """`2026-03-…` → `2026`, `202603`, `march` (stemmed like a query's `March`)."""
    found = _DATE.match(created_at)
    if found is None:
        return []
    year, month = found.groups()
    if not 1 <= int(month) <= 12:
        return [year]
    return [year, year + month, stem(MONTHS[int(month) - 1])]


def index_text(
    content: str, author: str | None, created_at: str, japanese: Sequence[str] = ()
) -> str:
    """The words stored for one message (see the module docstring)."""
    words = latin_words(content) + japanese_words(japanese)
    if author:
        words += latin_words(author) + japanese_words([author])
    return " ".join(words + date_words(created_at))


def _bigrams(word: str) -> list[str]:
    return [word[n : n + 2] for n in range(len(word) - 1)]


def query_words(terms: Terms) -> dict[str, tuple[str, ...]]:
    """Each query term → the index words it matches (a term may have none)."""
    out: dict[str, tuple[str, ...]] = {}
    for term in terms.all:
        words: list[str] = []
        if year_month := re.fullmatch(r"(\d{4})-(\d{2})", term):
            words.append("".join(year_month.groups()))
        for token in _TOKEN.findall(_folded(term)):
            if _CJK.search(token):
                words += [token, *(_bigrams(token) if len(token) > 2 else [])]
            elif token not in STOP_WORDS_EN and (len(token) >= 2 or token.isdigit()):
                words.append(stem(token))
        out[term] = tuple(dict.fromkeys(words))
    return out


def common_words(
    counts: Mapping[str, int], limit: int, budget: int | None = None
) -> tuple[list[str], list[str]]:
    """Split query words into (kept, left out) by their document counts, order kept.

    A word in `limit` or more indexed messages (a speaker's name, a year, a chatter word) is
    left out of the index match, which would otherwise score every one of those rows. With a
    `budget`, the rest are kept rarest first while their rows together stay within it (the
    rarest one always). When every word is common, none is kept (the caller then skips the
    term index)."""
    uncommon = sorted((docs, n) for n, docs in enumerate(counts.values()) if docs < limit)
    keep: set[int] = set()
    rows = 0
    for docs, n in uncommon:
        if keep and budget is not None and rows + docs > budget:
            break
        keep.add(n)
        rows += docs
    words = list(counts)
    return (
        [word for n, word in enumerate(words) if n in keep],
        [word for n, word in enumerate(words) if n not in keep],
    )


def term_weights(
    wanted: Mapping[str, Sequence[str]], counts: Mapping[str, int], limit: int
) -> dict[str, float]:
    """Each query term's weight, an inverse document frequency: log(1 + limit / docs) of its
    rarest index word (`docs` counted up to `limit`, so a word that common weighs log 2, as
    does a term with no index word). A speaker's name or a chatter word then counts for less
    than a rare word when candidates are ordered by the terms they hold."""
    weights: dict[str, float] = {}
    for term, words in wanted.items():
        docs = min((counts.get(word, limit) for word in words), default=limit)
        weights[term] = math.log(1 + limit / min(max(docs, 1), limit))
    return weights


def fts_words(words: Iterable[str]) -> str:
    """FTS5: the words as quoted tokens, OR-ed ('' when there are none)."""
    return " OR ".join(f'"{word}"' for word in dict.fromkeys(words))


def tsquery_words(words: Iterable[str]) -> str:
    """PostgreSQL: the words as quoted lexemes, OR-ed ('' when there are none)."""
    return " | ".join(f"'{word}'" for word in dict.fromkeys(words))


def matched_words(index_terms: str, wanted: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The query terms one of whose words is among a row's index words."""
    have = set(index_terms.split())
    return tuple(term for term, words in wanted.items() if have.intersection(words))
