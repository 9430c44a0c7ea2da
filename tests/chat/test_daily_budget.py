"""Daily token budgets through the engine: what the loopback LLM received, and what was said."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from bot.chat.daily_budget import budget_day
from bot.chat.engine import TurnRequest
from bot.services import ServiceOptions, Services, open_services
from bot.store.repos.api_logs import ApiLogFilter
from bot.turn.events import DoneEvent, ErrorEvent, Event
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import Drop, FakeLLMServer, Text, ToolCalls

GUILD = "guild:333333333333333333"
ALICE, BOB = "1001", "1002"


@dataclass
class Clock:
    """The budgets' clock, moved by the test."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 12, 7, 12, 0, tzinfo=UTC))


@pytest.fixture
async def services(
    make_settings: SettingsFactory, service_options: ServiceOptions, clock: Clock
) -> AsyncIterator[Services]:
    service_options.budget_clock = clock
    async with open_services(make_settings("ollama"), service_options) as opened:
        yield opened


async def turn(services: Services, text: str, author: str = ALICE) -> list[Event]:
    """One member's turn in the guild (each in a new session)."""
    request = TurnRequest(
        text, space_id=GUILD, author_id=author, author_name=f"m{author}", source="discord"
    )
    return [event async for event in services.engine.run_turn(request)]


async def used(services: Services, member: str | None, day: str = "2026-12-07") -> int:
    rows = await services.repos.token_usage.on_day(GUILD, day)
    return next((row.used for row in rows if row.member_id == member), 0)


def refusal(events: list[Event]) -> str:
    error = events[-1]
    assert isinstance(error, ErrorEvent), events
    return error.message


@pytest.mark.parametrize(("spent", "admitted"), [(99, True), (100, False), (101, False)])
async def test_a_member_is_refused_once_their_day_reaches_the_budget(
    services: Services, llm: FakeLLMServer, spent: int, admitted: bool
) -> None:
    await services.settings.update({"member_daily_tokens": 100})
    llm.script(Text("first", prompt_tokens=60, completion_tokens=spent - 60), Text("second"))
    assert isinstance((await turn(services, "one"))[-1], DoneEvent)
    assert await used(services, ALICE) == spent
    events = await turn(services, "two")
    if admitted:
        assert isinstance(events[-1], DoneEvent)
        assert len(llm.chat_requests) == 2
        return
    assert len(llm.chat_requests) == 1, "no model call over budget"
    notice = refusal(events)
    assert notice.startswith("You have used your 100 tokens for today.")
    assert "resets in 12 h 0 min (at midnight, UTC)" in notice
    assert await used(services, ALICE) == spent


async def test_the_server_budget_refuses_every_member_and_the_member_budget_only_one(
    services: Services, llm: FakeLLMServer
) -> None:
    await services.settings.update({"member_daily_tokens": 100, "server_daily_tokens": 150})
    llm.script(
        Text("a", prompt_tokens=70, completion_tokens=30),
        Text("b", prompt_tokens=40, completion_tokens=20),
    )
    await turn(services, "alice spends her 100")
    assert "You have used your 100 tokens" in refusal(await turn(services, "more"))
    assert isinstance((await turn(services, "bob is fine", BOB))[-1], DoneEvent)
    assert (await used(services, BOB), await used(services, None)) == (60, 160)
    assert refusal(await turn(services, "bob again", BOB)).startswith(
        "This server has used its 150 tokens for today."
    )
    assert len(llm.chat_requests) == 2


async def test_every_round_is_checked_not_only_the_first(
    services: Services, llm: FakeLLMServer
) -> None:
    async def lookup(city: str) -> str:
        """Look up the weather.

        Args:
            city: City name.
        """
        return f"Sunny in {city}"

    services.registry.register(lookup)
    await services.settings.update({"member_daily_tokens": 100})
    llm.script(
        ToolCalls([("lookup", {"city": "Kyoto"})], prompt_tokens=90, completion_tokens=10),
        Text("never asked"),
    )
    notice = refusal(await turn(services, "weather?"))
    assert "You have used your 100 tokens" in notice
    assert len(llm.chat_requests) == 1
    assert await used(services, ALICE) == 100


