"""A summary being written while a member is erased cannot bring their text back, on both
engines: the real summariser over the loopback LLM reads the member's messages, the erase runs
before it stores the summary, and the summary is dropped; PostgreSQL's concurrent transactions
wait for one another. The summary made afterwards is made from the placeholders only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass

import pytest

from bot.chat.summarize import Summarizer
from bot.llm.gateway import LLMGateway, RetryPolicy
from bot.memory.member_memory import ERASED_PLACEHOLDER, MemberMemory
from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.erase.member_erase import erase_member
from bot.store.erase.operations import MemberErasure
from bot.store.repos.memories import Memory, MemoryRepository
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Text

A = "guild:1"
X, Y = "111", "222"
SECRET = "Mochi-Kinako"
KEPT = "Hokkaido-Ramen"


class HeldMemories(MemoryRepository):
    """The real repository, holding a summary's write until the test lets it go."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.reached = asyncio.Event()
        self.release = asyncio.Event()

    async def summarize_messages(
        self,
        space: str,
        session_id: str,
        message_ids: Sequence[int],
        summary: str,
        *,
        written_from: Mapping[int, str] | None = None,
    ) -> Memory | None:
        self.reached.set()
        await self.release.wait()
        return await super().summarize_messages(
            space, session_id, message_ids, summary, written_from=written_from
        )


@dataclass
class World:
    db: Database
    repos: Repositories
    memories: HeldMemories
    summarizer: Summarizer
    members: MemberMemory
    llm: FakeLLMServer
    thread: str


@pytest.fixture
async def world(
    database_url: str, llm: FakeLLMServer, make_settings: SettingsFactory
) -> AsyncIterator[World]:
    settings = make_settings(memory_summarize_threshold=4)
    db = await Database.connect(database_url)
    gateway = LLMGateway(lambda: settings, retry=RetryPolicy(attempts=1))
    try:
        repos = Repositories.over(db)
        memories = HeldMemories(db)
        summarizer = Summarizer(lambda: settings, gateway, repos.messages, memories)
        thread = (await repos.sessions.create(A, title="pets")).id
        yield World(
            db,
            repos,
            memories,
            summarizer,
            MemberMemory(repos.member_facts, MemberErasure(db)),
            llm,
            thread,
        )
    finally:
        await gateway.close()
        await db.close()


async def _say(w: World, author: str, text: str) -> list[int]:
    asked = await w.repos.messages.add(
        A, w.thread, "user", text, author_id=author, author_name=f"user{author}"
    )
    answer = await w.repos.messages.add(A, w.thread, "assistant", "I see.", reply_to=asked.id)
    return [asked.id, answer.id]


def _summary_of(request: RecordedRequest) -> Text:
    """The model's summary: the transcript it was sent, word for word."""
    return Text(str(request.messages[-1]["content"]), chunks=1)


async def _summaries(w: World) -> list[str]:
    return [m.summary for m in await w.repos.memories.all_for_session(A, w.thread)]


async def test_a_summary_written_from_erased_messages_is_not_stored(world: World) -> None:
    w = world
    await _say(w, X, f"my cat is {SECRET}")
    await _say(w, Y, f"I like {KEPT}")
    w.llm.script(_summary_of, _summary_of)

    summarising = asyncio.create_task(w.summarizer.maybe_summarize(A, w.thread))
    await w.memories.reached.wait()
    # The model has summarised X's words; the erase runs before the summary is stored.
    [read] = w.llm.chat_requests
    assert SECRET in str(read.messages[-1]["content"])
    await w.members.erase(A, X)
    w.memories.release.set()

    assert await summarising == []
    assert await _summaries(w) == []
    assert await w.repos.messages.count_live(A, w.thread) == 4, "nothing was archived"

    # The next summary (the erase asks for one) is made of the placeholders: the model never
    # sees the erased text again.
    [again] = await w.summarizer.maybe_summarize(A, w.thread)
    request = w.llm.chat_requests[-1]
    assert SECRET not in request.body.decode()
    assert f"user{X}: {ERASED_PLACEHOLDER}" in again.summary
    assert not [s for s in await _summaries(w) if SECRET in s]


async def test_concurrent_transactions_wait_for_the_erase(world: World) -> None:
    w = world
    if w.db.dialect != "postgresql":
        pytest.skip("SQLite has one writer: its transactions never overlap")
    said = await _say(w, X, f"my cat is {SECRET}") + await _say(w, Y, f"I like {KEPT}")
    read = {m.id: m.content for m in await w.repos.messages.oldest_live(A, w.thread, 4)}
    w.memories.release.set()

    async with w.db.transaction() as conn:
        await erase_member(conn, A, X, X, ERASED_PLACEHOLDER)
        writing = asyncio.create_task(
            w.memories.summarize_messages(
                A, w.thread, said, f"X's cat is {SECRET}", written_from=read
            )
        )
        await _until_one_waits_for_a_lock(w.db)
    assert await writing is None
    assert await _summaries(w) == []


async def test_a_condensing_that_overlaps_the_erase_is_dropped(world: World) -> None:
    w = world
    if w.db.dialect != "postgresql":
        pytest.skip("SQLite has one writer: its transactions never overlap")
    w.memories.release.set()
    theirs = await w.memories.summarize_messages(
        A, w.thread, await _say(w, X, f"my cat is {SECRET}"), f"X's cat is {SECRET}"
    )
    mine = await w.memories.summarize_messages(
        A, w.thread, await _say(w, Y, f"I like {KEPT}"), f"Y likes {KEPT}"
    )
    assert theirs is not None and mine is not None

    async with w.db.transaction() as conn:
        await erase_member(conn, A, X, X, ERASED_PLACEHOLDER)
        condensing = asyncio.create_task(
            w.memories.condense(
                A, w.thread, [theirs.id, mine.id], f"X's cat {SECRET}; Y: {KEPT}", 1
            )
        )
        await _until_one_waits_for_a_lock(w.db)
    assert await condensing is None
    assert await _summaries(w) == [f"Y likes {KEPT}"]


async def _until_one_waits_for_a_lock(db: Database) -> None:
    """Until another connection of this database waits for a lock (the summary's write)."""
    async with asyncio.timeout(10):
        while not await db.scalar(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"
        ):
            await asyncio.sleep(0.01)
