"""The same store on SQLite and PostgreSQL: schema parity, migrations' shape, the facade."""

from __future__ import annotations

import pytest

from bot.errors import DatabaseVersionError
from bot.store.db import Database, IntegrityError
from bot.store.dialect import postgres_statement
from bot.store.messages import MessageRepository
from bot.store.migrations import IN_BASELINE, MIGRATIONS, SCHEMA_VERSION
from bot.store.schema_postgresql import BASELINE_VERSION
from bot.store.sessions import SessionRepository


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
