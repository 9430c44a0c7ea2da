"""/memory me erase through the real discord.py client: once confirmed, nothing the member said
(nor the bot's answers to it, nor their facts) reaches the very next requests the model
receives — their own turn in another thread, another member's turn in the thread where it was
said — nor a `recall` result; without the confirmation nothing is erased."""

from __future__ import annotations

from bot.memory.member_memory import ERASED_PLACEHOLDER
from tests.discord.conftest import World, WorldFactory
from tests.discord.test_member_memory import _ask, _member_layer, _sent
from tests.fakes.llm_server import RecordedRequest, Text, ToolCalls

SECRET = "Mochi-Kinako"
CITY = "Sapporo-Kita"
RAMEN = "Hokkaido-ramen"


def _tool_results(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.messages if m["role"] == "tool"]


async def _space_texts(w: World) -> list[str]:
    rows = await w.services.db.fetchall(
        "SELECT content FROM messages WHERE space_id = ?", (w.space,)
    )
    return [str(row["content"]) for row in rows]


async def test_erase_me_takes_effect_in_the_next_requests_and_recall(world: WorldFactory) -> None:
    async with world() as w:
        x, y = w.server.user, w.server.add_user("bob")
        lovely = Text(f"{SECRET} is a lovely name!", chunks=1)
        w.llm.script(lovely)
        thread, _ = await _ask(
            w, f"My cat is called {SECRET} and I am moving to {CITY}", lovely, author=x
        )
        noted = Text(f"Noted: your cat is {SECRET}.", chunks=1)
        w.llm.script(noted)
        await _ask(w, f"remember that my cat is {SECRET}", noted, author=x, thread_id=thread)
        await _ask(w, f"I prefer {RAMEN} myself", author=y, thread_id=thread)
        assert [f.fact for f in await w.services.members.list(w.space, str(x.id))]

        asked = await w.server.inject_interaction("memory me erase", user=x, channel_id=thread)
        warned = await w.server.wait_for_reply(asked)
        assert warned.ephemeral and "confirm: True" in warned.content
        assert any(SECRET in text for text in await _space_texts(w)), "not erased unconfirmed"

        confirmed = await w.server.inject_interaction(
            "memory me erase", {"confirm": True}, user=x, channel_id=thread
        )
        done = await w.server.wait_for_reply(confirmed)
        assert done.ephemeral and "Erased: 1 facts, 4 messages" in done.content
        texts = await _space_texts(w)
        assert not [t for t in texts if SECRET in t or CITY in t]
        assert ERASED_PLACEHOLDER in texts and f"I prefer {RAMEN} myself" in texts

        # X's next turn, in a new thread: no fact, no related memory, nothing of the text.
        _, request = await _ask(w, "What is my cat called?", author=x)
        assert SECRET not in _sent(request) and CITY not in _sent(request)
        assert _member_layer(request) is None

        # Y's turn in the very thread it was said in: the history shows the placeholder.
        _, request = await _ask(w, "Where was the other member moving?", author=y, thread_id=thread)
        sent = _sent(request)
        assert SECRET not in sent and CITY not in sent
        assert ERASED_PLACEHOLDER in sent and f"I prefer {RAMEN} myself" in sent

        # A recall the model asks for finds Y's words, never X's.
        nothing = Text("Nothing about a cat.", chunks=1)
        query = f"{SECRET} {CITY} {RAMEN} cat moving"
        w.llm.script(ToolCalls([("recall", {"query": query})]), nothing)
        _, request = await _ask(w, "Did anyone mention a cat?", nothing, author=y)
        [recalled] = _tool_results(request)
        found = recalled.replace(f'matching "{query}"', "", 1)  # the model's own query, echoed
        assert f"I prefer {RAMEN} myself" in found, "the recall did search and find the thread"
        assert SECRET not in found and CITY not in found
        assert SECRET not in _sent(request).replace(f'matching "{query}"', "")
