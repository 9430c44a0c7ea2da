"""The related-memories layer reads a bounded slice of the history on every turn: the newest
matching messages (not every match ranked) and the space's newest summaries (this thread's own
taken out after the window). What it finds there, and that no other space's rows count."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from bot.chat.context import ContextRequest
from bot.chat.layers import RelatedMemoriesLayer
from bot.config import Settings
from bot.memory.recall import RecallService
from bot.store import Repositories
from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database
from bot.store.reads.recall import NEWEST_CANDIDATES, SUMMARY_WINDOW

S = "guild:111"
OTHER = "guild:222"
FACT = "My cat is called Mochi-Kinako"
QUESTION = "What is the name of my cat Mochi-Kinako?"


@dataclass
class World:
    db: Database
    repos: Repositories
    here: str
    there: str

    async def say_many(self, session: str, texts: list[str], space: str = S) -> None:
        """Store `texts` as user messages of `session`, in order."""
        now = utcnow()
        await self.db.executemany(
            "INSERT INTO messages (space_id, session_id, role, content, author_name, "
            "created_at) VALUES (?, ?, 'user', ?, 'Alice', ?)",
            [(space, session, text, now) for text in texts],
        )

    async def summaries(self, session: str, texts: list[str]) -> None:
        """Store `texts` as live summaries of `session`, in order."""
        now = utcnow()
        await self.db.executemany(
            "INSERT INTO memories (space_id, session_id, summary, level, created_at) "
            "VALUES (?, ?, ?, 0, ?)",
            [(S, session, text, now) for text in texts],
        )

    async def related(self, text: str) -> str:
        """The layer's text for a turn of `here` saying `text` ('' when none)."""
        message = await self.repos.messages.add(S, self.here, "user", text, author_name="Bo")
        settings = Settings(_env_file=None, language="en", llm_context_tokens=8192)  # type: ignore[call-arg]
        layer = RelatedMemoriesLayer(RecallService(self.repos.recall))
        draft = await layer.draft(ContextRequest(S, self.here, text, message.id, settings))
        return "" if draft is None else draft.text


@pytest.fixture
async def world(suite_database_url: str) -> AsyncIterator[World]:
    db = await Database.connect(suite_database_url)
    try:
        repos = Repositories.over(db)
        here = (await repos.sessions.create(S, title="Here")).id
        there = (await repos.sessions.create(S, title="Pets")).id
        yield World(db, repos, here, there)
    finally:
        await db.close()


async def test_a_newer_fact_is_found_past_more_weak_matches_than_are_taken(world: World) -> None:
    await world.say_many(
        world.there, [f"cat story number {n}" for n in range(NEWEST_CANDIDATES + 1)]
    )
    await world.say_many(world.there, [FACT])

    text = await world.related(QUESTION)

    assert f"> Alice: {FACT}" in text


async def test_another_spaces_newer_matches_neither_show_nor_crowd_out(world: World) -> None:
    await world.say_many(world.there, [FACT])
    other = (await world.repos.sessions.create(OTHER, title="B")).id
    await world.say_many(other, [f"{FACT} {n}" for n in range(NEWEST_CANDIDATES + 1)], space=OTHER)

    text = await world.related(QUESTION)

    assert f"> Alice: {FACT}" in text
    assert f"{FACT} 0" not in text


async def test_another_threads_summary_within_the_window_is_found_never_this_threads(
    world: World,
) -> None:
    await world.summaries(world.there, [f"- Alice said: {FACT}"])
    await world.summaries(world.here, [f"- this thread: {FACT} again"] * (SUMMARY_WINDOW - 1))

    text = await world.related(QUESTION)

    assert f"> - Alice said: {FACT}" in text
    assert "this thread" not in text


async def test_a_summary_older_than_the_spaces_newest_window_is_not_read(world: World) -> None:
    await world.summaries(world.there, [f"- Alice said: {FACT}"])
    await world.summaries(world.here, [f"- this thread: {FACT} again"] * SUMMARY_WINDOW)

    text = await world.related(QUESTION)

    assert "Alice said" not in text and "this thread" not in text
