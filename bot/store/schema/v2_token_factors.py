"""Migration 2, as shipped: per-model correction of the token estimator (SQLite).

Real prompt tokens per estimated token, learned from the counts the backend reports. History:
never edited (the current schema is declared in `bot.store.schema.tables`).
"""

from __future__ import annotations

from typing import Final

FACTORS_SQL: Final = """
CREATE TABLE model_token_factors (
    model TEXT PRIMARY KEY,
    factor REAL NOT NULL,
    samples INTEGER NOT NULL DEFAULT 0,
    partial_counts INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL
);
"""
