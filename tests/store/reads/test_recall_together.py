"""Recall reads issued at once (as the context layers issue theirs) give exactly what each
gives alone: on SQLite they share trips to the reader (`ReadBatcher`), and recall's own
independent reads are issued together; no result may leak into another's or change order."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from bot.memory.japanese import InProcessAnalyzer
from bot.memory.recall import RecallService
from bot.memory.recall_index import RecallIndexer
from bot.store import Repositories
from bot.store.engine.database import Database
from tests.store.engine.test_read_batch import count_trips
from tests.store.reads.test_recall import A, B, say, session

QUERIES = [
    "What is the name of my cat Mochi-Kinako?",
    "Sapporo snow festival in March",
    "東京のラーメン",
    "tea in kyoto",
    "nothing matches this at all",
]


@pytest.fixture
async def indexer(db: Database) -> AsyncIterator[RecallIndexer]:
    analyzer = InProcessAnalyzer()
    yield RecallIndexer(analyzer, Repositories.over(db).recall_terms)
    analyzer.close()


async def history(db: Database, indexer: RecallIndexer) -> str:
    """Threads of space A (and one of B) that the queries find, indexed; A's current thread."""
    repos = Repositories.over(db)
    lines = [
        "My cat is called Mochi-Kinako",
        "I am moving to Sapporo in March",
        "The snow festival in Sapporo was cold",
        "東京のラーメンが好きです",
        "We drank green tea in Kyoto",
        "Kyoto has old temples",
        "the cat sleeps all day",
    ]
    for n in range(4):
        thread = await session(repos, A, f"thread {n}")
        for k, line in enumerate(lines):
            await say(repos, A, thread, f"{line} ({n})", minute=n * 10 + k, author=f"M{k}")
        await db.execute(
            "INSERT INTO memories (space_id, session_id, summary, level, created_at) "
            "VALUES (?, ?, ?, 0, '2026-03-01T11:00:00+00:00')",
            (A, thread, f"they talked about tea and temples ({n})"),
        )
    other = await session(repos, B, "elsewhere")
    await say(repos, B, other, "My cat is called Mochi-Kinako too")
    here = await session(repos, A, "here")
    await say(repos, A, here, "tea in kyoto, my cat", minute=59)
    await indexer.backfill()
    return here


async def test_related_and_search_give_the_same_together_as_alone(
    db: Database, indexer: RecallIndexer
) -> None:
    here = await history(db, indexer)
    recall = RecallService(Repositories.over(db).recall)

    alone = [await recall.related(A, query, here) for query in QUERIES]
    together = await asyncio.gather(*(recall.related(A, query, here) for query in QUERIES))
    assert together == alone
    assert all(hits for _, hits in alone[:4]) and not alone[4][1]  # found, and nothing
    assert all(hit.session_id != here for _, hits in alone for hit in hits)

    pages = [await recall.search(A, query, count=10) for query in QUERIES]
    at_once = await asyncio.gather(*(recall.search(A, query, count=10) for query in QUERIES))
    assert at_once == pages
    assert all(page.hits for page in pages[:4])
    assert any(hit.before or hit.after for page in pages for hit in page.hits)


async def test_the_related_read_takes_three_trips_to_the_sqlite_reader(
    db: Database, indexer: RecallIndexer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its independent reads go together: the full-text, summaries and word-count reads on
    one trip, then the word rows and every hit's context lines; no neighbour is read, as the
    layer keeps only hits holding the message's words (nine trips when each read went alone
    and neighbours were lifted)."""
    if db.dialect != "sqlite":
        pytest.skip("trips to the reader's thread are SQLite's")
    here = await history(db, indexer)
    recall = RecallService(Repositories.over(db).recall)
    trips = count_trips(db, monkeypatch)
    _terms, hits = await recall.related(A, QUERIES[0], here)
    assert len(hits) == 3 and all(hit.before or hit.after for hit in hits)
    assert len(trips) <= 3
