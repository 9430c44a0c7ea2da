"""Plain Okapi BM25 over a conversation's messages: the held-out bench's baseline.

k1 1.2, b 0.75, idf log(1 + (N − df + 0.5) / (df + 0.5)); tokens are lower-cased `\\w+` runs,
no stemming, no stop words — the textbook ranking the issue's 43 % figure refers to.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping

K1 = 1.2
B = 0.75
_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """Lower-cased word runs."""
    return _TOKEN.findall(text.lower())


def bm25_top(texts: Mapping[str, str], query: str, k: int) -> list[str]:
    """The keys of the `k` best texts for `query`, best first (ties: first key first)."""
    docs = {key: Counter(tokens(text)) for key, text in texts.items()}
    lengths = {key: sum(counts.values()) for key, counts in docs.items()}
    count = len(docs) or 1
    average = sum(lengths.values()) / count or 1.0
    df = Counter(word for counts in docs.values() for word in counts)
    words = tokens(query)
    scores: list[tuple[float, int, str]] = []
    for order, (key, counts) in enumerate(docs.items()):
        score = 0.0
        norm = K1 * (1 - B + B * lengths[key] / average)
        for word in words:
            tf = counts.get(word, 0)
            if tf:
                idf = math.log(1 + (count - df[word] + 0.5) / (df[word] + 0.5))
                score += idf * tf * (K1 + 1) / (tf + norm)
        scores.append((-score, order, key))
    return [key for _, _, key in sorted(scores)[:k]]
