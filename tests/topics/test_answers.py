"""Topic posts people answer: replies within the window are recorded, unanswered openers back
off (stored, so a restart keeps it), quiet hours in the server's zone, and the quiet wait
checked at minute resolution. A controllable clock, a real database, the loopback LLM."""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

import pytest

from bot.config import QuietHours, Settings, parse_quiet_hours
from bot.errors import ConfigurationError
from bot.services import ServiceOptions, Services, open_services
from bot.store.repos.tags import TagRepository
from bot.store.repos.topics import AnswerCounts, TopicRepository
from bot.topics.picker import TopicPicker
from bot.topics.policy import quiet_minutes
from bot.topics.scheduler import TopicScheduler
from bot.topics.service import TopicService
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text
from tests.topics.test_topics import Clock, Poster, Words

CHANNEL = 556
SPACE = "guild:2"
START = datetime(2026, 3, 2, 3, 0, tzinfo=UTC)  # 12:00 in Tokyo, 22:00 in New York (EST)


@dataclass
class Bench:
    services: Services
    clock: Clock
    poster: Poster
    llm: FakeLLMServer

    def service(self) -> TopicService:
        """A topic service over the bench's database (a new one: as after a restart)."""
        words = Words(["ラーメン", "カメラ", "映画", "旅行", "猫", "公園"])
        picker = TopicPicker(words, TagRepository(self.services.db), random.Random(1))
        service = TopicService(
            TopicRepository(self.services.db),
            picker,
            self.services.gateway,
            self.services.settings,
            clock=self.clock,
        )
        service.register_poster(self.poster)
        return service

    def at(self, **delta: float) -> None:
        self.clock.now = START + timedelta(**delta)


Bencher = Callable[..., contextlib.AbstractAsyncContextManager[tuple[Bench, TopicService]]]


