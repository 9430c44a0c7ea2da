"""After a turn, in the background: keyword tags and the word pool (one LLM call per turn)."""

from __future__ import annotations

from bot.chat.engine import TurnRequest
from bot.services import ServiceOptions, open_services
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text


async def test_turn_tags_messages_and_feeds_word_pool_without_extra_llm_calls(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    async with open_services(make_settings(), service_options) as services:
        await services.tasks.drain()
        llm.script(Text("京都の紅葉は十一月が見頃で、嵐山や東福寺が人気です。"))
        events = [
            e async for e in services.engine.run_turn(TurnRequest("京都の紅葉の名所を教えて"))
        ]
        await services.tasks.drain()
        assert len(llm.chat_requests) == 1, "tagging in keyword mode costs no LLM call"
        rows = await services.db.fetchall(
            "SELECT m.role, t.tag FROM message_tags t JOIN messages m ON m.id = t.message_id"
        )
        user_tags = [row["tag"] for row in rows if row["role"] == "user"]
        assert len(user_tags) == 3 and "紅葉" in user_tags
        assert {"京都", "紅葉", "嵐山"} <= set(services.word_pool.snapshot())
        assert events


async def test_word_pool_is_reseeded_after_restart(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    settings = make_settings()
    llm.default_reply = Text("富士山と温泉の話")
    async with open_services(settings, service_options) as services:
        session_id = None
        for text in ("ラーメンが好き", "カメラを買った", "旅行に行きたい"):
            async for event in services.engine.run_turn(TurnRequest(text, session_id)):
                session_id = getattr(event, "session_id", session_id)
        await services.tasks.drain()
        before = services.word_pool.snapshot()
    async with open_services(settings, service_options) as services:
        await services.tasks.drain()
        assert services.word_pool.snapshot() == before
        assert "ラーメン" in before and "温泉" in before
