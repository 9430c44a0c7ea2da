"""Migration: model presets become named connections; the directory of Discord channel names.

A preset gains an address (`api_base`) and a key (`api_key`); both NULL keep an old row working
exactly as before (the global LLM_API_BASE / LLM_API_KEY and the backend its model string
names). The channel directory holds what the bot can see of its servers' channels, in the
server's space (the server's own name is the `spaces` row's); purging the space removes it.
"""

from __future__ import annotations

MIGRATION = """
ALTER TABLE model_presets ADD COLUMN api_base TEXT;
ALTER TABLE model_presets ADD COLUMN api_key TEXT;

CREATE TABLE directory_channels (
    channel_id INTEGER PRIMARY KEY,
    space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    parent_id INTEGER,
    position INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL
);
CREATE INDEX ix_directory_channels_space ON directory_channels(space_id, position, channel_id);
"""

POSTGRESQL = """
ALTER TABLE model_presets ADD COLUMN api_base TEXT;
ALTER TABLE model_presets ADD COLUMN api_key TEXT;

CREATE TABLE directory_channels (
    channel_id BIGINT PRIMARY KEY,
    space_id TEXT NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    parent_id BIGINT,
    position BIGINT NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL
);
CREATE INDEX ix_directory_channels_space ON directory_channels(space_id, position, channel_id);
"""
