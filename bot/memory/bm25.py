"""Dependency-free Okapi BM25 and the script-aware bigram terms it indexes."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from bot.text.scripts import HAN, HIRAGANA, KATAKANA, is_hiragana

K1 = 1.2
B = 0.75

# Runs of one script. Kanji, kana and Latin words never share a term, so a particle next to a
# noun (猫が) does not hide the noun.
_RUNS = re.compile(f"[{HAN}]+|[{HIRAGANA}]+|[{KATAKANA}]+|[A-Za-z0-9][A-Za-z0-9_+#]*")


def bigram_terms(text: str) -> list[str]:
    """Index terms: character bigrams of each kanji/kana run (a 1-char kanji or katakana run
    is kept whole; a lone hiragana is a particle) and lower-cased Latin words of 2+ characters.

    Bigrams need no dictionary, so indexing a large knowledge base costs milliseconds where
    Janome would take seconds, and they match across segmentation differences (機械学習).
    """
    terms: list[str] = []
    for match in _RUNS.finditer(unicodedata.normalize("NFKC", text)):
        run = match.group()
        if run.isascii():
            if len(run) >= 2:
                terms.append(run.lower())
        elif len(run) == 1:
            if not is_hiragana(run):
                terms.append(run)
        else:
            terms.extend(run[i : i + 2] for i in range(len(run) - 1))
    return terms


class BM25Index:
    """Okapi BM25 (k1=1.2, b=0.75, non-negative idf) over already tokenised documents."""

    def __init__(self, docs: Sequence[Sequence[str]], *, k1: float = K1, b: float = B) -> None:
        self._k1 = k1
        self._b = b
        self._lengths = tuple([len(doc) for doc in docs])
        self._n = len(docs)
        self._avgdl = (sum(self._lengths) / self._n) if self._n else 0.0
        # term → (document, frequency) of the documents holding it: a query touches only those.
        postings: dict[str, list[tuple[int, int]]] = {}
        for index, doc in enumerate(docs):
            for term, freq in Counter(doc).items():
                postings.setdefault(term, []).append((index, freq))
        # Kept as tuples in plain dicts: the index lives until the files change, and the
        # collector stops tracking tuples and dicts of text and numbers, so a full collection
        # does not walk every posting of every file.
        self._postings = {term: tuple(entries) for term, entries in postings.items()}
        self._df = {term: len(entries) for term, entries in postings.items()}

    def __len__(self) -> int:
        return self._n

    def idf(self, term: str) -> float:
        """Inverse document frequency; a term in no document gets the highest value."""
        n = self._df.get(term, 0)
        return math.log(1.0 + (self._n - n + 0.5) / (n + 0.5))

    def scores(self, query_tokens: Sequence[str]) -> list[float]:
        """BM25 score of every document for the query, in document order."""
        out = [0.0] * self._n
        for index, score in self.matches(query_tokens).items():
            out[index] = score
        return out

    def matches(self, query_tokens: Sequence[str]) -> dict[int, float]:
        """BM25 score of each document holding a query term (the others score 0), reading only
        those documents' postings."""
        out: dict[int, float] = {}
        if not self._n or self._avgdl == 0:
            return out
        k1, b, lengths, avgdl = self._k1, self._b, self._lengths, self._avgdl
        for term in dict.fromkeys(query_tokens):
            postings = self._postings.get(term)
            if not postings:
                continue
            weight = self.idf(term)
            for index, freq in postings:
                norm = k1 * (1.0 - b + b * lengths[index] / avgdl)
                out[index] = out.get(index, 0.0) + weight * freq * (k1 + 1.0) / (freq + norm)
        return out

    def query_weight(self, query_tokens: Sequence[str]) -> float:
        """Sum of the query's idf: what a document of average length containing every query
        term once would score. Dividing by it gives the share of the query a document explains.
        """
        return sum(self.idf(term) for term in dict.fromkeys(query_tokens))
