"""Conversation starters end to end: /topic over the fake Discord, the opener from the fake LLM,
and a reply to it that continues as a thread conversation knowing the topic."""

from __future__ import annotations

from tests.discord.conftest import WorldFactory
from tests.fakes.llm_server import Text

OPENER = "最近どこかでおいしいラーメン食べた？"


async def test_topic_post_arrives_and_a_reply_continues_with_the_topic(
    world: WorldFactory,
) -> None:
    async with world() as w:
        ix = await w.server.inject_interaction(
            "topic enable", {"idle_minutes": 30}, user=w.server.admin_user
        )
        assert "✅" in (await w.server.wait_for_reply(ix)).content
        channel = await w.services.repos.topics.get(w.space, w.server.channel_id)
        assert channel is not None and channel.enabled and channel.idle_minutes == 30
        assert channel.space_id == w.space
        await w.services.topics.record_activity(w.space, w.server.channel_id, "ラーメンが好き")
        pool = await w.services.word_pool.words(w.space, w.server.channel_id)
        assert [word.word for word in pool] == ["ラーメン"]

        w.llm.script(Text(OPENER))
        ix = await w.server.inject_interaction("topic now", user=w.server.admin_user)
        assert "💬" in (await w.server.wait_for_reply(ix)).content
        (post,) = [m for m in w.bot_messages(w.server.channel_id) if m.content == OPENER]
        assert post.pings() == set() or not post.pings()
        opener_request = w.llm.chat_requests[-1]
        assert "ラーメン" in opener_request.messages[-1]["content"], "topic from the word pool"

        w.llm.script(Text("いいね、味噌ラーメンがおすすめ！"))
        reply = await w.server.inject_message(
            "駅前の新しい店に行ったよ", reply_to=post, mention_bot=False
        )
        thread_id = await w.wait_thread(reply)
        await w.wait_text(thread_id, "いいね、味噌ラーメンがおすすめ！")
        conversation = [
            (m["role"], m["content"])
            for m in w.llm.chat_requests[-1].messages
            if m["role"] != "system"
        ]
        assert conversation[0] == ("assistant", OPENER), "the thread knows its topic"
        assert conversation[-1][0] == "user" and "駅前の新しい店" in conversation[-1][1]
        session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        assert session is not None and session.topic == "ラーメン"


async def test_topic_commands_are_admin_only_and_tools_lists_builtins(
    world: WorldFactory,
) -> None:
    async with world() as w:
        ix = await w.server.inject_interaction("topic enable", user=w.server.user)
        refused = await w.server.wait_for_reply(ix)
        assert "admin" in refused.content.lower() or "管理" in refused.content
        assert await w.services.repos.topics.get(w.space, w.server.channel_id) is None

        ix = await w.server.inject_interaction(
            "topic schedule", {"cron": "not a cron"}, user=w.server.admin_user
        )
        assert "Invalid value" in (await w.server.wait_for_reply(ix)).content
        ix = await w.server.inject_interaction(
            "topic schedule",
            {"cron": "0 9 * * *", "timezone": "Asia/Tokyo"},
            user=w.server.admin_user,
        )
        assert "🗓️" in (await w.server.wait_for_reply(ix)).content
        channel = await w.services.repos.topics.get(w.space, w.server.channel_id)
        assert channel is not None and channel.cron == "0 9 * * *"

        ix = await w.server.inject_interaction("tools", user=w.server.user)
        listing = (await w.server.wait_for_reply(ix)).content
        assert "`read_note`" in listing and "`write_note`" in listing


async def test_knowledge_commands_list_read_and_delete(world: WorldFactory) -> None:
    from bot.store.repos.knowledge import KnowledgeRepository, KnowledgeSource

    async with world() as w:
        repo = KnowledgeRepository(w.services.db)
        entry = await repo.add(
            w.space,
            query="kyoto weather",
            title="Kyoto weather",
            summary="- sunny all week",
            session_id=None,
            md_path=None,
            sources=[KnowledgeSource("JMA", "https://www.jma.go.jp/")],
        )
        ix = await w.server.inject_interaction("knowledge list", user=w.server.user)
        assert f"#{entry.id} Kyoto weather" in (await w.server.wait_for_reply(ix)).content
        ix = await w.server.inject_interaction("knowledge read", {"entry": entry.id})
        read = (await w.server.wait_for_reply(ix)).content
        assert "sunny all week" in read and "<https://www.jma.go.jp/>" in read
        ix = await w.server.inject_interaction(
            "knowledge delete", {"entry": entry.id}, user=w.server.user
        )
        await w.server.wait_for_reply(ix)
        assert await w.services.knowledge.get(w.space, entry.id) is not None, (
            "members cannot delete"
        )
        ix = await w.server.inject_interaction(
            "knowledge delete", {"entry": entry.id}, user=w.server.admin_user
        )
        assert "🗑️" in (await w.server.wait_for_reply(ix)).content
        assert await w.services.knowledge.get(w.space, entry.id) is None


async def test_the_topics_extension_registers_as_poster_and_unregisters_on_unload(
    world: WorldFactory,
) -> None:
    async with world() as w:
        cog = w.bot.get_cog("Topics")
        assert cog is not None and w.services.topics.poster is cog
        w.services.topics.unregister_poster(object())  # type: ignore[arg-type]
        assert w.services.topics.poster is cog, "only the registered poster unregisters"
        await w.bot.remove_cog("Topics")
        assert w.services.topics.poster is None
        result = await w.services.topics.run_now(w.server.channel_id)
        assert not result.posted and "not connected" in result.reason


async def test_topic_enable_seeds_the_word_pool_from_the_channel_history(
    world: WorldFactory,
) -> None:
    async with world() as w:
        channel = w.server.channel_id
        # Written before topics were enabled: only Discord's history holds them.
        for text in ("ラーメンの店が駅前にできた", "週末は京都で紅葉を見た"):
            await w.server.inject_message(text, mention_bot=False)
        w.llm.script(Text("こんにちは"))
        asked = await w.server.inject_message("カレーの話をしよう")  # a turn, not chatter
        await w.wait_text(await w.wait_thread(asked), "こんにちは")
        assert await w.services.word_pool.words(w.space, channel) == []

        ix = await w.server.inject_interaction("topic enable", user=w.server.admin_user)
        assert "✅" in (await w.server.wait_for_reply(ix)).content
        reads = w.server.calls_to("GET", rf"^/channels/{channel}/messages$")
        # Discord's history API, one page (fewer than 100 messages: no second page asked).
        assert [call.query for call in reads] == [{"limit": "100"}]
        words = {word.word for word in await w.services.word_pool.words(w.space, channel)}
        assert {"ラーメン", "駅前", "京都", "紅葉"} <= words
        assert "カレー" not in words, "a message to the bot is a turn, not the channel's talk"
        assert not words & {"こんにちは"}, "the bot's own messages are left out"
