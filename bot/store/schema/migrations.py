"""Ordered schema migrations: SQLite steps and PostgreSQL steps for every version.

`bot.store.engine.migrate` runs them: SQLite every migration in order, PostgreSQL its
baseline schema (`bot.store.schema.postgresql`) and every PostgreSQL step after it.

A migration = its SQLite steps + its PostgreSQL steps (`Migration`); a test checks that every
migration after the baseline has both. Never edit a migration that has shipped: append one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import aiosqlite

from bot.store.schema.v3_spaces import MigrationContext, migrate_to_spaces
from bot.store.schema.v4_cockpit import migrate_cockpit
from bot.store.schema.v5_connections import MIGRATION as CONNECTIONS_AND_DIRECTORY
from bot.store.schema.v5_connections import POSTGRESQL as CONNECTIONS_AND_DIRECTORY_PG

# A step is an SQL script (statements split on ";") or, when SQL alone cannot do it, Python.
SqliteStep = str | Callable[[aiosqlite.Connection, MigrationContext], Awaitable[None]]
PostgresStep = str | Callable[["SqlConnection", MigrationContext], Awaitable[None]]


class SqlConnection(Protocol):
    """What a PostgreSQL step needs of the engine's connection (`?` placeholders)."""

    async def execute(self, sql: str, params: Any = ()) -> Any:
        """Run one statement."""
        ...


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
