"""Member memory through the real discord.py client: a member's facts follow them into their
other threads of the server (never into another member's turns), the remember tool saves for
the speaking member only, and /memory me forget|off take effect in the very next request."""

from __future__ import annotations

from bot.prompts import prompts_for
from tests.discord.conftest import WAIT, World, WorldFactory
from tests.fakes.discord_server import FakeUser
from tests.fakes.llm_server import RecordedRequest, Text, ToolCalls

HEADER = prompts_for("en")["layer_member_header"]
CAT = "Mochi-Kinako"


async def _ask(
    w: World,
    text: str,
    reply: Text | None = None,
    *,
    author: FakeUser | None = None,
    thread_id: int | None = None,
) -> tuple[int, RecordedRequest]:
    """`author` says `text` (in a new thread unless `thread_id`); the thread and the request."""
    answer = reply or Text(f"OK ({len(w.llm.chat_requests) + 1}).", chunks=1)
    if reply is None:
        w.llm.script(answer)
    sent = await w.server.inject_message(
        text, author=author, channel_id=thread_id, mention_bot=thread_id is None
    )
    thread = thread_id if thread_id is not None else await w.wait_thread(sent)
    await answered(w, thread, answer.text)
    return thread, w.llm.chat_requests[-1]


async def answered(w: World, thread: int, text: str) -> str:
    """Wait until the bot's reply in `thread` starts with `text` and the turn is over; the reply
    as it ends (the answer, then any receipt of a remembered fact)."""

    def shown() -> str | None:
        mine = w.bot_messages(thread)
        return mine[-1].content if mine and mine[-1].content.startswith(text) else None

    await w.server.wait_for(shown, WAIT)
    await w.settle()
    return w.bot_messages(thread)[-1].content


def _sent(request: RecordedRequest) -> str:
    return "\n".join(str(m.get("content")) for m in request.messages)


def _member_layer(request: RecordedRequest) -> str | None:
    return next(
        (
            str(m["content"])
            for m in request.messages
            if m["role"] == "system" and str(m["content"]).startswith(HEADER)
        ),
        None,
    )


async def test_a_members_fact_reaches_their_other_threads_only(world: WorldFactory) -> None:
    async with world() as w:
        x, y = w.server.user, w.server.add_user("bob")
        first, _ = await _ask(w, f"remember that my cat is {CAT}", author=x)
        [fact] = await w.services.members.list(w.space, str(x.id))
        assert fact.fact == f"my cat is {CAT}" and fact.source == "request"
        assert fact.member_name and fact.session_id is not None

        second, request = await _ask(w, "What is the name of my cat?", author=x)
        assert second != first
        assert _member_layer(request) == f"{HEADER}\n- my cat is {CAT}"
        assert len(w.llm.chat_requests) == 2, "saving the fact cost no LLM call"

        _, request = await _ask(w, "What is the name of my cat?", author=y)
        assert CAT not in _sent(request) and _member_layer(request) is None


async def test_the_remember_tool_saves_for_the_speaking_member(world: WorldFactory) -> None:
    async with world() as w:
        x, y = w.server.user, w.server.add_user("bob")
        smuggled = {"member_id": str(y.id), "space_id": "guild:1"}  # ignored: injected
        fact = {"fact": "moves to Sapporo in March", **smuggled}
        w.llm.script(ToolCalls([("remember", fact)]), Text("Noted.", chunks=1))
        thread, request = await _ask(
            w, "I am moving to Sapporo in March", Text("Noted.", chunks=1), author=x
        )
        remember = next(t for t in request.tools if t["function"]["name"] == "remember")
        assert set(remember["function"]["parameters"]["properties"]) == {"fact"}
        result = next(m for m in request.messages if m["role"] == "tool")
        assert "Remembered" in result["content"]
        assert [f.fact for f in await w.services.members.list(w.space, str(x.id))] == [
            "moves to Sapporo in March"
        ]
        assert await w.services.members.list(w.space, str(y.id)) == []
        assert await w.services.members.list("guild:1", str(y.id)) == []

        _, request = await _ask(w, "Where am I moving?", author=x, thread_id=thread)
        assert "- moves to Sapporo in March" in (_member_layer(request) or "")


async def test_forget_and_off_take_effect_in_the_next_request(world: WorldFactory) -> None:
    async with world() as w:
        x = w.server.user
        thread, _ = await _ask(w, f"remember that my cat is {CAT}", author=x)
        await _ask(w, "remember that I like green tea", author=x, thread_id=thread)
        ix = await w.server.inject_interaction("memory me show", user=x, channel_id=thread)
        shown = await w.server.wait_for_reply(ix)
        cat, tea = await w.services.members.list(w.space, str(x.id))
        assert shown.ephemeral
        assert f"`#{cat.id}` my cat is {CAT}" in shown.content
        assert f"`#{tea.id}` I like green tea" in shown.content

        ix = await w.server.inject_interaction(
            "memory me forget", {"which": f"#{cat.id}"}, user=x, channel_id=thread
        )
        assert f"Forgot fact #{cat.id}" in (await w.server.wait_for_reply(ix)).content
        _, request = await _ask(w, "What is my cat called?", author=x, thread_id=thread)
        layer = _member_layer(request) or ""
        assert CAT not in layer and "green tea" in layer

        ix = await w.server.inject_interaction("memory me off", user=x, channel_id=thread)
        off = await w.server.wait_for_reply(ix)
        assert off.ephemeral and "**off**" in off.content
        w.llm.script(
            ToolCalls([("remember", {"fact": "has a dog called Pochi"})]),
            Text("Fine.", chunks=1),
        )
        _, request = await _ask(
            w, "remember that my dog is Pochi", Text("Fine.", chunks=1), author=x, thread_id=thread
        )
        assert "Pochi" not in (_member_layer(request) or "")
        refused = next(m for m in request.messages if m["role"] == "tool")["content"]
        assert '{"error": "Not saved: remember is not offered in this turn' in refused
        assert [f.fact for f in await w.services.members.list(w.space, str(x.id))] == [
            "I like green tea"
        ]
        session = await w.services.repos.sessions.open_for_channel(w.space, thread)
        assert session is not None
        stored = await w.services.repos.messages.recent_live(w.space, session.id, 20)
        pochi = next(m for m in stored if m.content == "remember that my dog is Pochi")
        assert await w.services.repos.messages.is_recall_hidden(w.space, pochi.id)

        ix = await w.server.inject_interaction(
            "memory me forget", {"which": "all"}, user=x, channel_id=thread
        )
        assert "Forgot 1 facts" in (await w.server.wait_for_reply(ix)).content
        _, request = await _ask(w, "What do you know about me?", author=x, thread_id=thread)
        assert _member_layer(request) is None
