"""Chat sessions: one per Discord thread/DM (until reset), terminal chat or API client."""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import dataclass

from bot.store.db import Database, utcnow


@dataclass(frozen=True)
class Session:
    """A conversation."""

    id: str
    title: str
    model: str | None
    source: str
    discord_channel_id: int | None
    discord_guild_id: int | None
    topic: str | None
    closed_at: str | None
    created_at: str
    updated_at: str


_COLUMNS = (
    "id, title, model, source, discord_channel_id, discord_guild_id, topic, closed_at, "
    "created_at, updated_at"
)


def _session(row: sqlite3.Row) -> Session:
    return Session(**{key: row[key] for key in row.keys()})  # noqa: SIM118 - Row has no iter of keys


class SessionRepository:
    """Creates, finds and lists sessions."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(
        self,
        *,
        title: str = "",
        source: str = "terminal",
        model: str | None = None,
        discord_channel_id: int | None = None,
        discord_guild_id: int | None = None,
        topic: str | None = None,
        session_id: str | None = None,
        created_at: str | None = None,
    ) -> Session:
        """Insert a new session and return it."""
        now = created_at or utcnow()
        session = Session(
            id=session_id or uuid.uuid4().hex,
            title=title,
            model=model,
            source=source,
            discord_channel_id=discord_channel_id,
            discord_guild_id=discord_guild_id,
            topic=topic,
            closed_at=None,
            created_at=now,
            updated_at=now,
        )
        await self._db.execute(
            f"INSERT INTO sessions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session.id,
                session.title,
                session.model,
                session.source,
                session.discord_channel_id,
                session.discord_guild_id,
                session.topic,
                None,
                session.created_at,
                session.updated_at,
            ),
        )
        return session

    async def get(self, session_id: str) -> Session | None:
        """The session with this id, if any."""
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
        )
        return None if row is None else _session(row)

    async def open_for_channel(self, channel_id: int) -> Session | None:
        """The current (not reset) session bound to a Discord thread or DM channel."""
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM sessions WHERE discord_channel_id = ? AND closed_at IS NULL "
            "ORDER BY created_at DESC LIMIT 1",
            (channel_id,),
        )
        return None if row is None else _session(row)

    async def close(self, session_id: str) -> None:
        """Mark a session as closed (e.g. `/reset`): kept for history, no longer current."""
        now = utcnow()
        await self._db.execute(
            "UPDATE sessions SET closed_at = ?, updated_at = ? WHERE id = ?",
            (now, now, session_id),
        )

    async def set_model(self, session_id: str, model: str | None) -> None:
        """Pin a model for this session (None: follow the configured default)."""
        await self._db.execute(
            "UPDATE sessions SET model = ?, updated_at = ? WHERE id = ?",
            (model, utcnow(), session_id),
        )

    async def list(self, *, limit: int = 50, before: str | None = None) -> list[Session]:
        """Sessions, most recently active first; `before` pages by updated_at."""
        if before is None:
            rows = await self._db.fetchall(
                f"SELECT {_COLUMNS} FROM sessions ORDER BY updated_at DESC LIMIT ?", (limit,)
            )
        else:
            rows = await self._db.fetchall(
                f"SELECT {_COLUMNS} FROM sessions WHERE updated_at < ? "
                "ORDER BY updated_at DESC LIMIT ?",
                (before, limit),
            )
        return [_session(row) for row in rows]

    async def delete(self, session_id: str) -> bool:
        """Delete a session and everything that belongs to it."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            return cursor.rowcount > 0
