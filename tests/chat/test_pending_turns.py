"""The summariser leaves queued turns alone (issue 31): a message whose turn has not ended, and
everything after it, stays live; the summary waits for a full half of answered messages."""

from __future__ import annotations

import asyncio

from bot.chat.engine import TurnRequest
from bot.chat.pending import PendingTurns
from bot.config import Settings
from bot.services import ServiceOptions, Services, open_services
from bot.turn.events import DoneEvent, ErrorEvent, Event
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, HttpError, Text


def test_pending_turns_track_the_oldest_message_per_conversation() -> None:
    pending = PendingTurns()
    assert pending.oldest(LOCAL, "s") is None
    pending.add(LOCAL, "s", 7)
    pending.add(LOCAL, "s", 5)
    pending.add("guild:1", "s", 3)
    assert pending.oldest(LOCAL, "s") == 5 and pending.oldest("guild:1", "s") == 3
    pending.done(LOCAL, "s", 5)
    assert pending.oldest(LOCAL, "s") == 7
    pending.done(LOCAL, "s", 7)
    pending.done(LOCAL, "s", 7)  # a second end is harmless
    assert pending.oldest(LOCAL, "s") is None and len(pending) == 1


async def test_summary_waits_until_the_oldest_half_is_answered(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    settings: Settings = make_settings(memory_summarize_threshold=4)
    async with open_services(settings, service_options) as services:
        repos, pending = services.repos, services.engine.pending
        session = await repos.sessions.create(LOCAL, title="burst")
        questions = [await repos.messages.add(LOCAL, session.id, "user", f"q{n}") for n in range(4)]
        for question in questions:
            pending.add(LOCAL, session.id, question.id)

        assert await services.summarizer.maybe_summarize(LOCAL, session.id) == []
        assert llm.chat_requests == [], "nothing answered: nothing to summarise"

        await repos.messages.add(LOCAL, session.id, "assistant", "a0", reply_to=questions[0].id)
        assert await services.summarizer.maybe_summarize(LOCAL, session.id) == [], (
            "q0 is still pending until its turn ends"
        )
        pending.done(LOCAL, session.id, questions[0].id)
        llm.script(Text("SUMMARY q0"))
        [memory] = await services.summarizer.maybe_summarize(LOCAL, session.id)

        every = await repos.messages.all_for_session(LOCAL, session.id)
        archived = [m.content for m in every if m.archived_at is not None]
        assert archived == ["q0", "a0"] and memory.summary == "SUMMARY q0"
        live = [m.content for m in every if m.archived_at is None]
        assert live == ["q1", "q2", "q3"], "the queued turns' messages stay live"


async def test_messages_after_the_newest_answer_wait_even_if_pending_elsewhere(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    # Another process (a second shard, one killed mid-burst) stored q1..q4: this process's
    # pending turns do not name them, the database says they are not answered.
    async with open_services(make_settings(memory_summarize_threshold=6), service_options) as sv:
        messages = sv.repos.messages
        session = await sv.repos.sessions.create(LOCAL, title="burst")
        questions = [await messages.add(LOCAL, session.id, "user", f"q{n}") for n in range(5)]
        await messages.add(LOCAL, session.id, "assistant", "a0", reply_to=questions[0].id)
        assert await messages.first_unanswered(LOCAL, session.id) == questions[1].id

        assert await sv.summarizer.maybe_summarize(LOCAL, session.id) == []
        assert llm.chat_requests == [], "two answered messages are less than half of six"

        await messages.add(LOCAL, session.id, "assistant", "a2", reply_to=questions[2].id)
        assert await messages.first_unanswered(LOCAL, session.id) == questions[3].id
        llm.script(Text("SUMMARY"))
        assert len(await sv.summarizer.maybe_summarize(LOCAL, session.id)) == 1
        every = await messages.all_for_session(LOCAL, session.id)
        archived = [m.content for m in every if m.archived_at is not None]
        assert archived == ["q0", "a0", "q1"], "q1's turn failed: a later one was answered"


async def test_a_turn_is_pending_from_storing_to_its_end_whatever_the_end(
    services: Services, llm: FakeLLMServer
) -> None:
    pending = services.engine.pending
    session = await services.repos.sessions.create(LOCAL, title="t")
    llm.script(Text("slow answer", chunks=3, delay=0.1), HttpError(400, "bad request"))
    first = asyncio.create_task(_run(services, "first", session.id))
    await llm.wait_for_requests(1, timeout=30)  # LiteLLM imports on first use
    [stored] = await services.repos.messages.all_for_session(LOCAL, session.id)
    assert pending.oldest(LOCAL, session.id) == stored.id, "pending while it is answered"
    assert isinstance((await first)[-1], DoneEvent)
    assert len(pending) == 0, "answered: no longer pending"

    failed = await _run(services, "second", session.id)
    assert isinstance(failed[-1], ErrorEvent)
    assert len(pending) == 0, "a failed turn ends too"


async def _run(services: Services, text: str, session_id: str) -> list[Event]:
    request = TurnRequest(text, session_id, space_id=LOCAL)
    return [event async for event in services.engine.run_turn(request)]
