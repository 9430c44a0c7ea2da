"""Which session a channel continues (bot/chat/sessions.py), on a real SQLite file, no Discord."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from bot.chat.sessions import ConversationSessions
from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.repos.sessions import Session
from bot.store.repos.topics import TopicPost

THREAD = 1001
GUILD = 77
OPENER = 5005
SPACE = "guild:77"
OTHER = "guild:88"


@dataclass
class World:
    """The service and the repositories it writes to."""

    conversations: ConversationSessions
    repos: Repositories


@pytest.fixture
async def world(suite_database_url: str) -> AsyncIterator[World]:
    """A ConversationSessions over a fresh database."""
    db = await Database.connect(suite_database_url)
    try:
        repos = Repositories.over(db)
        yield World(ConversationSessions(repos.sessions, repos.messages, repos.topics), repos)
    finally:
        await db.close()


async def _opener(world: World, message_id: int, text: str = "Anyone tried the new ramen?") -> None:
    await world.repos.topics.add_post(
        SPACE,
        42,
        kind="idle",
        topic="ramen",
        words=["ramen"],
        content=text,
        discord_message_id=message_id,
        posted_at="2026-01-01T00:00:00+00:00",
    )


async def test_a_channel_gets_one_session_and_keeps_it(world: World) -> None:
    assert await world.conversations.current(SPACE, THREAD) is None
    first = await world.conversations.for_channel(SPACE, THREAD, title="Kyoto trip", guild_id=GUILD)
    again = await world.conversations.for_channel(SPACE, THREAD, title="another title")
    assert again.id == first.id and again.title == "Kyoto trip"
    assert first.discord_channel_id == THREAD and first.discord_guild_id == GUILD
    assert first.source == "discord" and first.topic is None
    assert await world.conversations.current(SPACE, THREAD) == first
    assert await world.repos.messages.all_for_session(SPACE, first.id) == []
    other = await world.conversations.for_channel(SPACE, THREAD + 1, title="DM")
    assert other.id != first.id and other.discord_guild_id is None


async def test_a_thread_on_a_topic_opener_continues_that_topic(world: World) -> None:
    await _opener(world, OPENER)
    # A thread opened on the opener message has the opener's id.
    session = await world.conversations.for_channel(SPACE, OPENER, title="ramen", guild_id=GUILD)
    assert session.topic == "ramen" and session.parent_channel_id == 42
    messages = await world.repos.messages.all_for_session(SPACE, session.id)
    assert [(m.role, m.content) for m in messages] == [("assistant", "Anyone tried the new ramen?")]


async def test_a_reply_to_a_topic_opener_continues_that_topic(world: World) -> None:
    await _opener(world, OPENER, "What are you reading?")
    session = await world.conversations.for_channel(SPACE, THREAD, title="books", reply_to=OPENER)
    assert session.topic == "ramen" and session.discord_channel_id == THREAD
    messages = await world.repos.messages.all_for_session(SPACE, session.id)
    assert [m.content for m in messages] == ["What are you reading?"]
    plain = await world.conversations.for_channel(SPACE, THREAD + 1, title="x", reply_to=OPENER + 1)
    assert plain.topic is None


async def test_reset_binds_a_fresh_session_and_keeps_the_old_one(world: World) -> None:
    old = await world.conversations.for_channel(SPACE, THREAD, title="Kyoto trip", guild_id=GUILD)
    await world.conversations.pin_model(old, "ollama/other-model")
    pinned = await world.conversations.current(SPACE, THREAD)
    assert pinned is not None and pinned.model == "ollama/other-model"
    fresh = await world.conversations.reset(pinned)
    assert fresh.id != old.id
    assert (fresh.title, fresh.model, fresh.discord_guild_id) == (
        "Kyoto trip",
        "ollama/other-model",
        GUILD,
    )
    assert await world.conversations.current(SPACE, THREAD) == fresh
    closed = await world.repos.sessions.get(SPACE, old.id)
    assert closed is not None and closed.closed_at is not None
    await world.conversations.pin_model(fresh, None)
    current = await world.conversations.current(SPACE, THREAD)
    assert current is not None and current.model is None


async def test_sessions_and_openers_stay_in_their_space(world: World) -> None:
    await _opener(world, OPENER)
    elsewhere = await world.conversations.for_channel(OTHER, OPENER, title="x", guild_id=88)
    assert elsewhere.topic is None, "another space's opener is not continued"
    assert await world.repos.messages.all_for_session(OTHER, elsewhere.id) == []
    assert await world.conversations.current(SPACE, OPENER) is None
    thread = await world.conversations.for_channel(
        SPACE, THREAD, title="t", guild_id=GUILD, parent_channel_id=42
    )
    assert (thread.space_id, thread.parent_channel_id, thread.pool_channel_id) == (SPACE, 42, 42)
    fresh = await world.conversations.reset(thread)
    assert (fresh.space_id, fresh.parent_channel_id) == (SPACE, 42)


async def test_a_new_channel_looks_up_only_the_opener_it_replies_to(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _opener(world, OPENER, "What are you reading?")
    looked_up: list[tuple[str, int]] = []
    by_channel, by_message = (
        world.repos.sessions.open_for_channel,
        world.repos.topics.post_for_message,
    )

    async def channel_read(space: str, channel_id: int) -> Session | None:
        looked_up.append(("session", channel_id))
        return await by_channel(space, channel_id)

    async def post_read(space: str, message_id: int) -> TopicPost | None:
        looked_up.append(("opener", message_id))
        return await by_message(space, message_id)

    monkeypatch.setattr(world.repos.sessions, "open_for_channel", channel_read)
    monkeypatch.setattr(world.repos.topics, "post_for_message", post_read)
    plain = await world.conversations.for_channel(
        SPACE, THREAD, title="new", guild_id=GUILD, parent_channel_id=42, new_channel=True
    )
    assert looked_up == []
    assert (plain.discord_channel_id, plain.parent_channel_id, plain.topic) == (THREAD, 42, None)
    replied = await world.conversations.for_channel(
        SPACE, THREAD + 1, title="books", reply_to=OPENER, new_channel=True
    )
    assert looked_up == [("opener", OPENER)]
    assert replied.topic == "ramen" and replied.parent_channel_id == 42
    messages = await world.repos.messages.all_for_session(SPACE, replied.id)
    assert [m.content for m in messages] == ["What are you reading?"]
    # Without the flag the channel is looked up as before (a thread that already existed).
    assert await world.conversations.for_channel(SPACE, THREAD, title="again") == plain
    assert looked_up[1:] == [("session", THREAD)]
