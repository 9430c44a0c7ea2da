"""Knowledge from web searches: knowledge_entries and their knowledge_sources."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Row
from bot.store.repos.space_records import ensure_space_row
from bot.store.spaces import SpaceScope, in_space

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
    space_id: str
    query: str
    title: str
    summary: str
    session_id: str | None
    md_path: str | None
    created_at: str
    sources: list[KnowledgeSource]


_COLUMNS = "id, space_id, query, title, summary, session_id, md_path, created_at"


class KnowledgeRepository:
    """Reads and writes the knowledge entries of a space with their sources."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self,
        space: str,
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
            await ensure_space_row(conn, space)
            # The session may have been deleted meanwhile; keep the knowledge anyway.
            entry_id = await conn.insert(
                "INSERT INTO knowledge_entries (space_id, query, title, summary, session_id, "
                "md_path, created_at) VALUES (?, ?, ?, ?, "
                "(SELECT id FROM sessions WHERE space_id = ? AND id = ?), ?, ?)",
                (space, query, title, summary, space, session_id, md_path, now),
            )
            await conn.executemany(
                "INSERT INTO knowledge_sources (entry_id, title, url) VALUES (?, ?, ?)",
                [(entry_id, source.title, source.url) for source in sources],
            )
            rows = list(
                await conn.execute_fetchall(
                    "SELECT session_id FROM knowledge_entries WHERE space_id = ? AND id = ?",
                    (space, entry_id),
                )
            )
        stored_session = rows[0][0] if rows else None
        return KnowledgeEntry(
            entry_id, space, query, title, summary, stored_session, md_path, now, list(sources)
        )

    async def get(self, scope: SpaceScope, entry_id: int) -> KnowledgeEntry | None:
        """One entry of `scope` (ALL_SPACES: the operator's view) with its sources."""
        where, params = in_space(scope)
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM knowledge_entries WHERE {where} AND id = ?",
            (*params, entry_id),
        )
        entries = await self._with_sources(rows)
        return entries[0] if entries else None

    async def recent_for_query(self, space: str, query: str, since: str) -> KnowledgeEntry | None:
        """The space's newest entry for exactly this query (case-insensitive) after `since`."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM knowledge_entries WHERE space_id = ? AND created_at > ? "
            "AND lower(query) = lower(?) ORDER BY id DESC LIMIT 1",
            (space, since, query),
        )
        entries = await self._with_sources(rows)
        return entries[0] if entries else None

    async def page(
        self, scope: SpaceScope, *, limit: int, before_id: int | None
    ) -> list[KnowledgeEntry]:
        """Entries of `scope` newest first, `limit` at most, with ids below `before_id`."""
        where, params = in_space(scope)
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM knowledge_entries WHERE {where} AND id < ? "
            "ORDER BY id DESC LIMIT ?",
            (*params, before_id if before_id is not None else _NO_UPPER_BOUND, max(0, limit)),
        )
        return await self._with_sources(rows)

    async def replace(
        self, space: str, entry_id: int, *, title: str, summary: str, md_path: str | None
    ) -> KnowledgeEntry | None:
        """Give an entry of `space` a new title, body and file; its id, query and sources stay.

        None when the entry no longer exists there.
        """
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE knowledge_entries SET title = ?, summary = ?, md_path = ? "
                "WHERE space_id = ? AND id = ?",
                (title, summary, md_path, space, entry_id),
            )
            if cursor.rowcount == 0:
                return None
        return await self.get(space, entry_id)

    async def delete(self, scope: SpaceScope, entry_id: int) -> KnowledgeEntry | None:
        """Delete an entry of `scope` (its sources cascade); returns what was deleted."""
        entry = await self.get(scope, entry_id)
        if entry is None:
            return None
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM knowledge_entries WHERE space_id = ? AND id = ?",
                (entry.space_id, entry_id),
            )
            if cursor.rowcount == 0:
                return None
        return entry

    async def move(
        self, space: str, entry_id: int, to_space: str, md_path: str | None
    ) -> KnowledgeEntry | None:
        """Give an entry to `to_space` with its file's new path; None when it is not in `space`.

        Its session link is dropped: the conversation stays in the old space.
        """
        async with self._db.transaction() as conn:
            await ensure_space_row(conn, to_space)
            cursor = await conn.execute(
                "UPDATE knowledge_entries SET space_id = ?, session_id = NULL, md_path = ? "
                "WHERE space_id = ? AND id = ?",
                (to_space, md_path, space, entry_id),
            )
            if cursor.rowcount == 0:
                return None
        return await self.get(to_space, entry_id)

    async def set_md_path(self, space: str, entry_id: int, md_path: str | None) -> None:
        """Record where the entry's Markdown file is now."""
        await self._db.execute(
            "UPDATE knowledge_entries SET md_path = ? WHERE space_id = ? AND id = ?",
            (md_path, space, entry_id),
        )

    async def md_paths(self, space: str) -> list[str]:
        """The Markdown file paths of the space's entries."""
        rows = await self._db.fetchall(
            "SELECT md_path FROM knowledge_entries WHERE space_id = ? AND md_path IS NOT NULL",
            (space,),
        )
        return [str(row["md_path"]) for row in rows]

    async def files_to_relocate_all_spaces(self, prefix: str) -> list[tuple[str, int, str]]:
        """(space, id, md_path) of entries in any space whose file lies directly in `prefix`/
        (saved before spaces existed); the start-up relocation moves them."""
        rows = await self._db.fetchall(
            "SELECT space_id, id, md_path FROM knowledge_entries WHERE md_path LIKE ? "
            "AND md_path NOT LIKE ? ORDER BY id",
            (f"{prefix}/%", f"{prefix}/%/%"),
        )
        return [(str(row["space_id"]), int(row["id"]), str(row["md_path"])) for row in rows]

    async def _with_sources(self, rows: Sequence[Row]) -> list[KnowledgeEntry]:
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
                space_id=row["space_id"],
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
