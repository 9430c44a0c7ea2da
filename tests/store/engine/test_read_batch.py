"""Reads issued together share one trip to SQLite's reader thread (`ReadBatcher`)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.store.engine.connection import SqliteConnection
from bot.store.engine.database import Database

READS = 10


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "reads.db")
    await database.execute(
        "INSERT INTO spaces (id, kind, name, created_at) VALUES ('s', 'guild', 'S', 'now')"
    )
    yield database
    await database.close()


def count_trips(db: Database, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per trip to the reader's thread."""
    reader = db._read_link
    assert isinstance(reader, SqliteConnection)
    trips: list[int] = []
    trip = reader._trip

    async def counted(work: Any) -> Any:
        trips.append(1)
        return await trip(work)

    monkeypatch.setattr(reader, "_trip", counted)
    return trips


async def test_reads_issued_together_share_one_trip(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    trips = count_trips(db, monkeypatch)
    results = await asyncio.gather(*(db.scalar("SELECT ? + 1", (n,)) for n in range(READS)))
    assert results == [n + 1 for n in range(READS)]  # each read gets its own answer
    assert len(trips) == 1


async def test_one_failing_read_fails_alone(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    trips = count_trips(db, monkeypatch)
    results = await asyncio.gather(
        db.scalar("SELECT name FROM spaces WHERE id = ?", ("s",)),
        db.scalar("SELECT nothing FROM nowhere"),
        db.scalar("SELECT COUNT(*) FROM spaces"),
        return_exceptions=True,
    )
    assert results[0] == "S" and results[2] == 1
    assert isinstance(results[1], sqlite3.OperationalError)
    assert len(trips) == 1


async def test_a_cancelled_reader_leaves_the_others_answered(db: Database) -> None:
    first = asyncio.ensure_future(db.scalar("SELECT 1"))
    others = [asyncio.ensure_future(db.scalar("SELECT ?", (n,))) for n in range(2, 6)]
    await asyncio.sleep(0)  # the first holds the reader; the others queue behind it
    first.cancel()
    assert await asyncio.gather(*others) == [2, 3, 4, 5]
    assert await db.scalar("SELECT 7") == 7  # and the reader serves on
