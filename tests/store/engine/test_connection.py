"""The SQLite statement path: one trip to the database thread per statement, same results."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.store.engine.connection import IntegrityError, Statement
from bot.store.engine.database import Database
from bot.store.repos.messages import MessageRepository
from bot.store.repos.sessions import SessionRepository
from bot.store.repos.tags import TagRepository


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "statements.db")
    await database.execute("CREATE TABLE scratch (id INTEGER PRIMARY KEY, name TEXT UNIQUE)")
    try:
        yield database
    finally:
        await database.close()


class Trips:
    """Counts answers handed back to the loop from another thread (aiosqlite's, here)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        loop = asyncio.get_running_loop()
        original = loop.call_soon_threadsafe
        self.count = 0

        def counting(*args: Any, **kwargs: Any) -> asyncio.Handle:
            self.count += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(loop, "call_soon_threadsafe", counting)

    def take(self) -> int:
        """Trips since the last call."""
        count, self.count = self.count, 0
        return count


async def test_each_statement_is_one_trip_to_the_database_thread(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    trips = Trips(monkeypatch)
    rows = await db.fetchall("SELECT 1 AS one, 2 AS two")
    assert [(row["one"], row[1]) for row in rows] == [(1, 2)]
    assert trips.take() == 1
    async with db.transaction() as conn:
        new_id = await conn.insert("INSERT INTO scratch (name) VALUES (?)", ("a",))
        renamed = await conn.execute("UPDATE scratch SET name = ? WHERE id = ?", ("b", new_id))
        found = await (
            await conn.execute("SELECT name FROM scratch WHERE id = ?", (new_id,))
        ).fetchone()
        await conn.executemany("INSERT INTO scratch (name) VALUES (?)", [("c",), ("d",)])
    # BEGIN IMMEDIATE goes with the first statement; then three statements and the COMMIT.
    assert trips.take() == 5
    assert renamed.rowcount == 1
    assert found is not None and found["name"] == "b"
    # A write that is a transaction of its own: BEGIN, the statement and COMMIT in one trip.
    assert await db.insert("INSERT INTO scratch (name) VALUES (?)", ("e",)) == new_id + 3
    assert trips.take() == 1
    await db.execute("UPDATE scratch SET name = ? WHERE id = ?", ("f", new_id))
    await db.executemany("INSERT INTO scratch (name) VALUES (?)", [("g",), ("h",)])
    assert trips.take() == 2
    async with db.transaction():
        pass  # nothing written: nothing begun, no trip
    assert trips.take() == 0
    assert await db.scalar("SELECT COUNT(*) FROM scratch") == 6


async def test_a_failed_transaction_leaves_nothing_and_the_writer_usable(db: Database) -> None:
    with pytest.raises(RuntimeError):
        async with db.transaction() as conn:
            await conn.insert("INSERT INTO scratch (name) VALUES (?)", ("kept?",))
            raise RuntimeError("the caller fails mid-transaction")
    with pytest.raises(IntegrityError):
        async with db.transaction() as conn:
            await conn.insert("INSERT INTO scratch (name) VALUES (?)", ("twice",))
            await conn.insert("INSERT INTO scratch (name) VALUES (?)", ("twice",))
    # A single write that fails rolls back on its own trip: the statement after it runs.
    await db.execute("INSERT INTO scratch (name) VALUES (?)", ("once",))
    with pytest.raises(IntegrityError):
        await db.executemany("INSERT INTO scratch (name) VALUES (?)", [("new",), ("once",)])
    await db.execute("INSERT INTO scratch (name) VALUES (?)", ("after",))
    names = [row["name"] for row in await db.fetchall("SELECT name FROM scratch ORDER BY id")]
    assert names == ["once", "after"]


async def test_cursor_counts_and_ids_match_sqlite3(db: Database) -> None:
    async with db.transaction() as conn:
        inserted = await conn.execute("INSERT INTO scratch (name) VALUES (?)", ("x",))
        await conn.executemany("INSERT INTO scratch (name) VALUES (?)", [("y",), ("z",)])
        returned = await conn.execute("UPDATE scratch SET name = name || '!' RETURNING id, name")
        query = await conn.execute("SELECT id FROM scratch")
        missing = await conn.execute("DELETE FROM scratch WHERE id = ?", (999,))
        pragma = await conn.execute("PRAGMA user_version")
    assert inserted.lastrowid == 1 and inserted.rowcount == 1
    assert returned.rowcount == 3
    assert sorted(row["name"] for row in await returned.fetchall()) == ["x!", "y!", "z!"]
    assert query.rowcount == -1 and len(await query.fetchall()) == 3
    assert missing.rowcount == 0
    assert (await pragma.fetchone()) is not None


async def test_rows_answer_a_repeated_column_name_with_its_first_column(db: Database) -> None:
    row = await db.fetchone("SELECT 1 AS a, 2 AS a, 3 AS b")
    assert row is not None
    assert (row["a"], row[1], row["b"], row.keys()) == (1, 2, 3, ["a", "b"])  # as make_rows
    other = await db.fetchone("SELECT 'z' AS b")  # a new statement gets its own column index
    assert other is not None and other["b"] == "z"


async def test_constraint_and_other_errors_keep_their_types(db: Database) -> None:
    await db.execute("INSERT INTO scratch (name) VALUES (?)", ("same",))
    with pytest.raises(IntegrityError) as caught:
        await db.execute("INSERT INTO scratch (name) VALUES (?)", ("same",))
    assert isinstance(caught.value, sqlite3.IntegrityError)
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        await db.fetchall("SELECT * FROM nowhere")
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        await db.fetchall("INSERT INTO scratch (name) VALUES ('via the reader') RETURNING id")
    assert await db.scalar("SELECT COUNT(*) FROM scratch") == 1


async def test_a_batch_is_one_trip_with_its_begin_and_commit(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    trips = Trips(monkeypatch)
    inserted, renamed, many, counted = await db.write_batch(
        [
            Statement("INSERT INTO scratch (name) VALUES (?) RETURNING id", ("a",)),
            Statement("UPDATE scratch SET name = ? WHERE name = ?", ("b", "a")),
            Statement("INSERT INTO scratch (name) VALUES (?)", many=[("c",), ("d",)]),
            Statement("SELECT COUNT(*) FROM scratch"),
        ]
    )
    assert trips.take() == 1
    assert [tuple(row) for row in await inserted.fetchall()] == [(1,)]
    assert (renamed.rowcount, many.rowcount, await many.fetchall()) == (1, -1, [])
    assert [tuple(row) for row in await counted.fetchall()] == [(3,)]  # sees the batch so far
    assert await db.write_batch([]) == []
    await db.write_batch([Statement("INSERT INTO scratch (name) VALUES (?)", many=[])])
    assert trips.take() == 1  # the empty batch made none, the empty executemany one
    assert [row["name"] for row in await db.fetchall("SELECT name FROM scratch")] == [
        "b",
        "c",
        "d",
    ]


async def test_a_failing_statement_in_a_batch_leaves_nothing_and_the_writer_usable(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    await db.execute("INSERT INTO scratch (name) VALUES (?)", ("taken",))
    trips = Trips(monkeypatch)
    with pytest.raises(IntegrityError):
        await db.write_batch(
            [
                Statement("INSERT INTO scratch (name) VALUES (?)", ("first",)),
                Statement("INSERT INTO scratch (name) VALUES (?)", many=[("x",), ("taken",)]),
                Statement("INSERT INTO scratch (name) VALUES (?)", ("never",)),
            ]
        )
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        await db.write_batch(
            [
                Statement("INSERT INTO scratch (name) VALUES (?)", ("second",)),
                Statement("DELETE FROM nowhere"),
            ]
        )
    assert trips.take() == 2  # each rolled back on its own trip
    await db.write_batch([Statement("INSERT INTO scratch (name) VALUES (?)", ("after",))])
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO scratch (name) VALUES (?)", ("then",))
    names = [row["name"] for row in await db.fetchall("SELECT name FROM scratch ORDER BY id")]
    assert names == ["taken", "after", "then"]


async def test_a_turns_writes_are_one_trip_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = await Database.open(tmp_path / "turn.db")
    try:
        sessions, messages, tags = (
            SessionRepository(database),
            MessageRepository(database),
            TagRepository(database),
        )
        trips = Trips(monkeypatch)
        session = await sessions.create("guild:1", title="t", discord_channel_id=5)
        assert trips.take() == 1  # the space's row and the session's, with BEGIN and COMMIT
        question = await messages.add("guild:1", session.id, "user", "q", discord_message_id=7)
        answer = await messages.add("guild:1", session.id, "assistant", "a")
        assert trips.take() == 2  # INSERT … RETURNING id and the session's UPDATE, each
        stored = await tags.add_many_message_tags(
            "guild:1", {question.id: ["x", "y"], answer.id: ["z"], 999: ["gone"]}
        )
        assert trips.take() == 1
        assert stored == {question.id, answer.id}
        assert (question.id, answer.id) == (1, 2)
        assert await tags.tags_for_message("guild:1", question.id) == ["x", "y"]
        assert await tags.tags_for_message("guild:1", answer.id) == ["z"]
        touched = await database.scalar(
            "SELECT updated_at FROM sessions WHERE id = ?", (session.id,)
        )
        assert touched == answer.created_at
        with pytest.raises(IntegrityError):  # the same Discord message twice
            await messages.add("guild:1", session.id, "user", "again", discord_message_id=7)
        assert await database.scalar("SELECT COUNT(*) FROM messages") == 2
        assert await database.scalar("SELECT updated_at FROM sessions") == answer.created_at
    finally:
        await database.close()
