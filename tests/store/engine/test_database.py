"""The SQLite layer: migrations, refusal of newer databases, transactions, hot-path index."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import pytest

from bot.errors import DatabaseVersionError
from bot.store.engine.database import Database
from bot.store.repos.messages import MessageRepository
from bot.store.repos.sessions import SessionRepository
from bot.store.schema.migrations import SCHEMA_VERSION

CORE_TABLES = {
    "spaces",
    "word_pool",
    "sessions",
    "messages",
    "message_tags",
    "memories",
    "memory_tags",
    "knowledge_entries",
    "knowledge_sources",
    "local_knowledge_docs",
    "note_pages",
    "session_note_pages",
    "app_settings",
    "model_presets",
    "api_logs",
}


async def test_migrates_an_empty_file_to_the_current_version(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "new" / "p.db")
    try:
        assert await db.scalar("PRAGMA user_version") == SCHEMA_VERSION
        tables = {row[0] for row in await db.fetchall("SELECT name FROM sqlite_master")}
        assert tables >= CORE_TABLES
        assert await db.scalar("PRAGMA journal_mode") == "wal"
        assert await db.scalar("PRAGMA foreign_keys") == 1
    finally:
        await db.close()
    reopened = await Database.open(tmp_path / "new" / "p.db")
    assert await reopened.scalar("PRAGMA user_version") == SCHEMA_VERSION
    await reopened.close()


async def test_refuses_a_database_from_a_newer_version(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(DatabaseVersionError, match="newer"):
        await Database.open(path)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0, "untouched"
    conn.close()


async def test_failed_transaction_rolls_back(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "p.db")
    sessions = SessionRepository(db)
    session = await sessions.create("local:local", title="t")
    with pytest.raises(RuntimeError):
        async with db.transaction() as conn:
            await conn.execute(
                "INSERT INTO messages (space_id, session_id, role, content, created_at) "
                "VALUES ('local:local', ?, 'user', 'x', 'now')",
                (session.id,),
            )
            raise RuntimeError("boom")
    assert await db.scalar("SELECT COUNT(*) FROM messages") == 0
    await db.close()


async def test_last_messages_query_uses_the_session_index(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "p.db")
    plan = await db.fetchall(
        "EXPLAIN QUERY PLAN SELECT * FROM messages WHERE space_id = ? AND session_id = ? "
        "AND archived_at IS NULL ORDER BY id DESC LIMIT 50",
        ("local:local", "s"),
    )
    detail = " ".join(row["detail"] for row in plan)
    assert "USING INDEX ix_messages_live" in detail and "TEMP B-TREE" not in detail
    await db.close()


async def test_discord_message_ids_are_unique(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "p.db")
    session = await SessionRepository(db).create("guild:1")
    other = await SessionRepository(db).create("guild:2")
    messages = MessageRepository(db)
    await messages.add("guild:1", session.id, "user", "a", discord_message_id=42)
    with pytest.raises(sqlite3.IntegrityError):
        await messages.add("guild:1", session.id, "user", "a again", discord_message_id=42)
    with pytest.raises(sqlite3.IntegrityError):
        await messages.add("guild:2", other.id, "user", "a elsewhere", discord_message_id=42)
    assert await db.scalar("SELECT COUNT(*) FROM messages") == 1
    await db.close()


async def test_reads_go_to_a_read_only_connection_and_see_committed_writes(
    tmp_path: Path,
) -> None:
    db = await Database.open(tmp_path / "p.db")
    try:
        await db.execute("CREATE TABLE scratch (k TEXT)")
        await db.execute("INSERT INTO scratch (k) VALUES ('v')")
        assert await db.scalar("SELECT k FROM scratch") == "v"
        assert await db.scalar("PRAGMA query_only") == 1  # the reader
        async with db.transaction() as conn:
            assert (await conn.execute_fetchall("PRAGMA query_only"))[0][0] == 0  # the writer
            assert (await conn.execute_fetchall("PRAGMA busy_timeout"))[0][0] == 5000
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            await db.fetchall("DELETE FROM scratch RETURNING k")
    finally:
        await db.close()


async def test_an_in_memory_database_reads_what_it_wrote() -> None:
    db = await Database.open(":memory:")
    try:
        await db.execute("CREATE TABLE scratch (k TEXT)")
        await db.execute("INSERT INTO scratch (k) VALUES ('v')")
        assert await db.scalar("SELECT k FROM scratch") == "v"
    finally:
        await db.close()


async def test_a_database_left_open_does_not_hold_the_process(tmp_path: Path) -> None:
    code = (
        "import asyncio, sys\n"
        "from bot.store.engine.database import Database\n"
        f"db = asyncio.run(Database.open({str(tmp_path / 'p.db')!r}))\n"
        "print('sqlalchemy' in sys.modules)\n"
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE
    )
    try:
        out, _ = await asyncio.wait_for(child.communicate(), 20)
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    assert child.returncode == 0
    assert out.decode().split() == ["False"]  # and SQLite needs no SQLAlchemy


@pytest.mark.parametrize(
    "url", ["postgresql://postgres@127.0.0.1:5432/recall", "sqlite:///tmp/x.db"]
)
async def test_open_refuses_a_url_and_creates_nothing(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bench once passed a PostgreSQL URL here: Path() made it a folder `postgresql:`.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"Database\.connect"):
        await Database.open(url)
    assert list(tmp_path.iterdir()) == []
