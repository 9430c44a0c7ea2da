"""A Discord message the store refuses is never answered, and the reply says it was not saved."""

from __future__ import annotations

import pytest

from tests.discord.conftest import WorldFactory
from tests.fakes.llm_server import Text

# A store that refuses the user's message as SQLite does when the disk is full.
REFUSE_MESSAGES = (
    "CREATE TRIGGER refuse_messages BEFORE INSERT ON messages "
    "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
)


@pytest.mark.sqlite_only(reason="a SQLite trigger makes the store refuse the message")
async def test_a_message_that_cannot_be_stored_is_refused_with_the_reason(
    world: WorldFactory,
) -> None:
    async with world(discord_allow_dms=True) as w:
        dm = w.server.dm_channel(w.server.user)
        w.llm.script(Text("Hello.", chunks=1))
        await w.server.inject_message("hi", channel_id=dm.id, mention_bot=False)
        await w.wait_text(dm.id, "Hello.")
        asked = len(w.llm.chat_requests)
        await w.services.db.execute(REFUSE_MESSAGES)

        await w.server.inject_message("are you there?", channel_id=dm.id, mention_bot=False)
        refusal = await w.server.wait_for(
            lambda: next(
                (m for m in w.bot_messages(dm.id) if "could not be saved" in m.content), None
            ),
            10.0,
        )
        await w.settle()
        assert "(the disk is full)" in refusal.content and "is saved" not in refusal.content
        assert len(w.llm.chat_requests) == asked, "the model is never asked"
        rows = await w.services.db.fetchall("SELECT content FROM messages ORDER BY id")
        assert [row[0] for row in rows] == ["hi", "Hello."]
