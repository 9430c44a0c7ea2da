"""Topic posts people answer, through the real discord.py client: the channel's word pool keeps
nouns only (one entry per case-folded word), and an opener records whether a person replied
within its window."""

from __future__ import annotations

import pytest

from tests.discord.conftest import World, WorldFactory
from tests.discord.test_spaces import Calls


async def _enable(w: World) -> None:
    ix = await w.server.inject_interaction("topic enable", user=w.server.admin_user)
    assert "✅" in (await w.server.wait_for_reply(ix)).content


async def test_channel_talk_feeds_nouns_once_per_case_folded_word(
    world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with world() as w:
        await _enable(w)
        activity = Calls(monkeypatch, w.services.topics, "record_activity")
        for text in ("Python is great, I played Zelda", "python と京都で勉強した", "PYTHON"):
            await w.server.inject_message(text, mention_bot=False)
        await activity.wait(3)
        pool = await w.services.word_pool.words(w.space, w.server.channel_id)
        assert sorted((word.word, word.count) for word in pool) == [
            ("Python", 3),
            ("Zelda", 1),
            ("京都", 1),
        ], "no verbs (played, 勉強した) and no second spelling of Python"
