"""SQLite FTS5's `bm25()`, computed in Python from the same counts (with `bot.text.bm25`), so
that PostgreSQL ranks recall's candidates exactly as SQLite does (`recall_postgres`).

FTS5 (fts5_aux.c): for each phrase of the MATCH, idf = ln((N - n + 0.5) / (n + 0.5)), 1e-6 when
that is not positive (N: rows of the full-text table, all spaces; n: rows holding the phrase);
score = Σ idf × f × (k1 + 1) / (f + k1 × (1 - b + b × D / avgdl)) with k1 1.2, b 0.75 (f: the
phrase's occurrences in the row, D: the row's tokens, avgdl: tokens per row over the table),
returned negated (lower is better). The tokens: the trigram tokenizer's (`messages_fts`: one
per character position, so a text of L characters has L - 2, a phrase's occurrences overlap,
case folded) or the words of `recall_terms` (space-separated, `unicode61`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.text import bm25


@dataclass(frozen=True)
class Corpus:
    """A full-text table's row count and its total number of tokens (all spaces)."""

    rows: float
    tokens: float

    @property
    def average(self) -> float:
        """Tokens per row (1 for an empty table, which has no rows to score anyway)."""
        return self.tokens / self.rows if self.rows > 0 and self.tokens > 0 else 1.0


def idf(corpus: Corpus, hits: int) -> float:
    """A phrase's inverse document frequency, as FTS5 computes it."""
    return bm25.idf(corpus.rows, hits, fts5=True)


def trigram_length(text: str) -> int:
    """The trigram tokenizer's tokens in `text`: one per position with 3 characters."""
    return max(len(text) - 2, 0)


def occurrences(text: str, phrase: str) -> int:
    """A phrase's case-folded occurrences in `text`, overlapping ones included (trigram)."""
    folded, needle = text.lower(), phrase.lower()
    count, start = 0, folded.find(needle)
    while needle and start >= 0:
        count += 1
        start = folded.find(needle, start + 1)
    return count


def trigram_score(
    text: str, phrases: Sequence[str], idfs: Sequence[float], average: float
) -> float:
    """`bm25` of a message's text for trigram phrases (the `messages_fts` match)."""
    freqs = [occurrences(text, phrase) for phrase in phrases]
    return bm25.row_score(freqs, trigram_length(text), idfs, average)


def words_score(terms: str, words: Sequence[str], idfs: Sequence[float], average: float) -> float:
    """`bm25` of a row of the term index for single-word phrases (the `recall_terms_fts`
    match)."""
    have = terms.split()
    return bm25.row_score([have.count(word) for word in words], len(have), idfs, average)
