"""Shipped migrations whose steps are derived from the declaration still do what they shipped
doing: a change to the declaration that would alter one fails here (append a migration)."""

from __future__ import annotations

import re

from bot.store.schema.ddl import statements
from bot.store.schema.migrations import MIGRATIONS

# Migration 5 as it shipped (written out by hand before it was derived).
SHIPPED_V5 = {
    "sqlite": """
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
        CREATE INDEX ix_directory_channels_space
            ON directory_channels(space_id, position, channel_id);
    """,
    "postgresql": """
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
        CREATE INDEX ix_directory_channels_space
            ON directory_channels(space_id, position, channel_id);
    """,
}


def _flat(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).replace("( ", "(").replace(" )", ")").strip()


def test_migration_5_does_what_it_shipped_doing() -> None:
    derived = MIGRATIONS[4]
    for engine, step in (("sqlite", derived.sqlite), ("postgresql", derived.postgresql)):
        assert isinstance(step, tuple)
        assert [_flat(s) for s in step] == [_flat(s) for s in statements(SHIPPED_V5[engine])]
