"""Tags of messages and memories (summaries): storage, backfill queries, co-occurrence."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from bot.store.db import Database, utcnow

log = logging.getLogger(__name__)

# Bounds the rows a co-occurrence or recency query looks at, so they stay fast on big tables.
_SCAN_ROWS = 5000


@dataclass(frozen=True)
class Untagged:
    """A message or memory that has not been tagged yet."""

    id: int
    text: str


def _like_pattern(word: str) -> str:
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class TagRepository:
    """Reads and writes message_tags / memory_tags and the tagged_at markers."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add_message_tags(self, message_id: int, tags: Sequence[str]) -> bool:
        """Replace the message's tags and mark it tagged; False when the message is gone."""
        return await self._set_tags("messages", "message_tags", "message_id", message_id, tags)

    async def add_memory_tags(self, memory_id: int, tags: Sequence[str]) -> bool:
        """Replace the memory's tags and mark it tagged; False when the memory is gone."""
        return await self._set_tags("memories", "memory_tags", "memory_id", memory_id, tags)

    async def _set_tags(
        self, owner: str, table: str, column: str, owner_id: int, tags: Sequence[str]
    ) -> bool:
        now = utcnow()
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                f"UPDATE {owner} SET tagged_at = ? WHERE id = ?",
                (now, owner_id),
            )
            if cursor.rowcount == 0:
                return False
            # Replacing (not appending) keeps a race between the live tagger and backfill harmless.
            await conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (owner_id,))
            await conn.executemany(
                f"INSERT INTO {table} ({column}, tag, created_at) VALUES (?, ?, ?)",
                [(owner_id, tag, now) for tag in tags],
            )
        return True

    async def untagged_messages(self, limit: int) -> list[Untagged]:
        """User/assistant messages without tags, newest first."""
        rows = await self._db.fetchall(
            "SELECT id, content FROM messages WHERE tagged_at IS NULL"
            " AND role IN ('user', 'assistant') ORDER BY id DESC LIMIT ?",
            (max(limit, 0),),
        )
        return [Untagged(int(row["id"]), str(row["content"])) for row in rows]

    async def untagged_memories(self, limit: int) -> list[Untagged]:
        """Memories (summaries) without tags, newest first."""
        rows = await self._db.fetchall(
            "SELECT id, summary FROM memories WHERE tagged_at IS NULL ORDER BY id DESC LIMIT ?",
            (max(limit, 0),),
        )
        return [Untagged(int(row["id"]), str(row["summary"])) for row in rows]

    async def tags_for_message(self, message_id: int) -> list[str]:
        """The message's tags in the order they were given."""
        rows = await self._db.fetchall(
            "SELECT tag FROM message_tags WHERE message_id = ? ORDER BY id", (message_id,)
        )
        return [str(row["tag"]) for row in rows]

    async def tags_for_memory(self, memory_id: int) -> list[str]:
        """The memory's tags in the order they were given."""
        rows = await self._db.fetchall(
            "SELECT tag FROM memory_tags WHERE memory_id = ? ORDER BY id", (memory_id,)
        )
        return [str(row["tag"]) for row in rows]

    async def related_tags(
        self, word: str, limit: int = 5, exclude: AbstractSet[str] = frozenset()
    ) -> list[str]:
        """Tags that share a message or memory with a tag equal to or containing `word`.

        Ranked by how often they co-occur, then by recency. Tags that themselves match `word`
        and tags in `exclude` (case-insensitive) are left out.
        """
        word = word.strip()
        if not word or limit <= 0:
            return []
        pattern = _like_pattern(word)
        rows = await self._db.fetchall(
            """
            WITH hit_messages AS (
                SELECT DISTINCT message_id FROM (
                    SELECT message_id FROM message_tags
                    WHERE tag = :word OR tag LIKE :pattern ESCAPE '\\'
                    ORDER BY id DESC LIMIT :scan)
            ), hit_memories AS (
                SELECT DISTINCT memory_id FROM (
                    SELECT memory_id FROM memory_tags
                    WHERE tag = :word OR tag LIKE :pattern ESCAPE '\\'
                    ORDER BY id DESC LIMIT :scan)
            ), co AS (
                SELECT t.tag, t.created_at FROM message_tags t
                JOIN hit_messages h ON h.message_id = t.message_id
                UNION ALL
                SELECT t.tag, t.created_at FROM memory_tags t
                JOIN hit_memories h ON h.memory_id = t.memory_id
            )
            SELECT tag, COUNT(*) AS n, MAX(created_at) AS last FROM co
            WHERE tag != :word AND tag NOT LIKE :pattern ESCAPE '\\'
            GROUP BY tag ORDER BY n DESC, last DESC, tag
            """,
            {"word": word, "pattern": pattern, "scan": _SCAN_ROWS},
        )
        banned = {tag.casefold() for tag in exclude}
        out: list[str] = []
        for row in rows:
            tag = str(row["tag"])
            if tag.casefold() in banned:
                continue
            out.append(tag)
            if len(out) >= limit:
                break
        return out

    async def recent_tags(
        self, limit: int, channel_session_ids: Sequence[str] | None = None
    ) -> list[str]:
        """Distinct tags, most recently used first; optionally only from the given sessions."""
        if limit <= 0 or (channel_session_ids is not None and not channel_session_ids):
            return []
        if channel_session_ids is None:
            message_filter = memory_filter = ""
            params: dict[str, object] = {"scan": _SCAN_ROWS, "limit": limit}
        else:
            message_filter = (
                " WHERE t.message_id IN (SELECT id FROM messages"
                " WHERE session_id IN (SELECT value FROM json_each(:sessions)))"
            )
            memory_filter = (
                " WHERE t.memory_id IN (SELECT id FROM memories"
                " WHERE session_id IN (SELECT value FROM json_each(:sessions)))"
            )
            params = {
                "scan": _SCAN_ROWS,
                "limit": limit,
                "sessions": json.dumps(list(channel_session_ids)),
            }
        rows = await self._db.fetchall(
            f"""
            SELECT tag, MAX(created_at) AS last FROM (
                SELECT * FROM (SELECT t.tag, t.created_at FROM message_tags t{message_filter}
                               ORDER BY t.id DESC LIMIT :scan)
                UNION ALL
                SELECT * FROM (SELECT t.tag, t.created_at FROM memory_tags t{memory_filter}
                               ORDER BY t.id DESC LIMIT :scan)
            ) GROUP BY tag ORDER BY last DESC, tag LIMIT :limit
            """,
            params,
        )
        return [str(row["tag"]) for row in rows]
