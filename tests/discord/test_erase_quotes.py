"""/memory me erase through the real discord.py client also takes the bot's answers to other
members that quote the member (in the store — history, FTS, recall's terms — and, edited by
the bot, in Discord), renames the thread the bot named after her message, leaves other
members' words alone, and leaves no byte of her text in the SQLite file or its WAL while the
bot keeps the database open — in English and in Japanese."""

from __future__ import annotations

import pytest

from bot.memory.member_memory import ERASED_PLACEHOLDER
from tests.discord.conftest import World, WorldFactory
from tests.discord.test_forget_everywhere import _renames, left_in_store, on_disk
from tests.discord.test_member_memory import _ask, _sent
from tests.fakes.llm_server import Text

CASES = [
    ("My cat is called Mochi-Kinako and she sleeps all day", "Mochi-Kinako"),
    ("うちの猫の名前はモチキナコで一日中寝ています", "モチキナコ"),
]


async def _erase(w: World, channel_id: int) -> str:
    asked = await w.server.inject_interaction(
        "memory me erase", {"confirm": True}, user=w.server.user, channel_id=channel_id
    )
    return str((await w.server.wait_for_reply(asked)).content)


@pytest.mark.parametrize(("said", "name"), CASES, ids=["en", "ja"])
async def test_erase_blanks_the_bots_answers_quoting_her(
    world: WorldFactory, request: pytest.FixtureRequest, said: str, name: str
) -> None:
    async with world() as w:
        x, y = w.server.user, w.server.add_user("bob")
        opened, _ = await _ask(w, said, author=x)
        quoted = Text(f'She said: "{said}"', chunks=1)
        w.llm.script(quoted)
        other, _ = await _ask(w, "What did the other member say about her cat?", quoted, author=y)
        loyal = Text("Dogs are loyal.", chunks=1)
        w.llm.script(loyal)
        await _ask(w, "And what about dogs?", loyal, author=y, thread_id=other)
        assert w.server.channel(opened).name == said[:100]
        assert await left_in_store(w, name)
        assert await on_disk(w, name, request)

        reply = await _erase(w, opened)

        assert "Erased" in reply and "other people's stay in Discord" in reply
        assert await left_in_store(w, name) == []
        rows = await w.services.db.fetchall(
            "SELECT content FROM messages WHERE space_id = ?", (w.space,)
        )
        kept = {str(row["content"]) for row in rows}
        assert {"What did the other member say about her cat?", "Dogs are loyal."} <= kept
        # Discord: the thread the bot named after her message, the bot's answer quoting her.
        await w.server.wait_for(lambda: w.server.channel(opened).name == ERASED_PLACEHOLDER)
        assert {"name": ERASED_PLACEHOLDER} in _renames(w, opened)
        await w.server.wait_for(lambda: not [m for m in w.bot_messages(other) if name in m.content])
        assert ERASED_PLACEHOLDER in [c.json.get("content") for c in w.patches(other)]
        assert "Dogs are loyal." in [m.content for m in w.bot_messages(other)]
        assert await on_disk(w, name, request) == []

        _, asked = await _ask(w, "What was the cat called?", author=y, thread_id=other)
        sent = _sent(asked)
        assert name not in sent and "Dogs are loyal." in sent and ERASED_PLACEHOLDER in sent
