"""Ordered schema migrations: SQLite steps and PostgreSQL steps for every version.

SQLite records its version in `PRAGMA user_version` and runs every migration in order.
PostgreSQL records it in the one-row table `schema_version`; an empty PostgreSQL database gets
the schema at `BASELINE_VERSION` in one go (`bot.store.schema_postgresql`), and every migration
after that runs its PostgreSQL steps. Both engines refuse a database newer than this code.

A migration = its SQLite steps + its PostgreSQL steps (`Migration`); a test checks that every
migration after the baseline has both. Never edit a migration that has shipped: append one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import aiosqlite

from bot.errors import DatabaseVersionError
from bot.store.migration_cockpit import migrate_cockpit
from bot.store.migration_connections import MIGRATION as CONNECTIONS_AND_DIRECTORY
from bot.store.migration_connections import POSTGRESQL as CONNECTIONS_AND_DIRECTORY_PG
from bot.store.migration_spaces import MigrationContext, migrate_to_spaces
from bot.store.schema_postgresql import BASELINE_VERSION, baseline, statements

log = logging.getLogger(__name__)


class Connection(Protocol):
    """What the PostgreSQL migrations use of `bot.store.db.Connection` (db imports this
    module, so the schema names only what it needs)."""

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> object:
        """Run one statement."""
        ...

    async def execute_fetchall(self, sql: str, params: Sequence[Any] = ()) -> Sequence[Any]:
        """Run one statement; its rows."""
        ...


# A step is an SQL script (statements split on ";") or, when SQL alone cannot do it, Python.
SqliteStep = str | Callable[[aiosqlite.Connection, MigrationContext], Awaitable[None]]
PostgresStep = str | Callable[[Connection, MigrationContext], Awaitable[None]]

# A migration's PostgreSQL part when the PostgreSQL baseline schema already contains it.
IN_BASELINE: Final = "-- in the PostgreSQL baseline schema"


@dataclass(frozen=True)
class Migration:
    """One schema version: how SQLite gets there and how PostgreSQL gets there."""

    sqlite: SqliteStep
    postgresql: PostgresStep


# Each entry is one migration; its 1-based position is the version it leaves behind.
MIGRATIONS: tuple[Migration, ...] = (
    # 1: sessions, messages and their summaries, tags, knowledge, notes, settings, presets,
    # API logs, attachments, topic channels and posts, admin sessions.
    Migration(
        sqlite="""
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL DEFAULT '',
            model TEXT,
            source TEXT NOT NULL DEFAULT 'terminal',
            discord_channel_id INTEGER,
            discord_guild_id INTEGER,
            topic TEXT,
            closed_at TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX ix_sessions_channel ON sessions(discord_channel_id, closed_at);
        CREATE INDEX ix_sessions_updated ON sessions(updated_at);

        CREATE TABLE memories (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            summary TEXT NOT NULL,
            embedding_json TEXT,
            level INTEGER NOT NULL DEFAULT 0,
            condensed_into INTEGER REFERENCES memories(id) ON DELETE SET NULL,
            tagged_at TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX ix_memories_session ON memories(session_id, id);

        CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
            content TEXT NOT NULL,
            author_id TEXT,
            author_name TEXT,
            discord_message_id INTEGER,
            reply_to INTEGER,
            archived_at TEXT,
            memory_id INTEGER REFERENCES memories(id) ON DELETE SET NULL,
            tagged_at TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX ix_messages_session ON messages(session_id, id);
        CREATE INDEX ix_messages_live ON messages(session_id, id) WHERE archived_at IS NULL;
        CREATE INDEX ix_messages_untagged ON messages(id) WHERE tagged_at IS NULL;
        CREATE UNIQUE INDEX ux_messages_discord ON messages(discord_message_id)
            WHERE discord_message_id IS NOT NULL;

        CREATE TABLE message_tags (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX ix_message_tags_message ON message_tags(message_id);
        CREATE INDEX ix_message_tags_tag ON message_tags(tag);

        CREATE TABLE memory_tags (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX ix_memory_tags_memory ON memory_tags(memory_id);
        CREATE INDEX ix_memory_tags_tag ON memory_tags(tag);

        CREATE TABLE knowledge_entries (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            query TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            summary TEXT NOT NULL,
            session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
            md_path TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX ix_knowledge_created ON knowledge_entries(id DESC);

        CREATE TABLE knowledge_sources (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            entry_id INTEGER NOT NULL REFERENCES knowledge_entries(id) ON DELETE CASCADE,
            title TEXT NOT NULL DEFAULT '',
            url TEXT NOT NULL
        );
        CREATE INDEX ix_knowledge_sources_entry ON knowledge_sources(entry_id);

        CREATE TABLE local_knowledge_docs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            path TEXT NOT NULL UNIQUE,
            title TEXT NOT NULL DEFAULT '',
            content_hash TEXT NOT NULL,
            embedding_json TEXT,
            embed_model TEXT,
            updated_at TEXT NOT NULL
        );

        CREATE TABLE note_pages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            title TEXT NOT NULL,
            content TEXT NOT NULL DEFAULT '',
            position INTEGER NOT NULL DEFAULT 0,
            section TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX ix_note_pages_position ON note_pages(position, id);

        CREATE TABLE session_note_pages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            page_id INTEGER NOT NULL REFERENCES note_pages(id) ON DELETE CASCADE,
            created_at TEXT NOT NULL,
            UNIQUE (session_id, page_id)
        );

        CREATE TABLE app_settings (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );

        CREATE TABLE model_presets (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            label TEXT NOT NULL,
            value TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL
        );

        CREATE TABLE api_logs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT,
            model TEXT NOT NULL,
            purpose TEXT NOT NULL DEFAULT 'chat',
            request_json TEXT NOT NULL,
            response_text TEXT,
            error TEXT,
            latency_ms INTEGER NOT NULL,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            cost REAL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX ix_api_logs_session ON api_logs(session_id, id);
        CREATE INDEX ix_api_logs_model ON api_logs(model, id);
        CREATE INDEX ix_api_logs_created ON api_logs(created_at);

        CREATE TABLE attachments (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            filename TEXT NOT NULL,
            content_type TEXT NOT NULL DEFAULT '',
            size INTEGER NOT NULL,
            data BLOB NOT NULL,
            source_url TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX ix_attachments_session ON attachments(session_id);

        CREATE TABLE topic_channels (
            channel_id INTEGER PRIMARY KEY,
            guild_id INTEGER,
            enabled INTEGER NOT NULL DEFAULT 0,
            idle_minutes INTEGER NOT NULL DEFAULT 120,
            check_interval_minutes INTEGER NOT NULL DEFAULT 10,
            active_start TEXT NOT NULL DEFAULT '09:00',
            active_end TEXT NOT NULL DEFAULT '23:00',
            timezone TEXT NOT NULL DEFAULT 'UTC',
            max_posts_per_day INTEGER NOT NULL DEFAULT 3,
            cron TEXT,
            language TEXT,
            persona TEXT NOT NULL DEFAULT '',
            last_human_at TEXT,
            updated_at TEXT NOT NULL
        );

        CREATE TABLE topic_posts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            channel_id INTEGER NOT NULL,
            kind TEXT NOT NULL DEFAULT 'idle',
            topic TEXT NOT NULL,
            words_json TEXT NOT NULL DEFAULT '[]',
            content TEXT NOT NULL DEFAULT '',
            discord_message_id INTEGER,
            posted_at TEXT NOT NULL
        );
        CREATE INDEX ix_topic_posts_channel ON topic_posts(channel_id, posted_at);

        CREATE TABLE admin_sessions (
            token_hash TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL
        );
        """,
        postgresql=IN_BASELINE,
    ),
    # 2: per-model correction of the token estimator (real prompt tokens per estimated token),
    # learned from the counts the backend reports.
    Migration(
        sqlite="""
        CREATE TABLE model_token_factors (
            model TEXT PRIMARY KEY,
            factor REAL NOT NULL,
            samples INTEGER NOT NULL DEFAULT 0,
            partial_counts INTEGER NOT NULL DEFAULT 0,
            updated_at TEXT NOT NULL
        );
        """,
        postgresql=IN_BASELINE,
    ),
    # 3: spaces — `space_id` on every community row, the `spaces` table, the word pool.
    Migration(sqlite=migrate_to_spaces, postgresql=IN_BASELINE),
    # 4: the admin cockpit — tool_calls, full-text indexes (SQLite: FTS5 trigram; PostgreSQL:
    # pg_trgm in the baseline), activity indexes.
    Migration(sqlite=migrate_cockpit, postgresql=IN_BASELINE),
    # 5: model presets as connections (address, key); the directory of Discord channel names.
    Migration(sqlite=CONNECTIONS_AND_DIRECTORY, postgresql=CONNECTIONS_AND_DIRECTORY_PG),
)

SCHEMA_VERSION = len(MIGRATIONS)


def number_of(step: SqliteStep) -> int:
    """The schema version the migration with this SQLite step leaves behind."""
    return next(n for n, m in enumerate(MIGRATIONS, start=1) if m.sqlite is step)


async def current_version(conn: aiosqlite.Connection) -> int:
    """The schema version recorded in the database file."""
    cursor = await conn.execute("PRAGMA user_version")
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def _apply(
    conn: aiosqlite.Connection, migration: SqliteStep, context: MigrationContext
) -> None:
    if isinstance(migration, str):
        for statement in statements(migration):
            await conn.execute(statement)
    else:
        await migration(conn, context)


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
    await conn.execute("PRAGMA foreign_keys=OFF")
    try:
        for number in range(version + 1, goal + 1):
            await conn.execute("BEGIN IMMEDIATE")
            if await current_version(conn) >= number:
                # Applied by another process between our read and this lock.
                await conn.execute("ROLLBACK")
                continue
            try:
                await _apply(conn, MIGRATIONS[number - 1].sqlite, context)
                problems = await _foreign_key_problems(conn)
                if problems:
                    raise RuntimeError(
                        f"migration {number} broke foreign keys: {', '.join(problems[:5])}"
                    )
                await conn.execute(f"PRAGMA user_version = {number}")
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
            await conn.execute("COMMIT")
            log.info("database migrated to schema version %d", number)
    finally:
        await conn.execute("PRAGMA foreign_keys=ON")
    return goal


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
    if isinstance(step, str):
        for statement in statements(step):
            await conn.execute(statement)
    else:
        await step(conn, context)


async def migrate_postgresql(
    conn: Connection, context: MigrationContext | None = None, *, target: int | None = None
) -> int:
    """Bring a PostgreSQL database to the current schema in one transaction; refuse a newer one.

    An empty database gets the baseline schema and the versions after it; each later
    migration runs its PostgreSQL steps. The caller commits.
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
        for statement in baseline():
            await conn.execute(statement)
        await conn.execute("CREATE TABLE schema_version (version BIGINT NOT NULL)")
        await conn.execute("INSERT INTO schema_version (version) VALUES (?)", (BASELINE_VERSION,))
        version = BASELINE_VERSION
        log.info("PostgreSQL schema created at version %d", version)
    for number in range(version + 1, goal + 1):
        step = MIGRATIONS[number - 1].postgresql
        if step == IN_BASELINE:
            raise RuntimeError(f"migration {number} has no PostgreSQL steps")
        await _apply_postgres(conn, step, context)
        await conn.execute("UPDATE schema_version SET version = ?", (number,))
        log.info("database migrated to schema version %d", number)
    return max(version, goal)
