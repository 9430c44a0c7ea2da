"""Conversations end to end: the real discord.py client, the loopback Discord and LLM, SQLite."""

from __future__ import annotations

import itertools
from typing import Any

from tests.discord.conftest import WAIT, WorldFactory
from tests.fakes.discord_models import PUBLIC_THREAD
from tests.fakes.discord_server import FakeChannel, FakeDiscord
from tests.fakes.llm_server import Text


async def test_mention_opens_thread_and_streams_the_reply(world: WorldFactory) -> None:
    answer = "Kyoto is lovely in autumn. " * 8
    async with world(stream_edit_interval=0.4) as w:
        w.llm.script(Text(answer, chunks=24, delay=0.05))
        sent = await w.server.inject_message("What is Kyoto like in autumn?")
        thread_id = await w.wait_thread(sent)
        final = await w.wait_text(thread_id, answer.strip())

        thread = w.server.channel(thread_id)
        assert thread.name == "What is Kyoto like in autumn?"
        assert thread.parent_id == w.server.channel_id
        assert [m.id for m in w.bot_messages(thread_id)] == [final.id]
        assert final.suppress_embeds
        assert len(final.versions) >= 3, "streamed: first text, edits, final"
        # 24 chunks, at most one edit per 0.4 s between the first text and the final edit:
        # a few edits, not one per chunk (however slow the machine makes the stream).
        patches = w.patches(thread_id)
        gaps = [b.at - a.at for a, b in itertools.pairwise(patches)]
        assert all(gap >= 0.35 for gap in gaps[:-1]), gaps
        span = patches[-1].at - w.posts(thread_id)[0].at
        assert 1 <= len(patches) <= span / 0.4 + 1 and len(patches) < 24
        typing = w.server.calls_to("POST", rf"^/channels/{thread_id}/typing$")
        assert typing and typing[0].at <= w.posts(thread_id)[0].at

        session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        assert session is not None and session.source == "discord"
        stored = await w.services.repos.messages.all_for_session(session.space_id, session.id)
        assert [(m.role, m.discord_message_id) for m in stored] == [
            ("user", sent.id),
            ("assistant", None),
        ]
        assert stored[0].content == "What is Kyoto like in autumn?"

        # Later messages in the thread are turns without a mention, in the same session.
        w.llm.script(Text("Try Arashiyama.", chunks=1))  # one write: the window has room
        follow = await w.server.inject_message("Where?", channel_id=thread_id, mention_bot=False)
        await w.wait_text(thread_id, "Try Arashiyama.")
        requests = await w.llm.wait_for_requests(2, timeout=WAIT)
        sent_text = "\n".join(str(m.get("content")) for m in requests[1].messages)
        assert answer.strip() in sent_text, "the earlier exchange is in the context"
        assert requests[1].messages[-1]["content"].endswith("Where?")
        stored = await w.services.repos.messages.all_for_session(session.space_id, session.id)
        assert [m.discord_message_id for m in stored if m.role == "user"] == [sent.id, follow.id]


def _unfence(pages: list[str]) -> str:
    """Join pages, dropping the ``` markers added where a code block was cut."""
    out: list[str] = []
    for index, page in enumerate(pages):
        body = page
        if index > 0 and out[-1].endswith("\n```") and page.startswith("```"):
            out[-1] = out[-1][: -len("\n```")]
            body = page.split("\n", 1)[1]
        out.append(body)
    return "\n".join(out)


async def test_long_answer_arrives_as_three_messages_with_fences_intact(
    world: WorldFactory,
) -> None:
    # Prose that does not repeat itself (a passage said over and over is stopped as a loop).
    prose = "\n\n".join(
        f"Paragraph {i}: " + " ".join(f"point{i}-{j}" for j in range(44)) for i in range(4)
    )
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})  # step {i}" for i in range(80))
    answer = f"{prose}\n\n{code}\n```\n\nThat is all."
    assert 4400 <= len(answer) <= 4700
    async with world() as w:
        w.llm.script(Text(answer, chunks=40))
        sent = await w.server.inject_message("Show me the code")
        thread_id = await w.wait_thread(sent)
        await w.server.wait_for(
            lambda: (m := w.bot_messages(thread_id)) and m[-1].content.endswith("That is all.")
        )
        await w.settle()
        pages = [m.content for m in w.bot_messages(thread_id)]
        assert len(pages) == 3
        assert all(len(page) <= 2000 for page in pages)
        assert all(page.count("```") % 2 == 0 for page in pages), "every page closes its fences"
        assert " ".join(_unfence(pages).split()) == " ".join(answer.split())
        assert pages[1].startswith("```python\n") or pages[2].startswith("```python\n")


async def test_mentions_in_llm_output_never_ping(world: WorldFactory) -> None:
    async with world() as w:
        role = w.server.admin_role_id
        user = w.server.admin_user.id
        w.llm.script(Text(f"Hey @everyone and @here, <@&{role}> and <@{user}>!", chunks=6))
        sent = await w.server.inject_message("ping everybody please")
        thread_id = await w.wait_thread(sent)
        final = await w.server.wait_for(
            lambda: (m := w.bot_messages(thread_id)) and m[-1].content.endswith("!") and m[-1]
        )
        await w.settle()
        writes = w.posts(thread_id) + w.patches(thread_id)
        assert writes
        assert all(call.json["allowed_mentions"] == {"parse": []} for call in writes)
        assert not final.pings()
        assert all(not m.pings() for m in w.bot_messages(thread_id))


