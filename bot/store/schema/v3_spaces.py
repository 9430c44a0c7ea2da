"""Migration to spaces: `space_id` on every community row, assigned from what each row knows.

Rules (logged with counts): a session takes `guild:<discord_guild_id>`; a Discord session
without a guild is a DM, `dm:<author id of its first user message>`; every other session (the
terminal, the admin API, imports) goes to the local space. Messages, memories, attachments
and tags follow their session; knowledge entries whose session is known take its space; note
pages linked to sessions of exactly one space take it; topic channels take
`guild:<guild_id>` when known; topic posts follow their channel; everything else goes to the
local space. Note links that would cross spaces are dropped (counted). The knowledge Markdown
files move later, at start-up (KnowledgeService.relocate_files), because the database layer
does not know the knowledge-base folder.

Tables are rebuilt (create new, copy, drop old, rename) so `space_id` is NOT NULL without a
default: an insert that forgets the space fails instead of landing in some space silently.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

import aiosqlite

from bot.store.spaces import DEFAULT_LOCAL_NAME, dm_space, guild_space, parse_space

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MigrationContext:
    """What Python migrations may need to know beyond the database."""

    local_space: str = f"local:{DEFAULT_LOCAL_NAME}"


# The schema of every community table with its space. Created as new_<name>, filled, renamed.
NEW_TABLES: dict[str, str] = {
    "sessions": """
        id TEXT PRIMARY KEY,
        space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
        title TEXT NOT NULL DEFAULT '',
        model TEXT,
        source TEXT NOT NULL DEFAULT 'terminal',
        discord_channel_id INTEGER,
        discord_guild_id INTEGER,
        parent_channel_id INTEGER,
        topic TEXT,
        closed_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (space_id, id)
    """,
    "memories": """
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        space_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        summary TEXT NOT NULL,
        embedding_json TEXT,
        level INTEGER NOT NULL DEFAULT 0,
        condensed_into INTEGER REFERENCES memories(id) ON DELETE SET NULL,
        tagged_at TEXT,
        created_at TEXT NOT NULL,
        FOREIGN KEY (space_id, session_id) REFERENCES sessions(space_id, id) ON DELETE CASCADE
    """,
    "messages": """
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        space_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
        content TEXT NOT NULL,
        author_id TEXT,
        author_name TEXT,
        discord_message_id INTEGER,
        reply_to INTEGER,
        archived_at TEXT,
        memory_id INTEGER REFERENCES memories(id) ON DELETE SET NULL,
        tagged_at TEXT,
        created_at TEXT NOT NULL,
        FOREIGN KEY (space_id, session_id) REFERENCES sessions(space_id, id) ON DELETE CASCADE
    """,
    "message_tags": """
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        tag TEXT NOT NULL,
        created_at TEXT NOT NULL
    """,
    "memory_tags": """
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
        memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
        tag TEXT NOT NULL,
        created_at TEXT NOT NULL
    """,
    "knowledge_entries": """
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
        query TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        summary TEXT NOT NULL,
        session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
        md_path TEXT,
        created_at TEXT NOT NULL
    """,
    "note_pages": """
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
        title TEXT NOT NULL,
        content TEXT NOT NULL DEFAULT '',
        position INTEGER NOT NULL DEFAULT 0,
        section TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (space_id, id)
    """,
    "session_note_pages": """
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        space_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        page_id INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (session_id, page_id),
        FOREIGN KEY (space_id, session_id) REFERENCES sessions(space_id, id) ON DELETE CASCADE,
        FOREIGN KEY (space_id, page_id) REFERENCES note_pages(space_id, id) ON DELETE CASCADE
    """,
    "attachments": """
        id TEXT PRIMARY KEY,
        space_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        filename TEXT NOT NULL,
        content_type TEXT NOT NULL DEFAULT '',
        size INTEGER NOT NULL,
        data BLOB NOT NULL,
        source_url TEXT,
        created_at TEXT NOT NULL,
        FOREIGN KEY (space_id, session_id) REFERENCES sessions(space_id, id) ON DELETE CASCADE
    """,
    "topic_channels": """
        channel_id INTEGER PRIMARY KEY,
        space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
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
    """,
    "topic_posts": """
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
        channel_id INTEGER NOT NULL,
        kind TEXT NOT NULL DEFAULT 'idle',
        topic TEXT NOT NULL,
        words_json TEXT NOT NULL DEFAULT '[]',
        content TEXT NOT NULL DEFAULT '',
        discord_message_id INTEGER,
        posted_at TEXT NOT NULL
    """,
}

# How each new table is filled from the old one (temp tables map rows to their space).
COPIES: dict[str, str] = {
    "sessions": """
        SELECT s.id, m.space_id, s.title, s.model, s.source, s.discord_channel_id,
               s.discord_guild_id, m.parent_channel_id, s.topic, s.closed_at, s.created_at,
               s.updated_at
        FROM sessions s JOIN temp.session_space m ON m.session_id = s.id
    """,
    "memories": """
        SELECT x.id, m.space_id, x.session_id, x.summary, x.embedding_json, x.level,
               x.condensed_into, x.tagged_at, x.created_at
        FROM memories x JOIN temp.session_space m ON m.session_id = x.session_id
    """,
    "messages": """
        SELECT x.id, m.space_id, x.session_id, x.role, x.content, x.author_id, x.author_name,
               x.discord_message_id, x.reply_to, x.archived_at, x.memory_id, x.tagged_at,
               x.created_at
        FROM messages x JOIN temp.session_space m ON m.session_id = x.session_id
    """,
    "message_tags": """
        SELECT t.id, x.space_id, t.message_id, t.tag, t.created_at
        FROM message_tags t JOIN new_messages x ON x.id = t.message_id
    """,
    "memory_tags": """
        SELECT t.id, x.space_id, t.memory_id, t.tag, t.created_at
        FROM memory_tags t JOIN new_memories x ON x.id = t.memory_id
    """,
    "knowledge_entries": """
        SELECT k.id, COALESCE(m.space_id, :local), k.query, k.title, k.summary,
               CASE WHEN m.space_id IS NULL THEN NULL ELSE k.session_id END,
               k.md_path, k.created_at
        FROM knowledge_entries k LEFT JOIN temp.session_space m ON m.session_id = k.session_id
    """,
    # Positions restart at 0 in every space; a space keeps the old relative order, so its
    # sections stay contiguous.
    "note_pages": """
        SELECT p.id, COALESCE(m.space_id, :local), p.title, p.content,
               ROW_NUMBER() OVER (
                   PARTITION BY COALESCE(m.space_id, :local) ORDER BY p.position, p.id) - 1,
               p.section, p.created_at, p.updated_at
        FROM note_pages p LEFT JOIN temp.page_space m ON m.page_id = p.id
    """,
    "session_note_pages": """
        SELECT l.id, s.space_id, l.session_id, l.page_id, l.created_at
        FROM session_note_pages l
        JOIN new_sessions s ON s.id = l.session_id
        JOIN new_note_pages p ON p.id = l.page_id AND p.space_id = s.space_id
    """,
    "attachments": """
        SELECT a.id, m.space_id, a.session_id, a.filename, a.content_type, a.size, a.data,
               a.source_url, a.created_at
        FROM attachments a JOIN temp.session_space m ON m.session_id = a.session_id
    """,
    "topic_channels": """
        SELECT c.channel_id,
               CASE WHEN c.guild_id IS NULL THEN :local ELSE 'guild:' || c.guild_id END,
               c.guild_id, c.enabled, c.idle_minutes, c.check_interval_minutes, c.active_start,
               c.active_end, c.timezone, c.max_posts_per_day, c.cron, c.language, c.persona,
               c.last_human_at, c.updated_at
        FROM topic_channels c
    """,
    "topic_posts": """
        SELECT p.id, COALESCE(c.space_id, :local), p.channel_id, p.kind, p.topic, p.words_json,
               p.content, p.discord_message_id, p.posted_at
        FROM topic_posts p LEFT JOIN new_topic_channels c ON c.channel_id = p.channel_id
    """,
}

INDEXES = """
    CREATE INDEX ix_sessions_channel ON sessions(space_id, discord_channel_id, closed_at);
    CREATE INDEX ix_sessions_parent ON sessions(space_id, parent_channel_id);
    CREATE INDEX ix_sessions_updated ON sessions(space_id, updated_at);
    CREATE INDEX ix_sessions_updated_all ON sessions(updated_at);
    CREATE INDEX ix_memories_session ON memories(space_id, session_id, id);
    CREATE INDEX ix_memories_untagged ON memories(id) WHERE tagged_at IS NULL;
    CREATE INDEX ix_messages_session ON messages(space_id, session_id, id);
    CREATE INDEX ix_messages_live ON messages(space_id, session_id, id) WHERE archived_at IS NULL;
    CREATE INDEX ix_messages_untagged ON messages(id) WHERE tagged_at IS NULL;
    CREATE UNIQUE INDEX ux_messages_discord ON messages(discord_message_id)
        WHERE discord_message_id IS NOT NULL;
    CREATE INDEX ix_message_tags_message ON message_tags(message_id);
    CREATE INDEX ix_message_tags_tag ON message_tags(space_id, tag);
    CREATE INDEX ix_memory_tags_memory ON memory_tags(memory_id);
    CREATE INDEX ix_memory_tags_tag ON memory_tags(space_id, tag);
    CREATE INDEX ix_knowledge_space ON knowledge_entries(space_id, id DESC);
    CREATE INDEX ix_note_pages_position ON note_pages(space_id, position, id);
    CREATE INDEX ix_session_note_pages_page ON session_note_pages(space_id, page_id);
    CREATE INDEX ix_attachments_session ON attachments(space_id, session_id);
    CREATE INDEX ix_topic_channels_space ON topic_channels(space_id, channel_id);
    CREATE INDEX ix_topic_posts_channel ON topic_posts(space_id, channel_id, posted_at);
    CREATE INDEX ix_topic_posts_message ON topic_posts(discord_message_id)
        WHERE discord_message_id IS NOT NULL;
    CREATE INDEX ix_api_logs_space ON api_logs(space_id, id)
