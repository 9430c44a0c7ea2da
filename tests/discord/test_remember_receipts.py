"""Receipts of member memory through the real discord.py client and the loopback LLM: a request
to remember is answered with a `-# 🧠` line naming the fact's id and how to forget it (or saying
it was not saved, and why) and the model is told what was saved; while a member's memory is off
the model is never offered `remember`, is told why, and a call of it anyway saves nothing; a
`remember` call shows its receipt only when it saved."""

from __future__ import annotations

from bot.memory.member_memory import MAX_FACT_CHARS
from bot.prompts import prompts_for
from tests.discord.conftest import World, WorldFactory
from tests.discord.test_member_memory import answered
from tests.fakes.discord_server import FakeUser
from tests.fakes.llm_server import RecordedRequest, Text, ToolCalls

PROMPTS = prompts_for("en")
OFF_LINE = PROMPTS["member_memory_off"]
RECEIPT = "-# 🧠 Remembered: {fact} · `/memory me forget {id}` to forget it"
NOT_SAVED_OFF = "-# 🧠 Not remembered: your memory is off here · `/memory me on` to switch it on"


def _system(request: RecordedRequest) -> str:
    return "\n".join(str(m["content"]) for m in request.messages if m["role"] == "system")


def _results(request: RecordedRequest) -> list[str]:
    """The tool results the model received, without the untrusted-data line above each."""
    return [str(m["content"]).split("\n", 1)[1] for m in request.messages if m["role"] == "tool"]


def _tools(request: RecordedRequest) -> set[str]:
    return {t["function"]["name"] for t in request.tools}


async def _say(
    w: World, text: str, *replies: Text | ToolCalls, author: FakeUser, thread: int | None = None
) -> tuple[int, str, list[RecordedRequest]]:
    """`author` says `text`; the thread, the bot's reply as it ends and the turn's requests."""
    before = len(w.llm.chat_requests)
    w.llm.script(*replies)
    sent = await w.server.inject_message(
        text, author=author, channel_id=thread, mention_bot=thread is None
    )
    thread = thread if thread is not None else await w.wait_thread(sent)
    last = replies[-1]
    assert isinstance(last, Text)
    reply = await answered(w, thread, last.text)
    return thread, reply, w.llm.chat_requests[before:]


async def _switch(w: World, author: FakeUser, thread: int, state: str) -> None:
    asked = await w.server.inject_interaction(f"memory me {state}", user=author, channel_id=thread)
    assert f"**{state}**" in (await w.server.wait_for_reply(asked)).content


async def test_a_request_is_answered_with_its_receipt_and_the_model_is_told(
    world: WorldFactory,
) -> None:
    async with world() as w:
        x = w.server.user
        _, reply, [request] = await _say(
            w, "remember that my cat is Mochi-Kinako", Text("Got it.", chunks=1), author=x
        )
        [fact] = await w.services.members.list(w.space, str(x.id))
        assert reply == "Got it.\n\n" + RECEIPT.format(fact="my cat is Mochi-Kinako", id=fact.id)
        saved = PROMPTS.format("member_fact_saved", id=fact.id, fact="my cat is Mochi-Kinako")
        assert saved in _system(request)
        assert "remember" in _tools(request) and OFF_LINE not in _system(request)


async def test_memory_off_hides_remember_tells_the_model_and_the_member(
    world: WorldFactory,
) -> None:
    async with world() as w:
        x = w.server.user
        thread, _, _ = await _say(w, "hello", Text("Hi.", chunks=1), author=x)
        await _switch(w, x, thread, "off")
        # The model calls remember anyway (it was not offered): an error, never a save.
        hallucinated = ToolCalls([("remember", {"fact": "has a dog called Pochi"})])
        _, reply, requests = await _say(
            w,
            "remember that my dog is Pochi",
            hallucinated,
            Text("I cannot keep that.", chunks=1),
            author=x,
            thread=thread,
        )
        assert len(requests) == 2
        for request in requests:
            assert "remember" not in _tools(request) and "member_facts" in _tools(request)
            assert OFF_LINE in _system(request)
            why = PROMPTS["member_fact_not_saved_memory_off"]
            note = PROMPTS.format("member_fact_not_saved", fact="my dog is Pochi", why=why)
            assert note in _system(request)
        [refused] = _results(requests[1])
        assert refused == '{"error": "' + PROMPTS["remember_not_offered"] + '"}'
        assert await w.services.members.list(w.space, str(x.id)) == []
        assert reply == f"I cannot keep that.\n\n{NOT_SAVED_OFF}"

        await _switch(w, x, thread, "on")
        _, reply, [request] = await _say(w, "and now?", Text("Now I can.", chunks=1), author=x)
        assert "remember" in _tools(request) and OFF_LINE not in _system(request)
        assert reply == "Now I can."


async def test_a_remember_call_shows_a_receipt_only_when_it_saved(world: WorldFactory) -> None:
    async with world() as w:
        x = w.server.user
        too_long = "x" * (MAX_FACT_CHARS + 1)
        calls = ToolCalls(
            [("remember", {"fact": "likes green tea"}), ("remember", {"fact": too_long})]
        )
        _, reply, requests = await _say(
            w, "I like green tea", calls, Text("Noted.", chunks=1), author=x
        )
        [fact] = await w.services.members.list(w.space, str(x.id))
        assert fact.fact == "likes green tea"
        assert reply == "Noted.\n\n" + RECEIPT.format(fact="likes green tea", id=fact.id)
        results = _results(requests[-1])
        assert results[0] == f"Remembered (fact #{fact.id}): likes green tea"
        assert results[1].startswith('{"error": "Not saved: A fact can have at most')