async def test_counts_are_the_servers_else_the_logged_estimate(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
    clock: Clock,
) -> None:
    service_options.budget_clock = clock  # `used` reads the clock's day, not today's
    async with open_services(make_settings("ollama", max_answer_chars=100), service_options) as s:
        await _estimated_then_reported(s, llm)


async def _estimated_then_reported(services: Services, llm: FakeLLMServer) -> None:
    llm.script(Text("word " * 200, chunks=40))  # cut at 100 characters: no server counts
    await turn(services, "say a lot")
    (row,) = await services.repos.api_logs.list(ApiLogFilter(space_id=GUILD))
    assert row.tokens_estimated
    assert row.prompt_tokens is not None and row.completion_tokens is not None
    assert await used(services, ALICE) == row.prompt_tokens + row.completion_tokens
    llm.script(Text("short", prompt_tokens=321, completion_tokens=9))
    await turn(services, "again")
    assert await used(services, ALICE) == row.prompt_tokens + row.completion_tokens + 330


async def test_a_call_that_fails_before_answering_costs_nothing(
    services: Services, llm: FakeLLMServer
) -> None:
    await services.settings.update({"member_daily_tokens": 100})
    llm.script(Drop(after_chunks=0), Drop(after_chunks=0), Drop(after_chunks=0))
    refusal(await turn(services, "down"))
    rows = await services.repos.token_usage.on_day(GUILD, "2026-12-07")
    assert rows and {(row.used, row.reserved, row.calls) for row in rows} == {(0, 0, 0)}


async def test_the_budget_resets_when_the_spaces_day_ends(
    services: Services, llm: FakeLLMServer, clock: Clock
) -> None:
    await services.settings.update({"member_daily_tokens": 100})
    clock.now = datetime(2026, 12, 7, 23, 59, 30, tzinfo=UTC)
    llm.script(
        Text("spent", prompt_tokens=80, completion_tokens=20),
        Text("new day", prompt_tokens=20, completion_tokens=10),
    )
    await turn(services, "late")
    assert "resets in 0 h 1 min" in refusal(await turn(services, "later"))
    clock.now += timedelta(seconds=31)
    assert isinstance((await turn(services, "tomorrow"))[-1], DoneEvent)
    assert await used(services, ALICE, "2026-12-08") == 20 + 10
    assert len(llm.chat_requests) == 2


async def test_a_space_with_a_time_zone_counts_its_own_days(
    services: Services, llm: FakeLLMServer, clock: Clock
) -> None:
    await services.repos.spaces.ensure(GUILD)
    await services.db.execute("UPDATE spaces SET timezone = ? WHERE id = ?", ("Asia/Tokyo", GUILD))
    clock.now = datetime(2026, 12, 7, 15, 30, tzinfo=UTC)  # 00:30 on the 8th in Tokyo
    llm.script(Text("hi", prompt_tokens=5, completion_tokens=5))
    await turn(services, "hello")
    assert await used(services, ALICE, "2026-12-08") == 10
    assert await used(services, ALICE, "2026-12-07") == 0


def test_a_day_ends_at_the_zones_midnight() -> None:
    now = datetime(2026, 3, 29, 0, 30, tzinfo=UTC)
    day = budget_day(now, "Europe/Paris")  # 01:30 CET; the clocks go forward at 02:00
    assert day.day == "2026-03-29"
    assert day.resets_at == datetime(2026, 3, 29, 22, 0, tzinfo=UTC)  # midnight CEST
    assert budget_day(now, "Not/AZone").zone == "UTC"
    assert budget_day(now, None).resets_at == datetime(2026, 3, 30, tzinfo=UTC)