"""

NEW_SCHEMA = """
    CREATE TABLE spaces (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('guild', 'dm', 'local')),
        name TEXT NOT NULL DEFAULT '',
        discord_id INTEGER,
        created_at TEXT NOT NULL,
        left_at TEXT,
        default_model TEXT,
        language TEXT,
        persona TEXT
    );
    CREATE TABLE word_pool (
        space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
        channel_id INTEGER NOT NULL,
        word TEXT NOT NULL,
        count INTEGER NOT NULL DEFAULT 1,
        last_seen TEXT NOT NULL,
        PRIMARY KEY (space_id, channel_id, word)
    );
    CREATE INDEX ix_word_pool_recent ON word_pool(space_id, channel_id, last_seen);
    ALTER TABLE api_logs ADD COLUMN space_id TEXT
"""


def _statements(script: str) -> list[str]:
    return [part.strip() for part in script.split(";") if part.strip()]


def session_space(
    guild_id: int | None, channel_id: int | None, first_author: str | None, local: str
) -> str:
    """The space an existing session belongs to (see the module docstring)."""
    if guild_id is not None:
        return guild_space(guild_id)
    if channel_id is not None and first_author is not None and first_author.isdigit():
        return dm_space(first_author)
    return local


async def _map_sessions(conn: aiosqlite.Connection, local: str) -> None:
    """Fill temp.session_space: each session's space and, when known, its parent channel."""
    rows = await conn.execute_fetchall(
        """
        SELECT s.id, s.discord_guild_id, s.discord_channel_id,
               (SELECT m.author_id FROM messages m
                WHERE m.session_id = s.id AND m.role = 'user' AND m.author_id IS NOT NULL
                ORDER BY m.id LIMIT 1) AS first_author,
               (SELECT p.channel_id FROM topic_posts p
                WHERE p.discord_message_id = s.discord_channel_id LIMIT 1) AS parent
        FROM sessions s
        """
    )
    mapping = [(str(row[0]), session_space(row[1], row[2], row[3], local), row[4]) for row in rows]
    await conn.execute(
        "CREATE TEMP TABLE session_space (session_id TEXT PRIMARY KEY, space_id TEXT NOT NULL, "
        "parent_channel_id INTEGER)"
    )
    await conn.executemany("INSERT INTO temp.session_space VALUES (?, ?, ?)", mapping)


