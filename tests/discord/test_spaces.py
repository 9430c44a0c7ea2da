"""Spaces end to end: one bot in two servers (and two users' DMs) on the loopback Discord.

What server A stores (notes by /note and by write_note, knowledge saved by a web search, its
words) never reaches server B: not B's commands, not B's tools, not any request the loopback
LLM receives for B's turns. /model set in A leaves B alone; A's admin cannot delete B's data;
a server the bot leaves is purged after SPACE_RETENTION_DAYS (kept by default).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from bot.exts.spaces import Spaces
from bot.store.spaces import ALL_SPACES, dm_space
from bot.tools.web_search import web_search_sources
from tests.discord.conftest import World, WorldFactory
from tests.fakes.discord_server import FakeDiscord, FakeGuild
from tests.fakes.llm_server import RecordedRequest, Text, ToolCalls

SECRET = "launch on May 5"
HITS = [
    {"title": "Kyoto forecast", "href": "https://weather.example/kyoto", "body": "Sunny, 24°C"},
]


def two_servers(server: FakeDiscord) -> dict[str, Any]:
    """Add server B before the bot connects; commands sync to both servers."""
    b = server.add_guild("Server B")
    return {"discord_guild_ids": [server.guild_id, b.id], "discord_allow_dms": True}


def global_commands(server: FakeDiscord) -> dict[str, Any]:
    """Two servers, commands synced globally (so that they exist in DMs too)."""
    return {**two_servers(server), "discord_guild_ids": []}


class Calls:
    """Completed calls of a spied coroutine method, to wait on (no sleeping)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> None:
        self.args: list[tuple[Any, ...]] = []
        self._changed = asyncio.Condition()
        original: Callable[..., Awaitable[Any]] = getattr(owner, name)

        async def spy(*args: Any, **kwargs: Any) -> Any:
            result = await original(*args, **kwargs)
            async with self._changed:
                self.args.append(args)
                self._changed.notify_all()
            return result

        monkeypatch.setattr(owner, name, spy)

    async def wait(self, count: int) -> None:
        """Until `count` calls have completed."""
        async with asyncio.timeout(10), self._changed:
            await self._changed.wait_for(lambda: len(self.args) >= count)


def guild_b(w: World) -> FakeGuild:
    """The second server."""
    (b,) = [g for g in w.server.state.guilds.values() if g.id != w.server.guild_id]
    return b


def b_channel(w: World) -> int:
    """B's "general" channel."""
    return w.server.guild_channels(guild_b(w).id)[0].id


def b_admin(w: World) -> Any:
    """B's owner (an admin of B only)."""
    b = guild_b(w)
    return b.members[b.owner_id].user


def sent(requests: list[RecordedRequest]) -> str:
    """Everything the model received in these requests, as one text."""
    return "\n".join(json.dumps(r.messages, ensure_ascii=False) for r in requests)


async def talk(w: World, channel_id: int, text: str, answer: str, **kw: Any) -> int:
    """Start a conversation (a thread) in `channel_id`; its thread id once answered."""
    message = await w.server.inject_message(text, channel_id=channel_id, **kw)
    thread_id = await w.wait_thread(message)

    def answered() -> bool:
        mine = w.bot_messages(thread_id)
        return bool(mine) and answer in mine[-1].content

    await w.server.wait_for(answered, 10.0)
    await w.settle()
    return thread_id


async def reply(w: World, ix_coro: Any) -> str:
    """The text the user saw for an injected interaction."""
    return (await w.server.wait_for_reply(await ix_coro)).content


async def test_notes_of_a_never_reach_b(world: WorldFactory) -> None:
    async with world(two_servers) as w:
        admin_a, admin_b = w.server.admin_user, b_admin(w)
        space_b = f"guild:{guild_b(w).id}"
        inject = w.server.inject_interaction
        written = await reply(
            w, inject("note write", {"title": "Alpha plan", "content": SECRET}, user=admin_a)
        )
        assert "Alpha plan" in written
        w.llm.script(
            ToolCalls(
                [("write_note", {"title": "Secret plan", "content": SECRET, "mode": "create"})]
            ),
            Text("Noted."),
        )
        await talk(w, w.server.channel_id, "note our plan", "Noted.")
        titles_a = {p.title for p in await w.services.notes.list_pages(w.space)}
        assert titles_a == {"Alpha plan", "Secret plan"}

        listed = await reply(w, inject("note list", channel_id=b_channel(w), user=admin_b))
        assert "Alpha plan" not in listed and "Secret plan" not in listed
        read = await reply(
            w, inject("note read", {"title": "Secret plan"}, channel_id=b_channel(w), user=admin_b)
        )
        assert "No note titled 'Secret plan'" in read

        before = len(w.llm.chat_requests)
        w.llm.script(ToolCalls([("read_note", {"title": "Secret plan"})]), Text("Nothing."))
        await talk(w, b_channel(w), "what is the secret plan?", "Nothing.", author=admin_b)
        in_b = w.llm.chat_requests[before:]
        assert len(in_b) == 2
        assert SECRET not in sent(in_b) and "Alpha plan" not in sent(in_b)
        assert "Secret plan" not in sent(in_b[:1])
        (tool,) = [m for m in in_b[1].messages if m["role"] == "tool"]
        assert "No note page titled 'Secret plan'" in tool["content"]

        # A's admin cannot delete B's note: in A, B's title names nothing.
        await reply(
            w,
            inject(
                "note write",
                {"title": "Beta only", "content": "b"},
                channel_id=b_channel(w),
                user=admin_b,
            ),
        )
        refused = await reply(w, inject("note delete", {"title": "Beta only"}, user=admin_a))
        assert "No note titled 'Beta only'" in refused
        assert [p.title for p in await w.services.notes.list_pages(space_b)] == ["Beta only"]


