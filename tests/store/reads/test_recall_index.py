"""Recall's background term index on both engines: filled by the indexer (Janome words, English
stems, speaker names, dates), never holding hidden messages, never crossing spaces, and every
recall query served by indexes (no scan of a space's history)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.memory.japanese import InProcessAnalyzer
from bot.memory.recall_index import RecallIndexer
from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.reads import recall as recall_reads
from bot.store.reads.recall import RECENT_WINDOW
from bot.store.reads.recall_hits import Exclude
from tests.store.reads.test_recall import A, B, say, session


@pytest.fixture
async def indexer(db: Database) -> AsyncIterator[RecallIndexer]:
    analyzer = InProcessAnalyzer()
    yield RecallIndexer(analyzer, Repositories.over(db).recall_terms)
    analyzer.close()


async def _filler(db: Database, space: str, session_id: str, count: int) -> None:
    """`count` newer messages of chatter, written in one batch."""
    await db.executemany(
        "INSERT INTO messages (space_id, session_id, role, content, author_name, created_at) "
        "VALUES (?, ?, 'user', ?, 'Bob', '2026-05-01T00:00:00+00:00')",
        [(space, session_id, f"chatter line {n} about nothing") for n in range(count)],
    )


async def test_the_indexer_fills_the_index_and_finds_tokyo_beyond_the_recent_window(
    db: Database, indexer: RecallIndexer
) -> None:
    repos = Repositories.over(db)
    s = await session(repos, A, "move")
    old = await say(repos, A, s, "来月から東京の本社に転勤します")
    await _filler(db, A, s, RECENT_WINDOW + 10)
    # Before the background indexer runs, the short term only reaches the recent window.
    assert [h.id for h in (await repos.recall.ranked(A, "東京", limit=10)).hits] == []
    assert await indexer.backfill() == RECENT_WINDOW + 11
    assert await indexer.index_pending() == 0
    row = await db.fetchone(
        "SELECT terms FROM recall_terms WHERE space_id = ? AND id = ?", (A, old)
    )
    assert row is not None and "東京" in row["terms"].split()
    result = await repos.recall.ranked(A, "東京に転勤？", limit=10)
    assert [hit.id for hit in result.hits][:1] == [old]
    assert set(result.hits[0].matched) >= {"東京", "転勤"}


async def test_stems_speaker_names_and_months_match(db: Database, indexer: RecallIndexer) -> None:
    repos = Repositories.over(db)
    s = await session(repos, A, "news")
    moved = await say(repos, A, s, "Ben moved to Sapporo last spring", author="Ben")
    greyhound = await say(repos, A, s, "We adopted a rescue greyhound", author="Carla")
    await say(repos, A, s, "The weather is nice", author="Dan")
    await indexer.backfill()
    moving = await repos.recall.ranked(A, "Who is moving?", limit=5)
    assert [hit.id for hit in moving.hits if hit.matched] == [moved]
    assert moving.hits[0].matched == ("moving",)
    by_name = await repos.recall.ranked(A, "what did Carla adopt", limit=5)
    assert by_name.hits[0].id == greyhound
    assert set(by_name.hits[0].matched) == {"Carla", "adopt"}
    march = await repos.recall.ranked(A, "greyhound in March 2026", limit=5)
    assert march.hits[0].id == greyhound and "March" in march.hits[0].matched


async def test_a_speaker_in_most_rows_is_left_out_of_the_match_but_still_boosts(
    db: Database, indexer: RecallIndexer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recall_reads, "COMMON_WORD_DOCS", 5)
    repos = Repositories.over(db)
    s = await session(repos, A, "pets")
    for n in range(6):
        await say(repos, A, s, f"Carla chatter line {n}", author="Carla")
    by_ben = await say(repos, A, s, "We adopted a greyhound", author="Ben")
    by_carla = await say(repos, A, s, "We adopted a rescue greyhound", author="Carla")
    await indexer.backfill()
    recording = _Recording(db)
    result = await Repositories.over(recording).recall.ranked(  # type: ignore[arg-type]
        A, "what did Carla adopt", limit=5
    )
    # Carla's name is in 7 of 8 rows: counted (bounded), then left out of the word match.
    matches = [
        p
        for sql, params in recording.reads
        if _word_match(sql)
        for p in params
        if isinstance(p, str) and "adopt" in p
    ]
    assert matches and all("carla" not in match for match in matches)
    # Among the rows the match found, hers comes first: she said it (the name counts).
    ids = [hit.id for hit in result.hits]
    assert ids[0] == by_carla and by_ben in ids
    assert set(result.hits[0].matched) == {"Carla", "adopt"}


async def test_hidden_messages_are_never_indexed_nor_returned(
    db: Database, indexer: RecallIndexer
) -> None:
    repos = Repositories.over(db)
    s = await session(repos, A, "secret")
    message = await repos.messages.add(
        A, s, "user", "My greyhound Biscuit moved house", author_name="Eve", recall_hidden=True
    )
    shown = await say(repos, A, s, "Biscuit is a fine name")
    assert await indexer.backfill() == 2
    assert await db.scalar("SELECT COUNT(*) FROM recall_terms WHERE id = ?", (message.id,)) == 0
    for query in ("greyhound moving", "Eve", "Biscuit"):
        ids = [hit.id for hit in (await repos.recall.ranked(A, query, limit=10)).hits]
        assert message.id not in ids
    assert [h.id for h in (await repos.recall.ranked(A, "Biscuit", limit=10)).hits] == [shown]


async def test_other_spaces_are_never_returned(db: Database, indexer: RecallIndexer) -> None:
    repos = Repositories.over(db)
    a, b = await session(repos, A, "a"), await session(repos, B, "b")
    mine = await say(repos, A, a, "Aiko moved to 東京", author="Aiko")
    theirs = await say(repos, B, b, "Aiko moved to 東京 too", author="Aiko")
    await indexer.backfill()
    for query in ("Aiko moving", "東京"):
        assert [h.id for h in (await repos.recall.ranked(A, query, limit=10)).hits] == [mine]
        assert [h.id for h in (await repos.recall.ranked(B, query, limit=10)).hits] == [theirs]
    rows = await db.fetchall("SELECT id, space_id FROM recall_terms ORDER BY id")
    assert [(row["id"], row["space_id"]) for row in rows] == [(mine, A), (theirs, B)]


def _word_match(sql: str) -> bool:
    """The term index's ranked match (not a count): FTS5's bm25 or PostgreSQL's GIN read."""
    return ".rank" in sql or ("@@" in sql and "COUNT(*)" not in sql)


