"""The same store on SQLite and PostgreSQL: schema parity, migrations' shape, the facade."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest

from bot.errors import DatabaseVersionError
from bot.ops.pg_notify import asyncpg_dsn
from bot.store.engine.connection import IntegrityError, Statement
from bot.store.engine.database import PG_POOL_SIZE, Database
from bot.store.engine.dialect import postgres_statement
from bot.store.repos.messages import MessageRepository
from bot.store.repos.sessions import SessionRepository
from bot.store.schema.migrations import IN_BASELINE, MIGRATIONS, SCHEMA_VERSION
from bot.store.schema.tables import BASELINE_VERSION


def test_every_migration_has_steps_for_both_engines() -> None:
    for number, migration in enumerate(MIGRATIONS, start=1):
        assert migration.sqlite, f"migration {number} has no SQLite steps"
        assert migration.postgresql, f"migration {number} has no PostgreSQL steps"
        if number > BASELINE_VERSION:
            assert migration.postgresql != IN_BASELINE, (
                f"migration {number} is after the PostgreSQL baseline and needs its own steps"
            )
    assert BASELINE_VERSION <= SCHEMA_VERSION


def test_placeholders_become_numbered_outside_quoted_text() -> None:
    sql, params = postgres_statement(
        "SELECT '?', ':x', \"a?\" FROM t WHERE a = ? AND b = ? AND c::text = '09:00'", (1, 2)
    )
    assert sql == "SELECT '?', ':x', \"a?\" FROM t WHERE a = $1 AND b = $2 AND c::text = '09:00'"
    assert params == (1, 2)
    sql, params = postgres_statement(
        "SELECT * FROM t WHERE s = :space AND (w = :word OR w LIKE :pattern) AND s2 = :space",
        {"word": "w", "space": "s", "pattern": "p%"},
    )
    assert sql == "SELECT * FROM t WHERE s = $1 AND (w = $2 OR w LIKE $3) AND s2 = $1"
    assert params == ("s", "w", "p%")


async def test_rows_answer_by_name_and_position(db: Database) -> None:
    row = await db.fetchone("SELECT 1 AS one, 'two' AS two")
    assert row is not None
    assert (row[0], row["one"], row[1], row["two"]) == (1, 1, "two", "two")
    assert row.keys() == ["one", "two"] and tuple(row) == (1, "two")


async def test_a_failed_transaction_rolls_back_and_constraints_fail_alike(db: Database) -> None:
    session = await SessionRepository(db).create("guild:1")
    messages = MessageRepository(db)
    first = await messages.add("guild:1", session.id, "user", "a", discord_message_id=42)
    second = await messages.add("guild:1", session.id, "user", "b")
    assert second.id > first.id > 0
    with pytest.raises(IntegrityError):
        await messages.add("guild:1", session.id, "user", "again", discord_message_id=42)
    with pytest.raises(RuntimeError):
        async with db.transaction() as conn:
            await conn.execute(
                "INSERT INTO messages (space_id, session_id, role, content, created_at) "
                "VALUES ('guild:1', ?, 'user', 'x', 'now')",
                (session.id,),
            )
            raise RuntimeError("boom")
    assert await db.scalar("SELECT COUNT(*) FROM messages") == 2
    assert await db.size_bytes() > 0


async def test_a_write_batch_is_one_transaction_on_both_engines(db: Database) -> None:
    session = await SessionRepository(db).create("guild:1", title="batch")
    assert await db.scalar("SELECT kind FROM spaces WHERE id = 'guild:1'") == "guild"
    added = "INSERT INTO messages (space_id, session_id, role, content, created_at) "
    inserted, touched, many = await db.write_batch(
        [
            Statement(
                f"{added} VALUES ('guild:1', ?, 'user', ?, 'now') RETURNING id", (session.id, "a")
            ),
            Statement("UPDATE sessions SET title = ? WHERE space_id = 'guild:1'", ("renamed",)),
            Statement(
                f"{added} VALUES ('guild:1', ?, 'user', ?, 'now')",
                many=[(session.id, "b"), (session.id, "c")],
            ),
        ]
    )
    first = await inserted.fetchone()
    assert first is not None and first[0] > 0
    assert (touched.rowcount, many.rowcount) == (1, -1)
    with pytest.raises(IntegrityError):
        await db.write_batch(
            [
                Statement(f"{added} VALUES ('guild:1', ?, 'user', 'kept?', 'now')", (session.id,)),
                Statement("UPDATE sessions SET title = 'failed' WHERE space_id = 'guild:1'"),
                Statement(f"{added} VALUES ('guild:1', 'no such session', 'user', 'x', 'now')"),
            ]
        )
    contents = await db.fetchall("SELECT content FROM messages ORDER BY id")
    assert [row["content"] for row in contents] == ["a", "b", "c"]
    assert await db.scalar("SELECT title FROM sessions") == "renamed"
    await db.write_batch(
        [Statement("UPDATE sessions SET title = 'after' WHERE space_id = 'guild:1'")]
    )
    assert await db.scalar("SELECT title FROM sessions") == "after"


async def test_postgresql_gets_the_same_tables_and_columns_as_sqlite(
    tmp_path: object, postgres_db: str
) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    lite = await Database.open(tmp_path / "p.db")
    pg = await Database.connect(postgres_db)
    try:
        sqlite_columns = {
            (row[0], row[1])
            for row in await lite.fetchall(
                "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p "
                "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE '%fts%'"
            )
        }
        pg_columns = {
            (row[0], row[1])
            for row in await pg.fetchall(
                "SELECT table_name, column_name FROM information_schema.columns "
                "WHERE table_schema = 'public' AND table_name != 'schema_version'"
            )
        }
        assert pg_columns == sqlite_columns
        assert await pg.scalar("SELECT version FROM schema_version") == SCHEMA_VERSION
    finally:
        await lite.close()
        await pg.close()


async def test_postgresql_refuses_a_newer_schema_and_reopens_its_own(
    postgres_db: str,
) -> None:
    url = postgres_db
    db = await Database.connect(url)
    await db.close()
    again = await Database.connect(url)
    await again.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    await again.close()
    with pytest.raises(DatabaseVersionError, match="newer"):
        await Database.connect(url)


async def _on_server(url: str, sql: str) -> list[Any]:
    """Run `sql` as the superuser on the database `url` names, outside the store."""
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        return list(await conn.fetch(sql))
    finally:
        await conn.close()


async def test_postgresql_writes_are_read_committed_whatever_the_server_default(
    postgres_db: str,
) -> None:
    """A server (or database) set to serializable by default: two writers meeting on one row
    still both succeed, the later one waiting, as they do on SQLite."""
    name = postgres_db.rsplit("/", 1)[-1]
    await _on_server(
        postgres_db, f'ALTER DATABASE "{name}" SET default_transaction_isolation = serializable'
    )
    db = await Database.connect(postgres_db)
    try:
        await db.execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
        await db.execute("INSERT INTO counter (id, n) VALUES (1, 0)")
        read, written = asyncio.Event(), asyncio.Event()

        async def slow() -> str:
            async with db.transaction() as conn:
                level = (await conn.execute_fetchall("SHOW transaction_isolation"))[0][0]
                read.set()
                await written.wait()
                await conn.execute("UPDATE counter SET n = n + 1 WHERE id = 1")
            return str(level)

        async def quick() -> None:
            await read.wait()
            await db.execute("UPDATE counter SET n = n + 1 WHERE id = 1")
            written.set()

        level, _ = await asyncio.gather(slow(), quick())
        assert level == "read committed"
        assert await db.scalar("SELECT n FROM counter WHERE id = 1") == 2
        # Reads outside a transaction see the latest commit at once.
        assert await db.scalar("SHOW transaction_isolation") == "serializable"
    finally:
        await db.close()


async def test_postgresql_pooled_connections_ended_by_the_server_are_replaced(
    postgres_db: str,
) -> None:
    """The server ends the store's idle connections (a restart, an idle timeout): the next
    read and write go through on fresh ones instead of failing once per dead connection."""
    db = await Database.connect(postgres_db)
    try:
        await asyncio.gather(*(db.scalar("SELECT pg_sleep(0.05)") for _ in range(3)))
        ended = await _on_server(
            postgres_db,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        assert len(ended) >= 3
        for _ in range(5):
            assert await db.scalar("SELECT 1") == 1
            await db.execute("UPDATE schema_version SET version = version")
    finally:
        await db.close()


async def test_postgresql_connections_are_kept_for_the_next_burst_within_the_same_ceiling(
    postgres_db: str,
) -> None:
    """Many turns at once: the store opens at most POOL_SIZE connections and keeps them, so a
    second burst reuses them instead of paying PostgreSQL's connection start-up again (with
    overflow connections closed after each use, throughput halved under load)."""
    db = await Database.connect(postgres_db)
    try:

        async def burst() -> set[int]:
            pids = await asyncio.gather(
                *(db.scalar("SELECT pg_backend_pid() FROM pg_sleep(0.05)") for _ in range(40))
            )
            return set(pids)

        first = await burst()
        assert 1 < len(first) <= PG_POOL_SIZE
        second = await burst()
        assert second <= first, f"new connections: {len(second - first)}"
    finally:
        await db.close()


async def test_postgresql_reads_and_the_pool_ping_open_no_transaction(
    postgres_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the store sends PostgreSQL besides its own statements: a read costs the pool's
    ping and the query (no BEGIN/ROLLBACK around either); a write one READ COMMITTED
    transaction. Every extra round trip is paid on every statement of every turn."""
    sent: list[str] = []
    plain = asyncpg.Connection.execute

    async def execute(self: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(query.strip().rstrip(";").upper())
        return await plain(self, query, *args, **kwargs)

    monkeypatch.setattr(asyncpg.Connection, "execute", execute)
    db = await Database.connect(postgres_db)
    try:
        sent.clear()
        for _ in range(5):
            assert await db.scalar("SELECT version FROM schema_version") == SCHEMA_VERSION
        assert sent == []
        await db.execute("UPDATE schema_version SET version = version")
        assert sent == ["BEGIN ISOLATION LEVEL READ COMMITTED", "COMMIT"]
    finally:
        await db.close()
