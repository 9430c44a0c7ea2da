"""Idle chats and periodic posts with a controllable clock, a real DB and the loopback LLM."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.services import ServiceOptions, Services, open_services
from bot.store.engine.database import Database
from bot.store.repos.tags import TagRepository
from bot.store.repos.topics import TopicRepository
from bot.store.spaces import ALL_SPACES
from bot.topics.picker import TopicPicker
from bot.topics.policy import in_active_hours
from bot.topics.scheduler import JOB_DEFAULTS, TopicScheduler
from bot.topics.service import SEED_MESSAGES, TopicService
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text

CHANNEL = 555
SPACE = "guild:1"
START = datetime(2026, 3, 2, 3, 0, tzinfo=UTC)  # 12:00 in Tokyo


@dataclass
class Clock:
    now: datetime = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@dataclass
class Words:
    words: list[str] = field(default_factory=list)

    asked: list[tuple[str, int]] = field(default_factory=list)

    async def pick(
        self, space: str, channel_id: int, rng: random.Random, exclude: object = frozenset()
    ) -> str | None:
        self.asked.append((space, channel_id))
        choices = [w for w in self.words if w not in exclude]  # type: ignore[operator]
        return rng.choice(choices) if choices else None


@dataclass
class Poster:
    posts: list[tuple[int, str]] = field(default_factory=list)

    async def post_topic(self, channel_id: int, text: str) -> int | None:
        self.posts.append((channel_id, text))
        return 9000 + len(self.posts)


@dataclass
class World:
    services: Services
    service: TopicService
    clock: Clock
    words: Words
    poster: Poster
    llm: FakeLLMServer


@pytest.fixture
async def world(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> AsyncIterator[World]:
    async with open_services(make_settings(), service_options) as services:
        clock = Clock()
        words = Words(["ラーメン", "カメラ"])
        picker = TopicPicker(words, TagRepository(services.db), random.Random(1))
        service = TopicService(
            TopicRepository(services.db), picker, services.gateway, services.settings, clock=clock
        )
        poster = Poster()
        service.register_poster(poster)
        clock.now = START - timedelta(hours=5)
        await service.configure(
            CHANNEL,
            {
                "enabled": True,
                "idle_minutes": 60,
                "active_start": "09:00",
                "active_end": "23:00",
                "timezone": "Asia/Tokyo",
                "max_posts_per_day": 3,
                "language": "ja",
            },
            space=SPACE,
        )
        clock.now = START
        llm.default_reply = Text("最近おいしいラーメン食べた？")
        yield World(services, service, clock, words, poster, llm)


async def answer(world: World) -> None:
    """Someone answers the opener just posted (so no backoff lengthens the next wait)."""
    await world.service.record_activity(SPACE, CHANNEL, "うん", at=world.clock.now)


async def test_no_post_before_threshold_exactly_one_after(world: World) -> None:
    await world.service.record_activity(SPACE, CHANNEL, at=START)
    world.clock.advance(minutes=59)
    assert not (await world.service.check_idle(CHANNEL)).posted
    assert world.poster.posts == []
    world.clock.advance(minutes=2)
    result = await world.service.check_idle(CHANNEL)
    assert result.posted and world.poster.posts == [(CHANNEL, "最近おいしいラーメン食べた？")]
    world.clock.advance(minutes=10)
    assert not (await world.service.check_idle(CHANNEL)).posted, "one post per quiet spell"
    assert len(world.poster.posts) == 1
    system = world.llm.chat_requests[-1].messages[0]["content"]
    assert "Japanese" in system
    assert set(world.words.asked) == {(SPACE, CHANNEL)}, "the channel's own pool only"


async def test_none_outside_active_hours(world: World) -> None:
    world.clock.now = datetime(2026, 3, 2, 15, 30, tzinfo=UTC)  # 00:30 in Tokyo
    result = await world.service.check_idle(CHANNEL)
    assert not result.posted and "active hours" in result.reason
    assert world.poster.posts == []


async def test_daily_cap_holds(world: World) -> None:
    world.words.words.extend(["映画", "旅行", "猫"])
    for _ in range(5):
        world.clock.advance(minutes=61)
        if (await world.service.check_idle(CHANNEL)).posted:
            await answer(world)
    assert len(world.poster.posts) == 3
    result = await world.service.check_idle(CHANNEL)
    assert "cap" in result.reason or "idle" in result.reason
    world.clock.now = datetime(2026, 3, 3, 1, 0, tzinfo=UTC)  # next day, 10:00 in Tokyo
    assert (await world.service.check_idle(CHANNEL)).posted


async def test_no_burst_after_twelve_hours_of_downtime(world: World) -> None:
    # The bot was down for 12 hours (the last message came just before); at restart the missed
    # interval runs would fire back to back if they were not coalesced.
    await world.service.record_activity(SPACE, CHANNEL, at=START - timedelta(hours=12))
    results = [await world.service.check_idle(CHANNEL) for _ in range(72)]
    assert sum(r.posted for r in results) == 1
    assert len(world.poster.posts) == 1


async def test_recent_topics_are_avoided(world: World) -> None:
    topics = []
    for _ in range(2):
        world.clock.advance(minutes=61)
        result = await world.service.check_idle(CHANNEL)
        topics.append(result.topic)
        await answer(world)
    assert sorted(topics) == ["カメラ", "ラーメン"]
    world.clock.advance(minutes=61)
    result = await world.service.check_idle(CHANNEL)
    assert not result.posted, "both words were used recently and there are no tags"


async def test_empty_pool_and_no_tags_skip_with_a_log_line(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.words.words.clear()
    world.clock.advance(minutes=61)
    with caplog.at_level(logging.INFO, logger="bot.topics.service"):
        result = await world.service.check_idle(CHANNEL)
    assert not result.posted and world.poster.posts == []
    assert any("word pool is empty" in record.getMessage() for record in caplog.records)
    assert world.llm.chat_requests == [], "no LLM call without a topic"


async def test_empty_pool_falls_back_to_recent_tags(world: World) -> None:
    world.words.words.clear()
    repos = world.services.repos
    tags = TagRepository(world.services.db)
    for space, channel, said in ((SPACE, CHANNEL, ["富士山", "登山"]), (SPACE, 999, ["よそ"])):
        session = await repos.sessions.create(space, parent_channel_id=channel)
        message = await repos.messages.add(space, session.id, "user", "富士山に登った")
        await tags.add_message_tags(space, message.id, said)
    elsewhere = await repos.sessions.create("guild:2", parent_channel_id=CHANNEL)
    message = await repos.messages.add("guild:2", elsewhere.id, "user", "海")
    await tags.add_message_tags("guild:2", message.id, ["海"])
    world.clock.advance(minutes=61)
    result = await world.service.check_idle(CHANNEL)
    assert result.posted and result.topic in {"富士山", "登山"}


async def test_cron_post_respects_cap_and_records(world: World) -> None:
    await world.service.configure(CHANNEL, {"cron": "0 9 * * *", "max_posts_per_day": 1})
    assert (await world.service.run_cron(CHANNEL)).posted
    assert not (await world.service.run_cron(CHANNEL)).posted
    post = await TopicRepository(world.services.db).post_for_message(SPACE, 9001)
    assert post is not None and post.kind == "cron" and post.space_id == SPACE
    assert await TopicRepository(world.services.db).post_for_message("guild:2", 9001) is None


def test_active_hours_wrap_past_midnight() -> None:
    assert in_active_hours(time(23, 30), time(22, 0), time(2, 0))
    assert in_active_hours(time(1, 0), time(22, 0), time(2, 0))
    assert not in_active_hours(time(12, 0), time(22, 0), time(2, 0))
    assert in_active_hours(time(5, 0), time(0, 0), time(0, 0))


async def test_scheduler_jobs_follow_the_database_and_coalesce(world: World) -> None:
    scheduler = TopicScheduler(world.service)
    await world.service.configure(CHANNEL, {"cron": "30 8 * * 1-5"})
    await world.service.configure(777, {"enabled": False})
    ids = await scheduler.rebuild()
    assert ids == [f"idle:{CHANNEL}", f"cron:{CHANNEL}"]
    for job in scheduler.scheduler.get_jobs():
        assert job.coalesce is True and job.max_instances == 1
        assert job.misfire_grace_time == JOB_DEFAULTS["misfire_grace_time"]
    await world.service.configure(CHANNEL, {"enabled": False})
    assert await scheduler.rebuild() == []


async def test_activity_in_unconfigured_channels_costs_nothing(
    world: World, tmp_path: Path
) -> None:
    await world.service.record_activity(SPACE, 123456, "ラーメン")
    assert await TopicRepository(world.services.db).get(ALL_SPACES, 123456) is None
    assert await world.services.word_pool.snapshot(ALL_SPACES) == []


class HeldTopics(TopicRepository):
    """Holds the recording of a posted opener until released; tells when it was written."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.writing, self.release, self.written = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def add_post(self, *args: Any, **kwargs: Any) -> int:
        self.writing.set()
        await self.release.wait()
        post_id = await super().add_post(*args, **kwargs)
        self.written.set()
        return post_id