_TABLE_SCAN = re.compile(r"^SCAN (messages|memories|sessions|recall_terms)\b", re.MULTILINE)


class _Recording:
    """The database's reads, recorded (statement and parameters) on their way through."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.reads: list[tuple[str, tuple[Any, ...]]] = []
        self.indexes_only: list[bool] = []

    async def fetchall(self, sql: str, params: Any = (), *, indexes_only: bool = False) -> Any:
        self.reads.append((sql, tuple(params)))
        self.indexes_only.append(indexes_only)
        return await self.db.fetchall(sql, params, indexes_only=indexes_only)

    @contextlib.asynccontextmanager
    async def pinned_reads(self) -> AsyncIterator[_Recording]:
        # Unpinned: each read recorded with the settings it would run with when pinned.
        yield self

    async def fetchone(self, sql: str, params: Any = ()) -> Any:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def scalar(self, sql: str, params: Any = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


async def _plans(db: Database, recording: _Recording) -> list[str]:
    """Each recorded read's plan, as the read was run (PostgreSQL: with its own settings)."""
    if db.dialect == "postgresql":
        plans = []
        for (sql, params), indexes_only in zip(
            recording.reads, recording.indexes_only, strict=True
        ):
            rows = await db.fetchall(f"EXPLAIN {sql}", params, indexes_only=indexes_only)
            plans.append("\n".join(str(row[0]) for row in rows))
        return plans
    return [
        "\n".join(str(row[3]) for row in await db.fetchall(f"EXPLAIN QUERY PLAN {sql}", params))
        for sql, params in recording.reads
    ]


async def test_every_recall_query_uses_an_index(db: Database, indexer: RecallIndexer) -> None:
    repos = Repositories.over(db)
    s = await session(repos, A, "plans")
    await say(repos, A, s, "Aiko moved to 東京 with her cat", author="Aiko")
    await _filler(db, A, s, 50)
    await indexer.backfill()
    recording = _Recording(db)
    reads = Repositories.over(recording)  # type: ignore[arg-type]
    await reads.recall.recall(A, "Aiko cat moving 東京 AI", exclude=Exclude("other", 5))
    assert len(recording.reads) >= 5  # trigram, recent window, summaries, words, neighbours
    for (sql, _), plan in zip(recording.reads, await _plans(db, recording), strict=True):
        if db.dialect == "postgresql":
            # The planner prices the tsvector and ILIKE filters as cheap per row: left to
            # itself it scans these tables, a cost in proportion to the history.
            assert not re.search(r"Seq Scan on (messages|recall_terms)\b", plan), f"{sql}\n{plan}"
        else:
            # SCAN is allowed only over a bounded subquery the plan materialised (the recent
            # window: SEARCH … LIMIT) or as an FTS5 MATCH lookup; never over a table.
            assert _TABLE_SCAN.search(plan) is None, f"{sql}\n{plan}"
            # The bounded word counts read the FTS5 index alone (MATCH … LIMIT).
            assert "SEARCH" in plan or "VIRTUAL TABLE INDEX 0:M" in plan, plan