async def _map_pages(conn: aiosqlite.Connection) -> None:
    """Fill temp.page_space with the pages linked to sessions of exactly one space."""
    await conn.execute(
        "CREATE TEMP TABLE page_space (page_id INTEGER PRIMARY KEY, space_id TEXT NOT NULL)"
    )
    await conn.execute(
        """
        INSERT INTO temp.page_space
        SELECT l.page_id, MIN(m.space_id) FROM session_note_pages l
        JOIN temp.session_space m ON m.session_id = l.session_id
        GROUP BY l.page_id HAVING COUNT(DISTINCT m.space_id) = 1
        """
    )


async def _spaces_in_use(conn: aiosqlite.Connection, local: str) -> list[str]:
    rows = await conn.execute_fetchall(
        "SELECT space_id FROM temp.session_space UNION SELECT space_id FROM temp.page_space "
        "UNION SELECT 'guild:' || guild_id FROM topic_channels WHERE guild_id IS NOT NULL"
    )
    return sorted({str(row[0]) for row in rows} | {local})


async def _count(conn: aiosqlite.Connection, sql: str) -> dict[str, int]:
    return {str(row[0]): int(row[1]) for row in await conn.execute_fetchall(sql)}


async def _report(conn: aiosqlite.Connection, dropped_links: int) -> None:
    """Log, per table, how many rows went to which space."""
    for table in ("sessions", "messages", "knowledge_entries", "note_pages", "topic_channels"):
        counts = await _count(
            conn, f"SELECT space_id, COUNT(*) FROM {table} GROUP BY space_id ORDER BY space_id"
        )
        if counts:
            log.info("spaces migration: %s assigned %s", table, counts)
    if dropped_links:
        log.info(
            "spaces migration: %d note links dropped (page and session ended in different spaces)",
            dropped_links,
        )


