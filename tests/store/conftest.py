"""The store's tests run on both engines: `db` is a migrated database on each of the engines
`database_url` (tests/fakes/postgres.py, loaded by tests/conftest.py) is parametrised over."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.store.engine.database import Database


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    """A fresh, migrated database on each engine."""
    database = await Database.connect(database_url)
    try:
        yield database
    finally:
        await database.close()
