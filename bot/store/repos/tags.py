"""Tags of messages and memories (summaries): storage, backfill queries, co-occurrence."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal

from bot.store.engine.connection import Statement, utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Row, like_pattern
from bot.store.engine.erase_lock import against_erase, hold_against_erase

log = logging.getLogger(__name__)

# Bounds the rows a co-occurrence or recency query looks at, so they stay fast on big tables.
_SCAN_ROWS = 5000


@dataclass(frozen=True)
class Untagged:
    """A message or memory that has not been tagged yet, with its space."""

    id: int
    space_id: str
    text: str


# The tagged table, its tag table and the tag table's column pointing back, per kind.
_TAGGED = {
    "message": ("messages", "message_tags", "message_id"),
    "memory": ("memories", "memory_tags", "memory_id"),
}

# Limits tag rows to the sessions of one channel (its threads by parent, and its own).
_CHANNEL_MESSAGES = (
    " AND t.message_id IN (SELECT m.id FROM messages m JOIN sessions s"
    " ON s.space_id = m.space_id AND s.id = m.session_id WHERE s.space_id = :space"
    " AND (s.parent_channel_id = :channel OR s.discord_channel_id = :channel))"
)
_CHANNEL_MEMORIES = (
    " AND t.memory_id IN (SELECT m.id FROM memories m JOIN sessions s"
    " ON s.space_id = m.space_id AND s.id = m.session_id WHERE s.space_id = :space"
    " AND (s.parent_channel_id = :channel OR s.discord_channel_id = :channel))"
)


def _channel_filters(channel_id: int | None) -> tuple[str, str]:
    if channel_id is None:
        return "", ""
    return _CHANNEL_MESSAGES, _CHANNEL_MEMORIES


class TagRepository:
    """Reads and writes message_tags / memory_tags and the tagged_at markers of a space."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add_message_tags(self, space: str, message_id: int, tags: Sequence[str]) -> bool:
        """Replace the message's tags and mark it tagged; False when the message is gone."""
        return await self._set_tags("message", space, message_id, tags)

    async def add_many_message_tags(
        self, space: str, tags_by_message: Mapping[int, Sequence[str]]
    ) -> set[int]:
        """`add_message_tags` for several messages of `space` in one transaction (one batch
        of three statements); returns the ids that were still there (tagged now)."""
        if not tags_by_message:
            return set()
        ids = list(tags_by_message)
        marks = ", ".join("?" for _ in ids)
        now = utcnow()
        # The tags are replaced and added only for the messages still in `space` (those the
        # UPDATE marks), as the statements select them themselves: no trip waits for its ids.
        rows = [(tag, now, space, owner) for owner in ids for tag in tags_by_message[owner]]
        # An erased message (its text gone while these tags were made from it) gets none.
        *_, marked, _, _ = await self._db.write_batch(
            [
                *against_erase(self._db.dialect, space),
                Statement(
                    f"UPDATE messages SET tagged_at = ? WHERE space_id = ? AND id IN ({marks})"
                    " AND erased_at IS NULL RETURNING id",
                    (now, space, *ids),
                ),
                Statement(
                    "DELETE FROM message_tags WHERE space_id = ? AND message_id IN"
                    f" (SELECT id FROM messages WHERE space_id = ? AND id IN ({marks})"
                    " AND erased_at IS NULL)",
                    (space, space, *ids),
                ),
                Statement(
                    "INSERT INTO message_tags (space_id, message_id, tag, created_at)"
                    " SELECT space_id, id, ?, ? FROM messages WHERE space_id = ? AND id = ?"
                    " AND erased_at IS NULL",
                    many=rows,
                ),
            ]
        )
        return {int(row[0]) for row in await marked.fetchall()}

    async def add_memory_tags(self, space: str, memory_id: int, tags: Sequence[str]) -> bool:
        """Replace the memory's tags and mark it tagged; False when the memory is gone."""
        return await self._set_tags("memory", space, memory_id, tags)

    async def _set_tags(
        self, kind: Literal["message", "memory"], space: str, owner_id: int, tags: Sequence[str]
    ) -> bool:
        owner, table, column = _TAGGED[kind]
        now = utcnow()
        # An erased message (its text gone while these tags were made from it) gets none.
        live = " AND erased_at IS NULL" if kind == "message" else ""
        async with self._db.transaction() as conn:
            await hold_against_erase(conn, space)
            cursor = await conn.execute(
                f"UPDATE {owner} SET tagged_at = ? WHERE space_id = ? AND id = ?{live}",
                (now, space, owner_id),
            )
            if cursor.rowcount == 0:
                return False
            # Replacing (not appending) keeps a race between the live tagger and backfill harmless.
            await conn.execute(
                f"DELETE FROM {table} WHERE space_id = ? AND {column} = ?", (space, owner_id)
            )
            await conn.executemany(
                f"INSERT INTO {table} (space_id, {column}, tag, created_at) VALUES (?, ?, ?, ?)",
                [(space, owner_id, tag, now) for tag in tags],
            )
        return True

    async def untagged_messages_all_spaces(self, limit: int) -> list[Untagged]:
        """User/assistant messages without tags in any space, newest first (backfill)."""
        rows = await self._db.fetchall(
            "SELECT id, space_id, content FROM messages WHERE tagged_at IS NULL"
            " AND role IN ('user', 'assistant') ORDER BY id DESC LIMIT ?",
            (max(limit, 0),),
        )
        return [Untagged(int(row["id"]), str(row["space_id"]), str(row["content"])) for row in rows]

    async def untagged_memories_all_spaces(self, limit: int) -> list[Untagged]:
        """Memories (summaries) without tags in any space, newest first (backfill)."""
        rows = await self._db.fetchall(
            "SELECT id, space_id, summary FROM memories WHERE tagged_at IS NULL "
            "ORDER BY id DESC LIMIT ?",
            (max(limit, 0),),
        )
        return [Untagged(int(row["id"]), str(row["space_id"]), str(row["summary"])) for row in rows]

    async def tags_for_message(self, space: str, message_id: int) -> list[str]:
        """The message's tags in the order they were given."""
        rows = await self._db.fetchall(
            "SELECT tag FROM message_tags WHERE space_id = ? AND message_id = ? ORDER BY id",
            (space, message_id),
        )
        return [str(row["tag"]) for row in rows]

    async def tags_for_memory(self, space: str, memory_id: int) -> list[str]:
        """The memory's tags in the order they were given."""
        rows = await self._db.fetchall(
            "SELECT tag FROM memory_tags WHERE space_id = ? AND memory_id = ? ORDER BY id",
            (space, memory_id),
        )
        return [str(row["tag"]) for row in rows]

    async def related_tags(
        self,
        space: str,
        word: str,
        limit: int = 5,
        exclude: AbstractSet[str] = frozenset(),
        *,
        channel_id: int | None = None,
    ) -> list[str]:
        """Tags of the space (or of one channel's sessions) that share a message or memory
        with a tag equal to or containing `word`.

        Ranked by how often they co-occur, then by recency. Tags that themselves match `word`
        and tags in `exclude` (case-insensitive) are left out.
        """
        word = word.strip()
        if not word or limit <= 0:
            return []
        pattern = like_pattern(word)
        messages_in, memories_in = _channel_filters(channel_id)
        rows = await self._db.fetchall(
            _related_sql(messages_in, memories_in),
            {
                "space": space,
                "word": word,
                "pattern": pattern,
                "scan": _SCAN_ROWS,
                "channel": channel_id,
            },
        )
        return _first_tags(rows, exclude, limit)

    async def recent_tags(
        self, space: str, limit: int, *, channel_id: int | None = None
    ) -> list[str]:
        """Distinct tags of the space (or of one channel's sessions), most recently used first."""
        if limit <= 0:
            return []
        messages_in, memories_in = _channel_filters(channel_id)
        rows = await self._db.fetchall(
            f"""
            SELECT tag, MAX(created_at) AS last FROM (
                SELECT * FROM (SELECT t.tag, t.created_at FROM message_tags t
                               WHERE t.space_id = :space{messages_in}
                               ORDER BY t.id DESC LIMIT :scan) AS recent_messages
                UNION ALL
                SELECT * FROM (SELECT t.tag, t.created_at FROM memory_tags t
                               WHERE t.space_id = :space{memories_in}
                               ORDER BY t.id DESC LIMIT :scan) AS recent_memories
            ) AS recent GROUP BY tag ORDER BY last DESC, tag LIMIT :limit
            """,
            {"space": space, "scan": _SCAN_ROWS, "limit": limit, "channel": channel_id},
        )
        return [str(row["tag"]) for row in rows]


