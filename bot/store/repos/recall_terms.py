"""Recall's term index rows (`recall_terms`): what the background indexer reads and writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database
from bot.store.engine.erase_lock import hold_against_erase


@dataclass(frozen=True)
class Unindexed:
    """A message the indexer has not handled yet."""

    id: int
    space_id: str
    content: str
    author_name: str | None
    created_at: str
    hidden: bool


@dataclass(frozen=True)
class IndexedWords:
    """The words to store for one message of a space."""

    space_id: str
    message_id: int
    terms: str


class RecallTermRepository:
    """Pending messages (newest first) and the index rows written for them."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def unindexed_all_spaces(self, limit: int) -> list[Unindexed]:
        """Messages of any space not handled by the indexer yet, newest first (a maintenance
        read: each row carries its space, and what is written for it stays there)."""
        rows = await self._db.fetchall(
            "SELECT id, space_id, content, author_name, created_at, recall_hidden FROM messages "
            "WHERE recall_indexed_at IS NULL AND role IN ('user', 'assistant') "
            "ORDER BY id DESC LIMIT ?",
            (max(limit, 0),),
        )
        return [
            Unindexed(
                int(row["id"]),
                str(row["space_id"]),
                str(row["content"]),
                row["author_name"],
                str(row["created_at"]),
                bool(row["recall_hidden"]),
            )
            for row in rows
        ]

    async def store(self, handled: Sequence[Unindexed], words: Sequence[IndexedWords]) -> None:
        """Write `words` and mark every `handled` message indexed (hidden ones get no row), in
        one transaction; a row rewritten by a second indexer is simply replaced, and a message
        erased since it was read gets none."""
        if not handled:
            return
        now = utcnow()
        # Rows in ascending id, as every other writer of messages locks them (an UPDATE ... IN
        # walks the primary key): newest first, PostgreSQL deadlocked against the tagger.
        handled = sorted(handled, key=lambda row: (row.space_id, row.id))
        words = sorted(words, key=lambda row: (row.space_id, row.message_id))
        async with self._db.transaction() as conn:
            for space in sorted({row.space_id for row in words}):
                await hold_against_erase(conn, space)
            await conn.executemany(
                "DELETE FROM recall_terms WHERE space_id = ? AND id = ?",
                [(row.space_id, row.message_id) for row in words],
            )
            await conn.executemany(
                "INSERT INTO recall_terms (id, space_id, terms) VALUES (?, ?, ?)",
                [(row.message_id, row.space_id, row.terms) for row in words],
            )
            await conn.executemany(
                "DELETE FROM recall_terms WHERE space_id = ? AND id = ? AND EXISTS (SELECT 1 "
                "FROM messages m WHERE m.space_id = ? AND m.id = ? AND m.erased_at IS NOT NULL)",
                [(row.space_id, row.message_id) * 2 for row in words],
            )
            await conn.executemany(
                "UPDATE messages SET recall_indexed_at = ? WHERE space_id = ? AND id = ?",
                [(now, row.space_id, row.id) for row in handled],
            )

    async def forget(self, space: str, message_ids: Sequence[int]) -> None:
        """Drop the index rows of these messages of `space` and mark them pending again (a
        message whose text changed is indexed anew; an erased one stays out while hidden)."""
        async with self._db.transaction() as conn:
            await conn.executemany(
                "DELETE FROM recall_terms WHERE space_id = ? AND id = ?",
                [(space, message_id) for message_id in message_ids],
            )
            # Their vectors too: the background embedder embeds the new text (if visible).
            await conn.executemany(
                "DELETE FROM message_embeddings WHERE space_id = ? AND message_id = ?",
                [(space, message_id) for message_id in message_ids],
            )
            await conn.executemany(
                "UPDATE messages SET recall_indexed_at = NULL WHERE space_id = ? AND id = ?",
                [(space, message_id) for message_id in message_ids],
            )
