"""Topic settings changes reach the scheduler through the service's change listeners."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from bot.services import ServiceOptions, Services, open_services
from bot.topics.scheduler import TopicScheduler
from tests.conftest import LOCAL, SettingsFactory

CHANNEL = 4242


@pytest.fixture
async def opened(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> AsyncIterator[Services]:
    async with open_services(make_settings(), service_options) as services:
        yield services


async def test_every_settings_change_calls_the_listeners_once(opened: Services) -> None:
    calls: list[str] = []

    async def listener() -> None:
        calls.append("changed")

    topics = opened.topics
    topics.add_change_listener(listener)
    topics.add_change_listener(listener)  # registering twice still means one call
    await topics.configure(CHANNEL, {"enabled": True})
    await topics.configure(CHANNEL, {"idle_minutes": 30})
    await topics.record_activity(LOCAL, CHANNEL, "hello")
    assert calls == ["changed", "changed"], "activity is not a settings change"
    with pytest.raises(ValueError):
        await topics.configure(CHANNEL, {"timezone": "Mars/Olympus"})
    assert len(calls) == 2, "a refused change is no change"
    topics.remove_change_listener(listener)
    await topics.configure(CHANNEL, {"enabled": False})
    assert len(calls) == 2


async def test_a_failing_listener_is_logged_and_the_change_stands(
    opened: Services, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken() -> None:
        raise RuntimeError("scheduler is gone")

    opened.topics.add_change_listener(broken)
    channel = await opened.topics.configure(CHANNEL, {"enabled": True})
    assert channel.enabled
    assert any(r.levelno == logging.ERROR and "listener" in r.getMessage() for r in caplog.records)


class CountingScheduler(TopicScheduler):
    """Counts rebuilds, to see when the scheduler hears about changes."""

    rebuilds = 0

    async def rebuild(self) -> list[str]:
        self.rebuilds += 1
        return await super().rebuild()


async def test_a_started_scheduler_rebuilds_on_every_change_until_shut_down(
    opened: Services,
) -> None:
    scheduler = CountingScheduler(opened.topics)
    await scheduler.start()
    try:
        assert scheduler.scheduler.get_jobs() == []
        await opened.topics.configure(CHANNEL, {"enabled": True, "cron": "0 9 * * *"})
        assert {job.id for job in scheduler.scheduler.get_jobs()} == {
            f"idle:{CHANNEL}",
            f"cron:{CHANNEL}",
        }
        await opened.topics.configure(CHANNEL, {"cron": None})
        assert {job.id for job in scheduler.scheduler.get_jobs()} == {f"idle:{CHANNEL}"}
        assert scheduler.rebuilds == 3, "once at start, then once per change"
    finally:
        scheduler.shutdown()
    await opened.topics.configure(CHANNEL, {"enabled": False})
    assert scheduler.rebuilds == 3, "a stopped scheduler no longer listens"
