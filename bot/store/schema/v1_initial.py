"""Migration 1, as shipped: the first schema (SQLite; PostgreSQL starts at the baseline).

Sessions, messages and their summaries, tags, knowledge, notes, settings, presets, API logs,
attachments, topic channels and posts, admin sessions. History: never edited (the current
schema is declared in `bot.store.schema.tables`).
"""

from __future__ import annotations

from typing import Final

INITIAL_SQL: Final = """
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
"""
