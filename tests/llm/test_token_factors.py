"""Token estimates that learn: the per-model factor from reported prompt counts, end to end."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from bot.chat.engine import TurnRequest
from bot.config import Settings
from bot.llm import tokens
from bot.llm.token_factors import (
    MAX_FACTOR,
    MIN_FACTOR,
    MIN_SAMPLE_TOKENS,
    Calibration,
    TokenCalibrator,
    learn,
)
from bot.llm.tokens import message_tokens, prompt_tokens
from bot.llm.types import Message, ToolSchema
from bot.services import ServiceOptions, Services, open_services
from bot.store.engine.database import Database
from bot.store.repos.token_factors import StoredTokenFactor, TokenFactorRepository
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Text

LOOKUP: ToolSchema = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look a word up in the dictionary.",
        "parameters": {
            "type": "object",
            "properties": {"word": {"type": "string", "description": "The word."}},
            "required": ["word"],
        },
    },
}


def conversation(turns: int = 1, *, japanese: bool = False) -> list[Message]:
    """A prompt well above the smallest one the factor learns from (MIN_SAMPLE_TOKENS)."""
    body = "日本語の長い説明文です。" * 60 if japanese else "A long and careful explanation. " * 80
    messages: list[Message] = [{"role": "system", "content": "You are a helpful bot. " + body}]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"question {turn}: " + body[:400]})
        messages.append({"role": "assistant", "content": f"answer {turn}: " + body[:400]})
    messages.append({"role": "user", "content": "and now?"})
    return messages


def model_of(services: Services) -> str:
    return services.settings().llm_model


async def stream_once(
    services: Services,
    messages: list[Message],
    *,
    tools: list[ToolSchema] | None = None,
    session_id: str | None = None,
) -> None:
    async for _ in services.gateway.stream(messages, tools=tools, session_id=session_id):
        pass


# --------------------------------------------------------------------------- the pure rule


@pytest.mark.parametrize(
    ("current", "ratio", "lower_bound", "expected"),
    [
        # The first sample is taken as it is (a running mean of one).
        (Calibration(), 1.5, False, Calibration(1.5, 1)),
        # The second weighs half, the tenth a tenth; then an EMA at MIN_WEIGHT.
        (Calibration(1.5, 1), 1.0, False, Calibration(1.25, 2)),
        (Calibration(1.0, 9), 2.0, False, Calibration(1.1, 10)),
        (Calibration(1.0, 50), 2.0, False, Calibration(1.1, 51)),
        # Bounded: a sample beyond the bounds counts as the bound.
        (Calibration(), 3.9, False, Calibration(MAX_FACTOR, 1)),
        (Calibration(), 0.3, False, Calibration(MIN_FACTOR, 1)),
        # A lower bound (a count that may be short) raises the factor but never lowers it.
        (Calibration(1.5, 4), 1.2, True, Calibration(1.5, 4)),
        (Calibration(1.5, 4), 2.0, True, Calibration(1.6, 5)),
    ],
)
def test_learn(
    current: Calibration, ratio: float, lower_bound: bool, expected: Calibration
) -> None:
    learned = learn(current, ratio, lower_bound=lower_bound)
    assert learned.factor == pytest.approx(expected.factor)
    assert (learned.samples, learned.partial_counts) == (expected.samples, expected.partial_counts)


@pytest.mark.parametrize(
    ("estimated", "reported", "why"),
    [
        (MIN_SAMPLE_TOKENS - 1, 2 * MIN_SAMPLE_TOKENS, "a tiny prompt is mostly template"),
        (1000, 100_000, "a hundred times the estimate is no tokenizer"),
        (1000, 5, "a fully cached prompt counted as a few tokens"),
        (1000, None, "no count reported"),
        (1000, 0, "zero reported"),
    ],
)
async def test_implausible_reports_teach_nothing(
    estimated: int, reported: int | None, why: str
) -> None:
    calibrator = TokenCalibrator()
    calibrated = await calibrator.observe("m", estimated=estimated, reported=reported, window=8192)
    assert calibrated == Calibration(), why
    assert calibrator.factor("m") == 1.0


async def test_prompts_with_images_teach_nothing() -> None:
    calibrator = TokenCalibrator()
    await calibrator.observe("m", estimated=1000, reported=1800, window=8192, has_images=True)
    assert calibrator.factor("m") == 1.0


async def test_a_count_at_the_window_may_be_cut_so_it_only_raises() -> None:
    calibrator = TokenCalibrator()
    await calibrator.observe("m", estimated=2000, reported=3000, window=8192)
    assert calibrator.factor("m") == pytest.approx(1.5)
    # 3,900 of a 4,096 window: Ollama may have cut the prompt to fit, so 1.3 is a lower bound.
    await calibrator.observe("m", estimated=3000, reported=3900, window=4096)
    assert calibrator.factor("m") == pytest.approx(1.5)


# --------------------------------------------------------------------------- through the clients


async def test_reported_counts_move_the_factor_toward_the_real_ratio(
    services: Services, llm: FakeLLMServer
) -> None:
    model = model_of(services)
    assert services.gateway.token_factor(model) == 1.0, "uncalibrated"
    factors = []
    for turns in (1, 2, 3):
        messages = conversation(turns)
        estimated = prompt_tokens(messages, [LOOKUP])
        assert estimated >= MIN_SAMPLE_TOKENS
        llm.script(Text("ok", prompt_tokens=round(1.5 * estimated)))
        await stream_once(services, messages, tools=[LOOKUP])
        factors.append(services.gateway.token_factor(model))
    assert factors == pytest.approx([1.5, 1.5, 1.5], abs=0.01)
    # Completions (summaries, tags…) teach too; their requests carry no tools.
    messages = conversation(2, japanese=True)
    estimated = prompt_tokens(messages)
    for _ in range(20):
        llm.script(Text("summary", prompt_tokens=round(1.2 * estimated)))
        await services.gateway.complete(messages, purpose="summarize")
    assert 1.2 < services.gateway.token_factor(model) < 1.3, "an EMA converging on 1.2"
    assert services.gateway.token_factor("ollama/never-used") == 1.0, "per model"


async def test_a_tool_set_is_estimated_once_and_again_when_it_changes(
    services: Services, llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    observed: list[int] = []
    observe = services.gateway._calibrator.observe

    async def spy(model: str, *, estimated: int, **rest: Any) -> None:
        observed.append(estimated)
        await observe(model, estimated=estimated, **rest)

    monkeypatch.setattr(services.gateway._calibrator, "observe", spy)
    tool_json: list[str] = []
    estimate = tokens.estimate_tokens

    def counted(text: str) -> int:
        if text.startswith('[{"type": "function"'):
            tool_json.append(text)
        return estimate(text)

    monkeypatch.setattr(tokens, "estimate_tokens", counted)
    tools = [copy.deepcopy(LOOKUP)]
    messages = conversation(1)
    expected = []
    for change in ("", "", " With examples." * 40, ""):
        tools[0]["function"]["description"] += change  # the same dict, changed in place
        expected.append(prompt_tokens(messages, tools))
        llm.script(Text("ok", prompt_tokens=round(1.5 * expected[-1])))
        await stream_once(services, messages, tools=list(tools))
    assert observed == expected and expected[2] > expected[1]
    # Four estimates here (prompt_tokens) and two by the gateway: the set, then its change.
    assert len(tool_json) == 4 + 2


async def test_absurd_reports_leave_the_factor_within_bounds(
    services: Services, llm: FakeLLMServer
) -> None:
    model = model_of(services)
    messages = conversation(2)
    estimated = prompt_tokens(messages)
    llm.script(
        Text("ok", prompt_tokens=estimated * 100),
        Text("ok", prompt_tokens=1),
        Text("ok", prompt_tokens=2_000_000_000),
    )
    for _ in range(3):
        await services.gateway.complete(messages)
    assert services.gateway.token_factor(model) == 1.0, "implausible counts are ignored"
    for _ in range(6):
        llm.script(Text("ok", prompt_tokens=round(3.9 * estimated)))
        await services.gateway.complete(messages)
    assert services.gateway.token_factor(model) == MAX_FACTOR
    for _ in range(30):
        llm.script(Text("ok", prompt_tokens=round(0.26 * estimated)))
        await services.gateway.complete(messages)
    assert MIN_FACTOR <= services.gateway.token_factor(model) < 0.6, "bounded below too"


async def test_the_factor_survives_a_restart(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    settings = make_settings(backend)
    messages = conversation(2)
    async with open_services(settings, service_options) as services:
        llm.script(Text("ok", prompt_tokens=round(1.5 * prompt_tokens(messages))))
        await stream_once(services, messages)
        assert services.gateway.token_factor(settings.llm_model) == pytest.approx(1.5, abs=0.01)
    async with open_services(settings, service_options) as reopened:
        assert reopened.gateway.token_factor(settings.llm_model) == pytest.approx(1.5, abs=0.01)
        (row,) = await reopened.repos.token_factors.all()
        assert (row.model, row.samples) == (settings.llm_model, 1)


async def test_a_damaged_stored_factor_is_ignored(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> None:
    settings = make_settings()
    db = await Database.connect(settings.database())
    await TokenFactorRepository(db).save(StoredTokenFactor(settings.llm_model, 40.0, 3))
    await db.close()
    async with open_services(settings, service_options) as services:
        assert services.gateway.token_factor(settings.llm_model) == 1.0


async def test_a_server_counting_only_uncached_tokens_only_raises_the_factor(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    """Some Ollama versions report only the prompt tokens not already in their cache: the
    second, longer request of a conversation is then reported smaller than the first."""
    settings = make_settings("ollama")
    model = settings.llm_model
    first, longer = conversation(2), conversation(3)
    async with open_services(settings, service_options) as services:
        llm.script(
            Text("ok", prompt_tokens=round(1.5 * prompt_tokens(first))),
            Text("ok", prompt_tokens=message_tokens(longer[-2]) + 40),  # the new part only
            Text("ok", prompt_tokens=round(1.1 * prompt_tokens(longer))),
            Text("ok", prompt_tokens=round(2.0 * prompt_tokens(longer))),
        )
        await stream_once(services, first, session_id="s1")
        await stream_once(services, longer, session_id="s1")
        calibration = services.gateway.token_calibration(model)
        assert calibration.partial_counts and calibration.factor == pytest.approx(1.5)
        await stream_once(services, longer, session_id="s2")
        assert services.gateway.token_factor(model) == pytest.approx(1.5), "1.1 may be short"
        await stream_once(services, longer, session_id="s3")
        assert services.gateway.token_factor(model) == pytest.approx(1.75), "2.0 is not"
    async with open_services(settings, service_options) as reopened:
        assert reopened.gateway.token_calibration(model).partial_counts, "remembered"


def _request_tokens(request: RecordedRequest, tools: list[ToolSchema]) -> int:
    """The project's estimate of a request the LLM server received."""
    messages: list[dict[str, Any]] = [
        {"role": m["role"], "content": m.get("content") or ""} for m in request.messages
    ]
    return prompt_tokens(messages, tools)


