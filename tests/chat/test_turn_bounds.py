"""A model that never stops is stopped: every turn is bounded in time and in answer length.

Real clients (ollama, LiteLLM) against the loopback LLM streaming endlessly.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from bot.chat.engine import TurnRequest
from bot.llm.gateway import CANCELLED, STOPPED_BY_CALLER
from bot.llm.tokens import estimate_tokens
from bot.services import ServiceOptions, Services, open_services
from bot.store.repos.api_logs import ApiLog, ApiLogFilter
from bot.turn.events import ChunkEvent, DoneEvent, ErrorEvent, Event, SessionEvent
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import Endless, FakeLLMServer, Text

# A turn that is not stopped would run until the loopback server closes; fail long before.
GUARD = 20.0

Opener = Callable[..., AbstractAsyncContextManager[Services]]


async def run(services: Services, text: str, session_id: str | None = None) -> list[Event]:
    """One turn's events; a turn that never ends fails the test instead of hanging it."""

    async def collect() -> list[Event]:
        return [
            e async for e in services.engine.run_turn(TurnRequest(text, session_id, space_id=LOCAL))
        ]

    return await asyncio.wait_for(collect(), GUARD)


def answer(events: list[Event]) -> str:
    return "".join(event.text for event in events if isinstance(event, ChunkEvent))


async def chat_logs(services: Services) -> list[ApiLog]:
    rows = reversed(await services.repos.api_logs.list(ApiLogFilter()))
    return [row for row in rows if row.purpose == "chat"]


def assert_estimated(row: ApiLog) -> None:
    """A stream stopped by a bound has no counts from the server: the row has estimates."""
    assert row.tokens_estimated
    assert row.prompt_tokens is not None and row.prompt_tokens > 0
    assert row.completion_tokens == estimate_tokens(row.response_text or "") > 0


def opener(make_settings: SettingsFactory, backend: str, options: ServiceOptions) -> Opener:
    @asynccontextmanager
    async def open_with(**overrides: Any) -> AsyncIterator[Services]:
        async with open_services(make_settings(backend, **overrides), options) as services:
            yield services

    return open_with


async def test_an_endless_answer_ends_at_the_time_bound_and_the_next_message_runs(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    open_with = opener(make_settings, backend, service_options)
    async with open_with(turn_timeout=1.0) as services:
        # Warm up: LiteLLM's first import (seconds, blocking) must not eat the bound.
        llm.script(Text("Ready."), Endless(interval=0.005, numbered=True), Text("Second answer."))
        await services.gateway.complete([{"role": "user", "content": "warm up"}])
        session_id = "endless-session"
        first = asyncio.create_task(run(services, "tell me everything", session_id))
        await llm.wait_for_requests(2)
        # The first turn still holds the session: the second waits behind it in the queue.
        second = asyncio.create_task(run(services, "and now?", session_id))
        events = await first

        done = events[-1]
        assert isinstance(done, DoneEvent), events[-3:]
        notice = "(Stopped here: the answer took longer than 1 seconds.)"
        said, _, tail = done.text.rpartition("\n\n")
        assert tail == notice and said.startswith("and then some more 1 and"), done.text[-200:]
        streamed, _, shown_notice = answer(events).rpartition("\n\n")
        assert (streamed.strip(), shown_notice) == (said, notice), "what was shown is stored"
        stored = await services.repos.messages.all_for_session(LOCAL, session_id)
        assert [m.role for m in stored[:2]] == ["user", "assistant"]
        assert stored[1].content == done.text

        await llm.wait_for_client_close(1, timeout=5.0)
        later = await second
        assert isinstance(later[-1], DoneEvent) and later[-1].text == "Second answer."
        first_log = (await chat_logs(services))[0]
        assert first_log.error == CANCELLED
        assert first_log.response_text is not None and first_log.response_text.startswith(
            "and then"
        )
        assert_estimated(first_log)


async def test_an_endless_answer_ends_at_the_length_bound(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    open_with = opener(make_settings, backend, service_options)
    async with open_with(max_answer_chars=303) as services:
        llm.script(Endless(interval=0.001, numbered=True))
        events = await run(services, "say words forever")

        done = events[-1]
        assert isinstance(done, DoneEvent), events[-3:]
        said, _, notice = done.text.rpartition("\n\n")
        assert notice == "(Stopped here: the answer reached 303 characters.)"
        streamed = "".join(e.text for e in events[:-2] if isinstance(e, ChunkEvent))
        assert len(streamed) == 303 and streamed.startswith("and then some more")
        assert said == streamed.strip()
        assert not any(isinstance(e, ErrorEvent) for e in events)
        assert isinstance(events[0], SessionEvent)
        await llm.wait_for_client_close(1, timeout=5.0)
        (row,) = await chat_logs(services)
        assert row.error == STOPPED_BY_CALLER
        assert row.response_text is not None and len(row.response_text) >= 303
        assert_estimated(row)
        assert len(llm.chat_requests) == 1, "one call, not retried"
