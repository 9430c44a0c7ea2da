"""What Discord shows of the readiness: the bot's presence, and a member's notice when the model
cannot be reached (friendly, without the address or a setting name)."""

from __future__ import annotations

from typing import Any

from bot.prompts.ui_text import ui_text
from tests.discord.conftest import World, WorldFactory, world
from tests.ops.conftest import closed_port

__all__ = ["world"]  # the running-bot fixture, used here by name


def _presence(w: World) -> Any:
    return w.server.gateway.presences[-1] if w.server.gateway.presences else None


async def test_the_presence_follows_the_model(world: WorldFactory) -> None:
    ui = ui_text("en")
    async with world() as w:
        await w.services.readiness.check(["model"])  # ok: nothing to announce
        down = f"http://127.0.0.1:{closed_port()}"
        await w.services.settings.update({"llm_api_base": down})
        await w.services.tasks.drain()  # the change re-checks the model
        idle = await w.server.wait_for(
            lambda: p if (p := _presence(w)) and p.get("status") == "idle" else None
        )
        assert [a.get("state") for a in idle["activities"]] == [ui.presence_model_down]
        await w.services.settings.update({"llm_api_base": w.llm.url})
        await w.services.tasks.drain()
        online = await w.server.wait_for(
            lambda: p if (p := _presence(w)) and p.get("status") == "online" else None
        )
        assert online["activities"] == []
        assert len(w.server.gateway.presences) == 2, "one update per change, none at start"


async def test_a_member_gets_a_friendly_notice_without_the_address(world: WorldFactory) -> None:
    port = closed_port()
    ui = ui_text("en")
    async with world(llm_api_base=f"http://127.0.0.1:{port}") as w:
        message = await w.server.inject_message("hello?")
        thread_id = await w.wait_thread(message)
        reply = await w.wait_text(thread_id, ui.error_prefix + ui.model_unavailable)
        assert str(port) not in reply.content and "LLM_" not in reply.content
        assert "127.0.0.1" not in reply.content
