"""Which turns a restart cut off: the last message of a Discord conversation of this
process's shards, from a user, shortly before the start; each told once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.chat.interrupted import WINDOW, close_interrupted, find_interrupted
from bot.store.engine.database import Database
from bot.store.repos.messages import MessageRepository
from bot.store.repos.sessions import SessionRepository
from bot.store.repos.space_records import SpaceRepository
from bot.store.shards import ShardFilter

# Guild ids on shard 0 and shard 1 of 2 ((id >> 22) % 2).
GUILD_0 = 4 << 22
GUILD_1 = 5 << 22
START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _at(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


async def test_only_recent_unanswered_last_messages_of_own_shards_are_found_and_told_once(
    database_url: str,
) -> None:
    db = await Database.connect(database_url)
    try:
        sessions, messages = SessionRepository(db), MessageRepository(db)
        spaces = SpaceRepository(db)
        ids = iter(range(1000, 2000))

        async def conversation(guild: int, *turns: tuple[str, timedelta]) -> list[int]:
            space = f"guild:{guild}"
            await spaces.ensure(space)
            channel = next(ids)
            session = await sessions.create(
                space, source="discord", discord_channel_id=channel, discord_guild_id=guild
            )
            stored = []
            for role, before in turns:
                message = await messages.add(
                    space,
                    session.id,
                    role,
                    f"{role} text",
                    discord_message_id=next(ids) if role == "user" else None,
                    created_at=_at(START - before),
                )
                stored.append(message.id)
            return stored

        minute = timedelta(minutes=1)
        cut = await conversation(
            GUILD_1, ("user", 3 * minute), ("assistant", 2 * minute), ("user", minute)
        )
        answered = await conversation(GUILD_1, ("user", 2 * minute), ("assistant", minute))
        old = await conversation(GUILD_1, ("user", WINDOW + minute))
        other_shard = await conversation(GUILD_0, ("user", minute))
        after_start = await conversation(GUILD_1, ("user", -minute))
        assert answered and old and other_shard and after_start

        owned = ShardFilter.of(2, [1]).owns_space
        found = await find_interrupted(MessageRepository(db), owned, START)
        assert [t.message_id for t in found] == [cut[-1]]
        posted: list[tuple[int, str]] = []

        async def post(channel_id: int, text: str) -> None:
            posted.append((channel_id, text))

        assert await close_interrupted(found, messages, "restarted", post) == 1
        assert posted == [(found[0].channel_id, "restarted")]
        # Told once: the notice is now the conversation's last message.
        assert (
            await find_interrupted(MessageRepository(db), owned, START + timedelta(seconds=1)) == []
        )
        answer = await messages.recent_live(found[0].space_id, found[0].session_id, 1)
        assert answer[0].reply_to == cut[-1] and answer[0].content == "restarted"
        # Process 0 (shard 0) finds its own only.
        found_0 = await find_interrupted(
            MessageRepository(db), ShardFilter.of(2, [0]).owns_space, START
        )
        assert [t.message_id for t in found_0] == other_shard
    finally:
        await db.close()
