"""Answers that end: the answer's reserve is the server's own limit, a looping answer is
stopped early, and every model call's log row has token counts, estimated when the server
sent none (a stream stopped by any bound).

Real clients (ollama, LiteLLM) against the loopback LLM; what it received is asserted.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from bot.chat.engine import TurnRequest
from bot.errors import LLMError
from bot.llm.answer_limits import SHORT_ANSWERS, answer_reserve
from bot.llm.gateway import STOPPED_BY_CALLER
from bot.llm.tokens import estimate_tokens
from bot.memory.tagging import LLM_PROMPT
from bot.services import ServiceOptions, Services, open_services
from bot.store.repos.api_logs import ApiLog, ApiLogFilter
from bot.turn.events import ChunkEvent, DoneEvent, ErrorEvent, Event
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import Endless, FakeLLMServer, HttpError, Text, ToolCalls

GUARD = 20.0
REPEATING = "(Stopped here: the answer kept repeating itself.)"


async def warm(services: Services, llm: FakeLLMServer) -> None:
    """LiteLLM's first import (seconds, blocking) must not eat a turn's guard."""
    llm.script(Text("Ready."))
    await services.gateway.complete([{"role": "user", "content": "warm up"}], purpose="warm")


async def run(services: Services, request: TurnRequest) -> list[Event]:
    """One turn's events; a turn that never ends fails the test instead of hanging it."""

    async def collect() -> list[Event]:
        return [event async for event in services.engine.run_turn(request)]

    return await asyncio.wait_for(collect(), GUARD)


def streamed(events: list[Event]) -> str:
    return "".join(event.text for event in events if isinstance(event, ChunkEvent))


async def logs(services: Services, purpose: str = "chat") -> list[ApiLog]:
    rows = reversed(await services.repos.api_logs.list(ApiLogFilter()))
    return [row for row in rows if row.purpose == purpose]


def assert_estimated(row: ApiLog) -> None:
    """The row's counts are the estimator's: the prompt's, and the answer the log kept."""
    assert row.tokens_estimated, row
    assert row.prompt_tokens is not None and row.prompt_tokens > 0
    answer = row.response_text or ""
    assert row.completion_tokens == estimate_tokens(answer) and row.completion_tokens > 0


