"""Gateway reconnects, Discord 429s and restarts lose and duplicate nothing."""

from __future__ import annotations

import asyncio
import logging

import pytest

from bot.bot import BotDeps, PlayChatBot
from bot.prompts.ui_text import ui_text
from bot.store.repos.messages import FAILED_TURN_ROLE
from tests.discord.conftest import WAIT, World, WorldFactory
from tests.fakes.discord_harness import run_client
from tests.fakes.llm_server import HttpError, Text


async def _bot_says(bot: PlayChatBot, text: str) -> None:
    """Wait until the bot's own message (created or edited) shows `text`."""
    created = asyncio.ensure_future(
        bot.wait_for(
            "message",
            check=lambda m: (
                bot.user is not None and m.author.id == bot.user.id and m.content == text
            ),
            timeout=WAIT,
        )
    )
    edited = asyncio.ensure_future(
        bot.wait_for(
            "raw_message_edit", check=lambda p: p.data.get("content") == text, timeout=WAIT
        )
    )
    done, pending = await asyncio.wait({created, edited}, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    for task in done:
        task.result()


async def _user_messages(w: World, thread_id: int) -> list[tuple[str, int | None]]:
    session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
    assert session is not None
    stored = await w.services.repos.messages.all_for_session(session.space_id, session.id)
    return [(m.role, m.discord_message_id) for m in stored]


@pytest.mark.parametrize("how", ["reconnect", "drop"])
async def test_gateway_loss_mid_conversation_loses_and_duplicates_nothing(
    world: WorldFactory, how: str
) -> None:
    # Few edits, so that the second reply's message fits the same 5-per-5-s channel window.
    async with world(stream_edit_interval=0.3) as w:
        w.llm.script(Text("One, two, three, four, five, six.", chunks=6, delay=0.1), Text("Seven."))
        first = await w.server.inject_message("count to six")
        thread_id = await w.wait_thread(first)
        await w.server.wait_for(lambda: w.bot_messages(thread_id))  # streaming has started
        resumed = w.bot.wait_for("resumed", timeout=WAIT)
        if how == "reconnect":
            assert await w.server.force_reconnect() == 1
        else:
            assert await w.server.disconnect() == 1
        # Sent while the bot is away: replayed after RESUME, exactly once.
        second = await w.server.inject_message("and then?", channel_id=thread_id, mention_bot=False)
        await resumed
        await w.wait_text(thread_id, "Seven.")
        assert [m.content for m in w.bot_messages(thread_id)] == [
            "One, two, three, four, five, six.",
            "Seven.",
        ]
        assert len(w.llm.chat_requests) == 2
        assert await _user_messages(w, thread_id) == [
            ("user", first.id),
            ("assistant", None),
            ("user", second.id),
            ("assistant", None),
        ]
        assert len(w.server.sessions) == 1, "resumed, not re-identified"


async def test_429_on_an_edit_is_waited_out_and_the_reply_completes(world: WorldFactory) -> None:
    async with world() as w:
        rule = w.server.fail_next("PATCH", r"^/channels/\d+/messages/\d+$", 429, retry_after=0.3)
        w.llm.script(
            Text("A reply that is edited a few times while it streams.", chunks=8, delay=0.05)
        )
        sent = await w.server.inject_message("go")
        thread_id = await w.wait_thread(sent)
        await w.wait_text(thread_id, "A reply that is edited a few times while it streams.")
        statuses = [call.status for call in w.patches(thread_id)]
        assert rule.hits == 1 and statuses[0] == 429 and statuses[-1] == 200
        assert len(w.bot_messages(thread_id)) == 1


async def test_after_a_restart_the_thread_continues_from_the_database(
    world: WorldFactory,
) -> None:
    async with world() as w:
        w.llm.script(Text("Remember: the password is swordfish."))
        sent = await w.server.inject_message("remember something")
        thread_id = await w.wait_thread(sent)
        await w.wait_text(thread_id, "Remember: the password is swordfish.")
        await w.bot.close()

        # A new client process: nothing in memory, only the database.
        bot = PlayChatBot(BotDeps(services=w.services))
        async with run_client(bot, w.server):
            # server.wait_for would trip over the first client's finished task (the fake
            # watches every client it ever ran), so wait for the reply's echo instead.
            w.llm.script(Text("It was swordfish.", chunks=3, delay=0.05))
            seen = asyncio.ensure_future(_bot_says(bot, "It was swordfish."))
            await w.server.inject_message("what was it?", channel_id=thread_id, mention_bot=False)
            await seen
            assert await bot.deps.turns.wait_idle(WAIT)
        request = w.llm.chat_requests[-1]
        assert any("swordfish" in str(m.get("content")) for m in request.messages[:-1])
        roles = [role for role, _ in await _user_messages(w, thread_id)]
        assert roles == ["user", "assistant", "user", "assistant"]


async def test_a_replayed_message_is_not_answered_twice(world: WorldFactory) -> None:
    async with world() as w:
        w.llm.script(Text("Only once.", chunks=1), Text("Next.", chunks=1))
        sent = await w.server.inject_message("answer me once")
        thread_id = await w.wait_thread(sent)
        await w.wait_text(thread_id, "Only once.")
        # The same MESSAGE_CREATE again, as after a re-identify; then a new message.
        w.server.gateway.dispatch_message("MESSAGE_CREATE", sent)
        later = await w.server.inject_message("next", channel_id=thread_id, mention_bot=False)
        await w.wait_text(thread_id, "Next.")
        assert [m.content for m in w.bot_messages(thread_id)] == ["Only once.", "Next."]
        assert await _user_messages(w, thread_id) == [
            ("user", sent.id),
            ("assistant", None),
            ("user", later.id),
            ("assistant", None),
        ]


async def test_quick_messages_in_a_thread_are_answered_in_order(world: WorldFactory) -> None:
    # Bursts off: each message is a turn of its own (tests/discord/test_bursts.py merges them).
    async with world(burst_wait_seconds=0) as w:
        w.llm.script(Text("Opened.", chunks=1))
        sent = await w.server.inject_message("start")
        thread_id = await w.wait_thread(sent)
        await w.wait_text(thread_id, "Opened.")
        w.llm.script(Text("Answer A.", chunks=3, delay=0.05), Text("Answer B.", chunks=1))
        a = await w.server.inject_message("A", channel_id=thread_id, mention_bot=False)
        b = await w.server.inject_message("B", channel_id=thread_id, mention_bot=False)
        await w.wait_text(thread_id, "Answer B.")
        assert [m.content for m in w.bot_messages(thread_id)] == [
            "Opened.",
            "Answer A.",
            "Answer B.",
        ]
        ids = [i for role, i in await _user_messages(w, thread_id) if role == "user"]
        assert ids == [sent.id, a.id, b.id]


async def test_shutdown_lets_a_running_turn_finish_first(world: WorldFactory) -> None:
    async with world() as w:
        w.llm.script(Text("Slow but complete.", chunks=4, delay=0.1))
        sent = await w.server.inject_message("take your time")
        thread_id = await w.wait_thread(sent)
        await w.server.wait_for(lambda: w.bot_messages(thread_id))  # the reply is streaming
        await w.bot.shutdown(grace=10)
        assert w.bot.is_closed()
        assert w.bot_messages(thread_id)[-1].content == "Slow but complete."
        session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        assert session is not None
        stored = await w.services.repos.messages.all_for_session(session.space_id, session.id)
        assert [m.role for m in stored] == ["user", "assistant"]


async def test_a_restart_tells_only_the_turn_it_cut_off_not_a_failed_one(
    world: WorldFactory,
) -> None:
    restarted = ui_text("en").turn_interrupted
    async with world() as w:
        # A turn that failed (the model answered 500 every time): its notice was posted.
        w.llm.script(HttpError(500), HttpError(500), HttpError(500))
        failed = await w.server.inject_message("will this fail?")
        failed_thread = await w.wait_thread(failed)
        await w.server.wait_for(
            lambda: (m := w.bot_messages(failed_thread)) and m[-1].content.startswith("⚠️")
        )
        await w.settle()
        # A turn cut off by a restart: what a killed process leaves behind is its stored
        # question without an answer.
        w.llm.script(Text("First answer."))
        first = await w.server.inject_message("a conversation")
        cut_thread = await w.wait_thread(first)
        await w.wait_text(cut_thread, "First answer.")
        cut_session = await w.services.repos.sessions.open_for_channel(w.space, cut_thread)
        assert cut_session is not None
        await w.services.repos.messages.add(
            w.space, cut_session.id, "user", "cut off?", discord_message_id=cut_thread + 99
        )
        await w.bot.close()

        bot = PlayChatBot(BotDeps(services=w.services))
        async with run_client(bot, w.server):
            # Posted on ready; no await between this check and the wait's listener.
            if not any(m.content == restarted for m in w.bot_messages(cut_thread)):
                await _bot_says(bot, restarted)
            assert await bot.deps.turns.wait_idle(WAIT)
        assert [m.channel_id for m in w.bot_messages(cut_thread) if m.content == restarted] == [
            cut_thread
        ]
        assert [m.content for m in w.bot_messages(failed_thread) if m.content == restarted] == []
        session = await w.services.repos.sessions.open_for_channel(w.space, failed_thread)
        assert session is not None
        stored = await w.services.repos.messages.all_for_session(session.space_id, session.id)
        assert [m.role for m in stored] == ["user", FAILED_TURN_ROLE]
        assert stored[1].reply_to == stored[0].id and "language model" in stored[1].content


async def test_a_gateway_outage_that_heals_logs_one_warning_and_one_recovery(
    world: WorldFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with world() as w:
        resumed = asyncio.ensure_future(w.bot.wait_for("resumed", timeout=30))
        assert await w.server.start_outage() == 1
        # Two refused attempts: discord.py would log a traceback at ERROR for each.
        await w.server.wait_for(lambda: w.server.refused_connections >= 2 or None, timeout=20)
        w.server.end_outage()
        await resumed
        seen = [r for r in caplog.records if r.name.startswith(("discord", "bot."))]
        assert [r for r in seen if r.levelno >= logging.ERROR] == []
        assert [r for r in seen if r.exc_info] == [], "no traceback for a routine blip"
        lost = [r for r in seen if r.levelno == logging.WARNING and "connection lost" in r.msg]
        assert len(lost) == 1, [r.getMessage() for r in seen]
        back = [r.getMessage() for r in seen if "connection back after" in str(r.msg)]
        assert len(back) == 1 and r"failed reconnect attempts" in back[0]
        assert all(r.levelno == logging.INFO for r in seen if "connection back" in str(r.msg))