async def test_dms_are_conversations_when_allowed(world: WorldFactory) -> None:
    async with world(discord_allow_dms=True) as w:
        dm = w.server.dm_channel(w.server.user)
        w.llm.script(Text("Hello in private.", chunks=1), Text("Still here.", chunks=1))
        first = await w.server.inject_message("hi", channel_id=dm.id, mention_bot=False)
        await w.wait_text(dm.id, "Hello in private.")
        await w.server.inject_message("again", channel_id=dm.id, mention_bot=False)
        await w.wait_text(dm.id, "Still here.")
        assert w.server.threads == []
        session = await w.services.repos.sessions.open_for_channel(f"dm:{w.server.user.id}", dm.id)
        assert session is not None and session.discord_guild_id is None
        stored = await w.services.repos.messages.all_for_session(session.space_id, session.id)
        assert [m.content for m in stored] == ["hi", "Hello in private.", "again", "Still here."]
        assert stored[0].discord_message_id == first.id


async def test_dms_are_ignored_unless_allowed(world: WorldFactory) -> None:
    async with world(discord_allow_dms=False) as w:
        assert not w.server.sessions[0].intents & (1 << 12), "no DM intent asked for"
        dm = w.server.dm_channel(w.server.user)
        await w.server.inject_message("hi", channel_id=dm.id, mention_bot=False)
        w.llm.script(Text("Channel answer.", chunks=1))
        sent = await w.server.inject_message("in the channel")
        await w.wait_text(await w.wait_thread(sent), "Channel answer.")
        assert w.bot_messages(dm.id) == [] and len(w.llm.chat_requests) == 1


async def test_reply_to_the_bot_opens_a_thread_and_a_bare_mention_gets_a_hint(
    world: WorldFactory,
) -> None:
    async with world() as w:
        bare = await w.server.inject_message("")
        hint = await w.server.wait_for(
            lambda: next(
                (m for m in w.bot_messages(w.server.channel_id) if "👋" in m.content), None
            )
        )
        assert hint.reference is not None and hint.reference["message_id"] == str(bare.id)
        assert w.server.threads == [] and w.llm.chat_requests == []

        w.llm.script(Text("Replying works.", chunks=1))
        reply = await w.server.inject_message(
            "thanks!", mention_bot=False, reply_to=hint, reply_ping=False
        )
        thread_id = await w.wait_thread(reply)
        await w.wait_text(thread_id, "Replying works.")
        plain = await w.server.inject_message("not for the bot", mention_bot=False)
        w.llm.script(Text("Second.", chunks=1))
        sent = await w.server.inject_message("for the bot")
        await w.wait_text(await w.wait_thread(sent), "Second.")
        assert all(t.id != plain.id for t in w.server.threads)
        assert len(w.llm.chat_requests) == 2


async def test_allow_and_deny_lists(world: WorldFactory) -> None:
    def lists(server: FakeDiscord) -> dict[str, Any]:
        return {
            "discord_allowed_role_ids": [server.admin_role_id],
            "discord_denied_channel_ids": [server.other_channel_id],
        }

    async with world(configure=lists) as w:
        admin = w.server.admin_user
        await w.server.inject_message("alice has no allowed role")
        await w.server.inject_message(
            "denied channel", author=admin, channel_id=w.server.other_channel_id
        )
        w.llm.script(Text("Welcome, admin.", chunks=1))
        sent = await w.server.inject_message("allowed", author=admin)
        await w.wait_text(await w.wait_thread(sent), "Welcome, admin.")
        assert [t.id for t in w.server.threads] == [sent.id]
        assert len(w.llm.chat_requests) == 1
        assert w.bot_messages(w.server.channel_id) == []
        assert w.bot_messages(w.server.other_channel_id) == []


async def test_in_a_thread_the_bot_did_not_open_only_mentions_are_turns(
    world: WorldFactory,
) -> None:
    async with world() as w:
        state = w.server.state
        thread = FakeChannel(
            state.ids.next(),
            PUBLIC_THREAD,
            "user thread",
            w.server.guild_id,
            parent_id=w.server.channel_id,
            owner_id=w.server.user.id,
        )
        state.channels[thread.id] = thread
        created = w.bot.wait_for("thread_create", timeout=WAIT)
        w.server.gateway.dispatch(
            "THREAD_CREATE", {**state.channel_json(thread), "newly_created": True}
        )
        await created
        await w.server.inject_message("chatting among us", channel_id=thread.id, mention_bot=False)
        w.llm.script(Text("Here I am.", chunks=1))
        asked = await w.server.inject_message("bot, join in", channel_id=thread.id)
        await w.wait_text(thread.id, "Here I am.")
        await w.server.inject_message("still among us", channel_id=thread.id, mention_bot=False)
        w.llm.script(Text("Again.", chunks=1))
        await w.server.inject_message("bot, again", channel_id=thread.id)
        await w.wait_text(thread.id, "Again.")
        assert [t.id for t in w.server.threads] == [thread.id], "no nested thread"
        assert len(w.llm.chat_requests) == 2
        session = await w.services.repos.sessions.open_for_channel(w.space, thread.id)
        assert session is not None
        stored = await w.services.repos.messages.all_for_session(session.space_id, session.id)
        assert [m.content for m in stored if m.role == "user"] == ["bot, join in", "bot, again"]
        assert stored[0].discord_message_id == asked.id