async def migrate_to_spaces(conn: aiosqlite.Connection, context: MigrationContext) -> None:
    """Add spaces and rebuild the community tables with `space_id` (foreign keys are off)."""
    local = context.local_space
    parse_space(local)
    for statement in _statements(NEW_SCHEMA):
        await conn.execute(statement)
    await _map_sessions(conn, local)
    await _map_pages(conn)
    now = datetime.now(UTC).isoformat(timespec="microseconds")
    for space_id in await _spaces_in_use(conn, local):
        space = parse_space(space_id)
        await conn.execute(
            "INSERT INTO spaces (id, kind, name, discord_id, created_at) VALUES (?, ?, '', ?, ?)",
            (space.id, space.kind, space.discord_id, now),
        )
    links_before = list(await conn.execute_fetchall("SELECT COUNT(*) FROM session_note_pages"))
    tables = list(NEW_TABLES)
    # AUTOINCREMENT ids are never reused: the rebuilt tables continue the old sequences.
    sequences = list(await conn.execute_fetchall("SELECT name, seq FROM sqlite_sequence"))
    for table in tables:
        await conn.execute(f"CREATE TABLE new_{table} ({NEW_TABLES[table]})")
        await conn.execute(f"INSERT INTO new_{table} {COPIES[table]}", {"local": local})
    for table in tables:
        await conn.execute(f"DROP TABLE {table}")
    for table in tables:
        await conn.execute(f"ALTER TABLE new_{table} RENAME TO {table}")
    for statement in _statements(INDEXES):
        await conn.execute(statement)
    for name, seq in sequences:
        await conn.execute(
            "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = ?", (seq, name)
        )
        await conn.execute(
            "INSERT INTO sqlite_sequence (name, seq) SELECT ?, ? WHERE NOT EXISTS "
            "(SELECT 1 FROM sqlite_sequence WHERE name = ?)",
            (name, seq, name),
        )
    await conn.execute(
        "UPDATE api_logs SET space_id = (SELECT space_id FROM temp.session_space m "
        "WHERE m.session_id = api_logs.session_id) WHERE session_id IS NOT NULL"
    )
    links_after = list(await conn.execute_fetchall("SELECT COUNT(*) FROM session_note_pages"))
    await conn.execute("DROP TABLE temp.session_space")
    await conn.execute("DROP TABLE temp.page_space")
    await _report(conn, int(links_before[0][0]) - int(links_after[0][0]))