async def test_postgresql_recall_reads_use_the_indexes_on_an_analysed_history(
    db: Database,
) -> None:
    # With statistics of a few thousand rows the planner chose whole-table scans for the
    # term index's match and rank (100-200 ms at 100k messages): every read is checked
    # with the settings it runs with.
    if db.dialect != "postgresql":
        pytest.skip("PostgreSQL's planner")
    repos = Repositories.over(db)
    s = await session(repos, A, "history")
    words = ["aiko", "cat", "plan", "mov", "game", "ben", "2025", "march"]
    await db.executemany(
        "INSERT INTO messages (id, space_id, session_id, role, content, author_name, "
        "created_at) VALUES (?, ?, ?, 'user', ?, 'Ben', '2025-03-01T00:00:00+00:00')",
        [(n, A, s, f"line {n} {words[n % 8]} {words[n % 5]} and more") for n in range(1, 6001)],
    )
    await db.executemany(
        "INSERT INTO recall_terms (id, space_id, terms) VALUES (?, ?, ?)",
        [(n, A, f"line {n} {words[n % 8]} {words[n % 5]} ben 2025") for n in range(1, 6001)],
    )
    adopted = 6001
    await db.execute(
        "INSERT INTO messages (id, space_id, session_id, role, content, author_name, "
        "created_at) VALUES (?, ?, ?, 'user', 'Aiko will adopt a greyhound', 'Aiko', "
        "'2025-03-02T00:00:00+00:00')",
        (adopted, A, s),
    )
    await db.execute(
        "INSERT INTO recall_terms (id, space_id, terms) VALUES (?, ?, ?)",
        (adopted, A, "aiko will adopt greyhound aiko 2025 202503 march"),
    )
    await db.execute("ANALYZE")
    recording = _Recording(db)
    reads = Repositories.over(recording)  # type: ignore[arg-type]
    result = await reads.recall.recall(A, "Did Aiko adopt a greyhound in March?")
    assert result.hits[0].id == adopted
    assert any(_word_match(sql) for sql, _ in recording.reads)
    # The bm25 inputs: each table's rows and tokens, from a bounded sample of its pages.
    assert sum("TABLESAMPLE" in sql for sql, _ in recording.reads) == 2
    # `aiko` and `march` are each in 750 of the 6,000 rows: the statistics tell them common
    # (≥ 500) without a count, whose GIN bitmap would list all their rows; the rare ones are
    # counted, and only they are matched.
    counted = {p for sql, params in recording.reads if "COUNT(*)" in sql for p in params}
    matched = {p for sql, params in recording.reads if _word_match(sql) for p in params}
    assert "'adopt'" in counted and not {"'aiko'", "'march'"} & counted
    assert any("adopt" in str(p) and "aiko" not in str(p) for p in matched)
    for (sql, _), plan in zip(recording.reads, await _plans(db, recording), strict=True):
        assert not re.search(r"Seq Scan on (messages|recall_terms)\b", plan), f"{sql}\n{plan}"


async def test_a_long_term_in_too_many_messages_is_left_out_of_the_ranked_text_match(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recall_reads, "TRIGRAM_COMMON_DOCS", 5)
    monkeypatch.setattr(recall_reads, "TRIGRAM_ROWS_BUDGET", 10)
    repos = Repositories.over(db)
    s = await session(repos, A, "walks")
    for n in range(4):  # with the last one: "walked" in exactly 5 messages (common), "kennel" 4
        await say(repos, A, s, f"walked the dog {n}")
    for n in range(3):
        await say(repos, A, s, f"the kennel {n}")
    both = await say(repos, A, s, "walked to the kennel with the greyhound")
    recording = _Recording(db)
    recall = Repositories.over(recording).recall  # type: ignore[arg-type]

    def text_matches() -> list[str]:
        """The terms of the ranked text read (PostgreSQL: its ILIKE patterns)."""
        return [
            " ".join(str(p) for p in (params[1:] if "ILIKE" in sql else params[:1]))
            for sql, params in recording.reads
            if "messages_fts.rank AS" in sql or sql.startswith("SELECT id, content FROM messages")
        ]

    hits = (await recall.lexical(A, "walked kennel", limit=10)).hits
    (ranked_match,) = text_matches()
    # Both engines count each term (bounded) and leave the common one out.
    assert "walked" not in ranked_match.casefold()
    assert "kennel" in ranked_match.casefold()
    # The left-out term still counts: the message holding both comes first.
    assert hits[0].id == both and set(hits[0].matched) == {"walked", "kennel"}
    # Every term common: the newest messages holding them all, not a ranking of all rows.
    await say(repos, A, s, "the kennel 3")
    recording.reads.clear()
    hits = (await recall.lexical(A, "walked kennel", limit=10)).hits
    assert [hit.id for hit in hits][:1] == [both]
    assert len(hits) == 1


