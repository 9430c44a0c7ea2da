"""Recall ranks the same history the same way on SQLite and on PostgreSQL (issue 28: "PostgreSQL
gets the same behaviour"): the same candidates, the same bm25 (FTS5's on SQLite, computed from
the same counts on PostgreSQL), so the same hits in the same order."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from bot.memory.japanese import InProcessAnalyzer
from bot.memory.recall_index import RecallIndexer
from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.reads import recall as recall_reads
from bot.store.reads.recall_bm25 import Corpus, idf, trigram_length, trigram_score, words_score
from bot.store.reads.recall_hits import Exclude

SPACE = "guild:28"
OTHER = "guild:29"
SPEAKERS = ("Aiko", "Ben", "Carla")
CHATTER = (
    "plan team game meat great steam planet cat catalogue dinner weekend trip book band "
    "guitar piano Sapporo Osaka greyhound kennel walk walked walking moved moving move "
    "東京 転勤 猫 名前 週末 旅行"
).split()
QUERIES = (
    "What is the name of Aiko's cat?",
    "Where did Ben move to?",
    "Which band does Carla play guitar in?",
    "walking the greyhound to the kennel",
    "Did the team plan a game night?",
    "東京に転勤？",
    "steam planet great meat",
)


def _history(seed: int) -> list[tuple[str, str, str, str]]:
    """(space, session title, speaker, text) rows: chatter of varied length and repetition."""
    rng = random.Random(seed)
    rows = []
    for n in range(160):
        words = [rng.choice(CHATTER) for _ in range(rng.randint(1, 14))]
        if n % 7 == 0:
            words += [words[0]] * rng.randint(1, 3)  # repeated terms: bm25's term frequency
        space = OTHER if n % 9 == 0 else SPACE
        rows.append((space, f"s{n % 6}", rng.choice(SPEAKERS), " ".join(words)))
    return rows


async def _fill(db: Database) -> None:
    repos = Repositories.over(db)
    sessions: dict[tuple[str, str], str] = {}
    for minute, (space, title, speaker, text) in enumerate(_history(28)):
        if (space, title) not in sessions:
            made = await repos.sessions.create(space, title=title, session_id=f"{space}/{title}")
            sessions[(space, title)] = made.id
        await repos.messages.add(
            space,
            sessions[(space, title)],
            "user",
            text,
            author_name=speaker,
            created_at=f"2026-03-{1 + minute // 60:02d}T10:{minute % 60:02d}:00+00:00",
        )
    analyzer = InProcessAnalyzer()
    try:
        await RecallIndexer(analyzer, repos.recall_terms).backfill()
    finally:
        analyzer.close()


async def _rankings(url: str) -> list[list[tuple[int, tuple[str, ...]]]]:
    db = await Database.connect(url)
    try:
        await _fill(db)
        recall = Repositories.over(db).recall
        session = await db.scalar(
            "SELECT id FROM sessions WHERE space_id = ? ORDER BY id LIMIT 1", (SPACE,)
        )
        out = []
        for query in QUERIES:
            # newest: the related-memories read (the newest matches, no engine score).
            for exclude, newest in ((None, False), (Exclude(str(session)), False), (None, True)):
                found = await recall.ranked(SPACE, query, limit=10, exclude=exclude, newest=newest)
                out.append([(hit.id, tuple(sorted(hit.matched))) for hit in found.hits])
        return out
    finally:
        await db.close()


@pytest.mark.parametrize("common", [1000, 30])
async def test_both_engines_return_the_same_hits_in_the_same_order(
    tmp_path: Path, postgres_db: str, monkeypatch: pytest.MonkeyPatch, common: int
) -> None:
    # 30: many chatter words are "common", so the counted, left-out and all-common paths run.
    monkeypatch.setattr(recall_reads, "TRIGRAM_COMMON_DOCS", common)
    monkeypatch.setattr(recall_reads, "COMMON_WORD_DOCS", min(common, 500))
    on_sqlite = await _rankings(f"sqlite:///{tmp_path / 'parity.db'}")
    on_postgresql = await _rankings(postgres_db)
    assert sum(1 for hits in on_sqlite if len(hits) >= 3) >= len(QUERIES) // 2, on_sqlite
    for query, mine, theirs in zip(
        [q for q in QUERIES for _ in (0, 1, 2)], on_sqlite, on_postgresql, strict=True
    ):
        assert theirs == mine, (query, mine, theirs)


def test_bm25_matches_sqlite_fts5_for_trigrams_and_words() -> None:
    rng = random.Random(5)
    texts = [" ".join(rng.choice(CHATTER) for _ in range(rng.randint(0, 12))) for _ in range(300)]
    texts += ["aaaa aaa", "Plan PLAN plan"]  # overlapping occurrences, case folded
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='trigram')")
    conn.execute(
        "CREATE VIRTUAL TABLE w USING fts5(terms, tokenize='unicode61 remove_diacritics 0')"
    )
    conn.executemany("INSERT INTO t (rowid, content) VALUES (?, ?)", enumerate(texts, 1))
    words = [text.lower() for text in texts]
    conn.executemany("INSERT INTO w (rowid, terms) VALUES (?, ?)", enumerate(words, 1))
    phrases = ["plan", "aaa", "東京転", "kennel"]
    corpus = Corpus(len(texts), sum(trigram_length(text) for text in texts))
    idfs = [idf(corpus, sum(p in text.lower() for text in texts)) for p in phrases]
    match = " OR ".join(f'"{p}"' for p in phrases)
    found = conn.execute("SELECT rowid, rank FROM t WHERE t MATCH ?", (match,)).fetchall()
    assert len(found) > 50
    for rowid, rank in found:
        assert trigram_score(texts[rowid - 1], phrases, idfs, corpus.average) == pytest.approx(
            rank, rel=1e-12
        )
    single = ["plan", "東京", "walked"]
    corpus = Corpus(len(words), sum(len(text.split()) for text in words))
    idfs = [idf(corpus, sum(p in text.split() for text in words)) for p in single]
    match = " OR ".join(f'"{p}"' for p in single)
    found = conn.execute("SELECT rowid, rank FROM w WHERE w MATCH ?", (match,)).fetchall()
    assert len(found) > 50
    for rowid, rank in found:
        assert words_score(words[rowid - 1], single, idfs, corpus.average) == rank
