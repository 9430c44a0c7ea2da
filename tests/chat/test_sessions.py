"""Which session a channel continues (bot/chat/sessions.py), on a real SQLite file, no Discord."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.chat.sessions import ConversationSessions
from bot.services import Repositories
from bot.store.db import Database

THREAD = 1001
GUILD = 77
OPENER = 5005


@dataclass
class World:
    """The service and the repositories it writes to."""

    conversations: ConversationSessions
    repos: Repositories


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    """A ConversationSessions over a fresh database."""
    db = await Database.open(tmp_path / "sessions.db")
    try:
        repos = Repositories.over(db)
        yield World(ConversationSessions(repos.sessions, repos.messages, repos.topics), repos)
    finally:
        await db.close()


async def _opener(world: World, message_id: int, text: str = "Anyone tried the new ramen?") -> None:
    await world.repos.topics.add_post(
        42,
        kind="idle",
        topic="ramen",
        words=["ramen"],
        content=text,
        discord_message_id=message_id,
        posted_at="2026-01-01T00:00:00+00:00",
    )


async def test_a_channel_gets_one_session_and_keeps_it(world: World) -> None:
    assert await world.conversations.current(THREAD) is None
    first = await world.conversations.for_channel(THREAD, title="Kyoto trip", guild_id=GUILD)
    again = await world.conversations.for_channel(THREAD, title="another title")
    assert again.id == first.id and again.title == "Kyoto trip"
    assert first.discord_channel_id == THREAD and first.discord_guild_id == GUILD
    assert first.source == "discord" and first.topic is None
    assert await world.conversations.current(THREAD) == first
    assert await world.repos.messages.all_for_session(first.id) == []
    other = await world.conversations.for_channel(THREAD + 1, title="DM")
    assert other.id != first.id and other.discord_guild_id is None


async def test_a_thread_on_a_topic_opener_continues_that_topic(world: World) -> None:
    await _opener(world, OPENER)
    # A thread opened on the opener message has the opener's id.
    session = await world.conversations.for_channel(OPENER, title="ramen", guild_id=GUILD)
    assert session.topic == "ramen"
    messages = await world.repos.messages.all_for_session(session.id)
    assert [(m.role, m.content) for m in messages] == [("assistant", "Anyone tried the new ramen?")]


async def test_a_reply_to_a_topic_opener_continues_that_topic(world: World) -> None:
    await _opener(world, OPENER, "What are you reading?")
    session = await world.conversations.for_channel(THREAD, title="books", reply_to=OPENER)
    assert session.topic == "ramen" and session.discord_channel_id == THREAD
    messages = await world.repos.messages.all_for_session(session.id)
    assert [m.content for m in messages] == ["What are you reading?"]
    plain = await world.conversations.for_channel(THREAD + 1, title="x", reply_to=OPENER + 1)
    assert plain.topic is None


async def test_reset_binds_a_fresh_session_and_keeps_the_old_one(world: World) -> None:
    old = await world.conversations.for_channel(THREAD, title="Kyoto trip", guild_id=GUILD)
    await world.conversations.pin_model(old, "ollama/other-model")
    pinned = await world.conversations.current(THREAD)
    assert pinned is not None and pinned.model == "ollama/other-model"
    fresh = await world.conversations.reset(pinned)
    assert fresh.id != old.id
    assert (fresh.title, fresh.model, fresh.discord_guild_id) == (
        "Kyoto trip",
        "ollama/other-model",
        GUILD,
    )
    assert await world.conversations.current(THREAD) == fresh
    closed = await world.repos.sessions.get(old.id)
    assert closed is not None and closed.closed_at is not None
    await world.conversations.pin_model(fresh, None)
    current = await world.conversations.current(THREAD)
    assert current is not None and current.model is None
