"""Discord readiness per shard: a client on two shards reports each shard (connected, latency),
and "degraded", naming the shard, while one of them is down."""

from __future__ import annotations

from bot.bot import ShardedPlayChatBot, build_bot
from bot.ops.probes import ShardLink, discord_check
from bot.services import ServiceOptions, open_services
from tests.conftest import SettingsFactory
from tests.fakes.discord_harness import run_client
from tests.fakes.discord_server import FakeDiscord


async def test_each_shard_is_reported_and_one_down_degrades_discord(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> None:
    async with FakeDiscord(shards=2) as server:
        server.add_guild("zero", shard=0)
        server.add_guild("one", shard=1)
        settings = make_settings(shard_count=2, shard_ids=[0, 1])
        async with open_services(settings, service_options) as services:
            bot = build_bot(services)
            assert isinstance(bot, ShardedPlayChatBot)
            async with run_client(bot, server):
                assert sorted(s.shard for s in server.sessions) == [(0, 2), (1, 2)]
                await services.readiness.check(["discord"])
                status = services.readiness.status("discord")
                assert status.state == "ok", status
                assert [(p.name, p.state) for p in status.parts] == [
                    ("Shard 0", "ok"),
                    ("Shard 1", "ok"),
                ]
                assert status.facts["shards_connected"] == "2 of 2"
                assert status.facts["servers"] == len(bot.guilds) >= 2

                await bot.shards[1].disconnect()
                await services.readiness.check(["discord"])
                status = services.readiness.status("discord")
                assert status.state == "degraded", status
                assert [(p.name, p.state) for p in status.parts] == [
                    ("Shard 0", "ok"),
                    ("Shard 1", "down"),
                ]
                assert status.facts["shards_connected"] == "1 of 2"
                assert "shard(s) 1 are not" in status.detail
                assert services.readiness.overall() == "degraded"


def test_shard_parts_carry_latency_and_every_shard_down_is_down() -> None:
    links = [ShardLink(0, True, 0.0421), ShardLink(3, True, float("nan"))]
    ok = discord_check(connected=True, ever=True, servers=5, latency=0.05, shards=links)
    assert ok.state == "ok"
    assert [p.detail for p in ok.parts] == ["connected, latency 42 ms", "connected"]
    assert ok.facts["latency_ms"] == 50

    gone = [ShardLink(0, False), ShardLink(3, False)]
    down = discord_check(connected=False, ever=True, servers=0, latency=None, shards=gone)
    assert down.state == "down"
    assert [p.last_error for p in down.parts] == ["disconnected", "disconnected"]
    assert down.facts["shards_connected"] == "0 of 2"

    unsharded = discord_check(connected=True, ever=True, servers=1, latency=None)
    assert unsharded.parts == () and "shards_connected" not in unsharded.facts