async def test_every_chat_request_carries_the_answer_reserve_as_the_models_limit(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    settings = make_settings(
        backend, llm_context_tokens=8192, memory_summarize_threshold=4, tagging_mode="llm"
    )
    async with open_services(settings, service_options) as services:
        await warm(services, llm)

        async def lookup(city: str) -> str:
            """Look up the weather.

            Args:
                city: City name.
            """
            return f"Sunny in {city}"

        services.registry.register(lookup)
        llm.script(ToolCalls([("lookup", {"city": "Kyoto"})]), Text("It is sunny in Kyoto."))
        # Background calls (tags, the summary) take whatever comes next.
        llm.script(*[Text("kyoto, weather, sun") for _ in range(8)])
        first = await run(services, TurnRequest("weather in Kyoto?", space_id=LOCAL))
        session_id = first[0].session_id  # type: ignore[attr-defined]
        llm.script(Text("Anything else?"), *[Text("kyoto, travel, plans") for _ in range(8)])
        await run(services, TurnRequest("thanks", session_id, space_id=LOCAL))
        await services.tasks.drain()

    reserve = answer_reserve(8192)
    assert reserve == 1638
    limits: dict[str, set[int | None]] = {"chat": set(), "tagging": set()}
    for request in llm.chat_requests:
        system = request.messages[0].get("content") if request.messages else None
        limits["tagging" if system == LLM_PROMPT else "chat"].add(request.answer_limit)
    assert limits == {"chat": {reserve}, "tagging": {SHORT_ANSWERS["tagging"]}}, limits
    # The turns' three streamed calls and at least one summary went out (besides the tags).
    assert len(llm.chat_requests) >= 5
    assert sum(1 for r in llm.chat_requests if r.stream) == 3


async def test_a_looping_answer_is_stopped_early_and_what_was_said_is_kept(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    async with open_services(make_settings(backend), service_options) as services:
        await warm(services, llm)
        llm.script(Endless("The history of France is long and rich. ", interval=0.0005))
        events = await run(services, TurnRequest("Tell me about France.", space_id=LOCAL))

        done = events[-1]
        assert isinstance(done, DoneEvent), events[-3:]
        said, _, notice = done.text.rpartition("\n\n")
        assert notice == REPEATING
        shown, _, shown_notice = streamed(events).rpartition("\n\n")
        assert (shown.strip(), shown_notice) == (said, REPEATING), "what was shown is kept"
        assert said.startswith("The history of France is long and rich. The history")
        # Caught on the passage's third round and then some, far from MAX_ANSWER_CHARS.
        assert 3 * 41 < len(said) < 600, len(said)
        stored = await services.repos.messages.all_for_session(LOCAL, done_session(events))
        assert stored[-1].content == done.text
        assert not any(isinstance(e, ErrorEvent) for e in events)
        await llm.wait_for_client_close(1)
        (row,) = await logs(services)
        assert row.error == STOPPED_BY_CALLER
        assert row.response_text is not None and row.response_text.startswith(said)
        assert_estimated(row)


def done_session(events: list[Event]) -> str:
    return str(events[0].session_id)  # type: ignore[attr-defined]


async def test_a_looping_japanese_answer_is_stopped_early(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    async with open_services(make_settings(backend, language="ja"), service_options) as services:
        await warm(services, llm)
        loop = "フランスの歴史は長く、多くの王朝が続きました。"
        llm.script(Endless(f"{loop} ", interval=0.0005))
        events = await run(services, TurnRequest("フランスの歴史は？", space_id=LOCAL))

        done = events[-1]
        assert isinstance(done, DoneEvent), events[-3:]
        said, _, notice = done.text.rpartition("\n\n")
        assert notice == "（回答が同じ内容を繰り返し始めたため、ここで打ち切りました。）"
        assert said.startswith(loop) and len(said) < 600, len(said)
        await llm.wait_for_client_close(1)
        (row,) = await logs(services)
        assert_estimated(row)


async def test_a_long_answer_of_tables_and_lists_is_not_stopped(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    rows = "".join(
        f"| {1800 + 10 * n} | {20 + n * 1.7:.1f} M | {'Paris' if n % 2 else 'Lyon'} |\n"
        for n in range(40)
    )
    items = "".join(f"- **Step {n}:** read chapter {n} and take notes on it.\n" for n in range(40))
    text = f"| Year | Population | City |\n|---|---|---|\n{rows}\n{items}"
    async with open_services(make_settings(backend), service_options) as services:
        await warm(services, llm)
        llm.script(Text(text, prompt_tokens=120, completion_tokens=900))
        events = await run(services, TurnRequest("a table and a list", space_id=LOCAL))

        done = events[-1]
        assert isinstance(done, DoneEvent) and done.text == text.strip()
        (row,) = await logs(services)
        assert row.error is None and not row.tokens_estimated
        assert (row.prompt_tokens, row.completion_tokens) == (120, 900), "the server's counts"


async def test_the_server_ends_an_endless_answer_at_the_reserve(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    settings = make_settings(backend, llm_context_tokens=2560)
    async with open_services(settings, service_options) as services:
        await warm(services, llm)
        llm.script(Endless(interval=0, numbered=True))
        events = await run(services, TurnRequest("count forever", space_id=LOCAL))

        done = events[-1]
        assert isinstance(done, DoneEvent), events[-3:]
        said, _, notice = done.text.rpartition("\n\n")
        assert notice == "(Stopped here: the answer reached the model's limit of 512 tokens.)"
        assert said.startswith("and then some more 1 and")
        assert llm.chat_requests[-1].answer_limit == 512
        (row,) = await logs(services)
        assert row.error is None and not row.tokens_estimated
        assert row.completion_tokens == 512, "the server's count"


async def test_a_stop_on_request_leaves_estimated_counts(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    async with open_services(make_settings(backend), service_options) as services:
        await warm(services, llm)
        llm.script(Endless(interval=0.01, numbered=True))
        stop = asyncio.Event()
        request = TurnRequest("go on and on", space_id=LOCAL, stop=stop)
        events: list[Event] = []

        async def collect() -> None:
            async for event in services.engine.run_turn(request):
                events.append(event)
                if len(streamed(events)) > 40:
                    stop.set()

        await asyncio.wait_for(collect(), GUARD)
        await llm.wait_for_client_close(1)
        (row,) = await logs(services)
        assert row.error is not None
        assert_estimated(row)


async def test_a_failed_call_logs_estimated_counts(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "summarise this " * 20}]
    async with open_services(make_settings(backend), service_options) as services:
        await warm(services, llm)
        llm.script(HttpError(400, "no"))
        with pytest.raises(LLMError):
            await services.gateway.complete(messages, purpose="summarize")
        (row,) = await logs(services, "summarize")
        assert row.error is not None and row.tokens_estimated
        assert row.prompt_tokens is not None and row.prompt_tokens >= estimate_tokens("summarise")
        assert row.completion_tokens == 0


async def test_counts_a_server_did_not_send_are_estimated_over_the_whole_request(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
    backend: str,
) -> None:
    # A server that sends no usage, even when asked: LiteLLM counted the messages itself
    # (329 tokens for a turn whose tool schemas alone are ~1,900) and the log called it the
    # server's count.
    llm.sends_usage = False
    async with open_services(make_settings(backend), service_options) as services:
        await warm(services, llm)
        llm.script(Text("A short answer.", prompt_tokens=4321))
        await run(services, TurnRequest("Hello there", space_id=LOCAL))
        (row,) = await logs(services)
    request = llm.chat_requests[-1]
    assert request.json["tools"], "the turn offered tools"
    schemas = estimate_tokens(json.dumps(request.json["tools"], ensure_ascii=False))
    if backend == "litellm":  # the Ollama protocol always carries its counts
        assert row.tokens_estimated, row
        assert row.prompt_tokens is not None and row.prompt_tokens > schemas
        assert row.prompt_tokens != 4321
    else:
        assert not row.tokens_estimated and row.prompt_tokens == 4321
