"""A member's rapid messages are one turn (issue 39): typing makes a message wait for the next,
a next message before the answer shows restarts the turn, other members keep their order."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from bot.chat.bursts import Burst
from bot.llm.gateway import SUPERSEDED
from bot.store.repos.api_logs import ApiLogFilter
from tests.discord.conftest import World, WorldFactory
from tests.fakes.discord_server import FakeUser
from tests.fakes.llm_server import Text
from tests.queued_turns import ANSWER_PREFIX, model_reply, turn_requests

BURST = ["so about tonight", "we are four people", "and we have two hours"]


async def _thread(w: World) -> int:
    """A bot thread with one answered opener; the model then answers naming the last message."""
    w.llm.default_reply = model_reply
    opener = await w.server.inject_message("hello")
    thread_id = await w.wait_thread(opener)
    await w.wait_text(thread_id, ANSWER_PREFIX + "[alice] hello")
    return thread_id


def _users(request: Any) -> list[str]:
    return [str(m.get("content")) for m in request.messages if m.get("role") == "user"]


async def _say(w: World, thread_id: int, text: str, author: FakeUser | None = None) -> None:
    await w.server.inject_message(text, author=author, channel_id=thread_id, mention_bot=False)


async def _stored(w: World, count: int) -> None:
    """Wait until `count` user messages wait for their turn's answer (stored, not answered)."""
    await w.server.wait_for(lambda: len(w.services.engine.pending) >= count or None)


def _answers(w: World, thread_id: int) -> list[str]:
    return [m.content for m in w.bot_messages(thread_id)][1:]  # after the opener's answer


async def test_three_messages_with_typing_between_are_one_turn(
    world: WorldFactory, database_url: str
) -> None:
    async with world(database_url=database_url) as w:
        thread_id = await _thread(w)
        # Answers wait at this gate until the third message is stored: whether a typing event
        # reaches the bot before or after a message's call started (a loaded machine), no
        # answer may show in between, so the burst is answered once.
        gate = asyncio.Event()
        w.llm.default_reply = lambda request: replace(model_reply(request), after=gate)
        before = len(turn_requests(w.llm.chat_requests))
        for index, text in enumerate(BURST):
            await _say(w, thread_id, text)
            if index < len(BURST) - 1:
                await w.server.inject_typing(channel_id=thread_id)  # writing the next one
            await _stored(w, index + 1)
        gate.set()
        shown = [f"[alice] {text}" for text in BURST]
        await w.server.wait_for(lambda: _answers(w, thread_id) or None)
        await w.settle()
        requests = turn_requests(w.llm.chat_requests)[before:]
        assert _users(requests[-1])[-3:] == shown
        assert _answers(w, thread_id) == [ANSWER_PREFIX + shown[-1]]
        session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        assert session is not None
        # A message that joins while its predecessor's call is under way restarts that call
        # (logged as superseded): at most one per joining message.
        assert len(requests) <= len(BURST), [_users(r) for r in requests]
        logs = await w.services.repos.api_logs.list(ApiLogFilter(session_id=session.id))
        turn_logs = [row.error for row in reversed(logs) if row.purpose == "chat"][1:]
        assert turn_logs == [SUPERSEDED] * (len(requests) - 1) + [None]
        stored = await w.services.repos.messages.all_for_session(w.space, session.id)
        users = [m.content for m in stored if m.role == "user"]
        assert users[-3:] == BURST, "each message of the burst is stored"


async def test_a_lone_message_starts_without_waiting(
    world: WorldFactory, database_url: str
) -> None:
    async with world(database_url=database_url) as w:
        thread_id = await _thread(w)
        before = len(turn_requests(w.llm.chat_requests))
        # The typing that wrote a message ends with it: nothing is typed afterwards.
        await w.server.inject_typing(channel_id=thread_id)
        await _say(w, thread_id, "just one thing")
        await w.server.wait_for(lambda: _answers(w, thread_id) or None)
        await w.settle()
        requests = turn_requests(w.llm.chat_requests)[before:]
        assert [_users(r)[-1] for r in requests] == ["[alice] just one thing"]
        chat = w.bot.get_cog("Chat")
        assert chat is not None and len(chat.typing) == 0  # type: ignore[attr-defined]


