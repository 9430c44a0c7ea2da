"""The PlayChat client on a subset of shards, against the loopback Discord."""

from __future__ import annotations

from bot.bot import PlayChatBot, ShardedPlayChatBot, build_bot
from bot.services import ServiceOptions, open_services
from tests.conftest import SettingsFactory
from tests.fakes.discord_harness import run_client
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLMServer, Text

WAIT = 10.0
FAST = {"stream_edit_interval": 0.2, "user_cooldown_seconds": 0.0}  # the lowest allowed


async def test_a_shard_process_connects_its_shard_and_answers_only_its_servers(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    llm.default_reply = Text("Hello from shard one.")
    async with FakeDiscord(shards=2) as server:
        zero, one = server.add_guild("zero", shard=0), server.add_guild("one", shard=1)
        settings = make_settings(shard_count=2, shard_ids=[1], **FAST)
        async with open_services(settings, service_options) as services:
            bot = build_bot(services)
            assert isinstance(bot, ShardedPlayChatBot)
            async with run_client(bot, server):
                [session] = server.sessions
                assert session.shard == (1, 2)
                assert one.id in {g.id for g in bot.guilds}
                assert zero.id not in {g.id for g in bot.guilds}
                assert all(server.shard_of(g.id) == 1 for g in bot.guilds)
                await services.readiness.check(["discord"])
                status = services.readiness.status("discord")
                assert status.state == "ok", status
                owner = server.state.find_user(one.owner_id)
                assert owner is not None
                channel_id = server.guild_channels(one.id)[0].id
                message = await server.inject_message("hi", author=owner, channel_id=channel_id)
                await server.wait_for(
                    lambda: any(
                        m.content == "Hello from shard one."
                        for m in server.messages_in(message.id)  # the thread has the msg's id
                    ),
                    WAIT,
                )
                assert await bot.deps.turns.wait_idle(WAIT)
                # A message in the other shard's server never reaches this process.
                other_owner = server.state.find_user(zero.owner_id)
                other = await server.inject_message(
                    "hi", author=other_owner, channel_id=server.guild_channels(zero.id)[0].id
                )
                assert server.delivered("MESSAGE_CREATE", lambda d: d["id"] == str(other.id)) == []
                assert len(llm.chat_requests) == 1


async def test_without_shard_settings_the_client_is_the_plain_unsharded_one(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> None:
    async with (
        FakeDiscord() as server,
        open_services(make_settings(), service_options) as services,
    ):
        bot = build_bot(services)
        assert type(bot) is PlayChatBot
        async with run_client(bot, server):
            assert [s.shard for s in server.sessions] == [None]
            assert "shard" not in server.sessions[0].identify
            assert not server.calls_to("GET", r"^/gateway/bot$")
