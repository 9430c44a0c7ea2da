"""Per-channel topic settings (idle chats, periodic posts) and the posts made."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from bot.errors import ConflictError
from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Row
from bot.store.repos.space_records import ensure_space_row
from bot.store.spaces import SpaceScope, in_space


@dataclass(frozen=True)
class TopicChannel:
    """How and when the bot may start conversations in one channel (of one space)."""

    channel_id: int
    space_id: str
    guild_id: int | None
    enabled: bool
    idle_minutes: int
    check_interval_minutes: int
    active_start: str
    active_end: str
    timezone: str
    max_posts_per_day: int
    cron: str | None
    language: str | None
    persona: str
    last_human_at: str | None
    updated_at: str


@dataclass(frozen=True)
class TopicPost:
    """A conversation opener the bot posted."""

    id: int
    space_id: str
    channel_id: int
    kind: str
    topic: str
    words: list[str]
    content: str
    discord_message_id: int | None
    posted_at: str
    answered_at: str | None = None


@dataclass(frozen=True)
class AnswerCounts:
    """A channel's openers: how many were posted, answered within their window, and how many
    are still in it unanswered."""

    sent: int
    answered: int
    waiting: int


EDITABLE = frozenset(
    {
        "guild_id",
        "enabled",
        "idle_minutes",
        "check_interval_minutes",
        "active_start",
        "active_end",
        "timezone",
        "max_posts_per_day",
        "cron",
        "language",
        "persona",
    }
)
_CHANNEL_COLUMNS = ", ".join(f.name for f in fields(TopicChannel))
_POST_COLUMNS = (
    "id, space_id, channel_id, kind, topic, words_json, content, discord_message_id, posted_at, "
    "answered_at"
)


def _channel(row: Row) -> TopicChannel:
    values: dict[str, Any] = {key: row[key] for key in row.keys()}  # noqa: SIM118
    values["enabled"] = bool(values["enabled"])
    return TopicChannel(**values)


def _post(row: Row) -> TopicPost:
    return TopicPost(
        id=row["id"],
        space_id=row["space_id"],
        channel_id=row["channel_id"],
        kind=row["kind"],
        topic=row["topic"],
        words=json.loads(row["words_json"]),
        content=row["content"],
        discord_message_id=row["discord_message_id"],
        posted_at=row["posted_at"],
        answered_at=row["answered_at"],
    )


class TopicRepository:
    """Reads and writes the topic_channels and topic_posts of a space."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, scope: SpaceScope, channel_id: int) -> TopicChannel | None:
        """Settings of one channel of `scope`, if configured (ALL_SPACES: any space)."""
        where, params = in_space(scope)
        row = await self._db.fetchone(
            f"SELECT {_CHANNEL_COLUMNS} FROM topic_channels WHERE {where} AND channel_id = ?",
            (*params, channel_id),
        )
        return None if row is None else _channel(row)

    async def channels(
        self, scope: SpaceScope, *, enabled_only: bool = False
    ) -> list[TopicChannel]:
        """Every configured channel of `scope` (or only the enabled ones)."""
        where, params = in_space(scope)
        if enabled_only:
            where += " AND enabled = 1"
        rows = await self._db.fetchall(
            f"SELECT {_CHANNEL_COLUMNS} FROM topic_channels WHERE {where} ORDER BY channel_id",
            params,
        )
        return [_channel(row) for row in rows]

    async def upsert(
        self, space: str, channel_id: int, changes: dict[str, Any], *, now: str | None = None
    ) -> TopicChannel:
        """Create or update a channel's settings (only editable keys).

        ConflictError when the channel is configured in another space.
        """
        unknown = set(changes) - EDITABLE
        if unknown:
            raise ValueError(f"not editable: {', '.join(sorted(unknown))}")
        now = now or utcnow()
        async with self._db.transaction() as conn:
            await ensure_space_row(conn, space)
            await conn.execute(
                "INSERT INTO topic_channels (channel_id, space_id, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT(channel_id) DO NOTHING",
                (channel_id, space, now),
            )
            owner = list(
                await conn.execute_fetchall(
                    "SELECT space_id FROM topic_channels WHERE channel_id = ?", (channel_id,)
                )
            )
            if owner[0][0] != space:
                raise ConflictError(f"Channel {channel_id} is configured in another space.")
            if changes:
                assignments = ", ".join(f"{key} = ?" for key in changes)
                await conn.execute(
                    f"UPDATE topic_channels SET {assignments}, updated_at = ? "
                    "WHERE space_id = ? AND channel_id = ?",
                    (*changes.values(), now, space, channel_id),
                )
        channel = await self.get(space, channel_id)
        assert channel is not None
        return channel

    async def record_human_activity(self, space: str, channel_id: int, at: str) -> None:
        """Remember when a person last wrote in a configured channel."""
        await self._db.execute(
            "UPDATE topic_channels SET last_human_at = ? WHERE space_id = ? AND channel_id = ? "
            "AND (last_human_at IS NULL OR last_human_at < ?)",
            (at, space, channel_id, at),
        )

    async def add_post(
        self,
        space: str,
        channel_id: int,
        *,
        kind: str,
        topic: str,
        words: list[str],
        content: str,
        discord_message_id: int | None,
        posted_at: str,
    ) -> int:
        """Record a posted opener."""
        async with self._db.transaction() as conn:
            await ensure_space_row(conn, space)
            return await conn.insert(
                "INSERT INTO topic_posts (space_id, channel_id, kind, topic, words_json, "
                "content, discord_message_id, posted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    space,
                    channel_id,
                    kind,
                    topic,
                    json.dumps(words, ensure_ascii=False),
                    content,
                    discord_message_id,
                    posted_at,
                ),
            )

    async def posts_since(self, space: str, channel_id: int, since: str) -> int:
        """How many openers were posted in the channel at or after `since`."""
        value = await self._db.scalar(
            "SELECT COUNT(*) FROM topic_posts WHERE space_id = ? AND channel_id = ? "
            "AND posted_at >= ?",
            (space, channel_id, since),
        )
        return int(value or 0)

    async def last_post(self, space: str, channel_id: int) -> TopicPost | None:
        """The newest opener of the channel."""
        row = await self._db.fetchone(
            f"SELECT {_POST_COLUMNS} FROM topic_posts WHERE space_id = ? AND channel_id = ? "
            "ORDER BY posted_at DESC, id DESC LIMIT 1",
            (space, channel_id),
        )
        return None if row is None else _post(row)

    async def recent_topics(self, space: str, channel_id: int, limit: int = 10) -> list[str]:
        """Topics of the newest openers, newest first."""
        rows = await self._db.fetchall(
            "SELECT topic FROM topic_posts WHERE space_id = ? AND channel_id = ? "
            "ORDER BY posted_at DESC, id DESC LIMIT ?",
            (space, channel_id, limit),
        )
        return [row["topic"] for row in rows]

    async def post_for_message(self, space: str, discord_message_id: int) -> TopicPost | None:
        """The opener behind a Discord message of the space, if it is one."""
        row = await self._db.fetchone(
            f"SELECT {_POST_COLUMNS} FROM topic_posts WHERE space_id = ? "
            "AND discord_message_id = ?",
            (space, discord_message_id),
        )
        return None if row is None else _post(row)

    async def recent_posts(self, space: str, channel_id: int, limit: int = 20) -> list[TopicPost]:
        """The newest openers of a channel, newest first."""
        rows = await self._db.fetchall(
            f"SELECT {_POST_COLUMNS} FROM topic_posts WHERE space_id = ? AND channel_id = ? "
            "ORDER BY posted_at DESC, id DESC LIMIT ?",
            (space, channel_id, limit),
        )
        return [_post(row) for row in rows]

    async def mark_answered(self, space: str, channel_id: int, at: str, since: str) -> int:
        """A person wrote in the channel `at`: the unanswered openers posted from `since` (the
        reply window's start) up to then are answered; returns how many."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE topic_posts SET answered_at = ? WHERE space_id = ? AND channel_id = ? "
                "AND answered_at IS NULL AND posted_at >= ? AND posted_at <= ?",
                (at, space, channel_id, since, at),
            )
            return int(cursor.rowcount or 0)

    async def answer_counts(self, scope: SpaceScope, open_since: str) -> dict[int, AnswerCounts]:
        """Per channel of `scope`: openers posted, answered, and unanswered but posted at or
        after `open_since` (still in their reply window)."""
        where, params = in_space(scope)
        rows = await self._db.fetchall(
            "SELECT channel_id, COUNT(*) AS sent, COUNT(answered_at) AS answered, "
            "SUM(CASE WHEN answered_at IS NULL AND posted_at >= ? THEN 1 ELSE 0 END) AS waiting "
            f"FROM topic_posts WHERE {where} GROUP BY channel_id",
            (open_since, *params),
        )
        return {
            int(row["channel_id"]): AnswerCounts(
                int(row["sent"]), int(row["answered"]), int(row["waiting"] or 0)
            )
            for row in rows
        }

    async def space_timezone(self, space: str) -> str | None:
        """The space's own time zone (a server's), if one is set."""
        value = await self._db.scalar("SELECT timezone FROM spaces WHERE id = ?", (space,))
        return None if value is None else str(value)