async def test_knowledge_saved_by_a_search_in_a_never_reaches_b(world: WorldFactory) -> None:
    async with world(two_servers) as w:

        async def web_search(query: str) -> list[dict[str, str]]:
            """Search the web.

            Args:
                query: What to search for.
            """
            return HITS

        w.services.registry.register(web_search, sources=web_search_sources)
        w.llm.script(
            ToolCalls([("web_search", {"query": "kyoto weather"})]),
            Text("# Kyoto weather\n- sunny all week, 24°C"),
            Text("It is sunny in Kyoto."),
        )
        await talk(w, w.server.channel_id, "weather in kyoto?", "It is sunny in Kyoto.")
        await w.services.tasks.drain()
        (entry,) = await w.services.knowledge.list(ALL_SPACES)
        assert entry.space_id == w.space

        admin_b, inject = b_admin(w), w.server.inject_interaction
        listed = await reply(w, inject("knowledge list", channel_id=b_channel(w), user=admin_b))
        assert "Kyoto weather" not in listed
        read = await reply(
            w, inject("knowledge read", {"entry": entry.id}, channel_id=b_channel(w), user=admin_b)
        )
        assert f"No knowledge entry #{entry.id}" in read
        deleted = await reply(
            w,
            inject("knowledge delete", {"entry": entry.id}, channel_id=b_channel(w), user=admin_b),
        )
        assert f"No knowledge entry #{entry.id}" in deleted
        assert await w.services.knowledge.get(w.space, entry.id) is not None, "B's admin: no"

        before = len(w.llm.chat_requests)
        w.llm.script(ToolCalls([("read_knowledge", {"entry_id": entry.id})]), Text("No idea."))
        await talk(w, b_channel(w), "kyoto weather?", "No idea.", author=admin_b)
        in_b = w.llm.chat_requests[before:]
        assert len(in_b) == 2
        assert "Kyoto weather" not in sent(in_b[:1]) and "sunny all week" not in sent(in_b)


