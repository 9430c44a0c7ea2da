"""Brings a database to the current schema: an empty one from the declaration, an older one
through the migrations after its version.

SQLite records its version in `PRAGMA user_version`; an empty file gets the declared schema in
one transaction, an existing one runs each later migration's SQLite steps in order (one
transaction each). PostgreSQL records it in the one-row table `schema_version`; an empty
database gets the declared schema (as of `target`, never older than BASELINE_VERSION), an
existing one each later migration's PostgreSQL steps. Both engines refuse a database newer
than this code. The schema and its history are in `bot.store.schema`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

import aiosqlite

from bot.errors import DatabaseVersionError
from bot.store.schema.ddl import statements
from bot.store.schema.migrations import (
    IN_BASELINE,
    MIGRATIONS,
    SCHEMA_VERSION,
    PostgresStep,
    SqliteStep,
    schema_at,
)
from bot.store.schema.tables import BASELINE_VERSION
from bot.store.schema.v3_spaces import MigrationContext

if TYPE_CHECKING:
    from bot.store.engine.connection import Connection

log = logging.getLogger(__name__)


async def current_version(conn: aiosqlite.Connection) -> int:
    """The schema version recorded in the database file."""
    cursor = await conn.execute("PRAGMA user_version")
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def _apply(
    conn: aiosqlite.Connection, migration: SqliteStep, context: MigrationContext
) -> None:
    if isinstance(migration, str | tuple):
        for statement in _statements(migration):
            await conn.execute(statement)
    else:
        await migration(conn, context)


def _statements(step: str | tuple[str, ...]) -> list[str] | tuple[str, ...]:
    return statements(step) if isinstance(step, str) else step


async def _foreign_key_problems(conn: aiosqlite.Connection) -> list[str]:
    rows = await conn.execute_fetchall("PRAGMA foreign_key_check")
    return [f"{row[0]} row {row[1]} → {row[2]}" for row in rows]


async def migrate(
    conn: aiosqlite.Connection,
    context: MigrationContext | None = None,
    *,
    target: int | None = None,
) -> int:
    """Apply pending migrations in order (up to `target`); refuse a database newer than this.

    An empty file brought to the current version is created from the declaration instead.
    Foreign keys are off while migrating, so tables can be rebuilt (create, copy, drop,
    rename) without cascades; every migration must leave them consistent, checked before its
    commit.
    """
    context = context or MigrationContext()
    goal = SCHEMA_VERSION if target is None else min(target, SCHEMA_VERSION)
    # The version is read under the write lock: another process starting at the same moment
    # on the same file may be migrating it, and is then waited for (busy_timeout).
    await conn.execute("BEGIN IMMEDIATE")
    try:
        version = await current_version(conn)
    finally:
        await conn.execute("ROLLBACK")
    if version > SCHEMA_VERSION:
        raise _newer(version, "DB_PATH")
    if version >= goal:
        return version
    if version == 0 and goal == SCHEMA_VERSION and await _create_sqlite(conn):
        return goal
    await conn.execute("PRAGMA foreign_keys=OFF")
    try:
        for number in range(version + 1, goal + 1):
            await _step_sqlite(conn, number, context)
    finally:
        await conn.execute("PRAGMA foreign_keys=ON")
    _log_run(version, goal)
    return goal


def _log_run(before: int, after: int) -> None:
    """One line per migration run, however many steps it took."""
    steps = after - before
    log.info(
        "database migrated from schema version %d to %d (%d step%s)",
        before,
        after,
        steps,
        "" if steps == 1 else "s",
    )


async def _create_sqlite(conn: aiosqlite.Connection) -> bool:
    """Create the declared schema in a file that has none yet (False: it has something)."""
    await conn.execute("BEGIN IMMEDIATE")
    try:
        cursor = await conn.execute("SELECT EXISTS (SELECT 1 FROM sqlite_master)")
        row = await cursor.fetchone()
        # Another process may have created it between our read and this lock.
        if await current_version(conn) != 0 or (row is not None and row[0]):
            await conn.execute("ROLLBACK")
            return False
        for statement in schema_at("sqlite"):
            await conn.execute(statement)
        await conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        await conn.execute("ROLLBACK")
        raise
    await conn.execute("COMMIT")
    log.info("database created at schema version %d", SCHEMA_VERSION)
    return True


async def _step_sqlite(conn: aiosqlite.Connection, number: int, context: MigrationContext) -> None:
    """Run migration `number` in its own transaction, unless another process already has."""
    await conn.execute("BEGIN IMMEDIATE")
    if await current_version(conn) >= number:
        # Applied by another process between our read and this lock.
        await conn.execute("ROLLBACK")
        return
    try:
        await _apply(conn, MIGRATIONS[number - 1].sqlite, context)
        problems = await _foreign_key_problems(conn)
        if problems:
            raise RuntimeError(f"migration {number} broke foreign keys: {', '.join(problems[:5])}")
        await conn.execute(f"PRAGMA user_version = {number}")
    except BaseException:
        await conn.execute("ROLLBACK")
        raise
    await conn.execute("COMMIT")
    log.debug("database migrated to schema version %d", number)


# Serialises schema changes between processes starting at once (several shard processes).
_PG_LOCK_KEY: Final = 0x504C4159  # "PLAY"


def _newer(version: int, where: str) -> DatabaseVersionError:
    return DatabaseVersionError(
        f"The database is at schema version {version}, newer than this PlayChat "
        f"({SCHEMA_VERSION}). Upgrade PlayChat or point {where} at another "
        f"{'file' if where == 'DB_PATH' else 'database'}."
    )


async def postgres_version(conn: Connection) -> int:
    """The schema version recorded in a PostgreSQL database (0: no PlayChat schema yet)."""
    exists = await conn.execute_fetchall("SELECT to_regclass('schema_version') IS NOT NULL")
    if not exists[0][0]:
        return 0
    rows = await conn.execute_fetchall("SELECT version FROM schema_version")
    return int(rows[0][0]) if rows else 0


async def _apply_postgres(conn: Connection, step: PostgresStep, context: MigrationContext) -> None:
    if isinstance(step, str | tuple):
        for statement in _statements(step):
            await conn.execute(statement)
    else:
        await step(conn, context)


async def migrate_postgresql(
    conn: Connection, context: MigrationContext | None = None, *, target: int | None = None
) -> int:
    """Bring a PostgreSQL database to the current schema in one transaction; refuse a newer one.

    An empty database gets the declared schema as of `target` (the current version unless
    told; BASELINE_VERSION at the oldest); an existing one runs each later migration's
    PostgreSQL steps. The caller commits.
    """
    context = context or MigrationContext()
    goal = SCHEMA_VERSION if target is None else min(target, SCHEMA_VERSION)
    await conn.execute("SELECT pg_advisory_xact_lock(?)", (_PG_LOCK_KEY,))
    version = await postgres_version(conn)
    if version > SCHEMA_VERSION:
        raise _newer(version, "DATABASE_URL")
    if version >= goal:
        return version
    if version == 0:
        version = max(goal, BASELINE_VERSION)
        for statement in schema_at("postgresql", version):
            await conn.execute(statement)
        await conn.execute("CREATE TABLE schema_version (version BIGINT NOT NULL)")
        await conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
        log.info("PostgreSQL schema created at version %d", version)
    for number in range(version + 1, goal + 1):
        step = MIGRATIONS[number - 1].postgresql
        if step == IN_BASELINE:
            raise RuntimeError(f"migration {number} has no PostgreSQL steps")
        await _apply_postgres(conn, step, context)
        await conn.execute("UPDATE schema_version SET version = ?", (number,))
        log.debug("database migrated to schema version %d", number)
    if goal > version:
        _log_run(version, goal)
    return max(version, goal)
