"""The channel directory: the names of the channels the bot can see in each server's space.

Written by the Discord side (a whole server at once on ready/join, one channel on create,
update and delete); read by the admin API, so that people pick channels by name, not id. The
server's own name is its `spaces` row's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Row
from bot.store.repos.space_records import ensure_space_row
from bot.store.spaces import SpaceScope, in_space, parse_space

MAX_NAME_CHARS = 100


@dataclass(frozen=True)
class DirectoryChannel:
    """One channel of a server as the bot saw it last."""

    channel_id: int
    space_id: str
    name: str
    kind: str
    parent_id: int | None
    position: int
    updated_at: str


@dataclass(frozen=True)
class DirectoryServer:
    """A server (guild) with its channels, in position order."""

    space_id: str
    guild_id: int
    name: str
    left_at: str | None
    channels: list[DirectoryChannel]


_COLUMNS = "channel_id, space_id, name, kind, parent_id, position, updated_at"


def _channel(row: Row) -> DirectoryChannel:
    return DirectoryChannel(**{key: row[key] for key in row.keys()})  # noqa: SIM118


def _row(space: str, channel: ChannelSeen, now: str) -> tuple[object, ...]:
    return (
        channel.channel_id,
        space,
        channel.name[:MAX_NAME_CHARS],
        channel.kind,
        channel.parent_id,
        channel.position,
        now,
    )


@dataclass(frozen=True)
class ChannelSeen:
    """A channel as the Discord side reports it."""

    channel_id: int
    name: str
    kind: str
    parent_id: int | None = None
    position: int = 0


_UPSERT = (
    "INSERT INTO directory_channels (channel_id, space_id, name, kind, parent_id, position, "
    "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(channel_id) DO UPDATE SET space_id = excluded.space_id, name = excluded.name, "
    "kind = excluded.kind, parent_id = excluded.parent_id, position = excluded.position, "
    "updated_at = excluded.updated_at"
)


class DirectoryRepository:
    """Reads and writes directory_channels, one server's space at a time."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def replace_server(self, space: str, channels: Iterable[ChannelSeen]) -> None:
        """Make the space's channels exactly `channels` (a server seen whole)."""
        now = utcnow()
        seen = list(channels)
        async with self._db.transaction() as conn:
            await ensure_space_row(conn, space)
            await conn.execute("DELETE FROM directory_channels WHERE space_id = ?", (space,))
            await conn.executemany(_UPSERT, [_row(space, channel, now) for channel in seen])

    async def upsert(self, space: str, channel: ChannelSeen) -> None:
        """Record one created or changed channel."""
        async with self._db.transaction() as conn:
            await ensure_space_row(conn, space)
            await conn.execute(_UPSERT, _row(space, channel, utcnow()))

    async def remove(self, space: str, channel_id: int) -> None:
        """Forget a deleted channel."""
        await self._db.execute(
            "DELETE FROM directory_channels WHERE space_id = ? AND channel_id = ?",
            (space, channel_id),
        )

    async def channels(self, scope: SpaceScope) -> list[DirectoryChannel]:
        """The channels of `scope` (ALL_SPACES: every server's), in position order."""
        where, params = in_space(scope)
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM directory_channels WHERE {where} "
            "ORDER BY space_id, position, channel_id",
            params,
        )
        return [_channel(row) for row in rows]

    async def channels_by_id_all_spaces(self, channel_ids: Iterable[int]) -> list[DirectoryChannel]:
        """These channels, where known, whatever their space (channel ids are unique)."""
        wanted = sorted(set(channel_ids))
        if not wanted:
            return []
        marks = ", ".join("?" for _ in wanted)
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM directory_channels WHERE channel_id IN ({marks})", wanted
        )
        return [_channel(row) for row in rows]

    async def names_all_spaces(self, channel_ids: Iterable[int]) -> dict[int, str]:
        """The names of these channels, where known."""
        return {c.channel_id: c.name for c in await self.channels_by_id_all_spaces(channel_ids)}

    async def servers(self, scope: SpaceScope) -> list[DirectoryServer]:
        """Servers of `scope` the bot knows (named in `spaces`), each with its channels."""
        where, params = in_space(scope, column="id")
        rows = await self._db.fetchall(
            f"SELECT id, name, left_at FROM spaces WHERE kind = 'guild' AND {where} ORDER BY name",
            params,
        )
        by_space: dict[str, list[DirectoryChannel]] = {}
        for channel in await self.channels(scope):
            by_space.setdefault(channel.space_id, []).append(channel)
        return [
            DirectoryServer(
                space_id=row["id"],
                guild_id=int(parse_space(row["id"]).discord_id or 0),
                name=row["name"],
                left_at=row["left_at"],
                channels=by_space.get(row["id"], []),
            )
            for row in rows
        ]