async def test_a_topic_opener_in_b_never_uses_a_word_said_only_in_a(
    world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with world(two_servers) as w:
        activity = Calls(monkeypatch, w.services.topics, "record_activity")
        admin_a, admin_b, inject = w.server.admin_user, b_admin(w), w.server.inject_interaction
        await reply(w, inject("topic enable", user=admin_a))
        await reply(w, inject("topic enable", channel_id=b_channel(w), user=admin_b))
        await w.server.inject_message("ラーメンが好き", mention_bot=False)
        await w.server.inject_message(
            "カメラを買った", channel_id=b_channel(w), author=admin_b, mention_bot=False
        )

        await activity.wait(2)
        space_b = f"guild:{guild_b(w).id}"
        pool_a = {
            word.word for word in await w.services.word_pool.words(w.space, w.server.channel_id)
        }
        pool_b = {word.word for word in await w.services.word_pool.words(space_b, b_channel(w))}
        assert "ラーメン" in pool_a and pool_b == {"カメラ"}

        before = len(w.llm.chat_requests)
        w.llm.script(Text("最近どう？"))
        posted = await reply(w, inject("topic now", channel_id=b_channel(w), user=admin_b))
        assert "💬" in posted
        in_b = sent(w.llm.chat_requests[before:])
        assert "カメラ" in in_b and "ラーメン" not in in_b


async def test_model_set_in_a_leaves_b_alone(world: WorldFactory) -> None:
    async with world(two_servers) as w:
        await w.services.repos.presets.create("Other", "ollama/other-model")
        set_a = await reply(
            w,
            w.server.inject_interaction(
                "model set", {"value": "ollama/other-model"}, user=w.server.admin_user
            ),
        )
        assert "default model of this server is now **ollama/other-model**" in set_a
        w.llm.script(Text("From A."))
        await talk(w, w.server.channel_id, "hi", "From A.")
        assert w.llm.chat_requests[-1].model == "other-model"
        w.llm.script(Text("From B."))
        await talk(w, b_channel(w), "hi", "From B.", author=b_admin(w))
        assert w.llm.chat_requests[-1].model == "test-model"
        shown = await reply(
            w, w.server.inject_interaction("model show", channel_id=b_channel(w), user=b_admin(w))
        )
        assert "**ollama/test-model** (the global default)" in shown


async def test_dms_of_two_users_stay_apart(world: WorldFactory) -> None:
    async with world(global_commands) as w:
        one, two = w.server.user, w.server.admin_user
        dm_one, dm_two = w.server.dm_channel(one), w.server.dm_channel(two)
        inject = w.server.inject_interaction
        await reply(
            w,
            inject(
                "note write", {"title": "Diary", "content": SECRET}, channel_id=dm_one.id, user=one
            ),
        )
        assert [p.title for p in await w.services.notes.list_pages(dm_space(one.id))] == ["Diary"]
        listed = await reply(w, inject("note list", channel_id=dm_two.id, user=two))
        assert "Diary" not in listed
        listed_a = await reply(w, inject("note list", user=one))
        assert "Diary" not in listed_a, "nor in a server"

        before = len(w.llm.chat_requests)
        w.llm.script(Text("Hello two."))
        await w.server.inject_message("what is in my diary?", channel_id=dm_two.id, author=two)
        await w.wait_text(dm_two.id, "Hello two.")
        assert SECRET not in sent(w.llm.chat_requests[before:])
        assert "Diary" not in sent(w.llm.chat_requests[before:])


def spaces_cog(w: World) -> Spaces:
    """The loaded Spaces cog (discord.py loads extensions as fresh module objects)."""
    cog = w.bot.get_cog("Spaces")
    assert cog is not None and type(cog).__name__ == "Spaces"
    return cast(Spaces, cog)


def clock(start: datetime) -> tuple[list[datetime], Callable[[], datetime]]:
    """A settable wall clock."""
    now = [start]
    return now, lambda: now[0]


async def removed_b(w: World, monkeypatch: pytest.MonkeyPatch) -> str:
    """Write a note in B, then remove the bot from B; B's space id once marked left."""
    b = guild_b(w)
    space_b = f"guild:{b.id}"
    await w.services.notes.create(space_b, "Beta only", "b")
    record = await w.services.spaces.get(space_b)
    assert record is not None and record.name == "Server B" and record.left_at is None
    marked = Calls(monkeypatch, w.services.spaces, "mark_left")
    w.server.remove_guild(b.id)
    await marked.wait(1)
    found = await w.services.spaces.get(space_b)
    assert found is not None and found.left_at == "2025-01-01T00:00:00+00:00"
    return space_b


async def test_a_left_server_is_purged_after_the_retention_days(
    world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with world(two_servers, space_retention_days=3) as w:
        now, w.bot.deps.now = clock(datetime(2025, 1, 1, tzinfo=UTC))
        await w.services.notes.create(w.space, "Alpha", "a")
        space_b = await removed_b(w, monkeypatch)
        cog = spaces_cog(w)
        now[0] += timedelta(days=2)
        assert await cog.purge_expired() == []
        now[0] += timedelta(days=2)
        (report,) = await cog.purge_expired()
        assert report.space_id == space_b and report.total_rows >= 1
        assert await w.services.spaces.get(space_b) is None
        assert await w.services.notes.list_pages(space_b) == []
        assert [p.title for p in await w.services.notes.list_pages(w.space)] == ["Alpha"]


async def test_a_server_removed_while_it_was_being_announced_stays_marked_left(
    world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with world(two_servers) as w:
        _, w.bot.deps.now = clock(datetime(2025, 1, 1, tzinfo=UTC))
        b = w.bot.get_guild(guild_b(w).id)
        assert b is not None
        space_b = await removed_b(w, monkeypatch)
        # The start-up pass (on_ready) reaching B only now, with B's Guild from before.
        await spaces_cog(w)._present(b)
        found = await w.services.spaces.get(space_b)
        assert found is not None and found.left_at == "2025-01-01T00:00:00+00:00"


async def test_a_left_server_is_kept_by_default_and_rejoining_clears_the_mark(
    world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with world(two_servers) as w:
        now, w.bot.deps.now = clock(datetime(2025, 1, 1, tzinfo=UTC))
        space_b = await removed_b(w, monkeypatch)
        cog = spaces_cog(w)
        now[0] += timedelta(days=3650)
        assert await cog.purge_expired() == []
        assert [p.title for p in await w.services.notes.list_pages(space_b)] == ["Beta only"]

        returned = Calls(monkeypatch, w.services.spaces, "mark_returned")
        renamed = Calls(monkeypatch, w.services.spaces, "ensure")
        w.server.rejoin_guild(guild_b(w).id)
        await returned.wait(1)
        w.server.rename_guild(guild_b(w).id, "Server B renamed")
        await renamed.wait(2)
        found = await w.services.spaces.get(space_b)
        assert found is not None and found.left_at is None and found.name == "Server B renamed"
