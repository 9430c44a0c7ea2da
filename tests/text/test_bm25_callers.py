"""Both users of bot.text.bm25 score bit for bit as their own copies did before it.

The digests are of the scores the knowledge base's former `bot.memory.bm25.BM25Index` and
recall's former `bot.store.reads.recall_bm25` (its own FTS5 formula) gave for this corpus,
recorded before the two were made one.
"""

from __future__ import annotations

import hashlib
import random

from bot.store.reads.recall_bm25 import Corpus, idf, trigram_score, words_score
from bot.text.bm25 import BM25Index

Docs = list[list[str]]


def _corpus() -> tuple[Docs, Docs]:
    rng = random.Random(41)
    vocab = [f"t{i}" for i in range(40)] + ["機械", "学習", "東京", "猫"]
    docs = [[rng.choice(vocab) for _ in range(rng.randint(0, 30))] for _ in range(300)]
    queries = [[rng.choice(vocab) for _ in range(rng.randint(1, 5))] for _ in range(40)]
    return docs, queries


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def test_knowledge_base_scores_are_unchanged() -> None:
    docs, queries = _corpus()
    index = BM25Index(docs)
    parts = [repr(index.scores(query)) + repr(index.query_weight(query)) for query in queries]
    assert _digest(parts) == "5a686cce83b5d866afc7bdeb7531ddbf34215ce359672e3fc4cadfc9ad7dc740"


def test_recall_fts5_scores_are_unchanged() -> None:
    docs, queries = _corpus()
    texts = [" ".join(doc) for doc in docs]
    corpus = Corpus(rows=len(texts) * 7.0, tokens=sum(len(text) for text in texts) * 5.0)
    parts: list[str] = []
    for query in queries:
        idfs = [idf(corpus, sum(1 for text in texts if word in text)) for word in query]
        parts.append(repr([trigram_score(text, query, idfs, corpus.average) for text in texts]))
        parts.append(repr([words_score(text, query, idfs, corpus.average) for text in texts]))
    parts.append(repr([idf(Corpus(0, 0), 0), idf(Corpus(3, 9), 3), idf(Corpus(10, 40), 1)]))
    assert _digest(parts) == "4794bef940d7d2858c6d9daa3113fe4fd911388152042721225c3102d4227f16"
