"""Counts across the database for the admin dashboard."""

from __future__ import annotations

from dataclasses import dataclass

from bot.store.engine.database import Database


@dataclass(frozen=True)
class Stats:
    """A snapshot of how much PlayChat has stored and spent."""

    sessions: int
    open_sessions: int
    messages: int
    archived_messages: int
    memories: int
    knowledge_entries: int
    note_pages: int
    attachments: int
    attachment_bytes: int
    api_calls: int
    api_errors: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    db_bytes: int


class StatsRepository:
    """Aggregate queries (each a single indexed or whole-table count)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def collect(self) -> Stats:
        """Current counts and totals."""
        row = await self._db.fetchone(
            """
            SELECT
              (SELECT COUNT(*) FROM sessions) AS sessions,
              (SELECT COUNT(*) FROM sessions WHERE closed_at IS NULL) AS open_sessions,
              (SELECT COUNT(*) FROM messages) AS messages,
              (SELECT COUNT(*) FROM messages WHERE archived_at IS NOT NULL) AS archived_messages,
              (SELECT COUNT(*) FROM memories) AS memories,
              (SELECT COUNT(*) FROM knowledge_entries) AS knowledge_entries,
              (SELECT COUNT(*) FROM note_pages) AS note_pages,
              (SELECT COUNT(*) FROM attachments) AS attachments,
              (SELECT COALESCE(SUM(size), 0) FROM attachments) AS attachment_bytes,
              (SELECT COUNT(*) FROM api_logs) AS api_calls,
              (SELECT COUNT(*) FROM api_logs WHERE error IS NOT NULL) AS api_errors,
              (SELECT COALESCE(SUM(prompt_tokens), 0) FROM api_logs) AS prompt_tokens,
              (SELECT COALESCE(SUM(completion_tokens), 0) FROM api_logs) AS completion_tokens,
              (SELECT COALESCE(SUM(cost), 0.0) FROM api_logs) AS cost
            """
        )
        assert row is not None  # an aggregate SELECT always yields one row
        # PostgreSQL sums BIGINT columns as NUMERIC (Decimal): every count back to int.
        counts = {key: int(row[key]) for key in row.keys() if key != "cost"}  # noqa: SIM118
        return Stats(**counts, cost=float(row["cost"]), db_bytes=await self.db_bytes())

    async def db_bytes(self) -> int:
        """The database's size in bytes (cheap: no table is read)."""
        return await self._db.size_bytes()
