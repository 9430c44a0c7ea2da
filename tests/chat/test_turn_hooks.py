"""After a turn, in the background: keyword tags, and the word pool of the channel the
conversation hangs off when topics are enabled there (one LLM call per turn)."""

from __future__ import annotations

from bot.chat.engine import TurnRequest
from bot.services import ServiceOptions, Services, open_services
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text

SPACE = "guild:5"
CHANNEL = 500
THREAD = 501


async def turn(services: Services, text: str, session_id: str | None, space: str) -> str | None:
    """Run one turn to the end; the session id."""
    async for event in services.engine.run_turn(TurnRequest(text, session_id, space_id=space)):
        session_id = getattr(event, "session_id", session_id)
    return session_id


async def thread_session(services: Services) -> str:
    """A thread of CHANNEL (topics enabled there) with its session."""
    await services.topics.configure(CHANNEL, {"enabled": True}, space=SPACE)
    session = await services.conversations.for_channel(
        SPACE, THREAD, title="t", guild_id=5, parent_channel_id=CHANNEL
    )
    return session.id


async def test_turn_tags_messages_and_feeds_its_channel_pool_without_extra_llm_calls(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    async with open_services(make_settings(), service_options) as services:
        await services.tasks.drain()
        session_id = await thread_session(services)
        llm.script(Text("京都の紅葉は十一月が見頃で、嵐山や東福寺が人気です。"))
        await turn(services, "京都の紅葉の名所を教えて", session_id, SPACE)
        await services.tasks.drain()
        assert len(llm.chat_requests) == 1, "tagging in keyword mode costs no LLM call"
        rows = await services.db.fetchall(
            "SELECT m.role, t.tag, t.space_id FROM message_tags t "
            "JOIN messages m ON m.id = t.message_id"
        )
        user_tags = [row["tag"] for row in rows if row["role"] == "user"]
        assert len(user_tags) == 3 and "紅葉" in user_tags
        assert {row["space_id"] for row in rows} == {SPACE}
        pool = {word.word for word in await services.word_pool.words(SPACE, CHANNEL)}
        assert {"京都", "紅葉", "嵐山"} <= pool

        llm.script(Text("ラーメンなら札幌です。"))
        await turn(services, "ラーメンの話をしよう", None, LOCAL)
        await services.tasks.drain()
        assert await services.word_pool.snapshot(LOCAL) == [], "no topic channel, no pool"
        assert "ラーメン" not in await services.word_pool.snapshot(SPACE)


async def test_the_word_pool_after_a_restart_is_the_one_before(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    settings = make_settings()
    llm.default_reply = Text("富士山と温泉の話")
    async with open_services(settings, service_options) as services:
        session_id = await thread_session(services)
        for text in ("ラーメンが好き", "カメラを買った", "旅行に行きたい"):
            await turn(services, text, session_id, SPACE)
        await services.tasks.drain()
        before = await services.word_pool.words(SPACE, CHANNEL)
    async with open_services(settings, service_options) as services:
        await services.tasks.drain()
        assert await services.word_pool.words(SPACE, CHANNEL) == before
        assert {"ラーメン", "温泉"} <= {word.word for word in before}