async def test_a_question_naming_a_speaker_finds_what_they_said_first(
    db: Database, indexer: RecallIndexer
) -> None:
    repos = Repositories.over(db)
    # Each line in a session of its own (no neighbour lifts another); Ben's the oldest, so
    # on a tie it would come last.
    by_ben = await say(
        repos, A, await session(repos, A, "c"), "I decided to buy a kayak", author="Ben"
    )
    by_carla = await say(
        repos, A, await session(repos, A, "a"), "Ben should buy a bike", author="Carla"
    )
    by_dan = await say(
        repos, A, await session(repos, A, "b"), "I'll buy bread for Ben", author="Dan"
    )
    await indexer.backfill()
    result = await repos.recall.ranked(A, "What did Ben buy?", limit=3)
    # Carla's and Dan's lines hold both words ("Ben" as text); Ben's holds "buy" and was
    # said by Ben: what he said comes first, the others still follow.
    assert result.hits[0].id == by_ben
    assert {hit.id for hit in result.hits} == {by_ben, by_carla, by_dan}
    # Nobody named: the lines holding more of the words come first, as before.
    plain = await repos.recall.ranked(A, "buy bread", limit=3)
    assert plain.hits[0].id == by_dan


async def test_a_rare_word_outweighs_two_common_ones(
    db: Database, indexer: RecallIndexer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recall_reads, "COMMON_WORD_DOCS", 5)
    repos = Repositories.over(db)
    for n in range(5):
        await say(repos, A, await session(repos, A, f"w{n}"), f"a quiet weekend {n}", author="Dan")
    kayaks = [
        await say(repos, A, await session(repos, A, f"k{n}"), text, author="Dan")
        for n, text in enumerate(["kayak weekend", "a kayak", "kayak again"])
    ]
    paddle = await say(repos, A, await session(repos, A, "p"), "new paddle", author="Dan")
    await indexer.backfill()
    result = await repos.recall.ranked(A, "weekend kayak paddle", limit=5)
    # "weekend" is in 6 rows (common), "kayak" in 3, "paddle" in 1: the paddle line holds one
    # term but the rarest, and comes before the line holding the two commoner ones.
    ids = [hit.id for hit in result.hits]
    assert ids[0] == paddle and ids.index(paddle) < ids.index(kayaks[0])


async def test_the_indexer_locks_a_turns_rows_in_the_order_the_tagger_does(db: Database) -> None:
    """The indexer (newest first) and the tagger (one UPDATE over the turn's ids) both mark a
    turn's user message and answer. Holding the user row as the tagger does, the indexer must
    wait for it before it locks the answer: newest first, PostgreSQL found a deadlock."""
    if db.dialect != "postgresql":
        pytest.skip("SQLite has one writer: its transactions never overlap")
    repos = Repositories.over(db)
    s = await session(repos, A, "turn")
    asked = await say(repos, A, s, "the autumn leaves in Kyoto")
    answer = await say(repos, A, s, "They turn red in November", role="assistant")
    pending = await repos.recall_terms.unindexed_all_spaces(10)
    assert [row.id for row in pending] == [answer, asked]

    async def waiting_on_a_lock() -> int:
        return int(
            await db.scalar(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()"
            )
        )

    async with db.transaction() as tagger:
        await tagger.execute(
            "UPDATE messages SET tagged_at = ? WHERE space_id = ? AND id = ?",
            ("2026-01-01T00:00:00+00:00", A, asked),
        )
        indexing = asyncio.create_task(repos.recall_terms.store(pending, []))
        for _ in range(500):  # until the indexer waits for the row held here
            if await waiting_on_a_lock():
                break
            await asyncio.sleep(0.01)
        assert await waiting_on_a_lock() == 1
        await tagger.execute(
            "UPDATE messages SET tagged_at = ? WHERE space_id = ? AND id = ?",
            ("2026-01-01T00:00:00+00:00", A, answer),
        )
    await asyncio.wait_for(indexing, 10)
    assert await repos.recall_terms.unindexed_all_spaces(10) == []
