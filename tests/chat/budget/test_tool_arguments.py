"""A tool call too large to carry is refused before it runs, and the model is told why so it can
retry smaller (issue 40, item 7), through the real clients against the loopback LLM."""

from __future__ import annotations

import json

import pytest

from bot.chat.budget.tool_arguments import MAX_TOOL_ARGUMENT_CHARS
from bot.chat.engine import TurnRequest
from bot.prompts import prompts_for
from bot.services import ServiceOptions, open_services
from bot.turn.events import ChunkEvent, DoneEvent, ToolEvent
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text, ToolCalls

EN = prompts_for("en")
ANSWER = "I saved the first part; the rest follows in smaller pieces."


def content_of(size: int) -> str:
    """Note text that makes the call's arguments `size` characters long, as JSON."""
    shell = json.dumps({"title": "Big", "content": "", "mode": "create"})
    return "x" * (size - len(shell))


@pytest.mark.parametrize(
    ("backend", "size"),
    [("ollama", 20_000), ("ollama", 100_000), ("litellm", 20_000), ("litellm", 100_000)],
)
async def test_a_call_with_too_large_arguments_is_refused_and_the_model_told_why(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
    backend: str,
    size: int,
) -> None:
    settings = make_settings(backend, llm_context_tokens=16384)
    arguments = {"title": "Big", "content": content_of(size), "mode": "create"}
    assert len(json.dumps(arguments)) == size
    async with open_services(settings, service_options) as services:
        llm.script(ToolCalls([("write_note", arguments)]), Text(ANSWER))
        request = TurnRequest("save this long text as a note", space_id=LOCAL)
        events = [event async for event in services.engine.run_turn(request)]
        assert await services.notes.find(LOCAL, "Big") is None, "the refused call never ran"
    _, second = llm.chat_requests
    assert "write_note" in second.tool_names, "tools are still offered: it may retry"
    (told,) = [m["content"] for m in second.messages if m["role"] == "tool"]
    limit = f"{MAX_TOOL_ARGUMENT_CHARS:,}"
    assert told == EN.format("tool_arguments_refused", size=f"{size:,}", limit=limit)
    (repeated,) = [m for m in second.messages if m.get("tool_calls")]
    sent = repeated["tool_calls"][0]["function"]["arguments"]
    sent_text = sent if isinstance(sent, str) else json.dumps(sent)
    assert len(sent_text) < 200, "the refused arguments are not sent again"
    assert json.loads(sent_text)["title"] == "Big"
    answer = "".join(event.text for event in events if isinstance(event, ChunkEvent))
    assert answer == ANSWER, "the turn ends with the model's real answer"
    assert isinstance(events[-1], DoneEvent)
    shown = [(e.name, e.status) for e in events if isinstance(e, ToolEvent)]
    assert shown == [("write_note", "running"), ("write_note", "error")], "the member sees it"
    (failed,) = [e for e in events if isinstance(e, ToolEvent) and e.status == "error"]
    assert "Refused, not run" in failed.result


async def test_arguments_just_under_the_limit_run(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    settings = make_settings("ollama", llm_context_tokens=16384)
    arguments = {"title": "Big", "content": content_of(MAX_TOOL_ARGUMENT_CHARS), "mode": "create"}
    async with open_services(settings, service_options) as services:
        llm.script(ToolCalls([("write_note", arguments)]), Text("Saved."))
        [event async for event in services.engine.run_turn(TurnRequest("save", space_id=LOCAL))]
        page = await services.notes.find(LOCAL, "Big")
    assert page is not None and page.content == arguments["content"]
    (told,) = [m["content"] for m in llm.chat_requests[1].messages if m["role"] == "tool"]
    assert "Saved note page 'Big'" in told


async def test_a_small_window_refuses_what_it_cannot_hold(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    # At 4k, 12,000 characters (under the fixed limit) would not leave room for a result.
    settings = make_settings("ollama", llm_context_tokens=4096)
    arguments = {"title": "Big", "content": content_of(12_000), "mode": "create"}
    async with open_services(settings, service_options) as services:
        llm.script(ToolCalls([("write_note", arguments)]), Text(ANSWER))
        events = [e async for e in services.engine.run_turn(TurnRequest("save", space_id=LOCAL))]
        assert await services.notes.find(LOCAL, "Big") is None
    (told,) = [m["content"] for m in llm.chat_requests[1].messages if m["role"] == "tool"]
    assert told.startswith("Refused, not run: the arguments of this call are 12,000 characters")
    limit = int(told.split("at most ", 1)[1].split(" ", 1)[0].replace(",", ""))
    assert 0 < limit < 12_000
    assert "".join(e.text for e in events if isinstance(e, ChunkEvent)) == ANSWER
