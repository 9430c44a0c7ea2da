"""A member over their daily token budget is told so in their thread; the model is not called."""

from __future__ import annotations

from tests.discord.conftest import WorldFactory
from tests.fakes.llm_server import Text


async def test_a_member_over_budget_is_told_in_the_thread_without_a_model_call(
    world: WorldFactory,
) -> None:
    async with world(member_daily_tokens=100) as w:
        w.llm.script(Text("First answer.", prompt_tokens=60, completion_tokens=40))
        sent = await w.server.inject_message("first question")
        thread_id = await w.wait_thread(sent)
        await w.wait_text(thread_id, "First answer.")
        await w.server.inject_message("second", channel_id=thread_id, mention_bot=False)
        refusal = await w.server.wait_for(
            lambda: next(
                (m for m in w.bot_messages(thread_id) if "tokens for today" in m.content), None
            )
        )
        await w.settle()
        assert "You have used your 100 tokens for today." in refusal.content
        assert "resets in" in refusal.content and len(refusal.content) < 300
        assert len(w.llm.chat_requests) == 1