async def test_an_opener_already_posted_is_recorded_when_its_job_is_cancelled(
    world: World,
) -> None:
    """The process stops (the scheduler cancels running jobs) between the post and its
    record: the record is still written, so the daily cap counts the post."""
    repo = HeldTopics(world.services.db)
    picker = TopicPicker(world.words, TagRepository(world.services.db), random.Random(1))
    service = TopicService(
        repo, picker, world.services.gateway, world.services.settings, clock=world.clock
    )
    service.register_poster(world.poster)
    job = asyncio.create_task(service.run_now(CHANNEL, space=SPACE))
    await asyncio.wait_for(repo.writing.wait(), 10)
    assert len(world.poster.posts) == 1
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    repo.release.set()
    await asyncio.wait_for(repo.written.wait(), 10)
    post = await repo.post_for_message(SPACE, 9001)
    assert post is not None and post.kind == "manual"


async def test_enabling_reads_at_most_the_seed_bound_of_history_and_survives_a_failure(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> None:
    async with open_services(make_settings(), service_options) as services:
        topics = services.topics
        asked: list[int] = []

        async def history(limit: int) -> list[str]:
            asked.append(limit)
            return ["カメラを買った"] * limit

        async def broken(limit: int) -> list[str]:
            raise RuntimeError("Missing Access")

        await topics.configure(CHANNEL, {"enabled": False}, space=SPACE, history=history)
        assert asked == [], "disabled: nothing read"
        await topics.configure(CHANNEL, {"enabled": True}, space=SPACE, history=history)
        assert asked == [SEED_MESSAGES] == [200]
        pool = await services.word_pool.words(SPACE, CHANNEL)
        assert [(w.word, w.count) for w in pool] == [("カメラ", SEED_MESSAGES)]
        await topics.configure(CHANNEL, {"idle_minutes": 30}, space=SPACE, history=history)
        assert asked == [200], "only enabling seeds"
        channel = await topics.configure(CHANNEL, {"enabled": True}, space=SPACE, history=broken)
        assert channel.enabled
