"""Migration for the admin cockpit: tool call rows, full-text indexes, activity indexes.

- `tool_calls`: one row per tool call the engine ran (space, session, the turn's message, tool,
  bounded arguments, ok/failed, short error, sources, duration). Rows follow their session
  (deleted with it, and with their space).
- Full-text search (FTS5, `trigram` tokenizer) over messages, note pages and knowledge
  entries; see `bot.store.reads.search` for why trigram. The FTS tables are external-content tables
  over the real rows, kept in sync by triggers on insert, update (of the indexed columns only)
  and delete, so no write path can forget them; the migration indexes the existing rows.
  A later migration that rebuilds one of these tables (create, copy, drop, rename) drops its
  triggers with it and must create them again (`FTS_TRIGGERS`) and rebuild the index.
- Indexes for time-bounded activity reads; `api_logs.space_id` filled from sessions where
  it is still empty.

Trigger bodies hold semicolons, so this is a Python migration running one statement at a time.
"""

from __future__ import annotations

import logging

import aiosqlite

from bot.store.schema.v3_spaces import MigrationContext

log = logging.getLogger(__name__)

TOOL_CALLS = (
    """
    CREATE TABLE tool_calls (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        space_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        message_id INTEGER REFERENCES messages(id) ON DELETE SET NULL,
        call_id TEXT NOT NULL DEFAULT '',
        tool TEXT NOT NULL,
        arguments_json TEXT NOT NULL DEFAULT '{}',
        ok INTEGER NOT NULL CHECK (ok IN (0, 1)),
        error TEXT,
        sources_json TEXT NOT NULL DEFAULT '[]',
        duration_ms INTEGER,
        created_at TEXT NOT NULL,
        FOREIGN KEY (space_id, session_id) REFERENCES sessions(space_id, id) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX ix_tool_calls_session ON tool_calls(space_id, session_id, message_id)",
    "CREATE INDEX ix_tool_calls_created ON tool_calls(created_at)",
    "CREATE INDEX ix_tool_calls_space_created ON tool_calls(space_id, created_at)",
)

ACTIVITY_INDEXES = (
    "CREATE INDEX ix_api_logs_space_created ON api_logs(space_id, created_at)",
    # Turns are counted from answers: a partial index keeps that read on a range scan.
    "CREATE INDEX ix_messages_answers ON messages(created_at) WHERE role = 'assistant'",
)

# (FTS table, content table, indexed columns)
FTS_TABLES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("messages_fts", "messages", ("content",)),
    ("note_pages_fts", "note_pages", ("title", "content")),
    ("knowledge_fts", "knowledge_entries", ("title", "query", "summary")),
)


def _fts_table(fts: str, content: str, columns: tuple[str, ...]) -> str:
    return (
        f"CREATE VIRTUAL TABLE {fts} USING fts5({', '.join(columns)}, content='{content}', "
        "content_rowid='id', tokenize='trigram')"
    )


def fts_triggers(fts: str, content: str, columns: tuple[str, ...]) -> tuple[str, ...]:
    """The insert, delete and update triggers keeping `fts` in step with `content`."""
    cols = ", ".join(columns)
    new = ", ".join(f"new.{column}" for column in columns)
    old = ", ".join(f"old.{column}" for column in columns)
    add = f"INSERT INTO {fts} (rowid, {cols}) VALUES (new.id, {new});"
    remove = f"INSERT INTO {fts} ({fts}, rowid, {cols}) VALUES ('delete', old.id, {old});"
    return (
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {content} BEGIN {add} END",
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {content} BEGIN {remove} END",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE OF {cols} ON {content} BEGIN {remove} {add} END",
    )


def fts_statements() -> list[str]:
    """Every FTS table, its triggers and the rebuild that indexes the rows already there."""
    statements: list[str] = []
    for fts, content, columns in FTS_TABLES:
        statements.append(_fts_table(fts, content, columns))
        statements.extend(fts_triggers(fts, content, columns))
        statements.append(f"INSERT INTO {fts} ({fts}) VALUES ('rebuild')")
    return statements


async def migrate_cockpit(conn: aiosqlite.Connection, context: MigrationContext) -> None:
    """Add tool_calls, the full-text indexes (built for existing rows) and activity indexes."""
    del context  # nothing here depends on the local space
    for statement in (*TOOL_CALLS, *ACTIVITY_INDEXES, *fts_statements()):
        await conn.execute(statement)
    cursor = await conn.execute(
        "UPDATE api_logs SET space_id = (SELECT s.space_id FROM sessions s "
        "WHERE s.id = api_logs.session_id) WHERE space_id IS NULL AND session_id IS NOT NULL"
    )
    if cursor.rowcount:
        log.info("cockpit migration: %d API log rows took their session's space", cursor.rowcount)
