"""Which Discord shards this process serves, and so which spaces its background work touches.

Discord routes a server's events to shard `(guild_id >> 22) % shard_count` and direct messages
to shard 0. A process started with SHARD_COUNT and SHARD_IDS receives only its shards' events;
its background work (topic jobs, retention purges) must keep to the same servers, or two
processes sharing one database would each do it. Local spaces (terminal, admin chat) belong
to the process that owns shard 0. Without SHARD_COUNT one process owns everything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.store.spaces import parse_space


def shard_of(guild_id: int | None, shard_count: int) -> int:
    """The shard Discord routes a server's events to; DMs (no server) go to shard 0."""
    if shard_count < 1:
        raise ValueError("shard_count must be at least 1")
    return 0 if guild_id is None else (int(guild_id) >> 22) % shard_count


@dataclass(frozen=True)
class ShardFilter:
    """The shards of this process: `count` None means unsharded (every server is ours)."""

    count: int | None = None
    ids: frozenset[int] = frozenset()

    @classmethod
    def of(cls, count: int | None, ids: Iterable[int] = ()) -> ShardFilter:
        """The filter for SHARD_COUNT and SHARD_IDS (no ids: every shard of `count`)."""
        chosen = frozenset(ids)
        if count is None:
            if chosen:
                raise ValueError("shard ids need a shard count")
            return cls()
        if count < 1 or any(not 0 <= i < count for i in chosen):
            raise ValueError(f"shard ids must be below the shard count {count}")
        return cls(count, chosen or frozenset(range(count)))

    @property
    def sharded(self) -> bool:
        """Whether this process serves a subset of shards (SHARD_COUNT set)."""
        return self.count is not None

    @property
    def owns_local(self) -> bool:
        """Local spaces and DMs are served by the process that owns shard 0."""
        return self.count is None or 0 in self.ids

    def owns_guild(self, guild_id: int | None) -> bool:
        """Whether this process serves the server `guild_id` (None: a DM, shard 0)."""
        return self.count is None or shard_of(guild_id, self.count) in self.ids

    def owns_space(self, space_id: str) -> bool:
        """Whether this process does the background work of the space `space_id`."""
        if self.count is None:
            return True
        space = parse_space(space_id)
        if space.kind == "guild":
            return self.owns_guild(space.discord_id)
        return self.owns_local

    def describe(self) -> str:
        """For logs: "all shards" or "shards 0, 2 of 4"."""
        if self.count is None:
            return "all shards"
        return f"shards {', '.join(str(i) for i in sorted(self.ids))} of {self.count}"
