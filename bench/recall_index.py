"""How bench/recall.py fills the background recall index (nothing while there is none)."""

from __future__ import annotations

import sqlite3
from typing import Any

from bot.store import Repositories
from bot.store.engine.database import Database


async def fill_index(db: Database, repos: Repositories) -> float:
    """Fill the recall index as the bot's background indexer does; returns the seconds."""
    return 0.0


def index_rows_sqlite(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Index freshly built rows (id, space, session, role, content, author, created_at)."""
