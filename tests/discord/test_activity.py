"""Tool activity while tools run, sources at the end, errors as one short message."""

from __future__ import annotations

import asyncio

from bot.store.repos.messages import FAILED_TURN_ROLE
from bot.tools import scrape
from tests.discord.conftest import WAIT, WorldFactory
from tests.fakes.llm_server import HttpError, Text, ToolCalls


async def test_tool_activity_appears_then_is_gone_with_sources_listed(
    world: WorldFactory,
) -> None:
    release = asyncio.Event()

    async def scrape_url(url: str) -> str:
        """Read a web page.

        Args:
            url: Page address.
        """
        await asyncio.wait_for(release.wait(), WAIT)
        return "Kiyomizu-dera is a temple in eastern Kyoto."

    async with world() as w:
        w.services.registry.register(
            scrape_url, display=scrape.DISPLAY, sources=scrape.scrape_url_sources
        )
        url = "https://example.org/kiyomizu"
        w.llm.script(
            ToolCalls([("scrape_url", {"url": url})]),
            Text("Kiyomizu-dera is in eastern Kyoto.", chunks=4),
        )
        sent = await w.server.inject_message("Where is Kiyomizu-dera?")
        thread_id = await w.wait_thread(sent)
        running = await w.server.wait_for(
            lambda: next(
                (m for m in w.bot_messages(thread_id) if "scrape_url example.org" in m.content),
                None,
            )
        )
        assert running.content.startswith("-# 🌐 scrape_url example.org/kiyomizu …")
        release.set()
        final = await w.server.wait_for(
            lambda: (m := w.bot_messages(thread_id)) and "Sources" in m[-1].content and m[-1]
        )
        await w.settle()
        assert final.id == running.id, "the status message becomes the answer"
        assert final.content == (f"Kiyomizu-dera is in eastern Kyoto.\n\n**Sources**\n1. <{url}>")
        assert "scrape_url" not in final.content
        assert final.suppress_embeds


async def test_failed_turn_is_one_short_message_and_the_question_is_kept(
    world: WorldFactory,
) -> None:
    async with world() as w:
        w.llm.script(HttpError(500), HttpError(500), HttpError(500))
        sent = await w.server.inject_message("Will this work?")
        thread_id = await w.wait_thread(sent)
        failed = await w.server.wait_for(
            lambda: (m := w.bot_messages(thread_id)) and m[-1].content.startswith("⚠️") and m[-1]
        )
        await w.settle()
        assert len(w.bot_messages(thread_id)) == 1 and len(failed.content) < 300
        session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        assert session is not None
        stored = await w.services.repos.messages.all_for_session(session.space_id, session.id)
        # The failure is recorded (its notice answers the question), so no restart takes it
        # for a turn that was cut off.
        assert [(m.role, m.reply_to) for m in stored] == [
            ("user", None),
            (FAILED_TURN_ROLE, stored[0].id),
        ]
        assert stored[0].content == "Will this work?"


async def test_cooldown_refuses_politely_once_without_calling_the_llm(
    world: WorldFactory,
) -> None:
    async with world(user_cooldown_seconds=60.0) as w:
        w.llm.script(Text("First answer."), Text("Admin answer."))
        sent = await w.server.inject_message("first question")
        thread_id = await w.wait_thread(sent)
        await w.wait_text(thread_id, "First answer.")
        again = await w.server.inject_message("second", channel_id=thread_id, mention_bot=False)
        refusal = await w.server.wait_for(
            lambda: next((m for m in w.bot_messages(thread_id) if "⏳" in m.content), None)
        )
        assert refusal.reference is not None and refusal.reference["message_id"] == str(again.id)
        assert not refusal.pings()
        await w.server.inject_message("third", channel_id=thread_id, mention_bot=False)
        # Another user's turn completes after alice's third message was handled.
        await w.server.inject_message(
            "my turn", channel_id=thread_id, mention_bot=False, author=w.server.admin_user
        )
        await w.wait_text(thread_id, "Admin answer.")
        assert len(w.llm.chat_requests) == 2
        assert sum("⏳" in m.content for m in w.bot_messages(thread_id)) == 1
        session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        assert session is not None
        users = [
            m.content
            for m in await w.services.repos.messages.all_for_session(session.space_id, session.id)
        ]
        assert "second" not in users and "third" not in users
