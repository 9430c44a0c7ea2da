"""Attacks on the Discord path: a model that never stops, one user flooding several threads.

The real discord.py client against the loopback Discord and LLM, a real SQLite file.
"""

from __future__ import annotations

import asyncio

from bot.exts.chat._flood import UserTurns
from bot.prompts.ui_text import ui_text
from tests.discord.conftest import WAIT, World, WorldFactory
from tests.fakes.discord_models import RestCall
from tests.fakes.llm_server import Endless, Text, ToolCalls

TIME_NOTICE = "(Stopped here: the answer took longer than 1.5 seconds.)"
# Discord allows about 5 message writes (creates and edits) per 5 s in a channel.
WRITES, PERIOD = 5, 5.0


def most_writes_in_any_window(calls: list[RestCall], period: float) -> int:
    times = sorted(call.at for call in calls)
    return max((sum(1 for t in times if start <= t < start + period) for start in times), default=0)


async def test_an_endless_stream_into_a_thread_ends_at_the_bound_and_the_next_message_runs(
    world: WorldFactory,
) -> None:
    async with world(turn_timeout=1.5, stream_edit_interval=0.2) as w:
        w.llm.script(Endless(interval=0.01, numbered=True), Text("Here is a short one."))
        sent = await w.server.inject_message("Talk forever")
        thread_id = await w.wait_thread(sent)
        await w.server.wait_for(lambda: w.bot_messages(thread_id) or None)
        # Queued behind the endless turn in the same thread.
        await w.server.inject_message("Something short?", channel_id=thread_id, mention_bot=False)

        stopped = await w.server.wait_for(
            lambda: next(
                (m for m in w.bot_messages(thread_id) if m.content.endswith(TIME_NOTICE)), None
            ),
            WAIT,
        )
        assert stopped.content.startswith("and then some more"), stopped.content[:80]
        await w.wait_text(thread_id, "Here is a short one.", timeout=2 * WAIT)

        writes = w.posts(thread_id) + w.patches(thread_id)
        assert most_writes_in_any_window(writes, PERIOD) <= WRITES, [c.at for c in writes]
        assert all(call.status < 400 for call in writes), "never rate-limited"
        await w.llm.wait_for_client_close(1)
        session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        assert session is not None
        stored = await w.services.repos.messages.all_for_session(session.space_id, session.id)
        assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
        said, _, notice = stored[1].content.rpartition("\n\n")
        assert notice == TIME_NOTICE and stopped.content.startswith(said)
        assert stored[3].content == "Here is a short one."


async def _open_threads(w: World, count: int) -> list[int]:
    """`count` threads the bot answered in, opened one after another by the plain user."""
    threads = []
    for index in range(count):
        w.llm.script(Text(f"Thread {index} open."))
        sent = await w.server.inject_message(f"topic {index}")
        thread_id = await w.wait_thread(sent)
        await w.wait_text(thread_id, f"Thread {index} open.")
        threads.append(thread_id)
    return threads


async def test_a_flood_across_threads_runs_at_most_the_users_turn_limit(
    world: WorldFactory,
) -> None:
    release = asyncio.Event()

    async def wait_here() -> str:
        """Wait for the test."""
        await asyncio.wait_for(release.wait(), 2 * WAIT)
        return "waited"

    busy = ui_text("en").busy
    # Bursts off: each message is a turn of its own (tests/discord/test_bursts.py merges them).
    async with world(user_max_concurrent_turns=2, burst_wait_seconds=0) as w:
        w.services.registry.register(wait_here)
        threads = await _open_threads(w, 3)
        opened = len(w.llm.chat_requests)
        w.llm.script(
            ToolCalls([("wait_here", {})]),
            ToolCalls([("wait_here", {})]),
            Text("Admin answer."),
            Text("Done."),
            Text("Done."),
        )
        for round_number in range(4):
            for thread_id in threads:
                await w.server.inject_message(
                    f"flood {round_number}", channel_id=thread_id, mention_bot=False
                )
        await w.llm.wait_for_requests(opened + 2)
        # Another user is not limited by alice's flood; their answer comes after it was handled.
        admin = await w.server.inject_message("my turn", author=w.server.admin_user)
        admin_thread = await w.wait_thread(admin)
        await w.server.wait_for(
            lambda: any(m.content == "Admin answer." for m in w.bot_messages(admin_thread)), WAIT
        )
        assert len(w.llm.chat_requests) == opened + 3, "two of alice's turns and the admin's"
        notices = [m for t in threads for m in w.bot_messages(t) if m.content == busy]
        assert len(notices) == 1, "one notice, not one per message"

        release.set()
        await w.settle(2 * WAIT)
        assert len(w.llm.chat_requests) == opened + 5
        stored = 0
        for thread_id in threads:
            session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
            assert session is not None
            messages = await w.services.repos.messages.all_for_session(session.space_id, session.id)
            stored += sum(m.role == "user" and m.content.startswith("flood") for m in messages)
        assert stored == 2, "refused messages are not turns"

        # Once her turns are done, alice is answered again.
        w.llm.script(Text("Back to normal."))
        await w.server.inject_message("hello again", channel_id=threads[1], mention_bot=False)
        await w.wait_text(threads[1], "Back to normal.")


def _contents(w: World, channel_id: int) -> list[str]:
    return [m.content for m in w.bot_messages(channel_id)]


async def test_a_flood_within_the_cooldown_costs_one_request_and_one_notice(
    world: WorldFactory,
) -> None:
    async with world() as w:
        threads = await _open_threads(w, 3)
        opened = len(w.llm.chat_requests)
        await w.services.settings.update({"user_cooldown_seconds": 60.0})
        w.llm.script(Text("Only this one."), Text("Admin answer."))
        for round_number in range(3):
            for thread_id in threads:
                await w.server.inject_message(
                    f"flood {round_number}", channel_id=thread_id, mention_bot=False
                )
        # Which thread's first message wins is the first to pass the cooldown: the first sent
        # on SQLite, any of them on PostgreSQL (separate channels' checks run side by side).
        answered = await w.server.wait_for(
            lambda: [t for t in threads if "Only this one." in _contents(w, t)] or None
        )
        await w.settle()
        assert len(answered) == 1
        await w.server.inject_message(
            "my turn", channel_id=threads[2], mention_bot=False, author=w.server.admin_user
        )
        await w.wait_text(threads[2], "Admin answer.")
        assert len(w.llm.chat_requests) == opened + 2
        notices = [m for t in threads for m in w.bot_messages(t) if "⏳" in m.content]
        assert len(notices) == 1


def test_user_turns_allow_up_to_the_limit_and_tell_once_per_busy_spell() -> None:
    turns = UserTurns()
    alice, bob = 1, 2
    with turns.hold(alice):
        assert turns.check(alice, 2).allowed
        with turns.hold(alice):
            first, second = turns.check(alice, 2), turns.check(alice, 2)
            assert (first.allowed, first.notify) == (False, True)
            assert (second.allowed, second.notify) == (False, False), "told once"
            assert turns.check(bob, 2).allowed, "per user"
            assert turns.running(alice) == 2
        again = turns.check(alice, 1)
        assert (again.allowed, again.notify) == (False, True), "a finished turn resets the notice"
    assert turns.check(alice, 1).allowed and turns.running(alice) == 0
