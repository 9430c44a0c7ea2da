"""The one Okapi BM25: its constants, both idf flavours, the length norm, and an index.

Two callers, two idf flavours, kept apart so that each ranks exactly as before: the knowledge
base's `BM25Index` takes the non-negative idf ln(1 + (N - n + 0.5) / (n + 0.5)); recall's
PostgreSQL ranking (`bot.store.reads.recall_bm25`) reproduces SQLite FTS5's, ln((N - n + 0.5) /
(n + 0.5)) floored at 1e-6, and its `row_score` sums in FTS5's order and is negated.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Final

K1: Final = 1.2
B: Final = 0.75
FTS5_MIN_IDF: Final = 1e-6


def idf(rows: float, hits: float, *, fts5: bool = False) -> float:
    """A term's inverse document frequency: non-negative, or FTS5's (`fts5`, see the module)."""
    if not fts5:
        return math.log(1.0 + (rows - hits + 0.5) / (hits + 0.5))
    value = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows > 0 else 0.0
    return value if value > 0.0 else FTS5_MIN_IDF


def length_norm(length: float, average: float, *, k1: float = K1, b: float = B) -> float:
    """k1 × (1 - b + b × length / average): how a document's length damps its frequencies."""
    return k1 * (1.0 - b + b * length / average)


def row_score(freqs: Sequence[int], length: int, idfs: Sequence[float], average: float) -> float:
    """One row's FTS5 bm25 (negated: lower is better) from each phrase's occurrences in it."""
    norm = length_norm(length, average)
    score = 0.0
    for freq, weight in zip(freqs, idfs, strict=True):
        score += weight * ((freq * (K1 + 1.0)) / (freq + norm))
    return -1.0 * score


class BM25Index:
    """Okapi BM25 (k1=1.2, b=0.75, non-negative idf) over already tokenised documents."""

    def __init__(self, docs: Sequence[Sequence[str]], *, k1: float = K1, b: float = B) -> None:
        self._k1 = k1
        self._n = len(docs)
        lengths = [len(doc) for doc in docs]
        self._avgdl = (sum(lengths) / self._n) if self._n else 0.0
        avgdl = self._avgdl or 1.0
        self._norms = tuple([length_norm(length, avgdl, k1=k1, b=b) for length in lengths])
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
        return idf(self._n, self._df.get(term, 0))

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
        lift, norms = self._k1 + 1.0, self._norms
        for term in dict.fromkeys(query_tokens):
            postings = self._postings.get(term)
            if not postings:
                continue
            weight = self.idf(term)
            for index, freq in postings:
                # The product in the order it always had, so the scores stay bit for bit.
                out[index] = out.get(index, 0.0) + weight * freq * lift / (freq + norms[index])
        return out

    def query_weight(self, query_tokens: Sequence[str]) -> float:
        """Sum of the query's idf: what a document of average length containing every query
        term once would score. Dividing by it gives the share of the query a document explains.
        """
        return sum(self.idf(term) for term in dict.fromkeys(query_tokens))
