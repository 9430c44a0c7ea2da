"""Knowledge from web searches: knowledge_entries and their knowledge_sources."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.db import Database, utcnow

# Larger than any real id, so "before_id=None" pages from the newest entry.
_NO_UPPER_BOUND = 2**62


@dataclass(frozen=True)
class KnowledgeSource:
    """Where a piece of knowledge came from."""

    title: str
    url: str


@dataclass(frozen=True)
class KnowledgeEntry:
    """A summarised web search: heading, Markdown body, sources and its Markdown file."""

    id: int
    query: str
    title: str
    summary: str
    session_id: str | None
    md_path: str | None
    created_at: str
    sources: list[KnowledgeSource]


_COLUMNS = "id, query, title, summary, session_id, md_path, created_at"


class KnowledgeRepository:
    """Reads and writes knowledge entries with their sources."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self,
        *,
        query: str,
        title: str,
        summary: str,
        session_id: str | None,
        md_path: str | None,
        sources: Sequence[KnowledgeSource],
    ) -> KnowledgeEntry:
        """Insert an entry and its sources in one transaction (an unknown session → NULL)."""
        now = utcnow()
        async with self._db.transaction() as conn:
            # The session may have been deleted meanwhile; keep the knowledge anyway.
            cursor = await conn.execute(
                "INSERT INTO knowledge_entries (query, title, summary, session_id, md_path, "
                "created_at) VALUES (?, ?, ?, (SELECT id FROM sessions WHERE id = ?), ?, ?)",
                (query, title, summary, session_id, md_path, now),
            )
            entry_id = int(cursor.lastrowid or 0)
            await conn.executemany(
                "INSERT INTO knowledge_sources (entry_id, title, url) VALUES (?, ?, ?)",
                [(entry_id, source.title, source.url) for source in sources],
            )
            rows = list(
                await conn.execute_fetchall(
                    "SELECT session_id FROM knowledge_entries WHERE id = ?", (entry_id,)
                )
            )
        stored_session = rows[0][0] if rows else None
        return KnowledgeEntry(
            entry_id, query, title, summary, stored_session, md_path, now, list(sources)
        )

    async def get(self, entry_id: int) -> KnowledgeEntry | None:
        """One entry with its sources."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM knowledge_entries WHERE id = ?", (entry_id,)
        )
        entries = await self._with_sources(rows)
        return entries[0] if entries else None

    async def recent_for_query(self, query: str, since: str) -> KnowledgeEntry | None:
        """The newest entry for exactly this query (case-insensitive) created after `since`."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM knowledge_entries WHERE created_at > ? "
            "AND lower(query) = lower(?) ORDER BY id DESC LIMIT 1",
            (since, query),
        )
        entries = await self._with_sources(rows)
        return entries[0] if entries else None

    async def page(self, *, limit: int, before_id: int | None) -> list[KnowledgeEntry]:
        """Entries newest first, `limit` at most, with ids below `before_id`."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM knowledge_entries WHERE id < ? ORDER BY id DESC LIMIT ?",
            (before_id if before_id is not None else _NO_UPPER_BOUND, max(0, limit)),
        )
        return await self._with_sources(rows)

    async def replace(
        self, entry_id: int, *, title: str, summary: str, md_path: str | None
    ) -> KnowledgeEntry | None:
        """Give an entry a new title, body and file; its id, query and sources stay.

        None when the entry no longer exists.
        """
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE knowledge_entries SET title = ?, summary = ?, md_path = ? WHERE id = ?",
                (title, summary, md_path, entry_id),
            )
            if cursor.rowcount == 0:
                return None
        return await self.get(entry_id)

    async def delete(self, entry_id: int) -> KnowledgeEntry | None:
        """Delete an entry (its sources cascade); returns what was deleted."""
        entry = await self.get(entry_id)
        if entry is None:
            return None
        async with self._db.transaction() as conn:
            cursor = await conn.execute("DELETE FROM knowledge_entries WHERE id = ?", (entry_id,))
            if cursor.rowcount == 0:
                return None
        return entry

    async def _with_sources(self, rows: Sequence[sqlite3.Row]) -> list[KnowledgeEntry]:
        if not rows:
            return []
        ids = [int(row["id"]) for row in rows]
        marks = ",".join("?" for _ in ids)
        source_rows = await self._db.fetchall(
            f"SELECT entry_id, title, url FROM knowledge_sources WHERE entry_id IN ({marks}) "
            "ORDER BY id",
            tuple(ids),
        )
        sources: dict[int, list[KnowledgeSource]] = {entry_id: [] for entry_id in ids}
        for row in source_rows:
            sources[int(row["entry_id"])].append(KnowledgeSource(row["title"], row["url"]))
        return [
            KnowledgeEntry(
                id=row["id"],
                query=row["query"],
                title=row["title"],
                summary=row["summary"],
                session_id=row["session_id"],
                md_path=row["md_path"],
                created_at=row["created_at"],
                sources=sources[int(row["id"])],
            )
            for row in rows
        ]