async def _prefill(services: Services, session_id: str, exchanges: int) -> None:
    session = await services.repos.sessions.create(LOCAL, session_id=session_id, title="long")
    for n in range(exchanges):
        await services.repos.messages.add(
            LOCAL, session.id, "user", f"question {n}: " + "word " * 120
        )
        await services.repos.messages.add(
            LOCAL, session.id, "assistant", f"answer {n}: " + "word " * 120
        )


async def test_the_engine_hands_the_learned_factor_to_the_context(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    settings = make_settings(llm_context_tokens=4096)
    db = await Database.connect(settings.database())
    await TokenFactorRepository(db).save(StoredTokenFactor(settings.llm_model, 1.5, 10))
    await db.close()
    async with open_services(settings, service_options) as services:
        seen: list[float] = []
        build = services.context.build

        async def spy(request: Any, **kwargs: Any) -> Any:
            seen.append(request.token_factor)
            return await build(request, **kwargs)

        services.engine.context.build = spy  # type: ignore[method-assign]
        llm.script(Text("fine"))
        async for _ in services.engine.run_turn(TurnRequest("hello", space_id=LOCAL)):
            pass
        assert seen == [1.5]


async def test_a_factor_of_one_and_a_half_shrinks_the_request_to_the_window_over_it(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    window = 4096
    settings: Settings = make_settings(llm_context_tokens=window)
    db = await Database.connect(settings.database())
    await TokenFactorRepository(db).save(StoredTokenFactor(settings.llm_model, 1.5, 10))
    await db.close()
    async with open_services(settings, service_options) as services:
        await _prefill(services, "long", 40)
        llm.script(Text("fine"))
        llm.default_reply = Text("- a summary")  # the summaries the long session triggers
        async for _ in services.engine.run_turn(TurnRequest("and now?", "long", space_id=LOCAL)):
            pass
        await services.tasks.drain()
        request = llm.chat_requests[0]
        assert [m for m in request.messages if m["role"] == "user"][-1]["content"] == "and now?"
        # A request offered no tools (no room for a page here) carries no schemas.
        schemas = services.registry.schemas() if request.tools else []
        assert _request_tokens(request, schemas) <= window / 1.5