async def test_a_burst_without_typing_settles_without_suspending() -> None:
    burst = Burst(1, wait_seconds=8.0, typing_lapses=lambda: None)
    step = burst.settle().__await__()
    try:
        step.send(None)
    except StopIteration:
        return
    raise AssertionError("a lone message waited for a timer")


async def test_typing_that_lapses_starts_the_waiting_message_at_the_bound(
    world: WorldFactory, database_url: str
) -> None:
    bound = 0.3
    async with world(database_url=database_url, burst_wait_seconds=bound) as w:
        thread_id = await _thread(w)
        before = len(w.llm.chat_requests)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await _say(w, thread_id, "so about tonight")
        await w.server.inject_typing(channel_id=thread_id)  # and never sends the next one
        requests = await w.llm.wait_for_requests(before + 1, timeout=10)
        waited = loop.time() - started
        await w.server.wait_for(lambda: _answers(w, thread_id) or None)
        await w.settle()
        turns = turn_requests(requests)[before:]
        assert [_users(r)[-1] for r in turns] == ["[alice] so about tonight"]
        assert waited >= bound, waited
        assert _answers(w, thread_id) == [ANSWER_PREFIX + "[alice] so about tonight"]


async def test_a_next_message_before_the_first_text_restarts_the_turn(
    world: WorldFactory, database_url: str
) -> None:
    async with world(database_url=database_url) as w:
        thread_id = await _thread(w)
        held = asyncio.Event()  # never set: the first answer would show only after it
        w.llm.script(Text("never shown", after=held))
        before = len(w.llm.chat_requests)
        await _say(w, thread_id, BURST[0])
        await w.llm.wait_for_requests(before + 1, timeout=10)
        await _say(w, thread_id, BURST[1])
        await w.server.wait_for(lambda: _answers(w, thread_id) or None)
        await w.settle()
        requests = turn_requests(w.llm.chat_requests[before:])
        assert len(requests) == 2
        assert _users(requests[0])[-1] == f"[alice] {BURST[0]}"
        assert _users(requests[1])[-2:] == [f"[alice] {BURST[0]}", f"[alice] {BURST[1]}"]
        assert _answers(w, thread_id) == [ANSWER_PREFIX + f"[alice] {BURST[1]}"]
        session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        assert session is not None
        logs = await w.services.repos.api_logs.list(ApiLogFilter(session_id=session.id))
        chats = [row for row in reversed(logs) if row.purpose == "chat"][-2:]
        assert [row.error for row in chats] == [SUPERSEDED, None]


async def test_members_talking_at_once_are_answered_in_order(
    world: WorldFactory, database_url: str
) -> None:
    async with world(database_url=database_url, user_max_concurrent_turns=5) as w:
        thread_id = await _thread(w)
        ann, ben = w.server.add_user("ann"), w.server.add_user("ben")
        said = [(ann, "ann one"), (ben, "ben one"), (ann, "ann two"), (ben, "ben two")]
        before = len(turn_requests(w.llm.chat_requests))
        await _say(w, thread_id, said[0][1], ann)
        await w.server.inject_typing(author=ann, channel_id=thread_id)
        for author, text in said[1:]:
            await _say(w, thread_id, text, author)
        shown = [f"[{author.username}] {text}" for author, text in said]
        expected = [ANSWER_PREFIX + text for text in shown]
        await w.server.wait_for(lambda: _answers(w, thread_id) == expected or None)
        await w.settle()
        requests = turn_requests(w.llm.chat_requests)[before:]
        assert [_users(r)[-1] for r in requests] == shown
        for index, request in enumerate(requests):
            assert _users(request)[-index - 1 :] == shown[: index + 1]