def _related_sql(messages_in: str, memories_in: str) -> str:
    """Tags co-occurring with the hits of `:word`/`:pattern` among the latest `:scan` tag rows."""
    return f"""
        WITH hit_messages AS (
            SELECT DISTINCT message_id FROM (
                SELECT t.message_id FROM message_tags t
                WHERE t.space_id = :space AND (t.tag = :word OR t.tag LIKE :pattern ESCAPE '\\')
                {messages_in}
                ORDER BY t.id DESC LIMIT :scan) AS recent
        ), hit_memories AS (
            SELECT DISTINCT memory_id FROM (
                SELECT t.memory_id FROM memory_tags t
                WHERE t.space_id = :space AND (t.tag = :word OR t.tag LIKE :pattern ESCAPE '\\')
                {memories_in}
                ORDER BY t.id DESC LIMIT :scan) AS recent
        ), co AS (
            SELECT t.tag, t.created_at FROM message_tags t
            JOIN hit_messages h ON h.message_id = t.message_id WHERE t.space_id = :space
            UNION ALL
            SELECT t.tag, t.created_at FROM memory_tags t
            JOIN hit_memories h ON h.memory_id = t.memory_id WHERE t.space_id = :space
        )
        SELECT tag, COUNT(*) AS n, MAX(created_at) AS last FROM co
        WHERE tag != :word AND tag NOT LIKE :pattern ESCAPE '\\'
        GROUP BY tag ORDER BY n DESC, last DESC, tag
        """


def _first_tags(rows: list[Row], exclude: AbstractSet[str], limit: int) -> list[str]:
    """The first `limit` tags of `rows` not in `exclude` (case-insensitive)."""
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
