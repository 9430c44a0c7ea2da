"""Chat sessions: one per Discord thread/DM (until reset), terminal chat or API client."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from bot.store.engine.connection import Statement, utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Row
from bot.store.repos.space_records import space_row_statement
from bot.store.spaces import SpaceScope, in_space


@dataclass(frozen=True)
class Session:
    """A conversation, in one space.

    `parent_channel_id` is the channel a Discord thread hangs off (its topic pool).
    """

    id: str
    space_id: str
    title: str
    model: str | None
    source: str
    discord_channel_id: int | None
    discord_guild_id: int | None
    parent_channel_id: int | None
    topic: str | None
    closed_at: str | None
    created_at: str
    updated_at: str

    @property
    def pool_channel_id(self) -> int | None:
        """The channel whose word pool and tags this conversation feeds (parent, else own)."""
        return (
            self.parent_channel_id
            if self.parent_channel_id is not None
            else (self.discord_channel_id)
        )


_COLUMNS = (
    "id, space_id, title, model, source, discord_channel_id, discord_guild_id, "
    "parent_channel_id, topic, closed_at, created_at, updated_at"
)


def _session(row: Row) -> Session:
    return Session(**{key: row[key] for key in row.keys()})  # noqa: SIM118 - Row has no iter of keys


class SessionRepository:
    """Creates, finds and lists the sessions of a space."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(
        self,
        space: str,
        *,
        title: str = "",
        source: str = "terminal",
        model: str | None = None,
        discord_channel_id: int | None = None,
        discord_guild_id: int | None = None,
        parent_channel_id: int | None = None,
        topic: str | None = None,
        session_id: str | None = None,
        created_at: str | None = None,
    ) -> Session:
        """Insert a new session in `space` (its `spaces` row is created if missing)."""
        now = created_at or utcnow()
        session = Session(
            id=session_id or uuid.uuid4().hex,
            space_id=space,
            title=title,
            model=model,
            source=source,
            discord_channel_id=discord_channel_id,
            discord_guild_id=discord_guild_id,
            parent_channel_id=parent_channel_id,
            topic=topic,
            closed_at=None,
            created_at=now,
            updated_at=now,
        )
        await self._db.write_batch(
            [
                space_row_statement(space),
                Statement(
                    f"INSERT INTO sessions ({_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        session.id,
                        session.space_id,
                        session.title,
                        session.model,
                        session.source,
                        session.discord_channel_id,
                        session.discord_guild_id,
                        session.parent_channel_id,
                        session.topic,
                        None,
                        session.created_at,
                        session.updated_at,
                    ),
                ),
            ]
        )
        return session

    async def get(self, scope: SpaceScope, session_id: str) -> Session | None:
        """The session with this id, if it is in `scope` (ALL_SPACES: the operator's view)."""
        where, params = in_space(scope)
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM sessions WHERE {where} AND id = ?", (*params, session_id)
        )
        return None if row is None else _session(row)

    async def open_for_channel(self, space: str, channel_id: int) -> Session | None:
        """The current (not reset) session bound to a Discord thread or DM channel."""
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM sessions WHERE space_id = ? AND discord_channel_id = ? "
            "AND closed_at IS NULL ORDER BY created_at DESC LIMIT 1",
            (space, channel_id),
        )
        return None if row is None else _session(row)

    async def close(self, space: str, session_id: str) -> None:
        """Mark a session as closed (e.g. `/reset`): kept for history, no longer current."""
        now = utcnow()
        await self._db.execute(
            "UPDATE sessions SET closed_at = ?, updated_at = ? WHERE space_id = ? AND id = ?",
            (now, now, space, session_id),
        )

    async def set_model(self, space: str, session_id: str, model: str | None) -> None:
        """Pin a model for this session (None: follow the space's or the global default)."""
        await self._db.execute(
            "UPDATE sessions SET model = ?, updated_at = ? WHERE space_id = ? AND id = ?",
            (model, utcnow(), space, session_id),
        )

    async def delete(self, space: str, session_id: str) -> bool:
        """Delete a session and everything that belongs to it."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM sessions WHERE space_id = ? AND id = ?", (space, session_id)
            )
            return cursor.rowcount > 0

    async def list(
        self, scope: SpaceScope, *, limit: int = 50, before: str | None = None
    ) -> list[Session]:
        """Sessions of `scope`, most recently active first; `before` pages by updated_at."""
        where, params = in_space(scope)
        if before is not None:
            where += " AND updated_at < ?"
            params = (*params, before)
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM sessions WHERE {where} ORDER BY updated_at DESC LIMIT ?",
            (*params, limit),
        )
        return [_session(row) for row in rows]