@pytest.fixture
def bench(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> Bencher:
    """`async with bench(**settings) as (b, service):` a channel idle 60 min, all day."""

    @contextlib.asynccontextmanager
    async def factory(**settings: Any) -> AsyncIterator[tuple[Bench, TopicService]]:
        async with open_services(make_settings(**settings), service_options) as services:
            b = Bench(services, Clock(START - timedelta(hours=5)), Poster(), llm)
            service = b.service()
            await service.configure(
                CHANNEL,
                {
                    "enabled": True,
                    "idle_minutes": 60,
                    "active_start": "00:00",
                    "active_end": "00:00",
                    "timezone": "Asia/Tokyo",
                    "max_posts_per_day": 20,
                },
                space=SPACE,
            )
            b.at()
            await service.record_activity(SPACE, CHANNEL, at=START)
            llm.default_reply = Text("最近おいしいラーメン食べた？")
            yield b, service

    return factory


async def _answered(b: Bench) -> list[bool]:
    posts = await TopicRepository(b.services.db).recent_posts(SPACE, CHANNEL)
    return [post.answered_at is not None for post in reversed(posts)]


async def test_a_reply_within_the_window_answers_the_opener(bench: Bencher) -> None:
    async with bench(topic_reply_window_minutes=30) as (b, service):
        b.at(minutes=60)
        assert (await service.check_idle(CHANNEL)).posted
        b.at(minutes=60 + 30)  # the window's last moment
        await service.record_activity(SPACE, CHANNEL, "いいね")
        assert await _answered(b) == [True]

        b.at(minutes=200)
        assert (await service.check_idle(CHANNEL)).posted
        b.at(minutes=200, seconds=30 * 60 + 1)  # one second too late
        await service.record_activity(SPACE, CHANNEL, "遅れてごめん")
        assert await _answered(b) == [True, False]
        b.at(minutes=400)  # the late message + 120 min: one unanswered opener doubled the wait
        assert (await service.check_idle(CHANNEL)).posted
        b.at(minutes=410)
        assert await service.answer_counts(SPACE) == {CHANNEL: AnswerCounts(3, 1, 1)}
        assert await service.answer_counts("guild:3") == {}, "another space sees none"


async def test_unanswered_openers_double_the_wait_to_the_cap_and_a_reply_resets_it(
    bench: Bencher,
) -> None:
    async with bench(topic_reply_window_minutes=30, topic_backoff_max_minutes=180) as (b, s):
        b.at(minutes=60)
        assert (await s.check_idle(CHANNEL)).posted  # opener 1 at +60, never answered
        b.at(minutes=60 + 119)
        restarted = b.service()  # a new process: the backoff comes from the database
        await restarted.load()
        refused = await restarted.check_idle(CHANNEL)
        assert not refused.posted and "threshold 120 min" in refused.reason
        b.at(minutes=60 + 120)
        assert (await restarted.check_idle(CHANNEL)).posted  # opener 2 at +180
        b.at(minutes=180 + 179)
        refused = await restarted.check_idle(CHANNEL)
        assert "threshold 180 min" in refused.reason, "240 min capped at 180"
        b.at(minutes=180 + 180)
        assert (await restarted.check_idle(CHANNEL)).posted  # opener 3 at +360
        b.at(minutes=365)
        await restarted.record_activity(SPACE, CHANNEL, "おもしろそう")
        b.at(minutes=365 + 59)
        assert "threshold 60 min" in (await restarted.check_idle(CHANNEL)).reason
        b.at(minutes=365 + 60)
        assert (await restarted.check_idle(CHANNEL)).posted, "the reply reset the backoff"
        assert await _answered(b) == [False, False, True, False]


async def test_quiet_hours_hold_openers_in_the_servers_time_zone(bench: Bencher) -> None:
    async with bench(topic_quiet_hours="23-7") as (b, service):
        await b.services.spaces.set_timezone(SPACE, "America/New_York")
        await service.configure(CHANNEL, {"cron": "0 * * * *"})
        b.at(hours=1, minutes=30)  # 23:30 in New York, 14:30 in Tokyo (the channel's zone)
        refused = await service.check_idle(CHANNEL)
        assert not refused.posted and refused.reason == "quiet hours 23:00–07:00 (America/New_York)"
        assert "quiet hours" in (await service.run_cron(CHANNEL)).reason
        assert b.poster.posts == []
        assert (await service.run_now(CHANNEL)).posted, "an admin's /topic now still posts"
        b.poster.posts.clear()
        b.at(hours=8, minutes=59)  # 06:59 in New York
        assert "quiet hours" in (await service.check_idle(CHANNEL)).reason
        assert b.poster.posts == []
        b.at(hours=9)  # 07:00 in New York
        assert (await service.check_idle(CHANNEL)).posted

        await b.services.spaces.set_timezone(SPACE, None)
        b.at(hours=15, minutes=30)  # 00:30 in Tokyo: no server zone, so the channel's
        assert (await service.run_cron(CHANNEL)).reason == "quiet hours 23:00–07:00 (Asia/Tokyo)"
        b.at(hours=22)  # 07:00 in Tokyo
        assert (await service.run_cron(CHANNEL)).posted


def test_quiet_hours_parse_wrap_midnight_and_refuse_bad_values() -> None:
    night = parse_quiet_hours("23-7")
    assert night == QuietHours(time(23), time(7))
    assert night.covers(time(23)) and night.covers(time(3)) and night.covers(time(6, 59))
    assert not night.covers(time(7)) and not night.covers(time(22, 59))
    assert parse_quiet_hours(" 22:30 - 06:00 ") == QuietHours(time(22, 30), time(6))
    assert parse_quiet_hours("13-24") == QuietHours(time(13), time(0))
    assert parse_quiet_hours("") is None
    for bad in ("25-7", "7", "23-7-1", "ab", "23:60-7", "7-7", "-3-4"):
        with pytest.raises(ValueError, match="23-7"):
            parse_quiet_hours(bad)


def test_a_bad_quiet_hours_value_stops_the_start_with_its_name(
    make_settings: SettingsFactory,
) -> None:
    assert make_settings(topic_quiet_hours="23-7").topic_quiet_hours == "23-7"
    with pytest.raises((ConfigurationError, ValueError), match="topic_quiet_hours"):
        make_settings(topic_quiet_hours="23 to 7")
    assert Settings.model_fields["topic_quiet_hours"].default == ""


async def test_the_quiet_wait_is_checked_to_the_minute_not_at_the_tick(bench: Bencher) -> None:
    async with bench() as (b, service):
        await service.configure(CHANNEL, {"check_interval_minutes": 45})
        await service.record_activity(SPACE, CHANNEL, at=START)
        scheduler = TopicScheduler(service)
        await scheduler.rebuild()
        job = scheduler.scheduler.get_job(f"idle:{CHANNEL}")
        assert job is not None and job.func == scheduler.check_idle
        # configure() counts as activity: the wait runs from START, the last human message.
        assert scheduler.next_runs()[f"idle:{CHANNEL}"] == START + timedelta(minutes=60)
        b.at(minutes=59)
        assert not (await scheduler.check_idle(CHANNEL)).posted
        assert scheduler.next_runs()[f"idle:{CHANNEL}"] == START + timedelta(minutes=60)
        b.at(minutes=60)
        assert (await scheduler.check_idle(CHANNEL)).posted
        # The next wait is doubled once the opener's window closes unanswered; the check runs
        # when the plain wait ends, and again whenever the wait is found longer.
        assert scheduler.next_runs()[f"idle:{CHANNEL}"] == START + timedelta(minutes=120)
        b.at(minutes=120)
        refused = await scheduler.check_idle(CHANNEL)
        assert not refused.posted and refused.due_at == START + timedelta(minutes=180)


def test_the_quiet_wait_doubles_per_unanswered_opener_and_stops_at_the_cap() -> None:
    assert [quiet_minutes(60, n, 180) for n in range(5)] == [60, 120, 180, 180, 180]
    assert quiet_minutes(300, 3, 180) == 300, "never below the channel's own quiet minutes"
    assert quiet_minutes(1, 10_000, 7 * 24 * 60) == 7 * 24 * 60
