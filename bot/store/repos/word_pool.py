"""The word pool of each topic channel: nouns people used there, with counts and recency."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.engine.connection import Connection, utcnow
from bot.store.engine.database import Database
from bot.store.engine.erase_lock import hold_against_erase
from bot.store.repos.space_records import ensure_space_row
from bot.store.spaces import SpaceScope, in_space

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PoolWord:
    """A word of a channel's pool: how often it was seen while in the pool, and when last."""

    word: str
    count: int
    last_seen: str


async def _drop_orphan_authors(conn: Connection, space: str, channel_id: int) -> None:
    """Forget who brought the words that left the channel's pool."""
    await conn.execute(
        "DELETE FROM word_pool_authors WHERE space_id = ? AND channel_id = ? AND NOT EXISTS ("
        "SELECT 1 FROM word_pool p WHERE p.space_id = word_pool_authors.space_id "
        "AND p.channel_id = word_pool_authors.channel_id AND p.word = word_pool_authors.word)",
        (space, channel_id),
    )


async def _any_erased(conn: Connection, space: str, message_ids: Sequence[int]) -> bool:
    """Whether an erase took one of the messages (their words must not come back)."""
    marks = ", ".join("?" for _ in message_ids)
    rows = await conn.execute_fetchall(
        f"SELECT 1 FROM messages WHERE space_id = ? AND id IN ({marks}) AND erased_at IS NOT NULL",
        (space, *message_ids),
    )
    return bool(rows)


async def _spellings(conn: Connection, space: str, channel_id: int) -> dict[str, str]:
    """The channel's pool words by their case-folded form."""
    rows = await conn.execute_fetchall(
        "SELECT word FROM word_pool WHERE space_id = ? AND channel_id = ?", (space, channel_id)
    )
    return {str(row[0]).casefold(): str(row[0]) for row in rows}


def _one_spelling(words: Sequence[str], known: dict[str, str]) -> dict[str, str]:
    """Each word's entry: the pool's spelling of it ignoring case, else its first in `words`
    ("Python" and "python" are one word)."""
    spelling = dict(known)
    for word in words:
        spelling.setdefault(word.casefold(), word)
    return {word: spelling[word.casefold()] for word in words}


class WordPoolRepository:
    """Reads and writes `word_pool`, keyed by (space, channel, word)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self,
        space: str,
        channel_id: int,
        words: Sequence[str],
        *,
        keep: int,
        at: str | None = None,
        authored: Sequence[tuple[str, str]] = (),
        from_messages: Sequence[int] = (),
    ) -> bool:
        """Count `words` for the channel (one entry per case-folded word), then keep only its
        `keep` most recently seen words; False (nothing added) when one of the stored messages
        they came from was erased.

        `authored`: (word, author id) pairs, who brought which word (an erase takes them)."""
        if not words:
            return True
        now = at or utcnow()
        async with self._db.transaction() as conn:
            await hold_against_erase(conn, space)
            if from_messages and await _any_erased(conn, space, from_messages):
                return False
            await ensure_space_row(conn, space)
            entry = _one_spelling(words, await _spellings(conn, space, channel_id))
            counts = Counter(entry[word] for word in words)
            authored = [(entry.get(word, word), author) for word, author in authored]
            await conn.executemany(
                "INSERT INTO word_pool (space_id, channel_id, word, count, last_seen) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(space_id, channel_id, word) DO UPDATE SET "
                "count = word_pool.count + excluded.count, last_seen = excluded.last_seen",
                [(space, channel_id, word, count, now) for word, count in counts.items()],
            )
            await conn.executemany(
                "INSERT INTO word_pool_authors (space_id, channel_id, word, author_id) "
                "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [(space, channel_id, word, author) for word, author in sorted(set(authored))],
            )
            await conn.execute(
                "DELETE FROM word_pool WHERE space_id = ? AND channel_id = ? AND word NOT IN ("
                "SELECT word FROM word_pool WHERE space_id = ? AND channel_id = ? "
                "ORDER BY last_seen DESC, count DESC, word LIMIT ?)",
                (space, channel_id, space, channel_id, max(0, keep)),
            )
            await _drop_orphan_authors(conn, space, channel_id)
        return True

    async def words(self, space: str, channel_id: int) -> list[PoolWord]:
        """The channel's pool, most recently seen first."""
        rows = await self._db.fetchall(
            "SELECT word, count, last_seen FROM word_pool WHERE space_id = ? AND channel_id = ? "
            "ORDER BY last_seen DESC, count DESC, word",
            (space, channel_id),
        )
        return [
            PoolWord(str(row["word"]), int(row["count"]), str(row["last_seen"])) for row in rows
        ]

    async def snapshot(self, scope: SpaceScope, limit: int = 200) -> list[PoolWord]:
        """The most recently seen words of `scope` across its channels (admin view)."""
        where, params = in_space(scope)
        rows = await self._db.fetchall(
            f"SELECT word, SUM(count) AS count, MAX(last_seen) AS last_seen FROM word_pool "
            f"WHERE {where} GROUP BY word ORDER BY last_seen DESC, count DESC, word LIMIT ?",
            (*params, limit),
        )
        return [
            PoolWord(str(row["word"]), int(row["count"]), str(row["last_seen"])) for row in rows
        ]

    async def clear(self, space: str, channel_id: int) -> int:
        """Forget a channel's pool; returns how many words went."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM word_pool WHERE space_id = ? AND channel_id = ?", (space, channel_id)
            )
            await _drop_orphan_authors(conn, space, channel_id)
            return cursor.rowcount
