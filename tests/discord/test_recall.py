"""Community memory end to end: the real discord.py client on the loopback Discord.

A member says a fact in thread 1 of server A; in thread 2 of server A a question about it
brings the fact to the model twice — in the related-memories layer of the request and in the
result of a `recall` call — while the same question in server B and in another user's DMs
(even with a recall naming server A's space) brings nothing of it. Asserted on what the
loopback LLM received.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bot.prompts import prompts_for
from tests.discord.conftest import World, WorldFactory
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import RecordedRequest, Reply, Text, ToolCalls

FACT = "My cat is called Mochi-Kinako"
NAME = "Mochi-Kinako"
QUESTION = "What is the name of my cat?"
RELATED = prompts_for("en")["layer_recall_header"]


def two_servers_and_dms(server: FakeDiscord) -> dict[str, Any]:
    """Server B beside A, and DMs allowed."""
    b = server.add_guild("Server B")
    return {"discord_guild_ids": [server.guild_id, b.id], "discord_allow_dms": True}


def everything(requests: list[RecordedRequest]) -> str:
    """All the model received in these requests, as one text."""
    return "\n".join(json.dumps(r.messages, ensure_ascii=False) for r in requests)


def system_texts(request: RecordedRequest) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "system"]


def tool_texts(request: RecordedRequest) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


async def ask(w: World, channel_id: int, text: str, answer: str, **kw: Any) -> int:
    """A message in `channel_id` (a thread opens on it in a server); the channel it is
    answered in, once the answer is there and the turn is over."""
    message = await w.server.inject_message(text, channel_id=channel_id, **kw)
    where = channel_id
    if message.guild_id is not None:
        where = await w.wait_thread(message)

    def answered() -> bool:
        mine = w.bot_messages(where)
        return bool(mine) and answer in mine[-1].content

    await w.server.wait_for(answered, 10.0)
    await w.settle()
    return where


def member_name(w: World) -> str:
    """The display name of the member who said the fact."""
    user = w.server.user
    return user.global_name or user.username


def recall_then(answer: str, **arguments: Any) -> tuple[ToolCalls, Text]:
    return ToolCalls([("recall", {"query": "cat name", **arguments})]), Text(answer)


async def test_a_fact_said_in_one_thread_reaches_the_next_thread_of_its_server_only(
    world: WorldFactory,
) -> None:
    async with world(two_servers_and_dms) as w:
        space_a = w.space
        (guild_b,) = [g for g in w.server.state.guilds.values() if g.id != w.server.guild_id]
        channel_b = w.server.guild_channels(guild_b.id)[0].id
        member_b = guild_b.members[guild_b.owner_id].user

        w.llm.script(Text("What a lovely name!"))
        thread_1 = await ask(w, w.server.channel_id, FACT, "What a lovely name!")

        # Server A, a new thread: the layer and the recall tool both bring the fact.
        before = len(w.llm.chat_requests)
        w.llm.script(*recall_then(f"Your cat is {NAME}."))
        thread_2 = await ask(w, w.server.channel_id, QUESTION, f"Your cat is {NAME}.")
        assert thread_2 != thread_1
        first, second = w.llm.chat_requests[before:]
        (related,) = [text for text in system_texts(first) if text.startswith(RELATED)]
        assert f"> {member_name(w)}: {FACT}" in related
        # The fact opened thread 1 (the thread has its id): it is linked in the channel.
        link = f"https://discord.com/channels/{w.server.guild_id}/{w.server.channel_id}/{thread_1}"
        assert link in related
        assert QUESTION not in related, "the thread's own messages are never repeated there"
        (recalled,) = tool_texts(second)
        assert recalled.startswith("[Untrusted tool output from recall.")
        assert f"> {member_name(w)}: {FACT}" in recalled

        # Server B: the same question, and a recall naming A's space, bring nothing of it.
        before = len(w.llm.chat_requests)
        w.llm.script(*recall_then("I do not know.", space_id=space_a))
        await ask(w, channel_b, QUESTION, "I do not know.", author=member_b)
        in_b = w.llm.chat_requests[before:]
        assert len(in_b) == 2 and tool_texts(in_b[1])
        assert NAME not in everything(in_b) and RELATED not in everything(in_b)

        # Another user's DMs: nothing of it either.
        other = w.server.add_user("other")
        dm = w.server.dm_channel(other)
        before = len(w.llm.chat_requests)
        w.llm.script(*recall_then("No idea.", space_id=space_a))
        await ask(w, dm.id, QUESTION, "No idea.", author=other)
        in_dm = w.llm.chat_requests[before:]
        (dm_recall,) = tool_texts(in_dm[1])
        assert "> other: What is the name of my cat?" in dm_recall, "only the DM's own words"
        assert NAME not in everything(in_dm) and RELATED not in everything(in_dm)


SAGA = "Kinako saga"
CHAPTERS = 40


def next_page(request: RecordedRequest) -> Reply:
    """The model following the last recall result's next_token, or answering at its end."""
    token = re.search(r"next_token: (\S+)", tool_texts(request)[-1])
    if token is None:
        return Text("That is the whole saga.")
    return ToolCalls([("recall", {"query": SAGA, "continue_from": token.group(1)})])


async def test_the_model_pages_through_all_forty_matches_with_their_times(
    world: WorldFactory,
) -> None:
    async with world() as w:
        repos = w.services.repos
        for n in range(CHAPTERS):
            thread = await repos.sessions.create(w.space, title=f"chapter {n}")
            await repos.messages.add(
                w.space,
                thread.id,
                "user",
                f"chapter {n:02d} of the {SAGA}",
                author_name="Bea",
                created_at=f"2026-12-07T14:{n:02d}:00+00:00",
            )
        await w.services.db.execute(
            "UPDATE spaces SET timezone = 'Asia/Tokyo' WHERE id = ?", (w.space,)
        )
        before = len(w.llm.chat_requests)
        w.llm.script(ToolCalls([("recall", {"query": SAGA})]), *[next_page] * 5)
        # The question holds no word of the query: the tool searches this thread too.
        await ask(w, w.server.channel_id, "Tell me the whole story", "That is the whole saga.")

        results = tool_texts(w.llm.chat_requests[-1])
        assert len(results) == 5 and len(w.llm.chat_requests) - before == 6
        shown = [line for text in results for line in text.splitlines() if line.startswith("> ")]
        assert sorted(shown) == [f"> Bea: chapter {n:02d} of the {SAGA}" for n in range(40)]
        assert all(f"found: {CHAPTERS}," in text for text in results)
        assert '· 2026-12-07 14:07 UTC (23:07 Asia/Tokyo) · in "chapter 7"' in "".join(results)
