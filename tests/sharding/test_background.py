"""Background work keeps to this process's shards: two processes' worth of schedulers and
purges over one database each touch every server exactly once."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from bot.services import ServiceOptions, Services, open_services
from bot.store.repos.tags import TagRepository
from bot.store.repos.topics import TopicRepository
from bot.store.shards import ShardFilter
from bot.topics.picker import TopicPicker
from bot.topics.scheduler import TopicScheduler
from bot.topics.service import TopicService
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text
from tests.sharding.test_shards import guild_on

NOW = datetime(2026, 3, 2, 3, 0, tzinfo=UTC)
# Four servers, two on each shard of two; one channel each (channel id = guild id + 1).
GUILDS = [guild_on(0, 2, 10**11), guild_on(1, 2, 10**11 + 7), guild_on(0, 2, 10**11 + 20),
          guild_on(1, 2, 10**11 + 33)]  # fmt: skip
LOCAL_CHANNEL = 4242


@dataclass
class Words:
    """A word pool that always has something to talk about."""

    async def pick(
        self, space: str, channel_id: int, rng: random.Random, exclude: object = frozenset()
    ) -> str | None:
        return "ramen"


@dataclass
class Poster:
    """Records the openers each process posted."""

    posts: list[int] = field(default_factory=list)

    async def post_topic(self, channel_id: int, text: str) -> int | None:
        self.posts.append(channel_id)
        return 9000 + len(self.posts)


@pytest.fixture
async def services(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> AsyncIterator[Services]:
    llm.default_reply = Text("Anyone tried the new ramen place?")
    async with open_services(make_settings(), service_options) as opened:
        yield opened


def topic_service(services: Services) -> TopicService:
    """A topic service over the shared database (one per simulated process)."""
    picker = TopicPicker(Words(), TagRepository(services.db), random.Random(1))
    return TopicService(
        TopicRepository(services.db), picker, services.gateway, services.settings, clock=lambda: NOW
    )


async def test_each_channel_is_scheduled_and_posted_by_exactly_one_process(
    services: Services,
) -> None:
    setup = topic_service(services)
    common = {"enabled": True, "cron": "0 9 * * *", "max_posts_per_day": 5}
    for guild_id in GUILDS:
        await setup.configure(guild_id + 1, {**common, "guild_id": guild_id})
    # A channel configured without its server is placed by its space (local: shard 0's).
    await setup.configure(LOCAL_CHANNEL, common, space="local:local")
    processes = []
    for shard in (0, 1):
        service = topic_service(services)
        poster = Poster()
        service.register_poster(poster)
        scheduler = TopicScheduler(service, shards=ShardFilter.of(2, [shard]))
        await service.load()
        processes.append((scheduler, poster, await scheduler.rebuild()))
    (_, zero_poster, zero_ids), (_, one_poster, one_ids) = processes
    zero_posts, one_posts = zero_poster.posts, one_poster.posts
    assert set(zero_ids) == {
        *(f"{kind}:{GUILDS[i] + 1}" for i in (0, 2) for kind in ("idle", "cron")),
        f"idle:{LOCAL_CHANNEL}",
        f"cron:{LOCAL_CHANNEL}",
    }
    assert set(one_ids) == {f"{kind}:{GUILDS[i] + 1}" for i in (1, 3) for kind in ("idle", "cron")}
    assert len(zero_ids) == 6 and len(one_ids) == 4
    # Fire every cron job of both processes, as apscheduler would at 09:00.
    for scheduler, _, _ in processes:
        for job in scheduler.scheduler.get_jobs():
            if job.id.startswith("cron:"):
                await job.func(*job.args)
    assert sorted(zero_posts + one_posts) == sorted([g + 1 for g in GUILDS] + [LOCAL_CHANNEL])
    assert set(zero_posts) == {GUILDS[0] + 1, GUILDS[2] + 1, LOCAL_CHANNEL}
    assert set(one_posts) == {GUILDS[1] + 1, GUILDS[3] + 1}
    # Unsharded (no SHARD_COUNT): one process schedules everything, as before.
    everything = TopicScheduler(topic_service(services))
    assert len(await everything.rebuild()) == 2 * (len(GUILDS) + 1)


async def test_each_left_server_is_purged_by_the_process_of_its_shard(services: Services) -> None:
    spaces = services.spaces
    left = [f"guild:{g}" for g in GUILDS]
    for space in left:
        await spaces.ensure(space)
        await spaces.mark_left(space, NOW - timedelta(days=30))
    cutoff = NOW - timedelta(days=7)
    one = await spaces.purge_left_before(cutoff, owned=ShardFilter.of(2, [1]).owns_space)
    assert sorted(r.space_id for r in one) == sorted([left[1], left[3]])
    assert sorted(r.id for r in await spaces.list() if r.id in left) == sorted([left[0], left[2]])
    zero = await spaces.purge_left_before(cutoff, owned=ShardFilter.of(2, [0]).owns_space)
    assert sorted(r.space_id for r in zero) == sorted([left[0], left[2]])
    assert not [r for r in await spaces.list() if r.id in left]
