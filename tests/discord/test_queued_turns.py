"""Three members write a burst in one thread (issue 31): every queued turn reaches the model with
its own message, however often the summariser runs meanwhile."""

from __future__ import annotations

from collections import Counter

from tests.discord.conftest import WAIT, WorldFactory
from tests.queued_turns import (
    ANSWER_PREFIX,
    burst_texts,
    check_answered_once,
    check_every_turn_had_its_message,
    check_summarised_answered_only,
    model_reply,
)

PER_MEMBER = 5
THRESHOLD = 4


async def test_a_burst_from_three_members_answers_each_message(
    world: WorldFactory, database_url: str
) -> None:
    settings = {
        "database_url": database_url,
        "memory_summarize_threshold": THRESHOLD,
        "user_max_concurrent_turns": PER_MEMBER,
    }
    async with world(**settings) as w:
        w.llm.default_reply = model_reply
        opener = await w.server.inject_message("hello")
        thread_id = await w.wait_thread(opener)
        await w.wait_text(thread_id, ANSWER_PREFIX + "[alice] hello")
        members = [w.server.add_user(name) for name in ("ann", "ben", "cho")]
        names = {m.username: m for m in members}
        texts = burst_texts(3 * PER_MEMBER, speakers=[f"{m.username}:" for m in members])

        for text in texts:
            author = names[text.split(":", 1)[0]]
            await w.server.inject_message(
                text, author=author, channel_id=thread_id, mention_bot=False
            )

        def answered() -> bool:
            shown = {m.content for m in w.bot_messages(thread_id)}
            return all(ANSWER_PREFIX + _shown(text) in shown for text in texts)

        await w.server.wait_for(answered, WAIT * 3)
        await w.settle()
        await w.services.tasks.drain()
        shown = ["[alice] hello", *map(_shown, texts)]
        check_every_turn_had_its_message(w.llm.chat_requests, shown)
        session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        assert session is not None
        stored = await w.services.repos.messages.all_for_session(w.space, session.id)
        check_answered_once(stored, texts, _shown)
        posted = Counter(m.content for m in w.bot_messages(thread_id))
        assert all(posted[ANSWER_PREFIX + _shown(text)] == 1 for text in texts), posted
        memories = await w.services.repos.memories.live(w.space, session.id)
        check_summarised_answered_only(stored, memories, THRESHOLD)


def _shown(text: str) -> str:
    """How the model sees a member's message: `[name] text`."""
    return f"[{text.split(':', 1)[0]}] {text}"
