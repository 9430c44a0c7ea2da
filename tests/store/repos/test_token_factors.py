"""Migration 2 (model_token_factors) and its repository."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.store.engine.database import Database
from bot.store.repos.token_factors import StoredTokenFactor, TokenFactorRepository
from bot.store.schema.migrations import MIGRATIONS, SCHEMA_VERSION


def version_one_database(path: Path) -> None:
    """A database as the first release left it, with a conversation in it."""
    conn = sqlite3.connect(path)
    first = MIGRATIONS[0].sqlite
    assert isinstance(first, str)
    conn.executescript(first)
    conn.execute(
        "INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('s', 't', 'x', 'x')"
    )
    conn.execute(
        "INSERT INTO messages (session_id, role, content, created_at) "
        "VALUES ('s', 'user', 'hello', 'x')"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


async def test_a_version_one_database_gains_the_table_and_keeps_its_data(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    version_one_database(path)
    db = await Database.open(path)
    try:
        assert SCHEMA_VERSION >= 2
        assert await db.scalar("PRAGMA user_version") == SCHEMA_VERSION
        assert await db.scalar("SELECT content FROM messages WHERE session_id = 's'") == "hello"
        repo = TokenFactorRepository(db)
        assert await repo.all() == []
        await repo.save(StoredTokenFactor("ollama/qwen3:8b", 1.4, 3))
        await repo.save(StoredTokenFactor("ollama/qwen3:8b", 1.5, 4, partial_counts=True))
        await repo.save(StoredTokenFactor("openai/gpt-4o-mini", 0.9, 1))
    finally:
        await db.close()
    reopened = await Database.open(path)
    try:
        stored = sorted(await TokenFactorRepository(reopened).all(), key=lambda row: row.model)
        assert stored == [
            StoredTokenFactor("ollama/qwen3:8b", 1.5, 4, partial_counts=True),
            StoredTokenFactor("openai/gpt-4o-mini", 0.9, 1),
        ]
    finally:
        await reopened.close()
